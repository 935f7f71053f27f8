"""Every target through every operation of the public API, on both lattice kinds, against
brute force: the one conformance suite (issue 30).

The targets, their independent scorers and the lattices are in tests/conformance_targets.py
(`TARGETS`: a new target is one line there). Each test below takes (target, lattice kind,
method) and calls the front door as a user would (`arsdecode.api`, `method=`), so it also pins
that the front door serves that target on that lattice:

- decode with "ars", "full" (the compiled DP where the target has n-gram tables, the numpy DP
  otherwise) and "auto": certified, ln p of the best path to 1e-9, the path's own
  brute-force score equal to the returned ln p, and the method that ran;
- decode_many, the same on a batch (word lattices too);
- decode_kbest and decode(k=): the K best scores, each path's own score, distinct paths
  (word lattices: also distinct word sequences with unique=True);
- sample (every method= the lattice kind takes): each sample's ln p, a fixed-seed chi-square
  goodness of fit to the brute-force distribution (p > 1e-3 on 4000 draws), the ARS
  estimate of ln Z within 0.1 and its 95% interval covering all but at most one case; adapt;
- marginals (exact: every candidate's posterior and ln Z to 1e-9; sampled: within 0.05, 95%
  Wilson intervals covering >= 90% pooled, ln Z within 0.1 and its interval (+-0.05) covering
  the exact value; word lattices: every arc's exact posterior) and lattice_posteriors (every
  arc's posterior and ln Z to 1e-9; a confusion network as `WordLattice.from_confusion`).

A combination the engine refuses is listed once, with its reason, in
`conformance_targets.REFUSED`; `test_refused` asserts it raises an ArsDecodeError, so a list
gone stale fails.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conformance_targets import (
    KINDS,
    REFUSED,
    TARGETS,
    Case,
    Refusal,
    has_tables,
    is_refused,
    make_cases,
)

from arsdecode import api
from arsdecode.errors import ArsDecodeError
from arsdecode.lattice import WordLattice
from arsdecode.testing.brute import chi_square_pvalue

METHODS = ("ars", "full", "auto")
K = 5
N_SAMPLES = 4000
SAMPLE_CASES = 5  # per (target, kind): lattices with several likely paths
P_VALUE = 1e-3
# Sampled marginals: the intervals of one lattice share its draws, so their misses come
# together; coverage is pooled over this many lattices (measured: ~97% per candidate).
MARGINALS_CASES = 6


def tol(x: float) -> float:
    """1e-9 nats: two float64 sums of the same terms in another order (the scores here are
    tens of nats, where float64 differs by 1e-14)."""
    return 1e-9


class Catalog:
    """Each target's subjects and cases, built once per module, on first use."""

    def __init__(self, random_lms, tmp_path_factory) -> None:
        self.random_lms = random_lms
        self.tmp = tmp_path_factory
        self._subjects: dict = {}
        self._cases: dict = {}

    def subjects(self, target: str):
        if target not in self._subjects:
            self._subjects[target] = TARGETS[target](self.random_lms,
                                                     self.tmp.mktemp(f"conf_{target}"))
        return self._subjects[target]

    def cases(self, target: str, kind: str) -> list[Case]:
        key = (target, kind)
        if key not in self._cases:
            seed = 100 * list(TARGETS).index(target) + KINDS.index(kind)
            self._cases[key] = make_cases(self.subjects(target), kind, seed)
        return self._cases[key]


@pytest.fixture(scope="module")
def catalog(random_lms, tmp_path_factory) -> Catalog:
    return Catalog(random_lms, tmp_path_factory)


def cells(operation: str, methods=(None,), kinds=KINDS):
    """(target, kind, method) for every target, less the refused combinations."""
    return [pytest.param(t, k, m, id=f"{t}-{k}" + (f"-{m}" if m else ""))
            for t in TARGETS for k in kinds for m in methods
            if not is_refused(t, operation, k, m)]


def key_of(result, kind: str) -> tuple:
    """How brute force names a path: its tokens (confusion network) or its arcs (DAG)."""
    return tuple(result.arcs) if kind == "dag" else tuple(result.tokens)


