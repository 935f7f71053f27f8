"""Word lattices within the memory budget (issue 29 B): k-best, posteriors and ARS on a DAG
either work within --memory-budget or refuse with one line naming the option, before the
memory is allocated; never a MemoryError traceback, even under an address-space cap.

The wide lattice: 2,000 distinct words from node 0 to node 1 (about 1,600 merged states at
node 1 with the embedded 5-gram), then 3,000 words to the final node 2: its expansion has
4.8M transitions at one node (hundreds of MB, over a minute to build), so a 64 MiB budget is
refused at node 1, in about a second. Memory figures: `python -m bench.bench_dag_memory`.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from arsdecode.api import DEFAULT_LM, load_lm
from arsdecode.errors import MemoryBudgetExceeded
from arsdecode.lattice import WordLattice
from arsdecode.methods import expansion_dp
from arsdecode.methods.ars import dag_ars_decode
from arsdecode.methods.expansion_kbest import dag_kbest
from arsdecode.methods.expansion_posteriors import dag_posteriors
from arsdecode.model import as_target_model

REPO = Path(__file__).resolve().parents[1]
CAP = 2560 << 20  # the 2.5 GB address-space cap


@pytest.fixture(scope="module")
def embedded():
    return load_lm(str(DEFAULT_LM))


@pytest.fixture(scope="module")
def wide(embedded, tmp_path_factory):
    vocab = [w for w in embedded.word_to_id if not w.startswith("<")]
    arcs = ([[0, 1, w, 0.0] for w in vocab[:2000]]
            + [[1, 2, w, -0.5] for w in vocab[2000:5000]])
    path = tmp_path_factory.mktemp("wide") / "wide.json"
    path.write_text(json.dumps({"start": 0, "finals": {"2": 0.0}, "arcs": arcs}))
    return path


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


@pytest.mark.parametrize("command", [
    ["decode", "--nbest", "10"],
    ["decode", "--nbest", "10", "--unique"],
    ["marginals"],
    ["decode", "--method", "ars"],
], ids=["nbest", "unique", "marginals", "ars"])
def test_over_the_budget_one_line_and_exit_2_under_a_cap(wide, command):
    """Before: k-best and marginals ignored --memory-budget and built the whole expansion
    (exit 0 after minutes, or a numpy _ArrayMemoryError traceback under the cap); ARS had no
    budget at all."""
    proc = subprocess.run(
        [sys.executable, "-m", "arsdecode", *command, "--lm", str(DEFAULT_LM), "--lattice",
         str(wide), "--memory-budget", "64"],
        capture_output=True, text=True, timeout=300, preexec_fn=_capped,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "memory budget of 64 MiB" in lines[0] and "--memory-budget" in lines[0]
    assert str(wide) in lines[0]
    if command[-1] == "ars":
        assert "--method full" in lines[0]
    if "--nbest" in command:
        assert proc.stdout == ""  # nothing half-written


def test_posteriors_need_the_states_not_the_transitions(embedded):
    """The chunked forward-backward runs within a budget below what the stored expansion's
    transitions alone take, and equals ln Z of the stored expansion; the posteriors of the
    arcs out of the start node sum to 1 (every path takes one)."""
    rng = np.random.default_rng(3)
    vocab = [w for w in embedded.word_to_id if not w.startswith("<")]
    arcs = [(u, u + 1, str(w), float(rng.uniform(-2, 0)))
            for u in range(30) for w in rng.choice(vocab, 40, replace=False)]
    arcs += [(u, u + 2, None, -1.0) for u in range(0, 29, 3)]  # epsilon skips
    wl = WordLattice.build(31, 0, {30: 0.0, 29: -2.0}, arcs)
    model = as_target_model(embedded)
    ex = expansion_dp.dag_expand(model, wl)
    stored = ex.n_transitions * expansion_dp.TRANSITION_BYTES
    budget = stored // 4
    with pytest.raises(MemoryBudgetExceeded, match="--memory-budget"):
        expansion_dp.dag_expand(model, wl, max_bytes=budget)
    post, log_z = dag_posteriors(embedded, wl, max_bytes=budget)
    want = expansion_dp.dag_log_partition(embedded, wl)
    assert abs(log_z - want) <= 1e-9 * (1 + abs(want))
    start = wl.src == 0
    assert abs(post[start].sum() - 1.0) <= 1e-9


def test_kbest_refuses_before_its_tables(embedded):
    """k-best of distinct paths: the (states x k) tables are checked before they are made."""
    vocab = [w for w in embedded.word_to_id if not w.startswith("<")]
    wl = WordLattice.build(4, 0, {3: 0.0}, [(u, u + 1, w, 0.0) for u in range(3)
                                           for w in vocab[100 * u:100 * u + 100]])
    ex = expansion_dp.dag_expand(as_target_model(embedded), wl)
    k = 10_000
    budget = ex.n_states * k * 32 // 2
    with pytest.raises(MemoryBudgetExceeded, match="smaller --nbest"):
        dag_kbest(embedded, wl, k, max_bytes=budget)
    assert len(dag_kbest(embedded, wl, 10, max_bytes=budget)) == 10


def test_ars_refuses_a_first_automaton_over_the_budget(embedded, wide):
    wl = WordLattice.from_json_obj(json.loads(wide.read_text()), source=str(wide))
    with pytest.raises(MemoryBudgetExceeded, match="--method full"):
        dag_ars_decode(embedded, wl, max_bytes=64 << 20)
