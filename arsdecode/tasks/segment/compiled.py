"""The segmentation lattices of many texts, built in one compiled call (issue 33).

Why: in Python, the prefix walk over the vocabulary, the string made for each of the ~12
unknown-word arcs per character and the per-arc word-id look-up cost about three times the
exact decode itself. Here the vocabulary is a character trie over code points (`TrieIndex`,
built once per model in C), texts are arrays of code points, and `build_batch` returns the
arcs of every text in the flat layout the compiled Viterbi (`FullDP.run_dag`) reads, with
index-word numbers instead of strings; a `WordLattice` (with its word strings) is made only
where one is needed (`LatticeBatch.word_lattice`: posteriors, k-best, samples).

The arcs, their order and their weights are those of the reference builder
(`lattice.reference_segmentation_lattice`; tests/test_segment_compiled.py compares them on
random and real text). One difference, of rounding only: an unknown arc's spelling score is
summed here character by character, where the reference sums a padded numpy row (pairwise),
so the two may differ in the last bits (about 1e-15 relative).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from arsdecode.lattice.word_lattice import WordLattice
from arsdecode.methods.fast_full import full_dp
from arsdecode.model.interface import PLAIN_SCORING, NgramScoring
from arsdecode.native import _core
from arsdecode.tasks.segment.spelling import BOUNDARY, SpellingModel, encode
from maxarpa import Model


def code_points(text: str) -> np.ndarray:
    """The code points of `text` as int32 (a lone surrogate, from a surrogateescape word, is
    its own code point)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<i4").astype(
        np.int32, copy=False)


@dataclass(frozen=True)
class TrieIndex:
    """A vocabulary by surface form, as a code-point trie in CSR arrays.

    `words` lists the index words surface by surface (surfaces in sorted order; surface f's
    words are words[surf_word_off[f]:surf_word_off[f + 1]], in the order the surface index
    gave them), kept joined by newlines (`joined`) and split on first use: the segmenter
    needs them only for WordLattices, and decodes with `vocab_ids`, each word's id in the
    model it was built from (None: not recorded), used only for a model whose vocabulary
    has the same digest, `vocab_digest` (`ids_in`). Node t's children are
    child_node[child_off[t]:child_off[t + 1]], by increasing code point child_sym;
    node_surface[t] is the surface ending at t, or -1."""

    joined: str
    surf_word_off: np.ndarray
    child_off: np.ndarray
    child_sym: np.ndarray
    child_node: np.ndarray
    node_surface: np.ndarray
    max_length: int
    vocab_ids: np.ndarray | None = None
    vocab_digest: str = ""

    @cached_property
    def words(self) -> tuple[str, ...]:
        return tuple(self.joined.split("\n")) if self.joined else ()

    def __contains__(self, surface: object) -> bool:
        """Whether `surface` is a surface form of the index: the cues' known-compound rule
        asks this of a few camel-case spans per input, so a walk down the trie serves where
        a set of 243,000 strings would cost the start-up the cached trie saves."""
        if not isinstance(surface, str):
            return False
        node = 0
        for ch in surface:
            lo, hi = int(self.child_off[node]), int(self.child_off[node + 1])
            k = lo + int(np.searchsorted(self.child_sym[lo:hi], ord(ch)))
            if k == hi or int(self.child_sym[k]) != ord(ch):
                return False
            node = int(self.child_node[k])
        return bool(self.node_surface[node] >= 0)

    def ids_in(self, word_to_id: Mapping[str, int], vocab: Sequence[str],
               unk: int) -> np.ndarray:
        """Every index word's id in a model (`unk` for a word it lacks): the recorded
        `vocab_ids` when the model's vocabulary is the one they were recorded from (same
        digest: milliseconds, where 243,000 dict look-ups take a tenth of a second), else
        looked up."""
        if self.vocab_ids is not None and self.vocab_digest == vocab_digest(vocab):
            return self.vocab_ids
        get = word_to_id.get
        return np.fromiter((get(w, unk) for w in self.words), dtype=np.int64,
                           count=len(self.words))

    @classmethod
    def of(cls, by_surface: Mapping[str, Sequence[str]],
           model_vocab: Sequence[str] | None = None) -> TrieIndex:
        """The trie of a surface index (`lattice.SurfaceIndex.words`: surface -> words);
        with the model's vocabulary (word k has id k), the words' ids are recorded."""
        surfaces = sorted(by_surface)
        lengths = np.fromiter(map(len, surfaces), dtype=np.int64, count=len(surfaces))
        offs = np.zeros(len(surfaces) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offs[1:])
        parent, sym, node_surface = _core.seg_build_trie(code_points("".join(surfaces)), offs)
        counts = [len(by_surface[s]) for s in surfaces]
        word_off = np.zeros(len(surfaces) + 1, dtype=np.int64)
        np.cumsum(counts, out=word_off[1:])
        words = [w for s in surfaces for w in by_surface[s]]
        ids, digest = None, ""
        if model_vocab is not None:
            to_id = {w: k for k, w in enumerate(model_vocab)}
            ids = np.fromiter(map(to_id.__getitem__, words), dtype=np.int64, count=len(words))
            digest = vocab_digest(model_vocab)
        return cls("\n".join(words), word_off, *_children(parent, sym), node_surface,
                   int(lengths.max(initial=0)), ids, digest)

    def save(self, path: str | Path) -> None:
        """Write the arrays and the words (an uncompressed .npz: it loads at disk speed)."""
        arrays: dict[str, np.ndarray] = {
            "words": np.frombuffer(self.joined.encode("utf-8", "surrogateescape"),
                                   dtype=np.uint8),
            "surf_word_off": self.surf_word_off, "child_off": self.child_off,
            "child_sym": self.child_sym, "child_node": self.child_node,
            "node_surface": self.node_surface, "max_length": np.array(self.max_length)}
        if self.vocab_ids is not None:
            arrays["vocab_ids"] = self.vocab_ids
            arrays["vocab_digest"] = np.array(self.vocab_digest)
        with open(path, "wb") as f:
            np.savez(f, **arrays)  # type: ignore[arg-type]  # (stubs: allow_pickle)

    @classmethod
    def load(cls, path: str | Path) -> TrieIndex:
        with np.load(path) as z:
            return cls(bytes(z["words"]).decode("utf-8", "surrogateescape"),
                       z["surf_word_off"], z["child_off"], z["child_sym"], z["child_node"],
                       z["node_surface"], int(z["max_length"]),
                       z["vocab_ids"] if "vocab_ids" in z.files else None,
                       str(z["vocab_digest"]) if "vocab_digest" in z.files else "")


