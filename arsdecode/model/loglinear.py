"""`LogLinearLM`: a log-linear combination of n-gram models and n-gram indicator features (the
form of a trans-dimensional random-field LM, Wang, Ou and Tan), as an unnormalised target.

Why a target of its own: a random-field LM scores a sentence x (with `<s>` and `</s>`) by

    score(x) = sum_i alpha_i ln p_i(x) + sum_f lambda_f f(x)          (natural log)

where the p_i are backoff n-gram models (alpha_i > 0) and each f counts the occurrences of an
n-gram pattern in `<s> x </s>`. Its normaliser is not known, but ARS needs only an unnormalised
target with bounds: decoding is exact, samples follow exp(score(x) + emissions(x)) / Z, and the
sampler's ln Z estimate is the log normaliser over the lattice. Over a lattice whose every
position holds the whole vocabulary (`arsdecode.api.fixed_length_lattice`) that is the
normaliser at that length, which random-field training estimates.

Features (file `ngram<TAB>weight`, read by `feature_file.read_features`): words separated by
spaces; `*` stands for any one word (a skip), so `a * c` fires on `a b c`, `a x c`, ...: the
skip-n-grams of that paper. A pattern starts and ends with a word; `<s>` may only start it,
`</s>` only end it (it could never match elsewhere). Weights are natural-log, either sign, at
most `model.limits`'s LARGEST_LN in magnitude (a path's score must not overflow). A pattern
word missing from the vocabulary can never match (tokens outside it are read as `<unk>`): the
feature is dropped and counted in `dropped_features`.

The factor at a position, for the word w after the history h:

    ln phi(w | h) = sum_i alpha_i ln p_i(w | h) + sum_{f ending at w in h w} lambda_f

so the factors of a sentence add up to score(x). The length prior ln pi(|x|) of the paper is
not a factor: every path of a confusion network has the network's length, so it is a constant
per lattice, added to ln Z by the caller (`log_length_prior`).

The bound (`log_bound`, over every left extension z of a context c) is

    sum_i alpha_i bound_i(c, w) + A(c, w) + B(c, w)

where bound_i is component i's own max-backoff bound (alpha_i > 0 keeps it a bound, and a sum
of maxima bounds the maximum of the sum), A(c, w) is the weight of the features that fit
inside c w (fixed by c), and B(c, w) is the best weight obtainable from the longer features by
choosing z. With F(c, w) the features ending at w that are longer than c w and agree with c
where they overlap it (a `*` agrees with anything), B is a max recurrence over one more word v
to the left, like maxarpa's mbow:

    B(c, w) = max(0,  max_v [ sum_{f in F(c, w), |f| = |c| + 2, f_1 = v} lambda_f + B(v c, w) ])

The 0 is z ending there (or continuing with words no feature names), so a negative feature is
avoided whenever some extension avoids it: absence counts as 0. Only finitely many v matter:
the words the features of F(c, w) name at v's place, and one stand-in (`OTHER`) for every other
word, which matches only `*`. The recurrence stops when F(c, w) is empty (B = 0). B is the
exact maximum over extensions, memoised per (c, w); tests check it against a brute-force max
over every extension, including words absent from every table.

Exactness and the cut: with m = the longest pattern minus one, the features at a position are
fixed by the last m words of the history. A context is exact when it is exact for every
component and it holds m words or the whole history (`<s>` first, position + 1 words).
`minimal_context` keeps, per row, the longest of the components' cuts and the last m words,
which satisfies both properties `TargetModel` asks for because each part does.

The components may have different vocabularies: ids are the first component's, and each other
component reads a word through a translation table (a word it lacks is its `<unk>`; without an
`<unk>` maxarpa's one-line error names the word). The target has no `.ngram` (a DP over one
table's states would ignore the features).

The compiled full DP (issue 34, `methods.fast_loglinear`, which argues it): a skip `a * c`
would need a fixed state (a, v) for every word v, so the states are made on demand, the
longest suffix of the history that is a component's useful context or a pattern's proper
prefix. Its word-lattice DP reads `word_to_id` and `unk_id` (the first component's).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from arsdecode.errors import ModelError, OptionError
from arsdecode.model.feature_file import SKIP, Feature, as_features
from arsdecode.model.feature_file import parse_feature as parse_feature  # re-exported: it
from arsdecode.model.feature_file import read_features as read_features  # lived here
from arsdecode.model.interface import ModelLike, TargetModel, ngram_tables
from arsdecode.model.maxarpa_lm import as_target_model
from maxarpa.constants import BOS, EOS

OTHER = -2
"""The stand-in id, in the bound's recurrence, for a word that no feature names there."""
_ANY = -3
"""A skip's id inside a compiled pattern."""
DENSE_TABLE_ENTRIES = 2**22
"""The largest dense lookup array of one feature shape (32 MiB of float64): every bigram of a
2,048-word vocabulary."""


