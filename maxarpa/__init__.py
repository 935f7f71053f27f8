"""maxarpa: ARPA n-gram models with exact max-backoff bounds (the MAX-ARPA format).

Everything in this package speaks log10, like ARPA files and KenLM.
"""

__version__ = "0.1.0"
