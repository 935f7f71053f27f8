"""The target-model interface (arsdecode/model/maxarpa_lm.py) and the certificates that rest on it.

- `MaxArpaLM` gives exactly LN10 * maxarpa's log10 values, refuses a model without <s>/</s>
  (never maps <s> to <unk>), and its exactness depends on the position (issue 9 A.1).
- Regression: an IRSTLM-like model that lists `<s> <s>` and n-grams with `</s>` inside, with
  sentence markers as lattice tokens (the only way such contexts become reachable), decodes to
  the brute-force optimum; the old rule ("a context starting with <s> is exact") certifies a
  wrong path on the same lattices, so the test has teeth.
- Property: on random ARPA models with positive backoffs, ARS decode = brute force = full DP.
- Any object implementing the protocol is a target: a toy bigram-only model written here.
- `minimal_context` is the longest useful suffix, against the definition on random models, and
  changes no probability; `ngram_tables` finds the n-gram behind a target, or None.
"""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import maxarpa
from arpa_fixtures import arpa_texts
from arsdecode.errors import BoundViolationError, ModelError
from arsdecode.lattice import Lattice
from arsdecode.methods.ars import decode
from arsdecode.methods.full import full_decode, full_log_partition
from arsdecode.model import (
    HasNgramTables,
    MaxArpaLM,
    TargetModel,
    as_target_model,
    ngram_tables,
)
from arsdecode.testing.brute import brute_model
from arsdecode.testing.reference_arpa import parse_arpa
from maxarpa.constants import LN10
from maxarpa.errors import MaxArpaError
from maxarpa.load import _from_arpa

TIGHT = 1e-9

IRSTLM_LIKE = """\\data\\
ngram 1=4
ngram 2=6
ngram 3=3

\\1-grams:
-1.0\t<s>\t-0.5
-0.6\t</s>\t-0.2
-0.7\tas\t-0.3
-1.2\t<unk>

\\2-grams:
-0.1\t<s> <s>\t0.3
-0.5\t<s> as\t-0.1
-0.4\tas </s>\t0.2
-0.3\t</s> <s>\t0.1
-0.6\tas as\t0.2
-0.8\t</s> as

\\3-grams:
-0.05\t<s> <s> <s>
-0.2\tas </s> <s>
-0.3\t<s> <s> as

\\end\\
"""

NO_BOS = """\\data\\
ngram 1=3

\\1-grams:
-0.5\t<unk>
-0.3\t</s>
-0.4\ta

\\end\\
"""


def raw_lattice(positions) -> Lattice:
    """A lattice built without `from_lists`, so sentence markers can be tokens (the engine must
    stay exact even if a front end lets them through)."""
    toks = tuple(tuple(t for t, _ in pos) for pos in positions)
    ws = tuple(np.array([w for _, w in pos], dtype=np.float64) for pos in positions)
    lattice = object.__new__(Lattice)  # skips __post_init__, which refuses sentence markers
    object.__setattr__(lattice, "tokens", toks)
    object.__setattr__(lattice, "log_emissions", ws)
    return lattice


@pytest.fixture(scope="module")
def irstlm(tmp_path_factory):
    path = tmp_path_factory.mktemp("irst") / "irst.arpa"
    path.write_text(IRSTLM_LIKE)
    return maxarpa.load(path)


def test_adapter_converts_log10_to_ln_once(irstlm):
    a = MaxArpaLM(irstlm)
    ctx = np.array([[-1, a.bos], [a.bos, a.bos], [-1, -1]], dtype=np.int64)
    words = a.ids(["as", "<s>", "</s>"])
    assert np.array_equal(a.log_prob(ctx, words), LN10 * irstlm.log10p_batch(ctx, words))
    assert np.array_equal(a.log_bound(ctx, words), LN10 * irstlm.max_log10p_batch(ctx, words))
    assert a.bos == irstlm.word_to_id["<s>"] and a.eos == irstlm.word_to_id["</s>"]
    assert isinstance(a, TargetModel)
    assert as_target_model(irstlm) is as_target_model(irstlm)  # one adapter per model


def test_model_without_bos_is_refused_not_mapped_to_unk(tmp_path):
    path = tmp_path / "nobos.arpa"
    path.write_text(NO_BOS)
    with pytest.raises(MaxArpaError, match="<s>"):  # maxarpa refuses it by default
        maxarpa.load(path)
    lm = _from_arpa(path)  # load's ARPA reader before the Config: <s> stays missing
    with pytest.raises(ModelError, match="<s>"):
        MaxArpaLM(lm)
    lattice = Lattice.from_lists([[("a", 0.0), ("zz", -0.1)]])
    with pytest.raises(ModelError):
        decode(lm, lattice)


