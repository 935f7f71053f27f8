"""`arsdecode batch`: decode, sample or tag a JSONL corpus, in-process or on a Dask cluster.

Why a front end of its own: batch.py is the engine (files, chunks, scheduling); this module
turns options into a TaskSpec, makes sure the workers get a binary model they can load at disk
speed (converting a text model once, before any worker starts), and prints one summary line.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

from arsdecode.automaton import VARIANTS
from arsdecode.batch import DEFAULT_CHUNK, TASKS, BatchError, TaskSpec, run_batch
from arsdecode.cli_options import (
    add_lm_strictness_options,
    add_method_option,
    add_sampling_options,
    lm_config,
)
from maxarpa.config import DEFAULT_CONFIG, Config

CACHE_DIR_NAME = ".arsdecode-models"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "batch", help="decode/sample/tag a JSONL corpus (resumable; Dask for many workers)",
        description=(
            'Input: one JSON object per line, {"id", "positions"} ({"id", "tokens"} for '
            '--task tag). Output: one JSON object per line, {"id", ...} with the fields of the '
            'single-item command, or {"id", "line", "error"} for a line that cannot be run. '
            "Rerunning with the same --out skips the ids already there. Sampling seeds derive "
            "from (--seed, id), so results do not depend on workers or order. A text model "
            "(ARPA or MAX-ARPA) is first converted once to a binary model in --model-cache "
            f"(default: {CACHE_DIR_NAME}/ beside --out) and reused by later runs; workers "
            "memory-map that file."),
    )
    p.add_argument("--lm", default=None,
                   help="ARPA, MAX-ARPA or maxarpa binary model (tag: default the tag LM of "
                        "--models)")
    p.add_argument("--in", dest="in_path", required=True, metavar="JSONL", help="input items")
    p.add_argument("--out", required=True, metavar="JSONL",
                   help="results; appended to, so a rerun resumes where a run stopped")
    p.add_argument("--task", choices=TASKS, default="decode")
    p.add_argument("--workers", type=int, default=None,
                   help="local Dask worker processes (default 1: in this process, no Dask)")
    p.add_argument("--scheduler", default=None, metavar="tcp://HOST:8786",
                   help="use a running Dask cluster instead (its workers need arsdecode and "
                        "the model at the same path)")
    p.add_argument("-n", type=int, default=1, help="--task sample: samples per item")
    p.add_argument("--ordered", action="store_true",
                   help="write results in input order (default: as they finish)")
    p.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK,
                   help="items per task: the unit of scheduling, writing and redoing")
    p.add_argument("--model-cache", default=None, metavar="DIR",
                   help="where a text --lm is converted to binary (default: beside --out)")
    add_lm_strictness_options(p)
    p.add_argument("--variant", choices=VARIANTS, default=None,
                   help="refinement variant (default: the engine's)")
    p.add_argument("--max-iterations", type=int, default=None,
                   help="decode: stop uncertified after this many (method 'ars')")
    add_method_option(p)
    p.add_argument("--models", default=None, help="--task tag: directory of the POS models")
    p.add_argument("--order", type=int, default=None,
                   help="--task tag: tag LM order (default: as `arsdecode tag`)")
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


def tag_paths(args: argparse.Namespace) -> tuple[str | None, str]:
    """(tag LM, emissions) of --models for --order, as `arsdecode tag` finds them."""
    from arsdecode.tasks.pos import PosModelError
    from arsdecode.tasks.pos_models import models_dir, tag_lm_path

    d = models_dir(args.models)
    lm = args.lm or str(tag_lm_path(d, args.order).resolve())
    if not (d / "emissions.json.gz").is_file():
        raise PosModelError(f"{d}: no emissions.json.gz")
    return lm, str((d / "emissions.json.gz").resolve())


def run(args: argparse.Namespace) -> int:
    if args.workers is not None and args.scheduler:
        raise BatchError("give --workers or --scheduler, not both")
    if min(args.n, args.batch, args.chunk_size, args.workers or 1) < 1:
        raise BatchError("--chunk-size, --workers, -n and --batch must be at least 1")
    if not Path(args.in_path).is_file():
        raise BatchError(f"{args.in_path}: no such input file")
    emissions = None
    lm = args.lm
    if args.task == "tag":
        lm, emissions = tag_paths(args)
    elif lm is None:
        raise BatchError(f"--task {args.task} needs --lm")
    out = Path(args.out)
    cache = Path(args.model_cache) if args.model_cache else out.resolve().parent / CACHE_DIR_NAME
    spec = TaskSpec(
        task=args.task, lm=str(binary_model(lm, cache, lm_config(args))), emissions=emissions,
        n=args.n,
        seed=args.seed, variant=args.variant, max_iterations=args.max_iterations,
        method=args.method,
        batch=args.batch, target_ar=args.target_ar, ar_window=args.ar_window,
        config=lm_config(args),
    )
    stats = run_batch(spec, args.in_path, out, workers=args.workers or 1,
                      scheduler=args.scheduler, chunk_size=args.chunk_size, ordered=args.ordered)
    rate = stats.written / stats.seconds if stats.seconds > 0 else 0.0
    print(f"arsdecode batch: wrote {stats.written} lines ({stats.errors} errors), "
          f"{stats.done_before} already done, {stats.seconds:.1f} s, {rate:.1f} items/s",
          file=sys.stderr)
    return 0
