"""ASR-like word lattices from held-out text, for the lattice-rescoring bench (issue 21).

Why: issue 21 compares exact rescoring of word lattices with SRILM `lattice-tool` 1.7.3 on
"ASR-like lattices" that were measured but not kept; this module makes such lattices again,
seeded, from text the model did not see in training (the held-out split of
`data_prep.prepare_sms`), so `bench/bench_lattice.py` and `experiments/lattice_rescoring.py`
measure the same inputs every run, and a test can check their promised structure. It lives in
data_prep (not in experiments/ or bench/) because both use it and neither imports the other.

One lattice from a reference text of n words w_0..w_{n-1} (nodes P_0..P_n, P_n final, weight 0):

- **Competing arcs.** For each position i, `arcs` arcs P_i -> P_{i+1}: the true word and the
  `arcs - 1` words of the model's vocabulary most confusable with it (`Confuser`). So
  "arcs per position" counts the truth, as the issue's table does (10 x 50: 507 arcs).
- **Acoustic scores** (ln): truth ~ N(0, SIGMA), the confusable of rank j (0: the most
  confusable) ~ N(CONFUSABLE_MEAN - RANK_SLOPE * j, SIGMA), so the truth is often not the best
  arc (the wider the position, the less often) and the LM has to decide: on 40-word lattices
  of the embedded 5-gram, the acoustic scores alone give a word error rate of about 50% (5
  arcs) to 75% (50 arcs), the exact rescoring about 20% to 30%.
- **Spans** (probability `p_span` per position i < n - 1): an arc P_i -> P_{i+2} covering two
  positions, a merged word: the vocabulary word most confusable with the concatenation w_i w_{i+1}
  (neither word itself), ln score ~ N(SPAN_MEAN, SIGMA).
- **Deletions** (probability `p_delete` per position): an epsilon arc P_i -> P_{i+1}, the
  recogniser hearing nothing there, ln score ~ N(DELETE_MEAN, SIGMA).
- **Insertions** (probability `p_insert` per position): an extra node M_i with an arc P_i -> M_i
  for an inserted word (one of the INSERT_POOL most frequent vocabulary words: short function
  words are what recognisers insert), ln score ~ N(INSERT_MEAN, SIGMA), then arcs M_i -> P_{i+1}
  for the truth and its first min(2, arcs - 1) confusables, each with its position's score.

Reference text: the held-out sentences (`heldout_sentences`), punctuation dropped (speech has
none), read as one stream; a lattice of n words starts at a seeded random sentence start and
runs on across sentences (utterances do not follow sentence ends). A true word outside the
model's vocabulary is replaced by its most confusable vocabulary word (a recogniser outputs
only its vocabulary); `AsrLattice.truth` is the text after that replacement.

Confusable words (`Confuser`, deterministic): among the vocabulary words with a letter or a
digit, ranked by

    dice(w, v) - LENGTH_WEIGHT * |len(v) - len(w)| - FREQ_WEIGHT * |log10 p(v) - log10 p(w)|

where dice is the Dice coefficient of the two words' character-bigram sets with `^`/`$`
padding (similar spelling), and p is the model's unigram probability (similar frequency; an
unknown w takes `<unk>`'s); ties by vocabulary order. Spelling stands in for pronunciation.

Seeds: the text of lattice j of n words depends on (seed, n, j) only, and its arcs and scores on
(seed, n, arcs, j): the 10 x 5 and 10 x 50 lattices j read the same words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from arsdecode.lattice import WordLattice
from arsdecode.lattice.lattice_files import write_word_lattice
from arsdecode.lattice.word_lattice import RawArc

SIGMA = 3.0
CONFUSABLE_MEAN = -3.0
RANK_SLOPE = 0.1
SPAN_MEAN = -2.0
DELETE_MEAN = -3.0
INSERT_MEAN = -2.0
INSERT_POOL = 30
LENGTH_WEIGHT = 0.05
FREQ_WEIGHT = 0.02
P_SPAN = 0.15
P_DELETE = 0.1
P_INSERT = 0.1
SPECIAL = frozenset(("<s>", "</s>", "<unk>"))


def is_spoken(token: str) -> bool:
    """A token a recogniser would output: it has a letter or a digit (not punctuation)."""
    return any(c.isalnum() for c in token) and token not in SPECIAL


def heldout_sentences(corpora: Sequence[str] = ("state_union",), seed: int = 0,
                      data_dir: str | Path | None = None) -> list[list[str]]:
    """The held-out sentences of `python -m data_prep.prepare_sms --corpora ... --seed ...`
    (the same split: `data_prep.prepare_sms.split_heldout` of the same corpus sentences)."""
    from data_prep.corpus import load_sentences
    from data_prep.prepare_sms import split_heldout

    _, held = split_heldout(load_sentences(corpora, data_dir), seed)
    return held


def _bigrams(word: str) -> set[str]:
    padded = f"^{word}$"
    return {padded[i:i + 2] for i in range(len(padded) - 1)}


class Confuser:
    """The vocabulary words most confusable with a word (module docstring: spelling, length,
    frequency), from a model's vocabulary and unigram log10 probabilities."""

    def __init__(self, vocab: Sequence[str], unigram_log10p: Sequence[float]) -> None:
        keep = [i for i, w in enumerate(vocab) if is_spoken(w)]
        self.words = [vocab[i] for i in keep]
        self.index = {w: k for k, w in enumerate(self.words)}
        self.log10p = np.asarray([unigram_log10p[i] for i in keep], dtype=np.float64)
        lp = dict(zip(vocab, unigram_log10p, strict=True))
        self.unk_log10p = float(lp.get("<unk>", float(self.log10p.min())))
        self.lengths = np.array([len(w) for w in self.words], dtype=np.int64)
        ids: dict[str, int] = {}
        owner: list[int] = []
        flat: list[int] = []
        for k, w in enumerate(self.words):
            for b in sorted(_bigrams(w)):
                flat.append(ids.setdefault(b, len(ids)))
                owner.append(k)
        self._bigram_id = ids
        self._flat = np.array(flat, dtype=np.int64)
        self._owner = np.array(owner, dtype=np.int64)
        self._n_bigrams = np.bincount(self._owner, minlength=len(self.words))
        order = np.argsort(-self.log10p, kind="stable")
        self.frequent = [self.words[k] for k in order[:INSERT_POOL]]

    @classmethod
    def from_model(cls, lm) -> Confuser:
        """From a maxarpa model (its vocabulary and unigram log10 p)."""
        vocab = list(lm.vocab)
        ctx = np.full((len(vocab), max(lm.order - 1, 1)), -1, dtype=np.int64)
        return cls(vocab, lm.log10p_batch(ctx, lm.ids(vocab)).tolist())

    def confusables(self, word: str, k: int, exclude: Sequence[str] = ()) -> list[str]:
        """The `k` vocabulary words most confusable with `word` (never `word` itself nor
        `exclude`), most confusable first."""
        ranked = self._ranked(word, tuple(sorted(set(exclude))), k)
        return list(ranked[:k])

    @lru_cache(maxsize=100_000)  # noqa: B019 -- one Confuser per model, kept for the run
    def _ranked(self, word: str, exclude: tuple[str, ...], k: int) -> tuple[str, ...]:
        q = _bigrams(word)
        q_ids = np.array([self._bigram_id[b] for b in q if b in self._bigram_id], dtype=np.int64)
        overlap = np.bincount(self._owner[np.isin(self._flat, q_ids)], minlength=len(self.words))
        dice = 2.0 * overlap / (len(q) + self._n_bigrams)
        wp = self.log10p[self.index[word]] if word in self.index else self.unk_log10p
        score = (dice - LENGTH_WEIGHT * np.abs(self.lengths - len(word))
                 - FREQ_WEIGHT * np.abs(self.log10p - wp))
        for w in (word, *exclude):
            if w in self.index:
                score[self.index[w]] = -np.inf
        m = min(k + len(exclude) + 1, len(score))
        top = np.argpartition(-score, m - 1)[:m] if m < len(score) else np.arange(len(score))
        top = top[np.lexsort((top, -score[top]))]
        return tuple(self.words[t] for t in top if score[t] > -np.inf)

    def in_vocab(self, word: str) -> str:
        """`word`, or its most confusable vocabulary word when it is not in the vocabulary."""
        return word if word in self.index else self.confusables(word, 1)[0]


