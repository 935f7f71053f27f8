"""Does `method="auto"` run the faster exact decoder? (issue 10: a validated cost rule)

auto runs the bound-pruned full DP on every lattice with a budget of (state, candidate) pairs
(`dispatch.full_pairs_budgets`: per lattice, an estimate of ARS's time on it in pairs),
and ARS on a lattice that exceeds it (see arsdecode/methods/dispatch.py).
For every lattice, both exact methods run through `corpus.decode(method=...)`, as auto
does (ARS, best of 3; the pruned full DP on a *new* lattice: tables built, transition cache
empty), each result is checked to have the same ln p (to 1e-9), and auto itself is timed
the same way. Printed per family: how often auto's time was within 20% (+1 ms) of the
faster method's, and auto's total time against an oracle that always runs the faster one
(ratio >= 1; 1.00 is perfect). A budget sweep then simulates other budgets from the
measured pairs and times (an abandoned DP costs its share budget/pairs of the full DP's
time, plus ARS).

Families: SMS lattices of the state_union test set (full candidate lists, and top-K = 3, 10,
30, 100, 300); on the shipped 5-gram, long lattices (2,000 positions, top-30 keypad
candidates) and wide ones (4 positions x the whole vocabulary, random ln emissions N(0, 3));
and, if the POS models exist, POS lattices of the WSJ test set at orders 3, 5, 9, of the UD
English Web Treebank test set (out of domain: many words the WSJ tagger never saw) at 5 and
9, and one 1,000-token sentence (WSJ-20 sentences joined) at 5 and 9.

Times are CPU seconds of the process (`clock`). Besides the per-lattice times, one call per
family in a process that has not set up the full DP for the model (the first lattice alone: a
one-off call; and the whole family: a corpus).

Usage: python -m bench.bench_auto [--sms work/sms] [--pos work/pos] [--per-family 20]
  work/sms from `python -m data_prep.prepare_sms --out work/sms --corpora state_union`,
  work/pos from `python -m data_prep.pos_data --out work/pos`; --ewt DIR (default: the shared
  ud_ewt directory) for the out-of-domain family. --only SUBSTRING runs the families whose
  name contains it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bench.record import Record

REPO = Path(__file__).resolve().parent.parent


def clock() -> float:
    """CPU seconds of this process: on a machine shared with other jobs, wall times of the
    same call varied 3x within a run; the work here is single-threaded, so CPU time is the
    cost, robust to the load."""
    return time.process_time()


def best_time(fn, repeats: int = 3) -> tuple[float, object]:
    """Best of `repeats` runs; one run when it takes over a second (the long families)."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = clock()
        out = fn()
        best = min(best, clock() - t0)
        if best > 1.0:
            break
    return best, out


def cold_calls(lm, lattices) -> dict:
    """One decode_many call per method in a process that has not set up the full DP for lm:
    best of two rounds, in opposite orders (the first call of a family pays one-time costs,
    say page faults on the model's arrays, that are no method's)."""
    import arsdecode.methods.dispatch as corpus
    import arsdecode.methods.fast_full as fast_full

    calls = {m: float("inf") for m in ("auto", "full", "ars")}
    for order in (("auto", "full", "ars"), ("ars", "full", "auto")):
        for method in order:
            fast_full._DP.pop(lm, None)
            t0 = clock()
            corpus.decode_many(lm, lattices, method=method)
            calls[method] = min(calls[method], clock() - t0)
    return calls