def vocab_digest(vocab: Sequence[str]) -> str:
    """A digest of a vocabulary in order (its words' ids are their positions)."""
    return hashlib.sha256("\n".join(vocab).encode("utf-8", "surrogateescape")).hexdigest()


def _children(parent: np.ndarray, sym: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(child_off, child_sym, child_node) of a trie given as each node's parent and symbol
    (nodes in preorder, so a stable sort by parent keeps each node's children by symbol)."""
    m = len(parent)
    child_node = (np.argsort(parent[1:], kind="stable") + 1).astype(np.int32)
    child_off = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(parent[1:], minlength=m), out=child_off[1:])
    return child_off, np.ascontiguousarray(sym[child_node]), child_node


@dataclass(frozen=True)
class Pricing:
    """How unknown-word arcs are weighed (ln): a flat `penalty` per character, or with a
    `spelling` model scale * ln p_spell - per_word (`lattice.segmentation_lattice`)."""

    penalty: float = 0.0
    spelling: SpellingModel | None = None
    scale: float = 1.0
    per_word: float = 0.0


@dataclass(frozen=True)
class LatticeBatch:
    """The lattices of `texts` in FullDP.run_dag's flat layout: text s has the global nodes
    node_off[s] .. node_off[s + 1] - 1 (offset k is node node_off[s] + k); node u's arcs are
    arc_off[u] .. arc_off[u + 1] - 1, with global dst, word (an index word's number; -1 an
    unknown word, its substring), weight (ln) and length in characters."""

    texts: tuple[str, ...]
    node_off: np.ndarray
    arc_off: np.ndarray
    dst: np.ndarray
    word: np.ndarray
    weight: np.ndarray
    length: np.ndarray

    def word_lattice(self, s: int, words: Sequence[str], source: str) -> WordLattice:
        """Text s's lattice as a WordLattice (`words`: the index's words, `TrieIndex.words`)."""
        text, base = self.texts[s], int(self.node_off[s])
        n = len(text)
        a0, a1 = int(self.arc_off[base]), int(self.arc_off[base + n + 1])
        src = np.repeat(np.arange(n + 1, dtype=np.int64), np.diff(self.arc_off[base:base + n + 2]))
        dst = self.dst[a0:a1] - base
        ids = self.word[a0:a1].tolist()
        arc_words = tuple(words[w] if w >= 0 else text[i:j]
                          for w, i, j in zip(ids, src.tolist(), dst.tolist(), strict=True))
        return WordLattice(n_nodes=n + 1, finals={n: 0.0}, src=src, dst=dst, words=arc_words,
                           log_weights=self.weight[a0:a1].copy(),
                           node_names=tuple(map(str, range(n + 1))), source=source)


def build_batch(texts: Sequence[str], breaks: Sequence[Collection[int]], index: TrieIndex,
                pricing: Pricing, *, longest_word: int, unknown_max_length: int,
                bonuses: Sequence[np.ndarray] | None = None) -> LatticeBatch:
    """The segmentation lattices of normalised `texts` (each with its hard `breaks` and, if
    given, its boundary bonus, one ln value per offset 0..len(text)) in one compiled call.
    The caller checks the texts and options (`lattice.segmentation_lattice` does)."""
    joined = "".join(texts)
    text_off = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in texts], out=text_off[1:])
    cut = np.zeros(len(joined), dtype=np.uint8)
    for base, b in zip(text_off[:-1].tolist(), breaks, strict=True):
        if b:
            cut[[base + k for k in b]] = 1
    bonus = (np.concatenate(bonuses).astype(np.float64, copy=False) if bonuses
             else np.zeros(0))
    model = pricing.spelling
    table = None if model is None else np.asarray(model.log_p, dtype=np.float64)
    spelled = table is not None and table.ndim == 3 and len(set(table.shape)) == 1
    codes = encode(joined) if spelled else np.zeros(0, dtype=np.int64)
    res = _core.seg_lattice_batch(
        code_points(joined), text_off, cut, index.child_off, index.child_sym,
        index.child_node, index.node_surface, index.surf_word_off, longest_word,
        unknown_max_length, int(spelled), float(pricing.penalty), float(pricing.scale),
        float(pricing.per_word), np.ascontiguousarray(codes, dtype=np.int64),
        np.ascontiguousarray(table.ravel()) if spelled and table is not None else np.zeros(0),
        len(table) if spelled and table is not None else 0, BOUNDARY, bonus)
    batch = LatticeBatch(tuple(texts), *res)
    if model is not None and not spelled:  # a spelling model of another shape: its own API
        _price_with(batch, pricing, bonus)
    return batch


