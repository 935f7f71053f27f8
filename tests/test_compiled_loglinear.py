"""A log-linear target on the compiled full DP (issue 34): `fast_loglinear` + `LlCore`.

Why: `LogLinearLM` (n-gram models times alphas plus n-gram feature weights, skips `a * c`
included) now runs on the compiled DP over states made on demand. Exactness is the product,
so every answer is checked against brute force scored without the target's code
(`test_loglinear_lm.reference_score`: scalar log10p walks on the full history plus every
feature matched by hand), on random models with positive backoffs and random features of
both signs with skips (hypothesis), and against ARS:

- the compiled walk and bound equal LogLinearLM.log_prob / log_bound (to 1e-12);
- each state made by the DP's transitions keeps every next factor of its full history;
- Viterbi (pruned and not) = the brute-force best, its path scoring it; ln Z; every
  candidate's posterior; the K best; the word-lattice DP;
- auto runs the compiled DP once set up, with ARS's answers; an LM weight on the target is
  compiled too; a target the core does not take keeps ARS;
- on lmplz models of State of the Union with frequent n-gram and skip features, the best
  path and ln Z against brute force scored by KenLM (float32: 1e-4);
- emptying a worker's states between runs (with its transition table) keeps every answer.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter

import numpy as np
from compiled_brute import check_auto_equals_ars, check_compiled_against_brute, close
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_compiled_mixture import random_lattice
from test_loglinear_lm import feature_total, random_features, reference_score

import maxarpa
from arsdecode import api
from arsdecode.lattice import Lattice
from arsdecode.lattice.flat import FlatLattices
from arsdecode.methods import fast_full, fast_loglinear
from arsdecode.model import context_rows
from arsdecode.model.loglinear import OTHER, LogLinearLM
from arsdecode.model.maxarpa_lm import MaxArpaLM
from arsdecode.testing.brute import _enumerate
from arsdecode.testing.random_arpa import random_arpa_text
from maxarpa.constants import BOS, EOS


@st.composite
def targets(draw):
    """1 or 2 random models with positive backoffs (orders 1-4; the second may name words
    the first lacks, read as its <unk>), alphas, features (spans up to 4, skips, `<s>` and
    `</s>`, weights of both signs) and a seed for the lattices."""
    n = draw(st.integers(1, 2))
    specs = [(draw(st.integers(0, 10**6)), draw(st.integers(1, 4)), draw(st.integers(2, 5)),
              draw(st.booleans())) for _ in range(n)]
    alphas = [draw(st.sampled_from([0.3, 0.5, 1.0, 1.7])) for _ in range(n)]
    return specs, alphas, draw(st.integers(0, 8)), draw(st.integers(0, 10**6))


def build(tmp, specs, alphas, n_features, seed):
    models = []
    for n, (s, order, vocab, rename) in enumerate(specs):
        text = random_arpa_text(random.Random(s), order, vocab, 0.6, density=0.9)
        if rename and n:  # words the first component lacks
            text = re.sub(r"\bw1\b", "v1", text)
        path = tmp / f"m{n}.arpa"
        path.write_text(text)
        models.append(maxarpa.load(path))
    words = [w for w in models[0].vocab if w not in (BOS, EOS, "<unk>")]
    rng = random.Random(seed)
    features = random_features(rng, words, n_features) if n_features else {}
    return models, LogLinearLM(models, alphas, features=features), features, words, rng


def check_core(lm: LogLinearLM, rng: random.Random) -> None:
    """LlCore's walk and bound against LogLinearLM's; every state the transitions make keeps
    the factor of every next word of its full history."""
    core = fast_full.full_dp(lm).ll
    width = lm.order - 1
    ids = [i for i in range(len(lm.vocab)) if i not in (lm.bos, lm.eos)]
    hists = [[lm.bos, *(rng.choice(ids) for _ in range(k))] for k in range(6) for _ in range(8)]
    rows = context_rows(hists, width)
    words = np.array([rng.choice([*ids, lm.eos]) for _ in hists], dtype=np.int64)
    assert np.allclose(core.walk(rows, words, False), lm.log_prob(rows, words),
                       rtol=0, atol=1e-12)
    last = np.full((len(hists), width), -1, dtype=np.int64)
    if width:
        last[:, -1] = [h[-1] for h in hists]
    assert np.allclose(core.walk(last, words, True), lm.log_bound(last, words), rtol=0,
                       atol=1e-12)
    two_off, two_v, two_val, rest = fast_loglinear.skip_tables(lm)
    for y in range(len(lm.vocab)):  # the split recurrence's first step is the recurrence
        vals = [*two_val[two_off[y]:two_off[y + 1]], rest[y], 0.0]
        assert max(vals) == lm.table.extension_max((OTHER,), y)
    every = np.arange(len(lm.vocab), dtype=np.int64)
    for h in hists:
        states = core.states(np.array(h, dtype=np.int64))
        for k, (_, words_kept) in enumerate(states):
            full = context_rows([h[:k + 1]], max(len(h), width, 1))
            cut = context_rows([list(words_kept)], max(len(h), width, 1))
            want = lm.log_prob(np.repeat(full, len(every), axis=0), every)
            got = lm.log_prob(np.repeat(cut, len(every), axis=0), every)
            assert np.array_equal(np.isfinite(want), np.isfinite(got))
            assert np.allclose(want[np.isfinite(want)], got[np.isfinite(got)], rtol=0,
                               atol=1e-12), (h[:k + 1], words_kept)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(targets())
def test_random_loglinear_targets_equal_brute_force(tmp_path_factory, case):
    specs, alphas, n_features, seed = case
    models, lm, features, words, rng = build(tmp_path_factory.mktemp("ll"), specs, alphas,
                                             n_features, seed)
    assert fast_loglinear.compilable(lm)
    check_core(lm, rng)
    lattices = [random_lattice(rng, words) for _ in range(5)]
    check_compiled_against_brute(lm, lattices,
                                 lambda p: reference_score(models, alphas, features, p),
                                 k=3, word_lattice=True)


def test_skip_features_of_several_heads_equal_brute_force(tmp_path):
    """Dense skip-bigrams and skip-trigrams (`a * c`, `a * * d`, `a b * d`) of both signs on
    longer lattices, where the states remember several words no component needs."""
    text = random_arpa_text(random.Random(11), 3, 5, 0.6, density=0.9)
    (tmp_path / "m.arpa").write_text(text)
    model = maxarpa.load(tmp_path / "m.arpa")
    words = [w for w in model.vocab if w not in (BOS, EOS, "<unk>")]
    rng = random.Random(5)
    features = {}
    for a in words:
        for c in [*words, EOS]:
            features[f"{a} * {c}"] = round(rng.uniform(-2.5, 2.5), 3)
        features[f"{a} * * {rng.choice(words)}"] = round(rng.uniform(-2.5, 2.5), 3)
        features[f"{a} {rng.choice(words)} * {rng.choice(words)}"] = 1.5
    features[f"{BOS} * {words[0]}"] = 2.0
    lm = LogLinearLM([model], [0.8], features=features)
    lattices = [random_lattice(rng, words, 6, 3) for _ in range(8)]
    n = check_compiled_against_brute(lm, lattices,
                                     lambda p: reference_score([model], [0.8], features, p),
                                     k=4, word_lattice=True)
    assert n >= 6
    check_core(lm, rng)


def test_a_large_vocabulary_target_equals_brute_force():
    """The embedded 5-gram (a vocabulary past the dense rows' limit) with skip features on
    frequent words: every compiled answer equals brute force, and auto equals ARS."""
    from arsdecode.api import DEFAULT_LM

    lm5 = maxarpa.load(DEFAULT_LM)
    rng = random.Random(8)
    common = ["the", "of", "and", "to", "a", "in", "that", "we", "is", "our", "for", "it"]
    common = [w for w in common if w in lm5.word_to_id]
    features = {}
    for _ in range(60):
        a, b, c = (rng.choice(common) for _ in range(3))
        shape = rng.randrange(3)
        pattern = (f"{a} * {c}", f"{a} {b}", f"{a} {b} {c}")[shape]
        features[pattern] = round(rng.uniform(-2.0, 2.0), 3)
    lm = LogLinearLM([lm5], [1.0], features=features)
    lattices = [random_lattice(rng, common, 5, 4) for _ in range(6)]
    n = check_compiled_against_brute(lm, lattices,
                                     lambda p: reference_score([lm5], [1.0], features, p),
                                     k=3)
    assert n >= 5
    for lat in lattices:
        a = api.decode(lm, lat, method="auto")
        b = api.decode(lm, lat, method="ars")
        assert close(a.log_p, b.log_p) and b.certified


def test_auto_runs_the_compiled_target_and_agrees_with_ars(tmp_path):
    models, lm, features, words, rng = build(tmp_path, [(70, 3, 6, False), (71, 2, 5, True)],
                                             [1.0, 0.5], 8, 3)
    check_auto_equals_ars(lm, [random_lattice(rng, words, 5, 4) for _ in range(20)])


def test_a_target_the_core_does_not_take_keeps_ars(tmp_path):
    """A component with its own walk (here maxarpa's numpy reference) is not compiled: auto
    runs ARS, and its answers are still exact."""
    models, _, features, words, rng = build(tmp_path, [(9, 3, 4, False)], [1.0], 4, 1)
    custom = MaxArpaLM(models[0], walk=models[0])
    lm = LogLinearLM([custom], [1.0], features=features)
    assert not fast_loglinear.compilable(lm) and fast_full.compiled_target(lm) is None
    lat = random_lattice(rng, words, 3, 2)
    r = api.decode(lm, lat, method="auto")
    assert r.method == "ars" and r.certified
    best = max(reference_score(models, [1.0], features, p) + e
               for p, e in _paths(lat))
    assert close(r.log_p, best)


def _paths(lat: Lattice):
    import itertools

    for choice in itertools.product(*(range(w) for w in lat.widths)):
        yield (tuple(lat.tokens[i][j] for i, j in enumerate(choice)),
               sum(float(lat.log_emissions[i][j]) for i, j in enumerate(choice)))


def test_states_emptied_between_runs_keep_every_answer(tmp_path):
    """Past the states' bound a worker empties them and its transition table before a run
    (the table holds their ids): with a bound of one state every run starts afresh, and every
    answer still equals brute force (a stale transition would name another state's words)."""
    from arsdecode.native import _core

    models, lm, features, words, rng = build(tmp_path, [(31, 3, 5, False)], [1.2], 8, 7)
    lattices = [random_lattice(rng, words, 5, 3) for _ in range(6)]
    reference = [check_compiled_against_brute(
        lm, [lat], lambda p: reference_score(models, [1.2], features, p), k=2)
        for lat in lattices]  # warm: the states of every lattice kept
    old = _core.ll_reset_states(1)
    try:
        for _ in range(2):
            for lat in reversed(lattices):
                check_compiled_against_brute(
                    lm, [lat], lambda p: reference_score(models, [1.2], features, p), k=2)
    finally:
        _core.ll_reset_states(old)
    assert sum(reference) >= 4


KENLM_TOL = 1e-4  # KenLM stores its values in float32
KENLM_ALPHA = 0.8


def test_real_models_with_features_against_kenlm(real_lms):
    """lmplz 3-, 4- and 5-gram models of State of the Union with frequent bigram, trigram and
    skip-bigram features of both signs: the compiled best path, its score and ln Z against
    brute force scored by KenLM's `full_scores` (times alpha) plus every feature matched by
    hand, and against ARS."""
    checked = 0
    for order, model in sorted(real_lms.items()):
        rng = random.Random(order)
        counts: Counter[str] = Counter()
        for s in model.sentences:
            toks = [BOS, *s, EOS]
            for i in range(len(toks) - 1):
                counts[f"{toks[i]} {toks[i + 1]}"] += 1
                if i + 2 < len(toks):
                    counts[f"{toks[i]} {toks[i + 1]} {toks[i + 2]}"] += 1
                    counts[f"{toks[i]} * {toks[i + 2]}"] += 1
        features = {p: round(rng.uniform(-1.5, 1.5), 3) for p, _ in counts.most_common(300)}
        lm = LogLinearLM([model.lm], [KENLM_ALPHA], features=features)

        def kenlm_log(path, km=model.km, feats=features):
            lp = sum(s[0] for s in km.full_scores(" ".join(path)))
            return KENLM_ALPHA * lp * math.log(10.0) + feature_total(feats, [BOS, *path, EOS])

        lattices = [random_lattice(rng, model.words[:40], 4, 3) for _ in range(4)]
        flat = FlatLattices.from_lattices(lm, lattices)
        best = fast_full.run_flat(lm, flat)
        z = fast_full.run_flat(lm, flat, viterbi=False)
        for s, lat in enumerate(lattices):
            ref = _enumerate(lat, kenlm_log)
            tol = KENLM_TOL * (1 + abs(ref.best_log_p))
            assert abs(best.score[s] - ref.best_log_p) <= tol
            p0 = int(flat.sent_off[s])
            path = tuple(lat.tokens[i][j]
                         for i, j in enumerate(best.choice[p0:p0 + len(lat)].tolist()))
            assert abs(ref.score(path) - ref.best_log_p) <= tol
            assert abs(z.score[s] - ref.log_Z) <= KENLM_TOL * (1 + abs(ref.log_Z))
            ars = api.decode(lm, lat, method="ars")
            assert close(ars.log_p, best.score[s])
            checked += 1
    assert checked == 12
