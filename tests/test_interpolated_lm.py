"""`InterpolatedLM` (arsdecode.model.interpolated): p(w | h) = sum_i lambda_i p_i(w | h), SRILM's
`ngram -lm A -mix-lm B -lambda 0.6`, as a target through every method.

References, each independent of the target's vectorised mapping:
- `reference_ln`: per word, scalar `maxarpa.Model.log10p` calls of each component on the
  history as that component sees it (a word it lacks: its <unk>, or zero and a cut history,
  by `missing`), mixed by hand; brute force over every path of small lattices for the best
  path, k best, ln Z, marginals and samples (in tests/test_conformance.py);
- KenLM: each component's `full_scores` of a sentence (KenLM maps an unknown word to <unk>,
  as missing="unk"), mixed by hand, to KenLM's float32 precision;
- the bound: a brute-force max of `reference_ln` over every left extension of a context
  (words of the union, <s>-led ones, and words absent from every table), on hypothesis-drawn
  random models with positive backoffs; and its tightness: it equals the mix of each
  component's own brute-force maximum.
Every method against brute force (`reference_path`) runs in the conformance suite
(tests/test_conformance.py, target "interpolated"); here, the CLI's mix flags against it.
Models: tests/ars_fixtures.py `random_lms` (random ARPA models with positive backoffs) and
two variants with other vocabularies (renamed words; no <unk>).
"""

from __future__ import annotations

import itertools
import json
import math
import random
import re
from dataclasses import dataclass

import numpy as np
import pytest
from cli_in_process import in_process_cli as _cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import maxarpa
from arsdecode import api
from arsdecode.errors import ModelError, OptionError
from arsdecode.lattice import Lattice
from arsdecode.model import InterpolatedLM, as_target_model, context_rows, ngram_tables
from arsdecode.model.interpolated import Missing
from arsdecode.testing.brute import BruteResult, target_path_log
from arsdecode.testing.random_arpa import random_arpa_text
from maxarpa.constants import BOS, EOS, LN10
from maxarpa.model import Model

TIGHT = 1e-9
UNSEEN = "zzunseen"  # a token in no model's vocabulary


# ---------------------------------------------------------------- the reference


def _seen(lm: Model, word: str, missing: str) -> str | None:
    """The word component `lm` sees for a union word, or None (zero / ends its history)."""
    if word in lm.word_to_id:
        return word
    if missing == "unk" and lm.unk_id is not None:
        return lm.vocab[lm.unk_id]
    return None


def component_log10(lm: Model, missing: str, word: str, history: list[str]) -> float:
    view: list[str] = []
    for h in history:
        seen = _seen(lm, h, missing)
        view = [] if seen is None else [*view, seen]
    seen_word = _seen(lm, word, missing)
    return -math.inf if seen_word is None else lm.log10p(seen_word, view)


def reference_ln(models: list[Model], weights: list[float], missing: str, word: str,
                 history: list[str]) -> float:
    total = sum(w * 10.0 ** component_log10(m, missing, word, history)
                for m, w in zip(models, weights, strict=True))
    return math.log(total) if total > 0 else -math.inf


def union_word(models: list[Model], token: str) -> str:
    if any(token in m.word_to_id for m in models):
        return token
    return "<unk>"


def reference_path(models, weights, missing, path) -> float:
    hist = [BOS]
    total = 0.0
    for tok in [*path, EOS]:
        w = union_word(models, tok) if tok != EOS else EOS
        total += reference_ln(models, weights, missing, w, hist)
        hist.append(w)
    return total


def brute(models, weights, missing, lattice: Lattice, lm_weight: float = 1.0) -> BruteResult:
    """Every path of `lattice`: lm_weight * ln p_mix(path) + its emissions."""
    paths, scores = [], []
    for choice in itertools.product(*(range(w) for w in lattice.widths)):
        path = tuple(lattice.tokens[i][j] for i, j in enumerate(choice))
        emis = sum(float(lattice.log_emissions[i][j]) for i, j in enumerate(choice))
        lmp = lm_weight * reference_path(models, weights, missing, path)
        paths.append(path)
        scores.append(-math.inf if emis == -math.inf or lmp == -math.inf else lmp + emis)
    return BruteResult(paths, scores)


