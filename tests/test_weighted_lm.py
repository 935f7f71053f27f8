"""`WeightedLM` (arsdecode.model.weighted): SRILM disambig's -lmw, -no-eos and ngram's -no-sos
as a target, through every method.

References, each independent of the wrapper:
- KenLM's own `score(sentence, bos=..., eos=...)` times the weight (ln = log10 * ln 10), to
  KenLM's float32 precision;
- brute force: every path of a small lattice scored on its own by scalar `maxarpa.Model.log10p`
  calls on the stripped history (no <s> without sentence_start, no </s> factor without
  sentence_end), times the weight, plus the emissions: here the best path by every method
  (the compiled DP given the wrapper's scoring), and the CLI's --lmw; k best, ln Z,
  posteriors and samples in the conformance suite (tests/test_conformance.py, "weighted");
- the bound: a brute-force max of that reference over every left extension of a context, on
  hypothesis-drawn random ARPA models with positive backoffs.
Models are random ARPA models with positive backoffs (tests/ars_fixtures.py `random_lms`).
"""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from cli_in_process import in_process_cli as _cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import maxarpa
from arpa_fixtures import arpa_texts
from ars_fixtures import make_lattice
from arsdecode import api
from arsdecode.errors import OptionError
from arsdecode.lattice import Lattice
from arsdecode.methods import fast_full
from arsdecode.model import (
    NgramScoring,
    WeightedLM,
    as_target_model,
    context_rows,
    ngram_scoring,
    ngram_tables,
)
from arsdecode.testing.brute import BruteResult, target_path_log
from maxarpa.constants import BOS, EOS, LN10
from maxarpa.model import Model

TIGHT = 1e-9
SETTINGS = [  # (lm_weight, sentence_start, sentence_end)
    (2.0, True, True),
    (0.5, True, True),
    (1.0, False, True),
    (1.0, True, False),
    (0.7, False, False),
    (3.0, False, True),
]


def reference_log(lm: Model, path: tuple[str, ...], weight: float, sos: bool,
                  eos: bool) -> float:
    """ln of the weighted LM score of `path`, from scalar log10p calls on the history."""
    hist = [BOS] if sos else []
    total = 0.0
    for w in [*path, EOS] if eos else path:
        total += lm.log10p(w, hist)
        hist.append(w)
    return weight * LN10 * total


def reference(lm: Model, lattice: Lattice, weight: float, sos: bool,
              eos: bool) -> BruteResult:
    """Every path of `lattice` with its weighted score plus emissions."""
    paths, scores = [], []
    for choice in itertools.product(*(range(w) for w in lattice.widths)):
        path = tuple(lattice.tokens[i][j] for i, j in enumerate(choice))
        emis = sum(float(lattice.log_emissions[i][j]) for i, j in enumerate(choice))
        lmp = reference_log(lm, path, weight, sos, eos)
        paths.append(path)
        scores.append(-math.inf if emis == -math.inf or lmp == -math.inf else lmp + emis)
    return BruteResult(paths, scores)


def brute_marginals(ref: BruteResult, lattice: Lattice) -> list[np.ndarray]:
    """Per position, each candidate's exact posterior (used by test_disambig)."""
    out = [np.zeros(len(t)) for t in lattice.tokens]
    for path, prob in ref.distribution().items():
        for i, tok in enumerate(path):
            out[i][lattice.tokens[i].index(tok)] += prob
    return out


def cases(random_lms, per_model: int, seed: int, **lattice_options):
    """(model, settings, WeightedLM, lattice, reference) with at least one finite path."""
    rng = random.Random(seed)
    for model in random_lms:
        for _ in range(per_model):
            weight, sos, eos = rng.choice(SETTINGS)
            lattice = make_lattice(rng, model, **lattice_options)
            ref = reference(model.lm, lattice, weight, sos, eos)
            if ref.log_Z == -math.inf:
                continue
            target = WeightedLM(model.lm, lm_weight=weight, sentence_start=sos,
                                sentence_end=eos)
            yield model, (weight, sos, eos), target, lattice, ref


# ---------------------------------------------------------------- scores


def test_sentence_scores_equal_kenlm(random_lms):
    rng = random.Random(1)
    checked = 0
    for model in random_lms:
        if model.km is None:
            continue
        for weight, sos, eos in SETTINGS:
            target = WeightedLM(model.lm, lm_weight=weight, sentence_start=sos,
                                sentence_end=eos)
            for _ in range(10):
                sentence = [rng.choice(model.words) for _ in range(rng.randint(1, 6))]
                want = weight * LN10 * model.km.score(" ".join(sentence), bos=sos, eos=eos)
                got = target_path_log(target, sentence)
                assert got == pytest.approx(want, rel=1e-5, abs=1e-4 * weight), (
                    model, weight, sos, eos, sentence)
                checked += 1
    assert checked >= 100


