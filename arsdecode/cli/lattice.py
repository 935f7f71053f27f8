"""`arsdecode decode` and `arsdecode sample`: exact best path and exact samples of a lattice.

Why its own module: `arsdecode.cli.main` imports a command's module only when that command runs, so
`arsdecode tag` does not load the lattice front end (nor this one the tagger's). The engine is
imported by the handlers, not here: building the parser (for --help) loads no decoder.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from arsdecode.cli import lattice_list, trees, word_lattice
from arsdecode.cli.interrupted import (
    add_trace_option,
    ars_interrupt,
    iteration_trace,
    print_interrupted,
    print_kbest_interrupted,
)
from arsdecode.cli.options import (
    EXIT_OK,
    EXIT_STATUS_HELP,
    EXIT_UNCERTIFIED,
    LATTICE_HELP,
    UNITS_HELP,
    add_engine_options,
    add_features_option,
    add_lm_strictness_options,
    add_lm_weight_option,
    add_map_reading_options,
    add_max_iterations,
    add_method_option,
    add_mix_options,
    add_model_options,
    add_sampling_options,
    check_batch_fits,
    check_fits,
    epilog,
    map_reading_options_set,
    positive_int,
)
from arsdecode.cli.output import (
    check_writable,
    fixed,
    print_json,
    progress_bar,
    report_uncertified,
    write_line,
)
from arsdecode.cli.target import load_target, target_spec
from arsdecode.cli.word_lattice import (
    WORD_LATTICE_HELP,
    add_word_lattice_options,
    is_word_lattice,
)
from arsdecode.errors import OptionError

if TYPE_CHECKING:
    from arsdecode.lattice import Lattice

EPILOG = epilog(UNITS_HELP, LATTICE_HELP, WORD_LATTICE_HELP, EXIT_STATUS_HELP)


def add_decode_parser(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("decode", help="exact best path of a lattice",
                       description="The exact most probable path of a lattice under an n-gram "
                                   "LM (or a VPYLM: --vpylm), with a certificate.",
                       epilog=EPILOG)
    add_model_options(d, "ARPA, MAX-ARPA or maxarpa binary model (log10)")
    add_lm_weight_option(d, "--lm-scale")
    d.set_defaults(lmw=None)  # None: a word lattice's SLF lmscale=, else 1
    add_mix_options(d)
    add_features_option(d)
    d.add_argument("--lattice", default=None,
                   help="lattice file: a confusion network (JSON, format below) or a word "
                        "lattice (SLF, OpenFst text, JSON DAG; below); or --map with --text")
    add_map_options(d)
    add_max_iterations(d)
    add_lm_strictness_options(d)
    d.add_argument("--fst", default=None, metavar="OUT",
                   help="also write the final q-automaton as an OpenFst file (log64 arcs, "
                        "weight = -ln q)")
    d.add_argument("--graphml", default=None, metavar="OUT",
                   help="also write the final q-automaton as GraphML (networkx, ln weights)")
    d.add_argument("--nbest", type=positive_int, default=None, metavar="K",
                   help="also find the K best distinct paths, each certified exact (--method: "
                        "full is the merged DP's k-best, ars k-best Viterbi on q, auto the DP "
                        "within its budgets, else ARS); the JSON gains \"nbest\": [{tokens, "
                        "arcs, log_p, words (= tokens)}], best first, ties by ln p then "
                        "candidate order")
    add_trace_option(d)
    add_engine_options(d)
    add_method_option(d, needs_ars="--fst, --graphml and --trace")
    add_word_lattice_options(d, decode=True)
    trees.add_trees_option(d)
    lattice_list.add_lattice_list_options(
        d.add_argument_group("many word lattices in one process (lattice-tool's lists)"))
    d.set_defaults(handler=cmd_decode)


def print_nbest(args: argparse.Namespace, lm, lattice: Lattice, oov: dict) -> int:
    """`decode --nbest K`: the single best stays in tokens/log_p; the K best go in "nbest"."""
    from arsdecode.api import decode_kbest
    from arsdecode.methods.kbest import KBestInterrupted

    # No more paths than the lattice has; the K-lists of k-best Viterbi hold, per state of
    # the widest layer, K scores of every candidate (and the K paths come back as lists).
    k = min(args.nbest, lattice.num_paths())
    check_fits("--nbest", args.nbest, 24 * max(lattice.widths) + 16 * len(lattice) + 200, k)
    try:
        kb = decode_kbest(lm, lattice, k, method=args.method, variant=args.variant,
                          max_iterations=args.max_iterations, on_iteration=iteration_trace(args))
    except KBestInterrupted as stop:
        return print_kbest_interrupted(args, stop, oov)
    if args.json:  # the fields of a word lattice's k-best too (`KBestResult.to_json`)
        print_json({**kb.to_json(), "oov": oov})
    else:
        for rank, p in enumerate(kb.paths, start=1):
            print(f"{rank}\t{fixed(p.log_p, 6)}\t{' '.join(p.tokens)}")
        status = "certified" if kb.certified else "UNCERTIFIED"
        print(f"({status}, ln) iterations={kb.iterations} states={kb.states} "
              f"seconds={kb.seconds:.3f}", flush=True)
    if not kb.certified:
        report_uncertified(kb.iterations, args.max_iterations)
        return EXIT_UNCERTIFIED
    return EXIT_OK


def add_sample_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("sample", help="exact i.i.d. samples of a lattice's paths",
                       description="Exact independent samples of the lattice's paths under "
                                   "p, by adaptive rejection, and an estimate of ln Z.",
                       epilog=EPILOG)
    add_model_options(s, "ARPA, MAX-ARPA or maxarpa binary model (log10)")
    add_lm_weight_option(s, "--lm-scale")
    s.set_defaults(lmw=None)  # None: a word lattice's SLF lmscale=, else 1
    add_mix_options(s)
    add_features_option(s)
    s.add_argument("--lattice", default=None,
                   help="lattice file: a confusion network (JSON, format below) or a word "
                        "lattice (SLF, OpenFst text, JSON DAG; below); or --map with --text")
    add_map_options(s)
    s.add_argument("-n", type=positive_int, required=True, help="number of samples (>= 1)")
    s.add_argument("--jsonl", action="store_true",
                   help='stream one JSON object per sample, {"tokens": [...], "log_p": ln}, '
                        "flushed as each is accepted (an interrupt keeps what was drawn); the "
                        "summary goes to stderr")
    add_sampling_options(s, default_ar=0.2)
    add_engine_options(s)
    add_lm_strictness_options(s)
    add_word_lattice_options(s)
    trees.add_trees_option(s)
    lattice_list.add_lattice_list_options(
        s.add_argument_group("many word lattices in one process (lattice-tool's lists)"),
        decode=False)
    s.set_defaults(handler=cmd_sample, method="full")


def add_map_options(p: argparse.ArgumentParser) -> None:
    """--map and --text: the lattice from an SRILM disambig map and one observed sentence."""
    g = p.add_argument_group("lattice from an SRILM disambig map (instead of --lattice)")
    g.add_argument("--map", default=None, metavar="MAP",
                   help="map file, 'observed hidden1 p1 hidden2 p2 ...' (see `arsdecode "
                        "disambig --help`)")
    g.add_argument("--text", default=None, metavar="OBS",
                   help="with --map: a file holding one sentence of observed tokens")
    add_map_reading_options(g, prefix="--map: ")


def read_lattice(args: argparse.Namespace) -> Lattice:
    """The lattice of --lattice, or of --map with --text (one sentence)."""
    if args.map is None:
        if args.text is not None or map_reading_options_set(args):
            raise OptionError("--text, --logmap, --tolower, --keep-unk and --mapw need --map")
        if args.lattice is None:
            raise OptionError("give --lattice, or --map with --text")
        return word_lattice.read_confusion(args)
    if args.lattice is not None:
        raise OptionError("give --lattice or --map, not both")
    if args.text is None:
        raise OptionError("--map needs --text (a file with one sentence of observed tokens)")
    from arsdecode.lattice.disambig_map import DisambigMap, text_lattices

    dmap = DisambigMap.read(args.map, logmap=args.logmap, tolower=args.tolower)
    found = [lat for lat in text_lattices(dmap, args.text, mapw=args.mapw,
                                          keep_unk=args.keep_unk) if lat is not None]
    if len(found) != 1:
        raise OptionError(f"{args.text}: holds {len(found)} sentences; this command decodes "
                          "one (`arsdecode disambig` or `batch --map` decode many)")
    return found[0]


def load_lattice_and_lm(args: argparse.Namespace):
    """The lattice (`read_lattice`), and the target and OOV report of `cli.target.load_target`
    (the one builder every command and batch use)."""
    lattice = read_lattice(args)
    return (lattice, *load_target(args, lattice))


def cmd_decode(args: argparse.Namespace) -> int:
    from arsdecode.api import decode

    target_spec(args)  # refuses flags that do not combine, before any file is read
    if args.trees is not None:
        return trees.cmd_decode(args)
    if lattice_list.wants_many(args):
        return lattice_list.cmd_decode_many(args)
    if is_word_lattice(args):
        return word_lattice.cmd_decode(args)
    outputs = [p for p in (args.fst, args.graphml) if p]
    if outputs and args.method == "full":
        raise OptionError("--fst and --graphml write the q-automaton, which only --method ars "
                          "(or auto) builds")
    for path in outputs:  # before the work: a bad path must not cost a decode
        check_writable(path)
    trace = iteration_trace(args)  # refuses --trace without --method ars, before the work
    lattice, lm, oov = load_lattice_and_lm(args)
    if args.nbest is not None:
        return print_nbest(args, lm, lattice, oov)
    try:
        r = decode(lm, lattice, method=args.method, variant=args.variant,
                   max_iterations=args.max_iterations, keep_automaton=bool(outputs),
                   on_iteration=trace)
    except KeyboardInterrupt as err:
        if (stop := ars_interrupt(err)) is None:
            raise
        return print_interrupted(args, stop, oov)
    # The result is printed before the files are written, so a failed write never loses it.
    if args.json:
        print_json({**r.to_json(), "oov": oov})
    else:
        print(" ".join(r.tokens))
        status = "certified" if r.certified else "UNCERTIFIED"
        print(f"log_p={fixed(r.log_p, 6)} ({status}, ln) method={r.method} "
              f"iterations={r.iterations} states={r.states} seconds={r.seconds:.3f}",
              flush=True)
    if outputs:
        write_automaton(args, r.automaton)
    if not r.certified:
        report_uncertified(r.iterations, args.max_iterations)
        return EXIT_UNCERTIFIED
    return EXIT_OK


def write_automaton(args: argparse.Namespace, qa) -> None:
    """--fst and --graphml: the final q-automaton, each file replaced whole or not at all.

    Serialised here, written by Python: OpenFst's own writer reports a full disk as "Write
    failed" lines on stderr that name the temporary file."""
    from arsdecode.core.export import to_fst, to_networkx
    from maxarpa.output import atomic_output

    if qa is None:  # `decode(keep_automaton=True)` returns it whenever a file is asked for
        raise RuntimeError("internal error: decode did not keep the q-automaton")
    if args.fst:
        data = to_fst(qa).write_to_string()
        with atomic_output(args.fst) as tmp:
            tmp.write_bytes(data)
    if args.graphml:
        import networkx as nx

        graph = to_networkx(qa)
        with atomic_output(args.graphml) as tmp:
            nx.write_graphml(graph, str(tmp))