# ---------------------------------------------------------------- models and cases


@dataclass(frozen=True)
class Mix:
    name: str
    paths: list
    models: list[Model]
    weights: list[float]
    missing: Missing

    def target(self) -> InterpolatedLM:
        return InterpolatedLM(self.models, self.weights, missing=self.missing)

    def words(self) -> list[str]:
        return sorted({w for m in self.models for w in m.vocab} - {BOS, EOS})

    def __repr__(self) -> str:
        return f"Mix({self.name})"


@pytest.fixture(scope="module")
def extra_lms(tmp_path_factory):
    """Two models with other vocabularies: w1, w2 renamed to v1, v2; and one without <unk>."""
    d = tmp_path_factory.mktemp("mix_extra")
    renamed = re.sub(r"\bw([12])\b", r"v\1", random_arpa_text(random.Random(31), 3, 4, 0.6,
                                                              density=0.9))
    no_unk = random_arpa_text(random.Random(32), 2, 5, 0.6, density=0.9, with_unk=False)
    out = []
    for name, text in (("renamed", renamed), ("nounk", no_unk)):
        path = d / f"{name}.arpa"
        path.write_text(text)
        out.append((path, maxarpa.load(path)))
    return out


@pytest.fixture(scope="module")
def mixes(random_lms, extra_lms) -> list[Mix]:
    rng = random.Random(5)
    pool = [(m.path, m.lm) for m in random_lms] + list(extra_lms)
    specs = [(0, 1), (2, 5), (3, 8), (1, 9), (4, 6, 8), (7, 2), (8, 9), (5, 0, 9)]
    out = []
    for n, idx in enumerate(specs):
        raw = [rng.uniform(0.2, 1.0) for _ in idx]
        weights = [x / sum(raw) for x in raw]
        weights[-1] = 1.0 - sum(weights[:-1])
        missing: Missing = "unk" if n % 2 == 0 else "zero"
        out.append(Mix(f"{'+'.join(map(str, idx))}-{missing}", [pool[i][0] for i in idx],
                       [pool[i][1] for i in idx], weights, missing))
    return out


def make_lattice(rng: random.Random, words: list[str], max_len: int = 4,
                 max_width: int = 3) -> Lattice:
    positions = []
    for _ in range(rng.randint(1, max_len)):
        toks = rng.sample(words, min(rng.randint(1, max_width), len(words)))
        ws = [round(rng.uniform(-3.0, 0.0), 6) for _ in toks]
        if len(toks) >= 2 and rng.random() < 0.15:
            ws[rng.randrange(len(toks))] = -math.inf
        positions.append(list(zip(toks, ws, strict=True)))
    return Lattice.from_lists(positions)


def cases(mixes, per_mix: int, seed: int, **options):
    rng = random.Random(seed)
    for mix in mixes:
        pool = [*mix.words(), UNSEEN] if "<unk>" in mix.words() else mix.words()
        for _ in range(per_mix):
            lattice = make_lattice(rng, pool, **options)
            ref = brute(mix.models, mix.weights, mix.missing, lattice)
            if ref.log_Z == -math.inf:
                continue
            yield mix, mix.target(), lattice, ref


# ---------------------------------------------------------------- scores


def test_sentence_scores_equal_the_scalar_reference(mixes):
    rng = random.Random(1)
    checked = 0
    for mix in mixes:
        target = mix.target()
        assert target.order == max(m.order for m in mix.models)
        assert set(target.vocab) == {w for m in mix.models for w in m.vocab}
        assert ngram_tables(target) is None and not hasattr(target, "ngram")
        pool = [*mix.words(), UNSEEN] if "<unk>" in mix.words() else mix.words()
        for _ in range(25):
            sentence = [rng.choice(pool) for _ in range(rng.randint(1, 7))]
            want = reference_path(mix.models, mix.weights, mix.missing, sentence)
            got = target_path_log(target, sentence)
            assert got == pytest.approx(want, abs=TIGHT) or got == want == -math.inf, (
                mix, sentence)
            checked += 1
    assert checked == 25 * len(mixes)


