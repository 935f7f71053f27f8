"""What the word-lattice commands write beside the best path: the rescored lattice, the exact
posteriors the word mesh and CTM lines are made of, and the JSON fields one lattice and a run
over many share (issue 32).

Why a module of its own: these outputs share one thing, the exact posteriors under the
target (optionally flattened by --posterior-scale, `arc_posteriors`), and are written the same
way for one lattice and for a run over many (`cli.lattice_list`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from arsdecode.errors import OptionError
from arsdecode.lattice.word_lattice import WordLattice


def arc_posteriors(lm: Any, wl: WordLattice, posterior_scale: float = 1.0) -> list[float]:
    """Every arc's exact posterior under the target, or, with `posterior_scale` S, under the
    target's scores divided by S (every path's probability ∝ exp(score / S)): the flattening
    lattice-tool's `-posterior-scale` applies, usually S = the LM scale, because acoustic
    scores overstate their confidence. Exact for that distribution."""
    from arsdecode.methods.dispatch_posteriors import scaled_lattice_posteriors

    if not (math.isfinite(posterior_scale) and posterior_scale > 0):
        raise OptionError(f"--posterior-scale must be a finite number > 0, got "
                          f"{posterior_scale!r}")
    post, _ = scaled_lattice_posteriors(lm, wl, posterior_scale)
    return post.tolist()


def require_times(wl: WordLattice) -> None:
    """--ctm needs every node's time: refused before any posterior is computed."""
    if wl.node_times is None:
        raise OptionError(f"{wl.source}: --ctm needs node times (SLF t= on every node)")


def posterior_records(wl: WordLattice, posteriors: Sequence[float]) -> list[dict[str, Any]]:
    """`marginals --json`'s arcs: each arc's nodes (as the file names them), word and exact
    posterior, for one lattice and for every lattice of a run."""
    return [{"src": wl.node_names[int(s)], "dst": wl.node_names[int(d)], "word": w,
             "posterior": float(q)}
            for s, d, w, q in zip(wl.src.tolist(), wl.dst.tolist(), wl.words,
                                  list(posteriors), strict=True)]


def arc_marginals(lm: Any, wl: WordLattice) -> tuple[Any, list[dict[str, Any]]]:
    """`marginals`' answer on a word lattice: the MarginalsResult (exact; one row per arc),
    the one result type a confusion network's marginals have too, and its `posterior_records`
    (each arc's nodes, word and posterior) for "arcs", text and --write-lattice."""
    from arsdecode.api import marginals

    result = marginals(lm, wl, method="full")
    return result, posterior_records(wl, [row[0].p for row in result.marginals])


def nbest_fields(kb: Any) -> dict[str, Any]:
    """`decode --nbest --json`'s fields of a word lattice's k-best: the KBestResult's, the
    same fields a confusion network's k-best prints (`KBestResult.to_json`)."""
    return kb.to_json()


def write_rescored(lm: Any, wl: WordLattice, out: str, lm_scale: float, name: str,
                   htk_quotes: bool = True) -> None:
    """--write-lattice of `decode`: the rescored lattice (`methods.rescore`), written whole
    or not at all, compressed by its suffix."""
    import io

    from arsdecode.lattice.lattice_files import write_text_output
    from arsdecode.methods.rescore import rescored_lattice, write_rescored_slf

    text = io.StringIO()
    write_rescored_slf(rescored_lattice(lm, wl, lm_scale=lm_scale), text, utterance=name,
                       htk_quotes=htk_quotes)
    write_text_output(out, text.getvalue())
