"""Forward-backward and K-best over a recorded layered graph (native/_graph.pxi, _kbest.pxi).

The reference is brute force: every path of a small random graph enumerated from the start
state, its score summed left to right as the kernels do (so scores agree bit for bit and ties
are real ties), ln Z by a max-shifted log-sum-exp, posteriors by summing over paths, the K best
by sorting (score descending, then the candidate sequence: the documented tie rule). Larger
graphs, with too many paths to enumerate, are checked against an eager per-layer K-best in
plain Python (a different algorithm: every state keeps its k best prefixes).
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arsdecode.errors import LatticeError, OptionError
from arsdecode.native import _core

NEG_INF = -math.inf


def random_graph(rng: np.random.Generator, dyadic: bool, max_len: int = 6, max_width: int = 5,
                 max_states: int = 6, density: float | None = None) -> dict:
    """A random deterministic layered graph in the kernels' format. `dyadic` weights are
    multiples of 1/2 (sums are exact, so many paths tie); otherwise continuous, some around
    -800 to test the log-sum-exp's shift. Some finals are -inf; states without an outgoing
    edge (dead ends) and without an incoming one (unreachable) happen by chance."""
    L = int(rng.integers(1, max_len + 1))
    widths = rng.integers(1, max_width + 1, size=L)
    sizes = np.concatenate([[1], rng.integers(1, max_states + 1, size=L)])
    layer_off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    pos_off = np.concatenate([[0], np.cumsum(widths)]).astype(np.int64)
    p = float(rng.uniform(0.5, 1.0)) if density is None else density
    src, dst, cand, w, edge_off = [], [], [], [], [0]
    for j in range(L):
        layer = []
        for s in range(layer_off[j], layer_off[j + 1]):
            for c in range(widths[j]):
                if rng.random() < p:
                    d = int(rng.integers(layer_off[j + 1], layer_off[j + 2]))
                    if dyadic:
                        wt = float(rng.integers(-6, 1)) / 2
                    else:
                        wt = float(rng.normal(0.0, 2.0)) - (800.0 if rng.random() < 0.3 else 0.0)
                    layer.append((s, d, c, wt))
        for i in rng.permutation(len(layer)):  # no particular order within a layer
            s, d, c, wt = layer[i]
            src.append(s)
            dst.append(d)
            cand.append(c)
            w.append(wt)
        edge_off.append(len(src))
    n_final = int(sizes[-1])
    final_w = np.where(rng.random(n_final) < 0.25, NEG_INF,
                       rng.integers(-3, 1, size=n_final) / 2 if dyadic
                       else rng.normal(0.0, 1.0, size=n_final))
    return dict(layer_off=layer_off, edge_off=np.array(edge_off, dtype=np.int64),
                src=np.array(src, dtype=np.int32), dst=np.array(dst, dtype=np.int32),
                cand=np.array(cand, dtype=np.int32), w=np.array(w, dtype=np.float64),
                final_w=np.asarray(final_w, dtype=np.float64), pos_off=pos_off)


def brute_paths(g: dict) -> list[tuple[float, tuple[int, ...]]]:
    """Every path with a finite score: (score, candidate sequence), enumerated recursively."""
    L = len(g["edge_off"]) - 1
    first_final = int(g["layer_off"][L])
    out = defaultdict(list)
    for e in range(len(g["src"])):
        out[int(g["src"][e])].append(e)
    paths = []

    def walk(v: int, j: int, score: float, seq: tuple[int, ...]) -> None:
        if j == L:
            f = float(g["final_w"][v - first_final])
            if f > NEG_INF:
                paths.append((score + f, seq))
            return
        for e in out[v]:
            walk(int(g["dst"][e]), j + 1, score + float(g["w"][e]), seq + (int(g["cand"][e]),))

    walk(0, 0, 0.0, ())
    return paths


def brute_posteriors(g: dict, paths) -> tuple[float, np.ndarray]:
    post = np.zeros(int(g["pos_off"][-1]))
    if not paths:
        return NEG_INF, post
    top = max(s for s, _ in paths)
    ln_z = top + math.log(math.fsum(math.exp(s - top) for s, _ in paths))
    for s, seq in paths:
        for j, c in enumerate(seq):
            post[g["pos_off"][j] + c] += math.exp(s - ln_z)
    return ln_z, post


def ranked(paths) -> list[tuple[float, tuple[int, ...]]]:
    """Best first; equal scores by candidate sequence (the documented tie rule)."""
    return sorted(paths, key=lambda p: (-p[0], p[1]))


def kbest_list(g: dict, k: int) -> list[tuple[float, tuple[int, ...]]]:
    scores, choices = _core.layered_kbest(**g, k=k)
    L = len(g["edge_off"]) - 1
    assert scores.dtype == np.float64 and choices.dtype == np.int32
    assert choices.shape == (len(scores), L)
    return [(float(s), tuple(int(c) for c in row)) for s, row in zip(scores, choices, strict=True)]


def check_graph(g: dict, ks=(1, 2, 3, 7, 100)) -> None:
    paths = brute_paths(g)
    ln_z, post = _core.layered_posteriors(**g)
    want_z, want_post = brute_posteriors(g, paths)
    if paths:
        assert ln_z == pytest.approx(want_z, rel=1e-9)
        np.testing.assert_allclose(post, want_post, rtol=1e-9, atol=1e-300)
        for j in range(len(g["edge_off"]) - 1):  # each position's posteriors sum to 1
            assert post[g["pos_off"][j]:g["pos_off"][j + 1]].sum() == pytest.approx(1.0, rel=1e-12)
    else:
        assert ln_z == NEG_INF and not post.any()
    score_of = dict((seq, s) for s, seq in paths)
    want = ranked(paths)
    for k in sorted({*ks, len(paths), len(paths) + 5} - {0}):
        got = kbest_list(g, k)
        assert len(got) == min(k, len(paths))
        assert len({seq for _, seq in got}) == len(got)  # distinct sequences
        for s, seq in got:  # each one a real path, with its own score
            assert score_of[seq] == s
        assert got == want[:k]  # exact scores, exact tie order


@settings(max_examples=400, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), dyadic=st.booleans())
def test_random_graphs_against_brute_force(seed, dyadic):
    check_graph(random_graph(np.random.default_rng(seed), dyadic))


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_dense_ties_against_brute_force(seed):
    """Dense graphs with few distinct weights: most paths tie with several others."""
    check_graph(random_graph(np.random.default_rng(seed), True, max_len=5, max_width=3,
                             max_states=3, density=1.0), ks=(1, 2, 4, 9, 30))


def eager_kbest(g: dict, k: int) -> list[tuple[float, tuple[int, ...]]]:
    """Per layer, every state's k best prefixes (score, sequence), from all its in-edges."""
    L = len(g["edge_off"]) - 1
    lists: dict[int, list[tuple[float, tuple[int, ...]]]] = {0: [(0.0, ())]}
    for j in range(L):
        grown = defaultdict(list)
        for e in range(g["edge_off"][j], g["edge_off"][j + 1]):
            for s, seq in lists.get(int(g["src"][e]), []):
                grown[int(g["dst"][e])].append((s + float(g["w"][e]), seq + (int(g["cand"][e]),)))
        lists = {v: ranked(items)[:k] for v, items in grown.items()}
    first_final = int(g["layer_off"][L])
    ends = [(s + float(g["final_w"][v - first_final]), seq) for v, items in lists.items()
            for s, seq in items if g["final_w"][v - first_final] > NEG_INF]
    return ranked(ends)[:k]


