"""The one semiring sweep and the one sampler over (node, state) blocks (`core.dag_dp`, issue 30).

- `backward` with `MaxPlus` and `LogSumExp` on random block DAGs, in the dense layout (the
  q-automaton's) and the sparse one (the expansion's), against enumeration of every path;
- `best_path`: the best score, stop first on a tie, then the smallest column;
- `sample`: chi-square against the exact path probabilities (fixed seeds), in both layouts,
  and each draw's score equals its path's score summed in path order;
- every word-lattice sweep and sampler goes through `dag_dp` (none hand-written beside it).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import chisquare

import arsdecode.core.dag_dp as dag_dp
from arsdecode.core.semiring import LogSumExp, MaxPlus, logsumexp

REPO = Path(__file__).resolve().parents[1]


class Dense:
    """A random DAG of blocks: node u has sizes[u] states and widths[u] columns; every state
    has an edge on every column (ln weight possibly -inf) to a state of a later node."""

    dense = True

    def __init__(self, rng: np.random.Generator, sizes: list[int], widths: list[int]) -> None:
        self.offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
        n = len(sizes)
        self.stop, self.weight, self.dst = [], [], []
        for u in range(n):
            k, m = sizes[u], widths[u] if u < n - 1 else 0
            stop = np.round(rng.normal(size=k) * 3)  # integers: sums are exact
            stop[rng.random(k) < 0.3] = -np.inf
            w = np.round(rng.normal(size=(k, m)) * 3)  # ties happen
            w[rng.random((k, m)) < 0.2] = -np.inf
            lo = int(self.offsets[u + 1]) if u < n - 1 else 0
            d = rng.integers(lo, max(lo, int(self.offsets[-1])), size=(k, m)) if m else \
                np.zeros((k, 0), np.int64)
            self.stop.append(stop)
            self.weight.append(w)
            self.dst.append(d.astype(np.int64))

    def block(self, u: int, rows: np.ndarray | int | None = None) -> dag_dp.Block:
        sel = slice(None) if rows is None else rows
        return dag_dp.Block(self.stop[u][sel], self.weight[u][sel], self.dst[u][sel])

    def paths(self) -> dict[tuple[tuple[int, int], ...], float]:
        """Every path from state 0 with a score > -inf: ((state, column)...) -> score."""
        out: dict[tuple[tuple[int, int], ...], float] = {}

        def walk(s: int, prefix: tuple[tuple[int, int], ...], score: float) -> None:
            u = int(np.searchsorted(self.offsets, s, side="right") - 1)
            r = s - int(self.offsets[u])
            if self.stop[u][r] > -np.inf:
                out[prefix] = score + float(self.stop[u][r])
            for c in range(self.weight[u].shape[1]):
                if self.weight[u][r, c] > -np.inf:
                    walk(int(self.dst[u][r, c]), (*prefix, (s, c)),
                         score + float(self.weight[u][r, c]))

        walk(0, (), 0.0)
        return out


class Sparse:
    """The same graph with its -inf edges dropped (the expansion's layout): a path's column
    is then the edge's rank among its state's live edges."""

    dense = False

    def __init__(self, dense: Dense) -> None:
        self.of = dense
        self.offsets = dense.offsets

    def block(self, u: int, rows: np.ndarray | int | None = None) -> dag_dp.Block:
        d = self.of
        if isinstance(rows, int):
            live = np.flatnonzero(d.weight[u][rows] > -np.inf)
            return dag_dp.Block(d.stop[u][rows], d.weight[u][rows, live], d.dst[u][rows, live])
        rows = np.arange(len(d.stop[u])) if rows is None else rows
        w, t, starts = [], [], []
        for r in rows.tolist():
            live = np.flatnonzero(d.weight[u][r] > -np.inf)
            starts.append(sum(len(x) for x in w))
            w.append(d.weight[u][r, live])
            t.append(d.dst[u][r, live])
        return dag_dp.Block(d.stop[u][rows], np.concatenate(w) if w else np.zeros(0),
                            np.concatenate(t).astype(np.int64) if t else np.zeros(0, np.int64),
                            np.array(starts, dtype=np.int64))

    def dense_column(self, s: int, c: int) -> int:
        u = int(np.searchsorted(self.offsets, s, side="right") - 1)
        return int(np.flatnonzero(self.of.weight[u][s - int(self.offsets[u])] > -np.inf)[c])


def graphs(seed: int) -> Dense:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 5))
    return Dense(rng, [1, *rng.integers(1, 4, size=n - 1).tolist()],
                 rng.integers(1, 4, size=n).tolist())


@pytest.mark.parametrize("seed", range(25))
def test_backward_and_best_path_against_enumeration(seed):
    dense = graphs(seed)
    paths = dense.paths()
    for graph in (dense, Sparse(dense)):
        best = dag_dp.backward(graph, MaxPlus)
        total = dag_dp.backward(graph, LogSumExp)
        if not paths:
            assert best[0] == -np.inf and total[0] == -np.inf
            continue
        top = max(paths.values())
        assert best[0] == top  # max is exact
        assert abs(total[0] - logsumexp(np.array(list(paths.values())))) <= 1e-12
        path = dag_dp.best_path(graph, best)
        key = tuple(zip(path.states, path.columns, strict=True))
        if graph is not dense:
            key = tuple((s, graph.dense_column(s, c)) for s, c in key)
        assert path.score == paths[key] == top
        # ties: stop first (the shortest), then the smallest column
        assert key == min((k for k, v in paths.items() if v == top),
                          key=lambda k: [c + 1 for _, c in k] + [0])


def test_best_path_stops_on_a_tie_and_takes_the_smallest_column():
    g = Dense(np.random.default_rng(0), [1, 1], [2, 0])
    g.stop = [np.array([1.0]), np.array([0.0])]
    g.weight = [np.array([[1.0, 1.0]]), np.zeros((1, 0))]
    g.dst = [np.array([[1, 1]]), np.zeros((1, 0), np.int64)]
    path = dag_dp.best_path(g, dag_dp.backward(g, MaxPlus))
    assert path.columns == [] and path.final == 0  # stop (1.0) ties the arcs (1.0 + 0.0)
    g.stop = [np.array([-np.inf]), np.array([0.0])]
    path = dag_dp.best_path(g, dag_dp.backward(g, MaxPlus))
    assert path.columns == [0] and path.final == 1 and path.final_node == 1


@pytest.mark.parametrize("seed", [3, 7, 11])
@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_sample_follows_the_distribution(seed, layout):
    dense = graphs(seed)
    paths = dense.paths()
    while len(paths) < 3:
        seed += 100
        dense = graphs(seed)
        paths = dense.paths()
    graph = dense if layout == "dense" else Sparse(dense)
    beta = dag_dp.backward(graph, LogSumExp)
    n = 20_000
    drawn = dag_dp.sample(graph, beta, n, np.random.default_rng(seed))
    states = drawn.paths(n, lambda s, c: s)
    cols = drawn.paths(n, lambda s, c: c)
    counts = dict.fromkeys(paths, 0)
    for i, (ss, cc) in enumerate(zip(states, cols, strict=True)):
        if layout == "sparse":
            cc = [graph.dense_column(s, c) for s, c in zip(ss, cc, strict=True)]
        key = tuple(zip(ss, cc, strict=True))
        counts[key] += 1  # KeyError: an impossible path
        if i < 200:  # the score is the path's, summed in path order
            assert drawn.score[i] == paths[key]
    keys = list(paths)
    probs = np.exp(np.array([paths[k] for k in keys]) - beta[0])
    obs = np.array([counts[k] for k in keys])
    assert chisquare(obs, probs * n / probs.sum()).pvalue > 0.001


def test_every_word_lattice_sweep_and_sampler_is_the_one_in_dag_dp():
    """No max or log-sum-exp sweep and no sampler written beside `dag_dp`: the Gumbel draw
    of dag_ars (now `ars_paths`), the hand-written logaddexp / maximum.at sweeps of dag_full
    and dag_posteriors (now `expansion_dp`, `expansion_posteriors`) are gone, and each of them
    calls the one sweep."""
    for name in ("ars_paths", "expansion_dp", "expansion_posteriors"):
        text = (REPO / "arsdecode" / "methods" / f"{name}.py").read_text()
        for written in ("gumbel", "logaddexp", "maximum.at", "draw_in_segments("):
            assert written not in text, f"{name}.py: {written}"
        assert "dag_dp.backward(" in text, name
    dp_text = (REPO / "arsdecode" / "core" / "dp.py").read_text()
    assert "draw_in_segments(logits" not in dp_text and "sample(graph" in dp_text


def test_no_path_gives_minus_infinity_not_nan():
    g = Dense(np.random.default_rng(1), [1, 2], [2, 0])
    g.stop = [np.array([-np.inf]), np.array([-np.inf, -np.inf])]
    for semiring in (MaxPlus, LogSumExp):
        values = dag_dp.backward(g, semiring)
        assert not np.isnan(values).any() and values[0] == -math.inf


def reference_layered_sampler(weights, targets, values, k, rng):
    """An independent layered forward sampler (199a3de's `dp.sample_forward`): per layer, the
    distinct states' rows laid flat, one inverse-CDF draw per walker over a cumulative sum
    of the selected rows, one uniform per walker per layer, none at the final layer."""
    out = np.empty((k, len(weights)), dtype=np.int64)
    states = np.zeros(k, dtype=np.int64)
    for i in range(len(weights)):
        uniq, inverse = np.unique(states, return_inverse=True)
        w = weights[i].shape[1]
        rows_t = targets[i][uniq]
        with np.errstate(all="ignore"):
            logits = (weights[i][uniq] + values[i + 1][rows_t]).ravel()
            u = rng.random(k)
            top = np.maximum.reduceat(logits, np.arange(len(uniq)) * w)
            safe = np.where(np.isfinite(top), top, 0.0)
            p = np.exp(logits - np.repeat(safe, w))
        cum = np.cumsum(p)
        offs = np.arange(len(uniq)) * w
        base = cum[offs] - p[offs]
        seg_total = cum[offs + w - 1] - base
        last = np.maximum.reduceat(np.where(p > 0, np.arange(len(p)), -1), offs)
        pick = np.searchsorted(cum, base[inverse] + u * seg_total[inverse], side="right")
        pick = np.clip(pick, offs[inverse], last[inverse])
        out[:, i] = pick % w
        states = rows_t[inverse, pick % w]
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_one_sampler_on_layers_draws_the_layered_samplers_paths_bit_for_bit(seed):
    """On a confusion network's layers (`Layered`) the one sampler consumes the random stream
    as a layered sampler does and draws the same paths, so a seed gives the same ARS run on
    either implementation (the trial counts of the benches stay comparable), and the draw
    after sampling (the next uniform) is the same too."""
    from arsdecode.core import dp

    rng = np.random.default_rng(seed)
    sizes, widths = [1, 3, 4, 2], [4, 5, 3]
    weights = [rng.normal(size=(sizes[i], widths[i])) * 2 for i in range(3)]
    targets = [rng.integers(0, sizes[i + 1], size=(sizes[i], widths[i])) for i in range(3)]
    weights[1][weights[1] < -1.5] = -np.inf  # zero-probability edges are never drawn
    final = rng.normal(size=sizes[3])
    beta = dp.backward(weights, targets, final, LogSumExp)
    a, b = np.random.default_rng(100 + seed), np.random.default_rng(100 + seed)
    ours = dp.sample_forward(weights, targets, beta, 500, a)
    ref = reference_layered_sampler(weights, targets, beta, 500, b)
    assert ours.tolist() == ref.tolist()
    assert a.random() == b.random()
    paths, log_z = dp.sample_layers(weights, targets, final, 500, np.random.default_rng(100 + seed))
    assert paths.tolist() == ref.tolist() and log_z == beta[0][0]
