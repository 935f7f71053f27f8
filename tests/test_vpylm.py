"""The VPYLM target (arsdecode/model/vpylm.py) against independent references.

- The sampler's state: every restaurant's counts agree with its seating and with the
  customers its children sent up, stop/pass counts agree with the tokens' orders.
- The predictive: `reference_prob` below recomputes the paper's mixture from the saved arrays
  alone (an explicit sum over every order up to the forced stop, nodes absent from the tree
  taking the prior q and their parent's HPY predictive); it sums to 1 over the vocabulary.
- The bound: the max of `reference_prob` over every left extension (all words of the
  vocabulary, so extensions absent from the tree are included) equals `log_bound`; is_exact and
  minimal_context checked the same way.
- The engine: samples on small lattices against `arsdecode.testing.brute.brute_target`
  (each case's ln Z interval covers the exact value); decode, k-best, marginals and the rest
  run in the conformance suite (tests/test_conformance.py, target "vpylm"), scored by
  `reference_prob`.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import numpy as np
import pytest

import arsdecode
from arsdecode.lattice import Lattice
from arsdecode.model import TargetModel, context_rows
from arsdecode.model.vpylm import VpylmCounts, VpylmLM, load_vpylm
from arsdecode.model.vpylm_train import VpylmSampler, train_vpylm
from arsdecode.testing.brute import brute_target, chi_square_pvalue

TIGHT = 1e-9
WORDS = ("a", "b", "c", "d", "e")


def tiny_corpus(seed: int, n: int = 40) -> list[list[str]]:
    """Sentences from a skewed second-order source, so the tree has depth and structure."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        s = [rng.choice(WORDS[:2])]
        while len(s) < 8 and rng.random() < 0.8:
            s.append(WORDS[(WORDS.index(s[-1]) * 2 + (len(s) % 3)) % 5]
                     if rng.random() < 0.7 else rng.choice(WORDS))
        out.append(s)
    return out


def trained(seed: int, max_depth: int = 3) -> tuple[VpylmSampler, VpylmLM]:
    sampler = VpylmSampler(["<s>", "</s>", "<unk>", *WORDS], max_depth, seed=seed)
    sampler.add_corpus(tiny_corpus(seed))
    for _ in range(3):
        sampler.sweep()
        sampler.resample_hyperparameters()
    return sampler, VpylmLM(sampler.counts())


@pytest.fixture(scope="module", params=[0, 1, 2])
def model(request):
    return trained(request.param)


def reference_prob(counts: VpylmCounts, context: list[int], w: int) -> float:
    """The paper's predictive, summed explicitly over orders 0..min(max_depth, len(context))
    (stop forced at the last), from the arrays alone; absent nodes have no customers and the
    prior mean stop probability."""
    bos = counts.vocab.index("<s>")
    if w == bos:
        return 0.0
    node_of = {(int(p), int(x)): v for v, (p, x) in
               enumerate(zip(counts.parent, counts.word, strict=True))}
    rest = {(int(v), int(x)): (int(c), int(t)) for v, x, c, t in counts.restaurants}
    top = min(counts.max_depth, len(context))
    total, reach, p = 0.0, 1.0, 1.0 / (len(counts.vocab) - 1)
    v: int | None = 0
    for m in range(top + 1):
        if m > 0 and v is not None:
            v = node_of.get((v, context[-m]))
        if v is not None:
            cu = sum(c for (u, _), (c, _) in rest.items() if u == v)
            tu = sum(t for (u, _), (_, t) in rest.items() if u == v)
            if cu:
                cw, tw = rest.get((v, w), (0, 0))
                d, th = counts.discounts[m], counts.strengths[m]
                p = (cw - d * tw + (th + d * tu) * p) / (th + cu)
            a, b = counts.stop[v]
            q = (a + counts.alpha) / (a + b + counts.alpha + counts.beta)
        else:
            q = counts.alpha / (counts.alpha + counts.beta)
        if m == top:
            q = 1.0
        total += reach * q * p
        reach *= 1.0 - q
    return total


