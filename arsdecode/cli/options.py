"""Options and output helpers shared by every `arsdecode` sub-command.

Why one module: `cli.py` registers the commands and the task front ends (`tasks/*_cli.py`) add
their own; both need the same engine and sampling options, the same range checks and the same
safe ways to write output. Keeping them here, below both, means no task imports `cli` and there
is no import cycle. Every check fails at parse time with a one-line message naming the option.
"""

from __future__ import annotations

import argparse
import inspect
import io
import json
import math
import os
import signal
import sys
import tempfile
import textwrap
from collections.abc import Callable, Container
from pathlib import Path
from typing import Any, NoReturn

from arsdecode.core.automaton import VARIANTS
from arsdecode.errors import ModelError, OptionError
from arsdecode.lattice import Lattice
from arsdecode.methods.ars import decode
from arsdecode.methods.dispatch import METHODS
from arsdecode.termination import TERMINATION_SIGNALS
from maxarpa.cli_config import add_config_options, config_from_args
from maxarpa.config import Config

EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_UNCERTIFIED = 3
EXIT_INTERRUPTED = 130

DEFAULT_VARIANT: str = inspect.signature(decode).parameters["variant"].default

EXIT_STATUS_HELP = (
    "exit status: 0 success; 2 bad input or options (one line on stderr); "
    "3 decode stopped at --max-iterations without a certificate (the path printed is the best "
    "found, not proven best); 130 interrupted (Ctrl-C), 143 terminated (SIGTERM): what was "
    "already printed is kept."
)
UNITS_HELP = (
    "units: every log_p, log_q and log_Z printed by arsdecode is a natural log (ln); model "
    "files (ARPA, MAX-ARPA) store log10, and lattice weights are ln."
)
LATTICE_HELP = (
    'lattice format (JSON): {"positions": [[["token", ln_weight], ...], ...]}, one list of '
    "candidates per position; ln_weight is the natural-log emission weight (-Infinity allowed, "
    "NaN not); <s> and </s> are not tokens (the decoder adds them)."
)


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors ("arsdecode: argument --seed: ...") and shown defaults."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message} (see --help)\n")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Show every default that is a value (not None/False, not already described), and keep
    the epilog's paragraphs."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            "default" not in text
            and default is not None
            and default is not False
            and default != argparse.SUPPRESS
            and action.option_strings
        ):
            text += " (default: %(default)s)"
        return text


def epilog(*paragraphs: str) -> str:
    """Paragraphs wrapped to 79 columns, separated by blank lines (for --help epilogs)."""
    return "\n\n".join(textwrap.fill(p, 79) for p in paragraphs)


# ---- typed option values: each raises a message that argparse prefixes with the option ----


def int_at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
        return value

    parse.__name__ = f"integer >= {low}"
    return parse


positive_int = int_at_least(1)
seed_int = int_at_least(0)


def unit_fraction(text: str) -> float:
    """A number in (0, 1] (an acceptance-rate target)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (0.0 < value <= 1.0):
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return value


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def available_memory() -> int:
    """Bytes of memory this process could still use: MemAvailable on Linux, else the
    physical memory."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def check_fits(option: str, value: int, bytes_each: int, count: int | None = None) -> None:
    """Refuse a size option whose working memory cannot fit in this machine's memory.

    Why before the work: numpy raises a traceback for an array that cannot be allocated, and
    one that merely exceeds the memory grows until the OOM killer ends the process with
    nothing said. `bytes_each` is the measured cost of one unit (a trial, a path) for the
    lattice at hand, `count` the units `value` comes to (default `value`); the estimate is a
    floor, so a refused value could never have run.
    """
    need, have = (value if count is None else count) * bytes_each, available_memory()
    if need > have:
        raise OptionError(f"{option} {value} needs about {_gigabytes(need)} of memory; this "
                          f"machine has {_gigabytes(have)} available")


def _gigabytes(n: int) -> str:
    return f"{n / 1e9:,.1f} GB"


def check_batch_fits(batch: int, lattice: Lattice) -> None:
    """--batch B: each pass holds B trials as arrays and Python lists, measured at 530 bytes
    a trial for a 3-position lattice (1.65 GB of RSS at B = 3 million); 300 + 64 L is below
    that."""
    check_fits("--batch", batch, 300 + 64 * len(lattice))


