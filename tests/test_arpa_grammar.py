"""Issue 19, section E: one ARPA grammar for the compiled and the careful reader.

Both readers run on every file of the real corpora (../shared/data/arpa/set1 and set2) and on
hand-made edge cases; they must read a file to the same arrays, or refuse it with the same
message, and that message must name the file's real fault. A file the compiled reader
declines (None) must be one the careful reader refuses: never a well-formed file.
Also here: the number grammar (ASCII floats, `-inf`/`-Infinity`), shared with MAX-ARPA, and
words printed in messages as the bytes they are.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_maxarpa_properties import PROPS

import maxarpa
from maxarpa import FormatError
from maxarpa.arpa import SPACE, _read_arpa_fast, _read_arpa_streaming, read_arpa

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "arpa"
FILES = sorted(p for s in ("set1", "set2") for p in (CORPUS / s).glob("*") if p.suffix != ".md")
needs_corpus = pytest.mark.skipif(not FILES, reason=f"no ARPA corpus at {CORPUS}")

# The real fault of each broken file (set1/README.md, set2/SOURCES.md): line and message.
BROKEN = {
    "sphinx_105.lm.gz": (18, "it ends in the 1-gram section, after 7 of the 9 entries"),
    "sphinx_106.lm.gz": (29, "it ends in the 2-gram section, after 5 of the 10 entries"),
    "sphinx_107.lm.gz": (29, "expected 3 or 4 fields in a 2-gram line"),
    "sphinx_not-enough-ngrams.arpa": (4, "no n-gram counts between \\data\\ and '\\1-grams:'"),
    "sphinx_too-many-ngrams.arpa": (12, "after 1 of the 91 entries the header lists"),
    "joshua_berkeley_lm.gz": (15, "truncated file: missing \\end\\"),
    "slpcourse_lm_phone_train_bg.arpa.gz": (51, "the 1-gram section has 42 entries but the "
                                                "header says 43"),
    "kylm_dialog_model.arpa": (2675, "duplicate 1-gram '\\xe3\\x81??' (first listed at line "
                                     "2422)"),
}
# Read, then refused by policy on load (no <s>: KenLM refuses these too).
NO_BOS = {"kaldi_missing_bos.arpa", "sphinx4_an4_spelling.arpa"}


def outcome(read, path):
    """("read", data), ("refused", message) or ("declined", None) for one reader."""
    try:
        data = read(path)
    except FormatError as err:
        return "refused", str(err)
    return ("declined", None) if data is None else ("read", data)


def assert_same_data(a, b) -> None:
    assert a.vocab == b.vocab
    assert len(a.orders) == len(b.orders)
    for x, y in zip(a.orders, b.orders, strict=True):
        assert np.array_equal(x.ids, y.ids)
        assert np.array_equal(x.log10p, y.log10p)
        assert np.array_equal(x.log10bow, y.log10bow)


def both_readers(path):
    """Run both readers; assert they agree; return the careful reader's outcome."""
    fast = outcome(lambda p: _read_arpa_fast(str(p)), path)
    slow = outcome(_read_arpa_streaming, path)
    if fast[0] == "read":
        assert slow[0] == "read", slow[1]
        assert_same_data(fast[1], slow[1])
    elif fast[0] == "refused":
        assert slow == fast
    else:  # the compiled reader only declines what the careful one refuses
        assert slow[0] == "refused", f"a well-formed file fell back: {path}"
    return slow


@needs_corpus
@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.name}" for p in FILES])
def test_both_readers_agree_on_every_real_file(path):
    kind, result = both_readers(path)
    if path.name in BROKEN:
        line, fault = BROKEN[path.name]
        assert kind == "refused"
        assert result.startswith(f"{path}:{line}: ") and fault in result, result
        with pytest.raises(FormatError) as err:
            maxarpa.load(path)
        assert str(err.value) == result
        return
    assert kind == "read", result
    if path.name in NO_BOS:
        with pytest.raises(FormatError, match="has no <s>"):
            maxarpa.load(path)
    else:
        model = maxarpa.load(path)
        assert model.counts == [len(o.log10p) for o in result.orders]


