"""The in-memory model: backoff probabilities and max-backoff bounds, one query or a batch.

Why batch walks: the decoder asks for hundreds of (context, word) pairs at once; each order of
a batch walk is one vectorised hash lookup (hash_index.HashIndex), so Python overhead is paid per
order, not per query. All values are log10.

This module knows no file format and imports no reader: the readers (maxarpa_format,
binary_format, and `maxarpa.load` for ARPA) build a Model, and `maxarpa.load` picks the
reader, so the import graph runs one way (tests/test_imports.py checks it).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from maxarpa.constants import BOS, EOS, UNK, UNK_CAPITALS
from maxarpa.errors import UnknownWordError, shown
from maxarpa.table import Trie


class Model:
    """A backoff n-gram model with exact max-backoff bounds (log10 everywhere).

    Make one with `maxarpa.load` (any file format). Attributes: `vocab` (words in id order),
    `word_to_id`, `bos_id`/`eos_id`/`unk_id` (None when absent; `maxarpa.load` guarantees
    <s> and </s> unless told otherwise, see `maxarpa.Config`), `trie` (the table), `source`.
    """

    def __init__(self, vocab: list[str], trie: Trie, source: str = "") -> None:
        self.vocab = vocab
        self.trie = trie
        self.source = source
        self.word_to_id = {w: i for i, w in enumerate(vocab)}
        unk = self.word_to_id.get(UNK)
        self.unk_id = unk if unk is not None else self.word_to_id.get(UNK_CAPITALS)
        self.bos_id = self.word_to_id.get(BOS)
        self.eos_id = self.word_to_id.get(EOS)

    # ----- facts ---------------------------------------------------------------------------
    @property
    def order(self) -> int:
        """The model order n (length of the longest n-gram)."""
        return self.trie.order

    @property
    def counts(self) -> list[int]:
        """Listed n-grams per order (blank suffix nodes are not counted)."""
        return [int(node.listed.sum()) for node in self.trie.nodes]

    @property
    def positive_backoffs(self) -> int:
        """How many nodes have a log10 backoff above 0 (where a max over listed n-grams would
        not be a bound)."""
        return int(sum((node.log10bow > 0).sum() for node in self.trie.nodes))

    # ----- ids -----------------------------------------------------------------------------
    def word_id(self, word: str | bytes) -> int:
        """Id of `word`; unknown words map to <unk> (or <UNK>), as in KenLM.

        A word is the str its bytes decode to as UTF-8 with errors="surrogateescape" (see
        maxarpa.arpa); `bytes` are decoded that way here.

        Raises:
            UnknownWordError: `word` is not in the vocabulary and the model has no <unk>.
        """
        if isinstance(word, bytes):
            word = word.decode("utf-8", "surrogateescape")
        wid = self.word_to_id.get(word)
        if wid is not None:
            return wid
        if self.unk_id is None:
            raise UnknownWordError(
                f"{self.source}: unknown word {shown(word)} and the model has no <unk>"
            )
        return self.unk_id

    def is_known(self, word: str | bytes) -> bool:
        """True when `word` is in the vocabulary itself (not merely mapped to <unk>); what a
        caller uses to count out-of-vocabulary tokens. <unk> itself counts as known."""
        if isinstance(word, bytes):
            word = word.decode("utf-8", "surrogateescape")
        return word in self.word_to_id

    def ids(self, words: Sequence[str]) -> np.ndarray:
        """Word ids (int32) of `words`, each as `word_id`."""
        return np.fromiter((self.word_id(w) for w in words), dtype=np.int32, count=len(words))

    def _context_array(self, context: Sequence[str]) -> np.ndarray:
        ctx = list(context)[-(self.order - 1) :] if self.order > 1 else []
        return self.ids(ctx).reshape(1, len(ctx))

    # ----- scalar queries ------------------------------------------------------------------
    def log10p(self, word: str, context: Sequence[str]) -> float:
        """log10 p(word | context) with backoff (eq. 7 of the paper); KenLM's value.

        Args:
            word: the predicted word (unknown words score as <unk>).
            context: the preceding words, oldest first; only the last n-1 are used. A
                context starting with <s> is the sentence start.

        Returns:
            The log10 probability.

        Raises:
            UnknownWordError: an unknown word and no <unk>.
        """
        return float(self.log10p_batch(self._context_array(context), self.ids([word]))[0])

    def max_log10p(self, word: str, context: Sequence[str]) -> float:
        """The max-backoff bound: max over every left extension z of log10 p(word | z +
        context) (z empty included; none when `context` starts with <s>). Arguments and
        errors as `log10p`; returns a log10 value >= `log10p(word, context)`."""
        return float(self.max_log10p_batch(self._context_array(context), self.ids([word]))[0])

    # ----- batch queries -------------------------------------------------------------------
    def log10p_batch(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        """log10 p for each row.

        Args:
            contexts: (B, k) word ids, oldest first, left-padded with -1; columns beyond the
                last n-1 are ignored.
            words: (B,) word ids.

        Returns:
            (B,) float64 log10 probabilities.

        Raises:
            UnknownWordError: a word id outside [0, V) or a context id >= V.
        """
        return self._walk(contexts, words, want_max=False)

    def max_log10p_batch(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        """Max-backoff log10 bound for each row (see `max_log10p`); same layout and return
        type as `log10p_batch`."""
        return self._walk(contexts, words, want_max=True)

    def _check_ids(self, contexts: np.ndarray, words: np.ndarray) -> None:
        """UnknownWordError unless every word id is in [0, V) and every context id below V.

        Why: the walk indexes numpy tables with these ids, where a negative word id would
        silently read another word's row (numpy counts from the end) and a too large one could
        alias a key of another n-gram. Negative context ids are padding, as documented.
        """
        v = self.trie.vocab_size
        if len(words) and (words.min() < 0 or words.max() >= v):
            bad = int(words[(words < 0) | (words >= v)][0])
            raise UnknownWordError(f"{self.source or 'model'}: word id {bad} out of range "
                                   f"(vocabulary of {v})")
        if contexts.size and contexts.max() >= v:
            raise UnknownWordError(f"{self.source or 'model'}: context id "
                                   f"{int(contexts.max())} out of range (vocabulary of {v})")

    def longest_match(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        """For each row, the length of the longest n-gram `z w` of the table with `z` a
        suffix of the context (ids, oldest first, -1 padding): the n-gram KenLM's query
        reports as having scored `w`. A blank node (the unlisted suffix of a listed n-gram)
        counts, as in KenLM, which fills such n-grams in with their backed-off values."""
        return self._longest_node(*self._batch(contexts, words))[1]

    def _batch(self, contexts: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A query batch as int64 arrays, contexts cut to the n-1 ids the model can use, every
        id checked (`_check_ids`)."""
        n = self.trie.order
        words = np.asarray(words, dtype=np.int64)
        contexts = np.asarray(contexts, dtype=np.int64)
        if contexts.ndim != 2 or contexts.shape[0] != words.shape[0]:
            raise ValueError("contexts must be (B, k) with one row per word")
        if contexts.shape[1] > n - 1:
            contexts = contexts[:, contexts.shape[1] - (n - 1) :]
        self._check_ids(contexts, words)
        return contexts, words

    def _longest_node(self, contexts: np.ndarray, words: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
        """Walk A: for each row, the longest table node v·w that is a suffix of c·w, as
        (its index in its order's nodes, its depth |v| + 1)."""
        trie = self.trie
        b, width = contexts.shape
        node_idx = words.copy()
        depth = np.ones(b, dtype=np.int64)
        active = np.arange(b)
        for j in range(1, width + 1):
            word_j = contexts[active, width - j]
            keep = word_j >= 0
            active, word_j = active[keep], word_j[keep]
            if not len(active):
                break
            found = trie.find(j + 1, trie.key(node_idx[active], word_j))
            hit = found >= 0
            active = active[hit]
            node_idx[active] = found[hit]
            depth[active] = j + 1
        return node_idx, depth

    def _walk(self, contexts: np.ndarray, words: np.ndarray, want_max: bool) -> np.ndarray:
        """Two walks per batch, each one hash lookup per order on the still-active rows.

        Walk A finds the longest table node v·w ending the query (its log10p, or mf).
        Walk B adds the backoffs of the context suffixes longer than v, and finds the
        context node c itself (for mbow - bow when v·w is not c·w).
        """
        trie = self.trie
        n = trie.order
        contexts, words = self._batch(contexts, words)
        b, width = contexts.shape
        ctx_len = (contexts >= 0).sum(axis=1)
        node_idx, depth = self._longest_node(contexts, words)
        matched = depth - 1
        base = np.empty(b)
        mf = np.empty(b) if want_max else base
        for k in range(1, n + 1):
            sel = np.flatnonzero(depth == k)
            if len(sel):
                node = trie.nodes[k - 1]
                base[sel] = node.log10p[node_idx[sel]]
                if want_max:
                    mf[sel] = node.mf[node_idx[sel]]
        # Walk B: context suffixes c[-1:], c[-2:], ...; backoffs beyond |v| are added.
        bow_sum = np.zeros(b)
        ctx_node = np.full(b, -1, dtype=np.int64)
        ctx_depth = np.zeros(b, dtype=np.int64)
        active = np.arange(b)
        for j in range(1, width + 1):
            word_j = contexts[active, width - j]
            keep = word_j >= 0
            active, word_j = active[keep], word_j[keep]
            if not len(active):
                break
            if j == 1:
                found = word_j
            else:
                found = trie.find(j, trie.key(ctx_node[active], word_j))
                hit = found >= 0
                active, found = active[hit], found[hit]
            ctx_node[active] = found
            ctx_depth[active] = j
            beyond = matched[active] < j
            bow_sum[active[beyond]] += trie.nodes[j - 1].log10bow[found[beyond]]
        logp = base + bow_sum
        if not want_max:
            return logp
        full_match = matched == ctx_len
        slack = np.zeros(b)
        for k in range(1, n):
            sel = np.flatnonzero((ctx_depth == ctx_len) & (ctx_len == k) & ~full_match)
            if len(sel):
                node = trie.nodes[k - 1]
                slack[sel] = node.mbow[ctx_node[sel]] - node.log10bow[ctx_node[sel]]
        return np.where(full_match, mf, logp + slack)

