"""The compiled text reader and writer (maxarpa.native) against the Python references.

Issue 10 moved ARPA and MAX-ARPA parsing and MAX-ARPA writing into C++, and gave suffix-closed
files a build without blank search. Each shortcut is checked against what it replaced or an
independent reference: Python's repr for every number written, the line-by-line reader for
every file read, the general (blank-adding) build for the shortcut build, the brute-force
reference for models with blanks, and the hash lookup for files whose lines are not in the
order maxarpa writes them.
"""

from __future__ import annotations

import math
import random
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_maxarpa_properties import PROPS, same
from test_maxarpa_real_files import LATIN1

import maxarpa
from arpa_fixtures import VALID, arpa_texts
from arsdecode.testing.random_arpa import random_arpa_text
from arsdecode.testing.reference_arpa import all_contexts, parse_arpa, ref_log10p, ref_max_log10p
from maxarpa import FormatError
from maxarpa.arpa import _read_arpa_fast, _read_arpa_streaming, format_log10, read_arpa
from maxarpa.maxarpa_format import read_max_arpa, write_max_arpa
from maxarpa.native import repr_log10
from maxarpa.table import _build_closed, _build_with_blanks

NODE_FIELDS = ("keys", "rows", "log10p", "log10bow", "listed", "mf", "mbow")


def assert_same_arpa_data(a, b) -> None:
    assert a.vocab == b.vocab
    assert len(a.orders) == len(b.orders)
    for x, y in zip(a.orders, b.orders):
        assert np.array_equal(x.ids, y.ids)
        assert np.array_equal(x.log10p, y.log10p)
        assert np.array_equal(x.log10bow, y.log10bow)


def assert_same_tables(a, b, fields=NODE_FIELDS) -> None:
    assert len(a.nodes) == len(b.nodes)
    for x, y in zip(a.nodes, b.nodes):
        for f in fields:
            assert np.array_equal(getattr(x, f), getattr(y, f)), f


# ---- numbers -------------------------------------------------------------------------------


@settings(PROPS, max_examples=2000)
@given(st.floats(allow_nan=False, allow_infinity=False) | st.just(-math.inf))
def test_numbers_are_written_as_pythons_repr(value):
    assert repr_log10(value).decode() == format_log10(value)


def test_numbers_are_written_as_pythons_repr_on_random_bit_patterns():
    rng = np.random.default_rng(7)
    values = np.frombuffer(rng.bytes(8 * 200_000), dtype=np.float64)
    values = values[np.isfinite(values)]
    typical = np.concatenate([rng.uniform(-8, 2, 20_000).round(d) for d in range(1, 8)])
    edges = [1e16, 1e15, 9999999999999998.0, 1e-4, 1e-5, 5e-324, -0.0, -99.0, 0.1, 2.0]
    for v in [*values.tolist(), *typical.tolist(), *edges]:
        assert repr_log10(v).decode() == format_log10(v), struct.pack("<d", v).hex()


# ---- reading ARPA --------------------------------------------------------------------------


@settings(PROPS, max_examples=150)
@given(arpa_texts(min_order=1, max_order=5, max_vocab=4, drop_prefix_contexts=None, neg_inf=True))
def test_compiled_arpa_reader_equals_the_line_by_line_reader(write_arpa, case):
    text, params = case
    path = write_arpa(text)
    fast = _read_arpa_fast(str(path))
    assert fast is not None, params  # a well-formed file never needs the slow reader
    assert_same_arpa_data(fast, _read_arpa_streaming(path))


@pytest.mark.parametrize("text", [VALID, LATIN1], ids=["valid", "latin1"])
def test_compiled_arpa_reader_on_fixed_files(tmp_path, text):
    path = tmp_path / "m.arpa"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    fast = _read_arpa_fast(str(path))
    assert fast is not None
    assert_same_arpa_data(fast, _read_arpa_streaming(path))


UNIGRAMS = "\\data\\\nngram 1=2\nngram 2=1\n\n\\1-grams:\n-1\tw0\t0\n"


@pytest.mark.parametrize("lines, why", [
    ("-0.5\tw1\t0.5_0\n\n\\2-grams:\n-0.1\tw0 w1\n", "a number only float() reads"),
    ("-0.5\tw1\tnan\n\n\\2-grams:\n-0.1\tw0 w1\n", "nan"),
    ("-0.5\tw1\n\n\\2-grams:\n-0.1\tw0 w9\n", "a word that is no unigram"),
    ("-0.5\tw1\n\n\\2-grams:\n-0.1\n", "too few fields"),
    ("-0.5\tw0\n\n\\2-grams:\n-0.1\tw0 w0\n", "a repeated unigram"),
])
def test_compiled_reader_declines_what_the_careful_reader_must_judge(tmp_path, lines, why):
    """Irregular lines make the compiled reader give up (None), never guess."""
    path = tmp_path / "m.arpa"
    path.write_text(UNIGRAMS + lines + "\n\\end\\\n")
    assert _read_arpa_fast(str(path)) is None, why


def test_minus_inf_backoff_reads_the_same_both_ways(tmp_path):
    path = tmp_path / "m.arpa"
    path.write_text("\\data\\\nngram 1=3\nngram 2=1\n\n\\1-grams:\n-1\t<s>\t-inf\n-0.5\ta\t-INF\n"
                    "-0.7\t</s>\n\n\\2-grams:\n-0.2\t<s> a\n\n\\end\\\n")
    fast = _read_arpa_fast(str(path))
    assert fast is not None and fast.orders[0].log10bow[0] == -math.inf
    assert_same_arpa_data(fast, _read_arpa_streaming(path))


# ---- building the table --------------------------------------------------------------------