# ---- hand-made edge cases ------------------------------------------------------------------

BODY = ("\\1-grams:\n-1.0\t<unk>\n-99\t<s>\t-0.3\n-0.5\t</s>\n-0.4\ta\t{bow}\n\n"
        "\\2-grams:\n-0.1\t<s> a\n-0.2\ta </s>\n\n\\end\\\n")


def arpa(tmp_path, text: str | bytes, name: str = "m.arpa") -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def test_counts_straight_into_the_first_section_read_both_ways(tmp_path):
    """kylm writes no blank line after the counts; both readers read it."""
    spaced = arpa(tmp_path, "\\data\\\nngram 1=4\nngram 2=2\n\n" + BODY.format(bow="0.2"), "a")
    tight = arpa(tmp_path, "\\data\\\nngram 1=4\nngram 2=2\n" + BODY.format(bow="0.2"), "b")
    kind, data = both_readers(tight)
    assert kind == "read"
    assert_same_data(data, read_arpa(spaced))


@pytest.mark.parametrize("spelling", ["-Infinity", "-infinity", "-inf", "-INF", "-Inf"])
def test_java_minus_infinity_with_no_blank_line_is_read(tmp_path, spelling):
    path = arpa(tmp_path, "\\data\\\nngram 1=4\nngram 2=2\n" + BODY.format(bow=spelling))
    kind, data = both_readers(path)
    assert kind == "read" and data.orders[0].log10bow[3] == -math.inf
    assert _read_arpa_fast(str(path)) is not None  # no fallback for a well-formed file


def test_count_mismatch_names_the_counts_not_the_count_line(tmp_path):
    path = arpa(tmp_path, "\\data\\\nngram 1=5\nngram 2=2\n" + BODY.format(bow="0"))
    kind, message = both_readers(path)
    assert kind == "refused"
    assert message == f"{path}:10: the 1-gram section has 4 entries but the header says 5"


def test_duplicate_unigram_names_both_lines(tmp_path):
    text = "\\data\\\nngram 1=5\nngram 2=2\n" + BODY.format(bow="0").replace(
        "-0.5\t</s>\n", "-0.5\t</s>\n-0.7\t<unk>\n")
    kind, message = both_readers(arpa(tmp_path, text))
    assert kind == "refused"
    assert message.endswith(":8: duplicate 1-gram '<unk>' (first listed at line 5)")


@pytest.mark.parametrize("text, where", [
    ("\\data\\\nngram 1=4\nngram 1=2\n", "count for order 1 out of sequence"),
    ("\\data\\\nngram 1=4\n\n\\2-grams:\n", "expected \\1-grams: after the counts, got "
                                            "'\\2-grams:'"),
    ("\\data\\\nngram 1=4\nngram 2 = x\n", "bad count line 'ngram 2 = x'"),
    ("\\data\\\nngram 1=4\nngram 2=2\n", "the header ends before \\1-grams:"),
    ("\\data\\\nngram 1=4\nngram 2=2\n" + BODY.format(bow="0").replace("\\2-grams:", "\\3-grams:"),
     "'\\3-grams:' out of sequence: expected \\2-grams:"),
    ("\\data\\\nngram 1=4\nngram 2=2\nngram 3=0\n" + BODY.format(bow="0"),
     "the header lists 3 orders but \\end\\ comes after the 2-grams"),
    ("\\data\\\nngram 1=4\n" + BODY.format(bow="0"), "'\\2-grams:' after the last order"),
])
def test_header_and_mark_faults_read_the_same_both_ways(tmp_path, text, where):
    kind, message = both_readers(arpa(tmp_path, text))
    assert kind == "refused" and where in message, message


GOOD_NUMBERS = ["-.1", "-0", "5.", "+0.5", "-99", "1E+2", "-2.5e-3", "0.0000", "1e-400",
                "-1e-400", "7e-320", "1.7976931348623157e308", "0012", "-0.30103"]