def contexts_up_to(vocab_ids: list[int], length: int):
    for k in range(length + 1):
        yield from (list(c) for c in itertools.product(vocab_ids, repeat=k))


def test_sampler_counts_are_consistent(model):
    sampler, _ = model
    stops: Counter = Counter()
    for sent, orders in zip(sampler.sentences, sampler.orders, strict=True):
        for pos in range(1, len(sent)):
            path = sampler._path(sent, pos, orders[pos], create=False)
            assert len(path) == orders[pos] + 1  # the token's node exists
            stops[(id(path[-1]), sent[pos])] += 1
    tokens = sum(len(s) - 1 for s in sampler.sentences)
    nodes = sampler.nodes()
    assert sum(u.a for u in nodes) == tokens
    assert max(u.depth for u in nodes) >= 2  # the test has power: a deep tree
    for u in nodes:
        assert u.c == sum(sum(t) for t in u.tables.values())
        assert u.t == sum(len(t) for t in u.tables.values())
        assert all(t and min(t) >= 1 for t in u.tables.values())
        assert u.b == sum(c.a + c.b for c in u.children.values())
        for w, tabs in u.tables.items():  # customers: own stops + tables opened below
            sent_up = sum(len(c.tables.get(w, ())) for c in u.children.values())
            assert sum(tabs) == stops[(id(u), w)] + sent_up
        for w in {w for c in u.children.values() for w in c.tables}:
            assert w in u.tables


def test_predictive_is_the_papers_mixture_and_sums_to_one(model):
    _, lm = model
    assert isinstance(lm, TargetModel)
    ids = list(range(len(lm.vocab)))
    for ctx in contexts_up_to([lm.bos, *ids[3:]], 2):
        probs = [lm.prob(ctx, w) for w in ids]
        assert abs(sum(probs) - 1.0) <= TIGHT
        for w in ids:
            assert abs(probs[w] - reference_prob(lm.counts, ctx, w)) <= TIGHT


def test_bound_is_the_max_over_left_extensions(model):
    _, lm = model
    ids = list(range(len(lm.vocab)))  # every word, <unk> and </s> (never in a tree) included
    L = lm.max_depth
    contexts = list(contexts_up_to(ids[3:] + [lm.bos], L))
    refs = {(tuple(c), w): reference_prob(lm.counts, c, w) for c in contexts for w in ids}
    for ctx in contexts_up_to(ids[3:], L - 1):
        exts = [z + ctx for z in contexts_up_to(ids, L - len(ctx))]
        rows = context_rows([ctx] * len(ids), L)
        bound = lm.log_bound(rows, np.array(ids))
        exact = lm.is_exact(100, ctx)
        cut = lm.minimal_context(rows)[0]
        for w in ids:
            vals = [refs.get((tuple(e), w)) or reference_prob(lm.counts, e, w) for e in exts]
            want = max(vals)
            got = math.exp(bound[w])
            assert abs(got - want) <= TIGHT, (ctx, w, got, want)
            if exact:  # p is the same for every extension
                assert max(vals) - min(vals) <= TIGHT, (ctx, w)
            cut_ctx = [int(x) for x in cut if x >= 0]
            assert abs(lm.prob(cut_ctx, w) - lm.prob(ctx, w)) <= TIGHT
        # exact iff every extension keeps the same state cut (later layers lose nothing)
        ext_cuts = lm.minimal_context(context_rows(exts, L))
        same_cut = all(np.array_equal(row, cut) for row in ext_cuts)
        assert exact == same_cut, ctx


def test_minimal_context_is_consistent(model):
    _, lm = model
    ids = list(range(3, len(lm.vocab)))
    L = lm.max_depth
    for ctx in contexts_up_to(ids + [lm.bos], L):
        cut = lm.minimal_context(context_rows([ctx], L))[0]
        cut_ctx = [int(x) for x in cut if x >= 0]
        for w in ids:
            a = lm.minimal_context(context_rows([ctx + [w]], L))
            b = lm.minimal_context(context_rows([cut_ctx + [w]], L))
            assert np.array_equal(a, b), (ctx, w)


