"""Benchmark maxarpa against KenLM on the same ARPA file, in the same run.

Prints seconds and peak memory of `maxarpa convert` next to KenLM's `build_binary`, the load
time of the MAX-ARPA file next to re-reading the ARPA and recomputing the bounds, the load
time and resident memory (private vs shared file-backed) of the binary mapped vs copied, and the
throughput of 1M random batch queries (log10p, max_log10p) next to KenLM's Python
per-query scoring. Ratios are what to read: absolute times are noisy on shared machines.

Usage: python -m bench.bench_maxarpa [ARPA]   (default: a 5-gram trained with lmplz on
state_union + brown + abc + webtext into work/bench/, built on first use)
       python -m bench.bench_maxarpa --digest [MODEL ...]   (only the digest check's share of
       the load, issue 19; default: the shipped 5-gram, as MAX-ARPA and as .npz)
       python -m bench.bench_maxarpa --convert [--repeat N] [--baseline-tree DIR] [ARPA]
       (issue 34: only `convert --binary` of the ARPA against `build_binary`: time, peak RSS
       and file size, each phase's time and peak in one process, and with --baseline-tree the
       same conversion run from another checkout (A/B, e.g. /work/main); each tool run N
       times interleaved, the fastest time and largest peak kept; JSON to
       work/bench/convert.json, compared with the previous run's ratios there: one more than
       10% worse exits 1, keeping the stored run and writing this one to convert.latest.json;
       --doc also writes the table into docs/performance.md, `bench:conversion` markers)
"""

from __future__ import annotations

import filecmp
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.maxarpa_report import convert_markdown, digest_share, main_digest

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / "work" / "bench"


