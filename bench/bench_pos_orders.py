"""Tagging by order (issue 34, "Tagging at high order"): where a `tag --file` run's CPU goes.

Why a bench of its own: bench_pos measures every method and checks against the numpy DP, which
takes minutes per order; this one answers the issue's question in one short run: per order,
the whole process `arsdecode tag --file` against NLTK TnT in this process on the same
sentences (CPU seconds, so the ratio holds on a loaded machine), and the stages of the same
work in process (model load, flattening the lattices, the compiled DP's first call, which
fills the transition cache, and a warm second call) with the DP's counts per token: merged
states, (state, candidate) pairs, candidates, transitions computed (a tag model's are dense
rows, each V transitions filled at once: their count is given too). Each whole-process run
must print the same tags as the in-process call.

The sentences: the first --sentences of the UD English Web Treebank test set (out of domain
for the WSJ-trained models), as bench_pos --test ewt writes them; the models: data_prep.pos_data
--out DIR (tags.N.npz, emissions.json.gz, train.tsv).

`--a-tree DIR` (a checkout of another revision, its compiled core built, e.g. main) runs the
same whole-process `tag` from DIR too, A and B alternating within each repeat (A first on odd
repeats), so both sides see the same load: speed is read as each side's x TnT of this run.
Each side's in-process stages and per-token counts are printed too, A's run by A's own
code in a fresh process: a change may speed the warm DP and slow the first call, which is
what a whole `tag` process runs.

Usage: python -m bench.bench_pos_orders [--pos-dir work/pos] [--orders 3 5 7 9]
                                        [--sentences 1500] [--repeat 3] [--a-tree DIR]
                                        [--doc]   (docs/performance.md, `bench:pos-orders`)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def child_cpu(cmd: list[str], cwd: Path) -> tuple[str, float, int]:
    """stdout, user + system CPU seconds and peak RSS (KiB) of a fresh process."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=cwd)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed")
    return out, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def tnt_cpu(pos_dir: Path, words: list[list[str]], repeat: int) -> float:
    """Best CPU seconds of NLTK TnT (N=1000, trained on pos_dir/train.tsv) over `words`."""
    from nltk.tag.tnt import TnT  # type: ignore[import-untyped]

    from arsdecode.tasks.pos.evaluation import read_tagged

    tagger = TnT(N=1000)
    tagger.train(read_tagged(pos_dir / "train.tsv"))
    best = float("inf")
    for _ in range(repeat):
        c0 = time.process_time()
        for ws in words:
            tagger.tag(ws)
        best = min(best, time.process_time() - c0)
    return best


def stages(pos_dir: Path, n: int, words: list[list[str]]) -> dict[str, float]:
    """CPU seconds of each in-process stage at order n, and the DP's counts (totals)."""
    import maxarpa
    from arsdecode.methods.fast_full import full_dp, run_flat
    from arsdecode.tasks.pos.emissions import TnTEmissions
    from arsdecode.tasks.pos.tag_many import flatten

    out: dict[str, float] = {}
    c = time.process_time()
    lm = maxarpa.load(pos_dir / f"tags.{n}.npz")
    em = TnTEmissions.load(pos_dir / "emissions.json.gz")
    out["load"] = time.process_time() - c
    c = time.process_time()
    flat, _ = flatten(lm, em, words)
    out["flatten"] = time.process_time() - c
    c = time.process_time()
    dp = full_dp(lm)
    out["dp_setup"] = time.process_time() - c
    c = time.process_time()
    run_flat(lm, flat)
    out["dp_first"] = time.process_time() - c
    c = time.process_time()
    res = run_flat(lm, flat)
    out["dp_warm"] = time.process_time() - c
    out["states"] = float(res.dp_states.sum())
    out["pairs"] = float(res.pairs.sum())
    out["cands"] = float(len(flat.cand_ids))
    out["transitions"] = float(dp.cache_size())  # dense (tags): V per row filled
    out["rows"] = out["transitions"] / lm.trie.vocab_size
    out["cache_mib"] = dp.cache_bytes() / 2**20
    return out


def row_text(st: dict[str, float] | None, tokens: int) -> str:
    """A `stages` result as the table's stage and per-token columns."""
    if st is None:
        return "(stages not run)"
    return (f"{st['load']:.2f}, {st['flatten']:.2f}, {st['dp_setup']:.2f}, {st['dp_first']:.2f},"
            f" {st['dp_warm']:.2f} | {st['states'] / tokens:.1f}, {st['pairs'] / tokens:.1f},"
            f" {st['cands'] / tokens:.2f}, {st['transitions'] / tokens:.1f},"
            f" {st['rows'] / tokens:.2f} | {st['cache_mib']:.0f}")


