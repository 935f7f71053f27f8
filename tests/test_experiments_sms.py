"""The SMS experiment runner and its renderers (experiments/sms_experiments.py, report/sms_*).

A tiny real run: the embedded state_union model cut to 3-grams, two sentences typed through the
keypad channel. Checked: rendering is a pure function of the results JSON (the same page and
plots twice, `--render-only` included), and the page's Reproduce block is the command that
made it (rerunning it gives the same page apart from timings).
"""

from __future__ import annotations

import gzip
import json
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import maxarpa
from arsdecode.tasks.sms.keypad import KeypadChannel, sample_sentence
from experiments import sms_experiments
from experiments.report.sms_markdown import markdown

REPO = Path(__file__).resolve().parents[1]
EMBEDDED = REPO / "arsdecode" / "data" / "state_union.5gram.maxarpa.gz"

pytestmark = pytest.mark.timeout(900)  # two tiny runs, ~40 s together

SENTENCES = [["we", "must", "act", "now", "."],
             ["the", "state", "of", "our", "union", "is", "strong", "."]]
OPTIONS = ["--orders", "3", "--jobs", "1", "--decode-per-length", "0", "--sample-per-length", "0",
           "--table3-sentences", "1", "--timing-sentences", "2", "--load-repeats", "1",
           "--example-samples", "30", "--fig3-samples", "30"]


