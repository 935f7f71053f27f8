"""Issue 19, section E: n-grams across a sentence boundary (`</s> <s> w`) do not loosen the
bound of `<s> w`, since a context that starts with <s> has no left extension.

Checked against the brute-force reference (tests/arpa_reference.py), which enumerates every
left extension, on a hand-made model and on the real CMUCLMTK file that lists such n-grams;
the bounds stay bounds everywhere else, and survive MAX-ARPA and `verify`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_maxarpa_properties import same

import maxarpa
from arpa_reference import all_contexts, parse_arpa, ref_log10p, ref_max_log10p
from maxarpa.arpa import read_text

# `</s> <s> a` and `</s> <s>` have positive backoffs: with them, the old bound of p(w | <s> a)
# added +0.5 and of p(w | <s>) added +0.7.
TEXT = """\\data\\
ngram 1=5
ngram 2=6
ngram 3=3

\\1-grams:
-1.0\t<unk>\t0.1
-99\t<s>\t-0.3
-0.5\t</s>\t0.2
-0.4\ta\t0.3
-0.6\tb\t-0.2

\\2-grams:
-0.1\t<s> a\t0.1
-0.2\ta </s>
-0.3\t</s> <s>\t0.7
-0.4\ta b\t0.2
-0.5\tb a\t0.4
-0.6\t<s> b\t-0.1

\\3-grams:
-0.05\t</s> <s> a\t0.5
-0.15\t<s> a b
-0.25\ta b a

\\end\\
"""
CMUCLMTK = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "arpa" / "set2" / \
    "rapp_cmuclmtk_sentences.arpa"


def assert_bounds(model, ref) -> None:
    """Exact after a context that starts with <s>; a bound (>= the brute-force max over
    every left extension) elsewhere. (Elsewhere it may be looser than the reference, which
    never extends by </s>: a `</s> x` node still counts as an extension of `x`.)"""
    words = list(ref.vocab)
    for c in all_contexts(ref):
        for w in words:
            want, got = ref_max_log10p(ref, w, c), model.max_log10p(w, c)
            if c and c[0] == "<s>":
                assert same(got, want, 1e-9) and same(got, ref_log10p(ref, w, c), 1e-9), \
                    (c, w, got, want)
            else:
                assert got >= want - 1e-9, (c, w, got, want)


def test_sentence_boundary_ngrams_leave_bos_bounds_exact(tmp_path):
    path = tmp_path / "m.arpa"
    path.write_text(TEXT)
    model, ref = maxarpa.load(path), parse_arpa(TEXT)
    assert model.max_log10p("b", ["<s>", "a"]) == pytest.approx(ref_log10p(ref, "b", ["<s>", "a"]))
    assert_bounds(model, ref)
    # The bounds go through MAX-ARPA, its load checks and a full recomputation unchanged.
    out = tmp_path / "m.maxarpa"
    maxarpa.convert(path, out)
    again = maxarpa.load(out, config=maxarpa.Config(verify_bounds=True))
    for a, b in zip(model.trie.nodes, again.trie.nodes, strict=True):
        assert np.array_equal(a.mf, b.mf) and np.array_equal(a.mbow, b.mbow)


@pytest.mark.skipif(not CMUCLMTK.exists(), reason=f"{CMUCLMTK} not found")
def test_real_file_with_boundary_ngrams_has_exact_bos_bounds():
    """CMUCLMTK's sentences.arpa lists `</s> <s>`, `nai </s> <s>`, `</s> <s> o'xi`."""
    model, ref = maxarpa.load(CMUCLMTK), parse_arpa(read_text(CMUCLMTK))
    assert ("</s>", "<s>") in ref.probs
    assert_bounds(model, ref)
