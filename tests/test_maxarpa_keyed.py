"""Issue 34's conversion path: a key-ordered ARPA parsed straight into the table
(`maxarpa.keyed`), the bounds computed already rounded (`maxarpa.rounded`), and the compiled
key walks (`prefix_rows_sorted`, `first_occurrences`).

Each is checked against the path it replaces, which stays the reference for every other file:
`read_arpa` + `build_trie` (array for array, bit for bit), `compute_bounds` followed by the
writer's own rounding (the binary file byte for byte), and the numpy walks.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

import maxarpa
from arpa_fixtures import arpa_texts
from arsdecode.testing.random_arpa import random_arpa_text
from maxarpa import contexts, keywalk
from maxarpa.arpa import read_arpa
from maxarpa.binary_write import write_binary
from maxarpa.config import PERMISSIVE
from maxarpa.errors import FormatError
from maxarpa.keyed import read_sorted_arpa
from maxarpa.native import first_occurrences, prefix_rows_sorted
from maxarpa.table import build_trie

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "arpa"
REAL_FILES = sorted(p for s in ("set1", "set2") for p in (CORPUS / s).glob("*")
                    if p.suffix != ".md")


def key_ordered(text: str) -> str:
    """The same ARPA text with each order's lines sorted by reversed n-gram, word ids in
    unigram order: the table's key order, as lmplz writes its files."""
    ids: dict[str, int] = {}
    out: list[str] = []
    section: list[tuple[tuple[int, ...], str]] = []
    k = 0

    def flush() -> None:
        out.extend(line for _, line in sorted(section))
        section.clear()

    for line in text.splitlines():
        fields = line.split()
        if line.startswith("\\"):
            flush()
            k = int(line[1]) if line[1:2].isdigit() else 0
            out.append(line)
        elif k >= 1 and fields:
            words = fields[1 : k + 1]
            if k == 1:
                ids[words[0]] = len(ids)
                out.append(line)
            else:
                section.append((tuple(ids[w] for w in reversed(words)), line))
        else:
            out.append(line)
    flush()
    return "\n".join(out) + "\n"


def assert_same_trie(a, b) -> None:
    assert a.vocab_size == b.vocab_size and a.order == b.order
    for x, y in zip(a.nodes, b.nodes, strict=True):
        for f in ("keys", "log10p", "log10bow", "listed"):
            u, v = getattr(x, f), getattr(y, f)
            assert u.dtype == v.dtype and u.shape == v.shape and u.tobytes() == v.tobytes(), f
        assert np.array_equal(x.rows, y.rows)


def reference(path: Path):
    data = read_arpa(path)
    return data.vocab, build_trie(data, str(path))


@settings(max_examples=60, deadline=None)
@given(arpa_texts(min_order=1, max_order=5, max_vocab=6, drop_prefix_contexts=None,
                  neg_inf=True))
def test_key_ordered_files_parse_straight_into_the_same_table(tmp_path_factory, drawn):
    """Random models (pruned, positive backoffs, -inf) in key order: the keyed parser takes
    every suffix-closed one and builds `build_trie`'s table; the file as drawn (other order)
    is declined or gives the same table."""
    text, _ = drawn
    d = tmp_path_factory.mktemp("keyed")
    for name, body in (("sorted.arpa", key_ordered(text)), ("drawn.arpa", text)):
        path = d / name
        path.write_text(body)
        vocab, ref = reference(path)
        got = read_sorted_arpa(path)
        if got is None:
            # declined: only when some suffix is unlisted (then the table has blanks) or
            # the lines are out of key order
            assert name == "drawn.arpa" or not all(n.listed.all() for n in ref.nodes)
            continue
        assert got[0] == vocab
        assert_same_trie(got[1], ref)


def test_lmplz_files_take_the_keyed_path(real_models):
    for order in (3, 5):
        path = real_models.paths[order]
        got = read_sorted_arpa(path)
        assert got is not None
        vocab, ref = reference(path)
        assert got[0] == vocab
        assert_same_trie(got[1], ref)


@pytest.mark.skipif(not REAL_FILES, reason=f"no ARPA corpus at {CORPUS}")
def test_real_files_equal_the_reference_when_keyed(tmp_path):
    """Every real ARPA file, as found and in key order: the keyed table equals the
    reference one whenever the keyed parser takes the file."""
    taken = 0
    for path in REAL_FILES:
        try:
            vocab, ref = reference(path)
        except FormatError:
            continue  # broken on purpose (tests/test_arpa_grammar.py)
        for variant in (path, None):
            if variant is None:
                if path.suffix in (".gz", ".bz2", ".xz"):
                    continue
                variant = tmp_path / path.name
                try:
                    variant.write_bytes(key_ordered(path.read_bytes().decode("latin-1"))
                                        .encode("latin-1"))
                    vocab, ref = reference(variant)
                except (KeyError, ValueError, IndexError, FormatError):
                    continue  # a preamble key_ordered cannot tell from sections
            got = read_sorted_arpa(variant)
            if got is not None:
                assert got[0] == vocab
                assert_same_trie(got[1], ref)
                taken += 1
    assert taken >= 10


def sorted_text(seed: int = 3, order: int = 3) -> str:
    return key_ordered(random_arpa_text(random.Random(seed), order, 6, density=1.0))


def first_line_of(lines: list[str], mark: str) -> int:
    """The 0-based index of the first n-gram line after `mark`."""
    return next(i for i in range(lines.index(mark) + 1, len(lines)) if lines[i].strip())


