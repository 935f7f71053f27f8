"""The target of the command line: the model flags turned into one `TargetSpec`, built by
`arsdecode.model.target_spec.build_target` (issue 30, "one target builder").

Why its own module: `decode`, `sample`, `marginals` (confusion networks and word lattices
alike), `disambig` and `batch` read the same flags (--lm or --vpylm, --mix-lm.., --features,
--lmw, the strictness flags); each used to compose the target itself, and the copies drifted.
Now each command calls `target_spec(args)` (which refuses a bad combination, before any file
is read) and `load_target` (which builds it and warns about out-of-vocabulary words). The
engine is imported inside the functions: building a parser (for --help) loads no decoder.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from arsdecode.cli.model_options import lm_config, mix_models
from arsdecode.cli.output import oov_report, warn_oov

if TYPE_CHECKING:
    from arsdecode.lattice import Lattice, WordLattice
    from arsdecode.model.target_spec import Target, TargetSpec


def target_spec(args: argparse.Namespace, **fields: Any) -> TargetSpec:
    """The spec of the model flags `args` holds (a command without a flag gets its default);
    `fields` override or add fields (disambig: its default model, order and sentence
    markers). Raises OptionError for flags that do not combine, naming them."""
    from arsdecode.model.target_spec import TargetSpec

    main_weight, mixed = (mix_models(args) if hasattr(args, "mix_lm") else (1.0, []))
    values: dict[str, Any] = {
        "lm": args.lm, "vpylm": getattr(args, "vpylm", None), "mix": tuple(mixed),
        "lm_lambda": main_weight, "mix_missing": getattr(args, "mix_missing", "unk"),
        "features": getattr(args, "features", None),
        "lm_weight": 1.0 if getattr(args, "lmw", None) is None else args.lmw,
        "config": lm_config(args), **fields}
    return TargetSpec(**values)


def build(spec: TargetSpec, models: dict[Any, Any] | None = None) -> Target:
    """The target of `spec`, its files read as the command line reads them (--lm given a
    VPYLM is an OptionError pointing to --vpylm). `models`: n-gram models already read, by
    (path, config), filled in as files are read (many lattices with different SLF lmscale=
    build several targets over one model read)."""
    from arsdecode.cli.vpylm import load_ngram
    from arsdecode.cli.vpylm import load_target as load_vpylm_file
    from arsdecode.model.target_spec import build_target

    def load_once(path: str, config: Any) -> Any:
        key = (path, config)
        if models is None:
            return load_ngram(path, config)
        if key not in models:
            models[key] = load_ngram(path, config)
        return models[key]

    return build_target(spec, load_ngram=load_once, load_vpylm_file=load_vpylm_file)


def load_target(args: argparse.Namespace, lattice: Lattice | WordLattice,
                spec: TargetSpec | None = None) -> tuple[Any, dict]:
    """The target the flags ask for (or `spec`) and the OOV report of the lattice's words,
    warned about on stderr (a ModelError if the model has no <unk> to score them)."""
    target = build(target_spec(args) if spec is None else spec)
    return target.model, _report_oov(target, lattice)


def load_word_lattice_target(args: argparse.Namespace, lattice: WordLattice,
                             map_unk: str | None, *, lm_weight: float = 1.0
                             ) -> tuple[Any, dict, WordLattice]:
    """`load_target` for a word lattice whose out-of-vocabulary words `map_unk` (--map-unk)
    relabels first, against the target's vocabulary; the relabelled lattice comes third.
    `lm_weight`: the lattice's LM scale (a flag, else its SLF header's lmscale=)."""
    target = build(target_spec(args, lm_weight=lm_weight))
    if map_unk is not None:
        from arsdecode.lattice.vocabulary import map_unknown_words

        lattice = map_unknown_words(lattice, target.vocabulary(), map_unk, target.source)
    return target.model, _report_oov(target, lattice), lattice


def _report_oov(target: Target, lattice: Lattice | WordLattice) -> dict:
    oov = oov_report(lattice, target.vocabulary())
    warn_oov(oov, target.hidden, target.source)
    return oov
