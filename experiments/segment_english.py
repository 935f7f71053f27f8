"""The general-English segmentation model against the segmenters people pip-install (issue 33):
the measurements behind docs/results-segment.md, run by experiments/segment_compare.py.

Sets (data_prep.segment_devsets): hashtags, URLs and held-out sentences, a dev part (every
setting of the model and the lattice was chosen on it: `tune`) and a test part (reported).
Every tool sees the same pieces: the input is cut at its spaces and punctuation (hard breaks for
everyone), each piece lower-cased for the tools, which have no use for case; ours reads the raw
input (case and digit cues). Accuracy: the output, lower-cased, equals the gold words (the
issue's measure); boundary precision, recall and F1 over the normalised text's cuts as well.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from arsdecode.tasks.segment.calibration import (
    expected_calibration_error,
    fit_posterior_scale,
    log_loss,
)
from arsdecode.tasks.segment.cues import CueWeights, SegmentInput
from arsdecode.tasks.segment.evaluation import boundaries, score_segmentations
from arsdecode.tasks.segment.segmenter import Segmenter
from data_prep.segment_devsets import read_set
from experiments import segment_tools

KINDS = ("hashtags", "urls", "sentences")
EXAMPLES = ("#iPhoneForAlonis", "lions2009", "HsvTweetup", "LemonTree", "vegas", "Liverpool",
            "twins", "bittorrent", "firefox", "earthquake", "eurovision", "heartballoon",
            "camerafail", "jonaslive", "iPhone", "McFly", "JavaONE", "PowerBook", "gr8", "h1n1",
            "a11y", "4eva")
"""The issue's examples: its errors of the old model, and the words its hints must not split."""
SCALE_GRID = (0.4, 0.5, 0.6, 0.8, 1.0)
"""Posterior scales tried on the dev sets (`calibration.fit_posterior_scale`)."""
ManySegmenter = Callable[[Sequence[str]], list[list[str]]]
REPO = Path(__file__).resolve().parents[1]


def load_sets(folder: Path, part: str) -> dict[str, list[dict]]:
    return {kind: read_set(folder / f"{part}.{kind}.jsonl") for kind in KINDS}


def tool_segmenter(name: str) -> ManySegmenter:
    """A pip tool as shipped, on each piece between the input's breaks, lower-cased."""
    one = segment_tools.shipped(name)

    def run(texts: Sequence[str]) -> list[list[str]]:
        out = []
        for raw in texts:
            s = SegmentInput.read(raw)
            cuts = sorted({0, len(s.text), *s.breaks})
            words: list[str] = []
            for lo, hi in zip(cuts, cuts[1:]):
                words += one(s.text[lo:hi])
            out.append(words)
        return out
    return run


def our_segmenter(seg: Segmenter, batch: int = 256) -> ManySegmenter:
    def run(texts: Sequence[str]) -> list[list[str]]:
        out: list[list[str]] = []
        for k in range(0, len(texts), batch):
            out += [r.words for r in seg.segment_many(texts[k:k + batch])]
        return out
    return run


def evaluate(run: ManySegmenter, rows: list[dict]) -> dict:
    """Accuracy, boundary scores and in-process chars/s of one segmenter on one set."""
    texts = [r["input"] for r in rows]
    t0 = time.perf_counter()
    out = run(texts)
    seconds = time.perf_counter() - t0
    pred = [[w.lower() for w in words] for words in out]
    gold = [r["words"] for r in rows]
    norm_pred = [[SegmentInput.read(w).text for w in words] for words in pred]
    score = score_segmentations([[w for w in p if w] for p in norm_pred], gold).to_json()
    chars = sum(len(SegmentInput.read(t).text) for t in texts)
    return {"accuracy": float(np.mean([p == g for p, g in zip(pred, gold, strict=True)])),
            "f1": score["f1"], "precision": score["precision"], "recall": score["recall"],
            "items": len(rows), "chars": chars, "seconds": seconds,
            "chars_per_second": chars / seconds if seconds else 0.0,
            "errors": [{"input": t, "got": o, "gold": g} for t, o, g, p in
                       zip(texts, out, gold, pred, strict=True) if p != g][:12]}