def _price_with(batch: LatticeBatch, pricing: Pricing, bonus: np.ndarray) -> None:
    """Weigh the unknown arcs by the spelling model's own `unknown_log_p` (any model shape),
    text by text, in place of the flat weights the compiled call gave them."""
    assert pricing.spelling is not None
    n_nodes = len(batch.arc_off) - 1
    src = np.repeat(np.arange(n_nodes, dtype=np.int64), np.diff(batch.arc_off))
    for s, text in enumerate(batch.texts):
        base = int(batch.node_off[s])
        a0, a1 = int(batch.arc_off[base]), int(batch.arc_off[base + len(text) + 1])
        unk = np.flatnonzero(batch.word[a0:a1] < 0) + a0
        if not len(unk):
            continue
        w = pricing.scale * pricing.spelling.unknown_log_p(
            encode(text), src[unk] - base, batch.length[unk]) - pricing.per_word
        if len(bonus):
            ends = batch.dst[unk]
            w = w + np.where(ends - base < len(text), bonus[ends], 0.0)
        batch.weight[unk] = w


def best_paths(ngram: Model, batch: LatticeBatch, lm_ids: np.ndarray,
               scoring: NgramScoring = PLAIN_SCORING) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(score (S,) ln, -inf where no path; path: the best paths' arc indices concatenated;
    path_len (S,)) of the batch's lattices under the n-gram `ngram`, whose ids of the index
    words are `lm_ids` (an unknown arc is <unk>): the exact Viterbi over the merged
    expansion that `dispatch.decode_many` runs on word lattices (`FullDP.run_dag`), fed the
    batch's arrays as they are. (A Viterbi specialised to these lattices, each unknown arc's
    LM step once per state and a node's few states scanned instead of hashed, gave the
    same answers but only 9% more characters per second in process: not worth a second DP.)"""
    if ngram.unk_id is None:
        raise ValueError("best_paths: the model has no <unk>")
    ids = np.where(batch.word < 0, ngram.unk_id, lm_ids[np.maximum(batch.word, 0)])
    final_w = np.full(len(batch.arc_off) - 1, -np.inf)
    final_w[batch.node_off[1:] - 1] = 0.0  # each text's last offset, weight 0
    score, path, path_len, _, _ = full_dp(ngram).run_dag(
        batch.node_off, batch.arc_off, batch.dst, ids, batch.weight, final_w,
        ngram.bos_id if scoring.sentence_start and ngram.bos_id is not None else -1,
        ngram.eos_id if scoring.sentence_end and ngram.eos_id is not None else -1,
        scoring.lm_weight)
    return score, path, path_len