@pytest.mark.parametrize("seed", range(12))
def test_long_graphs_against_eager_kbest(seed):
    """Graphs with far too many paths to enumerate (up to 6**40): the lazy K-best equals an
    eager one, and the posteriors still sum to 1 at every position."""
    rng = np.random.default_rng(1000 + seed)
    g = random_graph(rng, dyadic=seed % 2 == 0, max_len=40, max_width=6, max_states=8,
                     density=0.6)
    for k in (1, 5, 40):
        assert kbest_list(g, k) == eager_kbest(g, k)
    ln_z, post = _core.layered_posteriors(**g)
    if ln_z > NEG_INF:
        for j in range(len(g["edge_off"]) - 1):
            assert post[g["pos_off"][j]:g["pos_off"][j + 1]].sum() == pytest.approx(1.0, rel=1e-12)


def chain(weights, final=0.0, width=2, chosen=1) -> dict:
    """One path: one state per layer, candidate `chosen` of `width` at every position."""
    L = len(weights)
    return dict(layer_off=np.arange(L + 2), edge_off=np.arange(L + 1),
                src=np.arange(L, dtype=np.int32), dst=np.arange(1, L + 1, dtype=np.int32),
                cand=np.full(L, chosen, dtype=np.int32), w=np.array(weights, dtype=float),
                final_w=np.array([final]), pos_off=np.arange(0, width * (L + 1), width))