def test_exactness_depends_on_position(irstlm):
    a = MaxArpaLM(irstlm)
    b, s = a.bos, a.ids(["as"])[0]
    assert a.is_exact(0, (b,))  # the whole history at layer 0
    assert a.is_exact(1, (b, s))  # whole history, two words: also n - 1 = 2 words
    assert not a.is_exact(2, (b,))  # `<s>` inside a longer history: not the whole history
    assert not a.is_exact(3, (s,))
    assert a.is_exact(5, (s, b))  # n - 1 words
    assert not a.is_exact(1, ())


class OldRule(MaxArpaLM):
    """The rule before issue 9 A.1: any context starting with <s> was exact."""

    def is_exact(self, position, context):
        return len(context) >= self.order - 1 or (len(context) > 0 and context[0] == self.bos)


def marker_lattices(seed: int, count: int):
    rng = random.Random(seed)
    toks = ["<s>", "</s>", "as"]
    for _ in range(count):
        length = rng.randint(2, 5)
        yield raw_lattice([
            [(t, round(rng.uniform(-2, 0), 4)) for t in rng.sample(toks, rng.randint(2, 3))]
            for _ in range(length)
        ])


@pytest.mark.parametrize("variant", ["all-edges", "paper"])
def test_sentence_markers_inside_the_history_are_decoded_exactly(irstlm, variant):
    # The lattice from issue 9 A.1: `<s> <s>` beats `as as`.
    lat = raw_lattice([[("<s>", 0.0), ("as", 0.0), ("</s>", 0.0)],
                       [("</s>", 0.0), ("<s>", 0.0), ("as", 0.0)]])
    for lattice in [lat, *marker_lattices(1, 60)]:
        ref = brute_model(irstlm, lattice)
        r = decode(irstlm, lattice, variant=variant)
        where = (variant, lattice.to_json_obj())
        assert r.certified, where
        assert abs(r.log_p - ref.best_log_p) <= TIGHT, (where, r.tokens, ref.best)
        assert abs(full_decode(irstlm, lattice).log_p - ref.best_log_p) <= TIGHT, where
        assert abs(full_log_partition(irstlm, lattice) - ref.log_Z) <= TIGHT, where


def test_the_old_exactness_rule_gives_false_certificates(irstlm):
    """Shows the regression test above can fail: the old rule certifies wrong paths here, or
    (since issue 19's two-sided certificate) is caught scoring a path above its bound."""
    wrong = 0
    for lattice in marker_lattices(1, 60):
        ref = brute_model(irstlm, lattice)
        try:
            r = decode(OldRule(irstlm), lattice)
        except BoundViolationError:
            wrong += 1
            continue
        wrong += r.certified and r.log_p < ref.best_log_p - 1e-6
    assert wrong > 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arpa=arpa_texts(min_order=2, max_order=4, min_vocab=2, max_vocab=4),
       seed=st.integers(0, 10**6), variant=st.sampled_from(["all-edges", "paper"]))
def test_decode_equals_brute_force_on_random_models(tmp_path_factory, arpa, seed, variant):
    text, params = arpa
    path = tmp_path_factory.mktemp("hyp") / "m.arpa"
    path.write_text(text)
    lm = maxarpa.load(path)
    rng = random.Random(seed)
    words = [w for w in lm.vocab if w not in ("<s>", "</s>")]
    positions = [
        [(w, round(rng.uniform(-2, 0), 3)) for w in rng.sample(words, rng.randint(1, len(words)))]
        for _ in range(rng.randint(1, 4))
    ]
    lattice = Lattice.from_lists(positions)
    ref = brute_model(lm, lattice)
    if ref.best_log_p == -math.inf:
        return
    r = decode(lm, lattice, variant=variant)
    assert r.certified, params
    assert abs(r.log_p - ref.best_log_p) <= TIGHT, (params, r.tokens, ref.best)
    assert abs(full_decode(lm, lattice).log_p - ref.best_log_p) <= TIGHT, params


