"""Issue 9, section A (maxarpa's part): no model or stored bound may lead to a false certificate.

- A model without <s> (or </s>) is refused by default; with the opt-out, the marker becomes its
  own unigram (never <unk>'s id), every query and bound equals the brute-force reference
  (arsdecode.testing.reference_arpa) on the same model plus that unigram, and decoding equals
  brute force.
- Stored bounds that are not bounds (an edited MAX-ARPA or binary file) are refused on load,
  and `maxarpa verify` recomputes them and names the first n-gram that differs.
"""

from __future__ import annotations

import math
import random
import subprocess
import sys

import numpy as np
import pytest

import maxarpa
from arsdecode.lattice import Lattice
from arsdecode.methods.ars import decode
from arsdecode.testing.brute import brute_model
from arsdecode.testing.random_arpa import random_arpa_text
from arsdecode.testing.reference_arpa import all_contexts, parse_arpa, ref_log10p, ref_max_log10p
from maxarpa import Config, FormatError
from maxarpa.binary_write import write_binary
from maxarpa.constants import BOS, EOS, UNK
from maxarpa.load import _from_arpa
from maxarpa.maxarpa_format import write_max_arpa

ACCEPT_MARKERS = Config(sentence_marker_missing="accept")
TIGHT = 1e-9


def without(text: str, marker: str) -> str:
    """ARPA text with every n-gram containing `marker` removed and the counts fixed."""
    lines = text.split("\n")
    kept: list[str] = []
    counts: dict[int, int] = {}
    order = 0
    for line in lines:
        if line.startswith("\\") and line.endswith("-grams:"):
            order = int(line[1 : line.index("-")])
        fields = line.split("\t")
        if order and len(fields) >= 2 and not line.startswith("\\"):
            if marker in fields[1].split():
                continue
            counts[order] = counts.get(order, 0) + 1
        kept.append(line)
    return "\n".join(
        f"ngram {int(ln[6:ln.index('=')])}={counts.get(int(ln[6:ln.index('=')]), 0)}"
        if ln.startswith("ngram ") else ln for ln in kept
    )


def with_unigram(text: str, word: str, log10p: float) -> str:
    """ARPA text with one more unigram line (no backoff column: backoff 0)."""
    head, rest = text.split("\\1-grams:\n", 1)
    count = int(head.split("ngram 1=")[1].split("\n")[0])
    head = head.replace(f"ngram 1={count}\n", f"ngram 1={count + 1}\n", 1)
    return f"{head}\\1-grams:\n{log10p!r}\t{word}\n{rest}"


def no_marker_model(seed: int, marker: str, tmp_path, order: int = 4):
    text = random_arpa_text(random.Random(seed), order, 3, 0.6, False, density=0.9)
    stripped = without(text, marker)
    path = tmp_path / f"no_{marker.strip('<>/')}_{seed}.arpa"
    path.write_text(stripped)
    return path, stripped


