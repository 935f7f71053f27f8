"""A variable-order Pitman-Yor LM (VPYLM, Mochihashi & Sumita 2007) as a `TargetModel`.

Why here: the engine needs, per (context, word), ln p(w | h) and an upper bound over every
left extension of h. A VPYLM is not a backoff n-gram: its predictive mixes the hierarchical
Pitman-Yor (HPY) predictives of every depth of the context tree, weighted by the stop/pass
probabilities of the nodes along the context. This module keeps the trained counts
(`VpylmCounts`, saved as one .npz) and answers the engine's queries (`VpylmLM`); the paper's
Gibbs sampler that trains them is `vpylm_train` (`train_vpylm`), a job of its own.

Model. The context tree's node u at depth m is a context of m words (most recent first), with
a Chinese restaurant: per word w, c_uw customers at t_uw tables (c_u, t_u their sums), and a
stop count a_u / pass count b_u (customers that stopped at u / went deeper). Each token draws
its order n by walking down from the root, stopping at node u_i with q_i ~ Beta(alpha, beta)
(forced at depth `max_depth` and at the sentence start: nothing precedes `<s>`), then sits in
u_n's restaurant (a new table sends a proxy customer to the parent, as in the HPY LM).

Predictive (the paper's eq. 9, with q_i at its posterior mean). Along the context h, let
u_0 (root) .. u_D be the nodes that exist (D <= len(h); nodes deeper than D do not exist, have
no customers, so their HPY predictive equals P_D's, and the stop mass beyond D collapses):

    P_{-1}(w) = 1 / (V - 1)                      (uniform base over every word but <s>)
    P_m(w)    = (c_mw - d_m t_mw) / (th_m + c_m) + (th_m + d_m t_m) / (th_m + c_m) P_{m-1}(w)
                (P_m = P_{m-1} when c_m = 0)
    q_m       = (a_m + alpha) / (a_m + b_m + alpha + beta)
    R_m       = prod_{i<m} (1 - q_i),   pi_m = q_m R_m
    p(w | h)  = sum_{m<D} pi_m P_m(w) + R_D P_D(w)

Bound over left extensions (derived like maxarpa's max-backoff). Left-extending h walks the
same nodes u_0..u_k (k = len h) and then either into a child of u_k (recursively) or onto a
word with no node, where the walk ends. With S_k = sum_{m<k} pi_m P_m(w) fixed,
p(w | z h) = S_k + R_k F(w), F the tail of the mixture from u_k on. Every node v has one
context, so P_v(w) is a number per (node, word); the max of the tail over extensions is

    M_v(w) = P_v(w)                                               if v has no child
    M_v(w) = max(P_v(w), q_v P_v(w) + (1 - q_v) max_{child c} M_c(w))   otherwise

(the first term: an extension word with no node, e.g. `<unk>` or `</s>`, which never occur
inside a training context, so it is always available). For a word w that occurs in no
restaurant strictly below v, every descendant has P_c(w) = beta_c P_parent(w) <= P_v(w), hence
M_v(w) = P_v(w); M is therefore stored sparsely, on the words seen below v. Then

    log_bound(h, w) = ln p(w | h)                if D < k   (every extension gives p(w | h))
                    = ln(S_k + R_k M_{u_k}(w))   if D = k

which is the exact max over all left extensions (tests/test_vpylm.py checks it by brute force).

Exactness and cuts: a context whose walk ends before its length (D < k), or ends at a node
with no child, fixes p for every extension; is_exact asks a little more (no node context
continues it to the left, so later layers need nothing it dropped; its docstring). The state
cut (minimal_context) keeps the longest suffix that begins some node's context.

Discounts d_m and strengths th_m are shared per depth; the trainer (`vpylm_train`) chooses them
and saves the values used with the counts.
Natural log throughout.
"""

from __future__ import annotations

import json
import math
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from arsdecode.errors import ModelError

BOS, EOS, UNK = "<s>", "</s>", "<unk>"
MEMO_LIMIT = 4_000_000  # memo entries kept before they are dropped (bounded memory in batch runs)


