"""Lattices: the inputs the engine decodes and samples over.

`confusion` holds today's confusion network (one candidate per position on every path) and
its JSON form.
"""

from arsdecode.lattice.confusion import SENTENCE_MARKERS, Lattice, json_constant, utf8_text

__all__ = ["SENTENCE_MARKERS", "Lattice", "json_constant", "utf8_text"]
