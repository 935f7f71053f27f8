"""Issue 21's lattice rescoring: runs bench/bench_lattice.py's measurements and writes
docs/results-lattice.md with its plots (docs/img/lattice/).

First the embedded state_union 5-gram (orders 2-5, as lattice-tool -order N uses it), then,
with `--model`, a larger model: the issue's "the same with the 4-corpus 54k-word 5-gram, where
the expansion grows", made by

    python -m data_prep.prepare_sms --out work/sms_all --corpora state_union brown abc webtext \
        --orders 5

and passed as `--model work/sms_all/lm.5.maxarpa` (its reference text is its own held-out
split: `--model-corpora`, default the four corpora). Where ARS on DAGs
(`arsdecode.methods.dag_ars`) is in the checkout, the page says where it starts to beat the
expansion.

    PYTHONPATH=$PWD python experiments/lattice_rescoring.py [--n 10] [--model PATH]
    PYTHONPATH=$PWD python experiments/lattice_rescoring.py --render-only   # from --json
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # experiments/, bench/ and data_prep/ are repo folders

from experiments.report.lattice import render  # noqa: E402

IMG = REPO / "docs" / "img" / "lattice"
DOC = REPO / "docs" / "results-lattice.md"
FOUR_CORPORA = ["state_union", "brown", "abc", "webtext"]


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


PROFILED = {  # (file suffix, function) -> what it does, for the page
    ("maxarpa/contexts.py", "cut"): "cutting contexts to the model's minimal context "
                                    "(`minimal_context`)",
    ("arsdecode/methods/full.py", "_group_rows"): "grouping the contexts arriving at a node "
                                                  "into states (`np.unique` on rows)",
    ("arsdecode/native/__init__.py", "log_prob"): "LM log-probabilities (compiled)",
    ("arsdecode/methods/dag_full.py", "_viterbi"): "Viterbi over the expansion",
}


def profile_expansion(n: int, words: int = 40, arcs: int = 50) -> dict:
    """cProfile of `dag_decode` on `n` lattices of the goal's setting at order 5 (embedded
    model, warmed up): total seconds and the cumulative seconds of each part of PROFILED."""
    import cProfile
    import pstats

    import maxarpa
    from arsdecode.api import DEFAULT_LM
    from arsdecode.methods.dag_full import dag_decode
    from experiments.asr_lattices import Confuser, generate, heldout_sentences

    lm = maxarpa.load(DEFAULT_LM)
    lats = generate(Confuser.from_model(lm), heldout_sentences(), words, arcs, n)
    dag_decode(lm, lats[0].lattice)
    prof = cProfile.Profile()
    prof.enable()
    for a in lats:
        dag_decode(lm, a.lattice)
    prof.disable()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    parts: dict[str, float] = {}
    for (file, _, func), (_, _, _, cum, _) in stats.items():
        for (suffix, name), what in PROFILED.items():
            if func == name and file.endswith(suffix):
                parts[what] = parts.get(what, 0.0) + cum
    total = sum(tt for (_, _, tt, _, _) in stats.values())
    return {"setting": f"{words} x {arcs}, order 5", "n": n, "total": total, "parts": parts}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10, help="lattices per setting (default 10)")
    ap.add_argument("--orders", type=int, nargs="+", default=[2, 3, 4, 5])
    ap.add_argument("--words", type=int, nargs="+", default=[10, 20, 40, 60])
    ap.add_argument("--arcs", type=int, nargs="+", default=[5, 15, 50])
    ap.add_argument("--model", type=Path, default=None,
                    help="also measure this model (the 4-corpus 54k-word 5-gram)")
    ap.add_argument("--model-corpora", nargs="+", default=FOUR_CORPORA,
                    help="the corpora --model was trained on (its held-out split is the text)")
    ap.add_argument("--model-n", type=int, default=None,
                    help="lattices per setting for --model (default: --n)")
    ap.add_argument("--no-process", action="store_true",
                    help="skip the whole-process runs of the arsdecode command")
    ap.add_argument("--json", type=Path, default=REPO / "work" / "lattice_rescoring.json")
    ap.add_argument("--doc", type=Path, default=DOC)
    ap.add_argument("--img", type=Path, default=IMG)
    ap.add_argument("--render-only", action="store_true",
                    help="rewrite the page and plots from --json without measuring")
    args = ap.parse_args(argv)
    cmd = shlex.join(["PYTHONPATH=$PWD", "python", "experiments/lattice_rescoring.py",
                      *(sys.argv[1:] if argv is None else argv)]).replace("'", "")
    if args.render_only:
        results = json.loads(args.json.read_text())
    else:
        from bench.bench_lattice import run

        common = {"orders": args.orders, "words": args.words, "arcs": args.arcs,
                  "processes": not args.no_process}
        say("embedded state_union 5-gram")
        models = [run(model=None, corpora=["state_union"], n=args.n, **common)]
        if args.model is not None:
            say(f"model {args.model}")
            models.append(run(model=args.model, corpora=args.model_corpora,
                              n=args.model_n or args.n, **common))
        say("profile of the goal's setting")
        results = {"command": cmd, "models": models, "profile": profile_expansion(args.n)}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    args.doc.parent.mkdir(parents=True, exist_ok=True)
    args.doc.write_text(render(results, results.get("command", cmd), args.img))
    say(f"wrote {args.doc} and {args.img}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
