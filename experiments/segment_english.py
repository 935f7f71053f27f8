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

from arsdecode.tasks.segment.cues import CueWeights, SegmentInput
from arsdecode.tasks.segment.evaluation import boundaries, score_segmentations
from arsdecode.tasks.segment.segmenter import Segmenter
from data_prep.segment_devsets import read_set
from experiments import segment_tools

KINDS = ("hashtags", "urls", "sentences")
ManySegmenter = Callable[[Sequence[str]], list[list[str]]]


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
