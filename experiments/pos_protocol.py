"""The fixed protocol of the POS experiment (experiments/pos_experiments.py).

Why a module of its own: the runner runs with these values and the page
(experiments/report/pos_markdown.py) states them; both read them here, so the page cannot
describe a protocol other than the one that ran.
"""

from __future__ import annotations

ORDERS = tuple(range(2, 10))
BUDGET_S = 600.0  # a full decoder projected to need more than this is "infeasible"
LITERAL_MAX_LAYER_PAIRS = 30_000_000  # ~4 GB of arrays in one layer of the literal DP
TARGET_AR, AR_WINDOW, BATCH = 0.6, 100, 10
SAMPLE_SENTENCES, SEED = 50, 2012
MAX_TRIALS = 100_000
