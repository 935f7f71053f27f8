"""The compiled segmentation-lattice builder (issue 33) against the Python reference builder it
replaced (`reference_lattice.reference_segmentation_lattice`): arc for arc (sources, ends,
words, order; weights to rounding) on random strings over small vocabularies, with breaks,
caps, bonuses, both unknown-word pricings and non-ASCII words, and on real text with the
embedded State of the Union model; and the segmenter's batched compiled decode against
decoding the reference lattices one by one through `dispatch.decode_many`."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np
import pytest

import maxarpa
from arsdecode.api import DEFAULT_LM
from arsdecode.lattice.word_lattice import WordLattice
from arsdecode.methods import dispatch
from arsdecode.model.maxarpa_lm import as_target_model
from arsdecode.tasks.segment import (
    NO_CUES,
    CueWeights,
    Segmenter,
    SegmentInput,
    SegmentOptions,
    SpellingModel,
    SurfaceIndex,
    segmentation_lattice,
    segmentation_words,
)
from arsdecode.tasks.segment.compiled import TrieIndex
from arsdecode.tasks.segment.reference_lattice import reference_segmentation_lattice

SENTENCES = [
    "the president said that the state of the union is strong",
    "we must work together to build a better future for our children",
    "congress passed the bill and the president signed it into law",
    "xqzt blorfing unheardof wordsss with 1945 and h1n1 gr8",
]


def same_lattice(a: WordLattice, b: WordLattice, exact_weights: bool) -> None:
    assert a.n_nodes == b.n_nodes and a.finals == b.finals
    assert a.node_names == b.node_names and a.source == b.source
    assert a.src.tolist() == b.src.tolist()
    assert a.dst.tolist() == b.dst.tolist()
    assert a.words == b.words
    if exact_weights:
        assert a.log_weights.tolist() == b.log_weights.tolist()
    else:
        np.testing.assert_allclose(a.log_weights, b.log_weights, rtol=1e-13, atol=1e-13)


def random_case(rng: random.Random, alphabet: str) -> tuple[list[str], str, frozenset[int]]:
    vocab = sorted({"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
                    for _ in range(rng.randint(1, 25))})
    # words that share a surface ("it's" / "its"), and specials the index skips
    vocab += [w[:1] + "'" + w[1:] for w in vocab[:3] if len(w) > 1] + ["<s>", "</s>", "<unk>"]
    text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
    breaks = frozenset(rng.sample(range(1, len(text)), k=min(len(text) - 1, rng.randint(0, 4)))
                       ) if len(text) > 1 else frozenset()
    return vocab, text, breaks


@pytest.mark.parametrize("alphabet", ["ab", "abc1", "éaßb", "xyzw"])
def test_random_strings_flat_and_spelled(alphabet):
    rng = random.Random(len(alphabet) * 1000 + ord(alphabet[0]))
    for trial in range(120):
        vocab, text, breaks = random_case(rng, alphabet)
        index = SurfaceIndex.of(vocab)
        bonus = np.array([rng.uniform(-3, 3) for _ in range(len(text) + 1)])
        options = dict(breaks=breaks, unknown_max_length=rng.randint(1, 8),
                       max_word_length=rng.choice([None, 1, 2, 3, 10]),
                       boundary_bonus=bonus if trial % 2 else None)
        flat = dict(options, unknown_penalty_per_char=rng.choice([0.0, 1.5, 2.5]))
        same_lattice(segmentation_lattice(text, index, **flat),
                     reference_segmentation_lattice(text, index, **flat), exact_weights=True)
        spelling = SpellingModel.train(index.words)
        spelled = dict(options, spelling=spelling, spelling_scale=rng.uniform(0.5, 1.5),
                       unknown_word_cost=rng.uniform(-6, 6))
        same_lattice(segmentation_lattice(text, index, **spelled),
                     reference_segmentation_lattice(text, index, **spelled),
                     exact_weights=False)


def test_a_vocabulary_given_as_words_and_a_cap_below_the_unknown_length():
    # "then" (4) is past max_word_length=3, so it is an unknown arc there, in both builders
    vocab = ["the", "then", "hen", "he", "n"]
    for cap in (None, 2, 3, 4):
        same_lattice(segmentation_lattice("thenhen", vocab, max_word_length=cap),
                     reference_segmentation_lattice("thenhen", vocab, max_word_length=cap),
                     exact_weights=True)
    wl = segmentation_lattice("thenhen", vocab, max_word_length=3, unknown_max_length=4)
    assert ("then" in wl.words) and wl.words.count("then") == 1


@dataclass(frozen=True)
class LengthSpelling(SpellingModel):
    """A spelling model of another shape (not a trigram table): priced through its own
    `unknown_log_p`, the interface the compiled builder falls back on."""

    def unknown_log_p(self, codes, starts, lengths):
        return -1.7 * lengths.astype(np.float64) - 0.1 * (codes[starts] % 5)


def test_a_spelling_model_of_another_shape_uses_its_own_scores():
    model = LengthSpelling(np.zeros(3))
    vocab = ["ab", "ba", "a", "abc"]
    rng = random.Random(5)
    for _ in range(30):
        text = "".join(rng.choice("abcd") for _ in range(rng.randint(1, 20)))
        bonus = np.array([rng.uniform(-2, 2) for _ in range(len(text) + 1)])
        kw = dict(spelling=model, spelling_scale=0.9, unknown_word_cost=-2.0,
                  boundary_bonus=bonus, unknown_max_length=5)
        same_lattice(segmentation_lattice(text, vocab, **kw),
                     reference_segmentation_lattice(text, vocab, **kw), exact_weights=False)


@pytest.fixture(scope="module")
def sotu():
    return maxarpa.load(DEFAULT_LM)


@pytest.mark.parametrize("cues", [True, False])
def test_real_text_lattices_and_decodes_equal_the_reference(sotu, cues):
    seg = Segmenter(sotu, SegmentOptions(cues=CueWeights() if cues else NO_CUES))
    raw = SENTENCES + ["#StateOfTheUnion2009", "www.whitehouse.gov/PressRelease", "iPhone4"]
    inputs = [SegmentInput.read(t) for t in raw]
    refs = []
    for s in inputs:
        ref = reference_segmentation_lattice(
            s.text, seg.index, breaks=s.breaks, unknown_penalty_per_char=0.0,
            spelling=seg.spelling, spelling_scale=seg.options.spelling_scale,
            unknown_word_cost=seg.options.unknown_word_cost,
            boundary_bonus=s.cue_bonus(seg.options.cues))
        same_lattice(seg.lattice(s), ref, exact_weights=False)
        refs.append(ref)
    got = seg.segment_many(raw, lower=True)
    want = dispatch.decode_many(as_target_model(sotu), refs)
    for s, g, w in zip(inputs, got, want, strict=True):
        assert g.words == segmentation_words(w.tokens, s.text)
        assert math.isclose(g.log_p, w.log_p, rel_tol=1e-12, abs_tol=1e-9)
        assert g.certified


def test_batches_split_by_characters_give_the_same_answers(sotu, monkeypatch):
    from arsdecode.tasks.segment import segmenter

    seg = Segmenter(sotu)
    texts = SENTENCES * 3 + ["", "!!", "a"]
    whole = seg.segment_many(texts, posteriors=True)
    monkeypatch.setattr(segmenter, "CHUNK", 30)  # about one sentence per compiled call
    split = seg.segment_many(texts, posteriors=True)
    assert [r.to_json() for r in split] == [r.to_json() for r in whole]
    assert whole[-2].words == [] and whole[-3].words == []


def test_trie_round_trip_and_recorded_ids(sotu, tmp_path):
    index = SurfaceIndex.of_model(sotu)
    trie = TrieIndex.of(index.words, sotu.vocab)
    assert sorted(trie.words) == sorted(w for ws in index.words.values() for w in ws)
    trie.save(tmp_path / "t.npz")
    back = TrieIndex.load(tmp_path / "t.npz")
    assert back.words == trie.words and back.max_length == trie.max_length
    for name in ("surf_word_off", "child_off", "child_sym", "child_node", "node_surface",
                 "vocab_ids"):
        assert np.array_equal(getattr(back, name), getattr(trie, name)), name
    assert back.vocab_digest == trie.vocab_digest != ""
    looked_up = [sotu.word_to_id[w] for w in trie.words]
    assert back.ids_in(sotu.word_to_id, sotu.vocab, sotu.unk_id).tolist() == looked_up
    # ids recorded for another vocabulary are not used: looked up instead
    other = [*sotu.vocab[1:], sotu.vocab[0]]
    moved = TrieIndex.of(index.words, other)
    assert moved.vocab_ids is not None and moved.vocab_ids.tolist() != looked_up
    assert moved.ids_in(sotu.word_to_id, sotu.vocab, sotu.unk_id).tolist() == looked_up


def test_the_ascii_reader_equals_segment_input_read():
    """`SegmentInput.read`'s ASCII path gives what the general reader gives."""
    rng = random.Random(7)
    alphabet = "aZb9 -_'.#/\x00\tQx1"
    for _ in range(3000):
        raw = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        assert SegmentInput.read(raw) == SegmentInput.read_general(raw), raw
    for raw in ["#iPhoneForAlonis", "www.bestbuy.com/deals", "lions2009", "", "...", "a b",
                "don't", "café", "ＡＢＣ"]:
        assert SegmentInput.read(raw) == SegmentInput.read_general(raw), raw


