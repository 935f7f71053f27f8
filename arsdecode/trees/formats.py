"""Readers and writers of the two tree-automaton file formats, as lists of `RawRule`.

Why raw rules with line numbers: the automaton checks cycles, undefined states and the empty
language after reading, and each error must name the line of the rule at fault, whichever
format it came from. This module knows syntax only; `automaton.TreeAutomaton` knows meaning.

JSON (`{"start": "S", "rules": [{"lhs", "label", "children", "weight"}]}`): weights are
natural logs (`-inf` may be written as the string "-inf", a rule of weight zero).

Alto/IRTG weighted tree automaton text (the grammar of Alto's TreeAutomaton.g4): one rule per
line, `S! -> f(A, B) [0.5]`; a leaf is `A -> the [0.3]` (or `the()`); the weight in brackets
is a probability (not a log; 1 when absent), converted here with ln; `!` (or `°`) after any
occurrence of a state marks it final; names may be quoted with ' or "; `//` and `/* */`
comments. Exactly one final state is allowed (the engine's trees have one root state).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from .errors import TreeFormatError, TreeWeightError, where


@dataclass(frozen=True)
class RawRule:
    """One rule as read: `lhs -> label(children)` with its ln weight and source line."""

    lhs: str
    label: str
    children: tuple[str, ...]
    weight: float  # natural log
    line: int | None = None


def _ln_weight(value: object, source: str, line: int | None) -> float:
    """A JSON weight (an ln number, or the string "-inf") as a float, or a one-line error."""
    if isinstance(value, str) and value.strip().lower() in ("-inf", "-infinity"):
        return -math.inf
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TreeWeightError(f"{where(source, line)}weight {value!r} is not a number")
    w = float(value)
    if math.isnan(w) or w == math.inf:
        raise TreeWeightError(f"{where(source, line)}weight {value!r} is not an ln weight "
                              "(NaN or +inf)")
    return w


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _rule_offsets(text: str) -> list[int]:
    """Where each element of the top-level "rules" array starts (for line numbers).

    Walks the top-level object with the standard decoder, so a key named "rules" inside a
    rule cannot be mistaken for the array."""
    dec = json.JSONDecoder()
    i = _skip_ws(text, 0)
    if i >= len(text) or text[i] != "{":
        return []
    i = _skip_ws(text, i + 1)
    while i < len(text) and text[i] != "}":
        key, i = dec.raw_decode(text, i)
        i = _skip_ws(text, _skip_ws(text, i) + 1)  # past ':'
        if key == "rules" and text[i] == "[":
            offsets = []
            i = _skip_ws(text, i + 1)
            while i < len(text) and text[i] != "]":
                offsets.append(i)
                _, i = dec.raw_decode(text, i)
                i = _skip_ws(text, i)
                if i < len(text) and text[i] == ",":
                    i = _skip_ws(text, i + 1)
            return offsets
        _, i = dec.raw_decode(text, i)
        i = _skip_ws(text, i)
        if i < len(text) and text[i] == ",":
            i = _skip_ws(text, i + 1)
    return []


def parse_json(text: str, source: str = "<json>") -> tuple[str, list[RawRule]]:
    """(start state, rules) of a JSON tree automaton; every error is one line."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        raise TreeFormatError(f"{where(source, err.lineno)}not JSON: {err.msg}") from None
    return from_json_object(obj, source, _rule_offsets(text), text)


def from_json_object(obj: object, source: str = "<json>", offsets: list[int] | None = None,
                     text: str = "") -> tuple[str, list[RawRule]]:
    """(start, rules) of an already-decoded JSON object (offsets give the rules' lines)."""
    if not isinstance(obj, dict) or "rules" not in obj or "start" not in obj:
        raise TreeFormatError(f"{where(source, 1)}a tree automaton is an object with "
                              '"start" and "rules"')
    start, rules = obj["start"], obj["rules"]
    if not isinstance(start, str) or not start:
        raise TreeFormatError(f"{where(source, 1)}\"start\" must be a state name (a string)")
    if not isinstance(rules, list):
        raise TreeFormatError(f"{where(source, 1)}\"rules\" must be a list")
    out = []
    for k, rule in enumerate(rules):
        line = _line_of(text, offsets[k]) if offsets and k < len(offsets) else None
        at = where(source, line) + ("" if line else f"rule {k}: ")
        if not isinstance(rule, dict) or not {"lhs", "label"} <= set(rule):
            raise TreeFormatError(f"{at}a rule is an object with \"lhs\", \"label\", "
                                  "\"children\" and \"weight\"")
        lhs, label = rule["lhs"], rule["label"]
        children = rule.get("children", [])
        if not isinstance(lhs, str) or not lhs or not isinstance(label, str) or not label:
            raise TreeFormatError(f"{at}\"lhs\" and \"label\" must be non-empty strings")
        if not isinstance(children, list) or not all(isinstance(c, str) and c for c in children):
            raise TreeFormatError(f"{at}\"children\" must be a list of state names")
        weight = _ln_weight(rule.get("weight", 0.0), source if line else f"{source}: rule {k}",
                            line)
        out.append(RawRule(lhs, label, tuple(children), weight, line))
    return start, out


