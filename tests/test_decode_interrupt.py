"""Issue 19 (section C): Ctrl-C of a long ARS decode reports the best path found so far.

It used to print nothing. Now `arsdecode decode` prints the best exactly scored path, marked
UNCERTIFIED, with its bound gap ln q(x*) - ln p(path), and exits 130; the library raises
`DecodeInterrupted` (a KeyboardInterrupt) carrying that partial result.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import maxarpa
from arsdecode.core.target import Target
from arsdecode.lattice import Lattice
from arsdecode.methods.ars import DecodeInterrupted, decode
from arsdecode.model import as_target_model

DATA = Path(__file__).resolve().parent.parent / "arsdecode" / "data"
MODEL = DATA / "state_union.5gram.maxarpa.gz"


@pytest.fixture(scope="module")
def lm():
    return maxarpa.load(MODEL)


def big_lattice(lm, length: int, width: int, seed: int = 0) -> Lattice:
    """Random frequent words with random emissions: ARS needs hundreds of iterations."""
    rng = random.Random(seed)
    words = [w for w in lm.vocab[:2000] if w not in ("<s>", "</s>", "<unk>")]
    return Lattice.from_lists([[(w, round(rng.uniform(-2, 0), 3)) for w in rng.sample(words, width)]
                               for _ in range(length)])


def test_an_interrupted_decode_carries_the_best_path_seen_and_its_gap(lm):
    lattice = big_lattice(lm, 20, 30)
    seen: list[tuple[list[str], float, float]] = []

    def stop_at_ten(iteration, tokens, log_q, log_p):
        seen.append((tokens, log_q, log_p))
        if iteration == 10:
            raise KeyboardInterrupt  # what Ctrl-C raises, here at a known point

    with pytest.raises(DecodeInterrupted) as info:
        decode(lm, lattice, on_iteration=stop_at_ten)
    r = info.value.result
    assert isinstance(info.value, KeyboardInterrupt) and not r.certified
    best = max(seen, key=lambda s: s[2])
    assert r.tokens == best[0] and r.log_p == best[2]
    # an exact score of that path
    assert r.log_p == Target(as_target_model(lm), lattice).log_p(r.tokens)
    assert r.log_q == min(q for _, q, _ in seen)
    assert info.value.gap == r.log_q - r.log_p > 0
    # The gap bounds the distance to the optimum.
    assert decode(lm, lattice).log_p <= r.log_q


def test_ctrl_c_of_the_cli_prints_the_best_path_uncertified_and_exits_130(lm, tmp_path):
    lattice = big_lattice(lm, 100, 200)  # minutes of ARS (400 iterations took 40 s here)
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"positions": [
        [[t, float(w)] for t, w in zip(toks, ws, strict=True)]
        for toks, ws in zip(lattice.tokens, lattice.log_emissions, strict=True)]}))
    for flags in ([], ["--json"]):
        proc = subprocess.Popen([sys.executable, "-m", "arsdecode", "decode", "--lm", str(MODEL),
                                 "--lattice", str(path), "--method", "ars", *flags],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                # A job a shell starts in the background inherits SIGINT
                                # ignored, and Python then installs no handler: give the child
                                # the default disposition, as in a terminal.
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        time.sleep(5)  # past loading the model and the first iterations (0.01 s each)
        assert proc.poll() is None, "the decode ended before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "Traceback" not in err and "UNCERTIFIED" in err
        if flags:
            result = json.loads(out)
            tokens, log_p, gap = result["tokens"], result["log_p"], result["gap"]
            assert result["certified"] is False and result["interrupted"] is True
            assert gap == result["log_q"] - log_p > 0
        else:
            lines = out.splitlines()
            tokens = lines[0].split(" ")
            assert "UNCERTIFIED" in lines[1] and "gap=" in lines[1]
            log_p = float(lines[1].split("log_p=")[1].split()[0])
            gap = float(lines[1].split("gap=")[1].split()[0])
            assert gap > 0
        assert len(tokens) == len(lattice)
        # the path's exact score
        assert abs(Target(as_target_model(lm), lattice).log_p(tokens) - log_p) < 1e-5