@pytest.mark.parametrize("marker", [BOS, EOS])
def test_missing_sentence_marker_is_refused_by_default(tmp_path, marker):
    path, _ = no_marker_model(1, marker, tmp_path)
    with pytest.raises(FormatError, match=f"no {marker}"):
        maxarpa.load(path)
    proc = subprocess.run([sys.executable, "-m", "maxarpa", "info", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and marker in proc.stderr and "Traceback" not in proc.stderr
    with pytest.warns(maxarpa.config.MaxArpaWarning, match=marker):
        maxarpa.load(path, config=Config(sentence_marker_missing="warn"))


@pytest.mark.parametrize("marker", [BOS, EOS])
@pytest.mark.parametrize("seed", range(4))
def test_missing_marker_opt_out_equals_the_reference_with_the_marker_added(tmp_path, seed,
                                                                           marker):
    """With the opt-out, the model is exactly the ARPA plus one unigram (log10 p of <unk>,
    backoff 0): every log10p and every max-backoff bound equals brute force on that model,
    whether the marker is added while reading ARPA or MAX-ARPA/binary files lacking it."""
    path, stripped = no_marker_model(seed, marker, tmp_path, order=3 + seed % 2)
    ref = parse_arpa(stripped)
    unk_log10p = ref.probs[(UNK,)]
    ref = parse_arpa(with_unigram(stripped, marker, unk_log10p))
    from_arpa = maxarpa.load(path, config=ACCEPT_MARKERS)
    bare = _from_arpa(path)  # load's ARPA reader before the Config: the marker is absent
    assert marker not in bare.word_to_id
    write_max_arpa(bare, tmp_path / "bare.maxarpa")
    write_binary(bare, tmp_path / "bare.npz")
    models = [from_arpa, maxarpa.load(tmp_path / "bare.maxarpa", config=ACCEPT_MARKERS),
              maxarpa.load(tmp_path / "bare.npz", mmap=True, config=ACCEPT_MARKERS)]
    for model in models:
        # The binary file stores its bounds rounded up to float32 (maxarpa.compact).
        slack = 2.0**-22 if model is models[2] else 0.0
        assert model.bos_id is not None and model.eos_id is not None
        assert len({model.bos_id, model.eos_id, model.unk_id}) == 3
        assert model.vocab == from_arpa.vocab
        words = [w for w in model.vocab if w != BOS]
        for ctx in all_contexts(ref):
            for w in words:
                assert model.log10p(w, ctx) == pytest.approx(ref_log10p(ref, w, ctx),
                                                             abs=TIGHT), (ctx, w)
                got, want = model.max_log10p(w, ctx), ref_max_log10p(ref, w, ctx)
                if slack:
                    assert want - TIGHT <= got <= want + slack * max(abs(want), 1.0) or (
                        got == want), (ctx, w)
                else:
                    assert got == pytest.approx(want, abs=TIGHT) or got == want, (ctx, w)


@pytest.mark.parametrize("seed", range(6))
def test_decoding_a_model_without_bos_equals_brute_force(tmp_path, seed):
    """The regression of issue 9 A.2: a 4-gram with <unk> but no <s>. Before, <s> took
    <unk>'s id and a path through an unknown word could be certified wrongly."""
    path, _ = no_marker_model(100 + seed, BOS, tmp_path, order=4)
    lm = maxarpa.load(path, config=ACCEPT_MARKERS)
    rng = random.Random(seed)
    pool = [w for w in lm.vocab if w not in (BOS, EOS)] + ["zz_oov"]
    for _ in range(10):
        positions = [[(w, rng.uniform(-2, 0)) for w in rng.sample(pool, rng.randint(1, 3))]
                     for _ in range(rng.randint(1, 5))]
        lattice = Lattice.from_lists(positions)
        ref = brute_model(lm, lattice)
        if ref.best_log_p == -math.inf:
            continue
        result = decode(lm, lattice)
        assert result.certified
        assert abs(result.log_p - ref.best_log_p) <= TIGHT, (positions, result.tokens)
        assert tuple(result.tokens) in ref.near_best(TIGHT)


def converted(tmp_path, seed: int = 5):
    text = random_arpa_text(random.Random(seed), 3, 4, 0.7, False, density=0.9)
    arpa = tmp_path / "m.arpa"
    arpa.write_text(text)
    out = tmp_path / "m.maxarpa"
    maxarpa.convert(arpa, out)
    return arpa, out


def edit_field(path, out, pick, field: int, value: str) -> str:
    """Copy a MAX-ARPA file, replacing field `field` (0 = logp, -2 = mf, -1 = mbow) of the
    first n-gram line for which `pick(fields)` is true; returns that line's words."""
    lines = path.read_text().split("\n")
    for i, line in enumerate(lines):
        fields = line.split("\t")
        if len(fields) == 5 and pick(fields):
            fields[field] = value
            lines[i] = "\t".join(fields)
            out.write_text("\n".join(lines))
            return fields[1]
    raise AssertionError("no line to edit")


def test_edited_bounds_are_refused_on_load(tmp_path):
    """Issue 9 A.3: mf = -30 on an n-gram was trusted and decode certified a wrong path."""
    _, good = converted(tmp_path)
    cases = {
        "mf < log10p": (lambda f: float(f[0]) > -30, -2, "-30"),
        "mbow < backoff": (lambda f: float(f[2]) > -5, -1, "-5.5"),
    }
    for what, (pick, field, value) in cases.items():
        bad = tmp_path / "bad.maxarpa"
        words = edit_field(good, bad, pick, field, value)
        with pytest.raises(FormatError, match=what) as err:
            maxarpa.load(bad)
        assert words in str(err.value) and "bad.maxarpa" in str(err.value)
        proc = subprocess.run([sys.executable, "-m", "maxarpa", "info", str(bad)],
                              capture_output=True, text=True)
        assert proc.returncode == 2 and "not bounds" in proc.stderr, proc.stderr
        # The same table as a binary file is refused too (mapped or copied).
        bare = maxarpa.maxarpa_format.read_max_arpa(bad)
        write_binary(bare, tmp_path / "bad.npz")
        for mmap in (False, True):
            with pytest.raises(FormatError, match=what):
                maxarpa.load(tmp_path / "bad.npz", mmap=mmap)


def test_a_bound_lowered_below_a_longer_ngrams_bound_is_refused(tmp_path):
    _, good = converted(tmp_path)
    model = maxarpa.load(good)
    node, above = model.trie.nodes[1], model.trie.nodes[2]
    parent = (above.keys // np.uint64(model.trie.vocab_size)).astype(np.int64)
    # a bigram with a trigram child whose mf exceeds the bigram's own log10p
    i = next(int(p) for p, mf in zip(parent, above.mf) if mf > node.log10p[p])
    lowered = float(node.log10p[i])
    words = " ".join(model.vocab[w] for w in node.rows[i])
    bad = tmp_path / "low.maxarpa"
    edit_field(good, bad, lambda f: f[1] == words, -2, repr(lowered))
    with pytest.raises(FormatError, match="longer n-gram"):
        maxarpa.load(bad)


def run_verify(path):
    return subprocess.run([sys.executable, "-m", "maxarpa", "verify", str(path)],
                          capture_output=True, text=True)


def test_verify_recomputes_every_bound(tmp_path):
    arpa, good = converted(tmp_path)
    assert run_verify(good).returncode == 0
    write_binary(maxarpa.load(good), tmp_path / "g.npz")
    assert run_verify(tmp_path / "g.npz").returncode == 0
    # A bound raised above its recomputation passes the load checks (a looser bound is
    # still a bound) but verify names it.
    bad = tmp_path / "loose.maxarpa"
    words = edit_field(good, bad, lambda f: len(f[1].split()) == 2, -2, "0.5")
    maxarpa.load(bad)
    proc = run_verify(bad)
    assert proc.returncode == 1 and words in proc.stderr and "mf" in proc.stderr, proc.stderr
    # An ARPA file has no stored bounds: bad input, exit 2.
    proc = run_verify(arpa)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_verify_catches_a_lowered_absent_extension_term(tmp_path):
    """The third term of mf (a positive backoff reached through an absent extension) is not
    among the cheap load checks; verify must catch it being dropped."""
    for seed in range(40):
        _, good = converted(tmp_path, seed)
        model = maxarpa.load(good)
        trie = model.trie
        v = np.uint64(trie.vocab_size)
        for k in range(1, trie.order):
            node, above = trie.nodes[k - 1], trie.nodes[k]
            child = np.full(len(node.keys), -np.inf)
            np.maximum.at(child, (above.keys // v).astype(np.int64), above.mf)
            floor = np.maximum(node.log10p, child)
            hits = np.flatnonzero(node.mf > floor + 1e-6)
            if len(hits):
                i = int(hits[0])
                words = " ".join(model.vocab[w] for w in node.rows[i])
                bad = tmp_path / "third.maxarpa"
                edit_field(good, bad, lambda f, w=words: f[1] == w, -2, repr(float(floor[i])))
                proc = run_verify(bad)
                assert proc.returncode == 1 and words in proc.stderr, proc.stderr
                maxarpa.load(bad)  # passes the cheap checks ...
                with pytest.raises(FormatError, match="differ"):  # ... but not the full one
                    maxarpa.load(bad, config=Config(verify_bounds=True))
                maxarpa.load(good, config=Config(verify_bounds=True))
                return
    pytest.fail("no random model had an mf set by an absent extension")


def test_positive_log10_probability_is_refused_by_default(tmp_path):
    from arpa_fixtures import edited

    path = tmp_path / "pos.arpa"
    path.write_text(edited(l9="0.25\ta\t0.2"))
    with pytest.raises(FormatError, match="log10 p > 0.*'a'"):
        maxarpa.load(path)
    model = maxarpa.load(path, config=Config(positive_log_probability="accept"))
    assert model.log10p("a", []) == 0.25


def test_capital_unk_is_the_unknown_word(tmp_path):
    from arpa_fixtures import edited

    path = tmp_path / "cap.arpa"
    path.write_text(edited(l6="-1.0\t<UNK>"))
    model = maxarpa.load(path)
    assert model.unk_id == model.word_to_id["<UNK>"]
    assert model.log10p("never_seen", []) == -1.0


def test_missing_unk_config(tmp_path):
    from arpa_fixtures import edited

    path = tmp_path / "nounk.arpa"
    path.write_text(edited(l2="ngram 1=3", l6=None))
    with pytest.raises(maxarpa.UnknownWordError):
        maxarpa.load(path).log10p("never_seen", [])
    model = maxarpa.load(path, config=Config(unknown_missing="accept",
                                             unknown_missing_log10p=-7.0))
    assert model.log10p("never_seen", []) == -7.0
    assert model.max_log10p("never_seen", ["a"]) >= model.log10p("never_seen", ["a"])
