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
but the lattice read back has that extra node. Node times are not kept (a `WordLattice` has
none). Best paths and n-best lists are written as a lattice of parallel chains, one per path
(`paths_lattice`); see there why.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np

from arsdecode.errors import LatticeError
from arsdecode.lattice.confusion import SENTENCE_MARKERS
from arsdecode.lattice.input_files import input_name, read_input_text
from arsdecode.lattice.word_lattice import RawArc, WordLattice

NULL_WORD = "!NULL"
EPSILON_WORDS = frozenset((NULL_WORD, *SENTENCE_MARKERS))
"""Words read as epsilon: HTK's null word, and the sentence markers the engine adds itself."""

HTK_DEFAULTS = {"acscale": 1.0, "lmscale": 1.0, "prscale": 1.0, "wdpenalty": 0.0}

_OCTAL = re.compile(r"[0-3][0-7][0-7]")
_HEADER_LONG = {"VERSION": "V", "UTTERANCE": "U", "NODES": "N", "LINKS": "L", "SUBLAT": "S"}
_NODE_LONG = {"time": "t", "WORD": "W", "var": "v", "div": "d", "acoustic": "a"}
_LINK_LONG = {"START": "S", "END": "E", "WORD": "W", "var": "v", "div": "d", "acoustic": "a",
              "ngram": "n", "language": "l"}


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


def read_slf(path: str | Path, *, scales: SlfScales | None = None,
             keep_lm_score: bool = False, text: str | None = None) -> SlfLattice:
    """Read an SLF file ('-' for stdin, gzip if named *.gz; `text`: its content, when the
    caller has read it already); errors name the file and line."""
    if text is None:
        text = read_input_text(path, "lattice")
    return parse_slf(text, source=input_name(path), scales=scales, keep_lm_score=keep_lm_score)


