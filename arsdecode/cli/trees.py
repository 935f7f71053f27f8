"""`decode|sample|marginals --trees FILE`: the tree-automaton input kind on the command line
(issue 31).

Why its own module: a tree automaton has its own file formats (JSON, Alto/IRTG text:
`arsdecode.trees.formats`) and its own outputs (the bracketed tree beside its yield, rule
posteriors), while the target is built exactly as for lattices (`cli.target`: any target, one
builder) and the methods are reached through the public API (`arsdecode.decode` etc.), which
checks every option.
"""

from __future__ import annotations

import argparse
from typing import Any

from arsdecode.cli.options import EXIT_OK, EXIT_UNCERTIFIED
from arsdecode.cli.output import fixed, oov_of_words, print_json, warn_oov
from arsdecode.errors import OptionError

TREES_HELP = ("a tree automaton instead of a lattice: JSON {\"start\": ..., \"rules\": [{\"lhs\", "
              "\"label\", \"children\", \"weight\" (ln)}]} or Alto/IRTG text ('S! -> f(A, B) "
              "[0.5]'); a derivation scores its rules' weights plus the LM's ln p of its "
              "yield")


def add_trees_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trees", default=None, metavar="FILE", help=TREES_HELP)


def load(args: argparse.Namespace) -> tuple[Any, Any, dict]:
    """The automaton of --trees, the target of the model flags and the OOV report of its
    leaf words (warned about, or an error when the model has no <unk>)."""
    from arsdecode.cli.target import build, target_spec
    from arsdecode.trees.automaton import NULL, TreeAutomaton

    for opt in ("lattice", "map"):
        if getattr(args, opt, None) is not None:
            raise OptionError(f"give --trees or --{opt}, not both")
    automaton = TreeAutomaton.read(args.trees)
    target = build(target_spec(args))
    oov = oov_of_words((r.label for r in automaton.rules if r.is_leaf and r.label != NULL),
                       target.vocabulary())
    warn_oov(oov, target.hidden, target.source)
    return automaton, target.model, oov


def cmd_decode(args: argparse.Namespace) -> int:
    """The best derivation (certified), or --nbest K of them."""
    from arsdecode.api import decode

    if getattr(args, "unique", False):
        raise OptionError("--unique is for word lattices; a tree automaton's k-best are "
                          "distinct derivations")
    automaton, lm, oov = load(args)
    options = {} if args.max_iterations is None else {"max_iterations": args.max_iterations}
    if args.nbest is not None:
        kb = decode(lm, automaton, method=args.method, k=args.nbest, **options)
        if args.json:
            print_json({"nbest": [p.to_json() for p in kb], "method": kb.method,
                        "certified": kb.certified, "oov": oov})
        else:
            for rank, p in enumerate(kb, start=1):
                print(f"{rank}\t{fixed(p.log_p, 6)}\t{p.tree}\t{' '.join(p.tokens)}")
        return EXIT_OK
    r = decode(lm, automaton, method=args.method, **options)
    if args.json:
        print_json({**r.to_json(), "oov": oov})
    else:
        print(r.tree)
        print(" ".join(r.tokens))
        status = "certified" if r.certified else "UNCERTIFIED"
        print(f"log_p={fixed(r.log_p, 6)} ({status}, ln) method={r.method} states={r.states} "
              f"seconds={r.seconds:.3f}")
    return EXIT_OK if r.certified else EXIT_UNCERTIFIED


def cmd_sample(args: argparse.Namespace) -> int:
    """N exact i.i.d. derivations and ln Z."""
    from arsdecode.api import sample

    automaton, lm, oov = load(args)
    r = sample(lm, automaton, args.n, args.seed)  # auto: the exact forest, or ARS past it
    if args.json:
        print_json({**r.to_json(), "oov": oov})
        return EXIT_OK
    for tree, tokens, log_p in zip(r.trees, r.samples, r.log_p, strict=True):
        print(f"{fixed(log_p, 6)}\t{tree}\t{' '.join(tokens)}")
    lo, hi = r.log_Z_ci
    print(f"log_Z={fixed(r.log_Z, 6)} [{fixed(lo, 6)}, {fixed(hi, 6)}] (ln) method={r.method}")
    return EXIT_OK


def cmd_marginals(args: argparse.Namespace) -> int:
    """Every rule's posterior (expected uses per derivation) and ln Z."""
    from arsdecode.trees import dispatch

    automaton, lm, oov = load(args)
    r = dispatch.marginals(lm, automaton, args.n, args.seed, args.method, {})
    if args.json:
        print_json({**r.to_json(), "oov": oov})
        return EXIT_OK
    for m in r.marginals:
        children = f"({', '.join(m.children)})" if m.children else ""
        print(f"{m.lhs} -> {m.label}{children}\t{fixed(m.p, 6)}")
    kind = "exact" if r.exact else "estimated"
    print(f"log_Z={fixed(r.log_Z, 6)} ({kind}, ln) method={r.method}")
    return EXIT_OK