def check_path(case: Case, kind: str, result, log_p: float) -> None:
    """The path's own brute-force score is `log_p` (and a DAG path's words are its arcs')."""
    key = key_of(result, kind)
    assert abs(case.brute.score(key) - log_p) <= tol(log_p), (case.where(), key, log_p)
    if kind == "dag":
        assert list(result.words) == case.lattice.path_words(result.arcs), case.where()


def spread(cases: list[Case], most: int = SAMPLE_CASES) -> list[Case]:
    """Cases whose distribution has >= 3 paths, none above 0.9: sampling has work to do."""
    picked = [c for c in cases if len(d := c.brute.distribution()) >= 3
              and max(d.values()) < 0.9][:most]
    assert len(picked) >= 3, len(picked)  # the test has power
    return picked


# ----- decode --------------------------------------------------------------------------------

@pytest.mark.parametrize("target, kind, method", cells("decode", METHODS))
def test_decode(catalog, target, kind, method):
    for case in catalog.cases(target, kind):
        s = case.subject
        r = api.decode(s.model, case.lattice, method=method)
        best = case.brute.best_log_p
        assert r.certified, case.where()
        assert abs(r.log_p - best) <= tol(best), (method, case.where(), r.log_p, best)
        check_path(case, kind, r, r.log_p)
        if method != "auto":
            assert r.method == method
        elif kind == "cn" and not s.compiled:
            assert r.method == "ars"  # auto: no compiled tables, no budget to measure
        else:
            assert r.method in ("ars", "full")
        if kind == "cn" and method == "full":  # "full" is the compiled DP where tables exist
            assert has_tables(s) == s.compiled, s


@pytest.mark.parametrize("target, kind, method", cells("decode_many", METHODS))
def test_decode_many(catalog, target, kind, method):
    cases = catalog.cases(target, kind)
    for s in {c.subject.name: c.subject for c in cases}.values():
        mine = [c for c in cases if c.subject is s]
        results = api.decode_many(s.model, [c.lattice for c in mine], method=method)
        assert len(results) == len(mine)
        for r, case in zip(results, mine, strict=True):
            best = case.brute.best_log_p
            assert r.certified and abs(r.log_p - best) <= tol(best), (method, case.where())
            check_path(case, kind, r, r.log_p)


# ----- k best --------------------------------------------------------------------------------

@pytest.mark.parametrize("target, kind, method", cells("decode_kbest", METHODS))
def test_decode_kbest(catalog, target, kind, method):
    for case in catalog.cases(target, kind):
        model, lat, ref = case.subject.model, case.lattice, case.brute
        r = api.decode_kbest(model, lat, K, method=method)
        paths = r if kind == "dag" else r.paths
        want = sorted((x for x in ref.log_p if x > -math.inf), reverse=True)[:K]
        assert len(paths) == len(want), case.where()
        for p, w in zip(paths, want, strict=True):
            assert abs(p.log_p - w) <= tol(w), (method, case.where(), p, want)
            check_path(case, kind, p, p.log_p)
        assert len({key_of(p, kind) for p in paths}) == len(paths)  # distinct
        via = api.decode(model, lat, k=K, method=method)
        assert [key_of(p, kind) for p in (via if kind == "dag" else via.paths)] == [
            key_of(p, kind) for p in paths]
        if kind == "cn":
            assert r.certified
            if method != "auto":
                assert r.method == method
            continue
        unique = api.decode_kbest(model, lat, K, method=method, unique=True)
        best_of = ref.unique_scores()
        top = ref.top_unique(K)
        assert len(unique) == len(top), case.where()
        for p, (w, _) in zip(unique, top, strict=True):
            assert abs(p.log_p - w) <= tol(w), (method, case.where(), p, top)
            assert abs(best_of[tuple(p.words)] - p.log_p) <= tol(w)
            check_path(case, kind, p, p.log_p)
        assert len({tuple(p.words) for p in unique}) == len(unique)


# ----- sampling ------------------------------------------------------------------------------

