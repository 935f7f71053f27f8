"""Issue 19 (section C): Ctrl-C of a long ARS decode reports the best path found so far.

It used to print nothing. Now `arsdecode decode` prints the best exactly scored path, marked
UNCERTIFIED, with its bound gap ln q(x*) - ln p(path), and exits 130; the library raises
`DecodeInterrupted` (a KeyboardInterrupt) carrying that partial result. Issue 29 (item E): the
same on word lattices (`--method ars`) and for `--nbest` (ARS's k-best, `KBestInterrupted`).

The command-line tests signal the child once it has printed its first iteration (`--trace`),
not after a fixed sleep: on a loaded machine a sleep can end before any path is scored.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from stop_signals import default_stop_signals

import maxarpa
from arsdecode.api import decode_kbest, decode_many
from arsdecode.core.target import Target
from arsdecode.lattice import Lattice, WordLattice
from arsdecode.methods.ars import DecodeInterrupted, dag_ars_decode, decode
from arsdecode.methods.ars_paths import path_log_p
from arsdecode.methods.dispatch import MEMORY_BUDGET_ENV, decode_word_lattice
from arsdecode.methods.kbest import KBestInterrupted
from arsdecode.methods.lockstep import DecodeManyInterrupted
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


def interrupt_after_first_iteration(*args: str, signum: int = signal.SIGINT
                                    ) -> tuple[int, str, str]:
    """Run `arsdecode decode ... --method ars --trace 100000`, send `signum` (SIGINT) once the
    first iteration's trace line is on stderr (a path has been scored), and return (exit
    status, stdout, stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "arsdecode", "decode", "--lm", str(MODEL),
                             *args, "--method", "ars", "--trace", "100000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # A job a shell starts in the background inherits SIGINT ignored,
                            # and Python then installs no handler: give the child the default
                            # disposition, as in a terminal.
                            preexec_fn=default_stop_signals)
    assert proc.stderr is not None
    before = []
    while not (line := proc.stderr.readline()).startswith("arsdecode: iteration 1:"):
        assert line, f"the decode ended before its first iteration: {''.join(before)}"
        before.append(line)
    assert proc.poll() is None, "the decode ended before it could be interrupted"
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, line + err


def parse_interrupted(out: str, json_output: bool) -> tuple[list[str], float, float]:
    """(path, ln p, gap) of an interrupted decode's stdout, text or --json."""
    if json_output:
        result = json.loads(out)
        assert result["certified"] is False and result["interrupted"] is True
        assert result["gap"] == result["log_q"] - result["log_p"]
        return result.get("tokens", result.get("words")), result["log_p"], result["gap"]
    lines = out.splitlines()
    assert len(lines) == 2 and "UNCERTIFIED: interrupted" in lines[1] and "gap=" in lines[1]
    return (lines[0].split(" "), float(lines[1].split("log_p=")[1].split()[0]),
            float(lines[1].split("gap=")[1].split()[0]))


def lattice_json(lattice: Lattice, *, dag: bool) -> str:
    """The lattice as the CLI reads it: a confusion network, or the same chain as a JSON DAG
    (a word lattice: node i -> i + 1 per candidate)."""
    if dag:
        return json.dumps({"start": 0, "finals": {str(len(lattice)): 0.0}, "arcs": [
            [i, i + 1, t, float(w)] for i, (toks, ws) in
            enumerate(zip(lattice.tokens, lattice.log_emissions, strict=True))
            for t, w in zip(toks, ws, strict=True)]})
    return json.dumps({"positions": [
        [[t, float(w)] for t, w in zip(toks, ws, strict=True)]
        for toks, ws in zip(lattice.tokens, lattice.log_emissions, strict=True)]})


@pytest.mark.parametrize("json_output", [False, True])
def test_ctrl_c_of_the_cli_prints_the_best_path_uncertified_and_exits_130(lm, tmp_path,
                                                                          json_output):
    lattice = big_lattice(lm, 100, 200)  # minutes of ARS (400 iterations took 40 s here)
    path = tmp_path / "big.json"
    path.write_text(lattice_json(lattice, dag=False))
    status, out, err = interrupt_after_first_iteration(
        "--lattice", str(path), *(["--json"] if json_output else []))
    assert status == 130, err
    assert "Traceback" not in err and "UNCERTIFIED" in err
    tokens, log_p, gap = parse_interrupted(out, json_output)
    assert gap > 0 and len(tokens) == len(lattice)
    # the path's exact score
    assert abs(Target(as_target_model(lm), lattice).log_p(tokens) - log_p) < 1e-5