def cut_to_trigrams(maxarpa_gz: Path, out: Path) -> None:
    """A plain 3-gram ARPA from the embedded MAX-ARPA: orders 1-3, logp/ngram/bow columns."""
    sections: dict[int, list[str]] = {1: [], 2: [], 3: []}
    order = 0
    with gzip.open(maxarpa_gz, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.endswith("-grams:"):
                order = int(line[1:].split("-")[0])
            elif line.startswith("\\"):
                order = 0  # blanks sections, \end\
            elif line and order in sections:
                cols = line.split("\t")
                sections[order].append("\t".join(cols[:3] if order < 3 else cols[:2]))
    lines = ["\\data\\"] + [f"ngram {o}={len(v)}" for o, v in sections.items()]
    for o, rows in sections.items():
        lines += ["", f"\\{o}-grams:", *rows]
    out.write_text("\n".join(lines + ["", "\\end\\", ""]), encoding="utf-8")


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> dict[str, Path]:
    data = tmp_path_factory.mktemp("sms_data")
    cut_to_trigrams(EMBEDDED, data / "lm.3.arpa")
    lm = maxarpa.load(data / "lm.3.arpa")
    channel = KeypadChannel.from_vocab(lm.vocab)
    rng = np.random.default_rng(7)
    records = [{"id": f"L{len(w):02d}-000", "words": w, "observation": sample_sentence(w, rng),
                "oov": 0} for w in SENTENCES]
    (data / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    widths = [w for r in records for w in channel.build_lattice(r["observation"]).widths]
    manifest = {  # what data_prep would say, except the command and the training figures
        "command": "# data: built by tests/test_experiments_sms.py",
        "corpora": ["state_union"], "seed": 0, "k": 64.0, "sentences": 2,
        "train_sentences": 0, "train_tokens": 0, "heldout_sentences": 2,
        "vocab_size": len(lm.vocab), "models": {"3": {"ngrams": dict(enumerate(lm.counts, 1))}},
        "test_set": {"per_length": {str(len(w)): 1 for w in SENTENCES}, "total": 2,
                     "with_oov": 0},
        "channel": {"candidates_per_position": {"median": float(np.median(widths)),
                                                "mean": float(np.mean(widths)),
                                                "max": max(widths)}},
    }
    (data / "manifest.json").write_text(json.dumps(manifest))
    out = tmp_path_factory.mktemp("sms_out")
    paths = {"data": data, "json": out / "results.json", "doc": out / "results.md",
             "img": out / "img"}
    argv = ["--data", str(data), *OPTIONS, "--json", str(paths["json"]),
            "--doc", str(paths["doc"]), "--img", str(paths["img"])]
    assert sms_experiments.main(argv) == 0
    return paths


def reproduce_block(doc: str) -> list[str]:
    block = doc.split("```bash\n", 1)[1].split("\n```", 1)[0]
    return [line.split("   # ")[0] for line in block.splitlines()]


def images(img: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(img.glob("*.png"))}


def without_timings(x: object, timing: bool = False) -> object:
    """The results with every timing (seconds, load averages, profile shares) set to 0."""
    if isinstance(x, dict):
        return {k: without_timings(v, timing or "seconds" in k or k in ("loadavg_1min", "shares"))
                for k, v in x.items()}
    if isinstance(x, list):
        return [without_timings(v, timing) for v in x]
    if timing and isinstance(x, (int, float)) and not isinstance(x, bool):
        return 0
    return x


def test_rendering_is_a_function_of_the_json(tiny_run):
    res = json.loads(tiny_run["json"].read_text())
    kwargs = {"images": {"fig2": "a.png", "fig3ab": "b.png", "fig3cd": "c.png"},
              "json_path": "r.json", "reproduce": ["prep", "run", "render"]}
    assert markdown(res, **kwargs) == markdown(json.loads(json.dumps(res)), **kwargs)
    doc, pngs = tiny_run["doc"].read_text(), images(tiny_run["img"])
    assert set(pngs) == {"sms_fig2_decoding.png", "sms_fig3ab_sampling_trace.png",
                         "sms_fig3cd_sampling_by_length.png"}
    assert sms_experiments.main(["--render-only", str(tiny_run["json"]),
                                 "--doc", str(tiny_run["doc"]),
                                 "--img", str(tiny_run["img"])]) == 0
    assert tiny_run["doc"].read_text() == doc
    assert images(tiny_run["img"]) == pngs


def test_page_names_its_own_command(tiny_run):
    doc = tiny_run["doc"].read_text()
    assert doc.startswith("# SMS retrieval: the paper's experiments on state_union\n")
    prep, run, render = reproduce_block(doc)
    assert prep == "# data: built by tests/test_experiments_sms.py"
    assert shlex.split(run)[3:] == ["--data", str(tiny_run["data"]), *OPTIONS,
                                    "--json", str(tiny_run["json"]),
                                    "--doc", str(tiny_run["doc"]), "--img", str(tiny_run["img"])]
    assert shlex.split(render)[3:] == ["--doc", str(tiny_run["doc"]), "--img", str(tiny_run["img"]),
                                       "--render-only", str(tiny_run["json"])]
    # What the page says about the library follows the code, not an older version of it.
    assert "backward_values" not in doc and "viterbi_indices" in doc
    assert "`arsdecode.methods.ars.adapt`" in doc and "stop_when_adapted" not in doc


def test_reproduce_block_reproduces_the_page(tiny_run, tmp_path):
    doc = tiny_run["doc"].read_text()
    res = json.loads(tiny_run["json"].read_text())
    saved = tmp_path / "first.json"
    saved.write_text(json.dumps(res))
    run = shlex.split(reproduce_block(doc)[1])
    assert run[:3] == [".venv/bin/python", "-m", "experiments.sms_experiments"]
    subprocess.run([sys.executable, *run[1:]], cwd=REPO, check=True, capture_output=True,
                   timeout=600)
    again = json.loads(tiny_run["json"].read_text())
    assert without_timings(again) == without_timings(res)
    new_doc = tiny_run["doc"].read_text()
    assert reproduce_block(new_doc) == reproduce_block(doc)
    assert new_doc.splitlines()[0] == doc.splitlines()[0]
    kwargs = {"images": {"fig2": "a.png", "fig3ab": "b.png", "fig3cd": "c.png"},
              "json_path": "r.json", "reproduce": reproduce_block(doc)}
    assert markdown(without_timings(again), **kwargs) == markdown(without_timings(res), **kwargs)


def test_render_only_refuses_run_options(tiny_run, capsys):
    with pytest.raises(SystemExit) as err:
        sms_experiments.main(["--render-only", str(tiny_run["json"]), "--seed", "3"])
    assert err.value.code == 2
    assert "--render-only takes the run's options from the JSON" in capsys.readouterr().err
