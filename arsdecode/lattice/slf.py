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

Three modules, one job each: this one reads (the header, nodes and links into a checked
`WordLattice`); `slf_fields` is the line syntax both directions share (fields, quoting, value
parsers); `slf_write` writes. `write_slf`, `paths_lattice` and `NULL_WORD` are importable from
here as before.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from arsdecode.errors import LatticeError
from arsdecode.lattice.input_files import input_name, read_input_text
from arsdecode.lattice.slf_fields import (
    EPSILON_WORDS,
    HEADER_LONG,
    link_fields,
    log_base,
    log_score,
    node_fields,
    node_ref,
    parse_float,
    parse_int,
    scaled,
    split_fields,
)
from arsdecode.lattice.slf_fields import NULL_WORD as NULL_WORD  # re-exported: they lived here
from arsdecode.lattice.slf_write import paths_lattice as paths_lattice
from arsdecode.lattice.slf_write import write_slf as write_slf
from arsdecode.lattice.word_lattice import RawArc, WordLattice

HTK_DEFAULTS = {"acscale": 1.0, "lmscale": 1.0, "prscale": 1.0, "wdpenalty": 0.0}


@dataclass(frozen=True)
class SlfScales:
    """The SLF scales (module docstring, "Weights"). A field left None takes the file's
    header value, else HTK's default; `resolved` fills them in. `wdpenalty` given here is a
    natural-log score (the CLI's `--word-penalty`); `acscale` is `--acoustic-scale`,
    `lmscale` `--lm-scale` (it scales `l=`, which counts only with keep_lm_score)."""

    acscale: float | None = None
    lmscale: float | None = None
    prscale: float | None = None
    wdpenalty: float | None = None

    def resolved(self, file_scales: Mapping[str, float]) -> SlfScales:
        """Every field a float: this override, else `file_scales` (the header, wdpenalty
        already in ln), else HTK's default."""
        values = {}
        for name, default in HTK_DEFAULTS.items():
            mine = getattr(self, name)
            values[name] = float(mine if mine is not None else file_scales.get(name, default))
        return SlfScales(**values)


@dataclass(frozen=True)
class SlfLattice:
    """What `parse_slf` reads: the lattice, the scales that made its weights (resolved), the
    file's log base (0: linear) and its header fields as written (for UTTERANCE and such)."""

    lattice: WordLattice
    scales: SlfScales
    base: float
    header: Mapping[str, str] = field(default_factory=dict)


# ----- reading ---------------------------------------------------------------------------------


def _node_times(ids: list[int], nodes: dict[int, dict[str, str]],
                node_lines: dict[int, int], source: str) -> list[float] | None:
    """Each node's `t=` (seconds), in `ids` order, when every node has one (CTM output needs
    them); None when any node lacks it."""
    times = []
    for v in ids:
        value = nodes.get(v, {}).get("t")
        if value is None:
            return None
        times.append(parse_float(value, "t", f"{source}:{node_lines.get(v, '?')}"))
    return times


def read_slf(path: str | Path, *, scales: SlfScales | None = None,
             keep_lm_score: bool = False, text: str | None = None,
             htk_quotes: bool = True) -> SlfLattice:
    """Read an SLF file ('-' for stdin, gzip if named *.gz; `text`: its content, when the
    caller has read it already); errors name the file and line. `htk_quotes=False` reads
    every value literally (`slf_fields.split_fields`)."""
    if text is None:
        text = read_input_text(path, "lattice")
    return parse_slf(text, source=input_name(path), scales=scales, keep_lm_score=keep_lm_score,
                     htk_quotes=htk_quotes)


def parse_slf(text: str, *, source: str = "lattice", scales: SlfScales | None = None,
              keep_lm_score: bool = False, htk_quotes: bool = True) -> SlfLattice:
    """Parse SLF text (module docstring) into a checked, canonical WordLattice."""
    header: dict[str, str] = {}
    header_lines: dict[str, int] = {}
    nodes: dict[int, dict[str, str]] = {}
    node_lines: dict[int, int] = {}
    links: list[tuple[int, dict[str, str]]] = []  # (line, fields)
    link_ids: dict[int, int] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        where = f"{source}:{lineno}"
        if stripped == ".":
            raise LatticeError(f"{where}: sub-lattices are not supported (a '.' line ends one)")
        fields = split_fields(stripped, where, htk_quotes)
        first = fields[0][0]
        if first == "I":
            node = node_fields(fields, where)
            i = parse_int(node["I"], "I", where)
            if i in nodes:
                raise LatticeError(f"{where}: node {i} is defined twice (first on line "
                                   f"{node_lines[i]})")
            nodes[i], node_lines[i] = node, lineno
        elif first == "J":
            link = link_fields(fields, where)
            j = parse_int(link["J"], "J", where)
            if j in link_ids:
                raise LatticeError(f"{where}: link {j} is defined twice (first on line "
                                   f"{link_ids[j]})")
            link_ids[j] = lineno
            links.append((lineno, link))
        else:
            if nodes or links:
                raise LatticeError(f"{where}: header field {first}= after the nodes and links "
                                   "(the header comes first)")
            for name, value in fields:
                name = HEADER_LONG.get(name, name)
                if name in header:
                    raise LatticeError(f"{where}: header field {name}= given twice")
                header[name], header_lines[name] = value, lineno
    return _assemble(source, header, header_lines, nodes, node_lines, links,
                     scales or SlfScales(), keep_lm_score)


