"""Issue 22's per-target bench: decode and sample time of each target beyond one ARPA file
against the plain ARPA target, on the same SMS keypad lattices, in the same run.

Data: the SMS split of `data_prep.prepare_sms` (`--data DIR` with train.txt, test.jsonl and
lm.5.{npz,maxarpa}; made by `python -m data_prep.prepare_sms --out work/sms`). The lattices
are keypad lattices of test.jsonl with every candidate of lm.5's vocabulary (the channel of
`arsdecode.tasks.sms.keypad`): the first `--per-length` records of each length (3-10 words),
the same lattices for every target; sampling runs on the first `--sample-per-length` of
each length of them.

The targets (natural log throughout; the issue's targets 1, 2 and 4):

  plain         lm.5, the KenLM modified Kneser-Ney 5-gram of train.txt (the baseline);
  interpolated  `arsdecode.interpolate([lm.5, GENERAL], [0.6, 0.4])`: the in-domain model mixed
                with a general one (`--general`, default `arsdecode.api.DEFAULT_LM`, the
                embedded state_union 5-gram; the general 5-gram of state_union + brown + abc +
                webtext is `python -m data_prep.prepare_sms --out work/sms_all --corpora
                state_union brown abc webtext --orders 5`, its lm.5.maxarpa);
  loglinear     `arsdecode.loglinear([lm.5], [1.0], features=F)`: F holds the `--features`
                most frequent bigrams, trigrams and skip-bigrams (`a * c`) each of
                `<s> train.txt </s>`, weights drawn N(0, `--sigma`) by numpy's default_rng
                (`--seed`), written to DATA/bench_targets.features.tsv (a synthetic stand-in
                for a trained random-field LM's feature weights);
  vpylm         `train_vpylm(train.txt, max_depth, sweeps, seed)` (model.vpylm_train),
                cached as DATA/vpylm.d<depth>.sweeps<sweeps>.seed<seed>.npz with its
                training time in a .json beside it (trained once; reruns reuse it).

Per target and method ("auto", "ars"; "full" for the plain target, whose full DP is compiled),
per lattice: CPU seconds (`time.process_time`, in process, after a warm-up decode of a lattice
outside the subset on a freshly built target: a target's memos serve every later lattice, as
in a user's batch, but never a re-run of the same lattice), certified, iterations (ARS
refinements; 1 for the full DP), states (the automaton's, or the full DP's merged states).
"auto" decides per call, so a target whose compiled DP is not set up yet (an interpolated
target: its union states, about 2 CPU-s on the general model) gets ARS for a lattice whose
estimated ARS time is below that setup. Row "auto_set_up": "auto" again once the DP is set
up (as after a batch large enough; `compiled_setup_cpu_seconds` and
`auto_builds_for_these_lattices`, whether `decode_many` on these lattices would have set it
up, are in the target's results). A VPYLM's compiled DP (issue 34, `fast_vpylm`) is set up by
"auto" once the ARS time it estimates over its calls passes the setup (`fast_vpylm.charge`),
so its "auto" row runs ARS on the first lattices and the DP on the rest; so does the
log-linear target's (`fast_loglinear`, its states made on demand for the skip-bigrams).
A target without a compiled DP would run "full" as the numpy reference DP, which holds every
(state, candidate) pair (GBs on a whole SMS lattice), so "full" runs on small lattices for
every target: the first lattice of each of the `--full-lattices` shortest lengths of the
subset, cut to the `--full-top-k` best per position (rows `ars_small`, `full_small`).
Sampling: `arsdecode.sample(lm, lattice, --samples, seed)`, CPU seconds and acceptance rate.
Every figure is also a ratio to the plain target of the same run. Checks (the exit status
is 1 if one fails): the plain target's decodes are equal across methods (ln p within 1e-9);
each target's "auto" and "ars" decodes are equal, and its "ars_small" and "full_small"; every
decode is certified.
The figures, the checks and the table are bench/targets_report.py's; this module measures.

Usage: python -m bench.bench_targets [--data work/sms] [--general M] [--per-length 8]
           [--sample-per-length 3] [--samples 100] [--targets plain interpolated ...]
           [--json OUT] [--doc]   (--doc: the tables into docs/performance.md, `bench:targets`)
`--per-length 2 --sample-per-length 1` is a quick run. Progress goes to a terminal only.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from bench.perf_doc import write_section
from bench.record import Record
from bench.targets_report import (  # noqa: F401  (TOL, summary, ratio: importers name them here)
    TOL,
    checks,
    doc_section,
    format_target,
    ratio,
    say,
    shown_path,
    summarize,
    summary,
    table,
)

REPO = Path(__file__).resolve().parents[1]

Method = Literal["auto", "ars", "full"]
TARGETS = ("plain", "interpolated", "loglinear", "vpylm")
MIX_WEIGHTS = (0.6, 0.4)


def read_sentences(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text(encoding="utf-8").splitlines() if line]


def frequent_ngrams(sentences: Sequence[Sequence[str]], per_kind: int) -> list[str]:
    """The `per_kind` most frequent bigrams, trigrams and skip-bigrams (`a * c`) each of
    `<s> s </s>` over the sentences, as feature patterns: the random-field trainer's own
    selection (`select_features`, most frequent first, ties by the pattern, so the list is
    reproducible), split by kind (disjoint: a skip-bigram's middle word is `*`)."""
    from arsdecode.model.loglinear import SKIP
    from arsdecode.tasks.trf.features import select_features

    kinds: list[list[str]] = [[], [], []]
    for pattern in select_features(sentences, max_order=3, skip=True, min_count=1).patterns:
        kind = (len(pattern) == 3) + (SKIP in pattern)  # 0 bigram, 1 trigram, 2 skip-bigram
        if len(pattern) > 1 and len(kinds[kind]) < per_kind:
            kinds[kind].append(" ".join(pattern))
    return [p for kind in kinds for p in kind]


def write_features(sentences: Sequence[Sequence[str]], path: Path, per_kind: int,
                   sigma: float, seed: int) -> int:
    """The synthetic feature file (`ngram<TAB>weight`, weights N(0, sigma) from `seed`, in the
    order of `frequent_ngrams`); returns the number of features."""
    patterns = frequent_ngrams(sentences, per_kind)
    weights = np.random.default_rng(seed).normal(0.0, sigma, len(patterns))
    path.write_text("".join(f"{p}\t{w:.6f}\n" for p, w in zip(patterns, weights, strict=True)),
                    encoding="utf-8")
    return len(patterns)


def vpylm_counts(data: Path, sentences: Sequence[Sequence[str]], depth: int, sweeps: int,
                 seed: int) -> tuple[Any, dict[str, Any]]:
    """The VPYLM's counts, trained once and cached under `data` (training takes a minute or
    two: a rerun reuses the file), and what the page says about its training."""
    from arsdecode.model.vpylm import VpylmCounts
    try:
        from arsdecode.model.vpylm_train import train_vpylm
    except ImportError:  # before issue 30 split the trainer out (bench.ab runs old revisions)
        from arsdecode.model.vpylm import train_vpylm  # type: ignore[attr-defined,no-redef]

    path = data / f"vpylm.d{depth}.sweeps{sweeps}.seed{seed}.npz"
    meta_path = Path(f"{path}.json")
    if path.exists() and meta_path.exists():
        return VpylmCounts.load(path), json.loads(meta_path.read_text())
    say(f"training the VPYLM (depth {depth}, {sweeps} sweeps) on {len(sentences):,} sentences")
    cpu0, wall0 = time.process_time(), time.perf_counter()
    counts = train_vpylm(sentences, depth, sweeps, seed)
    meta = {"max_depth": depth, "sweeps": sweeps, "seed": seed,
            "train_cpu_seconds": time.process_time() - cpu0,
            "train_wall_seconds": time.perf_counter() - wall0,
            "nodes": len(counts.parent), "train_sentences": len(sentences)}
    counts.save(path)
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    return counts, meta


def choose(records: Sequence[dict], per_length: int) -> list[dict]:
    """The first `per_length` records of each length (a random draw per length), in order."""
    from data_prep.prepare_sms import subset

    return subset(records, per_length)


def compiled_setup(lm: Any) -> tuple[float, bool] | None:
    """Set up the target's compiled full DP (issue 34: a mixture's union states) and return its
    CPU seconds and whether it was already set up; None when the target has none (or the
    revision predates these names, bench.ab)."""
    from arsdecode.methods import fast_full
    from arsdecode.model import as_target_model

    compiled_target = getattr(fast_full, "compiled_target", None)
    target = compiled_target(as_target_model(lm)) if compiled_target is not None else None
    if target is None:
        return None
    free = fast_full.setup_is_free(target)
    t0 = time.process_time()
    if not fast_full.has_dp(target):
        return None
    return time.process_time() - t0, free


def auto_builds(lm: Any, lattices: Sequence[Any]) -> bool | None:
    """Whether `auto` on this whole batch (`decode_many`) would set up the compiled DP: its
    setup costs less than ARS's estimated time on the batch (`dispatch.auto_budgets`)."""
    from arsdecode.methods import dispatch
    from arsdecode.methods.cost_model import LatticeSizes
    from arsdecode.model import as_target_model

    sizes = LatticeSizes.of_widths([lat.widths for lat in lattices])
    return dispatch.auto_budgets(as_target_model(lm), sizes) is not None


def decode_row(lm: Any, lattices: Sequence[Any], method: Method, warm: Any
               ) -> dict[str, Any]:
    """Per lattice: CPU seconds, ln p, certified, iterations, states, the method that ran."""
    import arsdecode

    arsdecode.decode(lm, warm, method=method)  # lazy tables, memos: not part of a lattice
    row: dict[str, list[Any]] = {k: [] for k in ("seconds", "log_p", "certified",
                                                 "iterations", "states", "ran")}
    for lat in lattices:
        t0 = time.process_time()
        r = arsdecode.decode(lm, lat, method=method)
        row["seconds"].append(time.process_time() - t0)
        row["log_p"].append(float(r.log_p))
        row["certified"].append(bool(r.certified))
        row["iterations"].append(int(r.iterations))
        row["states"].append(int(r.states))
        row["ran"].append(str(r.method))
    return row


def sample_row(lm: Any, lattices: Sequence[Any], n: int, seed: int, warm: Any
               ) -> dict[str, Any]:
    """Per lattice: CPU seconds of n exact samples, acceptance rate, trials."""
    import arsdecode

    arsdecode.sample(lm, warm, n, seed=seed)
    row: dict[str, list[Any]] = {"seconds": [], "acceptance_rate": [], "trials": []}
    for i, lat in enumerate(lattices):
        t0 = time.process_time()
        s = arsdecode.sample(lm, lat, n, seed=seed + i)
        row["seconds"].append(time.process_time() - t0)
        row["acceptance_rate"].append(float(s.acceptance_rate))
        row["trials"].append(int(s.trials))
    return row


def run(*, data: Path, general: Path | None, targets: Sequence[str], per_length: int,
        sample_per_length: int, samples: int, full_lattices: int, full_top_k: int,
        features: int, sigma: float, depth: int, sweeps: int, seed: int,
        log: Callable[[str], None] = say) -> dict[str, Any]:
    """Every target's decode and sample rows on the same lattices (module docstring)."""
    import maxarpa
    from arsdecode.api import DEFAULT_LM, interpolate, loglinear
    from arsdecode.model.vpylm import VpylmLM
    from arsdecode.tasks.sms.keypad import KeypadChannel

    binary = data / "lm.5.npz"
    lm5 = maxarpa.load(binary if binary.exists() else data / "lm.5.maxarpa")
    records = [json.loads(x) for x in (data / "test.jsonl").read_text().splitlines() if x]
    chosen = choose(records, per_length)
    sampled = choose(chosen, sample_per_length)
    channel = KeypadChannel.from_vocab(lm5.vocab)
    lattices = [channel.build_lattice(r["observation"]) for r in chosen]
    sample_lattices = [channel.build_lattice(r["observation"]) for r in sampled]
    rest = [r for r in records if r not in chosen]
    warm_obs = min(rest or records, key=lambda r: len(r["words"]))["observation"]
    warm = channel.build_lattice(warm_obs)  # the warm-up lattice: the shortest not measured
    warm_small = channel.build_lattice(warm_obs, top_k=full_top_k)
    first_of_length: dict[int, dict] = {}
    for r in chosen:
        first_of_length.setdefault(len(r["words"]), r)
    small = [channel.build_lattice(first_of_length[n]["observation"], top_k=full_top_k)
             for n in sorted(first_of_length)[:full_lattices]]
    train = read_sentences(data / "train.txt")
    general_path = Path(general) if general is not None else Path(DEFAULT_LM)
    out: dict[str, Any] = {
        "data": str(data), "lattices": len(lattices), "sample_lattices": len(sample_lattices),
        "lengths": dict(sorted(Counter(len(r["words"]) for r in chosen).items())),
        "median_width": statistics.median(w for lat in lattices for w in lat.widths),
        "samples": samples, "small_lattices": len(small), "small_top_k": full_top_k,
        "small_lengths": [len(lat) for lat in small],
        "seed": seed, "targets": {}}

    def build(name: str) -> Any:
        """A freshly built target (no memos from an earlier method's run); plain is the loaded
        model itself, whose only state is its lazily built tables."""
        if name == "plain":
            return lm5
        if name == "interpolated":
            assert general_lm is not None
            return interpolate([lm5, general_lm], list(MIX_WEIGHTS))
        if name == "loglinear":
            return loglinear([lm5], [1.0], features=feature_file)
        assert vp_counts is not None
        return VpylmLM(vp_counts)

    general_lm: maxarpa.Model | None = None
    feature_file: Path | None = None
    vp_counts: Any = None
    if "interpolated" in targets:
        t0 = time.process_time()
        general_lm = maxarpa.load(general_path)
        out["general"] = {"path": shown_path(general_path), "words": len(general_lm.vocab),
                          "ngrams": sum(general_lm.counts), "order": general_lm.order,
                          "load_cpu_seconds": time.process_time() - t0,
                          "weights": list(MIX_WEIGHTS)}
    if "loglinear" in targets:
        feature_file = data / "bench_targets.features.tsv"
        n_feat = write_features(train, feature_file, features, sigma, seed)
        out["features"] = {"file": feature_file.name, "count": n_feat, "per_kind": features,
                           "sigma": sigma, "seed": seed}
    if "vpylm" in targets:
        vp_counts, out["vpylm"] = vpylm_counts(data, train, depth, sweeps, seed)
    for name in [t for t in TARGETS if t in targets]:
        t0 = time.process_time()
        lm = build(name)
        res: dict[str, Any] = {"build_cpu_seconds": time.process_time() - t0, "decode": {}}
        if name == "loglinear":
            res["dropped_features"] = lm.dropped_features
        methods: list[Method] = ["auto", "ars", "full"] if name == "plain" else ["auto", "ars"]
        for method in methods:
            log(f"{name}: decode, method {method}, {len(lattices)} lattices")
            res["decode"][method] = decode_row(build(name), lattices, method, warm)
        if name != "plain":  # auto once the compiled DP is set up (a batch large enough)
            lm = build(name)
            res["auto_builds_for_these_lattices"] = auto_builds(lm, lattices)
            setup = compiled_setup(lm)
            if setup is not None:
                res["compiled_setup_cpu_seconds"], res["compiled_setup_was_free"] = setup
                log(f"{name}: decode, auto with its compiled DP set up "
                    f"({setup[0]:.2f} s), {len(lattices)} lattices")
                res["decode"]["auto_set_up"] = decode_row(lm, lattices, "auto", warm)
        small_methods: tuple[Method, ...] = ("ars", "full") if small else ()
        for method in small_methods:
            log(f"{name}: decode, method {method}, {len(small)} small lattices")
            res["decode"][f"{method}_small"] = decode_row(build(name), small, method,
                                                          warm_small)
        log(f"{name}: sample n={samples}, {len(sample_lattices)} lattices")
        res["sample"] = sample_row(build(name), sample_lattices, samples, seed, warm)
        out["targets"][name] = res
        res["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        log(format_target(name, res))
    out["checks"] = checks(out)
    out["summary"] = summarize(out)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=REPO / "work" / "sms",
                    help="the SMS split (python -m data_prep.prepare_sms --out DIR)")
    ap.add_argument("--general", type=Path, default=None,
                    help="the general model mixed with lm.5 (default: the embedded 5-gram)")
    ap.add_argument("--targets", nargs="+", choices=TARGETS, default=list(TARGETS))
    ap.add_argument("--per-length", type=int, default=8,
                    help="decoded lattices per sentence length (default 8: 61 lattices; 0: all)")
    ap.add_argument("--sample-per-length", type=int, default=3,
                    help="of those, sampled lattices per length (default 3: 24; 0: all)")
    ap.add_argument("--samples", type=int, default=100, help="samples per lattice")
    ap.add_argument("--full-lattices", type=int, default=5, help="small lattices: one of each"
                    " of this many shortest lengths, cut to --full-top-k (ars and full)")
    ap.add_argument("--full-top-k", type=int, default=30, help="candidates per position of the"
                    " small lattices (the numpy full DP: GBs on a whole SMS lattice)")
    ap.add_argument("--features", type=int, default=2000,
                    help="log-linear: the most frequent n-grams of each kind (3 kinds)")
    ap.add_argument("--sigma", type=float, default=0.3, help="log-linear weights N(0, sigma)")
    ap.add_argument("--max-depth", type=int, default=8, help="the VPYLM's depth")
    ap.add_argument("--sweeps", type=int, default=5, help="the VPYLM's Gibbs sweeps")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None, help="save the results here")
    ap.add_argument("--doc", action="store_true", help="write docs/performance.md's section")
    ap.add_argument("--quick", action="store_true", help="--per-length 1 --sample-per-length"
                    " 1 --samples 30 --full-lattices 3 (bench.ab)")
    args = ap.parse_args(argv)
    if args.quick:
        args.per_length, args.sample_per_length, args.samples, args.full_lattices = 1, 1, 30, 3
    if "plain" not in args.targets:
        ap.error("--targets must include plain (the baseline of every ratio)")
    for need in ("train.txt", "test.jsonl"):
        if not (args.data / need).exists():
            ap.error(f"{args.data / need} is missing: make the split with "
                     f"`python -m data_prep.prepare_sms --out {args.data}`")
    cpu0, wall0 = time.process_time(), time.perf_counter()
    res = run(data=args.data, general=args.general, targets=args.targets,
              per_length=args.per_length, sample_per_length=args.sample_per_length,
              samples=args.samples, full_lattices=args.full_lattices, full_top_k=args.full_top_k,
              features=args.features, sigma=args.sigma, depth=args.max_depth, sweeps=args.sweeps,
              seed=args.seed)
    res["run_cpu_seconds"], res["run_wall_seconds"] = (time.process_time() - cpu0,
                                                       time.perf_counter() - wall0)
    res["command"] = shlex.join(["python", "-m", "bench.bench_targets",
                                 *(sys.argv[1:] if argv is None else argv)])
    res["load_average"] = os.getloadavg()[0]
    print(table(res))
    if args.doc:
        write_section("targets", doc_section(res))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(res, indent=1) + "\n")
    figs = Record("bench_targets", quick=args.quick,
                  argv=list(argv) if argv is not None else None)
    for name, summ in res["summary"].items():
        for method, d in summ["decode"].items():
            if name != "plain":
                figs.ratio(f"{name}.{method}.x_plain_seconds_mean",
                           d["x_plain"]["seconds_mean"])
            figs.time(f"{name}.{method}.seconds_mean", d["seconds"]["mean"])
            figs.count(f"{name}.{method}.states_mean", d["states"]["mean"])
        if name != "plain":
            figs.ratio(f"{name}.sample.x_plain_seconds_mean",
                       summ["sample"]["x_plain"]["seconds_mean"])
        figs.time(f"{name}.sample.seconds_mean", summ["sample"]["seconds"]["mean"])
    figs.save()
    ok = all(c["methods_agree"] and c["certified"] == c["decodes"]
             for c in res["checks"].values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
