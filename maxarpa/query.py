"""What `maxarpa query` prints for one input line, in its two modes.

Why a module of its own: the command line reads lines as they arrive and must answer each one
at once (a caller may write a line and wait for its answer before writing the next), while a
file of a million queries must not cost a million separate lookups. So the answers of a batch
of lines (all the lines that have arrived) are a pure function of the model and those lines,
computed with one batched lookup, kept apart from the I/O.

Modes:
- n-gram (the default, unchanged): the line is an n-gram; print `log10p<TAB>max_log10p` of
  its last word given the words before it.
- sentence (`--sentence`), as KenLM's `query`: the line is a sentence, scored between <s> and
  </s>; print `word=id length log10p` for each word and </s> (tab-separated), then
  `Total: <sum of log10p> OOV: <count>`. `length` is the longest n-gram of the table that
  scored the word; a word scored as <unk> (out of the vocabulary, or `<unk>` itself) shows
  <unk>'s id (KenLM's <unk> is id 0) and counts in OOV, as in KenLM. At the end, perplexities
  as KenLM prints them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from maxarpa.arpa import format_log10
from maxarpa.constants import BOS, EOS
from maxarpa.model import Model


def first_unknown(model: Model, lines: list[list[str]]) -> tuple[int, str] | None:
    """(index of the line, word) of the first word the model cannot score (it is not in the
    vocabulary and the model has no <unk>), or None."""
    if model.unk_id is not None:
        return None
    for i, tokens in enumerate(lines):
        for word in tokens:
            if not model.is_known(word):
                return i, word
    return None


def ngram_answers(model: Model, lines: list[list[str]]) -> list[str]:
    """For each line, `log10p<TAB>max_log10p` of its last token given the ones before (an
    empty line gets an empty answer, so answers stay aligned with questions)."""
    width = max(model.order - 1, 0)
    asked = [i for i, tokens in enumerate(lines) if tokens]
    ctx = np.full((len(asked), width), -1, dtype=np.int64)
    words = np.empty(len(asked), dtype=np.int64)
    for row, i in enumerate(asked):
        context = lines[i][:-1][-width:] if width else []
        if context:
            ctx[row, width - len(context):] = model.ids(context)
        words[row] = model.word_id(lines[i][-1])
    logp = model.log10p_batch(ctx, words).tolist()
    maxp = model.max_log10p_batch(ctx, words).tolist()
    answers = [""] * len(lines)
    for row, i in enumerate(asked):
        answers[i] = f"{display_log10(logp[row])}\t{display_log10(maxp[row])}"
    return answers


DISPLAY_DIGITS = 12


def display_log10(value: float) -> str:
    """A value for people to read: the shortest text of the value rounded to 12 significant
    digits, so a sum of ARPA numbers prints as `-18.073253906`, not `-18.073253905999998` (the
    float64 sum's last-bit error). ARPA files carry at most about 8 significant digits, so
    nothing they say is lost. Files use `format_log10`, which round-trips exactly."""
    if not math.isfinite(value):
        return format_log10(value) if value == -math.inf else repr(value)
    if value == 0.0:
        return "0"
    return repr(float(f"{value:.{DISPLAY_DIGITS}g}"))


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
        return (f"Perplexity including OOVs:\t{display_log10(with_oov)}\n"
                f"Perplexity excluding OOVs:\t{display_log10(without)}\n"
                f"OOVs:\t{self.oov}\nTokens:\t{self.tokens}")


def _perplexity(log10p: float, tokens: int) -> float:
    if tokens == 0:
        return math.nan
    return 10.0 ** (-log10p / tokens)


def sentence_answers(model: Model, lines: list[list[str]], totals: Totals) -> list[str]:
    """KenLM's per-sentence line for each line of tokens (an empty one is the empty sentence:
    only </s> is scored), each sentence added to `totals`."""
    width = max(model.order - 1, 0)
    bos = model.word_id(BOS)
    sentences = [[model.word_id(w) for w in [*tokens, EOS]] for tokens in lines]
    count = sum(len(ids) for ids in sentences)
    ctx = np.full((count, width), -1, dtype=np.int64)
    words = np.empty(count, dtype=np.int64)
    row = 0
    for ids in sentences:
        history = [bos, *ids]
        for i, wid in enumerate(ids):
            recent = history[max(0, i + 1 - width): i + 1] if width else []
            if recent:
                ctx[row, width - len(recent):] = recent
            words[row] = wid
            row += 1
    logp = model.log10p_batch(ctx, words).tolist()
    lengths = model.longest_match(ctx, words).tolist()
    answers, row = [], 0
    for tokens, ids in zip(lines, sentences):
        cells, total, oov = [], 0.0, 0
        for word, wid in zip([*tokens, EOS], ids):
            p = logp[row]
            cells.append(f"{word}={wid} {lengths[row]} {display_log10(p)}")
            total += p
            if wid == model.unk_id:  # KenLM: a word scored as <unk> is an OOV
                oov += 1
                totals.oov_log10p += p
            row += 1
        totals.log10p += total
        totals.oov += oov
        totals.tokens += len(ids)
        answers.append("\t".join(cells) + f"\tTotal: {display_log10(total)} OOV: {oov}")
    return answers
