"""How a word lattice is read on the command line: its format options, the vocabulary
conventions, and the scales that score it (issue 32).

Why a module of its own: `decode`, `sample`, `marginals` and the runs over many lattices
(`cli.lattice_list`) read every lattice the same way, and the scales' rule (a flag, else the SLF
header's lmscale=, acscale=, wdpenalty=, else 1, 1, 0; lattice-tool's units converted) and the
words the LM skips are decided here once.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from arsdecode.errors import OptionError
from arsdecode.lattice.word_lattice import WordLattice


def read_lattice_and_scales(args: argparse.Namespace) -> tuple[WordLattice, dict[str, Any]]:
    """The --lattice word lattice (`read_lattice`) and the scales that score it
    (`lattice_scales`): flags first, else an SLF header's lmscale=, acscale=, wdpenalty=."""
    from arsdecode.lattice.lattice_files import format_of, read_word_lattice_file
    from arsdecode.lattice.slf import SlfScales

    fmt = format_of(args.lattice, args.format)
    if args.keep_lattice_lm and fmt not in ("slf", "pfsg"):
        raise OptionError("--keep-lattice-lm applies to SLF and PFSG lattices only")
    if args.symbols is not None and fmt != "fst":
        raise OptionError("--symbols applies to OpenFst text lattices only")
    penalty = word_penalty_ln(args)
    acoustic = 1.0 if args.acoustic_scale is None else args.acoustic_scale
    wl, slf = read_word_lattice_file(
        args.lattice, format=fmt,
        scales=SlfScales(acscale=args.acoustic_scale, wdpenalty=penalty),
        keep_lm_score=args.keep_lattice_lm, symbols=args.symbols, acoustic_scale=acoustic,
        text=getattr(args, "lattice_text", None), epsilon_words=epsilon_words(args),
        htk_quotes=getattr(args, "htk_quotes", True))
    if slf is not None:  # SLF applied the scales while reading; its header holds lmscale=
        header, used = dict(slf.header), slf.scales
    else:
        if penalty:
            wl = wl.with_word_penalty(penalty)
        header, used = {}, SlfScales(acscale=acoustic, wdpenalty=penalty or 0.0)
    if getattr(args, "split_multiwords", False):
        from arsdecode.lattice.vocabulary import split_multiwords

        wl = split_multiwords(wl)
    return wl, lattice_scales(args, header, used)


def word_penalty_ln(args: argparse.Namespace) -> float | None:
    """--word-penalty (ln) or --htk-wdpenalty (log10, lattice-tool's unit), in ln; None when
    neither is given (an SLF header's wdpenalty= then applies)."""
    htk = getattr(args, "htk_wdpenalty", None)
    if htk is not None and args.word_penalty is not None:
        raise OptionError("give --word-penalty (ln) or --htk-wdpenalty (log10), not both")
    return htk * math.log(10) if htk is not None else args.word_penalty


def lm_scale_flag(args: argparse.Namespace) -> float | None:
    """--lm-scale / --lmw or --htk-lmscale (the same unitless weight), None when not given."""
    htk = getattr(args, "htk_lmscale", None)
    flag = getattr(args, "lmw", None)
    if htk is not None and flag is not None:
        raise OptionError("give --lm-scale or --htk-lmscale, not both")
    return htk if htk is not None else flag


def lattice_scales(args: argparse.Namespace, header: dict[str, str], used: Any
                   ) -> dict[str, Any]:
    """The scales a lattice is scored with and where each came from ("flag", "file" or
    "default"): the LM scale (a flag, else the SLF header's lmscale=, else 1), the acoustic
    scale and the word penalty in ln (as the SLF reader resolved them). The JSON output
    reports them as "scales"."""
    def origin(flag: object, field: str) -> str:
        return "flag" if flag is not None else "file" if field in header else "default"

    lm_flag = lm_scale_flag(args)
    lm_scale = (lm_flag if lm_flag is not None
                else used.lmscale if "lmscale" in header else 1.0)
    return {"lm_scale": lm_scale, "acoustic_scale": used.acscale,
            "word_penalty_ln": used.wdpenalty,
            "from": {"lm_scale": origin(lm_flag, "lmscale"),
                     "acoustic_scale": origin(args.acoustic_scale, "acscale"),
                     "word_penalty_ln": origin(word_penalty_ln(args), "wdpenalty")}}


def epsilon_words(args: argparse.Namespace) -> frozenset[str]:
    """The words the LM skips (`lattice.vocabulary`): --sentence-markers, --keep-pause,
    --pause-vocab, --noise-vocab, --ignore-vocab."""
    from arsdecode.lattice.vocabulary import (
        DEFAULT_PAUSE_WORDS,
        HTK_SENTENCE_MARKERS,
        lm_transparent_words,
        parse_sentence_markers,
        read_word_list,
    )

    def words(option: str) -> frozenset[str] | None:
        path = getattr(args, option, None)
        return read_word_list(path) if path else None

    markers = getattr(args, "sentence_markers", None)
    return lm_transparent_words(
        sentence_markers=HTK_SENTENCE_MARKERS if markers is None
        else parse_sentence_markers(markers),
        pause_words=words("pause_vocab") or DEFAULT_PAUSE_WORDS,
        keep_pause=getattr(args, "keep_pause", False),
        noise_words=words("noise_vocab") or (), ignore_words=words("ignore_vocab") or ())
