"""Training a VPYLM (Mochihashi & Sumita 2007): the paper's blocked Gibbs sampler over the order
and the seating of every token, whose last sample is the model's counts (`VpylmCounts`).

Why apart from `vpylm.py`: that module is the target (the predictive, its bound over left
extensions, exactness and the state cut), which reads counts and never changes them; this one
writes them, with table sizes, proxy customers and hyperparameter resampling that prediction
never needs. The notation (nodes u, c_uw, t_uw, stop/pass counts a_u, b_u) is `vpylm.py`'s.

Discounts d_m and strengths th_m are shared per depth. They start at `DISCOUNTS`, `STRENGTHS`
(near the values Teh (2006) sampled for HPY LMs) and, with `resample=True`, are resampled
after every sweep by Teh's auxiliary-variable sampler (priors d ~ Beta(1, 1), th ~
Gamma(1, 1)); the values used are saved with the counts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from arsdecode.errors import ModelError
from arsdecode.model.vpylm import BOS, EOS, UNK, VpylmCounts

DISCOUNTS = (0.62, 0.69, 0.74, 0.80, 0.83, 0.85, 0.87, 0.88, 0.89, 0.90, 0.90)
STRENGTHS = (0.5, 1.0, 1.5, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0)


class _Node:
    """One context of the tree while sampling: its restaurant (table sizes per word) and its
    stop/pass counts."""

    __slots__ = ("depth", "parent", "word", "children", "tables", "c", "t", "a", "b")

    def __init__(self, depth: int, parent: _Node | None, word: int) -> None:
        self.depth = depth
        self.parent = parent
        self.word = word
        self.children: dict[int, _Node] = {}
        self.tables: dict[int, list[int]] = {}
        self.c = self.t = self.a = self.b = 0


class VpylmSampler:
    """The paper's blocked Gibbs sampler over (order, seating) of every token.

    Why table sizes (not only counts): removing a customer needs the seating to be exact;
    the predictive needs only c_uw and t_uw, which `counts()` exports.
    """

    def __init__(self, vocab: Sequence[str], max_depth: int = 8, alpha: float = 1.0,
                 beta: float = 1.0, seed: int = 0) -> None:
        if max_depth < 1 or max_depth >= len(DISCOUNTS):
            raise ModelError(f"max_depth must be in 1..{len(DISCOUNTS) - 1}, got {max_depth}")
        self.vocab = list(vocab)
        self.index = {w: i for i, w in enumerate(self.vocab)}
        self.max_depth = max_depth
        self.alpha, self.beta = alpha, beta
        self.d = list(DISCOUNTS[: max_depth + 1])
        self.th = list(STRENGTHS[: max_depth + 1])
        self.base = 1.0 / (len(self.vocab) - 1)
        self.root = _Node(0, None, -1)
        self.rng = np.random.default_rng(seed)
        self.sentences: list[list[int]] = []
        self.orders: list[list[int]] = []

    def _path(self, sent: list[int], pos: int, depth: int, create: bool) -> list[_Node]:
        """Nodes u_0..u_m along the context of sent[pos], m <= depth (fewer if not create
        and the tree ends)."""
        node = self.root
        path = [node]
        for m in range(1, depth + 1):
            w = sent[pos - m]
            child = node.children.get(w)
            if child is None:
                if not create:
                    break
                child = _Node(m, node, w)
                node.children[w] = child
            node = child
            path.append(node)
        return path

    def _p_along(self, path: list[_Node], w: int, n: int) -> list[float]:
        """HPY predictive P_m(w) for m = 0..n (beyond the path: the last one repeated)."""
        out = []
        p = self.base
        for m in range(n + 1):
            if m < len(path):
                u = path[m]
                if u.c:
                    tabs = u.tables.get(w)
                    cw, tw = (sum(tabs), len(tabs)) if tabs else (0, 0)
                    d, th = self.d[m], self.th[m]
                    p = (cw - d * tw + (th + d * u.t) * p) / (th + u.c)
            out.append(p)
        return out

    def _q(self, u: _Node | None) -> float:
        if u is None:
            return self.alpha / (self.alpha + self.beta)
        return (u.a + self.alpha) / (u.a + u.b + self.alpha + self.beta)

    def _seat(self, path: list[_Node], m: int, w: int, p: list[float]) -> None:
        u = path[m]
        d, th = self.d[m], self.th[m]
        parent_p = p[m - 1] if m > 0 else self.base
        tabs = u.tables.setdefault(w, [])
        weights = np.array([s - d for s in tabs] + [(th + d * u.t) * parent_p])
        k = int(self.rng.choice(len(weights), p=weights / weights.sum())) if tabs else 0
        u.c += 1
        if k == len(tabs):
            tabs.append(1)
            u.t += 1
            if m > 0:
                self._seat(path, m - 1, w, p)
        else:
            tabs[k] += 1

    def _unseat(self, path: list[_Node], m: int, w: int) -> None:
        u = path[m]
        tabs = u.tables[w]
        sizes = np.array(tabs, dtype=float)
        k = int(self.rng.choice(len(tabs), p=sizes / sizes.sum())) if len(tabs) > 1 else 0
        tabs[k] -= 1
        u.c -= 1
        if tabs[k] == 0:
            tabs.pop(k)
            u.t -= 1
            if not tabs:
                del u.tables[w]
            if m > 0:
                self._unseat(path, m - 1, w)

    def _add(self, s: int, pos: int) -> None:
        sent = self.sentences[s]
        w = sent[pos]
        top = min(self.max_depth, pos)  # nothing precedes <s>
        path = self._path(sent, pos, top, create=False)
        p = self._p_along(path, w, top)
        weights = np.empty(top + 1)
        reach = 1.0
        for m in range(top + 1):
            q = 1.0 if m == top else self._q(path[m] if m < len(path) else None)
            weights[m] = reach * q * p[m]
            reach *= 1.0 - q
        n = int(self.rng.choice(top + 1, p=weights / weights.sum()))
        path = self._path(sent, pos, n, create=True)
        self._seat(path, n, w, p)
        path[n].a += 1
        for u in path[:n]:
            u.b += 1
        self.orders[s][pos] = n

    def _remove(self, s: int, pos: int) -> None:
        sent = self.sentences[s]
        n = self.orders[s][pos]
        path = self._path(sent, pos, n, create=False)
        self._unseat(path, n, sent[pos])
        path[n].a -= 1
        for u in path[:n]:
            u.b -= 1

    def add_corpus(self, sentences: Iterable[Sequence[str]]) -> None:
        """Seat every token once (the initial state), in order."""
        unk = self.index[UNK]
        for words in sentences:
            ids = [self.index[BOS], *(self.index.get(w, unk) for w in words), self.index[EOS]]
            self.sentences.append(ids)
            self.orders.append([-1] * len(ids))
            s = len(self.sentences) - 1
            for pos in range(1, len(ids)):
                self._add(s, pos)

    def sweep(self) -> None:
        """One Gibbs sweep: every token, in a random order, removed and added again."""
        for s in self.rng.permutation(len(self.sentences)):
            for pos in range(1, len(self.sentences[s])):
                self._remove(int(s), pos)
                self._add(int(s), pos)

    def resample_hyperparameters(self) -> None:
        """d_m, th_m per depth from their conditionals given the seating (Teh 2006, app. C):
        per restaurant x ~ Beta(th + 1, c - 1) and y_i ~ Bernoulli(th / (th + d i)),
        i < t; per table of size s, z_j ~ Bernoulli((j - 1) / (j - d)), j < s; then
        d ~ Beta(1 + sum(1 - y), 1 + sum(1 - z)), th ~ Gamma(1 + sum y, rate 1 - sum ln x).
        A depth with no restaurant of two customers keeps its values."""
        by_depth: dict[int, list[_Node]] = {}
        for u in self.nodes():
            if u.c >= 2:
                by_depth.setdefault(u.depth, []).append(u)
        rng = self.rng
        for m, nodes in by_depth.items():
            d, th = self.d[m], self.th[m]
            c = np.array([u.c for u in nodes], dtype=float)
            t = np.array([u.t for u in nodes], dtype=np.int64)
            log_x = np.log(rng.beta(th + 1.0, c - 1.0))
            i = np.concatenate([np.arange(1, k) for k in t]) if (t > 1).any() else np.zeros(0)
            y = rng.random(len(i)) < th / (th + d * i)
            sizes = np.array([s for u in nodes for tabs in u.tables.values() for s in tabs])
            j = np.concatenate([np.arange(1, s) for s in sizes if s > 1] or [np.zeros(0)])
            z = rng.random(len(j)) < (j - 1) / (j - d)
            self.d[m] = float(rng.beta(1.0 + (~y).sum(), 1.0 + (~z).sum()))
            self.th[m] = float(rng.gamma(1.0 + y.sum(), 1.0 / (1.0 - log_x.sum())))

    def nodes(self) -> list[_Node]:
        """Every node some customer reached, parents before children (a node emptied by the
        sampler predicts as if absent, so it is dropped: is_exact sees the real leaves)."""
        out, stack = [], [self.root]
        while stack:
            u = stack.pop()
            out.append(u)
            stack.extend(c for c in u.children.values() if c.a + c.b)
        return out

    def counts(self) -> VpylmCounts:
        """The trained model's sufficient statistics for prediction."""
        nodes = self.nodes()
        ids = {id(u): i for i, u in enumerate(nodes)}
        parent = np.array([ids[id(u.parent)] if u.parent else -1 for u in nodes], np.int64)
        word = np.array([u.word for u in nodes], np.int64)
        stop = np.array([[u.a, u.b] for u in nodes], np.int64).reshape(-1, 2)
        rows = [(i, w, sum(t), len(t)) for i, u in enumerate(nodes) for w, t in u.tables.items()]
        rest = np.array(rows, np.int64).reshape(-1, 4)
        return VpylmCounts(self.vocab, self.max_depth, self.alpha, self.beta, list(self.d),
                           list(self.th), parent, word, stop, rest)


def train_vpylm(sentences: Sequence[Sequence[str]], max_depth: int = 8, sweeps: int = 2,
                seed: int = 0, alpha: float = 1.0, beta: float = 1.0,
                resample: bool = True,
                on_pass: Callable[[], object] | None = None) -> VpylmCounts:
    """Seat the corpus, run `sweeps` Gibbs sweeps (each followed by resampling d and th when
    `resample`), return the counts (the last sample). `on_pass` is called after the seating
    and after each sweep (a progress bar's update)."""
    vocab = [BOS, EOS, UNK, *sorted({w for s in sentences for w in s} - {BOS, EOS, UNK})]
    sampler = VpylmSampler(vocab, max_depth, alpha, beta, seed)
    sampler.add_corpus(sentences)
    if on_pass is not None:
        on_pass()
    for _ in range(sweeps):
        sampler.sweep()
        if resample:
            sampler.resample_hyperparameters()
        if on_pass is not None:
            on_pass()
    return sampler.counts()
