"""A mixture of n-gram tables on the compiled full DP (issue 34): `fast_mixture` + `MixCore`.

Why: `InterpolatedLM` (`-mix-lm`) now runs on the compiled DP over the union of its
components' useful contexts, every factor the components' walks mixed in float64 and pruned by
mixed bigram bounds. Exactness is the product, so every answer is checked against brute force
scored without the target's code (each component's scalar `log10p` walk, mixed by hand), on
random models with positive backoffs (hypothesis) and on the real ARPA files of other
toolkits, and against the ARS path on the same lattices:

- Viterbi (pruned and not) = the brute-force best; ln Z = the brute-force logsumexp; every
  candidate's posterior = its brute-force marginal; the K best = the brute-force top K;
- the compiled walk and bound equal InterpolatedLM.log_prob / log_bound;
- auto runs the compiled DP on a mixture (a batch whose ARS estimate passes the setup);
- a mixture whose union would grow past its cap has no compiled path and still decodes.
"""

from __future__ import annotations

import math
import random
import re

import numpy as np
import pytest
from compiled_brute import check_compiled_against_brute
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_targets_real_arpa import CORPUS, REAL_FILES, readable_models

import maxarpa
from arsdecode import api
from arsdecode.lattice import Lattice
from arsdecode.methods import fast_full, fast_mixture
from arsdecode.model.interpolated import InterpolatedLM
from arsdecode.testing.random_arpa import random_arpa_text
from maxarpa.constants import BOS, EOS


def reference_log(models, weights, missing: str, path: tuple[str, ...]) -> float:
    """ln p_mix(<s> path </s>) from each component's scalar walk, mixed by hand: a word a
    component lacks is its <unk> (missing="unk", when it has one) or probability zero, and
    as history ends its context (SRILM's rule, missing="zero", or no <unk>)."""
    total = 0.0
    hists = [[BOS] for _ in models]
    for w in [*path, EOS]:
        p = 0.0
        for k, (lm, lam) in enumerate(zip(models, weights, strict=True)):
            seen = w if w in lm.word_to_id else ("<unk>" if missing == "unk" and
                                                 lm.unk_id is not None else None)
            if seen is not None and lam > 0:
                p += lam * 10.0 ** lm.log10p(seen, hists[k])
            if seen is None:
                hists[k] = []  # the view ends at a word the component cannot see
            else:
                hists[k].append(seen)
        if p <= 0.0:
            return -math.inf
        total += math.log(p)
    return total


def random_lattice(rng: random.Random, words: list[str], max_len: int = 4,
                   max_width: int = 3) -> Lattice:
    positions = []
    for _ in range(rng.randint(1, max_len)):
        toks = rng.sample(words, min(len(words), rng.randint(1, max_width)))
        ws = [round(rng.uniform(-3.0, 0.0), 4) for _ in toks]
        if len(toks) >= 2 and rng.random() < 0.15:
            ws[rng.randrange(len(toks))] = -math.inf
        positions.append(list(zip(toks, ws, strict=True)))
    return Lattice.from_lists(positions)


def check_against_brute(mix: InterpolatedLM, models, weights, lattices: list[Lattice],
                        k: int = 3) -> int:
    """Every compiled answer on `lattices` against brute force; returns the cases checked."""
    return check_compiled_against_brute(
        mix, lattices, lambda p: reference_log(models, weights, mix.missing, p), k=k)


@st.composite
def mixtures(draw):
    """2 or 3 random models with positive backoffs (orders 1-4, some with renamed words or
    no <unk>), their weights (one may be 0) and `missing`."""
    n = draw(st.integers(2, 3))
    specs = []
    for _ in range(n):
        specs.append((draw(st.integers(0, 10**6)), draw(st.integers(1, 4)),
                      draw(st.integers(2, 5)), draw(st.booleans()), draw(st.booleans())))
    raw = [draw(st.sampled_from([0.0, 0.2, 0.5, 1.0])) for _ in range(n)]
    if sum(raw) == 0:
        raw[0] = 1.0
    weights = [x / sum(raw) for x in raw]
    weights[-1] = 1.0 - sum(weights[:-1])
    return specs, weights, draw(st.sampled_from(["unk", "zero"])), draw(st.integers(0, 99))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixtures())
