"""Issue 21's lattice rescoring: runs bench/bench_lattice.py's measurements and writes
docs/results-lattice.md with its plots (docs/img/lattice/).

The bench runs as a command (`python -m bench.bench_lattice ... --json FILE`), whose JSON is
read back: experiments/ and bench/ do not import each other, so either can change its insides
without the other noticing (issue 30).

First the embedded state_union 5-gram (orders 2-5, as lattice-tool -order N uses it), then,
with `--model`, a larger model: the issue's "the same with the 4-corpus 54k-word 5-gram, where
the expansion grows", made by

    python -m data_prep.prepare_sms --out work/sms_all --corpora state_union brown abc webtext \
        --orders 5

and passed as `--model work/sms_all/lm.5.maxarpa` (its reference text is its own held-out
split: `--model-corpora`, default the four corpora). Where ARS on DAGs
(`arsdecode.methods.ars.dag_ars_decode`) is in the checkout, the page says where it starts to
beat the expansion.

    python -m experiments.lattice_rescoring [--n 10] [--model PATH]
    python -m experiments.lattice_rescoring --render-only   # from --json
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from experiments.report.lattice import render

REPO = Path(__file__).resolve().parents[1]

IMG = REPO / "docs" / "img" / "lattice"
DOC = REPO / "docs" / "results-lattice.md"
KEPT = ("<!-- lattice-list:begin -->", "<!-- lattice-list:end -->")
"""A section another command writes into the page (`bench.bench_lattice_list --doc`), kept
when this one rewrites the rest."""


def kept_sections(doc: Path) -> str:
    """The page's section between the KEPT markers, to append to the regenerated page."""
    if not doc.exists():
        return ""
    text = doc.read_text(encoding="utf-8")
    begin, end = KEPT
    if begin not in text or end not in text:
        return ""
    return "\n" + begin + text.split(begin, 1)[1].split(end, 1)[0] + end + "\n"
FOUR_CORPORA = ["state_union", "brown", "abc", "webtext"]


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def bench_lattice(*, model: Path | None, corpora: Sequence[str], n: int, orders: Sequence[int],
                  words: Sequence[int], arcs: Sequence[int], processes: bool) -> dict:
    """One model's rows, measured by `python -m bench.bench_lattice` (its printed rows go to
    stderr, as progress) and read from the JSON it writes. Its exit status 1 (ARS disagreed
    with the expansion somewhere) is said and the rows are kept: the page shows `ars_agrees`."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench_lattice.json"
        cmd = [sys.executable, "-m", "bench.bench_lattice", "--n", str(n),
               "--orders", *map(str, orders), "--words", *map(str, words),
               "--arcs", *map(str, arcs), "--corpora", *corpora, "--json", str(out)]
        if model is not None:
            cmd += ["--model", str(Path(model).resolve())]
        if not processes:
            cmd.append("--no-process")
        status = subprocess.run(cmd, cwd=REPO, stdout=sys.stderr).returncode
        if status not in (0, 1) or not out.exists():
            raise SystemExit(f"bench.bench_lattice failed (exit status {status})")
        if status == 1:
            say("bench.bench_lattice: ARS disagreed with the expansion on some setting")
        result = json.loads(out.read_text())
    result.pop("command", None)  # the experiment's own command heads the page
    return result


PROFILED = {  # (file suffix, function) -> what it does, for the page
    ("maxarpa/contexts.py", "cut"): "cutting contexts to the model's minimal context "
                                    "(`minimal_context`)",
    ("arsdecode/methods/expansion.py", "group_rows"): "grouping the contexts arriving at a node "
                                                  "into states (`np.unique` on rows)",
    ("arsdecode/native/__init__.py", "log_prob"): "LM log-probabilities (compiled)",
    ("arsdecode/methods/expansion_dp.py", "_viterbi"): "Viterbi over the expansion",
}


def profile_expansion(n: int, words: int = 40, arcs: int = 50) -> dict:
    """cProfile of `dag_decode` on `n` lattices of the goal's setting at order 5 (embedded
    model, warmed up): total seconds and the cumulative seconds of each part of PROFILED."""
    import cProfile
    import pstats

    import maxarpa
    from arsdecode.api import DEFAULT_LM
    from arsdecode.methods.expansion_dp import dag_decode
    from data_prep.asr_lattices import Confuser, generate, heldout_sentences

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
    cmd = shlex.join(["python", "-m", "experiments.lattice_rescoring",
                      *(sys.argv[1:] if argv is None else argv)]).replace("'", "")
    if args.render_only:
        results = json.loads(args.json.read_text())
    else:
        common = {"orders": args.orders, "words": args.words, "arcs": args.arcs,
                  "processes": not args.no_process}
        say("embedded state_union 5-gram")
        models = [bench_lattice(model=None, corpora=["state_union"], n=args.n, **common)]
        if args.model is not None:
            say(f"model {args.model}")
            models.append(bench_lattice(model=args.model, corpora=args.model_corpora,
                                        n=args.model_n or args.n, **common))
        say("profile of the goal's setting")
        results = {"command": cmd, "models": models, "profile": profile_expansion(args.n)}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    args.doc.parent.mkdir(parents=True, exist_ok=True)
    page = render(results, results.get("command", cmd), args.img)
    args.doc.write_text(page + kept_sections(args.doc))
    say(f"wrote {args.doc} and {args.img}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