def cmd_sample(args: argparse.Namespace) -> int:
    from arsdecode.api import sample

    if args.json and args.jsonl:
        raise OptionError("--json and --jsonl exclude each other")
    target_spec(args)  # refuses flags that do not combine, before any file is read
    if args.trees is not None:
        return trees.cmd_sample(args)
    if lattice_list.wants_many(args):
        return lattice_list.cmd_many(args, "sample")
    if is_word_lattice(args):
        return word_lattice.cmd_sample(args)
    lattice, lm, oov = load_lattice_and_lm(args)
    check_batch_fits(args.batch, lattice)
    bar = progress_bar(args.n, "sample", leave=False)
    drawn = 0

    def on_sample(tokens: list[str], log_p: float) -> None:
        nonlocal drawn
        drawn += 1
        bar.update(1)
        if args.jsonl:
            print_json({"tokens": tokens, "log_p": log_p})
        elif not args.json:
            write_line(f"{fixed(log_p, 4)}\t{' '.join(tokens)}")

    try:
        r = sample(lm, lattice, args.n, args.seed, batch=args.batch, target_ar=args.target_ar,
                   ar_window=args.ar_window, variant=args.variant, on_sample=on_sample,
                   keep=args.json)  # streamed output keeps nothing per sample
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: say what was kept
        kept = "none printed: --json prints at the end (--jsonl streams)" if args.json else (
            "printed above")
        print(f"arsdecode: stopped after {drawn} of {args.n} samples ({kept})",
              file=sys.stderr)
        raise
    finally:
        bar.close()
    if args.json:
        print_json({**r.to_json(), "oov": oov})
        return EXIT_OK
    print(f"trials={r.trials} acceptance_rate={r.acceptance_rate:.3f} "
          f"log_Z={fixed(r.log_Z, 4)} (ln) states={r.states} seconds={r.seconds:.2f}",
          file=sys.stderr)
    return EXIT_OK
