"""`arsdecode batch`: decode, sample or tag a JSONL corpus, in-process or on a Dask cluster.

Why a front end of its own: arsdecode.batch is the engine (files, chunks, scheduling); this module
turns options into a TaskSpec, makes sure the workers get a binary model they can load at disk
speed (converting a text model once, before any worker starts), and prints one summary line.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from arsdecode.batch.client import DEFAULT_CHUNK, run_batch
from arsdecode.batch.worker import TASKS, TaskSpec
from arsdecode.cli.options import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    VARIANTS,
    add_features_option,
    add_lm_strictness_options,
    add_lm_weight_option,
    add_map_reading_options,
    add_method_option,
    add_mix_options,
    add_sampling_options,
    check_fits,
    epilog,
    lm_config,
    map_reading_options_set,
    mix_models,
    positive_int,
)
from arsdecode.errors import BatchError, OptionError
from maxarpa.config import DEFAULT_CONFIG, Config

if TYPE_CHECKING:
    from arsdecode.model.target_spec import TargetSpec


def default_model_cache() -> Path:
    """Where text models are converted for the workers: a user cache directory
    ($XDG_CACHE_HOME/arsdecode/models, else ~/.cache/arsdecode/models), shared by every run
    (a conversion is named after its source's path, size and mtime), rather than a hidden
    folder beside every --out."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "arsdecode" / "models"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "batch", help="decode/sample/tag a JSONL corpus (resumable; Dask for many workers)",
        description=(
            'Input: one JSON object per line, {"id", "positions"} ({"id", "tokens"} for '
            '--task tag, {"id", "observed"} with --map). Output: one JSON object per line, '
            '{"id", ...} with the fields of the '
            'single-item command, or {"id", "line", "error"} for a line that cannot be run. '
            "Rerunning with the same --out skips the ids already there (--retry-errors redoes "
            "the error lines). Sampling seeds derive from (--seed, id), so results do not "
            "depend on workers or order. Times: \"seconds\" is measured per item; when a "
            "chunk of lattices is decoded in one call, its lines carry \"chunk_mean_seconds\" "
            "instead (the chunk's time over its items). A text model (ARPA or MAX-ARPA) is "
            "first converted once to a binary model in --model-cache and reused by later runs; "
            "workers memory-map that file."),
        epilog=epilog("exit status: 0 success (some lines may be errors: see the summary); "
                      "2 bad input or options, or every line of the run failed; 130 "
                      "interrupted (Ctrl-C), 143 terminated (SIGTERM): the lines written are "
                      "kept and the same command resumes."),
    )
    p.add_argument("--lm", default=None,
                   help="ARPA, MAX-ARPA or maxarpa binary model (tag: default the tag LM of "
                        "--models)")
    p.add_argument("--vpylm", default=None, metavar="MODEL",
                   help="--task decode or sample: a VPYLM (.npz from `arsdecode train-vpylm`) "
                        "instead of --lm")
    p.add_argument("--in", dest="in_path", required=True, metavar="JSONL",
                   help="input items ('-' for stdin)")
    p.add_argument("--out", required=True, metavar="JSONL",
                   help="results; appended to, so a rerun resumes where a run stopped ('-' "
                        "for stdout, which cannot resume)")
    p.add_argument("--retry-errors", action="store_true",
                   help="first remove the error lines from --out, so that their items run "
                        "again (say, after fixing --task or --lm); other results are kept")
    p.add_argument("--task", choices=TASKS, default="decode")
    p.add_argument("--workers", type=positive_int, default=None,
                   help="local Dask worker processes, >= 1 (default 1: in this process, no "
                        "Dask)")
    p.add_argument("--scheduler", default=None, metavar="tcp://HOST:8786",
                   help="use a running Dask cluster instead (its workers need arsdecode and "
                        "the model at the same path)")
    p.add_argument("-n", type=positive_int, default=1, help="--task sample: samples per item")
    p.add_argument("--ordered", action="store_true",
                   help="write results in input order (default: as they finish)")
    p.add_argument("--chunk-size", type=positive_int, default=DEFAULT_CHUNK,
                   help="items per task: the unit of scheduling, writing and redoing")
    p.add_argument("--model-cache", default=None, metavar="DIR",
                   help="where a text --lm is converted to binary (default: "
                        "$XDG_CACHE_HOME/arsdecode/models, else ~/.cache/arsdecode/models)")
    add_lm_strictness_options(p)
    add_lm_weight_option(p)
    add_mix_options(p)
    add_features_option(p)
    p.add_argument("--variant", choices=VARIANTS, default=None,
                   help="refinement variant (default: the engine's)")
    p.add_argument("--max-iterations", type=positive_int, default=None,
                   help="decode: stop uncertified after this many (method 'ars')")
    add_method_option(p)
    p.add_argument("--models", default=None, help="--task tag: directory of the POS models")
    p.add_argument("--order", type=int, default=None,
                   help="--task tag: tag LM order (default: as `arsdecode tag`)")
    p.add_argument("--map", default=None, metavar="MAP",
                   help="--task decode/sample: an SRILM disambig map (see `arsdecode disambig "
                        "--help`); each input line is then {\"id\", \"observed\": [tokens]} "
                        "and its lattice comes from the map")
    add_map_reading_options(p, prefix="--map: ")
    add_sampling_options(p, default_ar=0.2)
    p.set_defaults(handler=run)


