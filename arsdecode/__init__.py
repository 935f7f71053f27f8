"""arsdecode: exact decoding and exact sampling in high-order HMMs.

Adaptive rejection sampling (ARS) over a refined q-automaton, after Carter, Dymetman &
Bouchard (2012), "Exact Sampling and Decoding in High-Order HMMs". Every log value arsdecode
returns is a natural log (ln); model files (ARPA, MAX-ARPA) are log10.

    import arsdecode
    lm = arsdecode.load_lm("model.arpa")
    lattice = arsdecode.Lattice.from_lists([[("the", -0.1), ("a", -2.3)], [("dog", 0.0)]])
    best = arsdecode.decode(lm, lattice)         # DecodeResult: tokens, log_p (ln), certified
    draws = arsdecode.sample(lm, lattice, 100, seed=0)   # SampleResult: samples, log_Z (ln)
    arsdecode.tag("The dog barked .").tokens      # Penn Treebank tags, shipped tagger
    arsdecode.sms_decode("3637 843 *").tokens     # words from noisy keypad digits
"""

__version__ = "0.1.0"

from arsdecode.api import load_lm, sms_decode, tag  # noqa: E402
from arsdecode.ars import DecodeResult, SampleResult, SampleTrace, decode, sample  # noqa: E402
from arsdecode.errors import (  # noqa: E402
    ArsDecodeError,
    AutomatonError,
    LatticeError,
    ModelError,
    NoPathError,
    ObservationError,
    OptionError,
    TargetError,
)
from arsdecode.lattice import Lattice  # noqa: E402

__all__ = [
    "ArsDecodeError",
    "AutomatonError",
    "DecodeResult",
    "Lattice",
    "LatticeError",
    "ModelError",
    "NoPathError",
    "ObservationError",
    "OptionError",
    "SampleResult",
    "SampleTrace",
    "TargetError",
    "__version__",
    "decode",
    "load_lm",
    "sample",
    "sms_decode",
    "tag",
]