@pytest.mark.parametrize("number", GOOD_NUMBERS)
def test_ascii_numbers_read_the_same_both_ways(tmp_path, number):
    path = arpa(tmp_path, "\\data\\\nngram 1=4\nngram 2=2\n" + BODY.format(bow=number))
    kind, data = both_readers(path)
    assert kind == "read" and _read_arpa_fast(str(path)) is not None
    assert data.orders[0].log10bow[3] == float(number)
    from maxarpa.arpa import parse_number

    assert parse_number(number.encode()) == float(number)


BAD_NUMBERS = ["\u0661", "0.5_0", "1_0", "nan", "inf", "+inf", "infinity", "+Infinity",
               "1e999", "-1e999", ".", "e5", "1e", "0x1p3", "\uff11", "1.5\u00a0", "--1",
               "-in", "-infinit"]


@pytest.mark.parametrize("number", BAD_NUMBERS)
def test_numbers_outside_the_grammar_are_refused_both_ways(tmp_path, number):
    """float() reads most of these (`١` as 1.0, `0.5_0` as 0.5); ARPA numbers are ASCII."""
    path = arpa(tmp_path, "\\data\\\nngram 1=4\nngram 2=2\n" + BODY.format(bow=number))
    kind, message = both_readers(path)
    assert kind == "refused" and message.startswith(f"{path}:8: "), message
    assert "expected a number" in message or "out of float64's range" in message \
        or "wrong section, or a backoff that is not a number" in message
    from maxarpa.arpa import parse_number

    with pytest.raises(ValueError):
        parse_number(number.encode())


def test_only_ascii_whitespace_separates_fields(tmp_path):
    """U+3000 and U+00A0 are inside a word, as the compiled reader (bytes.split()) sees it."""
    text = ("\\data\\\nngram 1=3\nngram 2=1\n\n\\1-grams:\n-1\t<s>\n-0.5\ta\u3000b\n"
            "-0.5\tc\u00a0d\n\n\\2-grams:\n-0.1\t<s> a\u3000b\n\n\\end\\\n")
    kind, data = both_readers(arpa(tmp_path, text))
    assert kind == "read" and data.vocab == ["<s>", "a\u3000b", "c\u00a0d"]


def test_a_mark_after_leading_blanks_is_a_mark_both_ways(tmp_path):
    text = "\\data\\\nngram 1=4\nngram 2=2\n" + BODY.format(bow="0").replace(
        "\\2-grams:", "  \\2-grams:  ")
    kind, data = both_readers(arpa(tmp_path, text))
    assert kind == "read" and len(data.orders[1].log10p) == 2


def test_high_orders_are_read_by_the_compiled_reader(tmp_path):
    """The compiled reader used to give up on lines of more than 16 fields (order 15+)."""
    n = 16
    words = [f"w{i}" for i in range(n)]
    lines = ["\\data\\", *(f"ngram {k}=1" for k in range(2, n + 1))]
    lines.insert(1, f"ngram 1={n}")
    lines += ["", "\\1-grams:", *(f"-1\t{w}\t-0.5" for w in words)]
    for k in range(2, n + 1):
        lines += ["", f"\\{k}-grams:", f"-0.{k}\t{' '.join(words[:k])}\t-0.1"]
    path = arpa(tmp_path, "\n".join([*lines, "", "\\end\\", ""]))
    kind, data = both_readers(path)
    assert kind == "read" and _read_arpa_fast(str(path)) is not None
    assert data.orders[n - 1].log10p[0] == -0.16


def test_words_are_printed_as_their_bytes(tmp_path):
    """A Latin-1 word prints as `\\xe9`, not as the surrogate escape `\\udce9`."""
    text = ("\\data\\\nngram 1=2\nngram 2=1\n\n\\1-grams:\n-1\t<s>\n-0.5\tchr\xe9tien\n\n"
            "\\2-grams:\n-0.1\t<s> abandon\xf3\n\n\\end\\\n").encode("latin-1")
    kind, message = both_readers(arpa(tmp_path, text))
    assert kind == "refused"
    assert message.endswith(":10: word 'abandon\\xf3' is not among the 1-grams"), message
    assert "\\udc" not in message


