"""The options shared by `arsdecode` sub-commands: the parser class, the engine, method and
sampling flags, the memory checks, and the help texts.

Why one module: every command takes the same engine and sampling options with the same range
checks; keeping them here, below every command module, means each check fails at parse time
with the same one-line message naming the option. Why it imports no engine module: a command
imports only what builds its parser (see `arsdecode.cli.main`), and `--help` must not load
the decoder. The method and variant names are therefore plain constants here;
tests/test_arsdecode_cli.py checks that they are the engine's. Output helpers are in
`arsdecode.cli.output`; the typed option values (`positive_int`, ...) in `cli.option_types`;
the options that say what the model is (--lm, --vpylm, --lmw, --features, --mix-lm) in
`cli.model_options`. Both are re-exported here, where every command found them before.
"""

from __future__ import annotations

import argparse
import os
import textwrap
from typing import TYPE_CHECKING, Any, NoReturn

from arsdecode.cli.model_options import MIX_MISSING as MIX_MISSING
from arsdecode.cli.model_options import MIX_SLOTS as MIX_SLOTS
from arsdecode.cli.model_options import add_features_option as add_features_option
from arsdecode.cli.model_options import add_lm_strictness_options as add_lm_strictness_options
from arsdecode.cli.model_options import add_lm_weight_option as add_lm_weight_option
from arsdecode.cli.model_options import add_mix_options as add_mix_options
from arsdecode.cli.model_options import add_model_options as add_model_options
from arsdecode.cli.model_options import lm_config as lm_config
from arsdecode.cli.model_options import mix_models as mix_models
from arsdecode.cli.option_types import int_at_least as int_at_least
from arsdecode.cli.option_types import non_negative_float as non_negative_float
from arsdecode.cli.option_types import positive_float as positive_float
from arsdecode.cli.option_types import positive_int as positive_int
from arsdecode.cli.option_types import seed_int as seed_int
from arsdecode.cli.option_types import unit_fraction as unit_fraction
from arsdecode.cli.option_types import weight_fraction as weight_fraction
from arsdecode.errors import OptionError

if TYPE_CHECKING:
    from arsdecode.lattice import Lattice

EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_UNCERTIFIED = 3
EXIT_INTERRUPTED = 130

METHODS: tuple[str, ...] = ("auto", "ars", "full")
"""`--method` choices: `arsdecode.methods.dispatch.METHODS`."""
MARGINALS_METHODS: tuple[str, ...] = ("auto", "full", "sample")
"""`marginals --method` choices: `arsdecode.methods.dispatch.MARGINALS_METHODS`."""
VARIANTS: tuple[str, ...] = ("all-edges", "paper")
"""`--variant` choices: `arsdecode.core.automaton.VARIANTS`."""
DEFAULT_VARIANT = "all-edges"
"""The engine's default refinement variant: `arsdecode.core.automaton.DEFAULT_VARIANT`."""
NBEST_FORMATS: tuple[str, ...] = ("text", "srilm", "NBestList1.0", "kaldi")
"""`decode --nbest-format` choices: `arsdecode.lattice.nbest_formats.NBEST_FORMATS`."""

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


def add_map_reading_options(p: Any, prefix: str = "", srilm: bool = False) -> None:
    """--logmap, --tolower, --keep-unk and --mapw: how an SRILM disambig map is read, for every
    command that reads one (disambig, decode/sample --map, batch --map). `prefix` starts each
    help text (e.g. "--map: " where the map is optional); `srilm` also accepts disambig's own
    spellings (-logmap, -keep-unk, -mapw)."""
    def also(name: str) -> tuple[str, ...]:
        return (name,) if srilm else ()

    p.add_argument("--logmap", *also("-logmap"), action="store_true",
                   help=f"{prefix}the map's probabilities are log10")
    p.add_argument("--tolower", action="store_true",
                   help=f"{prefix}lowercase the map and the observed tokens (not the LM's words)")
    p.add_argument("--keep-unk", *also("-keep-unk"), action="store_true",
                   help=f"{prefix}an observed token missing from the map passes through as "
                        "itself (p = 1); without it such a token is an error")
    p.add_argument("--mapw", *also("-mapw"), type=non_negative_float, default=1.0, metavar="W",
                   help=f"{prefix}weight of the map's log probabilities (default 1)")


def map_reading_options_set(args: argparse.Namespace) -> bool:
    """Whether any option of `add_map_reading_options` differs from its default (they mean
    nothing without a map)."""
    return bool(args.logmap or args.tolower or args.keep_unk or args.mapw != 1.0)

STDIN_INPUTS: dict[str, str] = {
    **{dest: f"--{dest.replace('_', '-')}" for dest in (
        "lm", "vpylm", "lattice", "map", "text", "features", "symbols", "file", "mix_lm",
        *(f"mix_lm{k}" for k in range(2, 10)))},
    "in_path": "--in"}
"""Every option that reads a file, and so may be '-' for stdin: its destination -> its flag."""


def refuse_two_stdin(args: argparse.Namespace) -> None:
    """OptionError when two inputs are '-': stdin can be read once, and the first reader
    would take what the user meant for the second (`--lm - --lattice -` read the ARPA file
    as the lattice)."""
    named = [flag for dest, flag in STDIN_INPUTS.items() if getattr(args, dest, None) == "-"]
    if len(named) > 1:
        raise OptionError(f"{' and '.join(named)} are both '-': stdin can feed one input; "
                          "give the others as files")


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
    add_memory_budget_option(p)


def add_memory_budget_option(p: argparse.ArgumentParser) -> None:
    """--memory-budget: the memory auto lets the compiled full DP use (cli/main.py sets it)."""
    p.add_argument("--memory-budget", type=memory_mib, default=None, metavar="MB",
                   help="memory (MiB, >= 64; default 1024) that auto lets the full DP use: "
                        "a lattice that would need more goes to ARS (decode, k-best) or to "
                        "sampling (marginals); also for batch workers")


def memory_mib(text: str) -> int:
    value = positive_int(text)
    if value < 64:
        raise argparse.ArgumentTypeError(f"must be at least 64 (MiB), got {value}")
    return value


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