def test_save_and_load_give_the_same_model(model, tmp_path):
    _, lm = model
    path = tmp_path / "m.npz"
    lm.counts.save(path)
    again = load_vpylm(path)
    rows = context_rows([[lm.bos, 3], [4, 5], [], [3, 3, 3]] * 2, lm.max_depth)
    words = np.array([3, 4, 5, 6, 7, 1, 2, 0])
    assert np.array_equal(again.log_prob(rows, words), lm.log_prob(rows, words))
    assert np.array_equal(again.log_bound(rows, words), lm.log_bound(rows, words))


def test_a_bad_file_is_a_model_error(tmp_path):
    from arsdecode.errors import ModelError

    bad = tmp_path / "bad.npz"
    bad.write_text("not a model")
    with pytest.raises(ModelError, match="bad.npz"):
        load_vpylm(bad)


def random_lattice(rng: random.Random) -> Lattice:
    positions = []
    for _ in range(rng.randint(1, 4)):
        toks = rng.sample([*WORDS, "zz"], rng.randint(1, 3))
        positions.append([(t, round(rng.uniform(-2.0, 0.0), 6)) for t in toks])
    return Lattice.from_lists(positions)


def long_lattice(rng: random.Random) -> Lattice:
    """5 to 7 positions of 1 or 2 candidates: states exact before the last layer."""
    positions = []
    for _ in range(rng.randint(5, 7)):
        toks = rng.sample(WORDS, rng.choice((1, 2, 2)))
        positions.append([(t, round(rng.uniform(-1.0, 0.0), 6)) for t in toks])
    return Lattice.from_lists(positions)


@pytest.fixture(scope="module")
def cases():
    rng = random.Random(7)
    out = []
    for seed in range(2):
        lm = VpylmLM(train_vpylm(tiny_corpus(seed + 10, 60), max_depth=4, sweeps=2, seed=seed))
        for make in [random_lattice] * 8 + [long_lattice] * 6:
            lattice = make(rng)
            out.append((lm, lattice, brute_target(lm, lattice)))
    return out


def test_samples_fit_brute_force(cases):
    tested = 0
    for n, (lm, lattice, brute) in enumerate(cases):
        dist = brute.distribution()
        if len(dist) < 4 or max(dist.values()) > 0.8:
            continue
        r = arsdecode.sample(lm, lattice, 2000, seed=n)
        assert chi_square_pvalue(r.samples, dist) > 0.001, lattice.to_json_obj()
        assert abs(r.log_Z - brute.log_Z) <= 0.1
        assert r.log_Z_ci[0] <= brute.log_Z <= r.log_Z_ci[1]  # the 95% interval covers it
        tested += 1
    assert tested >= 3


def test_resampled_hyperparameters_are_valid_and_saved(model, tmp_path):
    sampler, lm = model
    assert all(0.0 < d < 1.0 for d in sampler.d) and all(t > 0.0 for t in sampler.th)
    assert lm.counts.discounts == sampler.d and lm.counts.strengths == sampler.th
    assert sampler.d[:3] != [0.62, 0.69, 0.74]  # resampled, not the starting values
    lm.counts.save(tmp_path / "m.npz")
    assert load_vpylm(tmp_path / "m.npz").counts.discounts == sampler.d


@pytest.mark.parametrize("content", [b"\\data\\\nngram 1=1\n", b"", b"PK\x03\x04garbage"])
def test_load_vpylm_of_a_bad_file_is_one_model_error_naming_it(tmp_path, content):
    """The API, not only the CLI, gets a ModelError (no BadZipFile/EOFError traceback)."""
    from arsdecode.errors import ModelError

    path = tmp_path / "bad.npz"
    path.write_bytes(content)
    with pytest.raises(ModelError, match=str(path)):
        load_vpylm(path)


def test_load_vpylm_of_a_truncated_model_is_a_model_error(tmp_path):
    from arsdecode.errors import ModelError

    good = tmp_path / "m.npz"
    train_vpylm([["a", "b"], ["b", "a", "a"]], max_depth=2, sweeps=1).save(good)
    bad = tmp_path / "cut.npz"
    bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(ModelError, match="cut.npz"):
        load_vpylm(bad)
