"""`decode`, `sample` and `marginals` on word lattices: HTK SLF, OpenFst text, JSON DAG (issue 21).

Why its own module: a word lattice (a DAG with epsilon arcs) has its own options (the format,
SLF's scales, a symbol table, k-best of distinct word sequences, lattices written back) and its
own results (arc posteriors, paths of different lengths), while `decode --lattice` on a
confusion network keeps its options and output unchanged. The commands route here when
`is_word_lattice(args)`: `--format` is given, the file's suffix names a word-lattice format
(.slf, .lat, .htk, .fst, .fst.txt), or a .json file holds "arcs" rather than "positions".
`--lattice -` without --format is read once and its format sniffed from the text
(`lattice_files.sniff_format`); the text is kept on `args.lattice_text` for the reader.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from arsdecode.cli.lattice_outputs import (
    arc_marginals,
    arc_posteriors,
    nbest_fields,
    require_times,
    write_rescored,
)
from arsdecode.cli.lattice_scales import read_lattice_and_scales
from arsdecode.cli.options import EXIT_OK, NBEST_FORMATS
from arsdecode.cli.output import check_writable, fixed, print_json
from arsdecode.errors import OptionError

if TYPE_CHECKING:
    from arsdecode.lattice import Lattice, WordLattice

WORD_LATTICE_HELP = (
    "word lattices (--lattice FILE): HTK SLF (.slf, .lat, .htk), OpenFst text as fstprint "
    "writes it (.fst, .fst.txt), or a JSON DAG (.json: {\"start\": 0, \"finals\": {\"5\": 0.0}, "
    "\"arcs\": [[src, dst, \"word\" or null, ln_w], ...]}), gzip allowed; a path scores its "
    "arcs' ln weights, its final node's, the word penalty per word and lm-scale x ln p_LM of "
    "its words with <s> and </s>. Method 'full' (and 'auto') decodes them by the merged "
    "expansion, compiled; 'ars' by adaptive rejection over (node, context) states; k-best, "
    "posteriors and samples come from the expansion. k-best, posteriors and 'ars' stay within "
    "--memory-budget, or refuse in one line before allocating."
)


def add_word_lattice_options(p: argparse.ArgumentParser, *, decode: bool = False,
                             posteriors: bool = False) -> None:
    """The options of a command that reads word lattices (`decode` adds k-best and
    best-path output, `posteriors` the lattice written with its arc posteriors)."""
    g = p.add_argument_group("word lattices (HTK SLF, OpenFst text, JSON DAG, SRILM PFSG)")
    g.add_argument("--format", choices=("slf", "fst", "json", "pfsg"), default=None,
                   help="the --lattice file's format (default: from its suffix, else from "
                        "its first lines)")
    g.add_argument("--acoustic-scale", type=float, default=None, metavar="S",
                   help="SLF: multiplies a= (default: the file's acscale=, else 1); OpenFst "
                        "text with Kaldi 'graph,acoustic' weights: cost = graph + S x acoustic")
    g.add_argument("--word-penalty", type=float, default=None, metavar="P",
                   help="ln weight added per word arc (SLF: replaces the file's wdpenalty=)")
    g.add_argument("--htk-wdpenalty", type=float, default=None, metavar="P",
                   help="the word penalty in log10, lattice-tool's -htk-wdpenalty unit")
    g.add_argument("--htk-lmscale", type=float, default=None, metavar="S",
                   help="the LM scale, as --lm-scale (lattice-tool's -htk-lmscale); "
                        "default for both: the SLF file's lmscale=, else 1")
    g.add_argument("--keep-lattice-lm", action="store_true",
                   help="SLF: keep the file's own l= LM scores (times its lmscale=); PFSG: "
                        "keep its transition costs; beside the new LM's (default: dropped, "
                        "as when rescoring)")
    g.add_argument("--htk-quotes", action=argparse.BooleanOptionalAction, default=True,
                   help="SLF words with HTK's quoting and backslash escapes, read and written "
                        "(the HTK book's rule; lattice-tool -htk-quotes); --no-htk-quotes: "
                        "every word as it is, as lattice-tool reads and writes by default")
    g.add_argument("--symbols", default=None, metavar="FILE",
                   help="OpenFst text: the symbol table of the labels ('symbol id' lines)")
    g.add_argument("--sentence-markers", default=None, metavar="START,END",
                   help="the lattices' sentence markers, read as <s> and </s> (default: "
                        "HTK's !SENT_START,!SENT_END)")
    g.add_argument("--keep-pause", action="store_true",
                   help="score pauses and fillers as words (default: skipped, as lattice-tool "
                        "skips -pau-)")
    g.add_argument("--pause-vocab", default=None, metavar="FILE",
                   help="the pause and filler words, one per line (default: -pau- <sil> "
                        "[SPEECH] [NOISE] !NULL)")
    g.add_argument("--noise-vocab", default=None, metavar="FILE",
                   help="more words the LM skips, one per line (lattice-tool's -noise-vocab)")
    g.add_argument("--ignore-vocab", default=None, metavar="FILE",
                   help="more words the LM skips, one per line (lattice-tool's -ignore-vocab)")
    g.add_argument("--split-multiwords", action="store_true",
                   help="split multiwords joined by _ (i_think) into their words, as "
                        "lattice-tool -split-multiwords")
    g.add_argument("--map-unk", default=None, metavar="WORD",
                   help="score out-of-vocabulary words as WORD, a word of the model, instead "
                        "of <unk>")
    if decode:
        g.add_argument("--nbest-format", choices=NBEST_FORMATS, default="text",
                       help="--nbest's layout: text (rank, ln score, words), srilm (acoustic "
                            "and LM log10 scores, word count, words: lattice-tool's n-best "
                            "files), NBestList1.0 (bytelogs) or kaldi (NAME-k words)")
        g.add_argument("--consensus", action="store_true",
                       help="print the consensus hypothesis (per slot of the word mesh, the "
                            "word of highest exact posterior: minimum expected word error) "
                            "instead of the best path")
        g.add_argument("--write-mesh", default=None, metavar="OUT",
                       help="write the word mesh (confusion network) of exact posteriors in "
                            "SRILM's format, as lattice-tool -write-mesh")
        g.add_argument("--posterior-scale", type=float, default=1.0, metavar="S",
                       help="--consensus, --write-mesh and --ctm confidences: posteriors of "
                            "the scores divided by S (lattice-tool's -posterior-scale; often "
                            "the LM scale); default 1, the target's own posteriors")
        g.add_argument("--ctm", action="store_true",
                       help="print the best path as CTM lines (utt channel start duration "
                            "word confidence) from the SLF node times, each word's confidence "
                            "its arc's exact posterior, as lattice-tool -output-ctm")
        g.add_argument("--unique", action="store_true",
                       help="with --nbest: distinct word sequences, each scored by its best "
                            "path (else distinct paths)")
        g.add_argument("--write-best", default=None, metavar="OUT",
                       help="write the best path (or the --nbest paths) as a lattice of "
                            "parallel chains, format by suffix")
    if decode:
        g.add_argument("--write-lattice", default=None, metavar="OUT",
                       help="write the rescored lattice (SLF): the exact expansion by the "
                            "LM's contexts, every link with a= (all but the LM), l= (the new "
                            "LM's ln score), p= (its exact posterior) and the header's "
                            "lmscale=, so HTK and lattice-tool find the same best path")
    if posteriors:
        g.add_argument("--write-lattice", default=None, metavar="OUT",
                       help="write the lattice with every arc's exact posterior (SLF, p=)")


def is_word_lattice(args: argparse.Namespace) -> bool:
    """Whether --lattice names a word lattice (module docstring) rather than a confusion
    network."""
    path = getattr(args, "lattice", None)
    if path is None:
        return False
    from arsdecode.lattice.input_files import without_compression_suffix

    if args.format is not None:
        return True
    if str(path) == "-":
        return _sniff_stdin(args) != "confusion"
    name = without_compression_suffix(str(path).lower())
    if name.endswith(".json") or name == "-":
        return name.endswith(".json") and _json_has_arcs(path)
    return True  # a suffix that is not .json: a word-lattice format (or its error)


def _sniff_stdin(args: argparse.Namespace) -> str:
    """Read `--lattice -` once, keep its text on `args.lattice_text`, and tell its format:
    "confusion" (JSON with "positions"), else set `args.format` to the word-lattice format
    ("slf", "fst" or "json"). Text of no known format is an OptionError asking for --format."""
    from arsdecode.lattice.confusion import parse_json_text, read_input_text
    from arsdecode.lattice.lattice_files import sniff_format

    text = args.lattice_text = read_input_text("-", "lattice")
    fmt = sniff_format(text)
    if fmt is None:
        raise OptionError("<stdin>: cannot tell the lattice format from its text; give "
                          "--format (slf, fst, json or pfsg)")
    if fmt == "json":
        obj = parse_json_text(text, "<stdin>")
        if not (isinstance(obj, dict) and "arcs" in obj):
            return "confusion"
    args.format = fmt
    return fmt


def read_confusion(args: argparse.Namespace) -> Lattice:
    """The --lattice confusion network (JSON): the file, or the stdin text `is_word_lattice`
    has read."""
    from arsdecode.lattice import Lattice
    from arsdecode.lattice.confusion import parse_json_text

    text = getattr(args, "lattice_text", None)
    if text is None:
        return Lattice.from_json_file(args.lattice)
    return Lattice.from_json_obj(parse_json_text(text, "<stdin>"), source="<stdin>")


def _json_has_arcs(path: str) -> bool:
    from arsdecode.errors import LatticeError
    from arsdecode.lattice.confusion import read_json_input

    try:
        _, obj = read_json_input(path)
    except LatticeError:
        return False  # the confusion-network reader reports it, with its line
    return isinstance(obj, dict) and "arcs" in obj


def read_lattice(args: argparse.Namespace) -> WordLattice:
    """The --lattice word lattice, read with the format options, word penalty applied."""
    return read_lattice_and_scales(args)[0]


def load(args: argparse.Namespace) -> tuple[WordLattice, Any, dict]:
    """The word lattice (--map-unk applied against the target's vocabulary), the target of
    the model flags (`cli.target`: any target, as on a confusion network) and the OOV
    report."""
    from arsdecode.cli.target import load_word_lattice_target

    for out in (getattr(args, "write_best", None), getattr(args, "write_lattice", None),
                getattr(args, "write_mesh", None)):
        if out:
            check_writable(out)
    wl, scales = read_lattice_and_scales(args)
    model, oov, wl = load_word_lattice_target(args, wl, getattr(args, "map_unk", None),
                                              lm_weight=scales["lm_scale"])
    args.lattice_scales = scales  # reported in the JSON output
    return wl, model, oov


def cmd_decode(args: argparse.Namespace) -> int:
    """`decode --lattice WORD_LATTICE`: the exact best path, or --nbest K of them."""
    from arsdecode.api import decode
    from arsdecode.cli.interrupted import ars_interrupt, iteration_trace, print_interrupted
    from arsdecode.lattice.lattice_files import (
        lattice_name,
        write_text_output,
        write_word_lattice,
    )
    from arsdecode.lattice.slf import paths_lattice

    for opt in ("fst", "graphml"):
        if getattr(args, opt, None):
            raise OptionError(f"--{opt} writes a confusion network's q-automaton; not for "
                              "word lattices yet")
    if args.unique and args.nbest is None:
        raise OptionError("--unique needs --nbest")
    trace = iteration_trace(args)
    if trace is not None and args.nbest is not None:
        raise OptionError("--trace shows ARS's iterations; a word lattice's k-best comes from "
                          "its expansion")
    if args.nbest is not None and args.method == "ars":
        raise OptionError("--nbest on a word lattice comes from its exact expansion: use "
                          "--method full or auto (--method ars decodes the single best path)")
    wl, lm, oov = load(args)
    if args.nbest is None:
        try:  # Ctrl-C of ARS: the best path so far (the expansion has none to give)
            r = decode(lm, wl, method=args.method, max_iterations=args.max_iterations,
                       on_iteration=trace)
        except KeyboardInterrupt as err:
            if (stop := ars_interrupt(err)) is None:
                raise
            return print_interrupted(args, stop, oov)
        assert r.arcs is not None  # a lattice's decode always holds its path
        paths = [r.arcs]
        if args.ctm:
            require_times(wl)
        confidence = (arc_posteriors(lm, wl, args.posterior_scale)  # once, for mesh and CTM
                      if args.ctm or args.consensus or args.write_mesh else [])
        if args.consensus or args.write_mesh:
            from arsdecode.lattice.mesh import build_mesh

            mesh = build_mesh(wl, confidence, r.arcs)
            if args.write_mesh:
                write_text_output(args.write_mesh, mesh.to_srilm(lattice_name(args.lattice)))
            if args.consensus:
                if args.json:
                    print_json({"tokens": mesh.consensus(), "mesh": mesh.slots,
                                "best": r.to_json(), "scales": args.lattice_scales})
                else:
                    print(" ".join(mesh.consensus()))
                return EXIT_OK
        if args.ctm:
            from arsdecode.lattice.ctm import ctm_lines

            for line in ctm_lines(wl, r.arcs, confidence, lattice_name(args.lattice)):
                print(line)
            sys.stdout.flush()
        elif args.json:
            print_json({**r.to_json(), "oov": oov, "scales": args.lattice_scales})
        else:
            print(" ".join(r.tokens))
            size = (f"iterations={r.iterations} states={r.states}" if r.method == "ars"
                    else f"states={r.states} transitions={r.transitions}")
            status = "certified" if r.certified else "UNCERTIFIED"
            print(f"log_p={fixed(r.log_p, 6)} ({status}, ln) method={r.method} {size} "
                  f"seconds={r.seconds:.3f}", flush=True)
        if not r.certified:
            from arsdecode.cli.options import EXIT_UNCERTIFIED
            from arsdecode.cli.output import report_uncertified

            report_uncertified(r.iterations, getattr(args, "max_iterations", None))
            return EXIT_UNCERTIFIED
    else:
        kb = decode(lm, wl, method=args.method, k=args.nbest, unique=args.unique)
        paths = [p.arcs for p in kb]
        if args.json:
            print_json({**nbest_fields(kb), "oov": oov, "scales": args.lattice_scales})
        else:
            from arsdecode.lattice.nbest_formats import format_nbest, nbest_entries

            entries = nbest_entries(wl, list(kb), args.lattice_scales["lm_scale"])
            sys.stdout.write(format_nbest(entries, args.nbest_format, lattice_name(args.lattice)))
    if args.write_best:
        write_word_lattice(paths_lattice(wl, paths), args.write_best,
                           htk_quotes=args.htk_quotes)
    if args.write_lattice:
        write_rescored(lm, wl, args.write_lattice, args.lattice_scales["lm_scale"],
                       lattice_name(args.lattice), args.htk_quotes)
    return EXIT_OK


SAMPLE_CHUNK = 100_000
"""Streamed word-lattice samples are drawn this many at a time (one generator throughout)."""


def cmd_sample(args: argparse.Namespace) -> int:
    """`sample --lattice WORD_LATTICE -n N`: exact i.i.d. paths (from the merged expansion).

    Streamed output (--jsonl, text) is drawn SAMPLE_CHUNK paths at a time, so memory does not
    grow with N (it held every path: 200 MB at N = 200,000); up to SAMPLE_CHUNK the samples
    are those of one call with the seed. Each chunk expands the lattice again."""
    import numpy as np

    from arsdecode.methods.dispatch import sample

    wl, lm, _ = load(args)
    rng = np.random.default_rng(args.seed)
    if args.json:
        draws = sample(lm, wl, args.n, rng)  # dispatch's choice, which it reports
        print_json({**draws.to_json(), "scales": args.lattice_scales})
        return EXIT_OK
    left = args.n
    while left:
        chunk = min(left, SAMPLE_CHUNK)
        for p in sample(lm, wl, chunk, rng).paths:
            if args.jsonl:
                print(json.dumps(p.to_json()), flush=True)
            else:
                print(f"{fixed(p.log_p, 6)}\t{' '.join(p.tokens)}")
        left -= chunk
    return EXIT_OK


def cmd_marginals(args: argparse.Namespace) -> int:
    """`marginals --lattice WORD_LATTICE`: every arc's exact posterior and ln Z (the one
    MarginalsResult, its JSON a confusion network's fields with "arcs" and "scales" added)."""
    from arsdecode.lattice.lattice_files import write_word_lattice

    if args.method == "sample":
        raise OptionError("word lattices get exact posteriors only (--method auto or full)")
    args.method = "full"
    wl, lm, _ = load(args)
    result, arcs = arc_marginals(lm, wl)
    log_z = result.log_Z
    if args.write_lattice:
        write_word_lattice(wl, args.write_lattice, format="slf",
                           posteriors=[a["posterior"] for a in arcs], htk_quotes=args.htk_quotes)
    if args.json:
        print_json({**result.to_json(), "arcs": arcs, "scales": args.lattice_scales})
        return EXIT_OK
    for a in arcs:
        print(f"{a['src']}\t{a['dst']}\t{a['word'] or '<eps>'}\t{a['posterior']:.6f}")
    print(f"log_Z={fixed(log_z, 6)} (exact, ln)")
    return EXIT_OK

