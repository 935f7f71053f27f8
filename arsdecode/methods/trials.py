"""The record of ARS sampling's trials: a per-trial trace, or a tally of constant size.

Why two ways: the trace (`SampleTrace`: every trial's ratio, acceptance, automaton size, ln q_t(X),
ln p, ln q) is what the experiments plot, and it costs about 200 bytes a trial; a streamed run
(`sample --jsonl -n 1000000`) needs none of it, only the evidence estimates and the acceptance
rate, and must run in constant memory (issue 29). The tally (`keep=False`) groups the trials by
ln q_t(X), which changes only when q is refined, so it holds one entry per refinement batch and
nothing per trial once q is frozen; `evidence.GroupedTrials` computes the same estimates from it
(equal to the trace's up to float64 summation order).
"""

from __future__ import annotations

from collections import deque

import numpy as np

import arsdecode.methods.evidence as evidence
from arsdecode.methods.results import SampleTrace


class TrialLog:
    """Trials as `_adaptive_rejection` draws them: `add` one, then ask for the window's
    acceptance rate, the counts, the trace and the evidence estimates."""

    def __init__(self, keep: bool, ar_window: int) -> None:
        self.keep = keep
        self.trials = 0
        self.accepted = 0
        self._window: deque[bool] = deque(maxlen=ar_window)
        self._ar_window = ar_window
        self._grouped = evidence.GroupedTrials()
        self._lists: tuple[list, ...] = ([], [], [], [], [], [])  # the trace's six lists

    def add(self, ratio: float, ok: bool, n_states: int, log_zq: float, log_p: float,
            log_q: float) -> None:
        self.trials += 1
        self.accepted += ok
        self._window.append(ok)
        if self.keep:
            for values, x in zip(self._lists, (ratio, ok, n_states, log_zq, log_p, log_q),
                                 strict=True):
                values.append(x)
        else:
            self._grouped.add(log_zq, log_p - log_q, ok)

    def window_rate(self) -> float | None:
        """The acceptance rate over the last `ar_window` trials; None before there are that
        many."""
        if self.trials < self._ar_window:
            return None
        return sum(self._window) / len(self._window)

    def trace(self, frozen_from: int) -> SampleTrace:
        """The per-trial trace (empty lists when not kept; `frozen_from` still counts
        trials)."""
        ratios, accepted, states, log_zq, log_p, log_q = self._lists
        return SampleTrace(ratios, accepted, states, log_zq, frozen_from, log_p, log_q)

    def evidence(self) -> tuple[evidence.Evidence, evidence.Evidence, float]:
        """(importance estimate, rejection estimate, ln of the plain rejection mean)."""
        if not self.keep:
            g = self._grouped
            return g.importance(), g.rejection(), g.rejection_plain()
        _, accepted, _, log_zq, log_p, log_q = self._lists
        log_ratio = np.asarray(log_p, dtype=float) - np.asarray(log_q, dtype=float)
        return (evidence.importance_estimate(log_zq, log_ratio),
                evidence.rejection_estimate(log_zq, accepted),
                evidence.rejection_plain(log_zq, accepted))

    def acceptance_rate(self) -> float:
        return self.accepted / self.trials if self.trials else 0.0

