"""The targets of the conformance suite (tests/test_conformance.py), each with an independent
scorer, the lattices they run on, and the combinations the engine refuses.

Why one place: "every target equals brute force" used to be written once per target
(interpolated, log-linear, weighted, VPYLM, toy). Here a target is a factory of `Subject`s,
and adding a target is one line of `TARGETS`; the suite runs it through every operation of
the public API, on both lattice kinds, against brute force.

A subject's `path_log(words)` is ln p(<s> words </s>) computed without the target's
vectorised code: scalar `maxarpa.Model.log10p` walks (plain, weighted), each component's walk
mixed by hand (interpolated), walks plus features counted by pattern matching (log-linear),
the paper's predictive summed from the saved arrays (VPYLM), the toy's table read entry by
entry. Those scorers live beside the tests that check them against the target's own bounds
and files (test_interpolated_lm, test_loglinear_lm, test_weighted_lm, test_vpylm,
test_toy_target); this module only assembles them.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import maxarpa
from arsdecode import api
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.model import ModelLike
from arsdecode.model.vpylm import VpylmLM
from arsdecode.model.vpylm_train import train_vpylm
from arsdecode.testing.brute import BruteResult, _enumerate, model_path_log10
from arsdecode.testing.brute_dag import BruteDagResult, brute_dag, random_word_lattice
from arsdecode.testing.random_arpa import random_arpa_text
from maxarpa.constants import BOS, EOS, LN10

Words = tuple[str, ...]
UNSEEN = "zzunseen"  # a token in no model's vocabulary (scored as <unk> where there is one)

# Cases per target and lattice kind, shared out round-robin over the target's subjects.
CN_CASES = 48
DAG_CASES = 16


@dataclass(frozen=True)
class Subject:
    """One model of a target: what the API gets (`model`), its independent scorer, the
    tokens its lattices are drawn from, and whether "full" on it is the compiled DP."""

    name: str
    model: ModelLike
    path_log: Callable[[Words], float]
    words: list[str]
    compiled: bool = field(default=False)

    def __repr__(self) -> str:
        return f"Subject({self.name})"


# ----- the targets: one factory each ----------------------------------------------------------

def plain(random_lms, tmp: Path) -> list[Subject]:
    """Random ARPA models with positive backoffs, scored by scalar log10p walks."""
    return [Subject(m.name, m.lm, lambda w, lm=m.lm: LN10 * model_path_log10(lm, w),
                    [*m.words, UNSEEN], compiled=True) for m in random_lms]


def weighted(random_lms, tmp: Path) -> list[Subject]:
    """SRILM's -lmw, -no-sos, -no-eos (`api.weighted`), every setting on some model."""
    from test_weighted_lm import SETTINGS, reference_log

    out = []
    for n, m in enumerate(random_lms):
        weight, sos, eos = SETTINGS[n % len(SETTINGS)]
        out.append(Subject(
            f"{m.name}-w{weight}-{int(sos)}{int(eos)}",
            api.weighted(m.lm, lm_weight=weight, sentence_start=sos, sentence_end=eos),
            lambda w, lm=m.lm, s=(weight, sos, eos): reference_log(lm, w, *s),
            [*m.words, UNSEEN], compiled=True))
    return out