def run_family(name: str, lm, lattices) -> dict:
    import arsdecode.methods.dispatch as corpus
    import arsdecode.methods.fast_full as fast_full
    from arsdecode.lattice.flat import FlatLattices
    from arsdecode.methods.cost_model import LatticeSizes
    from arsdecode.model import as_target_model
    from arsdecode.native import _core, native_ngram

    # One call over the family, and one over its first lattice alone, in a process that has
    # not built the full DP for this model (what a CLI run pays): auto (which weighs the DP's
    # set-up), always full, always ARS.
    native_ngram(lm)  # the n-gram tables both methods share: built before any timing
    as_target_model(lm)  # the adapter too (else the first method timed pays it)
    one_off = cold_calls(lm, lattices[:1])
    calls = cold_calls(lm, lattices) if len(lattices) > 1 else one_off
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
        # Each method through the same entry point as auto (the same per-call overhead).
        ta, ra = best_time(lambda lat=lat: corpus.decode(lm, lat, method="ars"))
        fresh_dp()
        t0 = clock()
        rfull = corpus.decode(lm, lat, method="full")
        tf = clock() - t0
        flat = FlatLattices.from_lattices(lm, [lat])
        rf = fast_full.run_flat(lm, flat)  # pairs
        if abs(ra.log_p - rfull.log_p) > 1e-9:
            raise SystemExit(f"{name}: methods disagree: {ra.log_p} vs {rfull.log_p}")
        fresh_dp()
        t0 = clock()
        rx = corpus.decode(lm, lat)
        tx = clock() - t0
        full_chosen += rx.method == "full"
        right += tx <= 1.2 * min(ta, tf) + 1e-3
        t_auto += tx
        t_oracle += min(ta, tf)
        t_ars += ta
        t_full += tf
        widths = lat.widths
        points.append({"pairs": int(rf.pairs[0]), "ars": ta, "full": tf, "auto": tx,
                       "auto_method": rx.method, "positions": len(widths),
                       "candidates": sum(widths), "cubed_widths": sum(w**3 for w in widths),
                       "budget": float(corpus.full_pairs_budgets(
                           len(lm.vocab), LatticeSizes.of_flat(flat))[0])})
    n = len(lattices)
    return {"family": name, "lattices": n, "auto_right": right,
            "auto_vs_oracle": t_auto / t_oracle if t_oracle else float("nan"),
            "ars_s": t_ars, "full_s": t_full, "auto_s": t_auto,
            "full_chosen": full_chosen, "points": points, "cold_call": calls,
            "one_off": one_off, "budget": min(p["budget"] for p in points)}


def budget_sweep(rows: list[dict]) -> None:
    """auto's simulated total time against the oracle's, for other constant budgets (the
    floor alone, with no per-lattice estimate), per vocabulary kind (the two floors are
    separate): a lattice within budget costs its full DP time, one over it the share
    budget/pairs of that time plus ARS."""
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
    import maxarpa
    from arsdecode.tasks.sms.keypad import KeypadChannel

    lm = maxarpa.load(path / "lm.5.maxarpa")
    channel = KeypadChannel.from_vocab(lm.vocab)
    records = [json.loads(x) for x in open(path / "test.jsonl", encoding="utf-8")]
    records = [r for r in records if 4 <= len(r["observation"].split()) <= 10][:per_family]
    for top_k in (3, 10, 30, 100, 300, None):
        lats = [channel.build_lattice(r["observation"], top_k=top_k) for r in records]
        yield f"sms top-K={top_k or 'all'}", lm, lats


def shipped_families(n_long: int = 1, n_wide: int = 2):
    """Long and wide lattices on the shipped 5-gram (the families of issue 19's table)."""
    import numpy as np

    import maxarpa
    from arsdecode.api import DEFAULT_LM
    from arsdecode.lattice import Lattice
    from arsdecode.tasks.sms.keypad import KeypadChannel, sample_sentence

    lm = maxarpa.load(DEFAULT_LM)
    rng = np.random.default_rng(0)
    channel = KeypadChannel.from_vocab(lm.vocab)
    words = [w for w in lm.vocab[:3000] if w.isalpha()]
    yield "long 2000 x top-30", lm, [
        channel.build_lattice(sample_sentence(list(rng.choice(words, 2000)), rng), top_k=30)
        for _ in range(n_long)]
    vocab = [w for w in lm.vocab if w not in ("<s>", "</s>")]
    yield f"wide 4 x {len(vocab)}", lm, [
        Lattice.from_lists([list(zip(rng.permutation(vocab).tolist(),
                                     rng.normal(0, 3, len(vocab)).tolist())) for _ in range(4)])
        for _ in range(n_wide)]


