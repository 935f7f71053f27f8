"""The VPYLM on the command line (issue 22, target 4): `arsdecode train-vpylm`, and the loader
behind `decode`, `sample`, `marginals` and `batch --vpylm`.

Why its own module: training a variable-order Pitman-Yor LM (arsdecode.model.vpylm) is the
one way to make the model those options read, so the command and the loader live together:
both know the file is one .npz ("vpylm-1"). Training is `train_vpylm` itself (the same seed
gives the same counts; tests/test_vpylm_cli.py checks), whose `on_pass` moves a terminal's
progress bar. The model is written whole or not at all (a temporary file, then a rename), to
exactly the path --out names (numpy would add ".npz" to a name).
The engine is imported by the handlers, not here: building the parser loads no numpy.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from arsdecode.cli.options import EXIT_OK, epilog, int_at_least, positive_int, seed_int
from arsdecode.cli.output import check_writable, print_json, progress_bar
from arsdecode.cli.training_text import read_sentences
from arsdecode.errors import OptionError

if TYPE_CHECKING:
    from arsdecode.model.vpylm import VpylmLM
    from maxarpa.config import Config
    from maxarpa.model import Model



def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train-vpylm", help="train a variable-order Pitman-Yor LM (VPYLM) for --vpylm",
        description="Train a variable-order Pitman-Yor LM (Mochihashi & Sumita 2007) by the "
                    "paper's Gibbs sampler, and save it as one .npz that `decode`, `sample`, "
                    "`marginals` and `batch` read with --vpylm.",
        epilog=epilog("input: UTF-8 text (gzip, bzip2 or xz allowed), one sentence per line, "
                      "tokens separated by whitespace; blank lines are skipped; <s> and </s> "
                      "are added by the trainer and must not appear; <unk> may (it is the "
                      "word that unknown lattice candidates are scored as).",
                      "exit status: 0 success; 2 bad input or options (one line on stderr); "
                      "130 interrupted (Ctrl-C): nothing is written."),
    )
    p.add_argument("--text", required=True, metavar="TRAIN",
                   help="training text, one sentence per line ('-' for stdin)")
    p.add_argument("--out", required=True, metavar="MODEL",
                   help="the model file to write (written as named; .npz is the usual suffix)")
    p.add_argument("--depth", type=positive_int, default=8,
                   help="deepest context (words) the tree may grow, 1..10")
    p.add_argument("--sweeps", type=int_at_least(0), default=5,
                   help="Gibbs sweeps after the initial seating (>= 0), each followed by "
                        "resampling the discounts and strengths")
    p.add_argument("--seed", type=seed_int, default=0,
                   help="random seed >= 0; the same seed and text give the same model")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from arsdecode.model.vpylm_train import DISCOUNTS, train_vpylm
    from maxarpa.output import atomic_output

    top = len(DISCOUNTS) - 1
    if not 1 <= args.depth <= top:
        raise OptionError(f"--depth must be in 1..{top}, got {args.depth}")
    check_writable(args.out)  # before the work: a bad path must not cost a training run
    sentences = read_sentences(args.text)
    start = time.perf_counter()
    with progress_bar(args.sweeps + 1, "pass", leave=False, desc="seat+sweeps") as bar:
        counts = train_vpylm(sentences, args.depth, args.sweeps, args.seed,
                             on_pass=lambda: bar.update(1))
    with atomic_output(args.out) as tmp, open(tmp, "wb") as fh:
        counts.save(fh)  # a file object: numpy adds no ".npz"
    seconds = time.perf_counter() - start
    info = {"out": args.out, "sentences": len(sentences),
            "tokens": int(sum(len(s) for s in sentences)), "vocab": len(counts.vocab) - 1,
            "depth": args.depth, "sweeps": args.sweeps, "seed": args.seed,
            "nodes": len(counts.parent), "max_node_depth": _max_depth(counts.parent),
            "discounts": counts.discounts, "strengths": counts.strengths,
            "seconds": seconds}
    if args.json:
        print_json(info)
    else:
        print(f"trained a VPYLM on {info['sentences']} sentences ({info['tokens']} tokens, "
              f"{info['vocab']} words with </s> and <unk>): {info['nodes']} context nodes, "
              f"deepest {info['max_node_depth']} of {args.depth}, {args.sweeps} sweeps, "
              f"{seconds:.1f} s -> {args.out}")
    return EXIT_OK


def _max_depth(parent) -> int:
    """Depth of the deepest node (parents precede children in the saved arrays)."""
    depth = [0] * len(parent)
    for v in range(1, len(parent)):
        depth[v] = depth[int(parent[v])] + 1
    return max(depth, default=0)


def load_ngram(path: str, config: Config) -> Model:
    """The --lm model (`arsdecode.api.load_lm`); a VPYLM given there is an
    OptionError pointing to --vpylm, instead of maxarpa's complaint about a binary model's
    members (a VPYLM is an .npz too). Checked only once maxarpa has refused the file.

    A binary model is mapped, not read (`mmap=True`, as the batch workers do): the engine
    copies what it runs on into the compiled core anyway, so reading the file first was a
    second copy, about 5 ms of a one-lattice process on the 5.8 MB SMS model (issue 34)."""
    from arsdecode.api import load_lm
    from arsdecode.errors import ModelError
    from maxarpa.errors import MaxArpaError

    try:
        return load_lm(path, config=config, mmap=True)
    except MaxArpaError as refused:
        try:
            load_target(path)
        except ModelError:
            raise refused from None  # not a VPYLM either: maxarpa's message stands
        raise OptionError(f"--lm {path}: a VPYLM model (from `arsdecode train-vpylm`), not "
                          "an n-gram model: give it with --vpylm") from None


def load_target(path: str) -> VpylmLM:
    """The --vpylm model as a target (`load_vpylm`: any file that is not a readable VPYLM is
    one ModelError naming it)."""
    from arsdecode.model.vpylm import load_vpylm

    return load_vpylm(path)
