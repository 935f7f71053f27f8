"""Does `method="auto"` run the faster exact decoder? (issue 10: a validated cost rule)

auto runs the bound-pruned full DP on every lattice with a budget of (state, candidate) pairs
(`method_choice.full_pairs_budget`), and ARS on a lattice that exceeds it (see arsdecode/corpus.py).
For every lattice, both exact methods run (ARS, best of 3; the pruned full DP on the compiled
core on a *new* lattice: tables built, transition cache empty), each result is checked to have
the same ln p (to 1e-9), and auto itself is timed the same way. Printed per family: how often
auto's time was within 20% (+1 ms) of the faster method's, and auto's total time against an
oracle that always runs the faster one (ratio >= 1; 1.00 is perfect). A budget sweep then
simulates other budgets from the measured pairs and times (an abandoned DP costs its share
budget/pairs of the full DP's time, plus ARS).

Families: SMS lattices of the state_union test set (full candidate lists, and top-K = 3, 10,
30, 100, 300) and, if the POS models exist, POS lattices of the WSJ test set at orders 3, 5, 9.

Usage: python bench/bench_auto.py [--sms work/sms] [--pos work/pos] [--per-family 20]
  work/sms from `python -m data_prep.prepare_sms --out work/sms --corpora state_union`,
  work/pos from `python -m data_prep.pos_data --out work/pos`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def best_time(fn, repeats: int = 3) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def run_family(name: str, lm, lattices) -> dict:
    from arsdecode import corpus, fast_full, method_choice
    from arsdecode.ars import decode
    from arsdecode.native import _core, native_ngram

    # One call over the family in a process that has not built the full DP for this model
    # (what a CLI run pays): auto (which weighs the DP's set-up), always full, always ARS.
    calls = {}
    native_ngram(lm)  # the n-gram tables both methods share: built before any timing
    for method in ("auto", "full", "ars"):
        fast_full._DP.pop(lm, None)
        corpus._ENDING.pop(lm, None)
        t0 = time.perf_counter()
        corpus.decode_many(lm, lattices, method=method)
        calls[method] = time.perf_counter() - t0
    built = fast_full.full_dp(lm)  # from here on the set-up is paid: the budget decides
    rows, lens, keys, slots = built.arrays
    bits = int(len(slots)).bit_length() - 1

    def fresh_dp() -> None:  # tables built, transition cache empty: a new lattice of a corpus
        fast_full._DP[lm] = _core.FullDP(native_ngram(lm).core, rows, lens, keys, slots, bits)

    right = 0
    t_auto = t_oracle = t_ars = t_full = 0.0
    points = []
    full_chosen = 0
    for lat in lattices:
        ta, ra = best_time(lambda lat=lat: decode(lm, lat))
        fresh_dp()
        flat = fast_full.FlatLattices.from_lattices(lm, [lat])
        t0 = time.perf_counter()
        rf = fast_full.run_flat(lm, flat)
        tf = time.perf_counter() - t0
        if abs(ra.log_p - float(rf.score[0])) > 1e-9:
            raise SystemExit(f"{name}: methods disagree: {ra.log_p} vs {rf.score[0]}")
        fresh_dp()
        t0 = time.perf_counter()
        rx = corpus.decode(lm, lat)
        tx = time.perf_counter() - t0
        full_chosen += rx.method == "full"
        right += tx <= 1.2 * min(ta, tf) + 1e-3
        t_auto += tx
        t_oracle += min(ta, tf)
        t_ars += ta
        t_full += tf
        points.append({"pairs": int(rf.pairs[0]), "ars": ta, "full": tf, "auto": tx,
                       "auto_method": rx.method})
    n = len(lattices)
    return {"family": name, "lattices": n, "auto_right": right,
            "auto_vs_oracle": t_auto / t_oracle if t_oracle else float("nan"),
            "ars_s": t_ars, "full_s": t_full, "auto_s": t_auto,
            "full_chosen": full_chosen, "points": points, "cold_call": calls,
            "budget": method_choice.full_pairs_budget(lm)}


def budget_sweep(rows: list[dict]) -> None:
    """auto's simulated total time against the oracle's, for other budgets, per vocabulary
    kind (the two budgets are separate): a lattice within budget costs its full DP time, one
    over it the share budget/pairs of that time plus ARS."""
    for kind, prefix in (("word lattices (SMS)", "sms"), ("tag lattices (POS)", "pos")):
        points = [p for r in rows if r["family"].startswith(prefix) for p in r["points"]]
        if not points:
            continue
        print(f"{kind}: budget -> auto/oracle (simulated)")
        best = sum(min(p["full"], p["ars"]) for p in points)
        for budget in (1e3, 1e4, 3e4, 1e5, 2e5, 5e5, 1e6, 2e6, 1e7, 1e9):
            cost = sum(p["full"] if p["pairs"] <= budget
                       else p["full"] * budget / p["pairs"] + p["ars"] for p in points)
            print(f"  {budget:>8.0e}: {cost / best:.2f}")


def sms_families(path: Path, per_family: int):
    from arsdecode.tasks.sms import KeypadChannel
    from maxarpa.model import Model

    lm = Model.load(path / "lm.5.maxarpa")
    channel = KeypadChannel.from_vocab(lm.vocab)
    records = [json.loads(x) for x in open(path / "test.jsonl", encoding="utf-8")]
    records = [r for r in records if 4 <= len(r["observation"].split()) <= 10][:per_family]
    for top_k in (3, 10, 30, 100, 300, None):
        lats = [channel.build_lattice(r["observation"], top_k=top_k) for r in records]
        yield f"sms top-K={top_k or 'all'}", lm, lats


def pos_families(path: Path, per_family: int):
    from arsdecode.tasks.pos_models import load_models
    from data_prep.pos_data import default_data_dir, read_conll2000

    sents = read_conll2000(default_data_dir(), "test")[:per_family]
    for order in (3, 5, 9):
        lm, em = load_models(path, order)
        yield f"pos n={order}", lm, [em.lattice([w for w, _ in s]) for s in sents]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sms", type=Path, default=REPO / "work" / "sms")
    ap.add_argument("--pos", type=Path, default=REPO / "work" / "pos")
    ap.add_argument("--per-family", type=int, default=20)
    ap.add_argument("--json", type=Path, help="write every lattice's pairs and times here")
    args = ap.parse_args()
    rows = []
    if (args.sms / "lm.5.maxarpa").is_file():
        rows += [run_family(*f) for f in sms_families(args.sms, args.per_family)]
    else:
        print(f"(no SMS data in {args.sms}: skipped)")
    if args.pos.is_dir():
        try:
            rows += [run_family(*f) for f in pos_families(args.pos, args.per_family)]
        except (ImportError, OSError) as err:
            print(f"(POS skipped: {err})")
    print(f"{'family':<18}{'n':>4}{'auto ~best':>12}{'auto/oracle':>13}{'full ran':>10}"
          f"{'ARS s':>9}{'full s':>9}{'auto s':>9}{'budget':>9}")
    for r in rows:
        print(f"{r['family']:<18}{r['lattices']:>4}{r['auto_right']:>12}"
              f"{r['auto_vs_oracle']:>13.2f}{r['full_chosen']:>10}{r['ars_s']:>9.2f}"
              f"{r['full_s']:>9.2f}{r['auto_s']:>9.2f}{r['budget']:>9.0e}")
    print("\none decode_many call per family, full DP not yet built (seconds):")
    print(f"{'family':<18}{'auto':>9}{'full':>9}{'ars':>9}")
    for r in rows:
        c = r["cold_call"]
        print(f"{r['family']:<18}{c['auto']:>9.3f}{c['full']:>9.3f}{c['ars']:>9.3f}")
    total = sum(r["lattices"] for r in rows)
    right = sum(r["auto_right"] for r in rows)
    auto = sum(r["auto_s"] for r in rows)
    oracle = sum(r["auto_s"] / r["auto_vs_oracle"] for r in rows if r["auto_vs_oracle"] > 0)
    print(f"auto within 20% (+1 ms) of the faster method on {right}/{total}; auto / oracle time "
          f"{auto / oracle:.2f}" if total else "no lattices")
    if total:
        budget_sweep(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