class BigramTable:
    """A toy target that is not an n-gram backoff model: a dense bigram table, bound = max
    over the column (for an empty context). Written only against the protocol."""

    def __init__(self, vocab: list[str], seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.vocab = vocab
        self.order, self.bos, self.eos = 2, 0, 1
        logits = rng.normal(size=(len(vocab), len(vocab)))
        logits[:, self.bos] = -np.inf  # never predict <s>
        self.table = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))

    def ids(self, tokens):
        return np.array([self.vocab.index(t) for t in tokens], dtype=np.int64)

    def word(self, word_id):
        return self.vocab[word_id]

    def log_prob(self, contexts, words):
        return self.table[contexts[:, -1], words]

    def log_bound(self, contexts, words):
        known = contexts[:, -1] >= 0
        out = self.table.max(axis=0)[words]
        out[known] = self.table[contexts[known, -1], words[known]]
        return out

    def is_exact(self, position, context):
        return len(context) >= 1

    def minimal_context(self, contexts):
        return contexts


def test_any_protocol_implementation_is_a_target():
    model = BigramTable(["<s>", "</s>", "a", "b", "c"], seed=3)
    rng = random.Random(3)
    for _ in range(10):
        lattice = Lattice.from_lists([
            [(w, round(rng.uniform(-1, 0), 3)) for w in rng.sample(["a", "b", "c"], 2)]
            for _ in range(rng.randint(1, 4))
        ])
        best = -math.inf
        for path in itertools.product(*lattice.tokens):
            ids = [0, *model.ids(path).tolist(), 1]
            lp = sum(model.table[a, b] for a, b in itertools.pairwise(ids))
            lp += sum(float(lattice.log_emissions[i][lattice.tokens[i].index(t)])
                      for i, t in enumerate(path))
            best = max(best, lp)
        r = decode(model, lattice)
        assert r.certified and abs(r.log_p - best) <= TIGHT
        assert abs(full_decode(model, lattice).log_p - best) <= TIGHT


def test_ngram_tables_find_the_backoff_model_behind_a_target_or_none(irstlm):
    adapter = as_target_model(irstlm)
    assert isinstance(adapter, HasNgramTables) and adapter.ngram is irstlm
    assert ngram_tables(adapter) is irstlm and ngram_tables(irstlm) is irstlm
    assert ngram_tables(MaxArpaLM(irstlm, walk=irstlm)) is irstlm
    toy = BigramTable(["<s>", "</s>", "a"], seed=0)
    assert not isinstance(toy, HasNgramTables) and ngram_tables(toy) is None
    assert as_target_model(adapter) is adapter and as_target_model(toy) is toy  # idempotent


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arpa=arpa_texts(min_order=1, max_order=4, min_vocab=1, max_vocab=4,
                       drop_prefix_contexts=None))
def test_minimal_context_is_the_longest_useful_suffix(tmp_path_factory, arpa):
    """Against the definition, read from the ARPA text by the reference parser: useful = a
    proper prefix of a listed n-gram, or a listed n-gram with a nonzero backoff. The cut changes
    no probability and commutes with appending a word (the full DP merges states by it)."""
    text, params = arpa
    path = tmp_path_factory.mktemp("cut") / "m.arpa"
    path.write_text(text)
    lm = maxarpa.load(path)
    ref = parse_arpa(text)
    useful = {g[:j] for g in ref.probs for j in range(1, len(g))}
    useful |= {g for g, bow in ref.bows.items() if bow != 0}
    a = MaxArpaLM(lm)
    width = lm.order - 1
    ids = range(len(lm.vocab))
    contexts = [c for k in range(width + 1) for c in itertools.product(ids, repeat=k)]
    rows = np.full((len(contexts), width), -1, dtype=np.int64)
    for r, c in enumerate(contexts):
        rows[r, width - len(c):] = c
    cut = a.minimal_context(rows)
    for c, got in zip(contexts, cut, strict=True):
        names = tuple(lm.vocab[i] for i in c)
        keep = max((k for k in range(len(c) + 1) if k == 0 or names[-k:] in useful), default=0)
        want = [-1] * (width - keep) + list(c[len(c) - keep:])
        assert got.tolist() == want, (params, names)
    for w in ids:
        words = np.full(len(rows), w, dtype=np.int64)
        assert np.array_equal(lm.log10p_batch(rows, words), lm.log10p_batch(cut, words)), params
        if width:
            longer = np.concatenate([rows, words[:, None]], axis=1)[:, 1:]
            again = np.concatenate([cut, words[:, None]], axis=1)[:, 1:]
            assert np.array_equal(a.minimal_context(longer), a.minimal_context(again)), params
