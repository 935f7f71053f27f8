"""What `arsdecode decode` prints when an ARS decode is stopped by Ctrl-C, and its --trace.

Why print anything: a long decode's best exactly scored path is often the answer, and its gap
says how much it could still be off; printing only "interrupted" threw that away. The same
promise holds on confusion networks, on word lattices (`--method ars`) and for `--nbest`
(ARS's k-best): the paths found so far on stdout, marked UNCERTIFIED with their gap (ln), a
line on stderr saying so, and exit status 130 as for any interrupt. No file (--fst, --graphml,
--write-best, --write-lattice) is written: the automaton may be mid-refinement. The full DP
and the word-lattice expansion have no partial answer: Ctrl-C there prints "interrupted" only.

`--trace EVERY` prints ARS's iterations on stderr (stdout keeps the result alone), so that a
user watching a long decode sees the gap close and knows what Ctrl-C would print.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from arsdecode.cli.options import EXIT_INTERRUPTED, positive_int
from arsdecode.cli.output import fixed, print_json
from arsdecode.errors import OptionError
from arsdecode.termination import Terminated

if TYPE_CHECKING:
    from arsdecode.methods.ars import DecodeInterrupted
    from arsdecode.methods.kbest import KBestInterrupted


def add_trace_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trace", type=positive_int, nargs="?", const=1, default=None,
                   metavar="EVERY",
                   help="with --method ars: print the first and every EVERY-th iteration on "
                        "stderr (iteration, ln q and ln p of q's best path, their gap), to "
                        "watch a long decode (EVERY >= 1, default 1 when given)")


def iteration_trace(args: argparse.Namespace) -> Callable[..., None] | None:
    """--trace: the `on_iteration` callback of the ARS decoders, or None."""
    every = getattr(args, "trace", None)
    if every is None:
        return None
    if args.method != "ars":
        raise OptionError("--trace shows the iterations of ARS: add --method ars")

    def show(iteration: int, tokens: list[str], log_q: float, log_p: float) -> None:
        if iteration == 1 or iteration % every == 0:
            print(f"arsdecode: iteration {iteration}: ln q={fixed(log_q, 6)} "
                  f"ln p={fixed(log_p, 6)} gap={fixed(log_q - log_p, 6)} {' '.join(tokens)}",
                  file=sys.stderr, flush=True)

    return show


def exit_status(stop: BaseException) -> int:
    """130 for Ctrl-C; 128 + the signal for SIGTERM/SIGHUP (143, 129), as the shell reports a
    process that signal killed.

    Why look at `__context__`: the decoders raise their partial-answer exception `from None`
    inside `except KeyboardInterrupt`, so the signal's own exception (`Terminated`, which
    knows its number) is the context of the one the CLI catches; without this a terminated
    decode exited 130 although the README promises 143."""
    cause = stop.__context__
    return cause.exit_status if isinstance(cause, Terminated) else EXIT_INTERRUPTED


def ars_interrupt(err: KeyboardInterrupt) -> DecodeInterrupted | None:
    """`err` if it is ARS's DecodeInterrupted (Ctrl-C with the best path so far), else None
    (re-raise it). Why not `except DecodeInterrupted`: naming the class imports ARS, which a
    decode that the full DP runs never loads (issue 34, start-up)."""
    from arsdecode.methods.ars_loop import DecodeInterrupted

    return err if isinstance(err, DecodeInterrupted) else None


def print_interrupted(args: argparse.Namespace, stop: DecodeInterrupted, oov: dict) -> int:
    """The best path found so far (its tokens, whatever the lattice: one DecodeResult),
    marked UNCERTIFIED, with its bound gap (ln q(x*) - ln p(path): the optimum is at most that
    far above it). Exit status 130 (128 + the signal for SIGTERM/SIGHUP)."""
    r = stop.result
    if args.json:
        print_json({**r.to_json(), "interrupted": True, "gap": stop.gap, "oov": oov})
    else:
        print(" ".join(r.tokens))
        print(f"log_p={r.log_p:.6f} (UNCERTIFIED: interrupted, ln) gap={stop.gap:.6f} "
              f"method={r.method} iterations={r.iterations} seconds={r.seconds:.3f}",
              flush=True)
    print(f"arsdecode: interrupted: UNCERTIFIED, the path above is the best found so far; the "
          f"optimum is at most {stop.gap:.6g} (ln) above its log_p", file=sys.stderr)
    return exit_status(stop)


def print_kbest_interrupted(args: argparse.Namespace, stop: KBestInterrupted,
                            oov: dict) -> int:
    """`--nbest K` stopped: the K best distinct paths scored so far, best first, UNCERTIFIED;
    each is at most `gap` (ln) below the true path of its rank. Exit status as
    `exit_status`."""
    kb = stop.result
    if args.json:  # the KBestResult's fields (certified false), as a finished run's
        print_json({**kb.to_json(), "interrupted": True, "gap": stop.gap, "oov": oov})
    else:
        for rank, p in enumerate(kb.paths, start=1):
            print(f"{rank}\t{fixed(p.log_p, 6)}\t{' '.join(p.tokens)}")
        print(f"(UNCERTIFIED: interrupted, ln) gap={stop.gap:.6f} iterations={kb.iterations} "
              f"seconds={kb.seconds:.3f}", flush=True)
    print(f"arsdecode: interrupted: UNCERTIFIED, the {len(kb.paths)} paths above are the best "
          f"found so far; each is at most {stop.gap:.6g} (ln) below the true path of its rank",
          file=sys.stderr)
    return exit_status(stop)