@dataclass(frozen=True)
class AsrLattice:
    """One generated lattice: the `WordLattice`, its reference text and what was put in it."""

    lattice: WordLattice
    truth: tuple[str, ...]  # the reference words (OOVs replaced), the path P_0 -> ... -> P_n
    truth_arcs: tuple[int, ...]  # that path's arc indices in `lattice`
    spans: int
    deletions: int
    insertions: int
    arcs_per_position: int


def make_lattice(words: Sequence[str], arcs: int, confuser: Confuser, rng: np.random.Generator,
                 *, p_span: float = P_SPAN, p_delete: float = P_DELETE,
                 p_insert: float = P_INSERT, source: str = "asr") -> AsrLattice:
    """One ASR-like lattice for the reference `words` (module docstring); `arcs` >= 1 arcs per
    position, the truth included."""
    if arcs < 1 or not words:
        raise ValueError("need at least one word and one arc per position")
    truth = [confuser.in_vocab(w) for w in words]
    n = len(truth)
    # node ids in topological order: P_0, [M_0], P_1, [M_1], ..., P_n
    inserted = rng.random(n) < p_insert
    pos_node: list[int] = []
    ins_node: dict[int, int] = {}
    next_id = 0
    for i in range(n + 1):
        pos_node.append(next_id)
        next_id += 1
        if i < n and inserted[i]:
            ins_node[i] = next_id
            next_id += 1
    raw: list[RawArc] = []
    spans = deletions = 0
    for i, w in enumerate(truth):
        conf = confuser.confusables(w, arcs - 1)
        scores = np.concatenate([rng.normal(0.0, SIGMA, 1),
                                 rng.normal(CONFUSABLE_MEAN - RANK_SLOPE * np.arange(len(conf)),
                                            SIGMA)])
        cands = [w, *conf]
        a, b = pos_node[i], pos_node[i + 1]
        raw += [(a, b, c, float(s)) for c, s in zip(cands, scores.tolist(), strict=True)]
        if rng.random() < p_delete:
            raw.append((a, b, None, float(rng.normal(DELETE_MEAN, SIGMA))))
            deletions += 1
        if i < n - 1 and rng.random() < p_span:
            merged = confuser.confusables(w + truth[i + 1], 1, exclude=(w, truth[i + 1]))
            if merged:
                raw.append((a, pos_node[i + 2], merged[0], float(rng.normal(SPAN_MEAN, SIGMA))))
                spans += 1
        if i in ins_node:
            m = ins_node[i]
            extra = confuser.frequent[int(rng.integers(len(confuser.frequent)))]
            raw.append((a, m, extra, float(rng.normal(INSERT_MEAN, SIGMA))))
            keep = 1 + min(2, len(conf))
            raw += [(m, b, c, float(s)) for c, s in zip(cands[:keep], scores[:keep].tolist(),
                                                       strict=True)]
    wl = WordLattice.build(next_id, pos_node[0], {pos_node[n]: 0.0}, raw, source=source)
    new_id = {int(name): k for k, name in enumerate(wl.node_names)}
    truth_arcs = []
    for i, w in enumerate(truth):
        a, b = new_id[pos_node[i]], new_id[pos_node[i + 1]]
        truth_arcs.append(next(k for k in wl.arcs_from(a)
                               if int(wl.dst[k]) == b and wl.words[k] == w))
    return AsrLattice(wl, tuple(truth), tuple(truth_arcs), spans, deletions,
                      int(inserted.sum()), arcs)