def to_json_object(start: str, rules: list[RawRule]) -> dict:
    """The JSON form (ln weights; -inf as the string "-inf")."""
    return {"start": start, "rules": [
        {"lhs": r.lhs, "label": r.label, "children": list(r.children),
         "weight": r.weight if r.weight > -math.inf else "-inf"} for r in rules]}


_TOKEN = re.compile(r"""\s*(?:(?P<q>'[^']*'|"[^"]*")|(?P<arrow>->)|(?P<p>[(),!\u00b0])
                    |(?P<w>\[[^\]]*\])|(?P<name>[^\s(),'"\[\]!\u00b0]+))""", re.VERBOSE)
_COMMENT = re.compile(r"//.*$")


def _tokens(line: str, source: str, lineno: int) -> list[tuple[str, str]]:
    out, i = [], 0
    while i < len(line):
        if line[i:].strip() == "":
            break
        m = _TOKEN.match(line, i)
        if not m:
            raise TreeFormatError(f"{where(source, lineno)}cannot read {line[i:].strip()!r}")
        kind = m.lastgroup or ""
        value = m.group(kind)
        out.append((kind, value[1:-1] if kind == "q" else value))
        i = m.end()
    return out


class _Line:
    """The tokens of one rule line and a cursor over them (a small recursive-descent reader)."""

    def __init__(self, toks: list[tuple[str, str]], bad: TreeFormatError) -> None:
        self.toks, self.pos, self.bad = toks, 0, bad
        self.finals: list[str] = []

    def peek(self, kind: str | None = None, value: str | None = None) -> bool:
        if self.pos >= len(self.toks):
            return False
        k, v = self.toks[self.pos]
        return (kind is None or k == kind) and (value is None or v == value)

    def take(self, kind: str | None = None, value: str | None = None) -> str:
        if not self.peek(kind, value):
            raise self.bad
        self.pos += 1
        return self.toks[self.pos - 1][1]

    def name(self) -> str:
        if self.peek("q"):
            return self.take("q")
        return self.take("name")

    def state(self) -> str:
        s = self.name()
        if self.peek("p", "!") or self.peek("p", "\u00b0"):
            self.pos += 1
            self.finals.append(s)
        return s


def parse_alto(text: str, source: str = "<alto>") -> tuple[str, list[RawRule]]:
    """(start state, rules) of an Alto/IRTG weighted tree automaton; errors are one line."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    finals: dict[str, int] = {}
    rules = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        toks = _tokens(_COMMENT.sub("", raw), source, lineno)
        if not toks:
            continue
        ln = _Line(toks, TreeFormatError(f"{where(source, lineno)}not a rule "
                                         f"`q -> f(q1, ..., qk) [p]`: {raw.strip()!r}"))
        lhs = ln.state()
        ln.take("arrow")
        label = ln.name()
        children: list[str] = []
        if ln.peek("p", "("):
            ln.take()
            if not ln.peek("p", ")"):
                children.append(ln.state())
            while children and ln.peek("p", ","):
                ln.take()
                children.append(ln.state())
            ln.take("p", ")")
        weight = _alto_weight(ln.take()[1:-1], source, lineno) if ln.peek("w") else 0.0
        if ln.pos != len(toks):
            raise ln.bad
        for f in ln.finals:
            finals.setdefault(f, lineno)
        rules.append(RawRule(lhs, label, tuple(children), weight, lineno))
    if not finals:
        raise TreeFormatError(f"{where(source, None)}no final state (mark one with `!`, as "
                              "`S! -> f(A, B) [0.5]`)")
    if len(finals) > 1:
        (a, la), (b, lb) = list(finals.items())[:2]
        raise TreeFormatError(f"{where(source, lb)}a second final state {b!r} (the first, "
                              f"{a!r}, at line {la}); one start state is supported")
    return next(iter(finals)), rules


def _alto_weight(text: str, source: str, lineno: int) -> float:
    try:
        p = float(text)
    except ValueError:
        raise TreeWeightError(f"{where(source, lineno)}weight [{text}] is not a number") \
            from None
    if not p >= 0 or p == math.inf:
        raise TreeWeightError(f"{where(source, lineno)}weight [{text}] is not a probability "
                              "(a finite number >= 0)")
    return math.log(p) if p > 0 else -math.inf


def _alto_name(name: str) -> str:
    return name if re.fullmatch(r"[^\s(),'\"\[\]!\u00b0/]+", name) and name != "->" \
        else "'" + name + "'"


def to_alto(start: str, rules: list[RawRule]) -> str:
    """The Alto/IRTG text (probabilities in brackets, `repr` precision; start marked `!`)."""
    lines = []
    marked = False
    for r in rules:
        lhs = _alto_name(r.lhs) + ("!" if r.lhs == start and not marked else "")
        marked = marked or r.lhs == start
        kids = "(" + ", ".join(map(_alto_name, r.children)) + ")" if r.children else ""
        lines.append(f"{lhs} -> {_alto_name(r.label)}{kids} [{math.exp(r.weight)!r}]")
    return "\n".join(lines) + "\n"
