"""The compiled DP's k-best, posteriors and scoring options (issue 23, items 2-4), against
brute-force enumeration.

`fast_full.kbest_flat` and `fast_full.posteriors_flat` record each lattice's layered graph of
merged states in the compiled DP and read the K best paths / the posteriors off it
(`_graph.pxi`, tested alone in test_native_graph.py). Checked here, on random ARPA models with
positive backoffs and on KenLM-trained ones:
  - the K scores equal the brute-force top K (1e-9), each path is real and scored right, the
    paths are distinct, fewer come back only when fewer paths have p > 0; the same in one call
    over many lattices; the rerun passes (a first threshold too high) give the same answer;
  - ln Z and every candidate's posterior equal brute force (1e-9);
  - `NgramScoring` (LM weight, no `<s>`, no `</s>`, SRILM's -lmw, -no-sos, -no-eos): Viterbi,
    k-best and posteriors equal enumeration scored by the model's own scalar walk and by KenLM's
    `score(bos=, eos=)`;
  - the memory budget: a lattice past its pair budget is abandoned (NaN) and auto's k-best and
    marginals fall back to ARS and to sampling.
"""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import arsdecode
import maxarpa
from arpa_fixtures import arpa_texts
from ars_fixtures import make_lattice
from arsdecode.lattice import Lattice
from arsdecode.lattice.flat import FlatLattices
from arsdecode.methods import dispatch, fast_full
from arsdecode.model import NgramScoring
from arsdecode.testing.brute import brute_model

TIGHT = 1e-9
LN10 = math.log(10.0)


def lattices_of(model, seed: int, n: int, **kw) -> list[Lattice]:
    rng = random.Random(seed)
    return [make_lattice(rng, model, **kw) for _ in range(n)]


def enumerate_scores(lattice: Lattice, path_log) -> list[tuple[tuple[int, ...], float]]:
    """Every candidate-index path with ln p = path_log(tokens) + emissions."""
    out = []
    for choice in itertools.product(*(range(w) for w in lattice.widths)):
        emis = sum(float(lattice.log_emissions[i][j]) for i, j in enumerate(choice))
        toks = [lattice.tokens[i][j] for i, j in enumerate(choice)]
        lm = path_log(toks)
        out.append((choice, -math.inf if emis == -math.inf or lm == -math.inf else lm + emis))
    return out


def check_kbest(batch: fast_full.KBestBatch, flat: FlatLattices, s: int,
                scored: list[tuple[tuple[int, ...], float]], k: int) -> None:
    finite = sorted((lp for _, lp in scored if lp > -math.inf), reverse=True)
    got = batch.scores[s][np.isfinite(batch.scores[s])]
    assert len(got) == min(k, len(finite))
    assert np.allclose(got, finite[: len(got)], rtol=0, atol=TIGHT * (1 + abs(finite[0])))
    by_path = dict(scored)
    p0, p1 = flat.sent_off[s], flat.sent_off[s + 1]
    seen = set()
    for r in range(len(got)):
        path = tuple(batch.choice[r, p0:p1].tolist())
        assert abs(by_path[path] - got[r]) <= TIGHT * (1 + abs(got[r]))
        seen.add(path)
    assert len(seen) == len(got)


def model_log(lm, path, *, weight=1.0, bos=True, eos=True) -> float:
    """ln p of `path` from the model's scalar walk on the whole history (maxarpa, log10)."""
    hist = ["<s>"] if bos else []
    total = 0.0
    for w in [*path, *(["</s>"] if eos else [])]:
        total += lm.log10p(w, hist)
        hist.append(w)
    return weight * LN10 * total


@pytest.mark.parametrize("k", [1, 3, 7, 40])
def test_kbest_equals_brute_force(random_lms, k):
    for model in random_lms:
        lats = lattices_of(model, 100 + k, 6, max_len=4, max_width=3)
        flat = FlatLattices.from_lattices(model.lm, lats)
        batch = fast_full.kbest_flat(model.lm, flat, k)
        for s, lat in enumerate(lats):
            scored = [(p, lp) for p, lp in zip(
                itertools.product(*(range(w) for w in lat.widths)),
                brute_model(model.lm, lat).log_p, strict=True)]
            check_kbest(batch, flat, s, scored, k)
            one = fast_full.kbest_flat(model.lm, FlatLattices.from_lattices(model.lm, [lat]), k)
            assert np.array_equal(one.scores[0], batch.scores[s])  # alone = in a batch


def test_kbest_rerun_passes_give_the_same_answer(random_lms, monkeypatch):
    """A first threshold too high (margin 0: only paths tied with the best survive) makes
    the K-th score found, or no pruning, decide a second pass; the answer is unchanged."""
    model = random_lms[5]
    lats = lattices_of(model, 7, 12, max_len=4, max_width=3)
    flat = FlatLattices.from_lattices(model.lm, lats)
    wide = fast_full.kbest_flat(model.lm, flat, 5)
    monkeypatch.setattr(fast_full, "KBEST_FIRST_MARGIN", 0.0)
    tight = fast_full.kbest_flat(model.lm, flat, 5)
    assert tight.passes == 3  # Viterbi, the k-best pass at the best score, the rerun
    assert np.allclose(np.nan_to_num(tight.scores, neginf=-1e300),
                       np.nan_to_num(wide.scores, neginf=-1e300), rtol=0, atol=1e-9)