@settings(PROPS, max_examples=100)
@given(arpa_texts(min_order=1, max_order=5, max_vocab=4, drop_prefix_contexts=None, neg_inf=True))
def test_closed_build_equals_the_general_build(write_arpa, case):
    text, params = case
    path = write_arpa(text)
    closed = _build_closed(read_arpa(path))
    assert closed is not None, params  # the generator's files are suffix-closed
    assert_same_tables(closed, _build_with_blanks(read_arpa(path), str(path)),
                       fields=("keys", "rows", "log10p", "log10bow", "listed"))


def with_blanks(text: str, rng: random.Random) -> str:
    """Delete some n-grams that are suffixes of longer listed ones (and fix the header), so
    the file is no longer suffix-closed and the table must add blank nodes."""
    ref = parse_arpa(text)
    listed = set(ref.probs)
    suffixes = sorted({g[1:] for g in listed if len(g) >= 3})
    drop = {g for g in suffixes if rng.random() < 0.5} or set(suffixes[:1])
    out, counts, section = [], {}, 0
    for line in text.splitlines():
        fields = line.split()
        if line.startswith("\\") and line.endswith("-grams:"):
            section = int(line[1:line.index("-")])
        elif section and fields and not line.startswith("\\"):
            if tuple(fields[1 : section + 1]) in drop:
                continue
            counts[section] = counts.get(section, 0) + 1
        out.append(line)
    def header(line: str) -> str:
        k = int(line.split()[1].split("=")[0])
        return f"ngram {k}={counts.get(k, 0)}"

    return "\n".join(header(line) if line.startswith("ngram ") else line for line in out) + "\n"


@settings(PROPS, max_examples=80)
@given(st.integers(0, 2**32 - 1), st.integers(3, 4), st.sampled_from([0.0, 0.5, 1.0]))
def test_models_with_blanks_equal_the_brute_force_reference(write_arpa, seed, order, positive):
    rng = random.Random(seed)
    closed = random_arpa_text(rng, order, 3, positive, density=0.9)
    text = with_blanks(closed, rng)
    ref = parse_arpa(text)
    path = write_arpa(text)
    model = maxarpa.load(path)
    has_blanks = any((~node.listed).any() for node in model.trie.nodes)
    assert has_blanks == (text != closed)  # every dropped suffix leaves a blank behind
    for c in all_contexts(ref):
        for w in ref.vocab:
            assert same(model.log10p(w, c), ref_log10p(ref, w, c), 1e-9), (seed, c, w)
            assert same(model.max_log10p(w, c), ref_max_log10p(ref, w, c), 1e-9), (seed, c, w)
    # and the MAX-ARPA round trip keeps every array, blanks included
    out = path.with_suffix(".maxarpa")
    write_max_arpa(model, out)
    assert_same_tables(read_max_arpa(out).trie, model.trie)


# ---- reading MAX-ARPA ----------------------------------------------------------------------


def shuffled_sections(text: str, rng: random.Random) -> str:
    """The same MAX-ARPA file with the lines of every section above the unigrams in another
    order (the unigrams' order is the vocabulary's, so it is part of the model)."""
    out: list[str] = []
    body: list[str] = []
    mark = ""
    for line in text.split("\n"):
        if line.startswith("\\") or not line.strip():
            if mark.endswith(("-grams:", "-blanks:")) and mark != "\\1-grams:":
                rng.shuffle(body)
            out += body + [line]
            body = []
            mark = line if line.startswith("\\") else mark
        else:
            body.append(line)
    return "\n".join(out + body)


@settings(PROPS, max_examples=60)
@given(st.integers(0, 2**32 - 1), st.integers(2, 4), st.booleans())
def test_max_arpa_lines_in_any_order_read_the_same(write_arpa, seed, order, blanks):
    """The format says readers must not depend on the line order within a section: the
    forward scan gives way to the hash lookup, and the table comes out identical."""
    rng = random.Random(seed)
    text = random_arpa_text(rng, order, 3, 0.5, density=0.9)
    path = write_arpa(with_blanks(text, rng) if blanks else text)
    model = maxarpa.load(path)
    out = path.with_suffix(".maxarpa")
    write_max_arpa(model, out)
    mixed = path.with_suffix(".mixed.maxarpa")
    mixed.write_text(shuffled_sections(out.read_text(), rng))
    assert_same_tables(read_max_arpa(mixed).trie, model.trie)


def test_max_arpa_errors_name_their_line(tmp_path):
    path = tmp_path / "m.arpa"
    path.write_text(VALID)
    out = tmp_path / "m.maxarpa"
    write_max_arpa(maxarpa.load(path), out)
    lines = out.read_text().split("\n")
    second = lines.index("\\2-grams:") + 2
    cases = {
        "nan": lambda f: f.__setitem__(0, "nan"),
        "unknown": lambda f: f.__setitem__(1, "zzz " + f[1].split(" ", 1)[1]),
        "fields": lambda f: f.pop(),
    }
    for name, edit in cases.items():
        fields = lines[second].split("\t")
        edit(fields)
        bad = tmp_path / f"{name}.maxarpa"
        bad.write_text("\n".join(lines[:second] + ["\t".join(fields)] + lines[second + 1 :]))
        with pytest.raises(FormatError) as info:
            read_max_arpa(bad)
        assert info.value.line == second + 1, (name, str(info.value))
    # one line more than the header says
    extra = tmp_path / "extra.maxarpa"
    extra.write_text("\n".join(lines[: second + 1] + [lines[second]] + lines[second + 1 :]))
    with pytest.raises(FormatError, match="more lines than the header"):
        read_max_arpa(extra)
