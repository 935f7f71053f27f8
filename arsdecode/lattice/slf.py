"""HTK Standard Lattice Format (SLF): read a word lattice, write one back (issue 21).

Why: speech recognisers hand over their lattices in SLF (HTK's HVite, SRILM's
`lattice-tool -write-htk`, Kaldi's `convert_slf.pl`), and rescoring them with the engine's
n-gram is the point of issue 21. This module follows the HTK book's chapter "HTK Standard
Lattice Format (SLF)"; what it reads, and how each field counts:

Lines. `#` starts a comment line; blank lines are skipped. Every other line is fields
`name=value`, separated by white space; a value may be quoted ("..." or '...'); `\\ooo`
(three octal digits) is a byte of the word's UTF-8, as HTK writes non-ASCII words, and `\\`
before any other character escapes it. Header lines come first (any fields on any number of
lines), then node lines (first field `I=`) and link lines (first field `J=`), in any order.
Long names are the book's: VERSION, UTTERANCE, NODES, LINKS for the header; time, WORD, var,
div, acoustic for nodes; START, END, WORD, var, div, acoustic, ngram, language for links.

Header. `N=`/`NODES=` and `L=`/`LINKS=` are compulsory and must agree with the file (the number
of `I=` lines, when there are any, and of `J=` lines); memory follows the nodes the lines name,
never `N=` (a three-line file may claim N=10^9). `base=` is the log base of every score field:
absent means e; `base=10` is log10 (SRILM's choice); `base=0` means the scores are plain
probabilities/likelihoods, not logs. `start=`/`end=` name the start and the end node;
without `start=` the start is the one node no link enters (two such nodes are an error);
without `end=` every node no link leaves is an end node (several are fine, each with final
weight 0). `acscale=`, `lmscale=`, `prscale=`, `wdpenalty=` are the scales below. `dir=` must
be forward (`f`); sub-lattices (`SUBLAT=`, `L=` on a node, a `.` line) are refused.

Words. A link's word is its own `W=`, else the `W=` of its end node (HTK's forward lattices
put words on nodes). `!NULL`, and a missing `W`, is epsilon, and so are `<s>` and `</s>`
(SRILM writes them on the first and last nodes): the engine adds the sentence markers itself
around every path, so a lattice may not hold them as words. The start node's word is on no
link and is dropped. A node's `a=` counts on each link that takes its word from the node.

Weights. The ln weight of a link (what `WordLattice` holds, what the engine adds to the LM's
ln probability of the path's words) is, with every score field converted to natural log:

    acscale * a  +  prscale * r  +  wdpenalty (links with a word only)
                 +  lmscale * l  (only with keep_lm_score=True)

`a=`/acoustic is the acoustic log likelihood, `r=` the pronunciation log probability (the
field HTK 3.4 pairs with prscale; `v=`/var is the pronunciation variant's number, an integer,
not a score), `l=`/language the lattice's own LM score. By default `l=` is dropped: the
engine's LM replaces it, as in rescoring. `n=`/ngram is checked as a number and never counted
(an n-gram score, which the engine's LM replaces too; keep_lm_score keeps `l=` only). The
word penalty is a word insertion penalty: epsilon links do not pay it. The scales come from
the file's header, else HTK's defaults (acscale 1, lmscale 1, prscale 1, wdpenalty 0), and a
caller's `SlfScales` overrides either.
The header's `wdpenalty=` is a log score in the file's base, like `a=` (natural log when
`base=0`); a caller's override is natural log. `t=`/time, `v=`/var, `d=`/div and `p=` (a
posterior) are not scores. Unknown fields are ignored, as the book asks ("any unrecognised
fields may be ignored"): SRILM and HTK write extra ones (`x1=`, `s=`); a known field with a
bad value is an error.

Errors: one LatticeError line naming the file and the line: a bad field (no `=`, an unclosed
quote, a bad number or node id), a count `N=`/`L=` that disagrees, a node defined twice or
beyond `N`, an arc to a missing node, two start nodes, a cycle, no path to an end node.

Writing (`write_slf`): words on links, `a=` the arc's ln weight in the chosen base, `p=` the
arc's posterior probability when given (as SRILM's lattice-tool writes posteriors), one
`start=` node and, when the lattice has one end node of final weight 0, `end=` it. Otherwise
(several final nodes, a final weight, a final node with links leaving it) the file gets one
extra `!NULL` end node, reached from every final node by a `!NULL` link carrying its final
weight, because HTK's tools expect a single end node: every path keeps its words and score,
but the lattice read back has that extra node. Node times (`t=`) are kept on the
`WordLattice` (`node_times`) when every node has one, for CTM output; they are not written.
Best paths and n-best lists are written as a lattice of parallel chains, one per path
(`paths_lattice`); see there why.

Four modules, one job each: this one is the format's reference and its entry points;
`slf_read` reads (the header, and the nodes and links as arrays of numbers, into a checked
`WordLattice`); `slf_fields` is the line syntax both directions share (fields, quoting, value
parsers); `slf_write` writes. `SlfScales`, `SlfLattice`, `write_slf`, `paths_lattice` and
`NULL_WORD` are importable from here as before.
"""

from __future__ import annotations

from pathlib import Path

from arsdecode.lattice.input_files import input_name, read_input_text
from arsdecode.lattice.slf_fields import NULL_WORD as NULL_WORD  # re-exported: they lived here
from arsdecode.lattice.slf_read import HTK_DEFAULTS as HTK_DEFAULTS
from arsdecode.lattice.slf_read import SlfLattice as SlfLattice
from arsdecode.lattice.slf_read import SlfLines
from arsdecode.lattice.slf_read import SlfScales as SlfScales
from arsdecode.lattice.slf_write import paths_lattice as paths_lattice
from arsdecode.lattice.slf_write import write_slf as write_slf

# ----- reading ---------------------------------------------------------------------------------


def read_slf(path: str | Path, *, scales: SlfScales | None = None,
             keep_lm_score: bool = False, text: str | None = None,
             htk_quotes: bool = True) -> SlfLattice:
    """Read an SLF file ('-' for stdin, gzip if named *.gz; `text`: its content, when the
    caller has read it already); errors name the file and line. `htk_quotes=False` reads
    every value literally (`slf_fields.split_fields`). The text read here is dropped once its
    lines are parsed, before the lattice is built."""
    source = input_name(path)
    if text is None:
        lines = SlfLines(read_input_text(path, "lattice"), source, htk_quotes)
    else:
        lines = SlfLines(text, source, htk_quotes)
    return lines.assemble(scales or SlfScales(), keep_lm_score)


def parse_slf(text: str, *, source: str = "lattice", scales: SlfScales | None = None,
              keep_lm_score: bool = False, htk_quotes: bool = True) -> SlfLattice:
    """Parse SLF text (module docstring) into a checked, canonical WordLattice."""
    return SlfLines(text, source, htk_quotes).assemble(scales or SlfScales(), keep_lm_score)


