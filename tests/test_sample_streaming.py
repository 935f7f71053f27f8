"""Streamed sampling in constant memory (issue 29): `sample -n N --jsonl` kept about 1 KB per
sample (1.07 GB at N = 1M) in its trace and sample lists.

The tally that replaces the per-trial lists (`evidence.GroupedTrials`) gives the list
estimators' numbers on the same trials; `keep=False` gives the same samples and estimates as
`keep=True`; and the CLI's peak allocation (tracemalloc: counted, not RSS, so a loaded machine
cannot make it flake) does not grow with N.
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
import tracemalloc

import numpy as np
import pytest

import maxarpa
from arsdecode.cli import main as cli
from arsdecode.cli import word_lattice as word_lattice_cli
from arsdecode.lattice import Lattice
from arsdecode.lattice.lattice_files import read_word_lattice
from arsdecode.methods import evidence
from arsdecode.methods.ars import sample
from arsdecode.methods.expansion_dp import dag_sample
from arsdecode.testing.random_arpa import random_arpa_text

POSITIONS = [[[f"w{(3 * i + j) % 12}", -0.3 * j] for j in range(4)] for i in range(8)]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("stream")
    (d / "m.arpa").write_text(random_arpa_text(7, 3, 12, 0.3, density=0.7))
    (d / "lat.json").write_text(json.dumps({"positions": POSITIONS}))
    arcs = [[i, i + 1, word, log_w] for i, position in enumerate(POSITIONS)
            for word, log_w in position] + [[0, 2, None, -1.0]]  # an epsilon arc too
    (d / "dag.json").write_text(json.dumps({"start": 0, "finals": {"8": 0.0}, "arcs": arcs}))
    return d / "m.arpa", d / "lat.json", d / "dag.json"


@pytest.mark.parametrize("seed", range(6))
def test_the_grouped_tally_gives_the_list_estimates(seed):
    rng = random.Random(seed)
    groups = [rng.uniform(-30, 5) for _ in range(rng.randint(1, 4))]
    log_zq, log_ratio, accepted = [], [], []
    for _ in range(rng.randint(0, 300)):
        lr = -math.inf if rng.random() < (0.9 if seed == 5 else 0.2) else -rng.expovariate(2)
        log_zq.append(rng.choice(groups))
        log_ratio.append(lr)
        accepted.append(seed != 5 and lr > -math.inf and rng.random() < math.exp(lr))
    tally = evidence.GroupedTrials()
    for z, r, a in zip(log_zq, log_ratio, accepted, strict=True):
        tally.add(z, r, a)
    for got, want in ((tally.importance(), evidence.importance_estimate(log_zq, log_ratio)),
                      (tally.rejection(), evidence.rejection_estimate(log_zq, accepted))):
        for x, y in ((got.log_Z, want.log_Z), *zip(got.ci, want.ci, strict=True)):
            assert x == y or math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-12), (got, want)
    plain, want_plain = tally.rejection_plain(), evidence.rejection_plain(log_zq, accepted)
    assert plain == want_plain or math.isclose(plain, want_plain, rel_tol=1e-12)


def test_keep_false_streams_the_same_samples_and_estimates(files):
    lm = maxarpa.load(files[0])
    lattice = Lattice.from_json_file(files[1])
    kept = sample(lm, lattice, 3000, 11, batch=50)
    streamed: list[tuple[list[str], float]] = []
    light = sample(lm, lattice, 3000, 11, batch=50, keep=False,
                   on_sample=lambda tokens, log_p: streamed.append((tokens, log_p)))
    assert kept.refinements > 0  # several ln q(X) groups, not only the frozen q
    assert streamed == list(zip(kept.samples, kept.log_p, strict=True))
    assert light.samples == [] and light.log_p == [] and light.trace.ratios == []
    assert (light.trials, light.acceptance_rate, light.states, light.adapted_at_trial,
            light.trace.frozen_from) == (kept.trials, kept.acceptance_rate, kept.states,
                                         kept.adapted_at_trial, kept.trace.frozen_from)
    for a, b in ((light.log_Z, kept.log_Z), (light.log_Z_rejection, kept.log_Z_rejection),
                 (light.log_Z_unweighted, kept.log_Z_unweighted),
                 *zip(light.log_Z_ci, kept.log_Z_ci, strict=True)):
        assert math.isclose(a, b, rel_tol=0, abs_tol=1e-9)


def _cli_peak(files, n: int, monkeypatch, lattice: int = 1) -> int:
    with open(os.devnull, "w") as sink:
        monkeypatch.setattr(sys, "stdout", sink)
        tracemalloc.start()
        try:
            code = cli.main(["sample", "--lm", str(files[0]), "--lattice", str(files[lattice]),
                             "-n", str(n), "--jsonl", "--seed", "3"])
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            monkeypatch.undo()
    assert code == 0
    return peak


def test_jsonl_sampling_does_not_grow_with_n(files, monkeypatch):
    _cli_peak(files, 10, monkeypatch)  # imports and caches, once
    small, large = _cli_peak(files, 2000, monkeypatch), _cli_peak(files, 60000, monkeypatch)
    assert large < 1.5 * small, (small, large)  # 30x the samples: 8.5 -> 8.5 MB (18 before)


def test_the_tally_holds_one_entry_per_ln_q_value():
    tally = evidence.GroupedTrials()
    for t in range(10_000):
        tally.add(-5.0 if t < 100 else -4.0, -0.1, t % 2 == 0)
    lz, counts, acc = tally._arrays()
    assert lz.tolist() == [-5.0, -4.0] and counts.tolist() == [100, 9900]
    assert np.array_equal(acc, [50, 4950])


def test_word_lattice_samples_are_drawn_in_chunks_of_one_generator(files, monkeypatch, capsys):
    lm = maxarpa.load(files[0])
    wl = read_word_lattice(files[2])
    argv = ["sample", "--lm", str(files[0]), "--lattice", str(files[2]), "-n", "20",
            "--jsonl", "--seed", "5"]
    assert cli.main(argv) == 0
    whole = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert whole == [p.to_json() for p in dag_sample(lm, wl, 20, 5)]  # as before, N <= chunk
    monkeypatch.setattr(word_lattice_cli, "SAMPLE_CHUNK", 7)
    assert cli.main(argv) == 0
    chunked = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    rng = np.random.default_rng(5)
    want = [p.to_json() for m in (7, 7, 6) for p in dag_sample(lm, wl, m, rng)]
    assert chunked == want and len(chunked) == 20


def test_word_lattice_jsonl_sampling_does_not_grow_with_n(files, monkeypatch):
    monkeypatch.setattr(word_lattice_cli, "SAMPLE_CHUNK", 1000)
    _cli_peak(files, 10, monkeypatch, lattice=2)
    monkeypatch.setattr(word_lattice_cli, "SAMPLE_CHUNK", 1000)
    small = _cli_peak(files, 2000, monkeypatch, lattice=2)
    monkeypatch.setattr(word_lattice_cli, "SAMPLE_CHUNK", 1000)
    large = _cli_peak(files, 30000, monkeypatch, lattice=2)
    assert large < 1.5 * small, (small, large)  # 15x the samples