def pos_families(path: Path, per_family: int, ewt: Path | None):
    from arsdecode.tasks.pos.models import load_models
    from data_prep.pos_data import default_data_dir, read_conll2000

    sents = read_conll2000(default_data_dir(), "test")
    long = [w for s in sents for w, _ in s][:1000]
    out_of_domain = []
    if ewt is not None:
        from data_prep.ewt import ewt_file, read_conllu

        out_of_domain = read_conllu(ewt_file(ewt, "test"))[:per_family]
    for order in (3, 5, 9):
        lm, em = load_models(path, order)
        yield f"pos n={order}", lm, [em.lattice([w for w, _ in s]) for s in sents[:per_family]]
        if order >= 5 and out_of_domain:
            yield f"pos EWT n={order}", lm, [em.lattice([w for w, _ in s])
                                              for s in out_of_domain]
        if order >= 5:
            yield f"pos 1000-token n={order}", lm, [em.lattice(long)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sms", type=Path, default=REPO / "work" / "sms")
    ap.add_argument("--pos", type=Path, default=REPO / "work" / "pos")
    ap.add_argument("--per-family", type=int, default=20)
    ap.add_argument("--json", type=Path, help="write every lattice's pairs and times here")
    ap.add_argument("--ewt", type=Path, default=None, help="UD EWT directory (CoNLL-U)")
    ap.add_argument("--only", default="", help="run the families whose name contains this")
    ap.add_argument("--quick", action="store_true",
                    help="the SMS families, 4 lattices each (bench.ab)")
    args = ap.parse_args()
    if args.quick:
        args.per_family = 4
    ewt = args.ewt
    if ewt is None:
        from data_prep.ewt import shared_data

        ewt = shared_data("ud_ewt")
    families = []
    if (args.sms / "lm.5.maxarpa").is_file():
        families.append(sms_families(args.sms, args.per_family))
    else:
        print(f"(no SMS data in {args.sms}: skipped)")
    if not args.quick:  # quick: the SMS families only (POS has bench_pos)
        families.append(shipped_families())
    if args.pos.is_dir() and not args.quick:
        families.append(pos_families(args.pos, args.per_family, ewt))
    rows = []
    for family in families:
        try:
            rows += [run_family(*f) for f in family if args.only in f[0]]
        except (ImportError, OSError) as err:
            print(f"(skipped: {err})")
        sys.stdout.flush()
    print(f"{'family':<24}{'n':>4}{'auto ~best':>12}{'auto/oracle':>13}{'full ran':>10}"
          f"{'ARS s':>9}{'full s':>9}{'auto s':>9}{'budget':>9}")
    for r in rows:
        print(f"{r['family']:<24}{r['lattices']:>4}{r['auto_right']:>12}"
              f"{r['auto_vs_oracle']:>13.2f}{r['full_chosen']:>10}{r['ars_s']:>9.2f}"
              f"{r['full_s']:>9.2f}{r['auto_s']:>9.2f}{r['budget']:>9.0e}")
    print("\none decode_many call, full DP not yet built (seconds): the first lattice alone "
          "(one-off), the whole family (corpus); auto / the faster method")
    print(f"{'family':<24}{'auto':>8}{'full':>8}{'ars':>8}{'ratio':>7}"
          f"{'auto':>9}{'full':>8}{'ars':>8}{'ratio':>7}")
    for r in rows:
        o, c = r["one_off"], r["cold_call"]
        print(f"{r['family']:<24}{o['auto']:>8.3f}{o['full']:>8.3f}{o['ars']:>8.3f}"
              f"{o['auto'] / min(o['full'], o['ars']):>7.2f}{c['auto']:>9.3f}{c['full']:>8.3f}"
              f"{c['ars']:>8.3f}{c['auto'] / min(c['full'], c['ars']):>7.2f}")
    total = sum(r["lattices"] for r in rows)
    right = sum(r["auto_right"] for r in rows)
    auto = sum(r["auto_s"] for r in rows)
    oracle = sum(r["auto_s"] / r["auto_vs_oracle"] for r in rows if r["auto_vs_oracle"] > 0)
    print(f"auto within 20% (+1 ms) of the faster method on {right}/{total}; auto / oracle time "
          f"{auto / oracle:.2f}" if total else "no lattices")
    if total:
        budget_sweep(rows)
    figs = Record("bench_auto", quick=args.quick)
    for r in rows:
        o, c, name = r["one_off"], r["cold_call"], r["family"].replace(" ", "_")
        figs.ratio(f"{name}.auto/oracle", r["auto_vs_oracle"])
        figs.ratio(f"{name}.one_off.auto/faster", o["auto"] / min(o["full"], o["ars"]))
        figs.ratio(f"{name}.cold_call.auto/faster", c["auto"] / min(c["full"], c["ars"]))
        figs.time(f"{name}.auto_s", r["auto_s"])
        figs.count(f"{name}.full_chosen", r["full_chosen"])
    figs.save()
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
