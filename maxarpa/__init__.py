"""maxarpa: ARPA n-gram models with exact max-backoff bounds (the MAX-ARPA format).

Everything in this package speaks log10, like ARPA files and KenLM.

Public API:
    load(path, *, mmap=False, config=None) -> Model     any format, detected from content
    convert(input, output, *, binary=False, config=None) -> Model
    truncate(model, order) -> Model                     the order-N model, as SRILM's -order N
    Model, Config, MaxArpaError, FormatError, UnknownWordError
"""

from maxarpa.config import Config
from maxarpa.errors import FormatError, MaxArpaError, UnknownWordError
from maxarpa.load import convert, load
from maxarpa.model import Model
from maxarpa.truncate import truncate

__version__ = "0.1.0"
__all__ = ["Config", "FormatError", "MaxArpaError", "Model", "UnknownWordError", "convert",
           "load", "truncate", "__version__"]