def test_random_mixtures_equal_brute_force(tmp_path_factory, case):
    specs, weights, missing, seed = case
    d = tmp_path_factory.mktemp("mix")
    models = []
    for n, (s, order, vocab, rename, unk) in enumerate(specs):
        text = random_arpa_text(random.Random(s), order, vocab, 0.6, density=0.9,
                                with_unk=unk)
        if rename:  # words the other components lack
            text = re.sub(r"\bw1\b", "v1", text)
        path = d / f"m{n}.arpa"
        path.write_text(text)
        models.append(maxarpa.load(path))
    if all(m.unk_id is None for m in models) and missing == "unk":
        missing = "zero"
    mix = InterpolatedLM(models, weights, missing=missing)
    words = sorted({w for m in models for w in m.vocab} - {BOS, EOS})
    rng = random.Random(seed)
    lattices = [random_lattice(rng, words) for _ in range(6)]
    check_against_brute(mix, models, weights, lattices)
    rows = np.array([[rng.choice([-1, *range(len(mix.vocab))]) for _ in range(mix.order - 1)]
                     for _ in range(50)], dtype=np.int64).reshape(50, mix.order - 1)
    for r in rows:  # left padding: nothing left of a -1
        pad = np.flatnonzero(r < 0)
        if len(pad):
            r[:pad[-1]] = -1
    ws = np.array([rng.randrange(len(mix.vocab)) for _ in range(50)], dtype=np.int64)
    mc = fast_full.full_dp(mix).mix
    assert np.array_equal(mc.walk(rows, ws, False), mix.log_prob(rows, ws))
    last = rows[:, -1:] if mix.order > 1 else np.full((50, 1), -1, np.int64)
    assert np.array_equal(mc.walk(np.ascontiguousarray(last), ws, True),
                          mix.log_bound(last, ws))


@pytest.mark.skipif(not REAL_FILES, reason=f"no ARPA corpus at {CORPUS}")
def test_real_arpa_pairs_equal_brute_force_and_ars():
    """Each real file mixed with its bigram truncation, and KenLM's two test models (one
    without <unk>) mixed with each other: compiled = brute force, and = ARS."""
    pairs = []
    by_name = {}
    for path, lm, _ in readable_models():
        by_name[path.name] = lm
        if lm.order > 2 and len(lm.vocab) < 20_000:
            pairs.append((path.name, [lm, maxarpa.truncate(lm, 2)]))
    if "kenlm_test.arpa" in by_name and "kenlm_test_nounk.arpa" in by_name:
        pairs.append(("kenlm pair", [by_name["kenlm_test.arpa"],
                                     by_name["kenlm_test_nounk.arpa"]]))
    checked = 0
    for name, models in pairs:
        rng = random.Random(name)
        for missing in ("unk", "zero"):
            mix = InterpolatedLM(models, [0.7, 0.3], missing=missing)
            words = [w for w in mix.vocab if w not in (BOS, EOS)][:40]
            lattices = [random_lattice(rng, words) for _ in range(3)]
            checked += check_against_brute(mix, models, [0.7, 0.3], lattices)
            for lat in lattices:
                ars = api.decode(mix, lat, method="ars")
                full = api.decode(mix, lat, method="full")
                assert full.method == "full" and ars.certified
                assert abs(ars.log_p - full.log_p) <= 1e-9 * (1 + abs(ars.log_p)), name
    assert checked >= 30, checked


def test_auto_runs_the_compiled_mixture(tmp_path):
    models = []
    for n in range(2):
        path = tmp_path / f"m{n}.arpa"
        path.write_text(random_arpa_text(random.Random(70 + n), 3, 6, 0.5, density=0.9))
        models.append(maxarpa.load(path))
    mix = api.interpolate(models, [0.6, 0.4])
    rng = random.Random(3)
    words = sorted({w for m in models for w in m.vocab} - {BOS, EOS})
    lattices = [random_lattice(rng, words, 5, 4) for _ in range(20)]
    fast_full.has_dp(mix)  # built: auto's setup is then free
    auto = api.decode_many(mix, lattices, method="auto")
    assert {r.method for r in auto} == {"full"}
    for r, lat in zip(auto, lattices, strict=True):
        ars = api.decode(mix, lat, method="ars")
        assert abs(r.log_p - ars.log_p) <= 1e-9 * (1 + abs(ars.log_p))
    weighted = api.weighted(mix, lm_weight=0.5)  # an LM weight on a mixture: compiled too
    assert fast_full.compiled_target(weighted) is mix
    for lat in lattices[:5]:
        a = api.decode(weighted, lat, method="full")
        b = api.decode(weighted, lat, method="ars")
        assert a.method == "full" and abs(a.log_p - b.log_p) <= 1e-9 * (1 + abs(b.log_p))


