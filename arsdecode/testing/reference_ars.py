"""A plain, obvious pure-Python ARS exact decoder: the oracle and the speed baseline.

Same method as `arsdecode.methods.ars.decode` with the default "all-edges" refinement
(Algorithm 1 for decoding, Algorithm 2 for refinement), written the way one would write it
first: the n-gram table is a dict of id tuples, every language-model value is one Python call,
the q-automaton is a dict of contexts per layer, an edge's target is found by trying the
suffixes of `context + word` from the longest, and every iteration runs the whole Viterbi pass
again. Nothing here is vectorised or incremental, and nothing comes from arsdecode's engine
(methods, core, model): only the certificate's tolerance and the errors are shared, so that
both decoders stop and fail by the same rule. `bench/bench_sms_decode.py` compares the engine
with it on the same lattices, in the same run; results (log p, tokens, iterations) agree
(tests/test_testing.py).

    ref = decode(DictLM(model), lattice.tokens, [e.tolist() for e in lattice.log_emissions])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from arsdecode.core.tolerances import CERTIFICATE_TOL
from arsdecode.errors import ModelError, NoPathError
from maxarpa.constants import LN10
from maxarpa.model import Model


class DictLM:
    """The n-gram table of a maxarpa.Model as a dict: id tuple -> (log10p, bow, mf, mbow).

    It holds listed and blank (suffix-closing) n-grams, as maxarpa's trie does, and answers
    queries with maxarpa's definitions, one (context, word) at a time.
    """

    def __init__(self, model: Model) -> None:
        if model.bos_id is None or model.eos_id is None:
            raise ModelError(f"{model.source or 'model'}: no <s> or </s> in the vocabulary; "
                             "the sentence boundaries are needed to score a path")
        self.order = model.order
        self.bos: int = model.bos_id
        self.eos: int = model.eos_id
        self._word_id = model.word_id
        self.table: dict[tuple[int, ...], tuple[float, float, float, float]] = {}
        for node in model.trie.nodes:
            for row, p, b, mf, mb in zip(node.rows.tolist(), node.log10p.tolist(),
                                         node.log10bow.tolist(), node.mf.tolist(),
                                         node.mbow.tolist(), strict=True):
                self.table[tuple(row)] = (p, b, mf, mb)

    def word_id(self, word: str) -> int:
        """The model's id of `word` (<unk> for an unknown word, as the engine reads it)."""
        return self._word_id(word)

    def log10p(self, context: tuple[int, ...], word: int) -> float:
        return self._query(context, word, want_max=False)

    def max_log10p(self, context: tuple[int, ...], word: int) -> float:
        return self._query(context, word, want_max=True)

    def _query(self, context: tuple[int, ...], word: int, want_max: bool) -> float:
        context = context[-(self.order - 1):] if self.order > 1 else ()
        # Longest listed-or-blank n-gram v + (word,) with v a suffix of the context.
        matched = 0
        entry = self.table[(word,)]
        for j in range(1, len(context) + 1):
            found = self.table.get(context[-j:] + (word,))
            if found is None:
                break
            matched, entry = j, found
        # Backoffs of the context suffixes longer than v.
        bow_sum = 0.0
        ctx_found = 0
        ctx_entry = None
        for j in range(1, len(context) + 1):
            found = self.table.get(context[-j:])
            if found is None:
                break
            ctx_found, ctx_entry = j, found
            if j > matched:
                bow_sum += found[1]
        logp = entry[0] + bow_sum
        if not want_max:
            return logp
        if matched == len(context):
            return entry[2]
        if ctx_found == len(context) and ctx_entry is not None:
            return logp + (ctx_entry[3] - ctx_entry[1])
        return logp


@dataclass
class RefResult:
    """The decoded path and the effort, as `arsdecode.methods.ars.DecodeResult` counts it."""

    tokens: list[str]
    log_p: float
    log_q: float
    iterations: int
    states: int


