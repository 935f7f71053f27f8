"""SRILM's PFSG lattices (Decipher probabilistic finite-state grammars): read and write (issue 32).

Why: PFSG is `lattice-tool`'s native lattice format (its `-in-lattice` default; SRILM's own
lattice tests ship SPINE lattices in it), so a lattice-tool user's files must open as they are.
The format (SRILM's pfsg-format(5)):

    name NAME
    nodes N w_0 ... w_{N-1}      one word per node; NULL: a node that emits nothing
    initial i
    final f
    transitions T
    n1 n2 p                       T lines: an arc from node n1 to node n2 of cost p

Words are on nodes: a path emits the word of every node it enters (the initial node's word is
emitted before any transition; SRILM lattices give it NULL or `<s>`). The cost p is an integer
"bytelog", 10000.5 times the natural log of a probability (so ln p = cost / 10000.5).

Reading gives a `WordLattice` (natural-log weights, words on arcs): the transition n1 -> n2 is
an arc whose word is node n2's (None for NULL), and the final node has final weight 0. `<s>` and
`</s>` on nodes are epsilon, as in SLF, because the engine adds the sentence markers itself. A
word on the initial node other than NULL, `<s>` or `</s>` is refused (no arc could carry it).
Costs: in a lattice-tool lattice the transition costs are the grammar's (LM) scores, which an
engine's LM replaces when it rescores, so they are dropped by default, as SLF's `l=` is;
`keep_lm_score=True` keeps them (ln weight = cost / 10000.5).

A file holding several grammars (a composed PFSG: a node naming another grammar) is refused with
one line; so is every malformed line (file and line named): a missing or repeated header line, a
node count that disagrees with its words, a transition count that disagrees with its lines, a
node number out of range, a cost that is not an integer.

Writing (`write_pfsg`): one NULL node per lattice node, one node per word arc carrying its word,
an extra NULL final node reached from every final node; costs rounded to integers as SRILM
does (so a written lattice keeps its scores to within 0.5 / 10000.5 nats per arc).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TextIO

from arsdecode.errors import LatticeError
from arsdecode.lattice.confusion import SENTENCE_MARKERS, input_name
from arsdecode.lattice.input_files import read_input_text
from arsdecode.lattice.word_lattice import RawArc, WordLattice

BYTELOG_SCALE = 10000.5
"""A PFSG cost is this times the natural log of a probability (pfsg-format(5), SRILM's
`LogP2Bytelog` on ln values)."""

NULL_WORD = "NULL"
HEADER = ("name", "nodes", "initial", "final", "transitions")


def read_pfsg(path: str | Path, *, keep_lm_score: bool = False,
              text: str | None = None) -> WordLattice:
    """Read a PFSG lattice ('-' for stdin, gzip if named *.gz; `text`: its content when the
    caller has read it already); errors name the file and line."""
    if text is None:
        text = read_input_text(path, "lattice")
    return parse_pfsg(text, source=input_name(path), keep_lm_score=keep_lm_score)


def parse_pfsg(text: str, *, source: str = "lattice", keep_lm_score: bool = False
               ) -> WordLattice:
    """Parse PFSG text (module docstring) into a checked, canonical WordLattice."""
    header: dict[str, list[str]] = {}
    header_line: dict[str, int] = {}
    arcs: list[RawArc] = []
    arc_lines: list[int] = []
    words: list[str] = []
    expected_arcs: int | None = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        where = f"{source}:{lineno}"
        key = fields[0]
        if expected_arcs is None:
            if key not in HEADER:
                raise LatticeError(f"{where}: expected one of the header lines "
                                   f"{', '.join(HEADER)}, found {key!r}")
            if key in header:
                what = ("a second grammar: composed PFSGs are not supported"
                        if key == "name" else f"the line {key!r} is given twice")
                raise LatticeError(f"{where}: {what} (first on line {header_line[key]})")
            header[key], header_line[key] = fields[1:], lineno
            if key == "nodes":
                words = _node_words(fields, where)
            if key == "transitions":
                missing = [k for k in HEADER[1:4] if k not in header]
                if missing:
                    raise LatticeError(f"{where}: the transitions come before the "
                                       f"{', '.join(missing)} line")
                expected_arcs = _count(fields, where)
            continue
        if key == "name":
            raise LatticeError(f"{where}: a second grammar: composed PFSGs are not supported "
                               f"(first on line {header_line['name']})")
        if len(fields) != 3:
            raise LatticeError(f"{where}: a transition is 'from to cost', found "
                               f"{len(fields)} fields")
        src = _node(fields[0], len(words), where)
        dst = _node(fields[1], len(words), where)
        cost = _cost(fields[2], where)
        word = words[dst]
        arcs.append((src, dst, None if word in (NULL_WORD, *SENTENCE_MARKERS) else word,
                     cost / BYTELOG_SCALE if keep_lm_score else 0.0))
        arc_lines.append(lineno)
    if expected_arcs is None:
        missing = [k for k in HEADER[1:] if k not in header]
        raise LatticeError(f"{source}: not a PFSG lattice: no {', '.join(missing)} line")
    if len(arcs) != expected_arcs:
        raise LatticeError(f"{source}:{header_line['transitions']}: transitions {expected_arcs}, "
                           f"but the file has {len(arcs)} transition lines")
    initial = _single_node(header, header_line, "initial", len(words), source)
    final = _single_node(header, header_line, "final", len(words), source)
    if words[initial] not in (NULL_WORD, *SENTENCE_MARKERS):
        raise LatticeError(f"{source}:{header_line['nodes']}: the initial node {initial} has "
                           f"the word {words[initial]!r}; only NULL or <s> can start a lattice")
    return WordLattice.build(len(words), initial, {final: 0.0}, arcs, source=source,
                             arc_lines=arc_lines)


def _node_words(fields: list[str], where: str) -> list[str]:
    count = _count(fields, where)
    words = fields[2:]
    if len(words) != count:
        raise LatticeError(f"{where}: nodes {count}, but the line names {len(words)} words")
    return words


def _count(fields: list[str], where: str) -> int:
    if len(fields) < 2 or not fields[1].isdigit():
        raise LatticeError(f"{where}: {fields[0]} needs a count, found "
                           f"{fields[1] if len(fields) > 1 else 'nothing'!r}")
    return int(fields[1])


def _node(value: str, n_nodes: int, where: str) -> int:
    if not value.isdigit():
        raise LatticeError(f"{where}: {value!r} is not a node number")
    node = int(value)
    if node >= n_nodes:
        raise LatticeError(f"{where}: node {node} does not exist (nodes {n_nodes})")
    return node


def _cost(value: str, where: str) -> float:
    try:
        return float(int(value))
    except ValueError:
        raise LatticeError(f"{where}: the cost {value!r} is not an integer bytelog") from None


def _single_node(header: dict[str, list[str]], header_line: dict[str, int], key: str,
                 n_nodes: int, source: str) -> int:
    where = f"{source}:{header_line[key]}"
    values = header[key]
    if len(values) != 1:
        raise LatticeError(f"{where}: {key} needs one node number, found {len(values)} fields")
    return _node(values[0], n_nodes, where)


def write_pfsg(wl: WordLattice, out: TextIO, *, name: str | None = None) -> None:
    """Write `wl` as a PFSG (module docstring, "Writing"); weights become rounded bytelogs."""
    word_arcs = [a for a, w in enumerate(wl.words) if w is not None]
    arc_node = {a: wl.n_nodes + k for k, a in enumerate(word_arcs)}
    final = wl.n_nodes + len(word_arcs)
    node_words = [NULL_WORD] * wl.n_nodes + [str(wl.words[a]) for a in word_arcs] + [NULL_WORD]
    lines: list[str] = []
    for a in range(wl.n_arcs):
        src, dst, cost = int(wl.src[a]), int(wl.dst[a]), _bytelog(float(wl.log_weights[a]))
        if a in arc_node:
            lines.append(f"{src} {arc_node[a]} {cost}")
            lines.append(f"{arc_node[a]} {dst} 0")
        else:
            lines.append(f"{src} {dst} {cost}")
    for node, weight in sorted(wl.finals.items()):
        lines.append(f"{node} {final} {_bytelog(weight)}")
    out.write(f"name {name or _safe_name(wl.source)}\n")
    out.write(f"nodes {len(node_words)} {' '.join(node_words)}\n")
    out.write(f"initial {wl.start}\nfinal {final}\ntransitions {len(lines)}\n")
    out.write("\n".join(lines) + "\n")


def _bytelog(log_weight: float) -> int:
    """SRILM's rounding of a natural-log weight to a bytelog (half away from zero)."""
    scaled = log_weight * BYTELOG_SCALE
    return int(math.copysign(math.floor(abs(scaled) + 0.5), scaled))


def _safe_name(source: str) -> str:
    """A grammar name without white space (the name line holds one token)."""
    return "".join(ch if not ch.isspace() else "_" for ch in Path(source).name) or "lattice"