# ----- the trained model ----------------------------------------------------------------
@dataclass
class VpylmCounts:
    """What prediction needs: per node its parent, context word and (a, b); per (node, word)
    restaurant entry (node, word, c_uw, t_uw). Parents precede children."""

    vocab: list[str]
    max_depth: int
    alpha: float
    beta: float
    discounts: list[float]
    strengths: list[float]
    parent: np.ndarray
    word: np.ndarray
    stop: np.ndarray
    restaurants: np.ndarray

    def save(self, path: str | Path | BinaryIO) -> None:
        """Write one .npz (numpy adds ".npz" to a path without it; a file object is written
        as is, which is how the CLI writes to a temporary name before renaming)."""
        meta = {"vocab": self.vocab, "max_depth": self.max_depth, "alpha": self.alpha,
                "beta": self.beta, "discounts": self.discounts, "strengths": self.strengths,
                "format": "vpylm-1"}
        np.savez_compressed(path, meta=np.array(json.dumps(meta)), parent=self.parent,
                            word=self.word, stop=self.stop, restaurants=self.restaurants)

    @classmethod
    def load(cls, path: str | Path) -> VpylmCounts:
        """The counts saved by `save`. Anything else is one ModelError naming the file: an
        ARPA or other non-zip file, an .npz of other arrays (a maxarpa binary model), and a
        truncated or corrupt archive (which numpy reports as BadZipFile, EOFError or a zlib
        error)."""
        other = (f"{path}: not a VPYLM model (a .npz written by `arsdecode train-vpylm`); an "
                 "ARPA, MAX-ARPA or maxarpa binary n-gram model is read by `load_lm` / --lm")
        try:
            with open(path, "rb") as fh:
                if fh.read(4) != b"PK\x03\x04":  # not a zip archive at all
                    raise ModelError(other)
            with np.load(path, allow_pickle=False) as z:
                if "meta" not in z.files:
                    raise ModelError(other)
                meta = json.loads(str(z["meta"]))
                if not isinstance(meta, dict) or meta.get("format") != "vpylm-1":
                    raise ModelError(other)
                return cls(meta["vocab"], int(meta["max_depth"]), float(meta["alpha"]),
                           float(meta["beta"]), [float(x) for x in meta["discounts"]],
                           [float(x) for x in meta["strengths"]], z["parent"], z["word"],
                           z["stop"], z["restaurants"])
        except ModelError:  # raised above with its own message (a ValueError too: not below)
            raise
        except OSError as exc:
            raise ModelError(f"{path}: cannot read a VPYLM model ({exc.strerror or exc})"
                             ) from None
        except (zipfile.BadZipFile, EOFError, zlib.error) as exc:
            raise ModelError(f"{path}: cannot read a VPYLM model: truncated or corrupt "
                             f"archive ({exc})") from None
        except (KeyError, ValueError, TypeError, AttributeError, IndexError) as exc:
            raise ModelError(f"{path}: not a VPYLM model (its arrays or metadata are not a "
                             f"VPYLM's: {exc})") from None