def stages_in(tree: Path, pos_dir: Path, n: int, words_file: Path) -> dict[str, float] | None:
    """`stages` run by another checkout's own code (its bench and compiled core) in a fresh
    process, or None when that checkout's bench has no `stages` of this signature. Why: a
    change can make the warm DP faster and the first call, which a whole `tag` process is,
    slower; A's stages beside B's show which (issue 34: the last-words bound did just that)."""
    code = ("import json, sys\nfrom pathlib import Path\n"
            "from bench.bench_pos_orders import stages\n"
            "words = [l.split() for l in Path(sys.argv[3]).read_text('utf-8').splitlines()]\n"
            "print(json.dumps(stages(Path(sys.argv[1]), int(sys.argv[2]), words)))")
    proc = subprocess.run([sys.executable, "-c", code, str(pos_dir.resolve()), str(n),
                           str(words_file.resolve())], cwd=tree.resolve(), capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(tree.resolve())})
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pos-dir", type=Path, default=REPO / "work" / "pos")
    ap.add_argument("--orders", type=int, nargs="+", default=[3, 5, 7, 9])
    ap.add_argument("--sentences", type=int, default=1500)
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    ap.add_argument("--a-tree", type=Path, default=None,
                    help="another checkout whose `tag` runs alternating with this tree's")
    ap.add_argument("--doc", action="store_true", help="write docs/performance.md's section")
    args = ap.parse_args()
    from data_prep.ewt import default_ewt_dir, ewt_file, read_conllu

    test = read_conllu(ewt_file(default_ewt_dir(), "test"))[: args.sentences]
    words = [[w for w, _ in s] for s in test]
    tokens = sum(map(len, words))
    words_file = args.pos_dir / "test.ewt.words.txt"
    words_file.write_text("".join(" ".join(ws) + "\n" for ws in words), encoding="utf-8")
    # The whole processes first, while this process is small: a child's peak RSS counts the
    # pages it shared with this one when forked (Linux folds them into ru_maxrss at exec).
    floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    whole: dict[int, tuple[float, int]] = {}
    whole_a: dict[int, tuple[float, int]] = {}
    trees = [REPO] if args.a_tree is None else [REPO, args.a_tree.resolve()]
    for n in args.orders:
        # From a repository root (cwd): `-m` puts it first on sys.path, so that tree runs.
        cmd = [sys.executable, "-m", "arsdecode", "tag", "--file",
               str(words_file.resolve()), "--models", str(args.pos_dir.resolve()),
               "--order", str(n)]
        got_of: dict[Path, str] = {}
        for r in range(args.repeat):
            for tree in trees if r % 2 == 0 else trees[::-1]:
                stdout, cpu, peak = child_cpu(cmd, tree)
                side = whole if tree == REPO else whole_a
                best, rss = side.get(n, (float("inf"), 0))
                side[n] = (min(best, cpu), max(rss, peak))
                got = [[tok.rsplit("/", 1)[0] for tok in line.split()]
                       for line in stdout.splitlines()]
                assert got == words, f"{tree}: the whole process tagged other sentences"
                got_of[tree] = stdout
        if len(got_of) == 2 and len(set(got_of.values())) != 1:
            print(f"n={n}: A and B tag differently (tied optima may differ, see FullDP.run)")
    tnt = tnt_cpu(args.pos_dir, words, args.repeat)
    print(f"EWT test, first {len(words)} sentences, {tokens} tokens; NLTK TnT (N=1000, best of"
          f" {args.repeat}): {tnt:.2f} CPU-s, {tokens / tnt:,.0f} tokens/CPU-s; peak RSS of the"
          f" bench when it forked the children: {floor / 1024:.0f} MiB")
    print("n | whole process CPU-s, tok/CPU-s, x TnT, peak RSS | load, flatten, DP setup,"
          " DP first, DP warm (CPU-s) | per token: states, pairs, candidates, transitions"
          " computed, dense rows filled | cache MiB")
    for n, (best, rss) in whole_a.items():
        st = stages_in(args.a_tree, args.pos_dir, n, words_file)
        print(f"A {n} | {best:.2f}, {tokens / best:,.0f}, x{tnt / best:.2f}, {rss / 1024:.0f} MiB"
              f" | {row_text(st, tokens)} (A: {args.a_tree})", flush=True)
    rows = []
    for n in args.orders:
        best, rss = whole[n]
        st = stages(args.pos_dir, n, words)
        rows.append((n, best, rss, st))
        print(f"{n} | {best:.2f}, {tokens / best:,.0f}, x{tnt / best:.2f}, {rss / 1024:.0f} MiB"
              f" | {row_text(st, tokens)}", flush=True)
    if args.doc:
        from bench.perf_doc import write_section

        write_section("pos-orders", markdown(rows, tnt, tokens, len(words), args.repeat,
                                             sys.argv[1:]))
    return 0


def markdown(rows: list[tuple[int, float, int, dict[str, float]]], tnt: float, tokens: int,
             sentences: int, repeat: int, argv: list[str]) -> str:
    """docs/performance.md's `pos-orders` section (issue 34): each order's whole-process
    `tag --file` beside NLTK TnT timed in the same run, with its peak RSS and DP counts."""
    import datetime

    cmd = " ".join(["python -m bench.bench_pos_orders", *argv])
    lines = [f"Generated by `{cmd}` on {datetime.date.today().isoformat()}, load average "
             f"{os.getloadavg()[0]:.2f} (2 cores): UD EWT test, first {sentences} sentences, "
             f"{tokens:,} tokens, best CPU-s of {repeat}. Anchor: NLTK TnT (N=1000, trained on "
             f"the same train.tsv) in the same run, {tnt:.2f} CPU-s, {tokens / tnt:,.0f} "
             "tokens/CPU-s. x TnT above 1 is faster than TnT. The whole process includes "
             "start-up and model load; counts are per token of the compiled full DP, whose "
             "transitions a tag model fills a dense row at a time (V transitions each, "
             "_dprows.pxi).", "",
             "| order | CPU-s | tokens/CPU-s | x TnT | peak RSS MiB | DP warm CPU-s | "
             "states/token | pairs/token | transitions/token | rows/token |", "|---" * 10 + "|"]
    for n, best, rss, st in rows:
        lines.append(f"| {n} | {best:.2f} | {tokens / best:,.0f} | {tnt / best:.2f} | "
                     f"{rss / 1024:.0f} | {st['dp_warm']:.2f} | {st['states'] / tokens:.1f} | "
                     f"{st['pairs'] / tokens:.1f} | {st['transitions'] / tokens:.1f} | "
                     f"{st['rows'] / tokens:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