def test_max_arpa_numbers_follow_the_same_grammar(tmp_path):
    """A MAX-ARPA value float() reads but the grammar refuses is named as such."""
    from maxarpa.maxarpa_format import read_max_arpa

    source = arpa(tmp_path, "\\data\\\nngram 1=4\nngram 2=2\n\n" + BODY.format(bow="0.2"))
    out = tmp_path / "m.maxarpa"
    maxarpa.convert(source, out)
    lines = out.read_text().split("\n")
    at = lines.index("\\2-grams:") + 1
    fields = lines[at].split("\t")
    for number in ("0.5_0", "\u0661"):
        fields[0] = number
        bad = tmp_path / "bad.maxarpa"
        bad.write_text("\n".join([*lines[:at], "\t".join(fields), *lines[at + 1 :]]))
        with pytest.raises(FormatError) as err:
            read_max_arpa(bad)
        assert str(err.value) == f"{bad}:{at + 1}: expected a number, got '{number}'"


PIECES = [" ", "\t", "\n", "\r", "\\", "-", "+", ".", "e", "E", "0", "7", "inf", "Infinity",
          "nan", "_", "\u0661", "\u3000", "\u00a0", "\x85", "a", "<s>", "</s>", "ngram ", "=",
          "\\1-grams:", "\\2-grams:", "\\end\\", "\\data\\", "\n\n", "1e999", "1e-999"]


@settings(PROPS, max_examples=400)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(PIECES), st.integers(0, 3)),
                min_size=1, max_size=4))
def test_both_readers_agree_on_mutated_files(tmp_path_factory, edits):
    """Random insertions and deletions into a valid file: both readers read it alike or
    both refuse it with one message (or the compiled reader declines what the other refuses)."""
    text = "\\data\\\nngram 1=4\nngram 2=2\n\n" + BODY.format(bow="0.2")
    for at, piece, cut in edits:
        at %= len(text) + 1
        text = text[:at] + piece + text[at + cut :]
    path = tmp_path_factory.mktemp("mut") / "m.arpa"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    both_readers(path)


WELL_FORMED = [p for p in FILES if p.name not in BROKEN and p.name not in NO_BOS]


def kenlm_layout(path: Path, tmp_path: Path) -> Path:
    """A copy of `path` in the layout KenLM insists on, made by text alone (not by maxarpa):
    from `\\data\\` on, each n-gram line as `logp<TAB>words<TAB>backoff`."""
    from maxarpa.arpa import read_text

    lines = read_text(path).split("\n")
    start = next(i for i, line in enumerate(lines) if line.strip() == "\\data\\")
    out, order = [], 0
    for line in lines[start:]:
        fields = line.split()
        if fields and fields[0].endswith("-grams:"):
            order = int(fields[0][1:].split("-")[0])
        elif order and len(fields) > order and not fields[0].startswith("\\"):
            line = "\t".join([fields[0], " ".join(fields[1 : order + 1]), *fields[order + 1 :]])
        out.append(line.strip())
    copy = tmp_path / "kenlm_layout.arpa"
    copy.write_text("\n".join(out), encoding="utf-8", errors="surrogateescape")
    return copy


@needs_corpus
@pytest.mark.parametrize("path", WELL_FORMED, ids=[p.name for p in WELL_FORMED])
def test_real_files_score_as_kenlm_does(path, tmp_path):
    """Each well-formed file KenLM reads: listed n-grams and random sequences score alike."""
    import random

    import kenlm

    from arsdecode.testing.reference_arpa import kenlm_log10p

    try:
        km = kenlm.Model(str(path))
    except Exception:  # KenLM refuses CMU headers and space-separated columns: the layout
        try:
            km = kenlm.Model(str(kenlm_layout(path, tmp_path)))
        except Exception as err:  # and unigram-only models
            pytest.skip(f"KenLM does not read {path.name}: {str(err).splitlines()[0][:80]}")
    model, data = maxarpa.load(path), read_arpa(path)
    rng = random.Random(19)

    def speakable(words):
        try:
            [w.encode("utf-8") for w in words]
        except UnicodeEncodeError:
            return False
        return True

    queries = []
    for order in data.orders:
        for row in rng.sample(range(len(order.log10p)), min(40, len(order.log10p))):
            words = [data.vocab[i] for i in order.ids[row].tolist()]
            queries.append((words[:-1], words[-1]))
    plain = [w for w in data.vocab if w not in ("<s>", "</s>")]
    for _ in range(40):
        sentence = ["<s>", *rng.choices(plain, k=rng.randint(1, model.order + 1))]
        queries += [(sentence[max(0, i - model.order + 1) : i], sentence[i])
                    for i in range(1, len(sentence))]
    checked = 0
    for context, word in queries:
        if word == "<s>" or not speakable([*context, word]):
            continue
        want = kenlm_log10p(km, word, context)
        assert model.log10p(word, context) == pytest.approx(want, abs=1e-4), (context, word)
        checked += 1
    assert checked > 40