def test_a_union_past_its_cap_has_no_compiled_path(tmp_path, monkeypatch):
    """A component whose <unk> stands in its contexts, with many union words mapping to it:
    past UNION_GROWTH the mixture keeps ARS (and the numpy DP for "full")."""
    a = tmp_path / "a.arpa"
    a.write_text(random_arpa_text(random.Random(5), 3, 4, 0.5, density=1.0))
    b = tmp_path / "b.arpa"
    b.write_text(re.sub(r"\bw(\d)\b", r"u\1", random_arpa_text(random.Random(6), 3, 4, 0.5,
                                                                density=1.0)))
    models = [maxarpa.load(a), maxarpa.load(b)]
    monkeypatch.setattr(fast_mixture, "UNION_GROWTH", 0)
    monkeypatch.setattr(fast_mixture, "UNION_SLACK", 1)
    mix = api.interpolate(models, [0.5, 0.5])
    assert not fast_full.has_dp(mix)
    assert fast_full.compiled_target(mix) is None
    lat = random_lattice(random.Random(1), ["w0", "u1", "w2"], 3, 2)
    r = api.decode(mix, lat, method="auto")
    assert r.method == "ars" and r.certified
    assert api.decode(mix, lat, method="full").method == "full"


def test_a_large_vocabulary_mixture_equals_brute_force():
    """The embedded 5-gram (a vocabulary past the dense rows' limit, so the sparse store and
    the posteriors' uncached walk run) mixed with its bigram truncation: every compiled
    answer, posteriors included, equals brute force. The uncached walk once skipped the
    mixture and scored the first component alone; small random models never reach it."""
    from arsdecode.api import DEFAULT_LM

    lm = maxarpa.load(DEFAULT_LM)
    assert len(lm.vocab) > 4096
    models = [lm, maxarpa.truncate(lm, 2)]
    rng = random.Random(7)
    for missing in ("unk", "zero"):
        mix = InterpolatedLM(models, [0.6, 0.4], missing=missing)
        words = rng.sample([w for w in mix.vocab if w not in (BOS, EOS)], 60)
        lattices = [random_lattice(rng, words) for _ in range(6)]
        assert check_against_brute(mix, models, [0.6, 0.4], lattices) >= 4


def test_a_mixture_of_mapped_binary_models_reads_float32_bounds_and_equals_brute_force(
        tmp_path):
    """The same mixture from format-3 binary files, mapped: their bounds are float32 (rounded
    up), read in place by the compiled walks and widened per value (issue 34: no float64
    copy at load or after), and every compiled answer still equals brute force."""
    from arsdecode.api import DEFAULT_LM
    from arsdecode.model.maxarpa_lm import log10_core
    from maxarpa.binary_write import write_binary

    lm = maxarpa.load(DEFAULT_LM)
    paths = [tmp_path / "a.npz", tmp_path / "b.npz"]
    maxarpa.convert(DEFAULT_LM, paths[0], binary=True)
    write_binary(maxarpa.truncate(lm, 2), paths[1])
    models = [maxarpa.load(p, mmap=True) for p in paths]
    rng = random.Random(8)
    mix = InterpolatedLM(models, [0.6, 0.4], missing="unk")
    words = rng.sample([w for w in mix.vocab if w not in (BOS, EOS)], 60)
    lattices = [random_lattice(rng, words) for _ in range(6)]
    assert check_against_brute(mix, models, [0.6, 0.4], lattices) >= 4
    node = models[0].trie.nodes[1]
    stored_mf, stored_mbow = node.stored_bounds()
    assert stored_mf.dtype == np.float32 and stored_mbow.dtype == np.float32
    core = log10_core(models[0])
    assert np.shares_memory(core.arrays[3][1], stored_mf)  # read where the file holds it
    assert node.__dict__["mf"] is None and node.__dict__["mbow"] is None  # never widened
    assert np.array_equal(node.mf, stored_mf.astype(np.float64))  # widened on demand
