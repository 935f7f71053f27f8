"""The in-memory model: backoff probabilities and max-backoff bounds, one query or a batch.

Why batch walks: the decoder asks for hundreds of (context, word) pairs at once; each order of
a batch walk is one numpy `searchsorted`, so Python overhead is paid per order, not per query.
All values are log10.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from maxarpa.arpa import open_text, read_arpa
from maxarpa.bound import compute_bounds
from maxarpa.constants import BOS, EOS, UNK
from maxarpa.errors import UnknownWordError
from maxarpa.table import Trie, build_trie

MAX_ARPA_MAGIC = "\\max-arpa\\"


class Model:
    """A backoff n-gram model with exact max-backoff bounds (log10 everywhere)."""

    def __init__(self, vocab: list[str], trie: Trie, source: str = "") -> None:
        self.vocab = vocab
        self.trie = trie
        self.source = source
        self.word_to_id = {w: i for i, w in enumerate(vocab)}
        self.unk_id = self.word_to_id.get(UNK)
        self.bos_id = self.word_to_id.get(BOS)
        self.eos_id = self.word_to_id.get(EOS)

    # ----- construction -------------------------------------------------------------------
    @classmethod
    def from_arpa(cls, path: str | Path) -> Model:
        """Read an ARPA file and compute the max-backoff bounds."""
        data = read_arpa(path)
        trie = build_trie(data, str(path))
        model = cls(data.vocab, trie, str(path))
        compute_bounds(trie, model.eos_id)
        return model

    @classmethod
    def load(cls, path: str | Path) -> Model:
        """Load an ARPA or a MAX-ARPA file (plain or compressed), detected by its first line."""
        if is_max_arpa(path):
            from maxarpa.maxarpa_format import read_max_arpa

            return read_max_arpa(path)
        return cls.from_arpa(path)

    # ----- facts ---------------------------------------------------------------------------
    @property
    def order(self) -> int:
        return self.trie.order

    @property
    def counts(self) -> list[int]:
        """Listed n-grams per order (blank suffix nodes are not counted)."""
        return [int(node.listed.sum()) for node in self.trie.nodes]

    @property
    def positive_backoffs(self) -> int:
        return int(sum((node.log10bow > 0).sum() for node in self.trie.nodes))

    # ----- ids -----------------------------------------------------------------------------
    def word_id(self, word: str) -> int:
        """Id of `word`; unknown words map to <unk>, as in KenLM."""
        wid = self.word_to_id.get(word)
        if wid is not None:
            return wid
        if self.unk_id is None:
            raise UnknownWordError(
                f"{self.source}: unknown word {word!r} and the model has no <unk>"
            )
        return self.unk_id

    def ids(self, words: Sequence[str]) -> np.ndarray:
        return np.fromiter((self.word_id(w) for w in words), dtype=np.int32, count=len(words))

    def _context_array(self, context: Sequence[str]) -> np.ndarray:
        ctx = list(context)[-(self.order - 1) :] if self.order > 1 else []
        return self.ids(ctx).reshape(1, len(ctx))

    # ----- scalar queries ------------------------------------------------------------------
    def log10p(self, word: str, context: Sequence[str]) -> float:
        """log10 p(word | context) with backoff (eq. 7 of the paper); KenLM's value."""
        return float(self.log10p_batch(self._context_array(context), self.ids([word]))[0])

    def max_log10p(self, word: str, context: Sequence[str]) -> float:
        """max over every left extension z of log10 p(word | z + context)."""
        return float(self.max_log10p_batch(self._context_array(context), self.ids([word]))[0])

    # ----- batch queries -------------------------------------------------------------------
    def log10p_batch(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        """log10 p for each row: `contexts` (B, k) ids left-padded with -1, `words` (B,)."""
        return self._walk(contexts, words, want_max=False)

    def max_log10p_batch(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        """Max-backoff log10 bound for each row; same layout as `log10p_batch`."""
        return self._walk(contexts, words, want_max=True)

    def _walk(self, contexts: np.ndarray, words: np.ndarray, want_max: bool) -> np.ndarray:
        trie = self.trie
        n = trie.order
        words = np.asarray(words, dtype=np.int64)
        contexts = np.asarray(contexts, dtype=np.int64)
        if contexts.ndim != 2 or contexts.shape[0] != words.shape[0]:
            raise ValueError("contexts must be (B, k) with one row per word")
        if contexts.shape[1] > n - 1:
            contexts = contexts[:, contexts.shape[1] - (n - 1) :]
        b, width = contexts.shape
        ctx_len = (contexts >= 0).sum(axis=1)
        rows = np.arange(b)
        # Walk 1: backoffs of the context suffixes c[-1:], c[-2:], ... (cum[:, j] = sum of j).
        cum = np.zeros((b, width + 1))
        ctx_depth = np.zeros(b, dtype=np.int64)
        ctx_node = np.full(b, -1, dtype=np.int64)
        for j in range(1, width + 1):
            cum[:, j] = cum[:, j - 1]
            word_j = contexts[:, width - j]
            alive = (ctx_depth == j - 1) & (word_j >= 0)
            if j == 1:
                idx = np.where(alive, word_j, -1)
            else:
                idx = np.full(b, -1, dtype=np.int64)
                if alive.any():
                    idx[alive] = trie.find(j, trie.key(ctx_node[alive], word_j[alive]))
            found = idx >= 0
            cum[found, j] += trie.nodes[j - 1].log10bow[idx[found]]
            ctx_depth[found] = j
            ctx_node[found] = idx[found]
        # Walk 2: the longest node v·w that is a suffix of c·w.
        node_idx = words.copy()
        depth = np.ones(b, dtype=np.int64)
        for j in range(1, width + 1):
            word_j = contexts[:, width - j]
            alive = (depth == j) & (word_j >= 0)
            if not alive.any():
                break
            found = trie.find(j + 1, trie.key(node_idx[alive], word_j[alive]))
            hit = np.flatnonzero(alive)[found >= 0]
            node_idx[hit] = found[found >= 0]
            depth[hit] = j + 1
        base = np.empty(b)
        mf = np.empty(b)
        for k in range(1, n + 1):
            sel = depth == k
            if sel.any():
                base[sel] = trie.nodes[k - 1].log10p[node_idx[sel]]
                if want_max:
                    mf[sel] = trie.nodes[k - 1].mf[node_idx[sel]]
        matched = depth - 1
        bow_sum = cum[rows, ctx_depth] - cum[rows, np.minimum(matched, ctx_depth)]
        logp = base + bow_sum
        if not want_max:
            return logp
        full_match = matched == ctx_len
        full_ctx = ctx_depth == ctx_len
        slack = np.zeros(b)
        for k in range(1, n):
            sel = full_ctx & (ctx_len == k) & ~full_match
            if sel.any():
                node = trie.nodes[k - 1]
                slack[sel] = node.mbow[ctx_node[sel]] - node.log10bow[ctx_node[sel]]
        return np.where(full_match, mf, logp + slack)


def is_max_arpa(path: str | Path) -> bool:
    """True when the first non-blank line is the MAX-ARPA marker."""
    try:
        with open_text(path) as fh:
            for line in fh:
                if line.strip():
                    return line.strip() == MAX_ARPA_MAGIC
    except Exception:  # a corrupt file is reported by the ARPA reader, with its line
        return False
    return False
