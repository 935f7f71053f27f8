"""A target written against `TargetModel` alone gets every method, through the front door.

The issue's proof that a new kind of target touches one place: `ToyTrigram` below is a
hand-written order-3 model (one distribution per pair of previous words, some of them zero;
not a backoff n-gram, no maxarpa Model, no ARPA file). The conformance suite
(tests/test_conformance.py, target "toy") runs it through every method of the front door on
both lattice kinds against brute force, scored with scalar arithmetic on the toy's table;
here: its bound, the full DP's state merging on it, and the approximate methods
(`arsdecode.methods.approx`), each checked against `brute_force` below. Lattices are random
and small, from fixed seeds.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import numpy as np
import pytest

from arsdecode.lattice import Lattice
from arsdecode.methods.approx import beam_search, gibbs, randomized_log_partition
from arsdecode.methods.full import full_decode, full_log_partition
from arsdecode.model import TargetModel
from arsdecode.testing.brute import chi_square_pvalue  # the suite's one goodness-of-fit test

TIGHT = 1e-9  # nats: two float64 sums of the same terms in different orders

VOCAB = ("<s>", "</s>", "<unk>", "a", "b", "c", "d", "e")
INDEX = {w: i for i, w in enumerate(VOCAB)}
BOS, EOS, UNK = INDEX["<s>"], INDEX["</s>"], INDEX["<unk>"]
PAD = -1  # "no word": the left padding of a context row
MEMORYLESS = np.array([INDEX["c"], INDEX["e"]])  # after these, the word before is forgotten
WORDS = ("a", "b", "c", "d", "e", "zz")  # lattice tokens; "zz" is unknown (<unk>)


class ToyTrigram:
    """An order-3 target with its own table ln p(w | u, v), indexed [u + 1, v, w] (u = -1: no
    word before v, i.e. the history is v alone, as at `<s>`).

    Written only against the protocol: `log_bound` is the maximum over every left extension
    of the context, computed by brute force over the table; `minimal_context` is a real cut
    (after a MEMORYLESS word the table does not depend on the word before, so it is dropped),
    so the full DP's state merging is exercised too.
    """

    order = 3
    bos = BOS
    eos = EOS

    def __init__(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        n = len(VOCAB)
        logits = rng.normal(scale=1.5, size=(n + 1, n, n))
        logits[rng.random(logits.shape) < 0.08] = -np.inf  # some zero probabilities
        logits[:, :, EOS] = rng.normal(scale=1.5, size=(n + 1, n))  # a sentence can always end
        logits[:, :, BOS] = -np.inf  # <s> is never predicted
        logits[:, MEMORYLESS, :] = logits[0, MEMORYLESS, :]  # one row for every u
        top = logits.max(axis=2, keepdims=True)
        self.table = logits - top - np.log(np.exp(logits - top).sum(axis=2, keepdims=True))
        self.bound_one = self.table.max(axis=0)  # context (v): max over u, (v, w)
        self.bound_empty = self.table.max(axis=(0, 1))  # empty context: max over u, v

    def ids(self, tokens):
        return np.array([INDEX.get(t, UNK) for t in tokens], dtype=np.int64)

    def word(self, word_id):
        return VOCAB[word_id]

    def log_prob(self, contexts, words):
        u, v = contexts[:, -2], contexts[:, -1]
        if (v == PAD).any():
            raise AssertionError("log_prob of an empty context: no history is empty")
        return self.table[u + 1, v, words]

    def log_bound(self, contexts, words):
        u, v = contexts[:, -2], contexts[:, -1]
        vv = np.maximum(v, 0)
        return np.where(v == PAD, self.bound_empty[words],
                        np.where(u == PAD, self.bound_one[vv, words],
                                 self.table[u + 1, vv, words]))

    def is_exact(self, position, context):
        n = len(context)
        return n >= self.order - 1 or (n == position + 1 and n > 0 and context[0] == BOS)

    def minimal_context(self, contexts):
        out = contexts.copy()
        out[np.isin(out[:, -1], MEMORYLESS), :-1] = PAD
        return out


def brute_force(toy: ToyTrigram, lattice: Lattice) -> dict[tuple[str, ...], float]:
    """ln p(x), emissions included (unnormalised), of every path, each scored on its own."""
    scores = {}
    for choice in itertools.product(*(range(len(t)) for t in lattice.tokens)):
        path = tuple(lattice.tokens[i][j] for i, j in enumerate(choice))
        hist = [PAD, BOS, *(INDEX.get(t, UNK) for t in path), EOS]
        log_p = 0.0
        for k in range(2, len(hist)):
            log_p += float(toy.table[hist[k - 2] + 1, hist[k - 1], hist[k]])
        for i, j in enumerate(choice):
            log_p += float(lattice.log_emissions[i][j])
        scores[path] = log_p
    return scores


def log_sum(values) -> float:
    finite = [x for x in values if x > -math.inf]
    if not finite:
        return -math.inf
    top = max(finite)
    return top + math.log(sum(math.exp(x - top) for x in finite))


def distribution(scores: dict[tuple[str, ...], float]) -> dict[tuple[str, ...], float]:
    z = log_sum(scores.values())
    return {p: math.exp(s - z) for p, s in scores.items() if s > -math.inf}


def random_lattice(rng: random.Random) -> Lattice:
    positions = []
    for _ in range(rng.randint(1, 4)):
        toks = rng.sample(WORDS, rng.randint(1, 3))
        ws = [round(rng.uniform(-2.0, 0.0), 6) for _ in toks]
        if len(toks) >= 2 and rng.random() < 0.2:
            ws[rng.randrange(len(toks))] = -math.inf
        positions.append(list(zip(toks, ws, strict=True)))
    return Lattice.from_lists(positions)


@pytest.fixture(scope="module")
def cases():
    """(toy, lattice, brute-force scores) on three toys, lattices with a path of p > 0."""
    rng = random.Random(20)
    out = []
    for seed in range(3):
        toy = ToyTrigram(seed)
        while sum(1 for t, _, _ in out if t is toy) < 8:
            lattice = random_lattice(rng)
            scores = brute_force(toy, lattice)
            if max(scores.values()) > -math.inf:
                out.append((toy, lattice, scores))
    return out


def spread(cases, minimum_paths: int = 4):
    """Cases whose posterior has several paths, none above 0.8 (sampling has work to do)."""
    picked = []
    for toy, lattice, scores in cases:
        dist = distribution(scores)
        if len(dist) >= minimum_paths and max(dist.values()) < 0.8:
            picked.append((toy, lattice, scores, dist))
    assert len(picked) >= 4, len(picked)
    return picked


def test_the_toy_is_a_target_and_its_bound_holds():
    toy = ToyTrigram(0)
    assert isinstance(toy, TargetModel)
    n = len(VOCAB)
    grid = np.array(list(itertools.product(range(-1, n), range(n), range(n))), dtype=np.int64)
    ctx, words = grid[:, :2], grid[:, 2]
    exact = toy.log_prob(ctx, words)
    for cut in (ctx, np.c_[np.full(len(ctx), PAD), ctx[:, 1]],
                np.full_like(ctx, PAD)):  # the whole context, its last word, nothing
        assert (toy.log_bound(cut, words) >= exact).all()
    assert np.array_equal(toy.log_prob(toy.minimal_context(ctx), words), exact)


def test_full_dp_state_merging_and_partition(cases):
    merged = literal = 0
    for toy, lattice, scores in cases:
        best = max(scores.values())
        for minimize in (True, False):
            f = full_decode(toy, lattice, minimize=minimize)
            assert abs(f.log_p - best) <= TIGHT
            assert abs(full_log_partition(toy, lattice, minimize=minimize)
                       - log_sum(scores.values())) <= TIGHT
        merged += full_decode(toy, lattice).dp_states
        literal += full_decode(toy, lattice, minimize=False).dp_states
    assert merged < literal  # the toy's cut merged states (the test has power)


def test_approximate_methods_run_on_the_toy(cases):
    for toy, lattice, scores in cases:
        best = max(scores.values())
        wide = beam_search(toy, lattice, 10_000)  # wider than the state space: exact Viterbi
        assert abs(wide.log_p - best) <= TIGHT, lattice.to_json_obj()
        assert abs(scores[tuple(wide.tokens)] - wide.log_p) <= TIGHT
        greedy = beam_search(toy, lattice, 1)
        assert greedy.log_p <= best + TIGHT
        if greedy.log_p > -math.inf:
            assert abs(scores[tuple(greedy.tokens)] - greedy.log_p) <= TIGHT
        log_z = randomized_log_partition(toy, lattice, 10_000, 0, np.random.default_rng(0))
        assert abs(log_z - log_sum(scores.values())) <= TIGHT
    toy, lattice, _, dist = spread(cases)[0]
    r = gibbs(toy, lattice, 10_000, np.random.default_rng(1), burn_in=100)
    paths = [tuple(lattice.tokens[i][j] for i, j in enumerate(x)) for x in r.samples]
    counts = Counter(paths)
    tv = 0.5 * sum(abs(counts.get(p, 0) / len(paths) - q) for p, q in dist.items())
    assert tv < 0.06, tv
    assert chi_square_pvalue(paths[::10], dist) > 0.001  # thinned: the chain is correlated