def test_sentence_scores_equal_kenlm_mixed_by_hand(random_lms, extra_lms):
    """missing="unk" is each model scored on its own, KenLM's way (unknown word -> <unk>)."""
    import kenlm

    rng = random.Random(2)
    checked = 0
    pool = [m for m in random_lms if m.km is not None]
    renamed_path, renamed = extra_lms[0]
    pairs = [(pool[i].path, pool[i].lm, pool[i].km) for i in range(len(pool))]
    pairs.append((renamed_path, renamed, kenlm.Model(str(renamed_path))))
    for _ in range(30):
        chosen = rng.sample(pairs, rng.choice([2, 3]))
        raw = [rng.uniform(0.1, 1.0) for _ in chosen]
        weights = [x / sum(raw) for x in raw]
        target = api.interpolate([c[1] for c in chosen], weights)
        words = sorted({w for c in chosen for w in c[1].vocab} - {BOS, EOS, "<unk>"})
        sentence = [rng.choice(words) for _ in range(rng.randint(1, 6))]
        per_model = [[s[0] for s in c[2].full_scores(" ".join(sentence))] for c in chosen]
        want = sum(math.log(sum(w * 10.0 ** lp[t] for w, lp in zip(weights, per_model,
                                                                     strict=True)))
                   for t in range(len(sentence) + 1))
        assert target_path_log(target, sentence) == pytest.approx(want, rel=1e-5, abs=1e-4)
        checked += 1
    assert checked == 30


def test_same_model_twice_is_the_model(random_lms):
    """A mixture of a model with itself is that model, bounds included."""
    for model in random_lms[:5]:
        plain = as_target_model(model.lm)
        target = api.interpolate([model.lm, model.lm], [0.3, 0.7])
        rows = context_rows([[plain.bos], [plain.bos, 3], [2, 3], [], [4]], plain.order - 1)
        words = np.array([3, 2, plain.eos, 4, 3])
        np.testing.assert_allclose(target.log_prob(rows, words), plain.log_prob(rows, words),
                                   atol=1e-12)
        np.testing.assert_allclose(target.log_bound(rows, words),
                                   plain.log_bound(rows, words), atol=1e-12)
        np.testing.assert_array_equal(target.minimal_context(rows), plain.minimal_context(rows))


# ---------------------------------------------------------------- every method vs brute force


# ---------------------------------------------------------------- bound, exactness, cut


def _extensions(words: list[str], context: list[str], width: int) -> list[list[str]]:
    """Every left extension a history can give `context`: none after <s>, else any words
    (<s>-led or not) up to `width` words in all."""
    out: list[list[str]] = [[]]
    if context and context[0] == BOS:
        return out
    room = width - len(context)
    for n in range(1, room + 1):
        for z in itertools.product(words, repeat=n):
            out.append(list(z))
            if n < room:
                out.append([BOS, *z])
    if room > 0:
        out.append([BOS])
    return out