def interpolated(random_lms, tmp: Path) -> list[Subject]:
    """Mixtures of two or three models (`api.interpolate`), missing="unk" and "zero", with
    other vocabularies (renamed words, no <unk>), mixed by hand from each component's walk."""
    from test_interpolated_lm import reference_path

    renamed = re.sub(r"\bw([12])\b", r"v\1", random_arpa_text(random.Random(31), 3, 4, 0.6,
                                                              density=0.9))
    no_unk = random_arpa_text(random.Random(32), 2, 5, 0.6, density=0.9, with_unk=False)
    pool = [m.lm for m in random_lms]
    for name, text in (("renamed", renamed), ("nounk", no_unk)):
        (tmp / f"{name}.arpa").write_text(text)
        pool.append(maxarpa.load(tmp / f"{name}.arpa"))
    rng = random.Random(5)
    out = []
    for n, idx in enumerate([(0, 1), (2, 5), (3, 8), (1, 9), (4, 6, 8), (7, 2), (8, 9),
                             (5, 0, 9)]):
        raw = [rng.uniform(0.2, 1.0) for _ in idx]
        weights = [x / sum(raw) for x in raw]
        weights[-1] = 1.0 - sum(weights[:-1])
        missing = "unk" if n % 2 == 0 else "zero"
        models = [pool[i] for i in idx]
        words = sorted({w for m in models for w in m.vocab} - {BOS, EOS})
        out.append(Subject(
            f"mix{'+'.join(map(str, idx))}-{missing}",
            api.interpolate(models, weights, missing=missing),
            lambda w, a=(models, weights, missing): reference_path(*a, w),
            [*words, UNSEEN] if "<unk>" in words else words, compiled=True))
    return out


def loglinear(random_lms, tmp: Path) -> list[Subject]:
    """One or two models with alphas and n-gram / skip-gram features (`api.loglinear`),
    scored by walks plus every feature matched by hand."""
    from test_loglinear_lm import random_features, reference_score

    rng = random.Random(4)
    out = []
    for n, m in enumerate(random_lms):
        models = [m.lm]
        if n % 2:
            models.append(random_lms[(n + 3) % len(random_lms)].lm)
        alphas = [round(rng.uniform(0.3, 2.0), 3) for _ in models]
        features = random_features(rng, m.words, rng.randint(2, 8))
        out.append(Subject(
            f"loglin-{m.name}-{len(models)}",
            api.loglinear(models, alphas, features=features),
            lambda w, a=(models, alphas, features): reference_score(*a, tuple(w)),
            list(m.words), compiled=True))  # no unseen token: the reference matches <unk>
            # features literally
    return out


def vpylm(random_lms, tmp: Path) -> list[Subject]:
    """VPYLMs trained on a tiny skewed corpus, scored by the paper's predictive recomputed
    from the saved arrays (`test_vpylm.reference_prob`)."""
    from test_vpylm import WORDS, tiny_corpus

    out = []
    for seed in range(2):
        lm = VpylmLM(train_vpylm(tiny_corpus(seed + 10, 60), max_depth=4, sweeps=2, seed=seed))
        out.append(Subject(f"vpylm{seed}", lm, lambda w, lm=lm: vpylm_reference_log(lm, w),
                           [*WORDS, "zz"], compiled=True))
    return out


def vpylm_reference_log(lm: VpylmLM, words: Words) -> float:
    """ln p(<s> words </s>) from `test_vpylm.reference_prob` (the saved arrays alone)."""
    from test_vpylm import reference_prob

    history = [lm.bos]
    total = 0.0
    for w in [*(int(i) for i in lm.ids(list(words))), lm.eos]:
        p = reference_prob(lm.counts, history, w)
        if p <= 0.0:
            return -math.inf
        total += math.log(p)
        history.append(w)
    return total


def toy(random_lms, tmp: Path) -> list[Subject]:
    """A trigram written against `TargetModel` alone (test_toy_target.ToyTrigram), scored
    entry by entry from its table."""
    from test_toy_target import BOS as TOY_BOS
    from test_toy_target import EOS as TOY_EOS
    from test_toy_target import INDEX, PAD, UNK, WORDS, ToyTrigram

    def log(t: ToyTrigram, words: Words) -> float:
        hist = [PAD, TOY_BOS, *(INDEX.get(w, UNK) for w in words), TOY_EOS]
        return sum(float(t.table[hist[k - 2] + 1, hist[k - 1], hist[k]])
                   for k in range(2, len(hist)))

    return [Subject(f"toy{seed}", t, lambda w, t=t: log(t, w), list(WORDS))
            for seed, t in ((s, ToyTrigram(s)) for s in range(3))]


# A new target adds one line here.
TARGETS: dict[str, Callable[..., list[Subject]]] = {
    "plain": plain,
    "weighted": weighted,
    "interpolated": interpolated,
    "loglinear": loglinear,
    "vpylm": vpylm,
    "toy": toy,
}
KINDS = ("cn", "dag")  # confusion network (Lattice), word lattice (WordLattice)


