"""arsdecode: exact decoding and exact sampling in high-order HMMs.

Adaptive rejection sampling (ARS) over a refined q-automaton, after Carter, Dymetman &
Bouchard (2012), "Exact Sampling and Decoding in High-Order HMMs". Every log value arsdecode
returns is a natural log (ln); model files (ARPA, MAX-ARPA) are log10. Every function below
lives in `arsdecode.api`, the one front door; `lm` is a maxarpa Model or any target of your own
that implements `arsdecode.model.TargetModel`.

    import arsdecode
    lm = arsdecode.load_lm("model.arpa")
    lattice = arsdecode.Lattice.from_lists([[("the", -0.1), ("a", -2.3)], [("dog", 0.0)]])
    best = arsdecode.decode(lm, lattice)         # DecodeResult: tokens, log_p (ln), method
    top = arsdecode.decode_kbest(lm, lattice, 5)  # the 5 best paths, each certified exact
    draws = arsdecode.sample(lm, lattice, 100, seed=0)   # SampleResult: samples, log_Z (ln)
    arsdecode.marginals(lm, lattice, 1000, seed=0)       # per-position marginals, ln Z
    arsdecode.tag("The dog barked .").tags        # Penn Treebank tags, shipped tagger
    arsdecode.sms_decode("3637 843 *").tokens     # words from noisy keypad digits
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from arsdecode.lazy_names import lazy_names

__version__ = "0.1.0"

# The public names, imported on first use (PEP 562): `import arsdecode` stays light, and a
# CLI can set up the process (one BLAS thread, see arsdecode.cli.main) before numpy loads.
_EXPORTS = {
    **{name: "arsdecode.api" for name in (
        "load_lm", "decode", "decode_many", "decode_kbest", "sample", "adapt", "marginals",
        "tag", "sms_decode", "DecodeResult", "KBestResult", "SampleResult", "SampleTrace",
        "MarginalsResult", "TagResult", "weighted", "interpolate", "loglinear",
        "lattice_posteriors")},
    "Lattice": "arsdecode.lattice",
    **{name: "arsdecode.tasks.segment.segmenter" for name in (
        "segment", "segment_many", "SegmentResult")},
    "WordLattice": "arsdecode.lattice",
    **{name: "arsdecode.errors" for name in (
        "ArgumentError", "ArsDecodeError", "AutomatonError", "LatticeError", "ModelError",
        "NoPathError", "ObservationError", "OptionError", "TargetError")},
}

if TYPE_CHECKING:
    from arsdecode.api import (
        DecodeResult,
        KBestResult,
        MarginalsResult,
        SampleResult,
        SampleTrace,
        TagResult,
        adapt,
        decode,
        decode_kbest,
        decode_many,
        interpolate,
        lattice_posteriors,
        load_lm,
        loglinear,
        marginals,
        sample,
        sms_decode,
        tag,
        weighted,
    )
    from arsdecode.errors import (
        ArgumentError,
        ArsDecodeError,
        AutomatonError,
        LatticeError,
        ModelError,
        NoPathError,
        ObservationError,
        OptionError,
        TargetError,
    )
    from arsdecode.lattice import Lattice, WordLattice
    from arsdecode.tasks.segment.segmenter import SegmentResult, segment, segment_many


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)


__all__ = [
    "ArgumentError",
    "ArsDecodeError",
    "AutomatonError",
    "DecodeResult",
    "KBestResult",
    "Lattice",
    "LatticeError",
    "MarginalsResult",
    "ModelError",
    "NoPathError",
    "ObservationError",
    "OptionError",
    "SampleResult",
    "SampleTrace",
    "TagResult",
    "TargetError",
    "WordLattice",
    "__version__",
    "adapt",
    "decode",
    "decode_kbest",
    "decode_many",
    "interpolate",
    "lattice_posteriors",
    "load_lm",
    "loglinear",
    "marginals",
    "sample",
    "sms_decode",
    "tag",
    "weighted",
]
__all__ += ["SegmentResult", "segment", "segment_many"]  # issue 33