@st.composite
def mixtures(draw):
    k = draw(st.integers(2, 3))
    texts = []
    for _ in range(k):
        seed = draw(st.integers(0, 10**6))
        order = draw(st.integers(1, 3))
        vocab = draw(st.integers(1, 3))
        text = random_arpa_text(random.Random(seed), order, vocab, 0.6,
                                density=draw(st.sampled_from([0.5, 0.9])),
                                with_unk=draw(st.booleans()))
        if draw(st.booleans()):  # another vocabulary: w0 -> v0
            text = re.sub(r"\bw0\b", "v0", text)
        texts.append(text)
    raw = [draw(st.integers(1, 9)) for _ in range(k)]
    weights = [x / sum(raw) for x in raw]
    weights[-1] = 1.0 - sum(weights[:-1])
    return texts, weights, draw(st.sampled_from(["unk", "zero"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mix=mixtures(), data=st.data())
def test_bound_exactness_and_cut_against_brute_force(tmp_path_factory, mix, data):
    texts, weights, missing = mix
    d = tmp_path_factory.mktemp("mixbound")
    models = []
    for n, text in enumerate(texts):
        (d / f"m{n}.arpa").write_text(text)
        models.append(maxarpa.load(d / f"m{n}.arpa"))
    target = InterpolatedLM(models, weights, missing=missing)
    width = target.order - 1
    plain = [w for w in target.vocab if w not in (BOS, EOS)]
    has_unk = target.unk_id is not None
    # extensions may hold a word no table lists (it is the union's <unk>, or the same
    # history as an unseen word when there is none)
    ext_words = plain + ([UNSEEN] if has_unk else [])
    ref_word = (lambda w: union_word(models, w)) if has_unk else (lambda w: w)
    context = data.draw(st.lists(st.sampled_from(plain), max_size=width))
    if data.draw(st.booleans()) and len(context) < width:
        context = [BOS, *context]
    word = data.draw(st.sampled_from([*plain, EOS]))
    ids = [target.word_to_id[w] for w in context]
    row = context_rows([ids], width)
    wid = np.array([target.word_to_id[word]])
    bound = float(target.log_bound(row, wid)[0])
    got = float(target.log_prob(row, wid)[0])
    assert got == pytest.approx(reference_ln(models, weights, missing, word, context),
                                abs=1e-9) or got == -math.inf
    values = []
    per_component = [-math.inf] * len(models)
    for z in _extensions(ext_words, context, width):
        hist = [ref_word(w) for w in z] + context
        values.append(reference_ln(models, weights, missing, word, hist))
        for i, m in enumerate(models):
            per_component[i] = max(per_component[i],
                                   LN10 * component_log10(m, missing, word, hist))
    best = max(values)
    # valid: above the mixture's value for every left extension
    assert bound >= best - 1e-9 * max(1.0, abs(best)), (texts, context, word, bound, best)
    # as tight as the derivation allows: the mix of each component's own maximum
    mixed = sum(w * math.exp(v) for w, v in zip(weights, per_component, strict=True))
    want = math.log(mixed) if mixed > 0 else -math.inf
    assert bound == pytest.approx(want, abs=1e-9) or bound == want == -math.inf
    # is_exact: claimed for a short context only if every extension gives the same p
    position = len(context) - 1 if context and context[0] == BOS else width + 3
    if target.is_exact(position, ids) and not (context and context[0] == BOS):
        finite = [v for v in values if v > -math.inf]
        assert len(finite) in (0, len(values))
        assert max(values) - min(values) <= 1e-9 if finite else True
    if len(context) >= width:
        assert target.is_exact(position, ids)
    # minimal_context keeps p for every word, and commutes with appending one
    cut = target.minimal_context(row)
    everyone = np.array([target.word_to_id[w] for w in [*plain, EOS]])
    np.testing.assert_allclose(target.log_prob(np.repeat(cut, len(everyone), 0), everyone),
                               target.log_prob(np.repeat(row, len(everyone), 0), everyone),
                               atol=1e-12)
    if width:
        nxt = target.word_to_id[data.draw(st.sampled_from(plain))]
        grow = np.hstack([row[:, 1:], [[nxt]]])
        grow_cut = np.hstack([cut[:, 1:], [[nxt]]])
        np.testing.assert_array_equal(target.minimal_context(grow),
                                      target.minimal_context(grow_cut))


# ---------------------------------------------------------------- errors


def test_bad_weights_and_models_are_option_errors(random_lms):
    a, b = random_lms[0].lm, random_lms[1].lm
    for weights, fragment in [([0.6, 0.6], "must sum to 1"), ([0.5], "one weight per model"),
                              ([1.5, -0.5], ">= 0"), ([math.nan, 1.0], ">= 0"),
                              (["x", 1.0], "weights[0] must be a finite number")]:
        with pytest.raises(OptionError, match=re.escape(fragment)):
            api.interpolate([a, b], weights)
    with pytest.raises(OptionError, match="at least 2 models"):
        api.interpolate([a], [1.0])
    with pytest.raises(OptionError, match="missing must be one of"):
        api.interpolate([a, b], [0.5, 0.5], missing="ignore")
    with pytest.raises(OptionError, match=re.escape("models[1] must be an n-gram model")):
        api.interpolate([a, "b.arpa"], [0.5, 0.5])
    # a zero weight is allowed (SRILM's -lambda 1): the other model alone
    only_a = api.interpolate([a, b], [1.0, 0.0])
    plain = api.interpolate([a, a], [0.5, 0.5])
    rows = context_rows([[only_a.bos]], only_a.order - 1)
    w = only_a.ids(["w0"])
    assert float(only_a.log_prob(rows, w)[0]) == pytest.approx(
        float(plain.log_prob(context_rows([[plain.bos]], plain.order - 1), plain.ids(["w0"]))[0]))


def test_unknown_word_without_any_unk_is_a_model_error(extra_lms):
    (_, no_unk) = extra_lms[1]
    target = api.interpolate([no_unk, no_unk], [0.5, 0.5])
    with pytest.raises(ModelError, match="in none of the interpolated models"):
        target.ids(["w0", UNSEEN])


# ---------------------------------------------------------------- speed against the plain model


# ---------------------------------------------------------------- the command line


def _lattice_file(tmp_path, lattice: Lattice, name: str = "lat.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(lattice.to_json_obj()))
    return str(path)


def _mix_flags(mix: Mix) -> list[str]:
    """The SRILM spelling of `mix`: --lm A --mix-lm B --lambda l_A [--mix-lm2 C
    --mix-lambda2 l_C]; B's weight is 1 minus the others."""
    argv = ["--lm", str(mix.paths[0]), "--mix-lm", str(mix.paths[1]),
            "--lambda", repr(mix.weights[0])]
    for k, (path, w) in enumerate(zip(mix.paths[2:], mix.weights[2:], strict=True), start=2):
        argv += [f"--mix-lm{k}", str(path), f"--mix-lambda{k}", repr(w)]
    return [*argv, "--mix-missing", mix.missing]


def test_mix_flags_on_decode_sample_and_marginals(mixes, tmp_path, capsys):
    checked = 0
    for mix, _target, lattice, ref in cases([m for m in mixes if "<unk>" in m.words()], 1,
                                            seed=9):
        lat = _lattice_file(tmp_path, lattice)
        for method in ("auto", "full"):
            code, out, err = _cli(capsys, "decode", *_mix_flags(mix), "--lattice", lat,
                                  "--method", method, "--json")
            assert code == 0, err
            got = json.loads(out)
            assert got["log_p"] == pytest.approx(ref.best_log_p, abs=TIGHT), mix
            assert tuple(got["tokens"]) in ref.near_best(1e-9)
        weighted = brute(mix.models, mix.weights, mix.missing, lattice, lm_weight=1.7)
        code, out, err = _cli(capsys, "decode", *_mix_flags(mix), "--lattice", lat,
                              "--lmw", "1.7", "--json")  # SRILM's -lmw on the mixture
        assert code == 0, err
        assert json.loads(out)["log_p"] == pytest.approx(weighted.best_log_p, abs=TIGHT)
        code, out, err = _cli(capsys, "decode", *_mix_flags(mix), "--lattice", lat,
                              "--nbest", "3", "--json")
        assert code == 0, err
        finite = sorted((x for x in ref.log_p if x > -math.inf), reverse=True)
        assert [p["log_p"] for p in json.loads(out)["nbest"]] == pytest.approx(
            finite[:3], abs=TIGHT)
        code, out, err = _cli(capsys, "marginals", *_mix_flags(mix), "--lattice", lat,
                              "--method", "full", "--json")
        assert code == 0, err
        got = json.loads(out)
        assert got["exact"] and got["log_Z"] == pytest.approx(ref.log_Z, abs=TIGHT)
        code, out, err = _cli(capsys, "sample", *_mix_flags(mix), "--lattice", lat,
                              "-n", "30", "--json")
        assert code == 0, err
        got = json.loads(out)
        for tokens, log_p in zip(got["samples"], got["log_p"], strict=True):
            assert log_p == pytest.approx(ref.score(tokens), abs=TIGHT)
        checked += 1
    assert checked >= 3


def test_mix_flags_on_batch_and_disambig(mixes, tmp_path, capsys):
    mix = next(m for m in mixes if len(m.models) == 3)
    rng = random.Random(10)
    words = mix.words()
    lattices = [make_lattice(rng, words) for _ in range(6)]
    (tmp_path / "in.jsonl").write_text("".join(
        json.dumps({"id": i, **lat.to_json_obj()}) + "\n" for i, lat in enumerate(lattices)))
    code, _, err = _cli(capsys, "batch", *_mix_flags(mix), "--in", str(tmp_path / "in.jsonl"),
                        "--out", str(tmp_path / "out.jsonl"),
                        "--model-cache", str(tmp_path / "cache"))
    assert code == 0, err
    lines = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(lines) == len(lattices)
    for line in lines:
        ref = brute(mix.models, mix.weights, mix.missing, lattices[line["id"]])
        if ref.log_Z == -math.inf:
            assert "error" in line
            continue
        assert line["log_p"] == pytest.approx(ref.best_log_p, abs=TIGHT)
        assert tuple(line["tokens"]) in ref.near_best(1e-9)
    # disambig, SRILM's spellings: observed o_j -> two hidden words each, one sentence
    hidden = [rng.sample(words, 2) for _ in range(3)]
    probs = [[0.7, 0.3], [0.4, 0.6], [0.5, 0.5]]
    (tmp_path / "map").write_text("".join(
        f"o{j} {h[0]} {p[0]} {h[1]} {p[1]}\n"
        for j, (h, p) in enumerate(zip(hidden, probs, strict=True))))
    (tmp_path / "text").write_text("o0 o1 o2\n")
    lattice = Lattice.from_lists([[(w, math.log(p)) for w, p in zip(h, ps, strict=True)]
                                  for h, ps in zip(hidden, probs, strict=True)])
    ref = brute(mix.models, mix.weights, mix.missing, lattice)
    argv = [a[1:] if a.startswith("--") and a != "--mix-missing" else a  # -lm, -mix-lm, ...
            for a in _mix_flags(mix)]
    code, out, err = _cli(capsys, "disambig", *argv, "-map", str(tmp_path / "map"),
                          "-text", str(tmp_path / "text"))
    assert code == 0, err
    assert tuple(out.split()) in ref.near_best(1e-9)


@pytest.mark.parametrize("extra, fragment", [
    (["--lambda", "0.3"], "need --mix-lm"),
    (["--mix-lm2", "M", "--mix-lambda2", "0.2"], "need --mix-lm"),
    (["--mix-lm", "M", "--mix-lm2", "M"], "--mix-lm2 and --mix-lambda2 go together"),
    (["--mix-lm", "M", "--lambda", "0.7", "--mix-lm2", "M", "--mix-lambda2", "0.5"],
     "sum to 1.2 > 1"),
    (["--mix-lm", "M", "--lambda", "1.5"], "--lambda: must be in [0, 1]"),
    (["--mix-lm", "M", "--mix-missing", "drop"], "invalid choice"),
])
def test_mix_flag_errors_are_one_line(random_lms, tmp_path, capsys, extra, fragment):
    model = random_lms[0]
    lat = _lattice_file(tmp_path, Lattice.from_lists([[(model.words[0], 0.0)]]))
    extra = [str(random_lms[1].path) if a == "M" else a for a in extra]
    for command in ("decode", "marginals"):
        code, out, err = _cli(capsys, command, "--lm", str(model.path), "--lattice", lat,
                              *extra)
        assert code == 2 and out == ""
        assert len(err.splitlines()) == 1 and fragment in err and "Traceback" not in err


def test_cli_constants_are_the_engine_s():
    from arsdecode.cli.options import MIX_MISSING
    from arsdecode.model.interpolated import MISSING

    assert MIX_MISSING == MISSING


def test_mix_is_refused_for_the_tagger(random_lms, tmp_path, capsys):
    model = random_lms[0]
    (tmp_path / "in.jsonl").write_text('{"id": 1, "tokens": ["a"]}\n')
    code, out, err = _cli(capsys, "batch", "--task", "tag", "--lm", str(model.path),
                          "--mix-lm", str(random_lms[1].path), "--in",
                          str(tmp_path / "in.jsonl"), "--out", str(tmp_path / "o.jsonl"))
    assert code == 2 and len(err.splitlines()) == 1 and "--task decode or sample" in err