class FeatureTable:
    """Compiled features over word ids: the sum at a (context, word) and its bound.

    `shapes` groups the patterns by (span, skip positions); per shape a dict maps the ids at
    the pattern's word positions (oldest first, the predicted word last) to the summed weight.
    Why also `coded`: the full DP scores every (state, word) pair, millions of rows, so a
    shape whose keys fit an int64 (ids in base `vocab_size`) is looked up for all rows at
    once: by direct indexing into a dense array of every code when that array is small
    (`DENSE_TABLE_ENTRIES`: unigram, bigram and skip-bigram shapes of a vocabulary of a few
    thousand words; a gather is about 4x faster than the search), else by binary search in
    its sorted codes; a wider shape uses the dict, row by row.
    `by_last` lists, per predicted word, the compiled patterns (ids, `_ANY` for a skip) for
    the bound's recurrence.
    """

    def __init__(self, patterns: Sequence[tuple[tuple[int, ...], float]],
                 vocab_size: int) -> None:
        self.vocab_size = max(int(vocab_size), 1)
        self.span = max((len(p) for p, _ in patterns), default=0)
        shapes: dict[tuple[int, tuple[int, ...]], dict[tuple[int, ...], float]] = {}
        self.by_last: dict[int, list[tuple[tuple[int, ...], float]]] = {}
        for ids, weight in patterns:
            keep = tuple(j for j, t in enumerate(ids) if t != _ANY)
            key = tuple(ids[j] for j in keep)
            table = shapes.setdefault((len(ids), keep), {})
            table[key] = table.get(key, 0.0) + weight
            self.by_last.setdefault(ids[-1], []).append((ids, weight))
        self.shapes = shapes
        self.coded: dict[tuple[int, tuple[int, ...]], tuple[np.ndarray, np.ndarray]] = {}
        self.dense: dict[tuple[int, tuple[int, ...]], np.ndarray] = {}
        for shape, table in shapes.items():
            if self.vocab_size ** len(shape[1]) < 2**62:
                codes = np.array([self._code(np.array([key], dtype=np.int64))[0]
                                  for key in table], dtype=np.int64)
                weights = np.array(list(table.values()), dtype=np.float64)
                order = np.argsort(codes)
                self.coded[shape] = (codes[order], weights[order])
                if self.vocab_size ** len(shape[1]) <= DENSE_TABLE_ENTRIES:
                    dense = np.zeros(self.vocab_size ** len(shape[1]), dtype=np.float64)
                    dense[codes] = weights
                    self.dense[shape] = dense
        self._memo: dict[tuple[tuple[int, ...], int], float] = {}
        named: dict[int, set[int]] = {}  # distance before w -> codes v * V + w of named words
        for w, listed in (self.by_last.items() if self.vocab_size ** 2 < 2**62 else ()):
            for ids, _ in listed:
                for d in range(1, len(ids)):
                    if ids[-1 - d] != _ANY:
                        named.setdefault(d, set()).add(ids[-1 - d] * self.vocab_size + w)
        self._named = {d: np.array(sorted(c), dtype=np.int64) for d, c in named.items()}

    def value(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        """Per row, the weight of the features ending at the word within context + word
        (a feature reaching into the -1 padding does not fire)."""
        out = np.zeros(len(words), dtype=np.float64)
        if not self.shapes or len(words) == 0:
            return out
        width = contexts.shape[1]
        full = np.concatenate([contexts, np.asarray(words, dtype=np.int64)[:, None]], axis=1)
        for (span, keep), table in self.shapes.items():
            if span - 1 > width:
                continue
            cols = [width + 1 - span + j for j in keep]
            part = full[:, cols]
            ok = (full[:, width + 1 - span] >= 0)  # the pattern's first word is in the context
            if (span, keep) in self.dense:
                row_codes = np.where(ok, self._code(part), 0)
                out += np.where(ok, self.dense[(span, keep)][row_codes], 0.0)
                continue
            if (span, keep) in self.coded:
                codes, weights = self.coded[(span, keep)]
                row_codes = np.where(ok, self._code(part), -1)
                at = np.minimum(np.searchsorted(codes, row_codes), len(codes) - 1)
                out += np.where(codes[at] == row_codes, weights[at], 0.0)
                continue
            get = table.get
            hits = [get(tuple(r), 0.0) if good else 0.0
                    for r, good in zip(part.tolist(), ok.tolist(), strict=True)]
            out += np.asarray(hits, dtype=np.float64)
        return out

    def _code(self, ids: np.ndarray) -> np.ndarray:
        """Each row of ids (B, k) as one int64, base vocab_size (padding rows: garbage, masked
        by the caller)."""
        out = np.zeros(len(ids), dtype=np.int64)
        for j in range(ids.shape[1]):
            out = out * self.vocab_size + ids[:, j]
        return out

    def bound(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        """Per row, A(c, w) + B(c, w) (module docstring): the max of the feature weight over
        every left extension of the context's words (its -1 padding is where z goes).

        A is `value` (the features inside c w); B is 0 for a context of span - 1 words or
        more (no feature reaches past it), so only shorter rows walk the recurrence. Those
        rows are first made canonical (`_canonical`), which maps the many contexts a lattice
        holds onto the few the features tell apart, so the recurrence runs once per distinct
        canonical (context, word), not once per row."""
        out = self.value(contexts, words)
        if self.span <= 1 or len(words) == 0:
            return out
        tail = contexts[:, contexts.shape[1] - (self.span - 1):]
        short = np.flatnonzero((tail < 0).any(axis=1))
        if len(short) == 0:
            return out
        keys = np.concatenate([self._canonical(tail[short], np.asarray(words)[short]),
                               np.asarray(words)[short, None]], axis=1)
        base = self.vocab_size + 2  # a key holds OTHER (-2), padding (-1) and ids
        if base ** keys.shape[1] < 2**62:  # one int64 per row: a 1-d unique is ~20x faster
            codes = np.zeros(len(keys), dtype=np.int64)
            for j in range(keys.shape[1]):
                codes = codes * base + (keys[:, j] + 2)
            _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
            unique = keys[first]
        else:
            unique, inverse = np.unique(keys, axis=0, return_inverse=True)
        extra = np.array([self.extension_max(tuple(t for t in row[:-1] if t != -1), row[-1])
                          for row in unique.tolist()], dtype=np.float64)
        out[short] += extra[inverse.reshape(-1)]
        return out

    def _canonical(self, tail: np.ndarray, words: np.ndarray) -> np.ndarray:
        """`tail` (rows of context words, -1 padding on the left) with every word that no
        feature ending at the row's word names at that distance replaced by `OTHER`.

        Why B is unchanged: a feature agrees with such a word only through a `*` there,
        which agrees with `OTHER` too, and disagrees with both otherwise; so the features
        F(c, w) of the recurrence, and B(c, w), are the same for the canonical context."""
        out = tail.copy()
        if self.vocab_size ** 2 >= 2**62:  # (word, word) codes would overflow: keep the words
            return out
        k = tail.shape[1]
        for j in range(k):
            col = tail[:, j]
            named = self._named.get(k - j)
            codes = np.where(col >= 0, col, 0) * self.vocab_size + words
            hit = (np.isin(codes, named) if named is not None else
                   np.zeros(len(col), dtype=bool))
            out[:, j] = np.where(col < 0, -1, np.where(hit, col, OTHER))
        return out

    def extension_max(self, ctx: tuple[int, ...], w: int,
                      pool: Sequence[tuple[tuple[int, ...], float]] | None = None) -> float:
        """B(c, w): the best weight of the features longer than c w, over every left
        extension of c (the recurrence of the module docstring, memoised).

        `pool`: features that hold every one F(c, w) may (the caller's own F, when it
        recurses one word further left), so a deep call filters a few features instead of
        every feature ending at w."""
        key = (ctx, w)
        known = self._memo.get(key)
        if known is not None:
            return known
        n = len(ctx) + 1  # words fixed: c w
        fixed = (*ctx, w)
        longer = [(ids, weight) for ids, weight in (self.by_last.get(w, ()) if pool is None
                                                    else pool)
                  if len(ids) > n and _agrees(ids[len(ids) - n:], fixed)]
        best = 0.0
        if longer:
            here: dict[int, float] = {}  # v -> weight of the features exactly v c w
            named: dict[int, list[tuple[tuple[int, ...], float]]] = {OTHER: []}
            skips: list[tuple[tuple[int, ...], float]] = []  # a `*` at v's place
            for ids, weight in longer:
                v = ids[len(ids) - n - 1]
                if v == _ANY:
                    skips.append((ids, weight))
                    continue
                reach = named.setdefault(v, [])
                if len(ids) == n + 1:  # a feature starts with a word, never a skip
                    here[v] = here.get(v, 0.0) + weight
                else:
                    reach.append((ids, weight))
            for v, reach in named.items():  # F(v c, w) is within `reach` and the skips
                deeper = (self.extension_max((v, *ctx), w, reach + skips) if reach or skips
                          else 0.0)
                best = max(best, here.get(v, 0.0) + deeper)
        self._memo[key] = best
        return best


def _agrees(pattern: Sequence[int], words: Sequence[int]) -> bool:
    """Whether `words` (ids, or OTHER) fit `pattern` (ids, `_ANY` for a skip) position by
    position."""
    return all(p == _ANY or p == t for p, t in zip(pattern, words, strict=True))


class LogLinearLM:
    """`TargetModel` for sum_i alpha_i ln p_i + n-gram feature weights (module docstring).

    `models`: maxarpa Models (or targets with n-gram tables), at least one; `alphas`: one
    finite weight > 0 each; `features`: a path to a `ngram<TAB>weight` file, a mapping
    {"w1 * w3": weight}, `Feature` objects, or None; `length_prior`: optional ln pi(length)
    per sentence length (`log_length_prior`). All values are natural log; the score is
    unnormalised.
    """

    def __init__(self, models: Sequence[ModelLike], alphas: Sequence[float] | None = None, *,
                 features: str | Path | Mapping[str, float] | Iterable[Feature] | None = None,
                 length_prior: Mapping[int, float] | None = None) -> None:
        if not models:
            raise OptionError("a log-linear model needs at least one component model")
        weights = [1.0] * len(models) if alphas is None else [float(a) for a in alphas]
        if len(weights) != len(models):
            raise OptionError(f"{len(models)} models but {len(weights)} alphas")
        for a in weights:
            if not (math.isfinite(a) and a > 0):
                raise OptionError(f"every alpha must be a finite number > 0, not {a!r}")
        self.components: list[TargetModel] = [as_target_model(m) for m in models]
        self.alphas = weights
        first = ngram_tables(self.components[0])
        if first is None:
            raise ModelError("the first component of a log-linear model must be an n-gram "
                             "model (its vocabulary is the target's)")
        self.vocab: list[str] = list(first.vocab)
        self._index = {w: i for i, w in enumerate(self.vocab)}
        self.word_to_id: dict[str, int] = self._index
        self.unk_id: int | None = first.unk_id
        self._maps: list[np.ndarray | None] = [None]
        for comp in self.components[1:]:
            self._maps.append(np.asarray(comp.ids(self.vocab), dtype=np.int64))
        self.bos = self.components[0].bos
        self.eos = self.components[0].eos
        self.features: list[Feature] = as_features(features)
        compiled: list[tuple[tuple[int, ...], float]] = []
        self.dropped_features = 0
        for f in self.features:
            ids = tuple(_ANY if t == SKIP else self._index.get(t, OTHER) for t in f.pattern)
            if OTHER in ids:
                self.dropped_features += 1
            else:
                compiled.append((ids, f.weight))
        self.table = FeatureTable(compiled, len(self.vocab))
        self.span = self.table.span
        self.order = max([c.order for c in self.components] + [self.span])
        self.length_prior = dict(length_prior or {})

    def __repr__(self) -> str:
        return (f"LogLinearLM({len(self.components)} models, alphas={self.alphas}, "
                f"{len(self.features)} features)")

    def vocabulary(self) -> list[str]:
        """Every word a sentence may hold (the vocabulary without `<s>` and `</s>`)."""
        return [w for w in self.vocab if w not in (BOS, EOS)]

    def log_length_prior(self, length: int) -> float:
        """ln pi(length) (0 without a prior; -inf for a length the prior does not list)."""
        if not self.length_prior:
            return 0.0
        return float(self.length_prior.get(length, -math.inf))

    # ----- TargetModel ------------------------------------------------------------------------
    def ids(self, tokens: Sequence[str]) -> np.ndarray:
        return self.components[0].ids(tokens)

    def word(self, word_id: int) -> str:
        return self.vocab[word_id]

    def _parts(self, contexts: np.ndarray, words: np.ndarray):
        """Per component: its contexts (last order - 1 columns, ids translated) and words."""
        words = np.asarray(words, dtype=np.int64)
        for comp, table in zip(self.components, self._maps, strict=True):
            width = comp.order - 1
            ctx = contexts[:, contexts.shape[1] - width:] if width else contexts[:, :0]
            if table is not None:
                ctx = np.where(ctx >= 0, table[np.maximum(ctx, 0)], -1)
                yield comp, ctx, table[words]
            else:
                yield comp, ctx, words

    def log_prob(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        contexts = np.asarray(contexts, dtype=np.int64)
        total = self.table.value(contexts, words)
        for alpha, (comp, ctx, w) in zip(self.alphas, self._parts(contexts, words),
                                         strict=True):
            total = total + alpha * comp.log_prob(ctx, w)
        return total

    def log_bound(self, contexts: np.ndarray, words: np.ndarray) -> np.ndarray:
        contexts = np.asarray(contexts, dtype=np.int64)
        total = self.table.bound(contexts, words)
        for alpha, (comp, ctx, w) in zip(self.alphas, self._parts(contexts, words),
                                         strict=True):
            total = total + alpha * comp.log_bound(ctx, w)
        return total

    def is_exact(self, position: int, context: Sequence[int]) -> bool:
        n = len(context)
        whole = n == position + 1 and n > 0 and context[0] == self.bos
        if not (whole or n >= self.span - 1):
            return False
        for comp, table in zip(self.components, self._maps, strict=True):
            ctx = list(context) if table is None else [int(table[t]) for t in context]
            if not comp.is_exact(position, ctx):
                return False
        return True

    def minimal_context(self, contexts: np.ndarray) -> np.ndarray:
        contexts = np.asarray(contexts, dtype=np.int64)
        width = contexts.shape[1]
        keep = np.full(len(contexts), min(max(self.span - 1, 0), width), dtype=np.int64)
        for comp, ctx, _ in self._parts(contexts, np.full(len(contexts), self.eos)):
            if ctx.shape[1]:
                kept = (comp.minimal_context(ctx) >= 0).sum(axis=1)
                keep = np.maximum(keep, kept)
        out = contexts.copy()
        cols = np.arange(width)[None, :]
        out[cols < (width - keep)[:, None]] = -1
        return out
