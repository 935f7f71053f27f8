"""What `maxarpa query` prints for one input line, in its two modes.

Why a module of its own: the command line reads lines as they arrive and must answer each one
at once (a caller may write a line and wait for its answer before writing the next), so the
answer of a line is a pure function of the model and that line, kept apart from the I/O.

Modes:
- n-gram (the default, unchanged): the line is an n-gram; print `log10p<TAB>max_log10p` of
  its last word given the words before it.
- sentence (`--sentence`), as KenLM's `query`: the line is a sentence, scored between <s> and
  </s>; print `word=id length log10p` for each word and </s> (tab-separated), then
  `Total: <sum of log10p> OOV: <count>`. `length` is the longest listed n-gram that scored the
  word; a word scored as <unk> (out of the vocabulary, or `<unk>` itself) shows <unk>'s id
  (KenLM's <unk> is id 0) and counts in OOV, as in KenLM. At the end, perplexities as KenLM
  prints them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from maxarpa.arpa import format_log10
from maxarpa.constants import BOS, EOS
from maxarpa.model import Model


def ngram_answer(model: Model, tokens: list[str]) -> str:
    """`log10p<TAB>max_log10p` of the last token given the ones before (an empty line gives
    an empty answer line, so answers stay aligned with questions)."""
    if not tokens:
        return ""
    n = model.order
    ctx = model.ids(tokens[:-1][-(n - 1):] if n > 1 else []).reshape(1, -1)
    word = model.ids(tokens[-1:])
    logp = float(model.log10p_batch(ctx, word)[0])
    maxp = float(model.max_log10p_batch(ctx, word)[0])
    return f"{format_log10(logp)}\t{format_log10(maxp)}"


@dataclass
class Totals:
    """Running sums over the sentences answered so far (for the perplexity summary)."""

    log10p: float = 0.0
    oov_log10p: float = 0.0
    oov: int = 0
    tokens: int = 0

    def summary(self) -> str:
        """KenLM's closing lines: perplexities including and excluding OOVs, counts."""
        with_oov = _perplexity(self.log10p, self.tokens)
        without = _perplexity(self.log10p - self.oov_log10p, self.tokens - self.oov)
        return (f"Perplexity including OOVs:\t{with_oov!r}\n"
                f"Perplexity excluding OOVs:\t{without!r}\n"
                f"OOVs:\t{self.oov}\nTokens:\t{self.tokens}")


def _perplexity(log10p: float, tokens: int) -> float:
    if tokens == 0:
        return math.nan
    return 10.0 ** (-log10p / tokens)


def sentence_answer(model: Model, tokens: list[str], totals: Totals) -> str:
    """KenLM's per-sentence line for `tokens` (possibly empty: then only </s> is scored), and
    the sentence added to `totals`."""
    n = model.order
    words = [*tokens, EOS]
    ids = [model.word_id(w) for w in words]
    known = [wid != model.unk_id for wid in ids]  # KenLM: a word scored as <unk> is an OOV
    history = [model.word_id(BOS), *ids]
    width = max(n - 1, 0)
    ctx = np.full((len(words), width), -1, dtype=np.int64)
    for i in range(len(words)):
        recent = history[max(0, i + 1 - width): i + 1] if width else []
        if recent:
            ctx[i, width - len(recent):] = recent
    logp = model.log10p_batch(ctx, np.asarray(ids, dtype=np.int64))
    cells = []
    total = 0.0
    for i, (word, wid, is_known) in enumerate(zip(words, ids, known)):
        p = float(logp[i])
        length = matched_length(model, ctx[i], wid)
        cells.append(f"{word}={wid} {length} {format_log10(p)}")
        total += p
        totals.tokens += 1
        if not is_known:
            totals.oov += 1
            totals.oov_log10p += p
    totals.log10p += total
    oov = sum(not k for k in known)
    return "\t".join(cells) + f"\tTotal: {format_log10(total)} OOV: {oov}"


def matched_length(model: Model, context: np.ndarray, wid: int) -> int:
    """Length of the longest listed n-gram `z w` with `z` a suffix of `context` (ids, oldest
    first, -1 padding): the n-gram KenLM reports as having scored `w`."""
    trie = model.trie
    node = wid
    length = 1
    for j, word in enumerate(context[::-1].tolist(), start=1):
        if word < 0 or j >= trie.order:
            break
        found = int(trie.find(j + 1, trie.key(np.array([node]), np.array([word])))[0])
        if found < 0:
            break
        node = found
        if trie.nodes[j].listed[found]:
            length = j + 1
    return length
