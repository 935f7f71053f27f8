"""Issue 9, section B: read real ARPA files the way their own toolkits do.

Text before \\data\\ is skipped (QuickLM, CMU-Cambridge, KenLM `#` comments, IRSTLM's `ARPA`
line); files in any byte encoding are read, their words are the str that their bytes decode to
with surrogateescape, and they round-trip byte for byte through MAX-ARPA and binary; messages
name what is wrong (a line with too many words, a duplicate n-gram and both its lines).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import maxarpa
from arpa_fixtures import VALID, edited
from arsdecode.testing.reference_arpa import parse_arpa, ref_log10p
from maxarpa import FormatError

PREAMBLES = {
    "quicklm": "QuickLM: this is a header\nsome more text\n\n",
    "cmu_cambridge": "#############################################################\n"
                     "## Copyright (c) 1996, Carnegie Mellon University\n"
                     "This is a CLOSED-vocabulary model\n",
    "kenlm_comment": "# Input file: corpus.txt\n# comment \\1-grams:\n",
    "irstlm": "ARPA\n\n",
}


@pytest.mark.parametrize("name", sorted(PREAMBLES))
def test_text_before_data_is_skipped(tmp_path, name):
    plain = tmp_path / "plain.arpa"
    plain.write_text(VALID)
    path = tmp_path / f"{name}.arpa"
    path.write_text(PREAMBLES[name] + VALID)
    want, got = maxarpa.load(plain), maxarpa.load(path)
    assert got.vocab == want.vocab
    for node_w, node_g in zip(want.trie.nodes, got.trie.nodes, strict=True):
        assert np.array_equal(node_w.mf, node_g.mf) and np.array_equal(node_w.keys, node_g.keys)
    # The careful line-by-line reader too (a bad line later makes the fast path give up).
    broken = tmp_path / f"{name}_broken.arpa"
    broken.write_text(PREAMBLES[name] + edited(l12="-0.1\t<s> a\tnope"))
    lines_before = PREAMBLES[name].count("\n")
    with pytest.raises(FormatError) as err:
        maxarpa.load(broken)
    assert err.value.line == 12 + lines_before


LATIN1 = (
    "\\data\\\nngram 1=5\nngram 2=3\n\n\\1-grams:\n-1.0\t<unk>\n-99\t<s>\t-0.3\n-0.5\t</s>\n"
    "-0.4\tchr\xe9tien\t0.2\n-0.6\tabandon\xf3\t0.4\n\n\\2-grams:\n-0.1\t<s> chr\xe9tien\n"
    "-0.2\tchr\xe9tien abandon\xf3\n-0.3\tabandon\xf3 </s>\n\n\\end\\\n"
).encode("latin-1")


def test_latin1_file_reads_and_round_trips_byte_for_byte(tmp_path):
    arpa = tmp_path / "latin1.arpa"
    arpa.write_bytes(LATIN1)
    model = maxarpa.load(arpa)
    word = b"chr\xe9tien".decode("utf-8", "surrogateescape")
    assert word in model.vocab and word.encode("utf-8", "surrogateescape") == b"chr\xe9tien"
    assert model.word_id(b"chr\xe9tien") == model.word_id(word) != model.unk_id
    assert model.is_known(word) and not model.is_known("chrétien")  # the UTF-8 spelling
    ref = parse_arpa(LATIN1.decode("utf-8", "surrogateescape"))
    assert model.log10p(b"abandon\xf3".decode("utf-8", "surrogateescape"), ["<s>", word]) == \
        pytest.approx(ref_log10p(ref, "abandon\udcf3", ["<s>", word]))
    out1, out2 = tmp_path / "a.maxarpa", tmp_path / "b.maxarpa"
    maxarpa.convert(arpa, out1)
    assert b"chr\xe9tien\t" in out1.read_bytes() and b"abandon\xf3 </s>" in out1.read_bytes()
    maxarpa.convert(out1, out2)
    assert out1.read_bytes() == out2.read_bytes()
    npz = tmp_path / "c.npz"
    maxarpa.convert(out1, npz, binary=True)
    assert maxarpa.load(npz, mmap=True).vocab == model.vocab
    out3 = tmp_path / "c.maxarpa"
    maxarpa.convert(npz, out3)
    assert out3.read_bytes() == out1.read_bytes()
    # The CLI query reads the same bytes on stdin.
    proc = subprocess.run([sys.executable, "-m", "maxarpa", "query", str(out1)],
                          input=b"<s> chr\xe9tien abandon\xf3\n", capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout.split()[0]) == pytest.approx(-0.2 + 0.0)


def test_a_line_with_too_many_words_says_so(tmp_path):
    path = tmp_path / "three.arpa"
    path.write_text(edited(l13="-0.2\ta </s> a"))
    with pytest.raises(FormatError, match="2-gram line with 3 words") as err:
        maxarpa.load(path)
    assert err.value.line == 13 and "expected a number" not in str(err.value)


def test_a_duplicate_ngram_is_named_with_its_lines(tmp_path):
    path = tmp_path / "dup.arpa"
    path.write_text(edited(l3="ngram 2=3", l13="-0.2\ta </s>\n-0.3\ta </s>"))
    with pytest.raises(FormatError, match="duplicate 2-gram 'a </s>'.*line 13") as err:
        maxarpa.load(path)
    assert err.value.line == 14


def test_a_duplicate_ngram_in_max_arpa_is_named(tmp_path):
    arpa = tmp_path / "v.arpa"
    arpa.write_text(VALID)
    good = tmp_path / "v.maxarpa"
    maxarpa.convert(arpa, good)
    lines = good.read_text().split("\n")
    i = next(i for i, ln in enumerate(lines) if "\ta </s>\t" in ln)
    lines.insert(i, lines[i])
    lines = [ln.replace("ngram 2=2", "ngram 2=3") for ln in lines]
    bad = tmp_path / "dup.maxarpa"
    bad.write_text("\n".join(lines))
    with pytest.raises(FormatError, match="'a </s>' is listed twice"):
        maxarpa.load(bad)