def test_default_settings_equal_the_plain_model_and_api_returns_it(random_lms):
    model = random_lms[2]
    plain = as_target_model(model.lm)
    target = WeightedLM(model.lm)
    rows = context_rows([[plain.bos], [plain.bos, 3], [2, 3], []], plain.order - 1)
    words = np.array([3, 2, plain.eos, 4])
    np.testing.assert_array_equal(target.log_prob(rows, words), plain.log_prob(rows, words))
    np.testing.assert_array_equal(target.log_bound(rows, words), plain.log_bound(rows, words))
    assert api.weighted(model.lm) is model.lm
    assert isinstance(api.weighted(model.lm, sentence_end=False), WeightedLM)


def test_wrappers_combine_and_expose_the_tables(random_lms):
    model = random_lms[1]
    inner = WeightedLM(model.lm, lm_weight=2.0, sentence_end=False)
    outer = WeightedLM(inner, lm_weight=1.5, sentence_start=False)
    assert outer.scoring == NgramScoring(3.0, False, False)
    assert ngram_scoring(outer) == outer.scoring
    assert ngram_tables(outer) is model.lm and outer.ngram is model.lm


@pytest.mark.parametrize("weight", [0.0, -1.0, math.inf, math.nan])
def test_bad_weight_is_an_option_error(random_lms, weight):
    with pytest.raises(OptionError, match="lm_weight must be a finite number > 0"):
        WeightedLM(random_lms[0].lm, lm_weight=weight)
    with pytest.raises(OptionError):
        api.weighted(random_lms[0].lm, lm_weight=weight)


# ---------------------------------------------------------------- every method vs brute force


def test_best_path_every_method_equals_brute_force(random_lms, monkeypatch):
    seen: list[NgramScoring] = []
    run_flat = fast_full.run_flat

    def recording_run_flat(*args, **kwargs):  # the real compiled call, with its scoring noted
        seen.append(kwargs["scoring"])
        return run_flat(*args, **kwargs)

    monkeypatch.setattr(fast_full, "run_flat", recording_run_flat)
    checked = 0
    for model, setting, target, lattice, ref in cases(random_lms, 8, seed=2,
                                                      extra_words=["zzunseen"]):
        assert ngram_tables(target) is model.lm
        for method in ("ars", "full", "auto"):
            seen.clear()
            r = api.decode(target, lattice, method=method)
            assert r.certified
            assert abs(r.log_p - ref.best_log_p) <= TIGHT * max(1.0, abs(ref.best_log_p)), (
                model, setting, method)
            assert tuple(r.tokens) in ref.near_best(1e-9)
            if method == "full":
                assert r.method == "full"
                assert seen == [target.scoring]  # the compiled DP ran, with this scoring
        many = api.decode_many(target, [lattice, lattice], method="full")
        assert all(abs(m.log_p - ref.best_log_p) <= 1e-9 * max(1.0, abs(ref.best_log_p))
                   for m in many)
        checked += 1
    assert checked >= 4 * len(random_lms)


# ---------------------------------------------------------------- the bound


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arpa=arpa_texts(min_order=2, max_order=4, max_vocab=3), data=st.data())
def test_log_bound_covers_every_left_extension(tmp_path_factory, arpa, data):
    text, _ = arpa
    path = tmp_path_factory.mktemp("wlm") / "m.arpa"
    path.write_text(text)
    lm = maxarpa.load(path)
    weight = data.draw(st.sampled_from([0.3, 1.0, 2.5]))
    sos = data.draw(st.booleans())
    eos = data.draw(st.booleans())
    target = WeightedLM(lm, lm_weight=weight, sentence_start=sos, sentence_end=eos)
    width = lm.order - 1
    plain = [w for w in lm.vocab if w not in (BOS, EOS)]
    context = data.draw(st.lists(st.sampled_from(plain), max_size=width))
    if data.draw(st.booleans()) and len(context) < width:
        context = [BOS, *context]
    word = data.draw(st.sampled_from([*plain, EOS]))
    ids = [lm.word_to_id[w] for w in context]
    bound = float(target.log_bound(context_rows([ids], width),
                                   np.array([lm.word_to_id[word]]))[0])
    # Every left extension that a history can have: none if the context starts with <s>,
    # else any words, possibly led by <s>, up to the model's context width.
    extensions: list[list[str]] = [[]]
    if not context or context[0] != BOS:
        for n in range(1, width - len(context) + 1):
            for z in itertools.product(plain, repeat=n):
                extensions.append(list(z))
                if n < width - len(context):
                    extensions.append([BOS, *z])
        extensions.append([BOS])
    best = -math.inf
    for z in extensions:
        hist = z + context
        if not sos:
            hist = hist[hist.index(BOS) + 1:] if BOS in hist else hist
        value = 0.0 if (word == EOS and not eos) else weight * LN10 * lm.log10p(word, hist)
        best = max(best, value)
    assert bound >= best - 1e-9 * max(1.0, abs(best)), (text, context, word, bound, best)
    # and log_prob is the reference value for the history the context is
    hist = context if sos or BOS not in context else context[1:]
    want = 0.0 if (word == EOS and not eos) else weight * LN10 * lm.log10p(word, hist)
    got = float(target.log_prob(context_rows([ids], width),
                                np.array([lm.word_to_id[word]]))[0])
    assert got == pytest.approx(want, abs=1e-9)