def text_stream(sentences: Sequence[Sequence[str]]) -> tuple[list[str], list[int]]:
    """The spoken tokens of `sentences` as one stream, and where each sentence starts in it."""
    stream: list[str] = []
    starts: list[int] = []
    for s in sentences:
        spoken = [t for t in s if is_spoken(t)]
        if spoken:
            starts.append(len(stream))
            stream += spoken
    return stream, starts


def generate(confuser: Confuser, sentences: Sequence[Sequence[str]], n_words: int, arcs: int,
             count: int, seed: int = 0, **options: float) -> list[AsrLattice]:
    """`count` lattices of `n_words` reference words and `arcs` arcs per position (module
    docstring; `options`: p_span, p_delete, p_insert)."""
    stream, starts = text_stream(sentences)
    if not starts:
        raise ValueError("no spoken words in the reference text")
    out = []
    for j in range(count):
        text_rng = np.random.default_rng([seed, n_words, j])
        s = starts[int(text_rng.integers(len(starts)))]
        words = [stream[(s + t) % len(stream)] for t in range(n_words)]
        rng = np.random.default_rng([seed, n_words, arcs, j])
        out.append(make_lattice(words, arcs, confuser, rng,
                                source=f"asr-{n_words}x{arcs}-{j}", **options))
    return out


def write_slf_files(lattices: Sequence[AsrLattice], out_dir: str | Path) -> list[Path]:
    """Write each lattice as HTK SLF (`<source>.slf` in `out_dir`, ln scores); their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for a in lattices:
        path = out / f"{a.lattice.source}.slf"
        write_word_lattice(a.lattice, path)
        paths.append(path)
    return paths


# ----- scoring a decode against the reference (the bench's sanity columns) ------------------
def word_errors(hyp: Sequence[str], ref: Sequence[str]) -> int:
    """Levenshtein distance between two word sequences (substitutions, insertions, deletions)."""
    prev = list(range(len(ref) + 1))
    for i, h in enumerate(hyp, 1):
        cur = [i] + [0] * len(ref)
        for j, r in enumerate(ref, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (h != r))
        prev = cur
    return prev[-1]


def acoustic_best(wl: WordLattice) -> list[str]:
    """The words of the path with the best arc weights alone (no LM): Viterbi over nodes."""
    best = [-math.inf] * wl.n_nodes
    back = [-1] * wl.n_nodes
    best[0] = 0.0
    for a, (s, d, w) in enumerate(zip(wl.src.tolist(), wl.dst.tolist(),
                                      wl.log_weights.tolist(), strict=True)):
        if best[s] + w > best[d]:
            best[d], back[d] = best[s] + w, a
    node = max(wl.finals, key=lambda f: best[f] + wl.finals[f])
    arcs = []
    while node != 0:
        arcs.append(back[node])
        node = int(wl.src[back[node]])
    return wl.path_words(arcs[::-1])