def tune_cues(seg: Segmenter, rows: list[dict], grid: Sequence[float]) -> list[dict]:
    """Hashtag accuracy for each (case, digit, unmarked) weight triple of the grid."""
    out = []
    for case, digit, unmarked in itertools.product(grid, grid, grid):
        s = seg.with_options(cues=CueWeights(case, digit, unmarked))
        r = evaluate(our_segmenter(s), rows)
        out.append({"case": case, "digit": digit, "unmarked": unmarked,
                    "accuracy": r["accuracy"], "f1": r["f1"]})
    return out


def tune_unknown(seg: Segmenter, sets: dict[str, list[dict]],
                 flat: Sequence[float], scales: Sequence[float],
                 per_word: Sequence[float]) -> list[dict]:
    """Accuracy on every dev set: the flat per-character penalty against the spelling model."""
    configs: list[dict] = [{"unknown_penalty": p} for p in flat]
    configs += [{"unknown_penalty": None, "spelling_scale": s, "unknown_word_cost": c}
                for s in scales for c in per_word]
    out = []
    for cfg in configs:
        s = seg.with_options(**cfg)
        row = dict(cfg)
        for kind, rows in sets.items():
            row[kind] = evaluate(our_segmenter(s), rows)["accuracy"]
        out.append(row)
    return out