def variant_help() -> str:
    parts = []
    for v in VARIANTS:
        if v == "paper":
            parts.append(f"'{v}': as in the paper, a new state copies its suffix state's edges "
                         "and only the refined edge is lowered")
        else:
            parts.append(f"'{v}': a new state's edges all get the bound of its longer context "
                         "(fewer iterations)")
    return ("how q is refined after a rejection (Algorithm 2); every variant is exact, they "
            "differ only in speed: " + "; ".join(parts))


def add_engine_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--variant", choices=VARIANTS, default=DEFAULT_VARIANT, help=variant_help())
    p.add_argument("--json", action="store_true", help="print one JSON object (ln fields)")


def add_method_option(p: argparse.ArgumentParser, needs_ars: str = "") -> None:
    """--method: which exact decoder runs (both give the same optimum; the result says which).
    `needs_ars` names this command's options that only 'ars' can serve (its help says so)."""
    p.add_argument("--method", choices=METHODS, default="auto",
                   help="exact decoding method: 'ars' (adaptive rejection over a refined "
                        "q-automaton), 'full' (the merged full-model Viterbi on the compiled "
                        "core, pruned by max-backoff bounds), or 'auto' (default: 'full' within "
                        "a budget of work per lattice, then 'ars' for a lattice that exceeds "
                        "it; 'ars' for a one-off call on a large model)"
                        + (f"; {needs_ars} need 'ars'" if needs_ars else ""))


def add_sampling_options(p: argparse.ArgumentParser, default_ar: float) -> None:
    p.add_argument("--seed", type=seed_int, default=0,
                   help="random seed >= 0; the same seed gives the same samples (only the "
                        "JSON 'timing' fields vary between runs)")
    p.add_argument("--batch", type=positive_int, default=100,
                   help="trials drawn from q per refinement pass (B)")
    p.add_argument("--target-ar", type=unit_fraction, default=default_ar,
                   help="acceptance rate in (0, 1] at which q stops being refined")
    p.add_argument("--ar-window", type=positive_int, default=100,
                   help="number of recent trials over which the acceptance rate is measured")


def add_max_iterations(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-iterations", type=positive_int, default=None,
                   help="stop after this many refinements even without a certificate; the "
                        "result is then marked uncertified and the exit status is 3 "
                        "(default: no limit, run until the path is proven best)")


def add_lm_strictness_options(p: argparse.ArgumentParser) -> None:
    """The strictness flags of the model given with --lm, one per `maxarpa.Config` field and
    named as on `maxarpa convert/info/query` (`--sentence-marker-missing accept`, ...)."""
    add_config_options(p)


def lm_config(args: argparse.Namespace) -> Config:
    """The `maxarpa.Config` the strictness flags ask for, for `load_lm(..., config=...)`."""
    return config_from_args(args)


# ---- output ----------------------------------------------------------------------------


def buffer_stdout() -> None:
    """Put a real buffer between sys.stdout and its file when Python runs unbuffered.

    Why: with `python -u` or PYTHONUNBUFFERED=1, sys.stdout writes straight to the raw file,
    and a short write (a disk that fills up half-way through a line) is silently dropped: the
    run exits 0 with truncated output. A BufferedWriter retries short writes and raises the
    error (ENOSPC, EFBIG), which the CLI reports. Write-through and line buffering keep the
    unbuffered behaviour: every line reaches the file at once.
    """
    out = sys.stdout
    if out is not sys.__stdout__:  # a caller (a test, an embedding program) chose its own
        return
    if isinstance(out, io.TextIOWrapper) and isinstance(out.buffer, io.RawIOBase):
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(out.buffer), encoding=out.encoding,
                                      errors=out.errors, line_buffering=True,
                                      write_through=True)


def print_json(obj: object) -> None:
    """One JSON object per line, flushed (so a pipe sees it at once).

    Ctrl-C is held back while the line is written: a KeyboardInterrupt raised inside a
    buffered write would cut the line and lose its start, and streamed output (`sample
    --jsonl`) promises whole lines up to the interrupt. The pending signal fires right after.
    """
    write_line(json.dumps(obj))


def write_line(text: str) -> None:
    """Write one whole line to stdout and flush, with Ctrl-C held back (see `print_json`)."""
    text += "\n"
    held = _hold_sigint()
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    finally:
        if held:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD_SIGNALS)


