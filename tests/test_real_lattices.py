"""Every real lattice in ../shared/data/lattices (AMI, Switchboard, Sphinx-4, SRILM's SLF and
PFSG tests), read with the lattice tools' conventions and decoded; each best path is scored
again by an independent scorer (KenLM on its words, plus the lattice's own arc weights, times
the scales the file gives) and must give the engine's score. Skipped where ../shared is absent.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path

import pytest
from cli_in_process import in_process_cli as _cli

from arsdecode.lattice.lattice_files import read_word_lattice
from arsdecode.lattice.vocabulary import split_multiwords

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "lattices"
EMBEDDED = Path(__file__).resolve().parents[1] / "arsdecode" / "data" / \
    "state_union.5gram.arpa.gz"
LN10 = math.log(10)

if not SHARED.is_dir():
    pytest.skip(f"no real lattices at {SHARED}", allow_module_level=True)
kenlm = pytest.importorskip("kenlm")

UPPER = ["ami/" + p.name for p in sorted((SHARED / "ami").glob("*.lat.gz"))] + [
    "clp/sw2121A-ws97-l-0001.lat"]
LOWER = ["sphinx4/correct.slf"]
SPINE = ["srilm/" + p.name for p in sorted((SHARED / "srilm").glob("g07a01_*.gz"))]


@pytest.fixture(scope="module")
def upper_lm(tmp_path_factory) -> Path:
    """The embedded state_union 5-gram with its words upper-cased (the AMI and Switchboard
    lattices' words are upper case), as the lattices' README suggests."""
    out = tmp_path_factory.mktemp("upper") / "su_upper.arpa"
    keep = {"<S>": "<s>", "</S>": "</s>", "<UNK>": "<unk>"}
    lines = []
    with gzip.open(EMBEDDED, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("\\") or line.startswith("ngram ") or not line.strip():
                lines.append(line)
                continue
            up = re.sub(r"\S+", lambda m: keep.get(m.group(0).upper(), m.group(0).upper()),
                        line)
            lines.append(up)
    out.write_text("".join(lines))
    return out


def check(capsys, lm_path: Path, lattice: Path, *flags: str) -> None:
    code, out, err = _cli(capsys, "decode", "--lm", str(lm_path), "--lattice", str(lattice),
                          "--json", *flags)
    assert code == 0, err
    got = json.loads(out)
    wl = read_word_lattice(lattice, scales=None, keep_lm_score="--keep-lattice-lm" in flags)
    if "--split-multiwords" in flags:
        wl = split_multiwords(wl)
    acoustic = sum(float(wl.log_weights[a]) for a in got["arcs"])
    last = int(wl.dst[got["arcs"][-1]]) if got["arcs"] else 0
    acoustic += wl.finals[last]
    km = kenlm.Model(str(lm_path))
    lm = LN10 * km.score(" ".join(got["tokens"]), bos=True, eos=True)
    want = acoustic + got["scales"]["lm_scale"] * lm
    assert got["certified"]
    assert abs(got["log_p"] - want) <= 1e-4 * (1 + abs(want)), (lattice, got["log_p"], want)


@pytest.mark.parametrize("name", UPPER)
def test_upper_case_lattices(capsys, upper_lm, name):
    check(capsys, upper_lm, SHARED / name)


@pytest.mark.parametrize("name", LOWER)
def test_sphinx4_lattice(capsys, name):
    check(capsys, EMBEDDED, SHARED / name)


@pytest.mark.parametrize("name", SPINE)
def test_srilm_pfsg_lattices(capsys, name):
    check(capsys, SHARED / "lm" / "spine2000+2001-gridlabel+spell.4bo.gz", SHARED / name,
          "--split-multiwords")


def test_the_header_lmscale_is_the_default_on_ami(capsys, upper_lm):
    lattice = SHARED / UPPER[0]
    code, out, err = _cli(capsys, "decode", "--lm", str(upper_lm), "--lattice", str(lattice),
                          "--json")
    assert code == 0, err
    assert json.loads(out)["scales"]["lm_scale"] == 14.0
    assert json.loads(out)["scales"]["from"]["lm_scale"] == "file"


def test_the_whole_directory_in_one_process(capsys, upper_lm, tmp_path):
    listing = tmp_path / "list"
    listing.write_text("\n".join(str(SHARED / n) for n in UPPER) + "\n")
    code, out, err = _cli(capsys, "decode", "--lm", str(upper_lm), "--in-lattice-list",
                          str(listing), "--out-dir", str(tmp_path / "o"), "--ctm")
    assert code == 0, err
    assert f"lattices={len(UPPER)} decoded={len(UPPER)}" in err
    assert len(list((tmp_path / "o").iterdir())) == len(UPPER)
