"""What runs on a worker (a Dask worker process, or this process with `--workers 1`): the
JSON output lines of one chunk of items.

Why apart from the client: a worker only turns items into lines. It never touches the output
file, never schedules, never sees a signal; `run_chunk` is a plain function of (spec, items)
that Dask can ship and rerun anywhere.

- **Shared model.** Tasks carry a path, not a model: each worker process loads the binary
  model once (`_WORKER_MODELS`, keyed by path) and keeps it for every chunk it runs.
- **Deterministic.** Sampling seeds are `item_seed(seed, id)`: a hash of (seed, id), not of
  the position, the worker or the chunk, so results do not depend on the number of workers.
- **Input errors are lines, bugs are not.** An item whose input is bad (the library raises
  `ArsDecodeError` or maxarpa's `MaxArpaError`) becomes an error line and the run goes on.
  Any other exception (a numpy shape error, an index out of range) is a bug: it propagates
  with its traceback and stops the run, instead of hiding among the error lines.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from arsdecode.batch.io import Item
from arsdecode.errors import ArsDecodeError, LatticeError, ObservationError
from maxarpa.config import DEFAULT_CONFIG, Config
from maxarpa.errors import MaxArpaError

if TYPE_CHECKING:
    from arsdecode.model.target_spec import TargetSpec

TASKS = ("decode", "sample", "tag")

INPUT_ERRORS = (ArsDecodeError, MaxArpaError)
"""The exceptions that mean "this item's input is bad": they become the item's error line."""


@dataclass(frozen=True)
class TaskSpec:
    """What every item of a run does; small and picklable, sent with each chunk."""

    task: str = "decode"
    lm: str = ""  # path of the binary model, valid on every worker
    emissions: str | None = None  # tag: path of emissions.json.gz
    n: int = 1  # sample: samples per item
    seed: int = 0  # sample: run seed; item seeds derive from (seed, id)
    variant: str | None = None  # None: the engine's default refinement variant
    max_iterations: int | None = None
    method: str = "auto"  # decode/tag: the exact method, as `arsdecode decode --method`
    batch: int = 100
    target_ar: float = 0.2
    ar_window: int = 100
    config: Config = DEFAULT_CONFIG  # strictness of the model, as `--lm`'s flags say
    map: str | None = None  # decode/sample: SRILM disambig map; items are {"observed": [...]}
    logmap: bool = False  # the map's probabilities are log10
    tolower: bool = False  # lowercase the map and the observed tokens
    keep_unk: bool = False  # an observed token missing from the map passes through as itself
    mapw: float = 1.0  # weight of the map's ln probabilities
    lmw: float = 1.0  # weight of the LM's ln probabilities (decode/sample; SRILM's -lmw)
    mix: tuple[tuple[str, float], ...] = ()  # --mix-lm..: (binary model path, weight) each
    mix_lambda: float = 1.0  # with `mix`: the weight of `lm` (SRILM's -lambda)
    mix_missing: str = "unk"  # with `mix`: a word a model lacks ("unk" or "zero")
    vpylm: bool = False  # `lm` is a VPYLM (.npz of `arsdecode train-vpylm`), not an n-gram model
    features: str | None = None  # decode/sample: n-gram feature file (ln), as `--features`

    def target_spec(self) -> TargetSpec:
        """The target of decode and sample, as `arsdecode.model.target_spec` builds it for the
        command line too (the builder refuses what does not combine)."""
        from arsdecode.model.target_spec import TargetSpec

        return TargetSpec(lm=None if self.vpylm else self.lm,
                          vpylm=self.lm if self.vpylm else None, mix=self.mix,
                          lm_lambda=self.mix_lambda, mix_missing=self.mix_missing,
                          features=self.features, lm_weight=self.lmw, config=self.config)


