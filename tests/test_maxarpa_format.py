"""File formats: compressed ARPA, header variants, MAX-ARPA round trips, FormatError reports."""

from __future__ import annotations

import bz2
import gzip
import lzma
import random
import re

import pytest

import maxarpa
from arpa_fixtures import MALFORMED, VALID, edited
from arsdecode.testing.random_arpa import random_arpa_text
from arsdecode.testing.reference_arpa import all_contexts, parse_arpa, ref_log10p, ref_max_log10p
from maxarpa.errors import FormatError, MaxArpaError
from maxarpa.maxarpa_format import write_max_arpa
from maxarpa.model import Model


def answers(model: Model, ref) -> list[tuple[float, float]]:
    return [
        (model.log10p(w, c), model.max_log10p(w, c)) for c in all_contexts(ref) for w in ref.vocab
    ]


def test_valid_small_file(write_arpa):
    model = maxarpa.load(write_arpa(VALID))
    assert model.order == 2
    assert list(model.counts) == [4, 2]
    assert model.positive_backoffs == 1
    assert model.log10p("a", ["<s>"]) == pytest.approx(-0.1)
    assert model.log10p("</s>", ["a"]) == pytest.approx(-0.2)
    assert model.log10p("a", ["a"]) == pytest.approx(0.2 - 0.4)
    assert model.max_log10p("a", []) == pytest.approx(-0.1)


# ------------------------------------------------------------------------------------------
# Compression and header variants

RANDOM_TEXT = random_arpa_text(random.Random(2024), 4, 4, 0.4, False, density=0.7)


@pytest.mark.parametrize("compression", ["gz", "bz2", "xz"])
def test_compressed_files_read_identically(write_arpa, compression):
    ref = parse_arpa(RANDOM_TEXT)
    plain = maxarpa.load(write_arpa(RANDOM_TEXT))
    packed_path = write_arpa(RANDOM_TEXT, compression=compression)
    assert packed_path.name.endswith("." + compression)
    assert packed_path.read_bytes() != RANDOM_TEXT.encode()
    packed = maxarpa.load(packed_path)
    assert packed.vocab == plain.vocab
    assert list(packed.counts) == list(plain.counts)
    assert answers(packed, ref) == answers(plain, ref)


def test_gzip_detected_by_content_not_name(write_arpa, tmp_path):
    path = tmp_path / "model_without_suffix.arpa"
    path.write_bytes(gzip.compress(VALID.encode()))
    ref = parse_arpa(VALID)
    assert answers(maxarpa.load(path), ref) == answers(maxarpa.load(write_arpa(VALID)), ref)


@pytest.mark.parametrize(
    "header",
    [
        "\n\n\n\\data\\\nngram  1= 4\nngram  2= 2\n",  # IRSTLM: leading blank lines, spacing
        "\\data\\\nngram 1 = 4\nngram 2 =2\n",
        "  \n\\data\\\nngram\t1=4\nngram 2=\t2\n",
    ],
)
def test_header_spacing_variants(write_arpa, header):
    body = VALID.split("ngram 2=2\n", 1)[1]
    text = header + body
    ref = parse_arpa(VALID)
    model = maxarpa.load(write_arpa(text))
    assert list(model.counts) == [4, 2]
    assert answers(model, ref) == answers(maxarpa.load(write_arpa(VALID)), ref)


def test_irstlm_style_file_with_missing_prefix(write_arpa):
    text = """

\\data\\
ngram  1= 5
ngram  2= 2
ngram  3= 1

\\1-grams:
-1.0\t<unk>
-99\t<s>\t0.0
-1.0\t</s>
-0.7\ta\t-0.2
-0.7\tb\t0.3

\\2-grams:
-0.3\ta b\t0.5
-0.4\tb a

\\3-grams:
-0.1\tb a b

\\end\\
"""
    model = maxarpa.load(write_arpa(text))
    ref = parse_arpa(text)
    assert list(model.counts) == [5, 2, 1]
    assert model.positive_backoffs == 2
    assert model.log10p("b", ["b", "a"]) == pytest.approx(-0.1)
    assert model.log10p("a", ["a", "b"]) == pytest.approx(0.5 - 0.4)
    for c in all_contexts(ref):
        for w in ref.vocab:
            assert model.log10p(w, c) == pytest.approx(ref_log10p(ref, w, c), abs=1e-12)
            assert model.max_log10p(w, c) == pytest.approx(ref_max_log10p(ref, w, c), abs=1e-12)


# ------------------------------------------------------------------------------------------
# MAX-ARPA round trips


