"""One Algorithm 1 for every lattice kind (issue 30): `methods.ars_loop` runs the decoding and the
sampling loop for confusion networks (`ars`) and word lattices (`dag_ars`) alike, so both check
their options the same way, stop the same way, and return results with the same field names.

The exactness of either side is tested against brute force in test_ars_*.py and
test_dag_ars.py; here, what the one loop makes equal across the two.
"""

from __future__ import annotations

import dataclasses
import json
import random

import pytest
from cli_in_process import in_process_cli as _cli

from ars_fixtures import make_lattice
from arsdecode.errors import OptionError
from arsdecode.lattice import WordLattice
from arsdecode.lattice.lattice_files import write_word_lattice
from arsdecode.methods.ars import DecodeInterrupted, dag_ars_decode, dag_ars_sample
from arsdecode.methods.ars import decode as ars_decode
from arsdecode.methods.ars import sample as ars_sample
from arsdecode.methods.expansion_dp import dag_decode
from arsdecode.methods.kbest import decode_kbest
from arsdecode.methods.results import DecodeResult, SampleResult
from arsdecode.testing.brute_dag import random_word_lattice

TIGHT = 1e-9


@pytest.fixture
def both(random_lms):
    """A model, a confusion network it has a path through, and the same network as a DAG."""
    model = random_lms[2]
    rng = random.Random(3030)
    lattice = make_lattice(rng, model, neg_inf=0.0)
    return model, lattice, WordLattice.from_confusion(lattice)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_max_iterations_is_checked_on_every_lattice_kind(both, bad):
    """`dag_ars` refused max_iterations=0 and `ars.decode` ran it (one uncertified
    iteration): the one loop checks it once, for both kinds and for k-best."""
    model, lattice, wl = both
    with pytest.raises(OptionError, match="max_iterations"):
        ars_decode(model.lm, lattice, max_iterations=bad)
    with pytest.raises(OptionError, match="max_iterations"):
        decode_kbest(model.lm, lattice, 2, max_iterations=bad)
    with pytest.raises(OptionError, match="max_iterations"):
        dag_ars_decode(model.lm, wl, max_iterations=bad)


def test_both_kinds_find_the_same_certified_path(both):
    """The same network as a confusion network and as a DAG: the same best path and ln p."""
    model, lattice, wl = both
    cn = ars_decode(model.lm, lattice)
    dag = dag_ars_decode(model.lm, wl)
    assert cn.certified and dag.certified
    assert dag.tokens == cn.tokens and abs(dag.log_p - cn.log_p) <= TIGHT


def test_a_word_lattice_decode_is_a_decode_result(random_lms):
    """One decode result type: the word lattice's has every DecodeResult field (and JSON
    field) under the same name, with its arcs, and keeps `words` / "words" as aliases."""
    model = random_lms[4]
    wl = random_word_lattice(random.Random(3031), model.words, max_nodes=6)
    r = dag_ars_decode(model.lm, wl)
    assert isinstance(r, DecodeResult)
    assert r.tokens == r.words == wl.path_words(r.arcs)
    js = r.to_json()
    assert js["tokens"] == js["words"] == r.tokens and js["arcs"] == list(r.arcs)
    cn_fields = set(DecodeResult(["a"], 0.0, 0.0, 1, 1, {}, [], 0.0).to_json())
    assert cn_fields <= set(js)
    full = dag_decode(model.lm, wl)
    assert full.tokens == full.words == r.tokens
    assert full.to_json()["tokens"] == full.to_json()["words"]


def test_an_interrupted_word_lattice_decode_gives_a_decode_result(random_lms):
    model = random_lms[4]
    wl = random_word_lattice(random.Random(3032), model.words, max_nodes=6)

    def stop(iteration: int, tokens: list[str], log_q: float, log_p: float) -> None:
        raise KeyboardInterrupt

    with pytest.raises(DecodeInterrupted) as info:
        dag_ars_decode(model.lm, wl, on_iteration=stop)
    r = info.value.result
    assert isinstance(r, DecodeResult) and not r.certified and r.iterations == 1
    assert r.tokens == wl.path_words(r.arcs) and info.value.gap >= 0


def test_the_sample_results_share_their_field_names(both):
    model, lattice, wl = both
    cn = ars_sample(model.lm, lattice, 20, 5)
    dag = dag_ars_sample(model.lm, wl, 20, 5)
    names = {f.name for f in dataclasses.fields(SampleResult)}
    assert all(hasattr(dag, name) for name in names), names - set(dir(dag))
    assert set(cn.to_json()) <= set(dag.to_json())
    assert dag.log_p == [p.log_p for p in dag.samples]
    assert all(p.tokens == p.words == wl.path_words(p.arcs) for p in dag.samples)
    assert len(dag.trace.accepted) == dag.trials and sum(dag.trace.accepted) == 20


def test_max_trials_stops_within_a_batch_on_both_kinds(both):
    """The word-lattice sampler stopped at max_trials inside a batch, the confusion network's
    at the next batch (100 trials for max_trials=30): one loop, one rule."""
    model, lattice, wl = both
    assert ars_sample(model.lm, lattice, 10**6, 4, max_trials=30).trials == 30
    assert dag_ars_sample(model.lm, wl, 10**6, 4, max_trials=30).trials == 30


@pytest.mark.parametrize("method", ["full", "ars"])
def test_word_lattice_cli_json_has_tokens_and_words(random_lms, tmp_path, capsys, method):
    """`decode --lattice WORD_LATTICE --json` writes "tokens" as a confusion network's does,
    and "words" (its name before) alongside, for one path and for each of --nbest K."""
    model = random_lms[4]
    wl = random_word_lattice(random.Random(3033), model.words, max_nodes=6)
    path = tmp_path / "lat.slf"
    write_word_lattice(wl, path)
    code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                          "--method", method, "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["tokens"] == got["words"] and got["method"] == method
    if method == "full":
        code, out, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice",
                              str(path), "--nbest", "3", "--json")
        assert code == 0, err
        got = json.loads(out)
        assert got["tokens"] == got["words"]
        assert all(p["tokens"] == p["words"] for p in got["nbest"])
