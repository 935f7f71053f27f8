"""One check of a compiled full DP against brute force, shared by the targets that run on it
(the mixture, `test_compiled_mixture`; the VPYLM, `test_compiled_vpylm`).

Why one: each compiled target must give every answer of the DP -- pruned and unpruned Viterbi
(the score and the path), ln Z, per-candidate posteriors, the K best, and, when asked, the word
lattice DP on the same lattice -- equal to brute-force enumeration under its own reference
scoring; written once per target, the two copies had started to drift.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from arsdecode import api
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.lattice.flat import FlatLattices
from arsdecode.methods import fast_full
from arsdecode.testing.brute import _enumerate


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * (1 + abs(b))


def check_compiled_against_brute(target: object, lattices: list[Lattice],
                                 reference_log: Callable[[tuple[str, ...]], float], *,
                                 k: int = 3, word_lattice: bool = False) -> int:
    """Every compiled answer for `target` on `lattices` against brute force under
    `reference_log` (ln p of a path, from an independent scorer); returns the cases checked
    (lattices with a path of nonzero probability)."""
    assert fast_full.compiled_target(target) is target and fast_full.has_dp(target)
    flat = FlatLattices.from_lattices(target, lattices)
    pruned = fast_full.run_flat(target, flat)
    whole = fast_full.run_flat(target, flat, prune=False)
    z = fast_full.run_flat(target, flat, viterbi=False)
    log_z, post = fast_full.posteriors_flat(target, flat)
    kb = fast_full.kbest_flat(target, flat, k)
    checked = 0
    for s, lat in enumerate(lattices):
        ref = _enumerate(lat, reference_log)
        best, lz = ref.best_log_p, ref.log_Z
        if best == -math.inf:
            assert pruned.score[s] == -math.inf and z.score[s] == -math.inf
            continue
        assert close(pruned.score[s], best) and close(whole.score[s], best), (s, best)
        p0 = int(flat.sent_off[s])
        choice = pruned.choice[p0:p0 + len(lat)].tolist()
        path = tuple(lat.tokens[i][j] for i, j in enumerate(choice))
        assert close(ref.score(path), best)  # the returned path scores the best
        assert close(z.score[s], lz) and close(log_z[s], lz)
        dist = ref.distribution()
        for i in range(len(lat)):
            for j, tok in enumerate(lat.tokens[i]):
                want = sum(q for pth, q in dist.items() if pth[i] == tok)
                assert abs(post[int(flat.pos_off[p0 + i]) + j] - want) <= 1e-9
        top = sorted((x for x in ref.log_p if x > -math.inf), reverse=True)[:k]
        got_k = [x for x in kb.scores[s] if x > -math.inf]
        assert len(got_k) == len(top)
        assert all(close(a, b) for a, b in zip(got_k, top, strict=True))
        if word_lattice:
            (dag,) = fast_full.run_dag(target, [WordLattice.from_confusion(lat)])
            assert close(dag.log_p, best)
        checked += 1
    return checked


def check_auto_equals_ars(target: object, lattices: list[Lattice]) -> None:
    """`auto` on a target whose compiled DP is built runs it on every lattice, with ARS's
    answers; under an LM weight (`api.weighted`) the compiled target is the same one and its
    "full" equals ARS too (the VPYLM's and the log-linear target's tests)."""
    fast_full.has_dp(target)  # built: auto's setup is then free
    auto = api.decode_many(target, lattices, method="auto")
    assert {r.method for r in auto} == {"full"}
    for r, lat in zip(auto, lattices, strict=True):
        ars = api.decode(target, lat, method="ars")
        assert r.certified and ars.certified and close(r.log_p, ars.log_p)
    weighted = api.weighted(target, lm_weight=0.5)
    assert fast_full.compiled_target(weighted) is target
    for lat in lattices[:6]:
        a = api.decode(weighted, lat, method="full")
        b = api.decode(weighted, lat, method="ars")
        assert a.method == "full" and close(a.log_p, b.log_p)