class VpylmLM:
    """`TargetModel` over trained VPYLM counts (see the module docstring for the formulas).

    Queries run row by row in Python with memos per (node, word) and per context, which is
    enough for lattices of a few hundred candidates per position (docs/results-vpylm.md).
    """

    def __init__(self, counts: VpylmCounts) -> None:
        self.counts = counts
        self.vocab = counts.vocab
        self._index = {w: i for i, w in enumerate(self.vocab)}
        self.bos, self.eos, self.unk = self._index[BOS], self._index[EOS], self._index[UNK]
        self.max_depth = counts.max_depth
        self.order = counts.max_depth + 1
        n = len(counts.parent)
        self.children: list[dict[int, int]] = [{} for _ in range(n)]
        self.depth = np.zeros(n, np.int64)
        for v in range(1, n):
            p = int(counts.parent[v])
            self.children[p][int(counts.word[v])] = v
            self.depth[v] = self.depth[p] + 1
        self.rest: list[dict[int, tuple[int, int]]] = [{} for _ in range(n)]
        c = np.zeros(n, np.int64)
        t = np.zeros(n, np.int64)
        for v, w, cw, tw in counts.restaurants.tolist():
            self.rest[v][w] = (cw, tw)
            c[v] += cw
            t[v] += tw
        self.c, self.t = c.tolist(), t.tolist()
        a, b = counts.stop[:, 0], counts.stop[:, 1]
        self.q = ((a + counts.alpha) / (a + b + counts.alpha + counts.beta)).tolist()
        self.base = 1.0 / (len(self.vocab) - 1)
        self._p: dict[tuple[int, int], float] = {}
        self._path_memo: dict[tuple[int, ...], list[int]] = {}
        self._m: list[dict[int, float] | None] | None = None
        self._prefix_set: set[tuple[int, ...]] | None = None
        self._continued_set: set[tuple[int, ...]] | None = None

    # -- TargetModel: vocabulary -------------------------------------------------------------
    @property
    def word_to_id(self) -> dict[str, int]:
        """Word -> id, as a maxarpa Model names it (the compiled DP's word-lattice runner
        reads it, `fast_full.run_dag`)."""
        return self._index

    @property
    def unk_id(self) -> int:
        return self.unk

    def ids(self, tokens: Sequence[str]) -> np.ndarray:
        get = self._index.get
        return np.array([get(t, self.unk) for t in tokens], dtype=np.int64)

    def word(self, word_id: int) -> str:
        return self.vocab[word_id]

    # -- the HPY predictive per node ------------------------------------------------------------
    def node_p(self, v: int, w: int) -> float:
        """P_v(w): the HPY predictive at node v (0 for <s>, never predicted)."""
        if w == self.bos:
            return 0.0
        key = (v, w)
        got = self._p.get(key)
        if got is not None:
            return got
        parent = int(self.counts.parent[v])
        lower = self.base if parent < 0 else self.node_p(parent, w)
        cv = self.c[v]
        if cv == 0:
            p = lower
        else:
            m = self.depth[v]
            d, th = self.counts.discounts[m], self.counts.strengths[m]
            cw, tw = self.rest[v].get(w, (0, 0))
            p = (cw - d * tw + (th + d * self.t[v]) * lower) / (th + cv)
        self._p[key] = p
        return p

    def path(self, context: Sequence[int]) -> list[int]:
        """Nodes u_0..u_D along a context (oldest word first, no padding)."""
        key = tuple(context)
        got = self._path_memo.get(key)
        if got is not None:
            return got
        v, out = 0, [0]
        for w in reversed(key[-self.max_depth:] if key else key):
            nxt = self.children[v].get(w)
            if nxt is None:
                break
            v = nxt
            out.append(v)
        self._path_memo[key] = out
        return out

    def _prefix(self, path: list[int], w: int) -> tuple[float, float]:
        """(S_D, R_D): the stopped mass before the path's last node, and the reach of it."""
        s, reach = 0.0, 1.0
        for v in path[:-1]:
            s += reach * self.q[v] * self.node_p(v, w)
            reach *= 1.0 - self.q[v]
        return s, reach

    def prob(self, context: Sequence[int], w: int) -> float:
        """p(w | context), the mixture over orders."""
        path = self.path(context)
        s, reach = self._prefix(path, w)
        return s + reach * self.node_p(path[-1], w)

    def bound(self, context: Sequence[int], w: int) -> float:
        """max over left extensions z of p(w | z + context) (module docstring)."""
        path = self.path(context)
        k = min(len(context), self.max_depth)
        s, reach = self._prefix(path, w)
        v = path[-1]
        if len(path) - 1 < k:
            return s + reach * self.node_p(v, w)
        m = self.tail_max()[v]
        tail = m.get(w) if m is not None else None
        return s + reach * (tail if tail is not None else self.node_p(v, w))

    @property
    def tail_max_built(self) -> bool:
        """Whether `tail_max` has run (what is left of the compiled DP's setup is then
        cheaper, `fast_vpylm.setup_ngrams`)."""
        return self._m is not None

    def tail_max(self) -> list[dict[int, float] | None]:
        """M_v(w) for every node v and every word w seen strictly below v (children last, so
        reversed order sees children first); built on the first call."""
        if self._m is not None:
            return self._m
        n = len(self.children)
        m: list[dict[int, float] | None] = [None] * n
        for v in range(n - 1, -1, -1):
            if not self.children[v]:
                continue
            best: dict[int, float] = {}
            for c in self.children[v].values():
                mc = m[c]
                words = set(self.rest[c]) | (set(mc) if mc else set())
                for w in words:
                    val = mc.get(w) if mc else None
                    if val is None:
                        val = self.node_p(c, w)
                    if val > best.get(w, -1.0):
                        best[w] = val
            q = self.q[v]
            m[v] = {w: max(self.node_p(v, w), q * self.node_p(v, w) + (1 - q) * x)
                    for w, x in best.items()}
        self._m = m
        return m

    # -- TargetModel: batched queries ---------------------------------------------------------
    @staticmethod
    def _unpad(row: np.ndarray) -> list[int]:
        return [int(x) for x in row if x >= 0]

    def _trim_memos(self) -> None:
        if len(self._p) > MEMO_LIMIT:
            self._p.clear()
        if len(self._path_memo) > MEMO_LIMIT:
            self._path_memo.clear()

    def log_prob(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        self._trim_memos()
        out = np.empty(len(words))
        for r, (row, w) in enumerate(zip(contexts, words, strict=True)):
            p = self.prob(self._unpad(row), int(w))
            out[r] = math.log(p) if p > 0 else -math.inf
        return out

    def log_bound(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        self._trim_memos()
        out = np.empty(len(words))
        for r, (row, w) in enumerate(zip(contexts, words, strict=True)):
            p = self.bound(self._unpad(row), int(w))
            out[r] = math.log(p) if p > 0 else -math.inf
        return out

    def is_exact(self, position: int, context: Sequence[int]) -> bool:
        """True when the context has max_depth words, is the whole history, or no node's
        context continues it to the left: no node context begins with (v,) + context.

        Why stronger than "p(. | z + c) is the same for every z" (which it implies: a node
        with context c would have a child v + c): the automaton never extends an exact state,
        and a later layer's state is grown from this one, so an exact state must hold every
        word a later context can use. With (v,) + c beginning no node context, every left
        extension z + c has the same state cut as c (minimal_context), so nothing is lost.
        """
        n = len(context)
        if n >= self.max_depth or (n == position + 1 and n > 0 and context[0] == self.bos):
            return True
        return tuple(int(x) for x in context) not in self._continued()

    def _node_contexts(self) -> list[tuple[int, ...]]:
        contexts: list[tuple[int, ...]] = [()]
        for v in range(1, len(self.children)):
            p = int(self.counts.parent[v])
            contexts.append((int(self.counts.word[v]), *contexts[p]))
        return contexts

    def _prefixes(self) -> set[tuple[int, ...]]:
        """Every prefix (oldest word first) of every node's context; built on the first call."""
        if self._prefix_set is None:
            self._prefix_set = {ctx[:m] for ctx in self._node_contexts()
                                for m in range(len(ctx) + 1)}
        return self._prefix_set

    def _continued(self) -> set[tuple[int, ...]]:
        """Every c such that some node context begins with (v,) + c (c may be empty)."""
        if self._continued_set is None:
            self._continued_set = {ctx[1:m] for ctx in self._node_contexts()
                                   for m in range(1, len(ctx) + 1)}
        return self._continued_set

    def minimal_context(self, contexts: np.ndarray) -> np.ndarray:
        """Each row cut to its longest suffix that begins some node's context (oldest word
        first). Why not to the D words of its walk: the state must keep what a later word can
        still use (context `a a` then `b` may reach node `a a b` though node `a a` is absent).
        The cut keeps at least D words (node u_D's context begins itself), so p is unchanged,
        and cut(c + w) = cut(cut(c) + w): a suffix s + w of c + w beginning a node context
        means s begins one too, so s is a suffix of cut(c)."""
        prefixes = self._prefixes()
        out = np.full_like(contexts, -1)
        for r, row in enumerate(contexts):
            ctx = self._unpad(row)[-self.max_depth:]
            keep = next(m for m in range(len(ctx), -1, -1) if tuple(ctx[len(ctx) - m:])
                        in prefixes)
            if keep:
                out[r, -keep:] = row[-keep:]
        return out


def load_vpylm(path: str | Path) -> VpylmLM:
    """A saved model (`VpylmCounts.save`) as a target."""
    return VpylmLM(VpylmCounts.load(path))