def test_max_arpa_round_trip_real_model(real_models, tmp_path):
    src = real_models.paths[3]
    model = maxarpa.load(src)
    out = tmp_path / "m.maxarpa"
    write_max_arpa(model, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.maxarpa"]  # no temp file left
    back = maxarpa.load(out)
    assert back.order == model.order == 3
    assert back.vocab == model.vocab
    assert list(back.counts) == list(model.counts)
    assert back.positive_backoffs == model.positive_backoffs
    rng = random.Random(5)
    for sent in real_models.held_out[:80]:
        toks = ["<s>", *sent.split(), "</s>"]
        for i in range(1, len(toks)):
            c = toks[max(0, i - 2) : i] if rng.random() < 0.5 else toks[max(1, i - 1) : i]
            assert back.log10p(toks[i], c) == model.log10p(toks[i], c)
            assert back.max_log10p(toks[i], c) == model.max_log10p(toks[i], c)
    again = tmp_path / "again.maxarpa"
    write_max_arpa(back, again)
    assert again.read_bytes() == out.read_bytes()


@pytest.mark.parametrize("compression", ["gz", "xz"])
def test_compressed_max_arpa_is_detected(tmp_path, write_arpa, compression):
    model = maxarpa.load(write_arpa(RANDOM_TEXT))
    out = tmp_path / "m.maxarpa"
    write_max_arpa(model, out)
    packed = tmp_path / f"m.maxarpa.{compression}"
    packed.write_bytes((gzip.compress if compression == "gz" else lzma.compress)(out.read_bytes()))
    ref = parse_arpa(RANDOM_TEXT)
    assert answers(maxarpa.load(packed), ref) == answers(model, ref)


def test_write_max_arpa_overwrites_atomically(tmp_path, write_arpa):
    model = maxarpa.load(write_arpa(RANDOM_TEXT))
    out = tmp_path / "m.maxarpa"
    out.write_text("old contents\n")
    write_max_arpa(model, out)
    assert "old contents" not in out.read_text()
    assert maxarpa.load(out).vocab == model.vocab
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.maxarpa"]


@pytest.mark.parametrize(
    "field, value", [(0, "not-a-number"), (1, "zebra w3"), (1, "w3"), (-1, "1.0.0")]
)
def test_corrupt_max_arpa_line_reports_its_line(tmp_path, write_arpa, field, value):
    """A bad number or unknown word in a MAX-ARPA n-gram line: FormatError with that line."""
    model = maxarpa.load(write_arpa(RANDOM_TEXT))
    out = tmp_path / "m.maxarpa"
    write_max_arpa(model, out)
    lines = out.read_text().split("\n")
    target = lines.index("\\2-grams:") + 2  # 0-based index of the second 2-gram line
    assert lines[target].strip(), "expected a 2-gram line"
    fields = lines[target].split("\t")
    fields[field] = value
    lines[target] = "\t".join(fields)
    bad = tmp_path / "bad.maxarpa"
    bad.write_text("\n".join(lines))
    with pytest.raises(FormatError) as info:
        maxarpa.load(bad)
    assert info.value.path == str(bad)
    assert info.value.line == target + 1, str(info.value)


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_arpa_raises_format_error_with_line(tmp_path, name):
    text, where = MALFORMED[name]
    path = tmp_path / f"{name}.arpa"
    path.write_text(text)
    with pytest.raises(FormatError) as info:
        maxarpa.load(path)
    err = info.value
    assert isinstance(err, ValueError) and isinstance(err, MaxArpaError)
    assert err.path == str(path)
    assert isinstance(err.line, int)
    if isinstance(where, tuple):
        assert where[0] <= err.line <= where[1], (name, err.line, str(err))
    else:
        assert err.line == where, (name, str(err))
    assert str(err).startswith(f"{path}:{err.line}: "), str(err)
    assert "\n" not in str(err)


def test_empty_file_raises_format_error(tmp_path):
    path = tmp_path / "empty.arpa"
    path.write_text("")
    with pytest.raises(FormatError) as info:
        maxarpa.load(path)
    assert info.value.path == str(path)


@pytest.mark.parametrize(
    "compress, corrupt",
    [
        (gzip.compress, "truncate"),
        (gzip.compress, "flip"),
        (bz2.compress, "truncate"),
        (lzma.compress, "truncate"),
        (lzma.compress, "flip"),
    ],
)
def test_corrupt_compressed_file_raises_format_error(tmp_path, compress, corrupt):
    data = bytearray(compress(RANDOM_TEXT.encode()))
    if corrupt == "truncate":
        data = data[: len(data) // 2]
    else:
        mid = len(data) // 2
        for i in range(mid, mid + 16):
            data[i] ^= 0x5A
    path = tmp_path / "corrupt.arpa.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError) as info:
        maxarpa.load(path)
    assert info.value.path == str(path)
    assert str(info.value).startswith(str(path))


def test_missing_file_raises_format_error(tmp_path):
    path = tmp_path / "does-not-exist.arpa"
    with pytest.raises(FormatError) as info:
        maxarpa.load(path)
    assert info.value.path == str(path)


def test_word_missing_from_unigrams_is_an_error(tmp_path):
    path = tmp_path / "stray.arpa"
    path.write_text(edited(l13="-0.2\ta zebra"))
    with pytest.raises(FormatError) as info:
        maxarpa.load(path)
    assert info.value.line == 13
    assert re.search(r"zebra", str(info.value))