HELD_SIGNALS = {signal.SIGINT, *TERMINATION_SIGNALS}
"""Signals that raise an exception in the main thread (arsdecode.termination): held back
while a line is written, so that a stop never cuts one."""


def _hold_sigint() -> bool:
    """Block SIGINT (and SIGTERM, SIGHUP) in this thread if the platform can (POSIX); True if
    they were blocked."""
    if not hasattr(signal, "pthread_sigmask"):
        return False
    signal.pthread_sigmask(signal.SIG_BLOCK, HELD_SIGNALS)
    return True


def fixed(x: float, decimals: int) -> str:
    """`x` with `decimals` decimals, as people read a log probability; from 1e15 in magnitude
    on (a path through a -1e308 weight, say) in exponent form, not as a 300-digit number.

    Only text output is rounded: JSON keeps every float's shortest round-trip `repr`, the
    exact value the API returns (a batch line equals the single-item command's output).
    """
    if math.isfinite(x) and abs(x) < 1e15:
        return f"{x:.{decimals}f}"
    return f"{x:.{decimals}g}"


def warn(message: str) -> None:
    print(f"arsdecode: warning: {message}", file=sys.stderr)


def report_uncertified(iterations: int) -> None:
    print(f"arsdecode: UNCERTIFIED: stopped after {iterations} iterations (--max-iterations); "
          "the path above is the best found, not proven best", file=sys.stderr)


def oov_report(lattice: Lattice, vocabulary: Container[str]) -> dict[str, Any]:
    """Lattice candidates the model does not know: they are scored as <unk>.

    Returns {"count": candidates that are out of vocabulary, "tokens": distinct such tokens in
    lattice order}.
    """
    count = 0
    seen: dict[str, None] = {}
    for toks in lattice.tokens:
        for t in toks:
            if t not in vocabulary:
                count += 1
                seen.setdefault(t, None)
    return {"count": count, "tokens": list(seen)}


def warn_oov(oov: dict[str, Any], lm: Any = None, model_path: str = "") -> None:
    """Warn that out-of-vocabulary candidates are scored as <unk>; or, when the model `lm`
    has no <unk> to score them with, raise one ModelError instead (not a warning saying they
    are scored as <unk> followed by an error saying they cannot be)."""
    if not oov["count"]:
        return
    shown = ", ".join(repr(t) for t in oov["tokens"][:10])
    more = f" and {len(oov['tokens']) - 10} more" if len(oov["tokens"]) > 10 else ""
    if lm is not None and getattr(lm, "unk_id", 0) is None:
        raise ModelError(f"{model_path}: the model has no <unk>, so it cannot score the "
                         f"{oov['count']} lattice candidate(s) outside its vocabulary: "
                         f"{shown}{more}")
    warn(f"{oov['count']} lattice candidate(s) are not in the model's vocabulary and are "
         f"scored as <unk>: {shown}{more}")


def check_writable(path: str | os.PathLike[str]) -> Path:
    """Fail before any work if `path` cannot be written (missing folder, a directory, no
    permission). Raises OSError naming the user's path."""
    p = Path(path)
    if p.is_dir():
        raise IsADirectoryError(21, "is a directory", str(path))
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise FileNotFoundError(2, "folder does not exist", str(path))
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise PermissionError(13, "permission denied", str(path))
    return p


def write_atomic(path: str | os.PathLike[str], write: Callable[[str], object]) -> None:
    """Call `write(tmp)` on a temporary file beside `path`, then rename it to `path`.

    On any failure (full disk, interrupt) the temporary file is removed, `path` is untouched,
    and an OSError names `path`, never the temporary file.
    """
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent or ".")
    os.close(fd)
    try:
        write(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a normal output file follows umask
        os.replace(tmp, p)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise OSError(err.errno, err.strerror or str(err), str(path)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class _NoBar:
    """What a progress bar does when nobody watches: nothing."""

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def progress_bar(total: int | None, unit: str, **options: Any) -> Any:
    """tqdm on a terminal; a no-op when stderr is piped, without importing tqdm at all (its
    import is ~4% of tagging a whole WSJ section from the command line)."""
    if not sys.stderr.isatty():
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, file=sys.stderr, **options)
