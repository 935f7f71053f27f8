"""Lattices: the inputs the engine decodes and samples over.

`confusion` holds today's confusion network (one candidate per position on every path) and
its JSON form; `disambig_map` builds them from SRILM disambig's map and text files.
"""

from arsdecode.lattice.confusion import SENTENCE_MARKERS, Lattice, json_constant, utf8_text

__all__ = ["SENTENCE_MARKERS", "Lattice", "json_constant", "utf8_text"]