def binary_model(lm: str | Path, cache_dir: Path, config: Config = DEFAULT_CONFIG) -> Path:
    """A binary model for the workers: `lm` itself if it is one, else a conversion made once
    in `cache_dir`, named after the source's path, size and mtime so a changed source is
    converted again and an unchanged one is reused."""
    import maxarpa
    from maxarpa.binary_format import is_binary

    src = Path(lm).resolve()
    if not src.is_file():
        raise BatchError(f"{lm}: no such model file")
    if is_binary(src):
        return src
    st = src.stat()
    stamp = f"{src}|{st.st_size}|{st.st_mtime_ns}"
    if config != DEFAULT_CONFIG:  # another strictness can give another table
        stamp += f"|{config!r}"
    tag = hashlib.sha256(stamp.encode()).hexdigest()[:12]
    dest = cache_dir.resolve() / f"{src.name}.{tag}.npz"
    if not dest.is_file():
        print(f"arsdecode batch: converting {lm} to the binary model {dest} (once)",
              file=sys.stderr)
        cache_dir.mkdir(parents=True, exist_ok=True)
        # atomic: a temporary file, then rename
        maxarpa.convert(src, dest, binary=True, config=config)
    return dest


def tag_paths(args: argparse.Namespace) -> tuple[str, str]:
    """(tag LM, emissions) of --models for --order, as `arsdecode tag` finds them."""
    from arsdecode.tasks.pos.emissions import PosModelError
    from arsdecode.tasks.pos.models import models_dir, tag_lm_path

    d = models_dir(args.models)
    lm = args.lm or str(tag_lm_path(d, args.order).resolve())
    if not (d / "emissions.json.gz").is_file():
        raise PosModelError(f"{d}: no emissions.json.gz")
    return lm, str((d / "emissions.json.gz").resolve())


def check_target(args: argparse.Namespace) -> TargetSpec:
    """The target of --task decode or sample (`cli.target.target_spec`, which refuses what
    does not combine, with the messages of `decode`), its files read once here so a bad one
    is one line before any worker starts: a VPYLM loaded, a feature file parsed. Every worker
    reads the feature file, so it must be a file, not stdin."""
    from arsdecode.cli.target import target_spec

    if args.lm is None and args.vpylm is None:
        raise BatchError(f"--task {args.task} needs --lm (or --vpylm)")
    spec = target_spec(args)
    if spec.vpylm is not None:
        from arsdecode.cli.vpylm import load_target

        load_target(spec.vpylm)
    if spec.features is not None:
        from arsdecode.model.feature_file import read_features

        if spec.features == "-":
            raise OptionError("--features must be a file: every worker reads it")
        read_features(spec.features)
    return spec


