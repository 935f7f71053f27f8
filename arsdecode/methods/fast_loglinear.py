"""The compiled full DP of a log-linear target (`LogLinearLM`: n-gram models and n-gram
feature weights, skips `*` included): its tables for `arsdecode.native._core.FullDP` with an
`LlCore`, its states made on demand.

Why on demand (issue 34): the factor of w after h is sum_i alpha_i ln p_i(w | h) plus the
weights of the patterns that end at w. Without skips a fixed table would serve it, the
longest of the components' useful contexts and the patterns' prefixes, as a mixture's union
does. A skip `a * c` makes the word two back matter whatever word stands between, so a fixed
table needs the state (a, v) for every skip head a and every word v: millions on the SMS
bench (hundreds of heads, 11k words). A per-lattice table restricted to the lattice's words
was the other candidate, but an SMS keypad lattice holds 1.5k-6.7k distinct words, so its
products are as large, while the pruned DP visits tens to hundreds of states. Hence the
states are made when the DP first reaches them (`_loglinear.pxi`, `ll_step`), per worker,
and kept with its transition cache.

The claim behind the states: let P be the set of contexts that are a useful context of some
component (its longest useful suffix decides p_i, arsdecode.methods.full) or a proper prefix
of a pattern (its words, its `*`s matching any word). P is prefix-closed. A state is cut(h),
the longest suffix of h in P; then
  - the factor of every next word w is fixed by cut(h): each component's cut is a suffix of
    it, and a pattern firing at w has its prefix (the words before w) in P as a suffix of h,
    so within cut(h); a pattern whose first word falls outside cut(h) cannot fire, since
    otherwise that longer prefix would be the cut;
  - cut(h + w) = the longest suffix of cut(h) + w in P: a suffix s + w of h + w in P has s
    in P (prefix-closed), a suffix of h, hence within cut(h). `ll_step` computes it as the
    longest of each component's own cut (`uc_cut_append` on that component's useful-context
    state, kept per state) and the longest matching pattern prefix.
So the DP over these states is the full DP over histories, as for one n-gram table.

The bounds are LogLinearLM.log_bound's after one word: sum_i alpha_i bound_i(x, y) plus the
features' A + B (FeatureTable.bound) over every left extension; computed here once per model
for the empty context and for a word no feature ending in y names before y (`fb_other`),
and per named pair (x, y) (a bigram pattern x y, or a longer one with x just before y).
The sparse backward bound pass (`ll_backward`, one component in the target's ids) tightens
the unnamed pairs: the word two before y is one of the words the confusion network holds
there, so the recurrence's first step maxes over those only (`skip_tables`, `ll_other_at`).
Why: with the bench's 2,000 skip-bigrams nearly every y ends some positive skip, which the
bound over every word adds to every pair; restricted, the largest of 16 bench lattices kept
23% fewer states (21,803 -> 16,838, feature weights N(0, 1)). The skips still cost most of
the states the features add (the bench's weights, N(0, 0.3), on that lattice: 2,893 states
with every feature, 729 without the skips, 633 plain).

Memory: a worker keeps its states between runs (they are the ids its transition cache
holds), at most 2^18 (`_core.ll_reset_states`), then empties both before its next run;
within a run they grow with the states the DP visits (auto's pair budget bounds those).

What runs where: factors and bounds in C (`LlCore`), with LogLinearLM's own values: the
features summed per shape in FeatureTable's order, then each component's compiled walk
(NgramCore, the walk its MaxArpaLM queries), so they agree with log_prob to rounding (the
tests check 1e-12). Not compiled (`compilable`): a component that is not a plain maxarpa
model's adapter (a custom walk, a weighted model), more than 8 components, a pattern of
more than 16 words, or codes that overflow int64: those run ARS or the numpy DP.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from arsdecode.methods.compiled_kinds import SkiRental
from arsdecode.methods.fast_mixture import vocabulary_core
from arsdecode.model.loglinear import _ANY, OTHER, LogLinearLM
from arsdecode.model.maxarpa_lm import MaxArpaLM
from arsdecode.native import _core, native_ngram
from maxarpa.contexts import EMPTY_KEY, has_stored_tables, useful_context_tables

_DP: weakref.WeakKeyDictionary[LogLinearLM, _core.FullDP | None] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()

MAX_COMPONENTS = 8  # = _loglinear.pxi's LL_MAX
MAX_PATTERN_WORDS = 16  # = LL_MAX_KEEP

SETUP_NGRAMS_PER_FEATURE = 20
"""auto's setup estimate per feature, in cost_model.setup_seconds's n-grams (the bound
tables: about 10-20 us a feature; 0.1 CPU-s for the bench's 6,000)."""
PAIR_TIME_FACTOR = 1.5
"""The compiled DP's time per pair on a log-linear target over one table's: each miss also
makes or finds its state and sums the features (1.2-1.5x on the SMS bench lattices with no
feature, same pairs)."""
ARS_TIME_FACTOR = 6.0
"""ARS's time on a log-linear target over its time on its first component alone (bench_targets,
SMS lattices, the bench's feature file: 5.9-6.9x mean)."""


charge = SkiRental().charge
"""auto's ski-rental account of this kind (`compiled_kinds.SkiRental`)."""


def compilable(lm: LogLinearLM) -> bool:
    """Whether `LlCore` takes `lm` (the module docstring's list)."""
    if not 1 <= len(lm.components) <= MAX_COMPONENTS or lm.order > _core.MAX_ORDER:
        return False
    for comp in lm.components:
        if type(comp) is not MaxArpaLM or comp.walk is not None:
            return False
    table = lm.table
    for (span, keep) in table.shapes:
        if len(keep) > MAX_PATTERN_WORDS or (span, keep) not in table.coded:
            return False
    return True


def setup_ngrams(lm: LogLinearLM) -> int:
    """What building `loglinear_dp(lm)` costs, in units of cost_model.setup_seconds: the
    components' useful-context tables when not stored, and the features' bound tables."""
    if lm in _DP:
        return 0
    models = [c.ngram for c in lm.components if isinstance(c, MaxArpaLM)]
    return (sum(sum(m.counts) for m in models if not has_stored_tables(m))
            + SETUP_NGRAMS_PER_FEATURE * len(lm.features))


def is_built(lm: LogLinearLM) -> bool:
    return lm in _DP


def _shapes(lm: LogLinearLM) -> list[tuple[int, list[int], np.ndarray, np.ndarray]]:
    """The feature shapes (span, word positions, sorted codes, weights), FeatureTable's."""
    return [(span, list(keep), *lm.table.coded[(span, keep)]) for (span, keep) in lm.table.shapes]


def _prefixes(lm: LogLinearLM) -> list[tuple[int, list[int], np.ndarray]]:
    """The patterns' proper prefixes as shapes (span k, the positions of their words, their
    sorted codes), longest first: a prefix ending in `*` still needs the words before it."""
    vocab = lm.table.vocab_size
    grouped: dict[tuple[int, tuple[int, ...]], set[int]] = {}
    for listed in lm.table.by_last.values():
        for ids, _ in listed:
            for k in range(1, len(ids)):
                head = ids[:k]
                keep = tuple(j for j, t in enumerate(head) if t >= 0)
                code = 0
                for j in keep:
                    code = code * vocab + head[j]
                grouped.setdefault((k, keep), set()).add(code)
    out = [(k, list(keep), np.array(sorted(codes), dtype=np.int64))
           for (k, keep), codes in grouped.items()]
    out.sort(key=lambda s: -s[0])
    return out


def feature_bounds(lm: LogLinearLM) -> tuple[np.ndarray, ...]:
    """The features' bound after one word (FeatureTable.bound of the context [x], and of the
    empty context), as LlTables holds it: per word y the bound after no word (`fb_empty`) and
    after a word no feature ending in y names just before it (`fb_other`: the recurrence with
    `OTHER` there); the named pairs (x, y) as CSR by x with their bounds; then `fb_other`'s
    parts (`skip_tables`)."""
    table = lm.table
    vocab = table.vocab_size
    width = max(table.span - 1, 1)
    ys = np.arange(vocab, dtype=np.int64)
    uni = table.value(np.full((vocab, width), -1, dtype=np.int64), ys)  # unigram patterns
    fb_empty, fb_other = uni.copy(), uni.copy()
    for y in table.by_last:  # the recurrence is 0 for a word that ends no pattern
        fb_empty[y] += table.extension_max((), y)
        fb_other[y] += table.extension_max((OTHER,), y)
    codes = table._named.get(1, np.empty(0, dtype=np.int64))  # x * V + y, ascending
    xs, ys_named = codes // vocab, codes % vocab
    ctx = np.full((len(codes), width), -1, dtype=np.int64)
    ctx[:, -1] = xs
    named_fb = table.bound(ctx, ys_named) if len(codes) else np.empty(0)
    named_off = np.zeros(vocab + 1, dtype=np.int64)
    np.cumsum(np.bincount(xs, minlength=vocab), out=named_off[1:])
    return (np.ascontiguousarray(fb_empty), np.ascontiguousarray(fb_other), named_off,
            np.ascontiguousarray(ys_named, dtype=np.int64), np.ascontiguousarray(named_fb),
            np.ascontiguousarray(uni), *skip_tables(lm))


def skip_tables(lm: LogLinearLM) -> tuple[np.ndarray, ...]:
    """fb_other[y]'s recurrence split by the word v two before y (its first step: the module
    docstring of model.loglinear), for the sparse bound pass to restrict v to the words a
    lattice holds there (`_loglinear.pxi`, `ll_other_at`): per y, CSR of (v, B_v) for the
    words the features named there, B_v = the weight of the features v * y plus the
    recurrence below v; and rest[y], the same for a word no feature names there. Then
    B(OTHER, y) = max(0, max_v B_v, rest[y])."""
    table = lm.table
    vocab = table.vocab_size
    rest = np.zeros(vocab)
    per_y: dict[int, list[tuple[int, float]]] = {}
    for y, listed in table.by_last.items():
        longer = [(ids, w) for ids, w in listed if len(ids) > 2 and ids[-2] == _ANY]
        if not longer:
            continue
        here: dict[int, float] = {}
        for ids, w in longer:
            if len(ids) == 3:
                here[ids[0]] = here.get(ids[0], 0.0) + w
        named = sorted({ids[-3] for ids, _ in longer if ids[-3] != _ANY})
        per_y[y] = [(v, here.get(v, 0.0) + table.extension_max((v, OTHER), y))
                    for v in named]
        rest[y] = table.extension_max((OTHER, OTHER), y)
    sizes = np.zeros(vocab, dtype=np.int64)
    for y, pairs in per_y.items():
        sizes[y] = len(pairs)
    two_off = np.zeros(vocab + 1, dtype=np.int64)
    np.cumsum(sizes, out=two_off[1:])
    two_v = np.zeros(int(two_off[-1]), dtype=np.int64)
    two_val = np.zeros(int(two_off[-1]))
    for y, pairs in per_y.items():
        at = int(two_off[y])
        for j, (v, val) in enumerate(pairs):
            two_v[at + j] = v
            two_val[at + j] = val
    return two_off, two_v, two_val, rest


def ll_core(lm: LogLinearLM) -> _core.LlCore:
    """The tables of `lm` for the compiled walk, bound and states (`_loglinear.pxi`)."""
    cores, maps, useful = [], [], []
    for comp, table in zip(lm.components, lm._maps, strict=True):
        assert isinstance(comp, MaxArpaLM)  # `compilable`
        model = comp.ngram
        cores.append(native_ngram(model).core)
        maps.append(None if table is None else np.ascontiguousarray(table, dtype=np.int64))
        rows, lens, keys = (np.ascontiguousarray(a) for a in useful_context_tables(model))
        slots, bits = _core.build_hash(np.ascontiguousarray(keys, dtype=np.uint64))
        useful.append((rows, lens, keys, slots, bits))
    return _core.LlCore(len(lm.vocab), lm.order, cores, maps,
                        np.array(lm.alphas, dtype=np.float64), useful, _shapes(lm),
                        _prefixes(lm), *feature_bounds(lm))


def loglinear_dp(lm: LogLinearLM) -> _core.FullDP | None:
    """The FullDP of `lm` with its `LlCore` (its tables hold the empty context only: every
    other state is made on demand), built once per model; None when not `compilable`."""
    if lm in _DP:
        return _DP[lm]
    with _LOCK:
        if lm not in _DP:
            dp = None
            if compilable(lm):
                width = lm.order - 1
                keys = np.array([EMPTY_KEY], dtype=np.uint64)
                slots, bits = _core.build_hash(keys)
                dp = _core.FullDP(vocabulary_core(len(lm.vocab), lm.order),
                                  np.full((1, width), -1, dtype=np.int64),
                                  np.zeros(1, dtype=np.int32), keys, slots, bits,
                                  ll=ll_core(lm))
            _DP[lm] = dp
        return _DP[lm]


def build_dp(lm: LogLinearLM) -> _core.FullDP | None:
    """`compiled_kinds.CompiledKind`'s name for `loglinear_dp`."""
    return loglinear_dp(lm)