def test_bound_check_messages_print_words_as_bytes(tmp_path):
    """The load check of stored bounds names a Latin-1 n-gram by its bytes too."""
    text = ("\\data\\\nngram 1=3\nngram 2=1\n\n\\1-grams:\n-1\t<s>\t-0.2\n-0.5\tchr\xe9tien\n"
            "-0.7\t</s>\n\n\\2-grams:\n-0.1\t<s> chr\xe9tien\n\n\\end\\\n").encode("latin-1")
    out = tmp_path / "m.maxarpa"
    maxarpa.convert(arpa(tmp_path, text), out)
    lines = out.read_bytes().split(b"\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(b"-0.1\t<s> chr\xe9tien"))
    fields = lines[at].split(b"\t")
    fields[3] = b"-5"  # mf below log10 p
    lines[at] = b"\t".join(fields)
    out.write_bytes(b"\n".join(lines))
    with pytest.raises(FormatError) as err:
        maxarpa.load(out)
    assert "mf < log10p for the 2-gram '<s> chr\\xe9tien'" in str(err.value), str(err.value)


def test_a_header_count_too_large_to_allocate_is_a_count_mismatch(tmp_path):
    """The compiled reader sizes its arrays from the header; a count of 1e11 must not end in
    a MemoryError traceback, but in the mismatch it is."""
    path = arpa(tmp_path, "\\data\\\nngram 1=99999999999\n\n\\1-grams:\n-1\t<s>\n-1\t</s>\n\n"
                          "\\end\\\n")
    with pytest.raises(FormatError) as err:
        read_arpa(path)
    assert str(err.value) == (f"{path}:8: the 1-gram section has 2 entries but the header "
                              "says 99999999999")


@pytest.mark.parametrize("sep", [bytes([b]) for b in SPACE if b != ord("\n")] + [b"\x1c", b"\x85"])
def test_the_field_separators_are_the_grammars(tmp_path, sep):
    """Exactly the bytes of SPACE separate fields (str.split() would also split at \\x1c and
    at U+0085); any other byte is part of a word, in both readers."""
    text = (b"\\data\\\nngram 1=2\nngram 2=1\n\n\\1-grams:\n-1\t<s>\n-0.5\tx" + sep +
            b"y\n\n\\2-grams:\n-0.1\t<s> x" + sep + b"y\n\n\\end\\\n")
    kind, result = both_readers(arpa(tmp_path, text))
    if sep in SPACE:
        assert kind == "refused" and "wrong section, or a backoff that is not a number" in result
    else:
        assert kind == "read" and result.vocab[1].encode("utf-8", "surrogateescape") == \
            b"x" + sep + b"y"


def test_max_arpa_marks_are_printed_with_one_backslash(tmp_path):
    from maxarpa.maxarpa_format import read_max_arpa

    out = tmp_path / "m.maxarpa"
    maxarpa.convert(arpa(tmp_path, "\\data\\\nngram 1=4\nngram 2=2\n\n" + BODY.format(bow="0")),
                    out)
    out.write_text(out.read_text().replace("\\2-grams:", "\\2-gramz:"))
    with pytest.raises(FormatError) as err:
        read_max_arpa(out)
    assert str(err.value).endswith("unexpected line '\\2-gramz:'"), str(err.value)