def cut_posteriors(seg: Segmenter, rows: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """(posterior, is a gold cut) for every offset of every text: the reliability plot's data."""
    probs: list[float] = []
    truth: list[bool] = []
    for k in range(0, len(rows), 128):
        chunk = rows[k:k + 128]
        results = seg.segment_many([r["input"] for r in chunk], posteriors=True)
        for r, res in zip(chunk, results, strict=True):
            gold = boundaries([SegmentInput.read(w).text for w in r["words"]])
            brk = SegmentInput.read(r["input"]).breaks
            for b, p in enumerate(res.boundary_posteriors or (), start=1):
                if b not in brk:  # a break is cut with probability 1 by construction
                    probs.append(p)
                    truth.append(b in gold)
    return np.array(probs), np.array(truth)


def reliability(probs: np.ndarray, truth: np.ndarray, bins: int = 10) -> list[dict]:
    """Per probability bin: the mean posterior, the fraction of true cuts, the count."""
    edges = np.linspace(0, 1, bins + 1)
    which = np.clip(np.digitize(probs, edges) - 1, 0, bins - 1)
    out = []
    for b in range(bins):
        m = which == b
        if m.any():
            out.append({"lo": float(edges[b]), "hi": float(edges[b + 1]),
                        "mean_p": float(probs[m].mean()), "observed": float(truth[m].mean()),
                        "n": int(m.sum())})
    return out


def model_summary() -> dict:
    """What the shipped model is (the page's provenance): its n-gram counts (from the file's
    header), its size, and the build settings."""
    import gzip

    from arsdecode.tasks.segment.segmenter import SEGMENT_LM
    from data_prep.prepare_segment_model import DEFAULTS

    counts = {}
    with gzip.open(SEGMENT_LM, "rt", encoding="utf-8") as f:
        for line in f:
            if line.startswith("ngram "):
                order, n = line.split()[1].split("=")
                counts[int(order)] = int(n)
            elif counts and not line.strip():
                break
    return {"path": str(SEGMENT_LM.relative_to(REPO)), "ngrams": counts,
            "bytes": SEGMENT_LM.stat().st_size, "settings": DEFAULTS}


def whole_process(tool: str, texts_file: Path, expected: list[list[str]]) -> dict:
    """Wall seconds of a fresh interpreter segmenting the file, imports and loading included
    (ours: the `arsdecode segment --file` command with the shipped model, as a user runs it;
    a tool: `segment_compare --run-tool`); its words must equal the in-process ones."""
    import subprocess
    import sys
    import tempfile

    out_file = Path(tempfile.mkdtemp(prefix="segment_english_")) / "out.txt"
    if tool == "ours":
        cmd = [sys.executable, "-m", "arsdecode", "segment", "--file", str(texts_file)]
    else:
        cmd = [sys.executable, "-m", "experiments.segment_compare", "--run-tool", tool,
               "--variant", "shipped", "--in", str(texts_file), "--out", str(out_file)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, check=True, cwd=REPO, env={"PATH": "/usr/bin:/bin"},
                          stdout=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - t0
    got = (proc.stdout if tool == "ours" else out_file.read_text(encoding="utf-8")).splitlines()
    if [line.split() for line in got] != expected:
        raise AssertionError(f"{tool}: the whole-process output differs from the in-process one")
    chars = sum(len(line.replace(" ", "")) for line in got)
    return {"seconds": seconds, "chars_per_second": chars / seconds}


def run(sets_dir: Path, *, tune: bool, process: bool, limit: int = 0) -> dict:
    """Everything the page shows: the tools and ours on the test sets (accuracy, F1, speed),
    whole-process speed on the held-out sentences, the reliability of our cut posteriors on
    the test sets, and with `tune` the dev-set grids that chose the settings."""
    import tempfile

    t0 = time.perf_counter()
    seg = Segmenter()
    seg.segment("warmup")  # the model's DP tables are built on first use: part of loading
    load = time.perf_counter() - t0
    test = load_sets(sets_dir, "test")
    if limit:
        test = {k: v[:limit] for k, v in test.items()}
    res: dict = {"sets": {k: {"items": len(v), "chars": sum(len(SegmentInput.read(r["input"])
                                                                 .text) for r in v)}
                          for k, v in test.items()},
                 "options": {"cues": vars(seg.options.cues), "spelling_scale":
                             seg.options.spelling_scale, "unknown_word_cost":
                             seg.options.unknown_word_cost, "unknown_max_length":
                             seg.options.unknown_max_length,
                             "posterior_scale": seg.options.posterior_scale}, "rows": []}
    runs: list[tuple[str, ManySegmenter, float]] = [("ours", our_segmenter(seg), load)]
    for tool in segment_tools.TOOLS:
        if segment_tools.available(tool):
            t0 = time.perf_counter()
            runs.append((tool, tool_segmenter(tool), time.perf_counter() - t0))
    text_file = Path(tempfile.mkdtemp(prefix="segment_english_")) / "sentences.txt"
    text_file.write_text("".join(r["input"] + "\n" for r in test["sentences"]),
                         encoding="utf-8")
    for name, segmenter, load_s in runs:
        row: dict = {"tool": name, "load_seconds": load_s}
        for kind, rows in test.items():
            row[kind] = evaluate(segmenter, rows)
        if process:
            expected = [[w.lower() for w in words] for words in
                        segmenter([r["input"] for r in test["sentences"]])]
            row["process"] = whole_process(name, text_file, expected)
        res["rows"].append(row)
    res["examples"] = {r.input: r.words for r in seg.segment_many(EXAMPLES)}
    res["model"] = model_summary()
    probs, truth = cut_posteriors(seg, [r for rows in test.values() for r in rows])
    res["reliability"] = reliability(probs, truth)
    res["brier"] = float(np.mean((probs - truth) ** 2))
    res["ece"] = expected_calibration_error(probs, truth)
    res["log_loss"] = log_loss(probs, truth)
    if tune:
        dev = load_sets(sets_dir, "dev")
        dev_rows = [r for rows in dev.values() for r in rows]
        best, grid = fit_posterior_scale(
            lambda a: cut_posteriors(seg.with_options(posterior_scale=a), dev_rows),
            grid=SCALE_GRID)
        res["tune_posterior_scale"] = {"best": best, "grid": grid}
        res["tune_unknown"] = tune_unknown(seg, dev, flat=(1.5, 2.5, 3.5),
                                           scales=(0.8, 1.0), per_word=(0.0, -6.0))
        res["tune_cues"] = tune_cues(seg, dev["hashtags"], grid=(0.0, 1.5, 3.0, 4.5))
    return res
