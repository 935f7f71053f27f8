"""Reading HTK SLF: the scales, the parsed lines as arrays, and their assembly into a
checked WordLattice (what the fields mean and how they count: `arsdecode.lattice.slf`).

Why a module of its own: `slf` is the format's front door (its docstring is the format's
reference, `read_slf` and `parse_slf` its entry points); the line-by-line reader that keeps
each link as numbers, not as a dict of strings (issue 34: memory on real ASR lattices), is
the larger half and lives here.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from arsdecode.errors import LatticeError
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
    split_fields,
)
from arsdecode.lattice.word_lattice import WordLattice

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


def _text_lines(text: str) -> Iterator[str]:
    """The lines of `text` as `text.splitlines()` cuts them, one at a time (no list of them
    all): each piece up to and with a newline is cut by splitlines (only CR LF spans one)."""
    at, n = 0, len(text)
    while at < n:
        end = text.find("\n", at)
        end = n if end < 0 else end + 1
        yield from text[at:end].splitlines()
        at = end


class _Seen:
    """A set of non-negative ids that costs nothing while they come as 0, 1, 2, ... (as SLF
    numbers its nodes and links): a counter, and a set for the ids out of that order."""

    def __init__(self) -> None:
        self.dense = 0
        self.sparse: set[int] = set()

    def add(self, i: int) -> bool:
        """Add `i`; False when it was there already."""
        if i < self.dense or i in self.sparse:
            return False
        if i != self.dense:
            self.sparse.add(i)
            return True
        self.dense += 1
        while self.dense in self.sparse:
            self.sparse.discard(self.dense)
            self.dense += 1
        return True

    def once(self, i: int, what: str, ids: array, lines: array, where: str) -> None:
        """Add `i`, the id of a `what` ("node", "link") on `where`; one given twice is an
        error naming the line of the first (`ids` and `lines`: those read so far)."""
        if not self.add(i):
            raise LatticeError(f"{where}: {what} {i} is defined twice (first on line "
                               f"{lines[ids.index(i)]})")


class SlfLines:
    """An SLF file's lines, parsed: the header as written, and the nodes and links as arrays
    (one entry each, words interned once), not one dict of strings per line.

    Why: a real ASR lattice has ~10^4 links; a dict of field strings per link cost ~1.6 KB
    each, more than the whole decode. The header comes before the first node or link line
    (else an error), so the log base is known when the numbers are read and each link keeps
    only its numbers. What can still be wrong in a line (a bad number, a missing S=) is an
    error raised later, in `assemble`, in the same order as the file's lines: such a line
    keeps its fields as written (`slow_links`, `slow_nodes`) and `assemble` reports it where
    the old whole-file pass did, after the header's and the counts' errors."""

    def __init__(self, text: str, source: str, htk_quotes: bool) -> None:
        self.source = source
        self.header: dict[str, str] = {}
        self.header_lines: dict[str, int] = {}
        self.vocab: dict[str, int] = {}
        self.node_ids, self.node_lines = array("q"), array("q")
        self.node_word, self.node_ac, self.node_t = array("q"), array("d"), array("d")
        self.slow_nodes: dict[int, dict[str, str]] = {}  # index -> fields, a= not readable
        self.link_ids, self.link_lines = array("q"), array("q")
        self.src, self.dst, self.word = array("q"), array("q"), array("q")
        self.ac, self.pr, self.lm = array("d"), array("d"), array("d")
        self.slow_links: dict[int, dict[str, str]] = {}  # index -> fields, held as written
        self.base: float | None = None  # the log base once the header is complete
        self.header_done = False
        seen_nodes, seen_links = _Seen(), _Seen()
        for lineno, line in enumerate(_text_lines(text), start=1):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            where = f"{source}:{lineno}"
            if stripped == ".":
                raise LatticeError(f"{where}: sub-lattices are not supported (a '.' line ends "
                                   "one)")
            fields = split_fields(stripped, where, htk_quotes)
            first = fields[0][0]
            if first in ("I", "J") and not self.header_done:
                self.header_done = True
                try:  # a bad base= is reported by `assemble`, after the errors before it
                    self.base = log_base(self.header, self._at)
                except LatticeError:
                    self.base = None
            if first == "I":
                node = node_fields(fields, where)
                i = parse_int(node["I"], "I", where)
                seen_nodes.once(i, "node", self.node_ids, self.node_lines, where)
                self._node(i, node, lineno, where)
            elif first == "J":
                link = link_fields(fields, where)
                j = parse_int(link["J"], "J", where)
                seen_links.once(j, "link", self.link_ids, self.link_lines, where)
                self.link_ids.append(j)
                self.link_lines.append(lineno)
                self._link(link, where)
            else:
                if self.header_done:
                    raise LatticeError(f"{where}: header field {first}= after the nodes and "
                                       "links (the header comes first)")
                for name, value in fields:
                    name = HEADER_LONG.get(name, name)
                    if name in self.header:
                        raise LatticeError(f"{where}: header field {name}= given twice")
                    self.header[name], self.header_lines[name] = value, lineno

    def _at(self, name: str) -> str:
        return f"{self.source}:{self.header_lines[name]}"

    def _word_id(self, word: str | None) -> int:
        return -1 if word is None else self.vocab.setdefault(word, len(self.vocab))

    def _node(self, i: int, node: dict[str, str], lineno: int, where: str) -> None:
        self.node_ids.append(i)
        self.node_lines.append(lineno)
        self.node_word.append(self._word_id(node.get("W")))
        self.node_t.append(float(node["t"]) if "t" in node else math.nan)  # checked already
        ac = math.nan
        if "a" in node:
            try:
                if self.base is None:
                    raise LatticeError(where)
                ac = log_score(node["a"], self.base, "a", where)
            except LatticeError:
                self.slow_nodes[len(self.node_ids) - 1] = node
        self.node_ac.append(ac)

    def _link(self, f: dict[str, str], where: str) -> None:
        """A link's numbers, or (its fields kept) NaN and -1 when one of them is bad."""
        try:
            if self.base is None:
                raise LatticeError(where)
            s, d = _link_ends(f, where)
            ac = log_score(f["a"], self.base, "a", where) if "a" in f else math.nan
            for name in ("n", "p"):
                if name in f:
                    parse_float(f[name], name, where)
            pr = log_score(f["r"], self.base, "r", where) if "r" in f else math.nan
            lm = log_score(f["l"], self.base, "l", where) if "l" in f else math.nan
            word = self._word_id(f["W"]) if "W" in f else -2  # -2: the end node's word
        except LatticeError:
            self.slow_links[len(self.src)] = f
            s, d, word, ac, pr, lm = -1, -1, -1, math.nan, math.nan, math.nan
        self.src.append(s)
        self.dst.append(d)
        self.word.append(word)
        self.ac.append(ac)
        self.pr.append(pr)
        self.lm.append(lm)

    def assemble(self, scales: SlfScales, keep_lm_score: bool) -> SlfLattice:
        """The lattice from the parsed lines: counts, nodes, words, weights, start and ends,
        each error as the file's first offending line gives it."""
        header, at, source = self.header, self._at, self.source
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
        if n_links != len(self.src):
            raise LatticeError(f"{at('L')}: L={n_links} but the file has {len(self.src)} links")
        node_ids = np.frombuffer(self.node_ids, dtype=np.int64)
        if len(node_ids) and len(node_ids) != n_nodes:
            raise LatticeError(f"{at('N')}: N={n_nodes} but the file has {len(node_ids)} nodes")
        if len(beyond := np.flatnonzero(node_ids >= n_nodes)):
            k = int(beyond[0])
            raise LatticeError(f"{source}:{self.node_lines[k]}: node {self.node_ids[k]} is "
                               f"beyond N={n_nodes} (nodes are numbered 0..{n_nodes - 1})")
        base = log_base(header, at)
        file_scales = {}
        for name in ("acscale", "lmscale", "prscale"):
            if name in header:
                file_scales[name] = parse_float(header[name], name, at(name))
        if "wdpenalty" in header:  # a log score in the file's base; natural log in a linear file
            file_scales["wdpenalty"] = log_score(header["wdpenalty"], base or math.e,
                                                  "wdpenalty", at("wdpenalty"))
        sc = scales.resolved(file_scales)
        for k, node in self.slow_nodes.items():  # in file order: the first bad a= raises
            log_score(node["a"], base, "a", f"{source}:{self.node_lines[k]}")
            raise AssertionError(f"{source}:{self.node_lines[k]}: a= read on the second try")
        src, dst = np.frombuffer(self.src, np.int64), np.frombuffer(self.dst, np.int64)
        outside = (src >= n_nodes) | (dst >= n_nodes)
        if self.slow_links:
            outside[list(self.slow_links)] = True
        if len(flagged := np.flatnonzero(outside)):
            k = int(flagged[0])
            where = f"{source}:{self.link_lines[k]}"
            _link_ends(self.slow_links.get(k) or {"S": str(src[k]), "E": str(dst[k])}, where,
                       n_nodes)
            if k in self.slow_links:
                _old_link_checks(self.slow_links[k], base, where)
            raise AssertionError(f"{where}: the link was flagged but passes every check")
        return self._lattice(src, dst, n_nodes, base, sc, keep_lm_score)

    def _lattice(self, src: np.ndarray, dst: np.ndarray, n_nodes: int, base: float,
                 sc: SlfScales, keep_lm_score: bool) -> SlfLattice:
        """The checked links as a WordLattice (module docstring, "Weights"), computed over the
        arrays with the same float64 operations, in the same order, as one link at a time."""
        with np.errstate(all="ignore"):  # -inf + inf is NaN, which from_arrays refuses
            return self._weighted(src, dst, self._end_nodes(dst), n_nodes, base, sc, keep_lm_score)

    def _end_nodes(self, dst: np.ndarray) -> np.ndarray:
        """The node each link ends at, as an index into the node arrays (-1: no I= line)."""
        node_ids = np.frombuffer(self.node_ids, dtype=np.int64)
        if not len(node_ids):
            return np.full(len(dst), -1, dtype=np.int64)
        by_id = np.argsort(node_ids, kind="stable")
        at = np.minimum(np.searchsorted(node_ids[by_id], dst), len(node_ids) - 1)
        return np.where(node_ids[by_id][at] == dst, by_id[at], -1)

    def _weighted(self, src: np.ndarray, dst: np.ndarray, end_node: np.ndarray, n_nodes: int,
                  base: float, sc: SlfScales, keep_lm_score: bool) -> SlfLattice:
        """`_lattice`'s work once each link's end node (`end_node`, -1: none) is known."""
        assert sc.acscale is not None and sc.lmscale is not None and sc.prscale is not None
        assert sc.wdpenalty is not None
        node_ids = np.frombuffer(self.node_ids, dtype=np.int64)
        node_word = np.append(np.frombuffer(self.node_word, np.int64), -1)  # [-1]: no node
        node_ac = np.append(np.frombuffer(self.node_ac, np.float64), np.nan)
        word = np.frombuffer(self.word, np.int64)
        from_node = word == -2
        word = np.where(from_node, node_word[end_node], word)
        ac = np.frombuffer(self.ac, np.float64)
        ac = np.where(np.isnan(ac), 0.0, ac)
        extra = node_ac[end_node]
        ac = np.where(from_node, ac + np.where(np.isnan(extra), 0.0, extra), ac)
        weight = ac * sc.acscale if sc.acscale else np.zeros(len(ac))
        pr = np.frombuffer(self.pr, np.float64)
        if sc.prscale:
            weight = np.where(np.isnan(pr), weight, weight + sc.prscale * pr)
        else:
            weight = np.where(np.isnan(pr), weight, weight + 0.0)
        lm = np.frombuffer(self.lm, np.float64)
        if keep_lm_score:
            add = sc.lmscale * lm if sc.lmscale else np.zeros(len(lm))
            weight = np.where(np.isnan(lm), weight, weight + add)
        vocab = list(self.vocab)
        epsilon = np.array([w in EPSILON_WORDS for w in vocab] + [True], dtype=bool)
        word = np.where(epsilon[word], -1, word)  # word -1 indexes the last entry: epsilon
        weight = np.where(word >= 0, weight + sc.wdpenalty, weight)
        del from_node, ac, extra, pr, lm, end_node  # a large lattice's peak is these arrays

        # Sized by the nodes the file names, never by N= (module docstring), in file id order.
        has_in, has_out = _unique(dst), _unique(src)
        used = _unique(np.concatenate((has_in, has_out))) if n_nodes > 1 else np.arange(n_nodes)
        header, at_line, source = self.header, self._at, self.source
        if "start" in header:
            start = node_ref(header["start"], "start", at_line("start"), n_nodes)
        else:
            starts = _without(used, has_in).tolist()
            if not starts:
                raise LatticeError(f"{source}: no start node (a link enters every node; name "
                                   "one with start=)")
            if len(starts) > 1:
                second = starts[1]
                line = (f":{self.node_lines[self.node_ids.index(second)]}"
                        if second in self.node_ids else "")
                raise LatticeError(f"{source}{line}: two start nodes: no link enters node "
                                   f"{starts[0]} nor node {second}; name the start with start=")
            start = starts[0]
        if "end" in header:
            ends = [node_ref(header["end"], "end", at_line("end"), n_nodes)]
        else:
            ends = _without(used, has_out).tolist()
        del has_in, has_out
        ids = _unique(np.concatenate((used, np.array([start, *ends], dtype=np.int64))))
        lattice = WordLattice.from_arrays(
            len(ids), int(np.searchsorted(ids, start)),
            {int(np.searchsorted(ids, v)): 0.0 for v in ends},
            np.searchsorted(ids, src), np.searchsorted(ids, dst), word, vocab, weight,
            source=source, node_names=[str(v) for v in ids.tolist()],
            arc_lines=np.frombuffer(self.link_lines, np.int64),
            node_times=self._node_times(ids, node_ids))
        return SlfLattice(lattice, sc, base, header)

    def _node_times(self, ids: np.ndarray, node_ids: np.ndarray) -> np.ndarray | None:
        """Each node's `t=` (seconds), in `ids` order, when every node has one (CTM output
        needs them); None when any node lacks it."""
        if not len(node_ids):
            return None if len(ids) else np.zeros(0)
        by_id = np.argsort(node_ids, kind="stable")
        at = np.minimum(np.searchsorted(node_ids[by_id], ids), len(node_ids) - 1)
        if not np.all(node_ids[by_id][at] == ids):
            return None
        times = np.frombuffer(self.node_t, np.float64)[by_id[at]]
        return None if np.isnan(times).any() else times