def _assemble(source: str, header: dict[str, str], header_lines: dict[str, int],
              nodes: dict[int, dict[str, str]], node_lines: dict[int, int],
              links: list[tuple[int, dict[str, str]]], scales: SlfScales,
              keep_lm_score: bool) -> SlfLattice:
    """The lattice from the parsed lines: counts, nodes, words, weights, start and ends."""

    def at(name: str) -> str:
        return f"{source}:{header_lines[name]}"

    if "S" in header:
        raise LatticeError(f"{at('S')}: sub-lattices (SUBLAT=) are not supported")
    if header.get("dir", "f") not in ("f", "forward"):
        raise LatticeError(f"{at('dir')}: dir={header['dir']}: only forward lattices "
                           "(dir=f) are supported")
    for name in ("N", "L"):
        if name not in header:
            raise LatticeError(f"{source}: no {name}= in the header (the size line "
                               "N=<nodes> L=<links> is compulsory)")
    n_nodes = parse_int(header["N"], "N", at("N"))
    n_links = parse_int(header["L"], "L", at("L"))
    if n_links != len(links):
        raise LatticeError(f"{at('L')}: L={n_links} but the file has {len(links)} links")
    if nodes and len(nodes) != n_nodes:
        raise LatticeError(f"{at('N')}: N={n_nodes} but the file has {len(nodes)} nodes")
    for i, lineno in node_lines.items():
        if i >= n_nodes:
            raise LatticeError(f"{source}:{lineno}: node {i} is beyond N={n_nodes} (nodes "
                               f"are numbered 0..{n_nodes - 1})")
    base = log_base(header, at)
    file_scales = {}
    for name in ("acscale", "lmscale", "prscale"):
        if name in header:
            file_scales[name] = parse_float(header[name], name, at(name))
    if "wdpenalty" in header:  # a log score in the file's base; natural log in a linear file
        file_scales["wdpenalty"] = log_score(header["wdpenalty"], base or math.e, "wdpenalty",
                                              at("wdpenalty"))
    sc = scales.resolved(file_scales)
    assert sc.acscale is not None and sc.lmscale is not None and sc.prscale is not None
    assert sc.wdpenalty is not None

    node_ac = {i: log_score(f["a"], base, "a", f"{source}:{node_lines[i]}")
               for i, f in nodes.items() if "a" in f}
    arcs: list[RawArc] = []  # file node ids, compacted below
    arc_lines: list[int] = []
    has_in: set[int] = set()
    has_out: set[int] = set()
    for lineno, f in links:
        where = f"{source}:{lineno}"
        for name in ("S", "E"):
            if name not in f:
                raise LatticeError(f"{where}: the link has no {name}= (its "
                                   f"{'start' if name == 'S' else 'end'} node)")
        s, d = parse_int(f["S"], "S", where), parse_int(f["E"], "E", where)
        for node in (s, d):
            if node >= n_nodes:
                raise LatticeError(f"{where}: the link names the node {node}, which does not "
                                   f"exist (N={n_nodes})")
        if "W" in f:
            word: str | None = f["W"]
            ac = log_score(f["a"], base, "a", where) if "a" in f else 0.0
        else:
            word = nodes.get(d, {}).get("W")
            ac = (log_score(f["a"], base, "a", where) if "a" in f else 0.0) + node_ac.get(d, 0.0)
        for name in ("n", "p"):
            if name in f:
                parse_float(f[name], name, where)
        weight = scaled(sc.acscale, ac)
        if "r" in f:
            weight += scaled(sc.prscale, log_score(f["r"], base, "r", where))
        if "l" in f:
            lm = log_score(f["l"], base, "l", where)
            if keep_lm_score:
                weight += scaled(sc.lmscale, lm)
        if word in EPSILON_WORDS:
            word = None
        if word is not None:
            weight += sc.wdpenalty
        arcs.append((s, d, word, weight))
        arc_lines.append(lineno)
        has_out.add(s)
        has_in.add(d)

    # Sized by the nodes the file names, never by N= (module docstring), in file id order.
    used = has_in | has_out if n_nodes > 1 else set(range(n_nodes))
    if "start" in header:
        start = node_ref(header["start"], "start", at("start"), n_nodes)
    else:
        starts = sorted(v for v in used if v not in has_in)
        if not starts:
            raise LatticeError(f"{source}: no start node (a link enters every node; name "
                               "one with start=)")
        if len(starts) > 1:
            second = starts[1]
            line = f":{node_lines[second]}" if second in node_lines else ""
            raise LatticeError(f"{source}{line}: two start nodes: no link enters node "
                               f"{starts[0]} nor node {second}; name the start with start=")
        start = starts[0]
    if "end" in header:
        ends = [node_ref(header["end"], "end", at("end"), n_nodes)]
    else:
        ends = sorted(v for v in used if v not in has_out)
    ids = sorted(used | {start, *ends})
    new_id = {v: k for k, v in enumerate(ids)}
    lattice = WordLattice.build(
        len(ids), new_id[start], {new_id[v]: 0.0 for v in ends},
        [(new_id[s], new_id[d], word, w) for s, d, word, w in arcs], source=source,
        node_names=[str(v) for v in ids], arc_lines=arc_lines,
        node_times=_node_times(ids, nodes, node_lines, source))
    return SlfLattice(lattice, sc, base, header)