def test_a_repeated_ngram_is_declined_and_named_with_its_lines(tmp_path):
    lines = sorted_text().splitlines()
    at = first_line_of(lines, "\\3-grams:") + 1  # the second trigram, repeated after itself
    lines.insert(at + 1, lines[at])
    count = next(i for i, line in enumerate(lines) if line.startswith("ngram 3="))
    lines[count] = f"ngram 3={int(lines[count].split('=')[1]) + 1}"
    path = tmp_path / "dup.arpa"
    path.write_text("\n".join(lines) + "\n")
    assert read_sorted_arpa(path) is None
    with pytest.raises(FormatError) as err:
        maxarpa.load(path, config=PERMISSIVE)
    message = str(err.value)
    assert message.startswith(f"{path}:{at + 2}:") and "duplicate 3-gram" in message
    assert f"first listed at line {at + 1}" in message


def test_a_bad_line_still_names_its_file_and_line(tmp_path):
    lines = sorted_text().splitlines()
    at = first_line_of(lines, "\\3-grams:") + 2
    lines[at] = "\t".join(["-0.5x", *lines[at].split()[1:]])
    path = tmp_path / "bad.arpa"
    path.write_text("\n".join(lines) + "\n")
    assert read_sorted_arpa(path) is None
    with pytest.raises(FormatError) as err:
        maxarpa.load(path)
    assert str(err.value).startswith(f"{path}:{at + 1}:")


def converted_bytes(path: Path, out: Path, *, rounded: bool) -> bytes:
    model = maxarpa.load(path, config=PERMISSIVE, rounded_bounds=rounded)
    if rounded:
        assert model.trie.bounds_rounded or model.unk_id is None or model.bos_id is None
    write_binary(model, out, bounds_verified=True)
    return out.read_bytes()


@settings(max_examples=60, deadline=None)
@given(arpa_texts(min_order=1, max_order=5, max_vocab=6, drop_prefix_contexts=None,
                  neg_inf=True))
def test_rounded_bounds_write_the_same_file(tmp_path_factory, drawn):
    """`load(rounded_bounds=True)` (convert --binary) writes the very bytes the exact bounds
    and the writer's own rounding write, on random models: pruned, positive backoffs, -inf,
    keyed or not."""
    text, _ = drawn
    d = tmp_path_factory.mktemp("rounded")
    for name, body in (("sorted.arpa", key_ordered(text)), ("drawn.arpa", text)):
        path = d / name
        path.write_text(body)
        exact = converted_bytes(path, d / "exact.npz", rounded=False)
        assert converted_bytes(path, d / "rounded.npz", rounded=True) == exact


def test_rounded_bounds_are_float32_and_not_below_the_exact_ones(real_models, tmp_path):
    path = real_models.paths[5]
    exact = maxarpa.load(path)
    rounded = maxarpa.load(path, rounded_bounds=True)
    n = exact.order
    for k, (a, b) in enumerate(zip(exact.trie.nodes, rounded.trie.nodes, strict=True), 1):
        if k == n:  # the highest order's bounds are its own values, as a format-3 file's
            assert b.mf is b.log10p and b.mbow is b.log10bow
            continue
        assert b.mf.dtype == b.mbow.dtype == np.float32
        assert (b.mf >= a.mf).all() and (b.mbow >= a.mbow).all()
    assert (converted_bytes(path, tmp_path / "a.npz", rounded=True)
            == converted_bytes(path, tmp_path / "b.npz", rounded=False))
    # and the CLI's file, which converts this way, is the one `maxarpa.convert` writes
    maxarpa.convert(path, tmp_path / "c.npz", binary=True)
    assert (tmp_path / "c.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()


@pytest.mark.parametrize("seed", range(6))
def test_compiled_walks_equal_the_numpy_ones(seed):
    """`prefix_rows` (compiled for int32 rows) against its numpy search, and
    `first_occurrences` against the scatter-minimum, on random pruned and closed tables."""
    text = random_arpa_text(random.Random(seed), 5, 7, drop_prefix_contexts=seed % 2 == 1)
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.arpa"
        path.write_text(text)
        model = maxarpa.load(path, config=PERMISSIVE)
    trie = model.trie
    below_fast = below_slow = None
    for k in range(2, trie.order + 1):
        keys, keys_below = trie.nodes[k - 1].keys, trie.nodes[k - 2].keys
        fast = keywalk.prefix_rows(keys, keys_below, trie.vocab_size, below_fast)
        slow = keywalk.prefix_rows(keys, keys_below, trie.vocab_size,
                                   None if below_slow is None else below_slow.astype(np.int64))
        assert fast.dtype == np.int32 and np.array_equal(fast, slow)
        # the definition: the prefix a1..a(k-1) of each node, looked up by its words
        rows = trie.nodes[k - 1].rows
        want = trie.lookup_rows(rows[:, :-1]) if k > 2 else rows[:, 0].astype(np.int64)
        assert np.array_equal(fast, want)
        below_fast, below_slow = fast, slow
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 50, size=400).astype(np.int32)
    got = first_occurrences(values, 50)
    _, first = np.unique(values, return_index=True)
    assert np.array_equal(got, values[np.sort(first)])
    assert np.array_equal(contexts._first_occurrences(values.astype(np.int64), 50), got)


def test_compiled_walks_refuse_rows_that_do_not_exist():
    keys = np.array([5 * 10 + 1], dtype=np.uint64)  # parent row 5 of an order with 2 nodes
    with pytest.raises(ValueError):
        prefix_rows_sorted(keys, np.array([1, 2], dtype=np.uint64),
                           np.array([0, 0], dtype=np.int32), 1, 10)
    with pytest.raises(ValueError):
        first_occurrences(np.array([0, 3], dtype=np.int32), 3)