def parse_slf(text: str, *, source: str = "lattice", scales: SlfScales | None = None,
              keep_lm_score: bool = False) -> SlfLattice:
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
        fields = _fields(stripped, where)
        first = fields[0][0]
        if first == "I":
            node = _node_fields(fields, where)
            i = _int(node["I"], "I", where)
            if i in nodes:
                raise LatticeError(f"{where}: node {i} is defined twice (first on line "
                                   f"{node_lines[i]})")
            nodes[i], node_lines[i] = node, lineno
        elif first == "J":
            link = _link_fields(fields, where)
            j = _int(link["J"], "J", where)
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
                name = _HEADER_LONG.get(name, name)
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
    n_nodes = _int(header["N"], "N", at("N"))
    n_links = _int(header["L"], "L", at("L"))
    if n_links != len(links):
        raise LatticeError(f"{at('L')}: L={n_links} but the file has {len(links)} links")
    if nodes and len(nodes) != n_nodes:
        raise LatticeError(f"{at('N')}: N={n_nodes} but the file has {len(nodes)} nodes")
    for i, lineno in node_lines.items():
        if i >= n_nodes:
            raise LatticeError(f"{source}:{lineno}: node {i} is beyond N={n_nodes} (nodes "
                               f"are numbered 0..{n_nodes - 1})")
    base = _base(header, at)
    file_scales = {}
    for name in ("acscale", "lmscale", "prscale"):
        if name in header:
            file_scales[name] = _float(header[name], name, at(name))
    if "wdpenalty" in header:  # a log score in the file's base; natural log in a linear file
        file_scales["wdpenalty"] = _log_score(header["wdpenalty"], base or math.e, "wdpenalty",
                                              at("wdpenalty"))
    sc = scales.resolved(file_scales)
    assert sc.acscale is not None and sc.lmscale is not None and sc.prscale is not None
    assert sc.wdpenalty is not None

    node_ac = {i: _log_score(f["a"], base, "a", f"{source}:{node_lines[i]}")
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
        s, d = _int(f["S"], "S", where), _int(f["E"], "E", where)
        for node in (s, d):
            if node >= n_nodes:
                raise LatticeError(f"{where}: the link names the node {node}, which does not "
                                   f"exist (N={n_nodes})")
        if "W" in f:
            word: str | None = f["W"]
            ac = _log_score(f["a"], base, "a", where) if "a" in f else 0.0
        else:
            word = nodes.get(d, {}).get("W")
            ac = (_log_score(f["a"], base, "a", where) if "a" in f else 0.0) + node_ac.get(d, 0.0)
        for name in ("n", "p"):
            if name in f:
                _float(f[name], name, where)
        weight = _scaled(sc.acscale, ac)
        if "r" in f:
            weight += _scaled(sc.prscale, _log_score(f["r"], base, "r", where))
        if "l" in f:
            lm = _log_score(f["l"], base, "l", where)
            if keep_lm_score:
                weight += _scaled(sc.lmscale, lm)
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
        start = _node_ref(header["start"], "start", at("start"), n_nodes)
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
        ends = [_node_ref(header["end"], "end", at("end"), n_nodes)]
    else:
        ends = sorted(v for v in used if v not in has_out)
    ids = sorted(used | {start, *ends})
    new_id = {v: k for k, v in enumerate(ids)}
    lattice = WordLattice.build(
        len(ids), new_id[start], {new_id[v]: 0.0 for v in ends},
        [(new_id[s], new_id[d], word, w) for s, d, word, w in arcs], source=source,
        node_names=[str(v) for v in ids], arc_lines=arc_lines)
    return SlfLattice(lattice, sc, base, header)


def _fields(line: str, where: str) -> list[tuple[str, str]]:
    """The `name=value` fields of a line; a value may be quoted with " or ', `\\ooo` is an
    octal byte and `\\` escapes any other next character (quoted or not), as HTK's string
    syntax has it."""
    if "\"" not in line and "'" not in line and "\\" not in line:  # no quoting: a plain split
        plain: list[tuple[str, str]] = []
        for item in line.split():
            name, sep, value = item.partition("=")
            if not sep or not name:
                raise LatticeError(f"{where}: bad field {item!r}: expected name=value")
            if not value:
                raise LatticeError(f"{where}: field {name}= has no value")
            plain.append((name, value))
        return plain
    out: list[tuple[str, str]] = []
    i, n = 0, len(line)
    while i < n:
        if line[i].isspace():
            i += 1
            continue
        eq = i
        while eq < n and line[eq] != "=" and not line[eq].isspace():
            eq += 1
        name = line[i:eq]
        if eq >= n or line[eq] != "=" or not name:
            raise LatticeError(f"{where}: bad field {line[i:eq + 1]!r}: expected name=value")
        i = eq + 1
        quote = line[i] if i < n and line[i] in "\"'" else ""
        if quote:
            i += 1
        value_bytes = bytearray()
        while i < n:
            c = line[i]
            if c == "\\" and _OCTAL.fullmatch(line, i + 1, i + 4):
                value_bytes.append(int(line[i + 1:i + 4], 8))  # HTK's \ooo byte
                i += 4
                continue
            if c == "\\" and i + 1 < n:
                value_bytes += line[i + 1].encode("utf-8")
                i += 2
                continue
            if (quote and c == quote) or (not quote and c.isspace()):
                break
            value_bytes += c.encode("utf-8")
            i += 1
        if quote:
            if i >= n:
                raise LatticeError(f"{where}: field {name}=: the quote {quote} is not closed")
            i += 1
            if i < n and not line[i].isspace():
                raise LatticeError(f"{where}: field {name}=: text after the closing quote")
        try:
            value = value_bytes.decode("utf-8")
        except UnicodeDecodeError:
            raise LatticeError(f"{where}: field {name}=: its \\ooo escapes are not UTF-8"
                               ) from None
        if not value and not quote:
            raise LatticeError(f"{where}: field {name}= has no value")
        out.append((name, value))
    return out


def _node_fields(fields: list[tuple[str, str]], where: str) -> dict[str, str]:
    node: dict[str, str] = {}
    for name, value in fields:
        name = _NODE_LONG.get(name, name)
        if name == "L":
            raise LatticeError(f"{where}: sub-lattices (L= on a node) are not supported")
        if name in node:
            raise LatticeError(f"{where}: field {name}= given twice")
        node[name] = value
    if "t" in node:
        _float(node["t"], "t", where)
    return node


def _link_fields(fields: list[tuple[str, str]], where: str) -> dict[str, str]:
    link: dict[str, str] = {}
    for name, value in fields:
        name = _LINK_LONG.get(name, name)
        if name in link:
            raise LatticeError(f"{where}: field {name}= given twice")
        link[name] = value
    return link


def _int(value: str, name: str, where: str) -> int:
    if not value.isdigit():
        raise LatticeError(f"{where}: {name}={value}: expected a non-negative integer")
    return int(value)


def _node_ref(value: str, name: str, where: str, n_nodes: int) -> int:
    node = _int(value, name, where)
    if node >= n_nodes:
        raise LatticeError(f"{where}: {name}={node}: there is no node {node} (N={n_nodes})")
    return node


def _float(value: str, name: str, where: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise LatticeError(f"{where}: {name}={value}: not a number") from None
    if math.isnan(x) or x == math.inf:
        raise LatticeError(f"{where}: {name}={value}: not a usable number")
    return x


def _base(header: dict[str, str], at) -> float:
    """The log base of the score fields: e when absent, 0 for linear scores."""
    if "base" not in header:
        return math.e
    base = _float(header["base"], "base", at("base"))
    if base < 0 or base == 1 or base == -math.inf:
        raise LatticeError(f"{at('base')}: base={header['base']}: a log base must be positive "
                           "and not 1 (or 0 for scores that are not logs)")
    return base


def _scaled(scale: float, score: float) -> float:
    """`scale * score`, where a zero scale ignores the field (even a score of -inf)."""
    return scale * score if scale else 0.0


def _log_score(value: str, base: float, name: str, where: str) -> float:
    """A score field as a natural log: `value * ln(base)`, or `ln(value)` when base is 0."""
    x = _float(value, name, where)
    if base == 0:
        if x < 0:
            raise LatticeError(f"{where}: {name}={value}: base=0 means scores are not logs, "
                               "so they cannot be negative")
        return math.log(x) if x > 0 else -math.inf
    return x if base == math.e else x * math.log(base)


# ----- writing ---------------------------------------------------------------------------------


def write_slf(wl: WordLattice, out: TextIO, *, posteriors: Sequence[float] | None = None,
              base: float = math.e, utterance: str | None = None) -> None:
    """Write `wl` as SLF (module docstring, "Writing"): words on links, `a=` the arc's ln
    weight in log `base` (e or 10), `p=` each arc's posterior probability when given (one
    per arc of `wl`, linear, as lattice-tool writes them)."""
    if base <= 0 or base == 1:
        raise LatticeError(f"{wl.source}: cannot write SLF with log base {base}")
    if posteriors is not None and len(posteriors) != wl.n_arcs:
        raise LatticeError(f"{wl.source}: {len(posteriors)} posteriors for {wl.n_arcs} arcs")
    for word in wl.words:
        if word in EPSILON_WORDS:
            raise LatticeError(f"{wl.source}: the word {word!r} would read back as epsilon; "
                               "SLF cannot hold it as a word")
    out_degree = np.bincount(wl.src, minlength=wl.n_nodes)
    plain = (len(wl.finals) == 1 and all(w == 0.0 and out_degree[f] == 0
                                         for f, w in wl.finals.items()))
    extra: list[tuple[int, int, str | None, float, float | None]] = []
    n_nodes = wl.n_nodes
    if plain:
        end = next(iter(wl.finals))
    else:
        end = n_nodes
        n_nodes += 1
        ending = _final_posteriors(wl, posteriors) if posteriors is not None else None
        for f, w in wl.finals.items():
            extra.append((f, end, None, w, None if ending is None else ending[f]))
    rows: list[tuple[int, int, str | None, float, float | None]] = [
        (s, d, word, w, None if posteriors is None else float(posteriors[k]))
        for k, (s, d, word, w) in enumerate(zip(wl.src.tolist(), wl.dst.tolist(), wl.words,
                                                wl.log_weights.tolist()))]
    rows += extra
    scale = 1.0 if base == math.e else 1.0 / math.log(base)
    out.write("VERSION=1.1\n")
    if utterance is not None:
        out.write(f"UTTERANCE={_quoted(utterance)}\n")
    if base != math.e:
        out.write(f"base={base!r}\n")
    out.write(f"start=0 end={end}\n")
    out.write(f"N={n_nodes} L={len(rows)}\n")
    for i in range(n_nodes):
        out.write(f"I={i}\n")
    for j, (s, d, word, w, p) in enumerate(rows):
        label = NULL_WORD if word is None else _quoted(word)
        line = f"J={j} S={s} E={d} W={label} a={w * scale!r}"
        if p is not None:
            line += f" p={p!r}"
        out.write(line + "\n")


def _final_posteriors(wl: WordLattice, posteriors: Sequence[float]) -> dict[int, float]:
    """The probability that a path ends at each final node, from the arc posteriors: what
    enters the node (1 for the start) minus what leaves it, clipped to [0, 1]."""
    through = np.zeros(wl.n_nodes)
    through[0] = 1.0
    leaving = np.zeros(wl.n_nodes)
    p = np.asarray(posteriors, dtype=np.float64)
    np.add.at(through, wl.dst, p)
    np.add.at(leaving, wl.src, p)
    return {f: float(min(1.0, max(0.0, through[f] - leaving[f]))) for f in wl.finals}


def _quoted(word: str) -> str:
    """A value as `_fields` reads it back: quoted when it holds white space, a quote or a
    backslash (or is empty)."""
    if word and not any(c.isspace() or c in "\"'\\" for c in word):
        return word
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


def paths_lattice(wl: WordLattice, paths: Sequence[Sequence[int]]) -> WordLattice:
    """The best path or an n-best list as a lattice of parallel chains: one chain per path
    (its arcs, words and ln weights as in `wl`, the final weight added to its last arc),
    from one start node to one end node.

    Why one lattice and not one file per path: every SLF reader (HTK's HLRescore and
    HResults, SRILM lattice-tool, Kaldi's SLF scripts) reads one lattice per file, and a
    lattice of parallel chains is an ordinary one: its paths are exactly the n hypotheses with
    their scores, decoding it again gives the same list, and an n-best list stays one file per
    input lattice, as lattice-tool's -out-lattice-dir keeps it. Each path is a sequence of arc
    indices of `wl` from the start node to a final node (the empty path when the start node
    is final)."""
    if not paths:
        raise LatticeError(f"{wl.source}: no path to write")
    arcs: list[RawArc] = []
    n = 2  # 0: start, 1: end
    for k, path in enumerate(paths):
        node = 0
        for a in path:
            if not 0 <= a < wl.n_arcs or int(wl.src[a]) != node:
                raise LatticeError(f"{wl.source}: path {k} is not a path of the lattice "
                                   f"(arc {a})")
            node = int(wl.dst[a])
        if node not in wl.finals:
            raise LatticeError(f"{wl.source}: path {k} does not end at a final node")
        if not path:
            arcs.append((0, 1, None, wl.finals[node]))
            continue
        prev = 0
        for i, a in enumerate(path):
            last = i == len(path) - 1
            weight = float(wl.log_weights[a]) + (wl.finals[node] if last else 0.0)
            nxt = 1 if last else n
            if not last:
                n += 1
            arcs.append((prev, nxt, wl.words[a], weight))
            prev = nxt
    return WordLattice.build(n, 0, {1: 0.0}, arcs, source=wl.source)

