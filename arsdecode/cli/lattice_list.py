"""`decode|sample|marginals --in-lattice-list FILE | --in-lattice-dir DIR | --in-kaldi-ark ARK
[--out-dir DIR]`: many word lattices, one process, one model load (issue 32).

Why: a recogniser leaves a directory of lattices, and one process per lattice spends most of
its time starting Python and loading the model (lattice-tool's `-in-lattice-list` and
`-out-lattice-dir` exist for the same reason). Here the target is built once, every lattice is
read with the same format options and vocabulary conventions as `--lattice`, and:

- each lattice's result is one JSON object (what `decode --json` prints, plus "lattice", the
  input path): written to `OUT_DIR/NAME.json` with --out-dir (NAME: the input's file name
  without its compression and lattice suffixes; two inputs with one NAME are refused before any
  work), else printed, one line per lattice: JSON lines with --json, otherwise
  `NAME word word ...` as `lattice-tool -viterbi-decode` prints (with --nbest K, `NAME rank
  log_p words` lines);
- an output file appears complete or not at all (written through a temporary file), so a run
  that stops can be started again: lattices whose output file exists are skipped (resume);
- a lattice that cannot be read or decoded gets its one-line error on stderr and the run goes
  on; at the end, a summary line on stderr; the exit status is 2 when any lattice failed, 3 when
  any best path is uncertified (ARS stopped by --max-iterations), else 0;
- a progress bar on a terminal, nothing when stderr is piped.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arsdecode.cli.options import EXIT_BAD_INPUT, EXIT_OK, EXIT_UNCERTIFIED
from arsdecode.cli.output import oov_report, print_json, progress_bar, warn_oov
from arsdecode.errors import ArsDecodeError, OptionError

SINGLE_FILE_OPTIONS = ("write_best", "write_lattice", "write_mesh", "trace", "fst",
                       "graphml")
INPUT_OPTIONS = ("in_lattice_list", "in_lattice_dir", "in_kaldi_ark")


@dataclass(frozen=True)
class LatticeInput:
    """One lattice of a run: its file, its name (outputs, n-best entries), and for a lattice
    of a Kaldi archive its text (read as OpenFst text, errors naming the archive's lines)."""

    path: Path
    name: str
    text: str | None = None


def add_lattice_list_options(g: argparse._ArgumentGroup, *, decode: bool = True) -> None:
    """The options of `decode` (`decode`), `sample` and `marginals` that take many lattices
    (module docstring)."""
    g.add_argument("--in-lattice-list", default=None, metavar="FILE",
                   help="every word lattice listed in FILE (one path per line), "
                        "loading the model once")
    g.add_argument("--in-lattice-dir", default=None, metavar="DIR",
                   help="every word lattice file in DIR (sorted by name)")
    g.add_argument("--workers", type=int, default=1, metavar="N",
                   help="run the lattices on N local Dask worker processes (each loads the "
                        "model once); outputs stay in input order")
    g.add_argument("--in-kaldi-ark", default=None, metavar="ARK",
                   help="every lattice of a Kaldi text archive (lattice-copy ... "
                        "ark,t:-; Lattice or CompactLattice weights, --symbols words.txt), "
                        "each named by its utterance key")
    g.add_argument("--out-dir", default=None, metavar="DIR",
                   help="with --in-lattice-list/--in-lattice-dir: write each result to "
                        "DIR/NAME.json; a rerun skips the lattices already written")
    if not decode:
        return
    g.add_argument("--out-mesh-dir", default=None, metavar="DIR",
                   help="write each word mesh of exact posteriors to DIR/NAME.mesh (SRILM's "
                        "format), as lattice-tool's -write-mesh-dir")
    g.add_argument("--out-lattice-dir", default=None, metavar="DIR",
                   help="write each rescored lattice (as decode's --write-lattice) to "
                        "DIR/NAME.slf.gz, as lattice-tool's -out-lattice-dir")


def wants_many(args: argparse.Namespace) -> bool:
    """Whether `decode` was given a list or a directory of lattices."""
    many = any(getattr(args, opt, None) is not None for opt in INPUT_OPTIONS)
    for opt in ("out_dir", "out_lattice_dir", "out_mesh_dir"):
        if not many and getattr(args, opt, None) is not None:
            raise OptionError(f"--{opt.replace('_', '-')} needs --in-lattice-list or "
                              "--in-lattice-dir")
    return many


def lattice_inputs(args: argparse.Namespace) -> list[LatticeInput]:
    """The lattices of --in-lattice-list, --in-lattice-dir or --in-kaldi-ark, in order."""
    from arsdecode.lattice.input_files import read_input_text
    from arsdecode.lattice.lattice_files import lattice_name

    given = [opt for opt in INPUT_OPTIONS if getattr(args, opt, None) is not None]
    if len(given) > 1:
        raise OptionError(" and ".join(f"--{g.replace('_', '-')}" for g in given)
                          + ": give one")
    if getattr(args, "lattice", None) is not None or getattr(args, "map", None) is not None:
        raise OptionError("give --lattice (one lattice) or --in-lattice-list/--in-lattice-dir/"
                          "--in-kaldi-ark (many), not both")
    if args.in_kaldi_ark is not None:
        from arsdecode.lattice.fst_text import split_kaldi_archive

        ark = args.in_kaldi_ark
        return [LatticeInput(Path(ark), key, text) for key, text in
                split_kaldi_archive(read_input_text(ark, "Kaldi archive"), ark)]
    if args.in_lattice_list is not None:
        text = read_input_text(args.in_lattice_list, "lattice list")
        paths = [Path(line.strip()) for line in text.splitlines()
                 if line.strip() and not line.lstrip().startswith("#")]
        source = args.in_lattice_list
    else:
        folder = Path(args.in_lattice_dir)
        if not folder.is_dir():
            raise OptionError(f"{folder}: not a directory")
        paths = sorted(p for p in folder.iterdir()
                       if p.is_file() and not p.name.startswith("."))
        source = str(folder)
    if not paths:
        raise OptionError(f"{source}: no lattices")
    return [LatticeInput(p, lattice_name(p)) for p in paths]


def cmd_decode_many(args: argparse.Namespace) -> int:
    """`decode` over many lattices (module docstring)."""
    return cmd_many(args, "decode")


def cmd_many(args: argparse.Namespace, task: str) -> int:
    """`task` ("decode", "sample" or "marginals") over many lattices (module docstring)."""
    from arsdecode.cli.lattice_scales import lm_scale_flag
    from arsdecode.cli.target import build, target_spec

    for opt in SINGLE_FILE_OPTIONS:
        if getattr(args, opt, None):
            raise OptionError(f"--{opt.replace('_', '-')} names one output; with many lattices "
                              "use --out-dir")
    inputs = lattice_inputs(args)
    suffix = output_suffix(args)
    first: dict[str, LatticeInput] = {}
    for one in inputs:
        if one.name in first:
            raise OptionError(f"{one.path} and {first[one.name].path} would both write "
                              f"{one.name}{suffix}")
        first[one.name] = one
    out_dir = Path(args.out_dir) if args.out_dir is not None else None
    lattice_dir, mesh_dir = (Path(d) if d is not None else None for d in (
        getattr(args, "out_lattice_dir", None), getattr(args, "out_mesh_dir", None)))
    for folder in (out_dir, lattice_dir, mesh_dir):
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
    models: dict[Any, Any] = {}  # each model file read once, for every lattice
    targets: dict[float, Any] = {}  # by LM scale: an SLF file's lmscale= can differ

    def target_for(lm_scale: float) -> Any:
        if lm_scale not in targets:
            targets[lm_scale] = build(target_spec(args, lm_weight=lm_scale), models)
        return targets[lm_scale]

    flag = lm_scale_flag(args)
    target_for(1.0 if flag is None else flag)  # a bad model stops the run before any lattice
    counts = {"lattices": len(inputs), "decoded": 0, "skipped": 0, "failed": 0,
              "uncertified": 0}
    start = time.perf_counter()
    bar = progress_bar(len(inputs), "lattice")
    jobs = []
    for one in inputs:
        job = Job(one, *(folder / f"{one.name}{ext}" if folder is not None else None
                         for folder, ext in ((out_dir, suffix), (lattice_dir, ".slf.gz"),
                                             (mesh_dir, ".mesh"))))
        written = [f for f in (job.out, job.rescored, job.mesh_file) if f is not None]
        if written and all(f.exists() for f in written):
            counts["skipped"] += 1
            bar.update(1)
        else:
            jobs.append(job)
    workers = getattr(args, "workers", 1)
    if workers > 1:
        from arsdecode.cli.lattice_workers import run_on_dask

        results = run_on_dask(args, task, jobs, workers, solve)
    else:
        results = (solve(args, task, job, target_for) for job in jobs)
    try:
        for job, (record, nbest, error) in zip(jobs, results):  # in input order
            bar.update(1)
            if record is None:  # one line naming the lattice, and go on
                print(f"arsdecode: {error}", file=sys.stderr, flush=True)
                counts["failed"] += 1
                continue
            counts["decoded"] += 1
            counts["uncertified"] += not record.get("certified", True)
            emit(args, job.one.name, record, nbest, job.out)
    finally:
        bar.close()
    print(" ".join(f"{k}={v}" for k, v in counts.items())
          + f" seconds={time.perf_counter() - start:.2f}", file=sys.stderr, flush=True)
    if counts["failed"]:
        return EXIT_BAD_INPUT
    return EXIT_UNCERTIFIED if counts["uncertified"] else EXIT_OK


@dataclass(frozen=True)
class Job:
    """A lattice to run and where its files go (None: not asked for)."""

    one: LatticeInput
    out: Path | None
    rescored: Path | None
    mesh_file: Path | None


Outcome = tuple["dict[str, Any] | None", "list[Any] | None", "str | None"]
"""A job's (record, n-best entries, None), or (None, None, its one-line error)."""


def solve(args: argparse.Namespace, task: str, job: Job, target_for: Any) -> Outcome:
    """One job in this process (or a worker's): an input error is its one-line message,
    naming the lattice; any other exception is a bug and goes up."""
    try:
        record, nbest = decode_one(args, target_for, job.one, job.rescored, job.mesh_file,
                                   task)
    except ArsDecodeError as err:
        path = str(job.one.path)
        return None, None, f"{'' if path in str(err) else path + ': '}{err}"
    return record, nbest, None


def output_suffix(args: argparse.Namespace) -> str:
    """The --out-dir file of a lattice: NAME.json, or NAME.nbest for an n-best list in a
    format other than the JSON and text ones (`lattice.nbest_formats`)."""
    fmt = getattr(args, "nbest_format", "text")
    nbest = getattr(args, "nbest", None)
    return ".nbest" if nbest is not None and fmt != "text" and not args.json else ".json"


def decode_one(args: argparse.Namespace, target_for: Any, source: LatticeInput,
               rescored: Path | None = None, mesh_file: Path | None = None,
               task: str = "decode") -> tuple[dict[str, Any], list[Any] | None]:
    """One lattice read as `--lattice PATH` would be (its scales included), decoded with the
    target of its LM scale (`target_for(lm_scale)`, built once per scale): its JSON record,
    and with --nbest its n-best entries (`lattice.nbest_formats`). `rescored`: where its
    rescored lattice goes (--out-lattice-dir), `mesh_file` its word mesh (--out-mesh-dir)."""
    from arsdecode.api import decode
    from arsdecode.cli.lattice_outputs import (
        arc_marginals,
        arc_posteriors,
        nbest_fields,
        require_times,
        write_rescored,
    )
    from arsdecode.cli.lattice_scales import read_lattice_and_scales
    from arsdecode.lattice.nbest_formats import nbest_entries
    from arsdecode.lattice.vocabulary import map_unknown_words

    path, name = source.path, source.name
    fields: dict[str, Any] = {"lattice": str(path)}
    if source.text is not None:  # a Kaldi archive's lattice: its text, as OpenFst text
        fields.update(lattice_text=source.text, format="fst")
    one = argparse.Namespace(**{**vars(args), **fields})
    wl, scales = read_lattice_and_scales(one)
    target = target_for(scales["lm_scale"])
    if args.map_unk is not None:
        wl = map_unknown_words(wl, target.vocabulary(), args.map_unk, target.source)
    oov = oov_report(wl, target.vocabulary())
    warn_oov(oov, target.hidden, target.source,
             lattice=str(path) if source.text is None else f"{path} ({name})")
    head = {"lattice": str(path)} | ({"utterance": name} if source.text is not None else {})
    tail = {"oov": oov, "scales": scales}
    if rescored is not None:
        write_rescored(target.model, wl, str(rescored), scales["lm_scale"], name,
                       args.htk_quotes)
    if task == "sample":
        import numpy as np

        from arsdecode.methods.dispatch import sample

        draws = sample(target.model, wl, args.n, np.random.default_rng(args.seed))
        return {**head, **draws.to_json(), **tail}, None  # "samples": the kept path objects
    if task == "marginals":
        result, arcs = arc_marginals(target.model, wl)
        return {**head, **result.to_json(), "arcs": arcs, **tail}, None
    if args.nbest is None:
        r = decode(target.model, wl, method=args.method, max_iterations=args.max_iterations)
        record = {**head, **r.to_json(), **tail}
        assert r.arcs is not None  # a lattice's decode always holds its path
        if args.ctm:
            require_times(wl)
        confidence = (arc_posteriors(target.model, wl, args.posterior_scale)  # once, mesh and CTM
                      if args.ctm or args.consensus or mesh_file is not None else [])
        if args.ctm:
            from arsdecode.lattice.ctm import ctm_lines

            record["ctm"] = ctm_lines(wl, r.arcs, confidence, name)
        if args.consensus or mesh_file is not None:
            from arsdecode.lattice.lattice_files import write_text_output
            from arsdecode.lattice.mesh import build_mesh

            mesh = build_mesh(wl, confidence, r.arcs)
            if mesh_file is not None:
                write_text_output(mesh_file, mesh.to_srilm(name))
            if args.consensus:
                record.update(consensus=mesh.consensus(), mesh=mesh.slots)
        return record, None
    kb = decode(target.model, wl, method=args.method, k=args.nbest, unique=args.unique)
    return ({**head, **nbest_fields(kb), **tail},
            nbest_entries(wl, list(kb), scales["lm_scale"]))


def emit(args: argparse.Namespace, name: str, record: dict[str, Any], nbest: list[Any] | None,
         out: Path | None) -> None:
    """A lattice's result: its file under --out-dir (complete or absent), or its lines."""
    from arsdecode.lattice.nbest_formats import format_nbest

    fmt = getattr(args, "nbest_format", "text")
    if out is not None:
        from maxarpa.output import atomic_output

        text = (format_nbest(nbest, fmt, name) if out.suffix == ".nbest" and nbest is not None
                else json.dumps(record) + "\n")
        with atomic_output(out) as tmp:
            tmp.write_text(text, encoding="utf-8")
        return
    if args.json:
        print_json(record)
    elif "paths" in record:  # samples (a SampleResult's uniform field)
        for p in record["paths"]:
            print(f"{name}\t{p['log_p']:.6f}\t{' '.join(p['tokens'])}")
        sys.stdout.flush()
    elif "marginals" in record:  # a MarginalsResult's, with the arcs' records
        for a in record["arcs"]:
            print(f"{name}\t{a['src']}\t{a['dst']}\t{a['word'] or '<eps>'}\t"
                  f"{a['posterior']:.6f}")
        print(f"{name}\tlog_Z={record['log_Z']:.6f} (exact, ln)", flush=True)
    elif "consensus" in record:
        print(" ".join([name, *record["consensus"]]), flush=True)
    elif "ctm" in record:
        for line in record["ctm"]:
            print(line)
        sys.stdout.flush()
    elif nbest is not None and fmt != "text":
        sys.stdout.write(format_nbest(nbest, fmt, name))
        sys.stdout.flush()
    elif nbest is not None:
        for line in format_nbest(nbest, "text").splitlines():
            print(f"{name}\t{line}", flush=True)
    else:
        print(" ".join([name, *record["tokens"]]), flush=True)