def test_an_interrupted_word_lattice_decode_carries_the_best_path_seen_and_its_gap(lm):
    """Issue 29 E: ARS on a word lattice kept nothing on Ctrl-C (a bare KeyboardInterrupt)."""
    wl = WordLattice.from_confusion(big_lattice(lm, 20, 30))
    seen: list[tuple[list[str], float, float]] = []

    def stop_at_ten(iteration, words, log_q, log_p):
        seen.append((words, log_q, log_p))
        if iteration == 10:
            raise KeyboardInterrupt  # what Ctrl-C raises, here at a known point

    with pytest.raises(DecodeInterrupted) as info:
        decode_word_lattice(lm, wl, method="ars", on_iteration=stop_at_ten)
    r = info.value.result
    assert isinstance(info.value, KeyboardInterrupt) and not r.certified and r.states == -1
    best = max(seen, key=lambda s: s[2])
    assert r.words == best[0] and r.log_p == best[2] and r.iterations == 10
    assert r.log_p == path_log_p(as_target_model(lm), wl, r.arcs, int(wl.dst[r.arcs[-1]]))
    assert r.log_q == min(q for _, q, _ in seen)
    assert info.value.gap == r.log_q - r.log_p > 0
    # The gap bounds the distance to the optimum (the exact expansion's, and ARS's own).
    optimum = decode_word_lattice(lm, wl, method="full").log_p
    assert r.log_p <= optimum <= r.log_q
    assert dag_ars_decode(lm, wl).log_p == pytest.approx(optimum, abs=1e-9)


@pytest.mark.parametrize("json_output", [False, True])
def test_ctrl_c_of_a_word_lattice_decode_prints_the_best_path_uncertified(lm, tmp_path,
                                                                          json_output):
    """Issue 29 E: `decode --lattice DAG --method ars` printed only `arsdecode: interrupted`."""
    lattice = big_lattice(lm, 100, 200)  # hundreds of ARS iterations (gap 141 after 100)
    path = tmp_path / "big.dag.json"
    path.write_text(lattice_json(lattice, dag=True))
    status, out, err = interrupt_after_first_iteration(
        "--lattice", str(path), *(["--json"] if json_output else []))
    assert status == 130, err
    assert "Traceback" not in err and "UNCERTIFIED" in err and "at most" in err
    words, log_p, gap = parse_interrupted(out, json_output)
    assert gap > 0 and len(words) == len(lattice)
    # the path's exact score: on this chain each word names its arc
    wl = WordLattice.from_confusion(lattice)
    arcs = [next(a for a in range(len(wl.words)) if int(wl.src[a]) == i and wl.words[a] == w)
            for i, w in enumerate(words)]
    assert abs(path_log_p(as_target_model(lm), wl, arcs, len(lattice)) - log_p) < 1e-5


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminated_decode_prints_the_best_path_and_exits_128_plus_the_signal(lm, tmp_path,
                                                                               signum):
    """SIGTERM/SIGHUP are handled as Ctrl-C (the best path so far, UNCERTIFIED), but the exit
    status is the shell's for that signal (143, 129), as the README promises: the partial
    answer used to exit 130 whatever the signal."""
    lattice = big_lattice(lm, 100, 200)
    path = tmp_path / "big.dag.json"
    path.write_text(lattice_json(lattice, dag=True))
    status, out, err = interrupt_after_first_iteration("--lattice", str(path), signum=signum)
    assert status == 128 + signum, err
    assert "Traceback" not in err and "UNCERTIFIED" in err
    words, _, gap = parse_interrupted(out, False)
    assert gap > 0 and len(words) == len(lattice)


def test_an_interrupted_kbest_carries_the_best_paths_seen_within_their_gap(lm):
    """Issue 29 E: ARS's k-best kept nothing on Ctrl-C. The K best paths scored so far come
    back, each exactly scored, and each within `gap` of the true path of its rank."""
    lattice = big_lattice(lm, 12, 20, seed=3)
    k = 5

    def stop_at_three(iteration, tokens, log_q, log_p):
        if iteration == 3:
            raise KeyboardInterrupt

    with pytest.raises(KBestInterrupted) as info:
        decode_kbest(lm, lattice, k, method="ars", on_iteration=stop_at_three)
    kb, gap = info.value.result, info.value.gap
    assert isinstance(info.value, KeyboardInterrupt) and not kb.certified
    assert kb.iterations == 3 and len(kb.paths) == k and gap > 0
    assert len({p.indices for p in kb.paths}) == k
    assert [p.log_p for p in kb.paths] == sorted((p.log_p for p in kb.paths), reverse=True)
    target = Target(as_target_model(lm), lattice)
    for p in kb.paths:
        assert p.log_p == target.log_p(p.tokens)
    exact = decode_kbest(lm, lattice, k, method="full")
    assert exact.certified
    for found, true in zip(kb.paths, exact.paths, strict=True):
        assert found.log_p <= true.log_p + 1e-9 and true.log_p <= found.log_p + gap + 1e-9