def item_seed(seed: int, item_id: Any) -> int:
    """The sampling seed of one item: 64 bits of sha256(seed, JSON id). The single-item command
    `arsdecode sample --seed item_seed(S, id)` reproduces the batch line exactly."""
    digest = hashlib.sha256(f"{int(seed)}\0{json.dumps(item_id)}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


# ---- the models a worker keeps ----------------------------------------------------------

_WORKER_MODELS: dict[tuple, tuple[Any, Any]] = {}


def load_shared_model(path: str, config: Config = DEFAULT_CONFIG):
    """The model a worker keeps for the whole run: the binary model's arrays memory-mapped
    read-only, so every worker process on a machine shares one copy in the page cache."""
    import maxarpa

    return maxarpa.load(path, mmap=True, config=config)


def worker_models(spec: TaskSpec) -> tuple[Any, Any]:
    """(lm, emissions) of this worker process, loaded on its first chunk and then reused.

    Keyed by path, size and mtime: a long-lived worker of an external cluster reloads a model
    file that was rewritten between runs, and drops the older copy."""
    key: tuple = (*((p, *_stamp(p)) for p in (spec.lm, spec.emissions, spec.map)
                    if p is not None), spec.config, spec.logmap, spec.tolower)
    if key not in _WORKER_MODELS:
        emissions: Any = None
        if spec.emissions is not None:
            from arsdecode.tasks.pos.models import load_emissions

            emissions = load_emissions(spec.emissions)
        elif spec.map is not None:  # the map takes the emissions' place for decode/sample
            from arsdecode.lattice.disambig_map import DisambigMap

            emissions = DisambigMap.read(spec.map, logmap=spec.logmap, tolower=spec.tolower)
        if spec.vpylm:  # a VPYLM: its .npz (a few arrays), loaded whole
            from arsdecode.model.vpylm import load_vpylm

            lm = load_vpylm(spec.lm)
        else:
            lm = load_shared_model(spec.lm, spec.config)
        for old in [k for k in _WORKER_MODELS if k[0][0] == spec.lm]:
            del _WORKER_MODELS[old]
        _WORKER_MODELS[key] = (lm, emissions)
    return _WORKER_MODELS[key]


_MIX_MODELS: dict[tuple, Any] = {}


def _mix_model(path: str, config: Config):
    """A --mix-lm model of this worker process, loaded once (keyed as `worker_models`)."""
    key = (path, *_stamp(path), config)
    if key not in _MIX_MODELS:
        for old in [k for k in _MIX_MODELS if k[0] == path]:
            del _MIX_MODELS[old]
        _MIX_MODELS[key] = load_shared_model(path, config)
    return _MIX_MODELS[key]


_TARGETS: dict[tuple, tuple[Any, Any]] = {}


def worker_target(spec: TaskSpec, lm: Any) -> Any:
    """The decode/sample target of this worker: `build_target` on `spec.target_spec()`, from
    the models this worker keeps (`lm` of `worker_models`, the --mix-lm models of
    `_mix_model`). Built once per spec and model files, not per chunk: a feature file is
    parsed once. `lm` is kept beside the target, so a reloaded model is never confused with
    the old one."""
    from arsdecode.model.target_spec import build_target

    tspec = spec.target_spec()
    files = [p for p in (spec.features, *(path for path, _ in spec.mix)) if p is not None]
    key = (tspec, *(_stamp(p) for p in files))
    cached = _TARGETS.get(key)
    if cached is None or cached[0] is not lm:
        _TARGETS.clear()  # one run's target at a time

        def load_ngram(path: str, config: Config):
            return lm if path == spec.lm else _mix_model(path, config)

        built = build_target(tspec, load_ngram=load_ngram, load_vpylm_file=lambda _: lm)
        _TARGETS[key] = cached = (lm, built.model)
    return cached[1]


def _stamp(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


# ---- one chunk ----------------------------------------------------------------------------

def _lattice(spec: TaskSpec, item: Item, emissions) -> tuple[Any, list[str] | None]:
    """The lattice of one item (and, for tag, its words). `scan_input` already parsed the
    line as a JSON object, so what can fail here is its content: LatticeError or
    ObservationError."""
    from arsdecode.lattice import Lattice, json_constant

    obj = json.loads(item.text, parse_constant=json_constant)  # the grammar of lattice files
    where = f"line {item.lineno}"
    if spec.task != "tag" and spec.map is None:
        if isinstance(obj, dict) and "rules" in obj and "start" in obj:  # a tree automaton
            from arsdecode.trees.automaton import TreeAutomaton

            return TreeAutomaton.from_json(obj, source=where), None
        if isinstance(obj, dict) and "arcs" in obj:  # a word lattice (JSON DAG)
            from arsdecode.lattice import WordLattice

            return WordLattice.from_json_obj(obj, source=where), None
        return Lattice.from_json_obj(obj, source=where), None
    if spec.task != "tag":  # --map: the observed tokens of one sentence, through the map
        observed = obj.get("observed")
        if (not isinstance(observed, list) or not observed
                or not all(isinstance(w, str) for w in observed)):
            raise ObservationError(f'{where}: "observed" must be a non-empty list of strings')
        return emissions.lattice(observed, mapw=spec.mapw, keep_unk=spec.keep_unk,
                                 where=where), None
    words = obj.get("tokens")
    if not isinstance(words, list) or not words or not all(isinstance(w, str) for w in words):
        raise ObservationError(f'{where}: "tokens" must be a non-empty list of strings')
    return emissions.lattice(words), words


def solve_one(spec: TaskSpec, lm, item: Item, lattice) -> dict:
    """The fields of the single-item command for one lattice."""
    from arsdecode.methods.dispatch import decode, sample

    start = time.perf_counter()
    engine = _engine(spec)
    if hasattr(lattice, "rules"):  # a tree automaton (issue 31)
        return _solve_trees(spec, lm, item, lattice, start)
    word_lattice = not hasattr(lattice, "tokens")  # the expansion's methods (dispatch)
    if spec.task == "sample":
        seed = item_seed(spec.seed, item.id)
        options = {} if word_lattice else dict(batch=spec.batch, target_ar=spec.target_ar,
                                               ar_window=spec.ar_window, **engine)
        s = sample(lm, lattice, spec.n, seed, **options)  # dispatch's choice, which it reports
        return _sample_fields(s, seed, time.perf_counter() - start)
    if word_lattice:
        from arsdecode.methods.dispatch import decode_word_lattices

        [r] = decode_word_lattices(lm, [lattice], method=spec.method)  # type: ignore[arg-type]
    else:
        r = decode(lm, lattice, method=spec.method,  # type: ignore[arg-type]
                   max_iterations=spec.max_iterations, **engine)
    return _decode_fields(r, {"seconds": time.perf_counter() - start})


def _sample_fields(s: Any, seed: int, seconds: float) -> dict:
    """The fields of a sample line, the same on every lattice kind (one SampleResult):
    "samples" the token lists (as both kinds wrote them before issue 30), "paths" (tokens,
    arcs, ln p: `SampleResult.to_json`'s), the evidence and the method that ran."""
    return {"samples": s.samples, "paths": [p.to_json() for p in s.paths], "log_p": s.log_p,
            "seed": seed, "trials": s.trials, "acceptance_rate": s.acceptance_rate,
            "log_Z": s.log_Z, "method": s.method, "seconds": seconds}


def _solve_trees(spec: TaskSpec, lm, item: Item, automaton, start: float) -> dict:
    """`solve_one` for a tree automaton: the fields of `decode` / `sample --trees X --json`."""
    from arsdecode.trees import dispatch as trees

    if spec.task == "sample":
        seed = item_seed(spec.seed, item.id)
        s = trees.sample(lm, automaton, spec.n, seed, {})
        return {"trees": s.trees, "samples": s.samples, "log_p": s.log_p, "seed": seed,
                "log_Z": s.log_Z, "method": s.method, "seconds": time.perf_counter() - start}
    options = {} if spec.max_iterations is None else {"max_iterations": spec.max_iterations}
    r = trees.decode(lm, automaton, spec.method, None, options)
    return _decode_fields(r, {"seconds": time.perf_counter() - start})


def _engine(spec: TaskSpec) -> dict[str, Any]:
    return {} if spec.variant is None else {"variant": spec.variant}


def _decode_fields(r, timing: dict[str, float]) -> dict:
    """The fields of `arsdecode decode --json` that a batch line carries, the same on every
    lattice kind (one DecodeResult): the result's own JSON, its "timing" replaced by this
    item's {"seconds": s}, or {"chunk_mean_seconds": s} when only its chunk could be timed
    (the name says which, so nobody reads a chunk's average as one item's)."""
    return {**{k: v for k, v in r.to_json().items() if k != "timing"}, **timing}


def solve_chunk(spec: TaskSpec, lm, items: list[Item], lattices: list) -> list[dict | str]:
    """All lattices of a chunk in one call: a result dict, or an error message, per item.

    Decoding runs `methods.dispatch.decode_many` on the whole chunk (the compiled full DP in
    one call, ARS in lockstep with batched queries; each item's result is the one the
    single-item command gives). If it rejects one item's input (say, a lattice with no
    possible path), the chunk is redone item by item so only that item becomes an error line.
    """
    if spec.task != "sample" and items:
        from arsdecode.methods.dispatch import decode_many, decode_word_lattices

        dags = [not hasattr(lat, "tokens") for lat in lattices]  # word lattices (or trees)
        results: list[Any]
        start = time.perf_counter()
        try:
            if any(hasattr(lat, "rules") for lat in lattices):  # trees: item by item below
                raise LatticeError("tree automata")
            if all(dags):
                results = decode_word_lattices(lm, lattices,
                                               method=spec.method)  # type: ignore[arg-type]
            elif not any(dags):
                results = decode_many(lm, lattices, method=spec.method,  # type: ignore[arg-type]
                                      max_iterations=spec.max_iterations, **_engine(spec))
            else:  # a mixed chunk: item by item below
                raise LatticeError("mixed chunk")
        except INPUT_ERRORS:  # find the item whose input is bad, one at a time
            pass
        else:
            # One compiled call for the whole chunk: no item can be timed on its own.
            each = {"chunk_mean_seconds": (time.perf_counter() - start) / len(items)}
            return [_decode_fields(r, each) for r in results]
    out: list[dict | str] = []
    for item, lattice in zip(items, lattices):
        try:
            out.append(solve_one(spec, lm, item, lattice))
        except INPUT_ERRORS as err:
            out.append(error_message(item, err))
    return out


def error_message(item: Item, err: Exception) -> str:
    """One line naming the input line once: `line N: what went wrong`."""
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    where = f"line {item.lineno}:"
    return text if text.startswith(where) else f"{where} {text}"


def run_chunk(spec: TaskSpec, items: list[Item]) -> list[str]:
    """Worker entry point: the JSON output lines of one chunk, in its order."""
    lm, emissions = worker_models(spec)
    if spec.task != "tag":  # the target of --lm/--vpylm, --mix-lm, --features and --lmw
        lm = worker_target(spec, lm)
    ready: list[Item] = []
    lattices: list = []
    words: dict[int, list[str]] = {}  # tag: the sentence of item k
    answers: dict[int, dict | str] = {}
    for k, item in enumerate(items):
        if item.error is not None:
            answers[k] = item.error
            continue
        try:
            lattice, sentence = _lattice(spec, item, emissions)
        except INPUT_ERRORS as err:
            answers[k] = error_message(item, err)
            continue
        ready.append(item)
        lattices.append(lattice)
        if sentence is not None:
            words[k] = sentence
    solved = iter(solve_chunk(spec, lm, ready, lattices))
    lines = []
    for k, item in enumerate(items):
        answer = answers[k] if k in answers else next(solved)
        if isinstance(answer, str):
            line = {"id": item.id, "line": item.lineno, "error": answer}
        elif spec.task == "tag":  # as `arsdecode tag --json`: the words, then their tags
            tags = emissions.penn_tags(answer.pop("tokens"))  # decoded states -> tags
            answer.pop("words")  # the decode's alias of its tokens: here the states
            line = {"id": item.id, "tokens": words[k], "tags": tags, **answer}
        else:
            line = {"id": item.id, **answer}
        lines.append(json.dumps(line))
    return lines