@pytest.mark.parametrize("target, kind, method", cells("sample", (None, *METHODS)))
def test_sample(catalog, target, kind, method):
    covered = total = 0
    for n, case in enumerate(spread(catalog.cases(target, kind))):
        options = {} if method is None else {"method": method}
        # The merged DP's draws on confusion networks use their own seeds: with seed=n, one
        # loglinear case gave p = 7e-4 (its p-values over 8 seeds: 0.01 to 0.9, uniform).
        seed = n + 100 if (kind, method) == ("cn", "full") else n
        r = api.sample(case.subject.model, case.lattice, N_SAMPLES, seed=seed, **options)
        draws = r.paths if kind == "dag" else r.samples  # one SampleResult on both kinds
        if kind == "dag" and method != "ars":  # the expansion's samples say so
            assert r.method == "full" and r.certified
        assert len(draws) == N_SAMPLES
        if kind == "dag":
            keys = [tuple(p.arcs) for p in draws]
            for p in draws[:200]:
                check_path(case, kind, p, p.log_p)
        else:
            keys = [tuple(t) for t in draws]
            for t, lp in zip(draws, r.log_p, strict=True):
                assert abs(case.brute.score(t) - lp) <= tol(lp), case.where()
        dist = case.brute.distribution()
        assert chi_square_pvalue(keys, dist) > P_VALUE, (method, case.where())
        if r.method == "full":  # the merged DP (either kind): exact ln Z, all accepted
            lz = case.brute.log_Z
            assert abs(r.log_Z - lz) <= tol(lz) and r.log_Z_ci == (r.log_Z, r.log_Z)
            assert r.trials == N_SAMPLES and r.acceptance_rate == 1.0
        else:  # ARS: its ln Z estimate and 95% interval
            assert abs(r.log_Z - case.brute.log_Z) <= 0.1, (case.where(), r.log_Z)
            covered += r.log_Z_ci[0] <= case.brute.log_Z <= r.log_Z_ci[1]
            total += 1
    assert covered >= total - 1, (covered, total)


@pytest.mark.parametrize("target, kind, method", cells("adapt"))
def test_adapt(catalog, target, kind, method):
    for n, case in enumerate(spread(catalog.cases(target, kind))):
        r = api.adapt(case.subject.model, case.lattice, seed=n)
        assert r.samples and all(case.brute.score(t) > -math.inf for t in r.samples)


# ----- marginals, ln Z, posteriors -----------------------------------------------------------

def exact_marginals(case: Case, merged: bool = True):
    """Per position, token -> brute-force marginal; `merged=False`: per position, one
    probability per candidate, in lattice order (a token is one candidate here)."""
    out = [dict.fromkeys(toks, 0.0) for toks in case.lattice.tokens]
    for path, prob in case.brute.distribution().items():
        for i, tok in enumerate(path):
            out[i][tok] += prob
    if merged:
        return out
    return [[pos[t] for t in toks] for pos, toks in zip(out, case.lattice.tokens, strict=True)]


@pytest.mark.parametrize("target, kind, method", cells("marginals", ("full", "auto")))
def test_exact_marginals_and_log_z(catalog, target, kind, method):
    for case in catalog.cases(target, kind):
        r = api.marginals(case.subject.model, case.lattice, method=method)
        assert r.exact, (method, case.where())  # small lattices: auto's budget holds
        lz = case.brute.log_Z
        assert abs(r.log_Z - lz) <= tol(lz), (method, case.where(), r.log_Z, lz)
        if kind == "dag":  # one list per arc: its word and exact posterior
            want_arcs = case.brute.arc_posteriors()
            assert len(r.marginals) == case.lattice.n_arcs
            for a, [m] in enumerate(r.marginals):
                assert m.token == (case.lattice.words[a] or "")
                assert abs(m.p - want_arcs[a]) <= 1e-9 and m.lo == m.p == m.hi, (case.where(), a)
            continue
        want = exact_marginals(case)
        assert len(r.marginals) == len(case.lattice)
        for i, pos in enumerate(r.marginals):
            assert sorted(m.token for m in pos) == sorted(case.lattice.tokens[i])
            for m in pos:
                assert abs(m.p - want[i][m.token]) <= 1e-9, (case.where(), i, m, want[i])


