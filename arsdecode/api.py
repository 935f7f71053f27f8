"""The front door: every public entry point behind `import arsdecode`.

Why one module: a user (and the command line) needs one place that takes a model and a lattice
and runs a method. Each function here takes `lm` as a maxarpa Model (what `load_lm` returns) or
any `arsdecode.model.TargetModel` (a target of your own), converts it once
(`as_target_model`), and calls the method that does the work; nothing here decides or
computes anything (which exact method runs is `methods.dispatch`'s choice). Results are
natural log (ln); model files are log10. Every argument is checked first (`@v.checked`,
`arsdecode.validate`): a wrong type or a value out of range is an `ArgumentError` naming the
function and the argument, raised before any work; a model or lattice is an object, never a
path (`load_lm` and `arsdecode.lattice.lattice_files` read files), so that a call never hides
a load. The target constructors (`weighted`, `interpolate`, `loglinear`,
`fixed_length_lattice`) live in `arsdecode.api_targets` and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import numpy as np

import arsdecode.validate as v
import maxarpa
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.lazy_names import lazy_names
from arsdecode.methods import dispatch
from arsdecode.methods.dispatch import MARGINALS_METHODS, METHODS, MarginalsMethod, Method
from arsdecode.methods.results import (  # one type per operation; the Dag* names kept aliases
    DagArsResult,  # noqa: F401  (kept public names: aliases of the one result types)
    DagArsSampleResult,  # noqa: F401
    DagDecodeResult,
    DagPath,
    DecodeResult,
    KBestResult,
    Marginal,
    MarginalsResult,
    Paths,
    SampleResult,
    SampleTrace,
    ScoredPath,
)
from arsdecode.model import ModelLike, as_target_model
from maxarpa.config import Config
from maxarpa.model import Model

if TYPE_CHECKING:
    from arsdecode.api_targets import fixed_length_lattice, interpolate, loglinear, weighted
    from arsdecode.trees.automaton import TreeAutomaton
    from arsdecode.trees.results import TreeMarginalsResult, TreeSampleResult

__all__ = [
    "DATA_DIR", "DEFAULT_LM", "DagDecodeResult", "DagPath", "DecodeResult", "KBestResult",
    "Marginal", "MarginalsResult", "SampleResult", "SampleTrace", "ScoredPath", "TagResult",
    "WordLattice",
    "adapt", "decode", "decode_kbest", "decode_many", "interpolate", "lattice_posteriors",
    "load_lm",
    "marginals", "sample", "sms_decode", "tag", "weighted",
]
__all__ += ["fixed_length_lattice", "loglinear"]  # issue 22, target 2

# Names imported on first use (PEP 562), so that a one-lattice decode loads neither the target
# constructors' models (issue 34, start-up); the results are results.py's, loaded anyway.
_LAZY = {
    **{name: "arsdecode.api_targets"
       for name in ("fixed_length_lattice", "interpolate", "loglinear", "weighted")},
}

__getattr__, __dir__ = lazy_names(__name__, _LAZY)


DATA_DIR = Path(__file__).resolve().parent / "data"
DEFAULT_LM = DATA_DIR / "state_union.5gram.maxarpa.gz"
"""The embedded 5-gram trained on State of the Union (public domain); used by `sms_decode`."""

# What each public function accepts, per argument (arsdecode.validate says why): checked
# before any work, a refusal is an ArgumentError naming the function and the argument.
METHOD = v.one_of(METHODS)
LM = v.target


@v.checked(path=v.path, config=v.config, mmap=v.flag)
def load_lm(path: str | Path, *, config: Config | None = None, mmap: bool = False) -> Model:
    """Load an n-gram model: ARPA, MAX-ARPA (plain or .gz/.bz2/.xz) or maxarpa binary.

    The kind is detected from the content; `-` or a pipe is read once. `config`
    (`maxarpa.Config`, None: the defaults, KenLM's) says what to do with an irregular model
    (no <s>, no <unk>, a log10 p above 0), the same choice the CLI's strictness flags make.
    Returns a `maxarpa.model.Model`, whose queries (`log10p`, `max_log10p`) are log10, as in
    the file. Raises `maxarpa.errors.MaxArpaError` on a malformed file (or one `config` says to
    refuse) and OSError when it cannot be read. `mmap=True` maps a binary model's arrays
    read-only from the file instead of reading them (`maxarpa.load`'s option; text formats
    are parsed as always).
    """
    return maxarpa.load(path, mmap=mmap, config=config)


@overload
def decode(lm: ModelLike, lattice: Lattice | WordLattice, *, method: Method = "auto",
           k: None = None, **options: Any) -> DecodeResult: ...
@overload
def decode(lm: ModelLike, lattice: Lattice | WordLattice, *, method: Method = "auto",
           k: int, **options: Any) -> KBestResult: ...
@v.checked(lm=LM, lattice=v.structure, method=METHOD, k=v.optional(v.positive))
def decode(
    lm: ModelLike,
    lattice: Lattice | WordLattice | TreeAutomaton,
    *,
    method: Method = "auto",
    k: int | None = None,
    **options: Any,
) -> DecodeResult | KBestResult | Paths:
    """The exact most probable path of p over `lattice` (natural log).

    `method`: "ars" (adaptive rejection, Algorithm 1 of Carter et al.), "full" (the merged
    full-model Viterbi) or "auto" (`methods.dispatch` picks per lattice; the result's
    `method` says which ran). `options` go to the ARS decoder: variant, max_iterations, tol,
    on_iteration, keep_automaton, prune (`methods.ars.decode`). With `k`, returns the K best
    paths instead (a KBestResult, as `decode_kbest`). A `WordLattice` (a DAG with epsilon
    arcs) gives the same types (`arcs` its arc numbers; with `k`, option `unique=True`:
    distinct word sequences); on it "full" and "auto" run the exact merged expansion
    (compiled; `transitions` its size) and "ars" the q-automaton over (node, context)
    states. Raises
    NoPathError if every path has probability zero. A `TreeAutomaton` gives its best
    derivation (a TreeDecodeResult: `tree` bracketed, `tokens` its yield), or with `k` the k
    best (`arsdecode.trees`; options max_iterations, max_queries).
    """
    if v.is_tree_automaton(lattice):  # the tree package loads only for trees
        from arsdecode.trees import dispatch as _trees

        return _trees.decode(lm, lattice, method, k, options)
    return dispatch.decode(as_target_model(lm), lattice, method=method, k=k, **options)



@v.checked(lm=LM, lattices=v.sequence_of(v.lattice, "a list of Lattice or WordLattice"),
           method=METHOD)
def decode_many(
    lm: ModelLike,
    lattices: Sequence[Lattice] | Sequence[WordLattice],
    *,
    method: Method = "auto",
    **options: Any,
) -> list[DecodeResult]:
    """`decode` on every lattice, in input order, with the model queries batched across
    lattices (`methods.dispatch.decode_many`; options: variant, max_iterations, tol). Each
    result equals `decode`'s on that lattice, apart from `seconds`. Word lattices (one kind
    per call) give DecodeResults too."""
    return dispatch.decode_many(as_target_model(lm), lattices, method=method, **options)


@overload
def decode_kbest(lm: ModelLike, lattice: Lattice | WordLattice, k: int, *,
                 method: Method = "auto", **options: Any) -> KBestResult: ...
@overload
def decode_kbest(lm: ModelLike, lattice: TreeAutomaton, k: int, *, method: Method = "auto",
                 **options: Any) -> Paths: ...
@v.checked(lm=LM, lattice=v.structure, k=v.positive, method=METHOD)
def decode_kbest(
    lm: ModelLike, lattice: Lattice | WordLattice | TreeAutomaton, k: int, *,
    method: Method = "auto", **options: Any
) -> KBestResult | Paths:
    """The k most probable distinct paths of p, each exact and certified, best first.

    A KBestResult: its `paths` (`ScoredPath`: tokens, arcs, ln p), which it also indexes and
    iterates, as a word lattice's list of `DagPath` did before issue 30. A `WordLattice`'s
    come from its expansion (`methods.dispatch.decode_word_lattice`; option `unique=True`:
    distinct word sequences, each scored by its best path).

    `method` (`methods.dispatch`): "full" is the merged full DP's k-best (compiled given n-gram
    tables), "ars" ARS's k-best on q (`methods.kbest.decode_kbest`; options: variant,
    max_iterations, tol), "auto" the compiled DP within its pair and memory budgets, else
    ARS. The result's `method` says which ran. A `TreeAutomaton` gives its k best derivations
    (`Paths` of `TreePath`)."""
    if v.is_tree_automaton(lattice):  # the tree package loads only for trees
        from arsdecode.trees import dispatch as _trees

        return _trees.decode(lm, lattice, method, k, options)
    return dispatch.decode(lm, lattice, method=method, k=k, **options)


@overload
def sample(lm: ModelLike, lattice: Lattice | WordLattice, n: int, seed: int | None = None,
           **options: Any) -> SampleResult: ...
@overload
def sample(lm: ModelLike, lattice: TreeAutomaton, n: int, seed: int | None = None,
           **options: Any) -> TreeSampleResult: ...
@v.checked(lm=LM, lattice=v.structure, n=v.count, seed=v.seed)
def sample(
    lm: ModelLike, lattice: Lattice | WordLattice | TreeAutomaton, n: int,
    seed: int | None = None, **options: Any
) -> SampleResult:
    """`n` exact i.i.d. samples of p over `lattice` by adaptive rejection, with the
    evidence ln Z and its 95% interval (`methods.ars.sample`; options: batch, target_ar,
    ar_window, variant, max_trials, stop_when_adapted, rng, on_sample, keep: False streams the
    samples to on_sample only, in constant memory).

    One SampleResult on every lattice kind: `samples` the token lists, `paths` each sample's
    tokens, arcs and ln p (the result iterates over them). A `WordLattice` is sampled exactly
    from its merged expansion (`methods.full_samples.dag_sample_result`: method "full", ln Z
    exact), or with the option `method="ars"` by adaptive rejection on its q-automaton
    (`methods.ars.dag_ars_sample`; options batch, target_ar, ...). `method="full"` on a
    confusion network draws by the merged full DP, with the exact ln Z. Which method runs
    is `methods.dispatch.sample`'s choice; an option the chosen sampler does not take is an
    OptionError naming it. A `TreeAutomaton` gives exact i.i.d. derivations with ln Z (a
    TreeSampleResult; options method, max_queries, target_ar, max_trials)."""
    if v.is_tree_automaton(lattice):  # the tree package loads only for trees
        from arsdecode.trees import dispatch as _trees

        return _trees.sample(lm, lattice, n, seed, options)
    return dispatch.sample(as_target_model(lm), lattice, n, seed, **options)


@v.checked(lm=LM, lattice=v.lattice)
def lattice_posteriors(lm: ModelLike, lattice: WordLattice | Lattice
                       ) -> tuple[np.ndarray, float]:
    """Every arc's exact posterior probability and ln Z of a word lattice, by forward-backward
    over its merged expansion (`methods.expansion_posteriors.dag_posteriors`). A confusion
    network is read as `WordLattice.from_confusion(lattice)`; its answer has one entry per
    candidate, position by position (`methods.dispatch_posteriors.lattice_posteriors`)."""
    from arsdecode.methods.dispatch_posteriors import lattice_posteriors as posteriors

    return posteriors(lm, lattice)


@v.checked(lm=LM, lattice=v.confusion)
def adapt(lm: ModelLike, lattice: Lattice, **options: Any) -> SampleResult:
    """Refine q until its acceptance rate reaches the target, then stop (the paper's Table 3
    protocol; `methods.ars.adapt`; options: batch, target_ar, ar_window, variant,
    max_trials, seed, rng)."""
    return dispatch.adapt(as_target_model(lm), lattice, **options)


@overload
def marginals(lm: ModelLike, lattice: Lattice | WordLattice, n: int = 1000,
              seed: int | None = None, *, all_candidates: bool = True,
              method: MarginalsMethod = "auto", **options: Any) -> MarginalsResult: ...
@overload
def marginals(lm: ModelLike, lattice: TreeAutomaton, n: int = 1000,
              seed: int | None = None, *, all_candidates: bool = True,
              method: MarginalsMethod = "auto", **options: Any) -> TreeMarginalsResult: ...
@v.checked(lm=LM, lattice=v.structure, n=v.positive, seed=v.seed, all_candidates=v.flag,
           method=v.one_of(MARGINALS_METHODS))
def marginals(
    lm: ModelLike,
    lattice: Lattice | WordLattice | TreeAutomaton,
    n: int = 1000,
    seed: int | None = None,
    *,
    all_candidates: bool = True,
    method: MarginalsMethod = "auto",
    **options: Any,
) -> MarginalsResult | TreeMarginalsResult:
    """Per position, every candidate's posterior probability and ln Z
    (`methods.marginals.posterior_marginals`). `method` "full": exact, by forward-backward over
    the merged full-model states (`exact` true, zero-width intervals); "sample": from `n` exact
    samples, with 95% Wilson intervals and ln Z's 95% interval from the same run (options go to
    `sample`); "auto" (the default): exact when the merged states fit a budget
    (`methods.dispatch.MARGINALS_FULL_STATES`), else sampled. `all_candidates=False` lists only
    the tokens drawn (exact: of nonzero probability). A `WordLattice` gets its exact arc
    posteriors (methods "full" and "auto"): one list per arc, in arc order. A
    `TreeAutomaton` gives its rule posteriors and ln Z (a TreeMarginalsResult)."""
    if v.is_tree_automaton(lattice):  # the tree package loads only for trees
        from arsdecode.trees import dispatch as _trees

        return _trees.marginals(lm, lattice, n, seed, method, options)
    from arsdecode.methods import marginals as _marginals

    return _marginals.posterior_marginals(as_target_model(lm), lattice, n, seed,
                                          all_candidates=all_candidates, method=method,
                                          **options)


@v.checked(observation=v.text, lm=v.optional(v.maxarpa_model), k=v.real(0),
           top_k=v.optional(v.positive))
def sms_decode(
    observation: str,
    *,
    lm: Model | None = None,
    k: float = 64.0,
    top_k: int | None = None,
    **decode_options,
) -> DecodeResult:
    """Decode a noisy keypad message such as "3637 843 *" into words (the paper's 3.1).

    `lm` defaults to the embedded State of the Union 5-gram (loaded once and cached); it is a
    maxarpa Model, not any TargetModel, because the keypad channel lists the model's
    vocabulary, which the TargetModel interface does not expose. Returns a `DecodeResult`
    whose `tokens` are the words and whose `log_p` is the natural log of p(words,
    observation); `decode_options` go to `arsdecode.decode`. Raises `ObservationError` on a
    bad observation.
    """
    from arsdecode.tasks.sms.keypad import KeypadChannel, parse_observation

    parse_observation(observation)
    if lm is None:
        lm, channel = _default_channel(float(k))
    else:  # a user model: build its channel (a pass over the vocabulary) each call
        channel = KeypadChannel.from_vocab(lm.vocab, k=k)
    return decode(lm, channel.build_lattice(observation, top_k=top_k), **decode_options)


@lru_cache(maxsize=4)
def _default_channel(k: float):
    from arsdecode.tasks.sms.keypad import KeypadChannel

    lm = load_lm(DEFAULT_LM)
    return lm, KeypadChannel.from_vocab(lm.vocab, k=k)


@dataclass(frozen=True)
class TagResult(DecodeResult):
    """A tagged sentence: `words` and their `tags` (one per word), with every field of the
    DecodeResult that found them (`tokens` is the tags too, for older callers).

    Why its own type: a decode result's `tokens` are the hidden layer's symbols, which for a
    tagger are tags; `result.words` and `result.tags` say which is which, as `arsdecode tag
    --json` does ("tokens" there are the words).
    """

    words: list[str] = field(default_factory=list)

    @property
    def tags(self) -> list[str]:
        return self.tokens

    def to_json(self) -> dict:
        """JSON-ready dict (natural logs), with "words" (the tagged words, not the decode's
        alias of its tokens) and "tags"."""
        fields = super().to_json()
        del fields["words"]
        return {"words": self.words, "tags": self.tags, **fields}


@v.checked(words=v.words, order=v.optional(v.positive), models=v.optional(v.path))
def tag(
    words: Sequence[str] | str,
    *,
    order: int | None = None,
    models: str | Path | None = None,
    **decode_options,
) -> TagResult:
    """Exact POS tags of one tokenised sentence (a list of words, or one string split on
    spaces) under the TnT-style HMM of the paper's 3.2.

    Models are looked up in `models`, then `$ARSDECODE_POS_MODELS`, then the tagger shipped in
    `arsdecode/data/pos/` (see `arsdecode.tasks.pos.models`). Returns a `TagResult`: `words`,
    `tags` (one per word; also in `tokens`), and `log_p`, the natural log of the tag
    sequence's joint probability with the words (up to a tag-independent constant per unknown
    word, see `arsdecode.tasks.pos.emissions`). Raises `ModelError` when no model is found and
    `ObservationError` on an empty sentence.
    """
    from arsdecode.errors import ObservationError
    from arsdecode.tasks.pos.models import load_models

    if isinstance(words, str):
        words = words.split()
    if not words:
        raise ObservationError("empty sentence: nothing to tag")
    lm, emissions = load_models(models, order)
    words = list(words)
    r = decode(lm, emissions.lattice(words), **decode_options)
    values = {f.name: getattr(r, f.name) for f in fields(r)}
    values["tokens"] = emissions.penn_tags(r.tokens)  # decoded states -> tags (tasks.pos_cap)
    return TagResult(**values, words=words)