def test_a_target_without_ngram_tables_is_decoded_through_dispatch(sotu):
    from arsdecode.model.interpolated import InterpolatedLM

    # a model mixed with itself is the model (p = 0.5 p + 0.5 p), but has no compiled tables:
    # its lattices go through dispatch.decode_many (ARS) instead of the batched Viterbi
    mixed = InterpolatedLM([sotu, sotu], [0.5, 0.5])
    texts = SENTENCES[:2] + ["#StateOfTheUnion"]
    got = Segmenter(mixed, spelling=Segmenter(sotu).spelling).segment_many(texts)
    want = Segmenter(sotu).segment_many(texts)
    for g, w in zip(got, want, strict=True):
        assert g.words == w.words
        assert math.isclose(g.log_p, w.log_p, rel_tol=1e-9, abs_tol=1e-9)


def test_trie_membership_is_the_surface_index_s():
    """The known-compound cue asks the trie `surface in trie`; it must answer as the surface
    index's own mapping does, for words in it, their prefixes and extensions."""
    vocab = ["power", "book", "powerbook", "java", "one", "a", "i", "phone"]
    index = SurfaceIndex.of(vocab)
    trie = TrieIndex.of(index.words)
    probes = {w for s in index.words for w in (s, s[:-1], s + "s", s[1:])} | {"", "zzz", 7}
    for probe in probes:
        assert (probe in trie) == (probe in index.words)
