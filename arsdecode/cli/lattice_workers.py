"""`--workers N` for runs over many lattices: the jobs on a local Dask cluster (issue 32).

Why Dask: `batch` already runs its items on Dask workers (`batch.client.dask_client`: quiet,
single-threaded worker processes that ignore the terminal's Ctrl-C), and a lattice run uses the
same cluster. Each worker process builds the target once per LM scale and keeps it for the run
(`_TARGETS`, keyed by the run's token), as `batch` workers keep their model. Results come back
in input order, so the client writes exactly what a one-process run writes.
"""

from __future__ import annotations

import argparse
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

Solve = Callable[[argparse.Namespace, str, Any, Callable[[float], Any]], Any]
"""`cli.lattice_list.solve`, passed in (this module sits below it: no import circle)."""

_TARGETS: dict[str, dict[float, Any]] = {}
"""Per worker process: a run's targets by LM scale (the run's token as key)."""
_MODELS: dict[str, dict[Any, Any]] = {}


def solve_on_worker(args: argparse.Namespace, task: str, job: Any, token: str,
                    solve: Solve) -> Any:
    """One job on a worker, with the run's targets built once in this process."""
    from arsdecode.cli.target import build, target_spec

    targets = _TARGETS.setdefault(token, {})
    models = _MODELS.setdefault(token, {})

    def target_for(lm_scale: float) -> Any:
        if lm_scale not in targets:
            targets[lm_scale] = build(target_spec(args, lm_weight=lm_scale), models)
        return targets[lm_scale]

    return solve(args, task, job, target_for)


def run_on_dask(args: argparse.Namespace, task: str, jobs: Sequence[Any], workers: int,
                solve: Solve) -> Iterator[Any]:
    """The jobs' outcomes, in order, from `workers` local Dask worker processes."""
    from arsdecode.batch.client import dask_client

    client, cluster = dask_client(workers, None)
    token = uuid.uuid4().hex
    try:
        futures = client.map(solve_on_worker, [args] * len(jobs), [task] * len(jobs), jobs,
                             [token] * len(jobs), [solve] * len(jobs), pure=False)
        for future in futures:
            yield future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