def test_single_path():
    g = chain([-1000.0, -2.5, -1000.25], final=-0.5)
    ln_z, post = _core.layered_posteriors(**g)
    assert ln_z == -2003.25
    assert post.tolist() == [0.0, 1.0] * 3
    scores, choices = _core.layered_kbest(**g, k=5)
    assert scores.tolist() == [-2003.25] and choices.tolist() == [[1, 1, 1]]


def test_one_position():
    g = dict(layer_off=[0, 1, 3], edge_off=[0, 3], src=[0, 0, 0], dst=[2, 1, 2], cand=[2, 0, 1],
             w=[-1.0, -2.0, -1.0], final_w=[0.0, -0.5], pos_off=[0, 4])
    ln_z, post = _core.layered_posteriors(**g)
    assert ln_z == pytest.approx(math.log(2 * math.exp(-1.5) + math.exp(-2.0)), rel=1e-12)
    want = np.array([math.exp(-2.0), math.exp(-1.5), math.exp(-1.5), 0.0]) / math.exp(ln_z)
    np.testing.assert_allclose(post, want, rtol=1e-12)
    scores, choices = _core.layered_kbest(**g, k=10)
    assert scores.tolist() == [-1.5, -1.5, -2.0]
    assert choices.tolist() == [[1], [2], [0]]  # the tie in candidate order


@pytest.mark.parametrize("case", ["all finals -inf", "dead end", "empty layer", "no edges"])
def test_no_path(case):
    g = chain([-1.0, -2.0, -3.0])
    if case == "all finals -inf":
        g["final_w"] = np.array([NEG_INF])
    elif case == "dead end":
        g["edge_off"] = np.array([0, 1, 1, 2])
        g["src"], g["dst"] = g["src"][[0, 2]], g["dst"][[0, 2]]
        g["cand"], g["w"] = g["cand"][[0, 2]], g["w"][[0, 2]]
    elif case == "empty layer":  # layer 2 has no state: nothing reaches layer 3
        g = dict(g, layer_off=np.array([0, 1, 2, 2, 3]), edge_off=np.array([0, 1, 1, 1]),
                 src=g["src"][:1], dst=g["dst"][:1], cand=g["cand"][:1], w=g["w"][:1])
    else:
        g = dict(g, edge_off=np.zeros(4, dtype=np.int64), src=[], dst=[], cand=[], w=[])
    ln_z, post = _core.layered_posteriors(**g)
    assert ln_z == NEG_INF and post.shape == (6,) and not post.any()
    scores, choices = _core.layered_kbest(**g, k=3)
    assert scores.shape == (0,) and choices.shape == (0, 3)