def refuse_for_tag(args: argparse.Namespace) -> None:
    """--task tag scores with the tagger's own LM, as trained: the target flags do not apply
    (their own errors, such as --lambda without --mix-lm, are still named first)."""
    mix_models(args)
    for flag, given in (("--vpylm", args.vpylm is not None), ("--lmw", args.lmw != 1.0),
                        ("--mix-lm", args.mix_lm is not None),
                        ("--features", args.features is not None)):
        if given:
            raise OptionError(f"{flag} is for --task decode or sample (the tagger has its own "
                              "LM, scored as it was trained)")


def run(args: argparse.Namespace) -> int:
    if args.workers is not None and args.scheduler:
        raise BatchError("give --workers or --scheduler, not both")
    check_fits("--batch", args.batch, 300 + 64)  # a floor: a one-position lattice
    if args.in_path != "-" and Path(args.in_path).is_dir():
        raise BatchError(f"{args.in_path}: is a directory; --in takes a JSONL file")
    if args.in_path != "-" and not Path(args.in_path).is_file():
        raise BatchError(f"{args.in_path}: no such input file")
    if args.retry_errors and args.out == "-":
        raise OptionError("--retry-errors rewrites --out, which cannot be stdout")
    emissions = None
    target = None
    if args.task == "tag":
        refuse_for_tag(args)
        lm, emissions = tag_paths(args)
    else:
        target = check_target(args)
    map_path = None
    if args.map is not None:
        if args.task == "tag":
            raise OptionError("--map is for --task decode or sample (the tagger has its own "
                              "emissions)")
        from arsdecode.lattice.disambig_map import DisambigMap

        if args.map == "-":
            raise OptionError("--map must be a file: every worker reads it")
        DisambigMap.read(args.map, logmap=args.logmap, tolower=args.tolower)  # fail early
        map_path = str(Path(args.map).resolve())
    elif map_reading_options_set(args):
        raise OptionError("--logmap, --tolower, --keep-unk and --mapw need --map")
    cache = Path(args.model_cache) if args.model_cache else default_model_cache()
    mix: tuple[tuple[str, float], ...] = ()
    features = None
    if target is None:  # tag: the tagger's LM, converted
        model = str(binary_model(lm, cache, lm_config(args)))
    elif target.vpylm is not None:  # workers load the .npz itself: no conversion
        model = str(Path(target.vpylm).resolve())
    else:  # --lm and each --mix-lm converted once; workers memory-map them
        model = str(binary_model(target.model_path, cache, target.config))
        mix = tuple((str(binary_model(path, cache, target.config)), w)
                    for path, w in target.mix)
        features = None if target.features is None else str(Path(target.features).resolve())
    spec = TaskSpec(
        task=args.task, lm=model, emissions=emissions, vpylm=args.vpylm is not None,
        features=features,
        n=args.n,
        seed=args.seed, variant=args.variant, max_iterations=args.max_iterations,
        method=args.method,
        batch=args.batch, target_ar=args.target_ar, ar_window=args.ar_window,
        config=lm_config(args), map=map_path, logmap=args.logmap, tolower=args.tolower,
        keep_unk=args.keep_unk, mapw=args.mapw, lmw=args.lmw,
        mix=mix, mix_lambda=1.0 if target is None else target.lm_lambda,
        mix_missing=args.mix_missing,
    )
    stats = run_batch(spec, args.in_path, args.out, workers=args.workers or 1,
                      scheduler=args.scheduler, chunk_size=args.chunk_size, ordered=args.ordered,
                      retry_errors=args.retry_errors)
    rate = stats.written / stats.seconds if stats.seconds > 0 else 0.0
    print(f"arsdecode batch: wrote {stats.written} lines ({stats.errors} errors), "
          f"{stats.done_before} already done, {stats.seconds:.1f} s, {rate:.1f} items/s",
          file=sys.stderr)
    if stats.written and stats.errors == stats.written:  # nothing ran: say so, exit 2
        print(f"arsdecode: every one of the {stats.written} lines failed (see their \"error\"); "
              "fix the options and rerun with --retry-errors", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK
