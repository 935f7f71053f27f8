"""The interpolated and log-linear targets on every real ARPA file maxarpa reads (issue 22).

Why: the targets' bounds are built from each component's max-backoff bounds, and the real
files of other toolkits (../shared/data/arpa, its README lists the quirks) hold what random
models rarely do: positive backoffs, n-grams without their prefixes, huge vocabularies with
odd words. On random confusion networks over each file's words, ARS must certify, and its
best ln p must equal brute force scored independently: the components' scalar `log10p`
walks, mixed by hand, plus the features counted by hand. No target code scores the reference.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

import maxarpa
from arsdecode import api
from arsdecode.lattice import Lattice
from arsdecode.testing.brute import _enumerate
from maxarpa.constants import BOS, EOS, LN10

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "arpa"
REAL_FILES = sorted(p for s in ("set1", "set2") for p in (CORPUS / s).glob("*")
                    if p.suffix != ".md")
WEIGHTS = (0.7, 0.3)


def scalar_logs10(lm, path: tuple[str, ...]) -> list[float]:
    """log10 p of each word of `path` and of </s>, by `Model.log10p` on the full history."""
    hist, out = [BOS], []
    for w in [*path, EOS]:
        out.append(lm.log10p(w, hist))
        hist.append(w)
    return out


def mixed_log(models, path: tuple[str, ...]) -> float:
    """ln of the interpolation, token by token, from each component's scalar walk."""
    per = [scalar_logs10(m, path) for m in models]
    total = 0.0
    for logs in zip(*per, strict=True):
        p = sum(w * 10.0 ** x for w, x in zip(WEIGHTS, logs, strict=True))
        if p <= 0.0:
            return -math.inf
        total += math.log(p)
    return total


def feature_log(lm, features: dict[str, float], path: tuple[str, ...]) -> float:
    """ln p_lm(path) plus every feature occurrence of `<s> path </s>` (a `*` matches any word;
    a pattern only counts where it ends at a word after `<s>`)."""
    base = LN10 * sum(scalar_logs10(lm, path))
    if base == -math.inf:
        return base
    sentence = [BOS, *path, EOS]
    total = base
    for text, weight in features.items():
        pattern = text.split()
        for end in range(1, len(sentence)):
            start = end - len(pattern) + 1
            if start >= 0 and all(p in ("*", t) for p, t in
                                  zip(pattern, sentence[start:end + 1], strict=True)):
                total += weight
    return total


def random_lattice(rng: random.Random, words: list[str]) -> Lattice:
    positions = []
    for _ in range(rng.randint(1, 4)):
        toks = rng.sample(words, min(len(words), rng.randint(1, 3)))
        positions.append([(t, round(rng.uniform(-2.0, 0.0), 3)) for t in toks])
    return Lattice.from_lists(positions)


def readable_models():
    from arsdecode.errors import ArsDecodeError
    from maxarpa.errors import MaxArpaError

    for path in REAL_FILES:
        try:
            lm = maxarpa.load(path)
        except (MaxArpaError, ArsDecodeError, OSError):
            continue  # the broken files of the corpus (its README lists them)
        if lm.bos_id is None or lm.eos_id is None:
            continue
        words = [w for w in lm.vocab if w not in (BOS, EOS)][:30]
        if words:
            yield path, lm, words


@pytest.mark.skipif(not REAL_FILES, reason=f"no ARPA corpus at {CORPUS}")
def test_interpolated_and_loglinear_targets_on_the_real_arpa_files():
    ran = 0
    for path, lm, words in readable_models():
        rng = random.Random(path.name)
        other = maxarpa.truncate(lm, 2) if lm.order > 2 else lm
        mix = api.interpolate([lm, other], list(WEIGHTS))
        features = {}
        nameable = [w for w in words if w != "*"]  # `*` is the skip in a pattern
        if not nameable:
            continue
        for _ in range(4):
            span = rng.randint(1, 3)
            pattern = [rng.choice(nameable) for _ in range(span)]
            if span == 3 and rng.random() < 0.5:
                pattern[1] = "*"
            features[" ".join(pattern)] = round(rng.uniform(-2.0, 2.0), 3)
        field = api.loglinear([lm], [1.0], features=features)
        for _ in range(3):
            lattice = random_lattice(rng, words)
            references = (
                (mix, lambda p, models=(lm, other): mixed_log(models, p)),
                (field, lambda p, lm=lm, features=features: feature_log(lm, features, p)),
            )
            for target, reference in references:
                brute = _enumerate(lattice, reference)
                got = api.decode(target, lattice, method="ars")
                if brute.best_log_p == -math.inf:
                    continue
                assert got.certified, (path.name, target)
                tol = 1e-6 * (1 + abs(brute.best_log_p))
                assert abs(got.log_p - brute.best_log_p) <= tol, (path.name, target)
                ran += 1
    assert ran >= 100