# ---------------------------------------------------------------- --lmw on the commands


def _lattice_file(tmp_path, lattice: Lattice, name: str = "lat.json") -> str:
    import json

    path = tmp_path / name
    path.write_text(json.dumps(lattice.to_json_obj()))
    return str(path)


def test_lmw_on_decode_marginals_and_sample(random_lms, tmp_path, capsys):
    import json

    checked = 0
    for model, _, _, lattice, _ in cases(random_lms[:5], 3, seed=9, neg_inf=0.0):
        weight = 1.7
        ref = reference(model.lm, lattice, weight, True, True)
        lat = _lattice_file(tmp_path, lattice)
        code, out, _ = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", lat,
                            "--lmw", str(weight), "--json")
        assert code == 0
        assert json.loads(out)["log_p"] == pytest.approx(ref.best_log_p, abs=TIGHT)
        code, out, _ = _cli(capsys, "marginals", "--lm", str(model.path), "--lattice", lat,
                            "--lmw", str(weight), "--method", "full", "--json")
        assert code == 0
        got = json.loads(out)
        assert got["exact"] and got["log_Z"] == pytest.approx(ref.log_Z, abs=TIGHT)
        code, out, _ = _cli(capsys, "sample", "--lm", str(model.path), "--lattice", lat,
                            "--lmw", str(weight), "-n", "50", "--json")
        assert code == 0
        for tokens, log_p in zip(json.loads(out)["samples"], json.loads(out)["log_p"],
                                 strict=True):
            assert log_p == pytest.approx(ref.score(tokens), abs=TIGHT)
        checked += 1
    assert checked >= 5


def test_lmw_on_batch_equals_brute_force(random_lms, tmp_path, capsys):
    import json

    model = random_lms[4]
    rng = random.Random(10)
    lattices = [make_lattice(rng, model, neg_inf=0.0) for _ in range(6)]
    (tmp_path / "in.jsonl").write_text("".join(
        json.dumps({"id": i, **lat.to_json_obj()}) + "\n" for i, lat in enumerate(lattices)))
    code, _, err = _cli(capsys, "batch", "--lm", str(model.path), "--in",
                        str(tmp_path / "in.jsonl"), "--out", str(tmp_path / "out.jsonl"),
                        "--model-cache", str(tmp_path / "cache"), "--lmw", "0.6")
    assert code == 0, err
    lines = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(lines) == len(lattices)
    for line in lines:
        ref = reference(model.lm, lattices[line["id"]], 0.6, True, True)
        assert line["log_p"] == pytest.approx(ref.best_log_p, abs=TIGHT)
        assert tuple(line["tokens"]) in ref.near_best(1e-9)


@pytest.mark.parametrize("argv, fragment", [
    (["decode", "--lattice", "LAT", "--lmw", "0"], "--lm-scale: must be a finite number > 0"),
    (["marginals", "--lattice", "LAT", "--lmw", "nan"], "--lm-scale: must be a finite number"),
    (["sample", "--lattice", "LAT", "-n", "2", "--lmw", "x"], "--lm-scale: expected a number"),
    (["batch", "--in", "LAT", "--out", "OUT", "--task", "tag", "--lmw", "2"],
     "--lmw is for --task decode or sample"),
])
def test_lmw_errors_are_one_line(random_lms, tmp_path, capsys, argv, fragment):
    model = random_lms[0]
    lat = _lattice_file(tmp_path, Lattice.from_lists([[(model.words[0], 0.0)]]))
    argv = [lat if a == "LAT" else str(tmp_path / "out") if a == "OUT" else a for a in argv]
    code, out, err = _cli(capsys, argv[0], "--lm", str(model.path), *argv[1:])
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and fragment in err and "Traceback" not in err


def test_compiled_dp_with_a_weight_on_wide_keypad_lattices():
    """Wide lattices over the embedded 5-gram's 11k words take the sparse bound pass, which
    the small random models above never reach: full (compiled) must equal ARS."""
    from arsdecode.tasks.sms.keypad import KeypadChannel, is_typable, sample_sentence

    lm = api.load_lm(api.DEFAULT_LM)
    channel = KeypadChannel.from_vocab(lm.vocab, k=64.0)
    rng, gen = random.Random(0), np.random.default_rng(0)
    words = [w for w in lm.vocab[5:3000] if is_typable(w)]
    lattices = []
    for _ in range(5):
        sentence = [rng.choice(words) for _ in range(rng.randint(4, 10))]
        lattices.append(channel.build_lattice(sample_sentence(sentence, gen), top_k=100))
    for weight in (2.0, 0.5):
        target = WeightedLM(lm, lm_weight=weight)
        full = api.decode_many(target, lattices, method="full")
        for lattice, r in zip(lattices, full, strict=True):
            ars = api.decode(target, lattice, method="ars")
            assert r.method == "full"
            assert abs(r.log_p - ars.log_p) <= TIGHT * max(1.0, abs(ars.log_p))
