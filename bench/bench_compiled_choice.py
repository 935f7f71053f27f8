"""Numba (cache=True) or a compiled extension (Cython -> C++)? The n-gram walk, measured.

The representative kernel is maxarpa's batch walk (Model._walk: log10p and the max-backoff
bound over the trie, hash index included). Three implementations answer the same rows:
numpy (maxarpa today), the Cython extension (arsdecode.native) and numba with an on-disk cache
(bench/numba_walk.py), over the same flat tables. Printed, as ratios against numpy measured in
this run:
  - throughput at batch 1e6 (rows/s);
  - per-call time at batch 30 (a POS query is a few dozen rows);
  - cold start of a FRESH process (import + first call, model load included, as the CLI pays
    on every run), and for numba also the first run with an empty cache (after install).

Usage: python -m bench.bench_compiled_choice [MODEL]   (default: the embedded state_union 5-gram)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = REPO / "arsdecode" / "data" / "state_union.5gram.maxarpa.gz"

PRELUDE = """
import sys, numpy as np
import maxarpa
lm = maxarpa.load({model!r})
rng = np.random.default_rng(0)
v = lm.trie.vocab_size
ctx = rng.integers(0, v, (30, lm.order - 1)); w = rng.integers(0, v, 30)
"""
FIRST_CALL = {
    "numpy": "lm.log10p_batch(ctx, w); lm.max_log10p_batch(ctx, w)",
    "native": "from arsdecode.native import native_ngram\n"
              "nm = native_ngram(lm); nm.log_prob(ctx, w); nm.log_bound(ctx, w)",
    "numba": "from arsdecode.native import native_ngram\nfrom bench.numba_walk import numba_walk\n"
             "nm = native_ngram(lm)\n"
             "numba_walk(nm.core.arrays, nm.order, nm.vocab_size, ctx, w, False)\n"
             "numba_walk(nm.core.arrays, nm.order, nm.vocab_size, ctx, w, True)",
}


def queries(lm, b: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Rows from listed top-order n-grams, 15% of words replaced, random context lengths."""
    n = lm.order
    top = lm.trie.nodes[n - 1]
    rows = top.rows[top.listed].astype(np.int64)
    rows = rows[rng.integers(0, len(rows), b)]
    noise = rng.random(rows.shape) < 0.15
    rows[noise] = rng.integers(0, lm.trie.vocab_size, int(noise.sum()))
    ctx, word = rows[:, :-1].copy(), rows[:, -1].copy()
    lens = rng.integers(0, n, b)
    for i in range(n - 1):
        ctx[lens <= n - 2 - i, i] = -1
    return ctx, word


def best_of(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def fresh_process(model: Path, kind: str, env: dict[str, str] | None = None) -> float:
    code = PRELUDE.format(model=str(model))
    code += FIRST_CALL[kind] + "\n"
    t0 = time.perf_counter()
    # `python -c` puts its working directory first on sys.path: this checkout's packages
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=REPO)
    return time.perf_counter() - t0


def main() -> int:
    import maxarpa
    from arsdecode.native import native_ngram
    from bench.numba_walk import numba_walk
    from maxarpa.constants import LN10

    model = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_MODEL
    lm = maxarpa.load(model)
    nm = native_ngram(lm)
    rng = np.random.default_rng(1)
    print(f"model {model.name}: order {lm.order}, n-grams {sum(lm.counts)}")

    def numba(ctx, w, want_max):
        return numba_walk(nm.core.arrays, nm.order, nm.vocab_size, ctx, w, want_max)

    impls = {
        "numpy": lambda c, w, m: (lm.max_log10p_batch if m else lm.log10p_batch)(c, w),
        "native": lambda c, w, m: (nm.log_bound if m else nm.log_prob)(c, w),
        "numba": numba,
    }
    ctx, word = queries(lm, 1_000_000, rng)
    ref = {m: impls["numpy"](ctx, word, m) * LN10 for m in (False, True)}
    for name in ("native", "numba"):  # same answers before any timing
        for m in (False, True):
            got = impls[name](ctx, word, m)
            assert np.allclose(got, ref[m], rtol=1e-12, atol=1e-12, equal_nan=True), name

    print("\n== throughput, batch 1e6 (log_prob + log_bound), rows/s ==")
    base = None
    for name, f in impls.items():
        s = best_of(lambda f=f: (f(ctx, word, False), f(ctx, word, True)), 2)
        rate = 2e6 / s
        base = base or rate
        print(f"{name:8s} {rate / 1e6:8.2f} M rows/s   x{rate / base:6.1f} vs numpy")

    print("\n== per call, batch 30 (log_prob + log_bound) ==")
    small = [queries(lm, 30, rng) for _ in range(200)]
    base = None
    for name, f in impls.items():
        def loop(f=f):
            for c, w in small:
                f(c, w, False)
                f(c, w, True)
        s = best_of(loop, 3) / (2 * len(small))
        base = base or s
        print(f"{name:8s} {s * 1e6:8.1f} us/call   x{base / s:6.1f} vs numpy")

    print("\n== fresh process: import + model load + first call (seconds) ==")
    env_cold = dict(os.environ, NUMBA_CACHE_DIR=tempfile.mkdtemp(prefix="numba-cold-"))
    env_warm = dict(os.environ, NUMBA_CACHE_DIR=tempfile.mkdtemp(prefix="numba-warm-"))
    fresh_process(model, "numba", env_warm)  # fills the warm cache
    runs = {
        "numpy": lambda: fresh_process(model, "numpy"),
        "native": lambda: fresh_process(model, "native"),
        "numba (cached)": lambda: fresh_process(model, "numba", env_warm),
    }
    base = None
    for name, f in runs.items():
        s = best_of(f, 3)
        base = base or s
        print(f"{name:16s} {s:6.2f} s   +{s - base:5.2f} s over numpy")
    s = fresh_process(model, "numba", env_cold)
    print(f"{'numba (empty)':16s} {s:6.2f} s   +{s - base:5.2f} s over numpy"
          "  (first run after install)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