@pytest.mark.parametrize("L", [50, 20000])
def test_stable_with_very_negative_scores(L):
    """Two parallel edges per position at about -1000 each: ln Z near -1000 L. The kernel
    shifts every layer, so the posteriors keep the accuracy of one layer however large |ln Z|
    (a plain forward-backward would lose about L ulps of |ln Z|: 1e-4 at L = 20000), and a
    long sentence needs no recursion."""
    src = np.repeat(np.arange(L), 2).astype(np.int32)
    g = dict(layer_off=np.arange(L + 2), edge_off=np.arange(0, 2 * L + 1, 2), src=src,
             dst=src + 1, cand=np.tile([0, 1], L).astype(np.int32),
             w=np.tile([-1000.0, -1000.0 - math.log(3)], L), final_w=np.array([0.0]),
             pos_off=np.arange(0, 2 * L + 1, 2))
    ln_z, post = _core.layered_posteriors(**g)
    assert ln_z == pytest.approx(L * (-1000.0 + math.log(4 / 3)), rel=1e-12)
    np.testing.assert_allclose(post, np.tile([0.75, 0.25], L), rtol=1e-12)  # w is rounded
    scores, choices = _core.layered_kbest(**g, k=3)
    assert choices[0].tolist() == [0] * L and (choices[1:].sum(axis=1) == 1).all()
    for s, row in zip(scores, choices, strict=True):  # real paths, scores added left to right
        assert s == sum_left_to_right(g["w"][2 * np.arange(L) + row])
    assert scores[0] > scores[1] >= scores[2]
    if L == 50:  # short enough for exact ties: lexicographic, the 1 as late as possible first
        assert choices.tolist() == [[0] * L, [0] * (L - 1) + [1], [0] * (L - 2) + [1, 0]]


def sum_left_to_right(values) -> float:
    total = 0.0
    for v in values:
        total += float(v)
    return total


def bad(g: dict, **changes) -> dict:
    return dict(g, **changes)


GOOD = dict(layer_off=[0, 1, 3, 4], edge_off=[0, 2, 4], src=[0, 0, 1, 2], dst=[1, 2, 3, 3],
            cand=[0, 1, 0, 0], w=[-1.0, -2.0, -0.5, -0.25], final_w=[0.0], pos_off=[0, 2, 3])


@pytest.mark.parametrize("changes, message", [
    (dict(layer_off=[0, 1, 3]), "layer_off of 4"),
    (dict(layer_off=[0, 2, 3, 4]), "start state alone"),
    (dict(layer_off=[0, 1, 3, 2], final_w=[]), "layer_off decreases"),
    (dict(edge_off=[1, 2, 4]), "start at 0"),
    (dict(edge_off=[0, 3, 2]), "edge_off decreases"),
    (dict(edge_off=[0, 2, 5]), "edge_off ends at 5"),
    (dict(pos_off=[0, 2]), "pos_off of 3"),
    (dict(pos_off=[0, 3, 2]), "pos_off decreases"),
    (dict(src=[0, 1, 1, 2]), "edge 1 (position 0): src outside its layer"),
    (dict(dst=[1, 3, 3, 3]), "edge 1 (position 0): dst outside the next layer"),
    (dict(dst=[1, 2, 3, 2]), "edge 3 (position 1): dst outside"),
    (dict(cand=[0, 2, 0, 0]), "edge 1 (position 0): cand outside its position's width"),
    (dict(cand=[0, 1, 0, -1]), "edge 3 (position 1): cand outside"),
    (dict(cand=[1, 1, 0, 0], dst=[1, 1, 3, 3]), "edge 1 repeats"),
    (dict(w=[-1.0, float("nan"), -0.5, -0.25]), "edge 1 (position 0): weight w not finite"),
    (dict(w=[-1.0, -2.0, -math.inf, -0.25]), "edge 2 (position 1): weight w not finite"),
    (dict(final_w=[math.inf]), "final_w[0] is inf"),
    (dict(final_w=[float("nan")]), "final_w[0] is nan"),
    (dict(final_w=[0.0, 0.0]), "final_w has 2 entries"),
    (dict(src=[0.0, 0.0, 1.0, 2.0]), "src must be int32"),
    (dict(w=["a", "b", "c", "d"]), "w must be float64"),
    (dict(src=[[0, 0, 1, 2]]), "one-dimensional"),
    (dict(edge_off=[0]), "at least one position"),
    (dict(dst=[1, 2, 3, 2**40]), "outside int32"),
])
def test_bad_inputs(changes, message):
    for call in (_core.layered_posteriors, lambda **g: _core.layered_kbest(**g, k=2)):
        with pytest.raises(LatticeError, match="layered graph: .*" + message.replace("(", r"\(")
                           .replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")):
            call(**bad(GOOD, **changes))


def test_good_input_and_bad_k():
    check_graph({key: np.asarray(v) for key, v in GOOD.items()})
    for k in (0, -1):
        with pytest.raises(OptionError, match="k must be at least 1"):
            _core.layered_kbest(**GOOD, k=k)
