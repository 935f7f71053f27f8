"""`auto` chooses by the lattice, not by a constant (issue 19 B).

The families where a constant per-lattice ARS cost and a constant pair budget sent auto to
ARS, many times slower than the full DP: a long lattice on the shipped 5-gram, a few
positions with thousands of candidates, one long sentence to `tag --file`. Scaled down to
run in seconds; each asserts the method auto ran and that its answer is the full DP's. Also
the tag JSON names the method, and `--nbest` runs on every method.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

import arsdecode.methods.dispatch as dispatch
import arsdecode.methods.fast_full as fast_full
import maxarpa
from arsdecode.lattice import Lattice
from arsdecode.tasks.pos.evaluation import read_tagged
from arsdecode.tasks.pos.models import load_models
from arsdecode.tasks.pos.tag_many import tag_many
from arsdecode.tasks.sms.keypad import KeypadChannel, sample_sentence

DATA = Path(__file__).resolve().parent.parent / "arsdecode" / "data"
SHIPPED_5GRAM = DATA / "state_union.5gram.maxarpa.gz"
FIXTURE = Path(__file__).parent / "data" / "tagged_fixture.txt"


def fresh_model():
    """The shipped 5-gram, loaded anew: this process has not set up its full DP."""
    lm = maxarpa.load(SHIPPED_5GRAM)
    assert not fast_full.is_built(lm)
    return lm


def assert_auto_runs_full(lm, lattice: Lattice) -> None:
    auto = dispatch.decode(lm, lattice)  # a one-off call: the DP is not set up yet
    assert auto.method == "full"
    full = dispatch.decode(lm, lattice, method="full")
    assert (auto.tokens, auto.log_p) == (full.tokens, full.log_p)
    [many] = dispatch.decode_many(lm, [lattice])
    assert many.method == "full" and (many.tokens, many.log_p) == (full.tokens, full.log_p)


def test_a_long_lattice_runs_the_full_dp():
    lm = fresh_model()
    rng = np.random.default_rng(1)
    words = [w for w in lm.vocab[:3000] if w.isalpha()]
    observation = sample_sentence(list(rng.choice(words, 1000)), rng)
    lattice = KeypadChannel.from_vocab(lm.vocab).build_lattice(observation, top_k=10)
    assert len(lattice) == 1000
    assert_auto_runs_full(lm, lattice)


def test_four_positions_of_the_whole_vocabulary_run_the_full_dp():
    lm = fresh_model()
    rng = np.random.default_rng(3)
    vocab = [w for w in lm.vocab if w not in ("<s>", "</s>")]
    positions = [list(zip(rng.permutation(vocab).tolist(),
                          rng.normal(0, 3, len(vocab)).tolist())) for _ in range(4)]
    assert_auto_runs_full(lm, Lattice.from_lists(positions))


def long_sentence(n: int = 1000) -> list[str]:
    words = [w for s in read_tagged(FIXTURE) for w, _ in s]
    return (words * (n // len(words) + 1))[:n]


def test_one_long_sentence_is_tagged_by_the_full_dp():
    lm, em = load_models(None, 5)  # the shipped tagger, loaded anew: not set up
    assert not fast_full.is_built(lm)
    sentence = long_sentence()
    auto = tag_many(lm, em, [sentence])
    assert auto.method == "full" and auto.methods == ("full",)
    full = tag_many(lm, em, [sentence], method="full")
    assert auto.tags == full.tags and auto.log_p[0] == full.log_p[0]


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "arsdecode", *args], input=stdin,
                          capture_output=True, text=True)


def test_tag_file_json_names_the_method_auto_ran(tmp_path):
    words = tmp_path / "words.txt"
    words.write_text(" ".join(long_sentence()) + "\nThe dog barked .\n", encoding="utf-8")
    short = tmp_path / "short.txt"
    short.write_text("The dog barked .\n", encoding="utf-8")
    got = {}
    for method, path in (("auto", words), ("full", words), ("ars", short)):
        proc = run_cli("tag", "--file", str(path), "--order", "5", "--json", "--method",
                       method)
        assert proc.returncode == 0, proc.stderr
        got[method] = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["method"] for r in got["auto"]] == ["full", "full"]
    assert [r["method"] for r in got["full"]] == ["full", "full"]
    assert [r["method"] for r in got["ars"]] == ["ars"]
    assert [r["tags"] for r in got["auto"]] == [r["tags"] for r in got["full"]]
    assert got["ars"][0]["tags"] == got["auto"][1]["tags"]
    one = run_cli("tag", "The dog barked .", "--json", "--method", "ars")
    assert one.returncode == 0 and json.loads(one.stdout)["method"] == "ars"


def test_nbest_runs_on_every_method_and_they_agree(tmp_path):
    """`decode --nbest` with --method full (the compiled DP's k-best), ars and auto."""
    lattice = tmp_path / "lat.json"
    lattice.write_text(json.dumps({"positions": [[["the", 0.0], ["a", -1.0]],
                                                 [["dog", 0.0], ["cat", -0.5]]]}))
    got = {}
    for method in ("full", "ars", "auto"):
        proc = run_cli("decode", "--lm", str(SHIPPED_5GRAM), "--lattice", str(lattice),
                       "--nbest", "3", "--method", method, "--json")
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        assert out["method"] == ("ars" if method == "ars" else "full")
        got[method] = [(p["tokens"], p["log_p"]) for p in out["nbest"]]
    assert len(got["full"]) == 3
    for method in ("ars", "auto"):
        assert [t for t, _ in got[method]] == [t for t, _ in got["full"]]
        assert np.allclose([lp for _, lp in got[method]], [lp for _, lp in got["full"]],
                           rtol=0, atol=1e-9)


def test_a_sentence_of_unknown_words_stays_with_the_full_dp():
    """Out-of-domain text: every unknown word takes every open-class tag its class's rare
    words took, and the merged states multiply. Twenty such words make over 2e6 pairs (the
    old constant budget on tag models), which the dense DP still finishes in a fraction of
    ARS's time: auto keeps it."""
    lm, em = load_models(None, 5)
    rng = np.random.default_rng(0)
    words = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), 7)) for _ in range(20)]
    full = tag_many(lm, em, [words], method="full")
    assert full.pairs is not None and full.pairs[0] > 2_000_000
    auto = tag_many(lm, em, [words])
    assert auto.methods == ("full",)
    assert auto.tags == full.tags and auto.log_p[0] == full.log_p[0]


def test_every_compiled_kind_keeps_a_ski_rental_account_per_model():
    """A mixture, a VPYLM and a log-linear target each sum auto's ARS estimates over calls
    per model (`compiled_kinds.SkiRental`), so one lattice per call still sets the DP up once
    ARS has cost about the set-up; one table has no account (its set-up is compared per
    call). Two models of a kind keep separate sums."""
    from arsdecode.api import interpolate
    from arsdecode.methods import compiled_kinds, fast_loglinear, fast_mixture, fast_vpylm

    for kind in (fast_mixture, fast_vpylm, fast_loglinear):
        assert isinstance(kind.charge.__self__, compiled_kinds.SkiRental)
    a, b = maxarpa.load(SHIPPED_5GRAM), maxarpa.load(SHIPPED_5GRAM)
    one, two = interpolate([a, b], [0.5, 0.5]), interpolate([a, b], [0.3, 0.7])
    assert fast_full.ars_charged(one, 0.25) == 0.25
    assert fast_full.ars_charged(one, 0.5) == 0.75
    assert fast_full.ars_charged(two, 0.5) == 0.5
    assert fast_full.ars_charged(a, 0.5) == 0.5 and fast_full.ars_charged(a, 0.5) == 0.5
