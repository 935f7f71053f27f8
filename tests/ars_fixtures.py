"""Models and lattices shared by the arsdecode tests (full model, ARS, automaton, CLI).

Registered once as a plugin by conftest (`pytest_plugins`); test modules just name the fixtures.

- `real_lms`: modified Kneser-Ney 3-, 4- and 5-gram models trained once per session by lmplz on
  the first sentences of State of the Union (conftest's `state_union_sentences`), each loaded both
  by maxarpa and by KenLM, with words and sentences to build lattices that hit real n-grams;
- `random_lms`: small random ARPA models with many POSITIVE backoffs
  (arsdecode.testing.random_arpa), where a max over listed n-grams is not a bound, so they
  catch bound and merging bugs;
- `make_lattice`: a seeded random lattice, sometimes following a real sentence (so high-order
  n-grams fire), with random ln emissions and sometimes one -inf candidate.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import kenlm
import pytest

import maxarpa
from arsdecode.lattice import Lattice
from arsdecode.testing.random_arpa import random_arpa_text
from data_prep.lmplz import train_arpa
from maxarpa.model import Model

N_TRAIN_ARS = 2000


@dataclass(frozen=True)
class LM:
    """One model: its file, maxarpa and KenLM views, and words to build lattices from."""

    name: str
    path: Path
    lm: Model
    km: kenlm.Model | None  # None when KenLM cannot load the file
    words: list[str]
    sentences: list[list[str]]

    def __repr__(self) -> str:  # short ids in pytest output
        return f"LM({self.name})"


def _kenlm_or_none(path: Path) -> kenlm.Model | None:
    try:
        return kenlm.Model(str(path))
    except Exception:  # KenLM rejects some valid-but-odd ARPA files; maxarpa scoring still works
        return None


@pytest.fixture(scope="session")
def real_lms(state_union_sentences, lmplz, tmp_path_factory) -> dict[int, LM]:
    """lmplz 3-, 4- and 5-gram models on State of the Union, keyed by order."""
    train = state_union_sentences[:N_TRAIN_ARS]
    d = tmp_path_factory.mktemp("ars_real")
    counts = Counter(w for s in train for w in s.split())
    words = [w for w, _ in counts.most_common(150)]
    sentences = [s.split() for s in train[:400]]
    out = {}
    for order in (3, 4, 5):
        path = train_arpa(train, order, d / f"su.{order}.arpa")
        out[order] = LM(f"su{order}", path, maxarpa.load(path), kenlm.Model(str(path)), words,
                        sentences)
    return out


RANDOM_SPECS = [  # (seed, order, vocab size, positive backoff fraction, density)
    (11, 2, 4, 0.5, 0.8),
    (12, 3, 3, 0.6, 0.9),
    (13, 3, 5, 0.5, 0.7),
    (14, 4, 3, 0.7, 0.9),
    (15, 4, 4, 0.5, 0.8),
    (16, 5, 3, 0.6, 1.0),
    (17, 5, 4, 0.5, 0.7),
    (18, 3, 4, 1.0, 0.8),
]


@pytest.fixture(scope="session")
def random_lms(tmp_path_factory) -> list[LM]:
    """Random ARPA models with positive backoffs, prefix-closed, readable by KenLM."""
    d = tmp_path_factory.mktemp("ars_random")
    out = []
    for seed, order, vocab, frac, density in RANDOM_SPECS:
        text = random_arpa_text(random.Random(seed), order, vocab, frac, False, density=density)
        path = d / f"r{seed}.arpa"
        path.write_text(text)
        lm = maxarpa.load(path)
        assert lm.positive_backoffs > 0, seed
        words = [w for w in lm.vocab if w not in ("<s>", "</s>")]
        out.append(LM(f"rand{seed}-o{order}", path, lm, _kenlm_or_none(path), words, []))
    return out


def random_lm_with_options(directory: Path, seed: int, **kwargs) -> LM:
    """A random model with any generator options (e.g. missing prefixes, -inf probabilities)."""
    rng = random.Random(seed)
    order = kwargs.pop("order", rng.randint(2, 4))
    vocab = kwargs.pop("vocab_size", rng.randint(3, 5))
    text = random_arpa_text(rng, order, vocab, kwargs.pop("positive_backoff_fraction", 0.5),
                            kwargs.pop("drop_prefix_contexts", False), **kwargs)
    path = directory / f"opt{seed}.arpa"
    path.write_text(text)
    lm = maxarpa.load(path)
    words = [w for w in lm.vocab if w not in ("<s>", "</s>")]
    return LM(f"opt{seed}", path, lm, None, words, [])


def make_lattice(
    rng: random.Random,
    model: LM,
    *,
    max_len: int = 5,
    max_width: int = 4,
    neg_inf: float = 0.2,
    follow_sentence: float = 0.6,
    extra_words: Sequence[str] = (),
) -> Lattice:
    """A random lattice: length 1..max_len, width 1..max_width, emissions in [-3, 0].

    With probability `follow_sentence` (models with sentences) position i includes word i of a
    real training sentence, so the true path runs through long listed n-grams. With probability
    `neg_inf`, one candidate of a position of width >= 2 gets emission -inf.
    """
    length = rng.randint(1, max_len)
    pool = list(model.words) + list(extra_words)
    sent: list[str] | None = None
    if model.sentences and rng.random() < follow_sentence:
        s = rng.choice([s for s in model.sentences if len(s) >= length])
        start = rng.randint(0, len(s) - length) if rng.random() < 0.5 else 0
        sent = s[start : start + length]
    positions = []
    for i in range(length):
        width = min(rng.randint(1, max_width), len(pool))
        toks = rng.sample(pool, width)
        if sent is not None and sent[i] not in toks:
            toks[rng.randrange(width)] = sent[i]
        ws = [round(rng.uniform(-3.0, 0.0), 6) for _ in toks]
        if width >= 2 and rng.random() < neg_inf:
            ws[rng.randrange(width)] = float("-inf")
        positions.append(list(zip(toks, ws, strict=True)))
    return Lattice.from_lists(positions)


IMPOSSIBLE_ARPA = """
\\data\\
ngram 1=4
ngram 2=2

\\1-grams:
-1.0\t<unk>\t0
-99\t<s>\t0
-0.5\t</s>
-0.3\ta\t0

\\2-grams:
-inf\t<s> a
-0.2\ta </s>

\\end\\
"""
"""A bigram model in which p(a | <s>) = 0: every path starting with `a` is impossible."""
