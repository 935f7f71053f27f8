"""Issue 9 A.1: sentence markers are not words, and no marker can fake an exact context.

The reported scenario: an IRSTLM-style model lists n-grams such as `<s> <s>`; the lattice
`[<s>|as|</s>] [</s>|<s>|as]` decoded to `as as` with `certified: true` while `<s> <s>`
scores higher. The lattice is now refused by every constructor, and on the same model every
marker-free lattice still decodes to the brute-force optimum.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

import maxarpa
from arsdecode.errors import LatticeError
from arsdecode.lattice import Lattice
from arsdecode.methods.ars import decode
from arsdecode.tasks.sms.keypad import KeypadChannel
from arsdecode.testing.brute import brute_model
from maxarpa.model import Model

# IRSTLM writes <s> as an ordinary history word, including after itself.
IRSTLM_STYLE = """\\data\\
ngram 1=5
ngram 2=10
ngram 3=6

\\1-grams:
-1.2\t<unk>\t-0.3
-99\t<s>\t0.4
-0.9\t</s>
-0.5\tas\t0.2
-0.8\tis\t-0.1

\\2-grams:
-0.05\t<s> <s>\t0.6
-0.6\t<s> as\t-0.2
-1.1\t<s> is\t0.1
-0.4\tas as\t0.3
-0.7\tas is\t-0.2
-0.3\tas </s>
-0.5\tis </s>
-0.9\tis as\t0.2
-2.0\t<s> </s>
-0.3\tas <s>\t0.5

\\3-grams:
-0.01\t<s> <s> <s>
-0.2\t<s> <s> as
-0.3\t<s> as as
-0.1\tas as </s>
-0.01\tas <s> </s>
-0.01\t<s> as <s>

\\end\\
"""

REPORTED = [[["<s>", 0.0], ["as", 0.0], ["</s>", 0.0]], [["</s>", 0.0], ["<s>", 0.0], ["as", 0.0]]]


@pytest.fixture(scope="module")
def irstlm_model(tmp_path_factory) -> Model:
    path = tmp_path_factory.mktemp("irstlm") / "irstlm.arpa"
    path.write_text(IRSTLM_STYLE, encoding="utf-8")
    return maxarpa.load(path)


def test_reported_lattice_is_refused_by_every_constructor():
    with pytest.raises(LatticeError, match="sentence marker"):
        Lattice.from_lists(REPORTED)
    with pytest.raises(LatticeError, match="sentence marker"):
        Lattice.from_json_obj({"positions": REPORTED})
    # The direct constructor (the SMS channel's fast path) checks too.
    with pytest.raises(LatticeError, match="sentence marker"):
        Lattice((("as", "</s>"),), (np.zeros(2),))
    with pytest.raises(LatticeError, match="<s>"):
        Lattice((("as",), ("<s>",)), (np.zeros(1), np.zeros(1)))


def test_reported_scenario_has_a_marker_path_as_true_best(irstlm_model):
    """On this model the engine used to certify `<s> as` (first lattice) and `as as` (second)
    while brute force prefers `as <s>`: the context `<s>` after `as` was taken as exact. The
    brute-force reference below is independent of the engine (Model.log10p on full histories);
    the lattices are built past the validation only to score them."""
    for toks in [(("<s>", "as", "</s>"), ("</s>", "<s>", "as")), (("as",), ("<s>", "as"))]:
        lattice = object.__new__(Lattice)
        object.__setattr__(lattice, "tokens", toks)
        object.__setattr__(lattice, "log_emissions", tuple(np.zeros(len(t)) for t in toks))
        ref = brute_model(irstlm_model, lattice)
        assert ref.best == ("as", "<s>")
        with pytest.raises(LatticeError, match="sentence marker"):
            Lattice.from_lists([[(t, 0.0) for t in pos] for pos in toks])


def test_keypad_channel_never_offers_markers():
    ch = KeypadChannel.from_vocab(["<s>", "</s>", "<unk>", "as", "is"])
    lattice = ch.build_lattice("27 47")
    assert all(t not in ("<s>", "</s>") for toks in lattice.tokens for t in toks)


def test_cli_refuses_marker_lattice_naming_the_file(irstlm_model, tmp_path):
    lat = tmp_path / "markers.json"
    lat.write_text(json.dumps({"positions": REPORTED}))
    model = tmp_path / "m.arpa"
    model.write_text(IRSTLM_STYLE, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "arsdecode", "decode", "--lm", str(model), "--lattice", str(lat)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert "markers.json" in proc.stderr and "sentence marker" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_marker_free_lattices_match_brute_force_on_irstlm_model(irstlm_model):
    """Every lattice over {as, is, <unk>-words} up to length 3: decode == brute force."""
    # "zz" is not in the model: it is scored as <unk>.
    checked = 0
    for length in (1, 2, 3):
        for combo in itertools.product([("as", "is"), ("as", "zz"), ("is", "zz"),
                                        ("as", "is", "zz")], repeat=length):
            positions = [[(w, -0.1 * (k + 1)) for k, w in enumerate(pos)] for pos in combo]
            lattice = Lattice.from_lists(positions)
            ref = brute_model(irstlm_model, lattice)
            r = decode(irstlm_model, lattice)
            assert r.certified
            assert abs(r.log_p - ref.best_log_p) <= 1e-9, (positions, r.tokens, ref.best)
            assert tuple(r.tokens) in ref.near_best(1e-9)
            checked += 1
    assert checked == 4 + 16 + 64