def test_kbest_on_real_models_equals_kenlm(real_lms):
    for order, model in real_lms.items():
        lats = lattices_of(model, order, 5, max_len=5, max_width=3)
        flat = FlatLattices.from_lattices(model.lm, lats)
        batch = fast_full.kbest_flat(model.lm, flat, 6)
        for s, lat in enumerate(lats):
            ref = sorted(((lp) for lp in _kenlm_scores(model.km, lat) if lp > -math.inf),
                         reverse=True)[:6]
            got = batch.scores[s][np.isfinite(batch.scores[s])]
            assert np.allclose(got, ref, rtol=0, atol=1e-4)  # KenLM stores floats


def _kenlm_scores(km, lattice: Lattice) -> list[float]:
    return [lp for _, lp in enumerate_scores(
        lattice, lambda toks: LN10 * km.score(" ".join(toks), bos=True, eos=True))]


def test_posteriors_equal_brute_force(random_lms):
    for model in random_lms:
        lats = lattices_of(model, 11, 6, max_len=4, max_width=3)
        flat = FlatLattices.from_lattices(model.lm, lats)
        log_z, post = fast_full.posteriors_flat(model.lm, flat)
        for s, lat in enumerate(lats):
            brute = brute_model(model.lm, lat)
            if brute.log_Z == -math.inf:
                assert log_z[s] == -math.inf
                continue
            assert abs(log_z[s] - brute.log_Z) <= TIGHT * (1 + abs(brute.log_Z))
            dist = brute.distribution()
            for i in range(len(lat)):
                p = flat.pos_off[flat.sent_off[s] + i]
                for j, tok in enumerate(lat.tokens[i]):
                    want = sum(q for path, q in dist.items() if path[i] == tok)
                    assert abs(post[p + j] - want) <= 1e-9


SCORINGS = [NgramScoring(0.7, True, True), NgramScoring(1.0, False, True),
            NgramScoring(1.0, True, False), NgramScoring(1.6, False, False)]


@pytest.mark.parametrize("scoring", SCORINGS, ids=str)
def test_scoring_options_equal_enumeration(random_lms, scoring):
    """-lmw, -no-sos, -no-eos in the compiled DP: Viterbi, k-best and posteriors against the
    scalar walk on the whole history."""
    for model in random_lms:
        lats = lattices_of(model, 23, 5, max_len=4, max_width=3)
        flat = FlatLattices.from_lattices(model.lm, lats)
        best = fast_full.run_flat(model.lm, flat, scoring=scoring)
        batch = fast_full.kbest_flat(model.lm, flat, 4, scoring=scoring)
        log_z, post = fast_full.posteriors_flat(model.lm, flat, scoring=scoring)
        for s, lat in enumerate(lats):
            scored = enumerate_scores(lat, lambda toks, lm=model.lm: model_log(
                lm, toks, weight=scoring.lm_weight, bos=scoring.sentence_start,
                eos=scoring.sentence_end))
            finite = [lp for _, lp in scored if lp > -math.inf]
            if not finite:
                assert best.score[s] == -math.inf and log_z[s] == -math.inf
                continue
            top = max(finite)
            assert abs(best.score[s] - top) <= TIGHT * (1 + abs(top))
            check_kbest(batch, flat, s, scored, 4)
            z = top + math.log(sum(math.exp(x - top) for x in finite))
            assert abs(log_z[s] - z) <= TIGHT * (1 + abs(z))
            p0 = flat.pos_off[flat.sent_off[s]]
            want = np.zeros(int(flat.pos_off[flat.sent_off[s + 1]] - p0))
            offs = flat.pos_off[flat.sent_off[s]:flat.sent_off[s + 1]] - p0
            for path, lp in scored:
                if lp > -math.inf:
                    for i, j in enumerate(path):
                        want[offs[i] + j] += math.exp(lp - z)
            assert np.allclose(post[p0:p0 + len(want)], want, rtol=0, atol=1e-9)


def test_scoring_options_equal_kenlm(real_lms):
    """The same options against KenLM's own `score(sentence, bos=, eos=)`."""
    model = real_lms[4]
    lats = lattices_of(model, 5, 6, max_len=5, max_width=3)
    flat = FlatLattices.from_lattices(model.lm, lats)
    for bos, eos in ((False, True), (True, False), (False, False)):
        scoring = NgramScoring(0.5, bos, eos)
        best = fast_full.run_flat(model.lm, flat, scoring=scoring)
        for s, lat in enumerate(lats):
            scored = enumerate_scores(lat, lambda toks, b=bos, e=eos: 0.5 * LN10 * model.km.score(
                " ".join(toks), bos=b, eos=e))
            ref = max(lp for _, lp in scored)
            assert abs(best.score[s] - ref) <= 1e-4