def _unique(x: np.ndarray) -> np.ndarray:
    """np.unique(x), without its import of numpy.ma (1.2 MB resident, issue 34)."""
    x = np.sort(x)
    return x[np.concatenate(([True], x[1:] != x[:-1]))] if len(x) else x


def _without(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The entries of `a` not in the sorted array `b` (np.setdiff1d's, `a` sorted, distinct)."""
    return a[b[np.minimum(np.searchsorted(b, a), len(b) - 1)] != a] if len(b) else a


def _link_ends(f: Mapping[str, str], where: str, n_nodes: int | None = None
               ) -> tuple[int, int]:
    """A link's S= and E= (both compulsory), and with `n_nodes` both within it."""
    for name in ("S", "E"):
        if name not in f:
            raise LatticeError(f"{where}: the link has no {name}= (its "
                               f"{'start' if name == 'S' else 'end'} node)")
    s, d = parse_int(f["S"], "S", where), parse_int(f["E"], "E", where)
    if n_nodes is not None:
        for node in (s, d):
            if node >= n_nodes:
                raise LatticeError(f"{where}: the link names the node {node}, which does not "
                                   f"exist (N={n_nodes})")
    return s, d


def _old_link_checks(f: Mapping[str, str], base: float, where: str) -> None:
    """A link's number fields in the order they count (a=, n=, p=, r=, l=): the first bad
    one raises."""
    if "a" in f:
        log_score(f["a"], base, "a", where)
    for name in ("n", "p"):
        if name in f:
            parse_float(f[name], name, where)
    for name in ("r", "l"):
        if name in f:
            log_score(f[name], base, name, where)