@pytest.mark.parametrize("json_output", [False, True])
def test_ctrl_c_of_nbest_prints_the_paths_so_far_uncertified(lm, tmp_path, json_output):
    """Issue 29 E: `decode --nbest K --method ars` printed only `arsdecode: interrupted`."""
    lattice = big_lattice(lm, 100, 200)
    path = tmp_path / "big.json"
    path.write_text(lattice_json(lattice, dag=False))
    status, out, err = interrupt_after_first_iteration(
        "--lattice", str(path), "--nbest", "3", *(["--json"] if json_output else []))
    assert status == 130, err
    assert "Traceback" not in err and "UNCERTIFIED" in err and "of its rank" in err
    if json_output:
        result = json.loads(out)
        assert result["certified"] is False and result["interrupted"] is True
        paths = [(p["tokens"], p["log_p"]) for p in result["nbest"]]
        gap = result["gap"]
    else:
        lines = out.splitlines()
        assert "UNCERTIFIED: interrupted" in lines[-1]
        gap = float(lines[-1].split("gap=")[1].split()[0])
        paths = [(line.split("\t")[2].split(" "), float(line.split("\t")[1]))
                 for line in lines[:-1]]
    assert len(paths) == 3 and gap > 0
    target = Target(as_target_model(lm), lattice)
    for tokens, log_p in paths:
        assert abs(target.log_p(tokens) - log_p) < 1e-5


class StopsAtQuery:
    """The real model, whose n-th `log_prob` query raises KeyboardInterrupt: Ctrl-C landing
    in a query of a long corpus decode, at a known point."""

    def __init__(self, model, n: int) -> None:
        self.model, self.left = model, n

    def __getattr__(self, name):
        return getattr(self.model, name)

    def log_prob(self, contexts, words):
        self.left -= 1
        if self.left == 0:
            raise KeyboardInterrupt
        return self.model.log_prob(contexts, words)


def test_an_interrupted_decode_many_keeps_the_finished_results_and_the_best_paths_so_far(lm):
    """Issue 29 E: decode_many kept nothing on Ctrl-C. A lattice done keeps its certified
    result; one in progress its best path so far, uncertified, within its gap of the optimum."""
    small = Lattice.from_lists([[("the", 0.0), ("a", -1.0)], [("united", 0.0), ("unit", -1.0)]])
    lattices = [small, big_lattice(lm, 20, 30, seed=1), big_lattice(lm, 20, 30, seed=2)]
    with pytest.raises(DecodeManyInterrupted) as info:
        decode_many(StopsAtQuery(as_target_model(lm), 25), lattices, method="ars")
    results = info.value.results
    assert isinstance(info.value, KeyboardInterrupt) and len(results) == 3
    done = decode(lm, small)
    assert results[0] is not None and results[0].certified
    assert (results[0].tokens, results[0].log_p) == (done.tokens, done.log_p)
    for lattice, r in zip(lattices[1:], results[1:], strict=True):
        assert r is not None and not r.certified and r.states == -1
        assert r.log_p == Target(as_target_model(lm), lattice).log_p(r.tokens)
        optimum = decode_many(lm, [lattice], method="full")[0].log_p
        assert r.log_p <= optimum <= r.log_q and r.log_q - r.log_p > 0


def test_an_interrupted_decode_many_keeps_the_full_dps_results_beside_ars(lm, monkeypatch):
    """auto: the compiled full DP solves the small lattices first; Ctrl-C during ARS on the
    lattice past its budget keeps the DP's results as well as ARS's best path so far."""
    monkeypatch.setenv(MEMORY_BUDGET_ENV, "64")  # the 40 x 300 lattice goes to ARS
    small = Lattice.from_lists([[("the", 0.0), ("a", -1.0)], [("united", 0.0), ("unit", -1.0)]])
    lattices = [small, big_lattice(lm, 20, 30, seed=1), big_lattice(lm, 40, 300, seed=2)]
    expected = decode_many(lm, lattices[:2])
    with pytest.raises(DecodeManyInterrupted) as info:
        decode_many(StopsAtQuery(as_target_model(lm), 5), lattices)
    results = info.value.results
    assert [r.method if r else None for r in results] == ["full", "full", "ars"]
    for r, e in zip(results[:2], expected, strict=True):
        assert r is not None and r.certified and (r.tokens, r.log_p) == (e.tokens, e.log_p)
    partial = results[2]
    assert partial is not None and not partial.certified and partial.log_q > partial.log_p
    assert partial.log_p == Target(as_target_model(lm), lattices[2]).log_p(partial.tokens)


@pytest.mark.parametrize("dag", [False, True])
def test_trace_without_ars_is_refused_before_the_work(lm, tmp_path, dag):
    """--trace shows ARS's iterations: with the full DP (auto's choice here) it would print
    nothing, so it is refused with one line naming the option, exit status 2."""
    path = tmp_path / ("small.dag.json" if dag else "small.json")
    path.write_text(lattice_json(big_lattice(lm, 3, 3), dag=dag))
    proc = subprocess.run([sys.executable, "-m", "arsdecode", "decode", "--lm", str(MODEL),
                           "--lattice", str(path), "--trace"], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "--trace" in proc.stderr