def test_past_the_pair_budget_auto_falls_back(random_lms, monkeypatch):
    model = random_lms[5]
    lat = next(lt for lt in lattices_of(model, 3, 40, max_len=4, max_width=3, neg_inf=0.0)
               if len(lt) >= 3)
    flat = FlatLattices.from_lattices(model.lm, [lat])
    assert np.isnan(fast_full.kbest_flat(model.lm, flat, 3, max_pairs=1).scores[0]).all()
    assert np.isnan(fast_full.posteriors_flat(model.lm, flat, max_pairs=1)[0][0])
    assert arsdecode.decode(model.lm, lat, k=3).method == "full"
    monkeypatch.setattr(dispatch, "memory_pairs_budget", lambda: 1)
    ars = arsdecode.decode(model.lm, lat, k=3)
    assert ars.method == "ars"
    full = arsdecode.decode(model.lm, lat, k=3, method="full")  # explicit: no budget
    assert [p.log_p for p in ars.paths] == pytest.approx([p.log_p for p in full.paths],
                                                          abs=1e-9)
    assert not arsdecode.marginals(model.lm, lat, 10, seed=0).exact


def test_memory_budget_bounds_auto_pair_budgets(monkeypatch):
    sizes = dispatch.LatticeSizes.of_widths([[10_000] * 400])  # a huge lattice
    monkeypatch.delenv(dispatch.MEMORY_BUDGET_ENV, raising=False)
    assert dispatch.memory_budget() == 1 << 30
    default = dispatch.full_pairs_budgets(50_000, sizes)[0]
    monkeypatch.setenv(dispatch.MEMORY_BUDGET_ENV, "256")
    small = dispatch.full_pairs_budgets(50_000, sizes)[0]
    assert small * dispatch.BYTES_PER_PAIR + fast_full.SPARSE_CACHE_BYTES <= 256 << 20
    dispatch.set_memory_budget(4 << 30)
    assert dispatch.full_pairs_budgets(50_000, sizes)[0] > default > small
    with pytest.raises(arsdecode.errors.OptionError, match="at least 64 MiB"):
        dispatch.set_memory_budget(1 << 20)
    monkeypatch.setenv(dispatch.MEMORY_BUDGET_ENV, "lots")
    with pytest.raises(arsdecode.errors.OptionError, match="whole number of MiB"):
        dispatch.memory_budget()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arpa=arpa_texts(min_order=1, max_order=4, max_vocab=4), data=st.data())
def test_property_kbest_and_posteriors_on_random_models(tmp_path_factory, arpa, data):
    """Hypothesis: random ARPA models (positive backoffs, sparse tables), random lattices and
    scorings: the compiled Viterbi, K best and posteriors equal enumeration by the scalar walk."""
    text, _ = arpa
    path = tmp_path_factory.mktemp("ckp") / "m.arpa"
    path.write_text(text)
    lm = maxarpa.load(path)
    words = [w for w in lm.vocab if w not in ("<s>", "</s>")]
    if not words:
        return
    length = data.draw(st.integers(1, 4))
    positions = [[(w, data.draw(st.sampled_from([0.0, -0.5, -2.0, -math.inf])))
                  for w in data.draw(st.lists(st.sampled_from(words), min_size=1, max_size=3,
                                              unique=True))] for _ in range(length)]
    positions = [pos if any(e > -math.inf for _, e in pos) else [(pos[0][0], 0.0), *pos[1:]]
                 for pos in positions]  # a position needs one possible candidate
    lattice = Lattice.from_lists(positions)
    scoring = NgramScoring(data.draw(st.sampled_from([0.5, 1.0, 2.0])), data.draw(st.booleans()),
                           data.draw(st.booleans()))
    k = data.draw(st.integers(1, 12))
    flat = FlatLattices.from_lattices(lm, [lattice])
    scored = enumerate_scores(lattice, lambda toks: model_log(
        lm, toks, weight=scoring.lm_weight, bos=scoring.sentence_start, eos=scoring.sentence_end))
    finite = [lp for _, lp in scored if lp > -math.inf]
    best = fast_full.run_flat(lm, flat, scoring=scoring)
    batch = fast_full.kbest_flat(lm, flat, k, scoring=scoring)
    log_z, post = fast_full.posteriors_flat(lm, flat, scoring=scoring)
    if not finite:
        assert best.score[0] == -math.inf and log_z[0] == -math.inf
        assert not np.isfinite(batch.scores[0]).any()
        return
    top = max(finite)
    assert abs(best.score[0] - top) <= TIGHT * (1 + abs(top))
    check_kbest(batch, flat, 0, scored, k)
    z = top + math.log(sum(math.exp(x - top) for x in finite))
    assert abs(log_z[0] - z) <= TIGHT * (1 + abs(z))
    want = np.zeros(len(flat.cand_ids))
    for choice, lp in scored:
        if lp > -math.inf:
            for i, j in enumerate(choice):
                want[flat.pos_off[i] + j] += math.exp(lp - z)
    assert np.allclose(post, want, rtol=0, atol=1e-9)