# ----- what the engine refuses -----------------------------------------------------------------

@dataclass(frozen=True)
class Refusal:
    """An (operation, lattice kind, method) the engine does not serve, with why; the suite
    asserts it raises an ArsDecodeError. `target`: the one target refused (None: every target
    is, and the suite calls it with the first of TARGETS). `bug`: it raises something else
    today (the case is a strict xfail, so it fails once the error is right and the mark is
    stale)."""

    operation: str
    kind: str
    method: str | None
    reason: str
    bug: str | None = None
    target: str | None = None


REFUSED = [
    Refusal("adapt", "dag", None,
            "adapt refines the confusion-network q-automaton; a word lattice's ARS sampler "
            "is sample(method='ars'), which adapts its own q"),
    Refusal("marginals", "dag", "sample",
            "a word lattice gets exact arc posteriors (method full or auto); sampled "
            "marginals are per position of a confusion network"),
    Refusal("decode_kbest", "dag", "ars",
            "a word lattice's k-best comes from its exact expansion (method full or auto); "
            "ARS decodes its single best path"),
]


def is_refused(target: str, operation: str, kind: str, method: str | None) -> bool:
    return any((r.operation, r.kind, r.method) == (operation, kind, method)
               and r.target in (None, target) for r in REFUSED)


# ----- lattices and their brute force ----------------------------------------------------------

def confusion_network(rng: random.Random, words: list[str]) -> Lattice:
    """Short and wide (1-4 positions of 1-3 candidates, sometimes one at -inf) or long and
    narrow (5-7 positions of 1-2: contexts deep enough for every order here)."""
    long = rng.random() < 0.4
    positions = []
    for _ in range(rng.randint(5, 7) if long else rng.randint(1, 4)):
        toks = rng.sample(words, min(rng.randint(1, 2 if long else 3), len(words)))
        ws = [round(rng.uniform(-1.0 if long else -3.0, 0.0), 6) for _ in toks]
        if len(toks) >= 2 and not long and rng.random() < 0.15:
            ws[rng.randrange(len(toks))] = -math.inf
        positions.append(list(zip(toks, ws, strict=True)))
    return Lattice.from_lists(positions)


@dataclass(frozen=True)
class Case:
    subject: Subject
    lattice: Lattice | WordLattice
    brute: BruteResult | BruteDagResult

    def where(self) -> tuple:
        lat = self.lattice
        return (self.subject.name, lat.to_json_obj(),
                lat.finals if isinstance(lat, WordLattice) else None)


def make_cases(subjects: list[Subject], kind: str, seed: int) -> list[Case]:
    """CN_CASES (or DAG_CASES) cases with a path of p > 0, round-robin over `subjects`."""
    rng = random.Random(seed)
    want = CN_CASES if kind == "cn" else DAG_CASES
    out: list[Case] = []
    for k in _round_robin(len(subjects)):
        if len(out) == want:
            return out
        s = subjects[k]
        if kind == "cn":
            lat: Lattice | WordLattice = confusion_network(rng, s.words)
            ref: BruteResult | BruteDagResult = _enumerate(lat, s.path_log)
        else:
            lat = random_word_lattice(rng, s.words, max_nodes=6, max_paths=60)
            ref = brute_dag(lat, s.path_log)
        if ref.log_Z > -math.inf:
            out.append(Case(s, lat, ref))
    return out


def _round_robin(n: int) -> Iterator[int]:
    k = 0
    while True:
        yield k % n
        k += 1


def has_tables(subject: Subject) -> bool:
    """Whether the dispatcher runs the compiled DP (then "full" is it): n-gram tables, a
    mixture of them, a VPYLM or a log-linear target (`fast_full.compiled_tables`)."""
    from arsdecode.methods import fast_full
    from arsdecode.model import as_target_model

    return fast_full.compiled_tables(as_target_model(subject.model)) is not None