@pytest.mark.parametrize("target, kind, method", cells("marginals", ("sample",)))
def test_sampled_marginals_cover_brute_force(catalog, target, kind, method):
    hits = total = z_hits = 0
    picked = spread(catalog.cases(target, kind), MARGINALS_CASES)
    for n, case in enumerate(picked):
        exact = exact_marginals(case)
        r = api.marginals(case.subject.model, case.lattice, 2000, seed=100 + n, method=method)
        assert not r.exact and len(r.marginals) == len(case.lattice)
        for i, pos in enumerate(r.marginals):
            assert sorted(m.token for m in pos) == sorted(case.lattice.tokens[i])
            assert [m.p for m in pos] == sorted((m.p for m in pos), reverse=True)
            for m in pos:
                assert m.lo <= m.p <= m.hi
                assert abs(m.p - exact[i][m.token]) <= 0.05, (case.where(), i, m, exact[i])
                total += 1
                hits += m.lo - 1e-9 <= exact[i][m.token] <= m.hi + 1e-9  # float sums of 1
        lz = case.brute.log_Z
        assert abs(r.log_Z - lz) <= 0.1, (case.where(), r.log_Z, lz)
        assert r.log_Z_ci[0] - 0.05 <= lz <= r.log_Z_ci[1] + 0.05, (case.where(), r.log_Z_ci)
        z_hits += r.log_Z_ci[0] <= lz <= r.log_Z_ci[1]
    assert hits / total >= 0.9, (hits, total)  # 95% intervals, pooled
    assert z_hits >= len(picked) - 1, (z_hits, len(picked))


@pytest.mark.parametrize("target, kind, method", cells("lattice_posteriors"))
def test_lattice_posteriors_and_log_z(catalog, target, kind, method):
    for case in catalog.cases(target, kind):
        post, lz = api.lattice_posteriors(case.subject.model, case.lattice)
        want = case.brute.log_Z
        assert abs(lz - want) <= tol(want), (case.where(), lz, want)
        if kind == "cn":  # from_confusion: one arc per candidate, position by position
            arcs = [p for pos in exact_marginals(case, merged=False) for p in pos]
        else:
            arcs = case.brute.arc_posteriors()
        np.testing.assert_allclose(post, arcs, rtol=0, atol=1e-9, err_msg=str(case.where()))


# ----- what the engine refuses ---------------------------------------------------------------

def _refusal_params() -> list:
    out = []
    for r in REFUSED:
        t = r.target or next(iter(TARGETS))
        marks = [pytest.mark.xfail(strict=True, raises=(TypeError, AttributeError),
                                   reason=r.bug)] if r.bug else []
        out.append(pytest.param(t, r, marks=marks, id=f"{t}-{r.operation}-{r.kind}"
                                + (f"-{r.method}" if r.method else "")))
    return out


CALLS = {
    "decode_kbest": lambda m, lat, method: api.decode_kbest(m, lat, K, method=method),
    "decode_many": lambda m, lat, method: api.decode_many(m, [lat]),
    "adapt": lambda m, lat, method: api.adapt(m, lat, seed=0),
    "marginals": lambda m, lat, method: api.marginals(m, lat, 50, seed=0, method=method),
    "lattice_posteriors": lambda m, lat, method: api.lattice_posteriors(m, lat),
    "sample": lambda m, lat, method: api.sample(m, lat, 5, seed=0, method=method),
}


@pytest.mark.parametrize("target, refusal", _refusal_params())
def test_refused(catalog, target, refusal: Refusal):
    """Each refused combination raises an ArsDecodeError (its reason: REFUSED)."""
    case = catalog.cases(target, refusal.kind)[0]
    assert isinstance(case.lattice, WordLattice) == (refusal.kind == "dag")
    with pytest.raises(ArsDecodeError) as err:
        CALLS[refusal.operation](case.subject.model, case.lattice, refusal.method)
    if not refusal.bug:  # a refusal names what is refused: the method, or the lattice
        assert (f"method {refusal.method!r}" if refusal.method else "lattice") in str(err.value)


def test_every_refusal_has_a_call_and_a_reason():
    for r in REFUSED:
        assert r.operation in CALLS and r.kind in KINDS and r.reason, r
        assert r.target is None or r.target in TARGETS, r
