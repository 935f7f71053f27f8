"""Lattices: the inputs the engine decodes and samples over.

`confusion` holds today's confusion network (one candidate per position on every path) and
its JSON form; `disambig_map` builds them from SRILM disambig's map and text files;
`word_lattice` holds the word lattice (a DAG with epsilon arcs, issue 21), of which a confusion
network is a special case. `input_files` reads any of their inputs (stdin, gzip, UTF-8).
"""

from arsdecode.lattice.confusion import SENTENCE_MARKERS, Lattice, json_constant
from arsdecode.lattice.input_files import utf8_text
from arsdecode.lattice.word_lattice import WordLattice

__all__ = ["SENTENCE_MARKERS", "Lattice", "WordLattice", "json_constant", "utf8_text"]