def decode(lm: DictLM, tokens: Sequence[Sequence[str]], emissions: Sequence[Sequence[float]],
           tol: float = CERTIFICATE_TOL, max_iterations: int = 100_000) -> RefResult:
    """Exact argmax of p over a lattice (`tokens[i][j]` with ln emission `emissions[i][j]`)."""
    L = len(tokens)
    n1 = lm.order - 1
    cand = [[lm.word_id(t) for t in pos] for pos in tokens]
    layers: list[dict[tuple[int, ...], list[float]]] = [{} for _ in range(L + 1)]

    def is_exact(i: int, ctx: tuple[int, ...]) -> bool:
        return len(ctx) >= n1 or len(ctx) == i + 1

    def add_state(i: int, ctx: tuple[int, ...]) -> None:
        query = lm.log10p if is_exact(i, ctx) else lm.max_log10p
        if i == L:
            layers[i][ctx] = [LN10 * query(ctx, lm.eos)]
        else:
            layers[i][ctx] = [LN10 * query(ctx, w) + e for w, e in zip(cand[i], emissions[i])]

    def target(i: int, ctx: tuple[int, ...], word: int) -> tuple[int, ...]:
        full = ctx + (word,)
        for k in range(min(len(full), n1), 0, -1):
            suffix = full[len(full) - k:]
            if suffix in layers[i + 1]:
                return suffix
        return ()  # the empty context is a state of every layer after the first

    def log_p(path: list[int]) -> float:
        hist = [lm.bos]
        total = 0.0
        for i, j in enumerate(path):
            total += LN10 * lm.log10p(tuple(hist[-n1:]) if n1 else (), cand[i][j]) + emissions[i][j]
            hist.append(cand[i][j])
        return total + LN10 * lm.log10p(tuple(hist[-n1:]) if n1 else (), lm.eos)

    add_state(0, (lm.bos,))
    for i in range(1, L + 1):
        add_state(i, ())
    iteration = 0
    while True:
        iteration += 1
        # Viterbi: best completion of every state, layer by layer from the end.
        best: list[dict[tuple[int, ...], float]] = [{} for _ in range(L + 1)]
        best[L] = {ctx: ws[0] for ctx, ws in layers[L].items()}
        for i in range(L - 1, -1, -1):
            for ctx, ws in layers[i].items():
                best[i][ctx] = max(w + best[i + 1][target(i, ctx, x)]
                                   for w, x in zip(ws, cand[i]))
        # Follow the argmax forward from <s>.
        path: list[int] = []
        states: list[tuple[int, ...]] = [(lm.bos,)]
        log_q = 0.0
        for i in range(L):
            ctx = states[-1]
            ws = layers[i][ctx]
            scores = [w + best[i + 1][target(i, ctx, x)] for w, x in zip(ws, cand[i])]
            j = scores.index(max(scores))
            path.append(j)
            log_q += ws[j]
            states.append(target(i, ctx, cand[i][j]))
        log_q += layers[L][states[-1]][0]
        lp = log_p(path)
        if log_q == -math.inf:
            raise NoPathError("every path of the lattice has probability 0 under the model")
        if log_q - lp <= tol or iteration >= max_iterations:
            break
        # Algorithm 2: one word longer context at every inexact state along the path.
        history = [lm.bos] + [cand[i][j] for i, j in enumerate(path)]
        prev: tuple[int, ...] = (lm.bos,)
        changed = False
        for i in range(1, L + 1):
            ctx = target(i - 1, prev, cand[i - 1][path[i - 1]])
            if not is_exact(i, ctx):
                new = tuple(history[i - len(ctx): i + 1])
                if new not in layers[i]:
                    add_state(i, new)
                    changed = True
                ctx = target(i - 1, prev, cand[i - 1][path[i - 1]])
            prev = ctx
        if not changed:
            break
    return RefResult(
        tokens=[tokens[i][j] for i, j in enumerate(path)],
        log_p=lp,
        log_q=log_q,
        iterations=iteration,
        states=sum(len(layer) for layer in layers),
    )