def run_measured(cmd: list[str], cwd: Path | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one child process."""
    seconds, mib, _ = run_measured_cpu(cmd, cwd)
    return seconds, mib


def run_measured_cpu(cmd: list[str], cwd: Path | None = None) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MiB) and CPU seconds (user + system) of one child process.
    (CPU time is the steadier figure on a shared machine: waiting for a core is not in it.)"""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{err}")
    return seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def default_arpa() -> Path:
    from data_prep.corpus import corpus_sentences
    from data_prep.lmplz import train_arpa

    arpa = WORK / "big5.arpa"
    if arpa.exists():
        return arpa
    WORK.mkdir(parents=True, exist_ok=True)
    print("training the benchmark 5-gram (state_union+brown+abc+webtext) ...", file=sys.stderr)
    sents = (
        " ".join(s) for name in ("state_union", "brown", "abc", "webtext")
        for s in corpus_sentences(name)
    )
    return train_arpa(sents, 5, arpa, extra_args=["--discount_fallback"], memory="4G")


def random_queries(model, n_queries: int, rng: np.random.Generator, text: Path):
    """(context, word) pairs from real text: random positions, random context lengths."""
    ids: list[int] = []
    bos = model.word_id("<s>")
    with open(text, encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            ids.append(bos)
            ids.extend(model.ids(line.split()).tolist())
            if i > 200_000:
                break
    seq = np.asarray(ids, dtype=np.int64)
    n1 = model.order - 1
    pos = rng.integers(n1, len(seq), size=n_queries)
    words = seq[pos]
    ctx = np.stack([seq[pos - n1 + j] for j in range(n1)], axis=1)
    keep = rng.integers(0, n1 + 1, size=n_queries)  # context lengths 0..n-1
    ctx[np.arange(n1)[None, :] < (n1 - keep)[:, None]] = -1
    return ctx, words


def kenlm_rate(arpa_binary: Path, model, ctx: np.ndarray, words: np.ndarray, k: int) -> float:
    """Queries per second of kenlm's Python API, scoring (context, word) one at a time."""
    import kenlm

    km = kenlm.Model(str(arpa_binary))
    vocab = model.vocab
    state, out = kenlm.State(), kenlm.State()
    start = time.perf_counter()
    for row, w in zip(ctx[:k].tolist(), words[:k].tolist()):
        km.NullContextWrite(state)
        for c in row:
            if c >= 0:
                km.BaseScore(state, vocab[c], out)
                state, out = out, state
        km.BaseScore(state, vocab[w], out)
    return k / (time.perf_counter() - start)


RSS_SCRIPT = """
import sys, numpy as np, maxarpa
m = maxarpa.load(sys.argv[1], mmap=sys.argv[2] == "1")
rng = np.random.default_rng(0)
ctx = np.sort(rng.integers(-1, len(m.vocab), size=(200_000, m.order - 1)), axis=1)
m.max_log10p_batch(ctx, rng.integers(0, len(m.vocab), size=200_000))
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
print(*(int(status[k].split()[0]) // 1024 for k in ("VmRSS", "RssAnon", "RssFile")))
"""


def resident_memory(binary: Path, mmap: bool) -> tuple[int, int, int]:
    """Resident, private (anonymous) and file-backed MiB of a process that loaded `binary`
    and answered 200k bound queries. File-backed pages of a mapping are shared by every
    process that maps the same file; private pages are per process."""
    out = subprocess.run([sys.executable, "-c", RSS_SCRIPT, str(binary), "1" if mmap else "0"],
                         capture_output=True, text=True, check=True, cwd=REPO).stdout.split()
    rss, anon, file_backed = (int(x) for x in out)
    return rss, anon, file_backed


CONVERT_SLACK = 1.10  # a ratio more than 10% worse than the stored previous run's is flagged


def convert_binary_cmd(arpa: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "maxarpa", "convert", "--binary", "--quiet", str(arpa),
            str(out)]


def run_in_tree(cmd: list[str], tree: Path) -> tuple[float, float, float]:
    """`run_measured` run from `tree` with only it on the import path (an A/B against another
    checkout's code; its compiled modules must be built there). From `tree` because `python
    -m` puts the working directory first on the path."""
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(tree)
    try:
        return run_measured_cpu(cmd, cwd=tree)
    finally:
        if old is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old


def convert_phases(script: str, arpa: Path, out: Path, tree: Path) -> list[list[str]]:
    """(name, seconds, peak MiB[, CPU seconds]) of each phase of one conversion, `script`
    run in a child with only `tree` on the import path (convert_phases.PHASES_SCRIPT of that
    tree; an older one prints no CPU seconds)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    phases = subprocess.run([sys.executable, "-c", script, str(arpa), str(out)],
                            capture_output=True, text=True, check=True, cwd=tree,
                            env=env).stdout
    return [line.split("\t") for line in phases.splitlines() if line.count("\t") in (2, 3)]


def main_convert(args: list[str]) -> None:
    """`--convert`: issue 34's conversion figures, each against build_binary in this run."""
    from bench.convert_phases import PHASES_SCRIPT
    from data_prep.lmplz import find_tool

    tree, repeat, doc, argv = None, 1, False, list(args)
    while args[:1] in (["--baseline-tree"], ["--repeat"], ["--doc"]):
        if args[0] == "--doc":
            doc, args = True, args[1:]
            continue
        if args[0] == "--repeat":
            repeat = int(args[1])
        else:
            tree = Path(args[1]).resolve()
        args = args[2:]
    arpa = Path(args[0]) if args else default_arpa()
    WORK.mkdir(parents=True, exist_ok=True)
    arpa = arpa.resolve()
    kenlm_out, ours, base = (WORK / "convert.kenlm.binary", WORK / "convert.npz",
                             WORK / "convert.baseline.npz")
    r: dict[str, float] = {}
    runs: dict[str, list[tuple[float, float, float]]] = {
        "build_binary": [], "convert_binary": [], "baseline": []}
    for _ in range(repeat):  # interleaved, so that each tool sees the same machine load
        runs["build_binary"].append(run_measured_cpu(
            [str(find_tool("build_binary")), str(arpa), str(kenlm_out)]))
        runs["convert_binary"].append(run_measured_cpu(convert_binary_cmd(arpa, ours)))
        if tree is not None:
            runs["baseline"].append(run_in_tree(convert_binary_cmd(arpa, base), tree))
    for name, measured in runs.items():
        if measured:  # the fastest run's time (least disturbed), the largest peak
            r[f"{name}_s"] = min(t for t, _, _ in measured)
            r[f"{name}_mib"] = max(m for _, m, _ in measured)
            r[f"{name}_cpu_s"] = min(c for _, _, c in measured)
    if tree is not None:
        r["baseline_file_mib"] = base.stat().st_size / 2**20
        r["identical_to_baseline"] = float(filecmp.cmp(base, ours, shallow=False))
        base.unlink()
    r["file_mib"], r["kenlm_file_mib"] = (ours.stat().st_size / 2**20,
                                          kenlm_out.stat().st_size / 2**20)
    rows = convert_phases(PHASES_SCRIPT, arpa, ours, REPO)
    for name, seconds, peak, *cpu in rows:
        r[f"phase_{name}_s"], r[f"phase_{name}_peak_mib"] = float(seconds), float(peak)
        if cpu:
            r[f"phase_{name}_cpu"] = float(cpu[0])
    base_rows: list[list[str]] = []
    if tree is not None and (tree / "bench" / "convert_phases.py").exists():
        # The other checkout's own phase script (its phases are its code's), same machine.
        import runpy

        script = runpy.run_path(str(tree / "bench" / "convert_phases.py"))["PHASES_SCRIPT"]
        base_rows = convert_phases(script, arpa, base, tree)
        base.unlink()
        for name, seconds, peak, *cpu in base_rows:
            r[f"baseline_phase_{name}_s"] = float(seconds)
            r[f"baseline_phase_{name}_peak_mib"] = float(peak)
            if cpu:
                r[f"baseline_phase_{name}_cpu"] = float(cpu[0])
    r["time_ratio"] = r["convert_binary_s"] / r["build_binary_s"]
    r["cpu_ratio"] = r["convert_binary_cpu_s"] / r["build_binary_cpu_s"]
    r["load_average"], r["arpa_mib"] = os.getloadavg()[0], arpa.stat().st_size / 2**20
    r["memory_ratio"] = r["convert_binary_mib"] / r["build_binary_mib"]
    r["file_ratio"] = r["file_mib"] / r["kenlm_file_mib"]
    print(f"ARPA: {arpa} ({arpa.stat().st_size / 2**20:.0f} MiB)")
    print(f"{'':30}{'maxarpa':>10}{'build_binary':>14}{'ratio':>8}{'goal':>7}")
    for label, key, unit, goal in (("convert --binary time", "s", "s", 1.0),
                                   ("CPU time (user + system)", "cpu_s", "s", 1.0),
                                   ("peak RSS", "mib", "MiB", 1.0)):
        ours_v, theirs = r[f"convert_binary_{key}"], r[f"build_binary_{key}"]
        print(f"{label + f' ({unit})':30}{ours_v:>10.2f}{theirs:>14.2f}"
              f"{ours_v / theirs:>8.2f}{goal:>7.1f}")
    print(f"{'file (MiB; KenLM probing)':30}{r['file_mib']:>10.1f}{r['kenlm_file_mib']:>14.1f}"
          f"{r['file_ratio']:>8.2f}{1.5:>7.1f}")
    if tree is not None:
        print(f"A/B against {tree}: {r['baseline_s']:.2f} s, {r['baseline_cpu_s']:.2f} CPU-s, "
              f"{r['baseline_mib']:.0f} MiB, {r['baseline_file_mib']:.1f} MiB file -> this tree "
              f"{r['convert_binary_s']:.2f} s, {r['convert_binary_cpu_s']:.2f} CPU-s "
              f"({r['baseline_cpu_s'] / r['convert_binary_cpu_s']:.2f}x less CPU), "
              f"{r['convert_binary_mib']:.0f} MiB; files byte-identical: "
              f"{bool(r['identical_to_baseline'])}")
    for title, table in (("phase (in one process)", rows), (
            f"baseline phases ({tree.name})" if tree is not None else "", base_rows)):
        if not table:
            continue
        print(f"{title:30}{'s':>10}{'peak MiB':>14}{'CPU s':>10}")
        for name, seconds, peak, *cpu in table:
            print(f"{name:30}{float(seconds):>10.2f}{float(peak):>14.0f}"
                  f"{float(cpu[0]) if cpu else float('nan'):>10.2f}")
    out = WORK / "convert.json"
    regressions = []
    if out.exists():
        previous = json.loads(out.read_text())
        for key in ("time_ratio", "memory_ratio", "file_ratio"):
            if key in previous and r[key] > previous[key] * CONVERT_SLACK:
                regressions.append(f"REGRESSION: {key} {previous[key]:.2f} -> {r[key]:.2f} "
                                   f"(more than {CONVERT_SLACK - 1:.0%} worse than {out})")
    kenlm_out.unlink()
    if regressions:  # the stored run stays the reference; this one is kept beside it
        out = WORK / "convert.latest.json"
    out.write_text(json.dumps(r, indent=1))
    print(f"raw results: {out}")
    if doc:
        from bench.perf_doc import write_section

        write_section("conversion", convert_markdown(r, argv, repeat, tree))
    if regressions:
        raise SystemExit("\n".join(regressions))


def main() -> None:
    if sys.argv[1:2] == ["--digest"]:
        main_digest([Path(p) for p in sys.argv[2:]])
        return
    if sys.argv[1:2] == ["--convert"]:
        main_convert(sys.argv[2:])
        return
    import maxarpa
    from data_prep.lmplz import find_tool

    arpa = Path(sys.argv[1]) if len(sys.argv) > 1 else default_arpa()
    WORK.mkdir(parents=True, exist_ok=True)
    binary = WORK / "bench.kenlm.binary"
    maxarpa_out = WORK / "bench.maxarpa"
    py = sys.executable
    results: dict[str, float] = {}
    results["build_binary_s"], results["build_binary_mib"] = run_measured(
        [str(find_tool("build_binary")), str(arpa), str(binary)]
    )
    results["convert_s"], results["convert_mib"] = run_measured(
        [py, "-m", "maxarpa", "convert", "--quiet", str(arpa), str(maxarpa_out)]
    )
    results["load_maxarpa_s"], results["load_maxarpa_mib"] = run_measured(
        [py, "-c", f"import maxarpa; maxarpa.load({str(maxarpa_out)!r})"]
    )
    binary_out = WORK / "bench.npz"
    run_measured([py, "-m", "maxarpa", "convert", "--binary", str(maxarpa_out), str(binary_out)])
    results["load_binary_s"], results["load_binary_mib"] = run_measured(
        [py, "-c", f"import maxarpa; maxarpa.load({str(binary_out)!r})"]
    )
    results["load_binary_mmap_s"], _ = run_measured(
        [py, "-c", f"import maxarpa; maxarpa.load({str(binary_out)!r}, mmap=True)"]
    )
    for mode, flag in (("copied", False), ("mmap", True)):
        rss, anon, file_backed = resident_memory(binary_out, flag)
        results[f"rss_{mode}_mib"], results[f"rss_anon_{mode}_mib"] = rss, anon
        results[f"rss_file_{mode}_mib"] = file_backed
    results["load_arpa_and_bound_s"], _ = run_measured(
        [py, "-c", f"import maxarpa; maxarpa.load({str(arpa)!r})"]
    )
    model = maxarpa.load(maxarpa_out)
    from maxarpa.checks import check_stored_bounds, check_structure

    start = time.perf_counter()
    check_structure(model.trie, "bench")
    check_stored_bounds(model.trie, model.vocab, "bench")
    results["load_checks_s"] = time.perf_counter() - start
    for name, path, mmap in (("maxarpa", maxarpa_out, False), ("binary", binary_out, False),
                             ("binary_mmap", binary_out, True)):
        share = digest_share(path, mmap=mmap, repeats=3)
        results[f"digest_{name}_s"], results[f"digest_share_{name}"] = (
            share["digest_s"], share["share"])
    results["ngrams"] = float(sum(model.counts))
    rng = np.random.default_rng(0)
    text = WORK / "queries.txt"
    if not text.exists():
        from data_prep.corpus import corpus_sentences

        with open(text, "w", encoding="utf-8") as fh:
            for s in corpus_sentences("state_union"):
                fh.write(" ".join(s) + "\n")
    ctx, words = random_queries(model, 1_000_000, rng, text)
    for name, fn in (("log10p", model.log10p_batch), ("max_log10p", model.max_log10p_batch)):
        fn(ctx[:1000], words[:1000])
        start = time.perf_counter()
        fn(ctx, words)
        results[f"{name}_qps"] = len(words) / (time.perf_counter() - start)
        start = time.perf_counter()
        for lo in range(0, len(words), 1000):  # decoder-sized batches
            fn(ctx[lo : lo + 1000], words[lo : lo + 1000])
        results[f"{name}_qps_batch1000"] = len(words) / (time.perf_counter() - start)
    results["kenlm_python_qps"] = kenlm_rate(binary, model, ctx, words, 100_000)
    r = results
    print(f"ARPA: {arpa} ({int(r['ngrams']):,} n-grams, order {model.order})")
    print(f"{'':34}{'maxarpa':>12}{'KenLM':>12}{'ratio':>8}")
    print(f"{'convert vs build_binary (s)':34}{r['convert_s']:>12.2f}{r['build_binary_s']:>12.2f}"
          f"{r['convert_s'] / r['build_binary_s']:>8.2f}")
    print(f"{'peak memory (MiB)':34}{r['convert_mib']:>12.0f}{r['build_binary_mib']:>12.0f}"
          f"{r['convert_mib'] / r['build_binary_mib']:>8.2f}")
    arpa_mib = arpa.stat().st_size / 2**20
    print(f"{'convert peak vs ARPA size (MiB)':34}{r['convert_mib']:>12.0f}{arpa_mib:>12.0f}"
          f"{r['convert_mib'] / arpa_mib:>8.2f}   (KenLM column: the ARPA file; goal <= 2)")
    print(f"{'load MAX-ARPA vs ARPA+bounds (s)':34}{r['load_maxarpa_s']:>12.2f}"
          f"{r['load_arpa_and_bound_s']:>12.2f}"
          f"{r['load_maxarpa_s'] / r['load_arpa_and_bound_s']:>8.2f}   (KenLM column: maxarpa)")
    print(f"{'load .npz vs ARPA+bounds (s)':34}{r['load_binary_s']:>12.2f}"
          f"{r['load_arpa_and_bound_s']:>12.2f}"
          f"{r['load_binary_s'] / r['load_arpa_and_bound_s']:>8.3f}   (KenLM column: maxarpa)")
    print(f"{'load-time bound checks vs .npz load':34}{r['load_checks_s']:>12.3f}"
          f"{r['load_binary_s']:>12.3f}{r['load_checks_s'] / r['load_binary_s']:>8.3f}"
          "   (KenLM column: whole .npz load, checks included)")
    for name in ("maxarpa", "binary", "binary_mmap"):
        print(f"{'digest check share, ' + name:34}{r['digest_share_' + name]:>12.1%}"
              "   (of the whole load; issue 19 goal < 10%)")
    print(f"{'load .npz mmap vs copied (s)':34}{r['load_binary_mmap_s']:>12.3f}"
          f"{r['load_binary_s']:>12.3f}"
          f"{r['load_binary_mmap_s'] / r['load_binary_s']:>8.3f}   (KenLM column: copied)")
    for what in ("rss", "rss_anon", "rss_file"):
        label = {"rss": "resident", "rss_anon": "private", "rss_file": "file-backed (shared)"}
        print(f"{label[what] + ' MiB, mmap vs copied':34}{r[what + '_mmap_mib']:>12.0f}"
              f"{r[what + '_copied_mib']:>12.0f}"
              f"{r[what + '_mmap_mib'] / max(r[what + '_copied_mib'], 1):>8.2f}"
              "   (KenLM column: copied; after 200k queries)")
    for name in ("log10p", "max_log10p"):
        print(f"{name + ' 1M batch (queries/s)':34}{r[name + '_qps']:>12,.0f}"
              f"{r['kenlm_python_qps']:>12,.0f}{r[name + '_qps'] / r['kenlm_python_qps']:>8.1f}")
        print(f"{name + ' batches of 1000 (q/s)':34}{r[name + '_qps_batch1000']:>12,.0f}"
              f"{r['kenlm_python_qps']:>12,.0f}"
              f"{r[name + '_qps_batch1000'] / r['kenlm_python_qps']:>8.1f}")
    out = WORK / "bench_maxarpa.json"
    out.write_text(json.dumps(results, indent=1))
    print(f"raw results: {out}")


if __name__ == "__main__":
    main()
