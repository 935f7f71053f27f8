"""The `arsdecode` command line, run as a subprocess: JSON output, determinism, input errors.

Why subprocesses: the contract is about what a script sees (one JSON object on stdout, exit
status 2 and a single stderr line with no traceback on bad input), so the tests look at exactly
that, for an ARPA model and for the same model converted to MAX-ARPA.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from stop_signals import default_stop_signals

from ars_fixtures import make_lattice
from arsdecode.api import DEFAULT_LM
from arsdecode.testing.brute import brute_model
from stream_lines import first_line

TIGHT = 1e-9
DECODE_KEYS = {"tokens", "log_p", "log_q", "iterations", "states", "ngrams_by_order", "timing",
               "certified", "oov"}
SAMPLE_KEYS = {"samples", "log_p", "trials", "acceptance_rate", "log_Z", "log_Z_ci"}


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "arsdecode", *args], capture_output=True, text=True,
        timeout=timeout,
    )


def run_json(*args: str) -> dict:
    proc = run(*args, "--json")
    assert proc.returncode == 0, (args, proc.stderr)
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout
    obj = json.loads(lines[0])
    assert isinstance(obj, dict)
    return obj


@pytest.fixture(scope="module")
def cli_models(real_lms, tmp_path_factory) -> dict[str, Path]:
    """The 3-gram ARPA and its MAX-ARPA conversion (by the maxarpa command)."""
    arpa = real_lms[3].path
    out = tmp_path_factory.mktemp("cli") / "su3.maxarpa"
    proc = subprocess.run(
        [sys.executable, "-m", "maxarpa", "convert", "--quiet", str(arpa), str(out)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return {"arpa": arpa, "maxarpa": out}


@pytest.fixture(scope="module")
def cli_lattices(real_lms, tmp_path_factory) -> list[tuple[Path, object]]:
    d = tmp_path_factory.mktemp("cli_lattices")
    rng = random.Random(17)
    out = []
    while len(out) < 3:
        lattice = make_lattice(rng, real_lms[3], max_len=4, neg_inf=0.3)
        if lattice.num_paths() < 4:
            continue
        path = d / f"lat{len(out)}.json"
        path.write_text(json.dumps(lattice.to_json_obj()))  # -inf is written as -Infinity
        out.append((path, lattice))
    return out


@pytest.mark.parametrize("kind", ["arpa", "maxarpa"])
def test_decode_json_matches_brute_force(real_lms, cli_models, cli_lattices, kind):
    for path, lattice in cli_lattices:
        ref = brute_model(real_lms[3].lm, lattice)
        obj = run_json("decode", "--lm", str(cli_models[kind]), "--lattice", str(path))
        assert DECODE_KEYS <= set(obj), sorted(obj)
        assert abs(obj["log_p"] - ref.best_log_p) <= TIGHT, (path.read_text(), obj, ref.best)
        assert tuple(obj["tokens"]) in ref.near_best(TIGHT), (obj["tokens"], ref.best)
        assert obj["log_q"] >= obj["log_p"] - TIGHT
        assert isinstance(obj["iterations"], int) and obj["iterations"] >= 1
        assert isinstance(obj["states"], int) and obj["states"] >= 1
        assert isinstance(obj["ngrams_by_order"], dict)
        assert all(int(k) >= 1 and v >= 0 for k, v in obj["ngrams_by_order"].items())
        assert obj["timing"]["seconds"] >= 0 and obj["certified"] is True
        assert obj["oov"] == {"count": 0, "tokens": []}


@pytest.mark.parametrize("kind", ["arpa", "maxarpa"])
def test_sample_json_is_reproducible(real_lms, cli_models, cli_lattices, kind):
    path, lattice = cli_lattices[0]
    ref = brute_model(real_lms[3].lm, lattice)
    args = ("sample", "--lm", str(cli_models[kind]), "--lattice", str(path), "-n", "50",
            "--seed", "7")
    a, b = run_json(*args), run_json(*args)
    assert SAMPLE_KEYS <= set(a), sorted(a)
    assert {k: a[k] for k in SAMPLE_KEYS} == {k: b[k] for k in SAMPLE_KEYS}
    a.pop("timing"), b.pop("timing")
    assert a == b  # only "timing" may differ between runs with one seed
    assert len(a["samples"]) == len(a["log_p"]) == 50
    for toks, lp in zip(a["samples"], a["log_p"], strict=True):
        assert abs(ref.score(toks) - lp) <= TIGHT, (toks, lp)
    assert a["trials"] >= 50 and 0 < a["acceptance_rate"] <= 1
    lo, hi = a["log_Z_ci"]
    assert lo <= a["log_Z"] <= hi


def test_sample_same_across_model_formats(cli_models, cli_lattices):
    path, _ = cli_lattices[1]
    common = ("--lattice", str(path), "-n", "30", "--seed", "3")
    a = run_json("sample", "--lm", str(cli_models["arpa"]), *common)
    b = run_json("sample", "--lm", str(cli_models["maxarpa"]), *common)
    assert a["samples"] == b["samples"] and a["log_p"] == b["log_p"]


BAD_LATTICES = {
    "empty_positions": '{"positions": []}',
    "empty_position": '{"positions": [[["the", -1.0]], []]}',
    "nan_weight": '{"positions": [[["the", NaN]]]}',
    "nan_string": '{"positions": [[["the", "NaN"]]]}',
    "unknown_shape_list": '[[["the", -1.0]]]',
    "unknown_shape_key": '{"lattice": [[["the", -1.0]]]}',
    "bad_candidate": '{"positions": [["the"]]}',
    "all_neg_inf": '{"positions": [[["the", -Infinity]]]}',
    "not_json": '{"positions": [[["the", -1.0]]',
}


@pytest.mark.parametrize("command", ["decode", "sample"])
@pytest.mark.parametrize("name", sorted(BAD_LATTICES))
def test_bad_lattice_exits_2_with_one_line(cli_models, tmp_path, name, command):
    path = tmp_path / f"{name}.json"
    path.write_text(BAD_LATTICES[name])
    extra = ["-n", "5"] if command == "sample" else []
    proc = run(command, "--lm", str(cli_models["arpa"]), "--lattice", str(path), *extra, "--json")
    check_error(proc, name)


def test_missing_lattice_file(cli_models, tmp_path):
    proc = run("decode", "--lm", str(cli_models["arpa"]), "--lattice", str(tmp_path / "no.json"))
    check_error(proc, "missing lattice")


def test_missing_model_file(cli_lattices, tmp_path):
    path, _ = cli_lattices[0]
    proc = run("decode", "--lm", str(tmp_path / "no.arpa"), "--lattice", str(path))
    check_error(proc, "missing model")


def check_error(proc: subprocess.CompletedProcess, what: str) -> None:
    assert proc.returncode == 2, (what, proc.returncode, proc.stderr)
    assert proc.stdout == "", (what, proc.stdout)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, (what, proc.stderr)
    assert "Traceback" not in proc.stderr, (what, proc.stderr)


# ---- issue 9 C and E on the embedded model (no lmplz or corpus needed) ------------------

EMBEDDED = str(DEFAULT_LM)
OOV_LATTICE = {"positions": [[["the", -0.1], ["a", -1.0], ["qqzzx", -0.5]],
                             [["nation", -0.2], ["people", -0.3]],
                             [["is", 0.0], ["was", -0.4], ["blorfx", -1.0]]]}


@pytest.fixture(scope="module")
def small_lattice(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("small") / "lat.json"
    path.write_text(json.dumps(OOV_LATTICE))
    return path


def test_oov_tokens_are_counted_in_json_and_stderr(small_lattice):
    proc = run("decode", "--lm", EMBEDDED, "--lattice", str(small_lattice), "--json")
    assert proc.returncode == 0, proc.stderr
    obj = json.loads(proc.stdout)
    assert obj["oov"] == {"count": 2, "tokens": ["qqzzx", "blorfx"]}
    assert "2 lattice candidate(s)" in proc.stderr and "qqzzx" in proc.stderr
    proc = run("sample", "--lm", EMBEDDED, "--lattice", str(small_lattice), "-n", "3", "--json")
    assert json.loads(proc.stdout)["oov"]["count"] == 2


def test_decode_stopped_early_exits_3_and_says_so(small_lattice):
    proc = run("decode", "--lm", EMBEDDED, "--lattice", str(small_lattice),
               "--max-iterations", "1", "--method", "ars")
    assert proc.returncode == 3, proc.stderr
    assert "UNCERTIFIED" in proc.stdout and "UNCERTIFIED" in proc.stderr
    # The full DP has no iterations to stop: the option does not apply there, and is refused
    # by name before any work rather than silently dropped (issue 30: one way in).
    proc = run("decode", "--lm", EMBEDDED, "--lattice", str(small_lattice),
               "--max-iterations", "1", "--method", "full", "--json")
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert "'max_iterations' does not apply to method 'full'" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = run("decode", "--lm", EMBEDDED, "--lattice", str(small_lattice), "--method", "full",
               "--json")
    out = json.loads(proc.stdout)
    assert proc.returncode == 0 and out["certified"] and out["method"] == "full"
    for bad in ("0", "-1"):
        proc = run("decode", "--lm", EMBEDDED, "--lattice", str(small_lattice),
                   "--max-iterations", bad)
        check_error(proc, f"--max-iterations {bad}")
        assert "--max-iterations" in proc.stderr


@pytest.mark.parametrize("flag", ["--fst", "--graphml"])
def test_unwritable_output_fails_before_the_work(small_lattice, tmp_path, flag):
    target = tmp_path / "no_such_dir" / "q.out"
    proc = run("decode", "--lm", EMBEDDED, "--lattice", str(small_lattice), flag, str(target))
    check_error(proc, flag)
    assert str(target) in proc.stderr and ".tmp" not in proc.stderr


def test_outputs_are_written_whole(small_lattice, tmp_path):
    fst, graphml = tmp_path / "q.fst", tmp_path / "q.graphml"
    proc = run("decode", "--lm", EMBEDDED, "--lattice", str(small_lattice), "--fst", str(fst),
               "--graphml", str(graphml))
    assert proc.returncode == 0, proc.stderr
    import networkx as nx
    import pynini

    assert pynini.Fst.read(str(fst)).num_states() >= 4
    assert nx.read_graphml(graphml).number_of_nodes() >= 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.fst", "q.graphml"]  # no temp file


def test_a_failed_output_write_keeps_the_old_file_and_names_the_user_path(tmp_path):
    """--fst, --graphml and --conll go through maxarpa's one atomic writer, as the CLI
    calls it: a full disk mid-write leaves the old file and no temporary file, and the error
    names the user's path (what the CLI prints), not the temporary one."""
    import errno

    from maxarpa.output import atomic_output

    out = tmp_path / "result.fst"
    out.write_text("old")
    with pytest.raises(OSError) as info, atomic_output(out) as tmp:
        tmp.write_text("partial")
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp))
    assert info.value.filename == str(out) and info.value.errno == errno.ENOSPC
    assert out.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["result.fst"]


def test_broken_pipe_exits_quietly(small_lattice):
    proc = subprocess.run(
        f"{sys.executable} -m arsdecode sample --lm {EMBEDDED} --lattice {small_lattice} "
        "-n 200000 --jsonl | head -1", shell=True, capture_output=True, text=True, timeout=300,
        executable="/bin/bash",
    )
    assert len(proc.stdout.splitlines()) == 1
    assert "Broken pipe" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    proc = subprocess.run(
        f"set -o pipefail; {sys.executable} -m arsdecode sample --lm {EMBEDDED} "
        f"--lattice {small_lattice} -n 200000 | head -1", shell=True, capture_output=True,
        text=True, timeout=300, executable="/bin/bash",
    )
    assert proc.returncode == 0, proc.stderr


def test_streamed_samples_survive_an_interrupt(small_lattice):
    """--jsonl writes each sample as accepted; SIGINT exits 130 and keeps the lines."""
    import signal
    import time

    p = subprocess.Popen(
        [sys.executable, "-m", "arsdecode", "sample", "--lm", EMBEDDED, "--lattice",
         str(small_lattice), "-n", "100000000", "--jsonl", "--seed", "4"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0,
        # A job started in the background by a shell inherits SIGINT ignored; Python then
        # installs no handler. Give the child the default disposition, as in a terminal.
        preexec_fn=default_stop_signals,
    )
    first = first_line(p)  # unbuffered: nothing after it is lost to communicate() (stream_lines)
    if not first.endswith(b"\n"):  # the child ended before any sample: show why
        rest, err = p.communicate(timeout=60)
        raise AssertionError(f"no sample streamed (exit {p.returncode}): {err[-2000:]!r}")
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    rest_bytes, err_bytes = p.communicate(timeout=60)
    rest, err = rest_bytes.decode(), err_bytes.decode()
    assert p.returncode == 130, err
    lines = [first.decode(), *rest.splitlines()]
    assert len(lines) >= 2
    for line in lines:
        obj = json.loads(line)
        assert set(obj) == {"tokens", "log_p"} and len(obj["tokens"]) == 3
    assert "interrupted" in err and "Traceback" not in err


def test_jsonl_same_samples_as_json(small_lattice):
    common = ("sample", "--lm", EMBEDDED, "--lattice", str(small_lattice), "-n", "20",
              "--seed", "9")
    streamed = [json.loads(x) for x in run(*common, "--jsonl").stdout.splitlines()]
    whole = json.loads(run(*common, "--json").stdout)
    assert [s["tokens"] for s in streamed] == whole["samples"]
    assert [s["log_p"] for s in streamed] == whole["log_p"]


@pytest.mark.parametrize("command", ["decode", "sample", "sms", "tag"])
def test_help_explains_units_variant_and_defaults(command):
    text = " ".join(run(command, "--help").stdout.split())
    assert "natural log (ln)" in text and "log10" in text
    assert "--variant" in text and "Algorithm 2" in text and "(default:" in text
    if command in ("decode", "sms"):
        assert "--max-iterations" in text and "exit status" in text
    if command in ("decode", "sample"):
        assert '{"positions"' in text


def test_only_project_errors_are_bad_input(small_lattice, monkeypatch):
    """A bug (a plain ValueError from numpy, say) keeps its traceback: it is not exit 2."""
    import arsdecode.cli.main as cli
    import arsdecode.methods.dispatch as dispatch

    def broken(*args, **kwargs):
        raise ValueError("operands could not be broadcast together")

    monkeypatch.setattr(dispatch, "decode", broken)
    with pytest.raises(ValueError, match="broadcast"):
        cli.main(["decode", "--lm", EMBEDDED, "--lattice", str(small_lattice)])


def test_each_command_is_registered_under_its_name():
    """COMMANDS names each command's module without importing it; the names must be the
    ones the modules register, and the full parser (for --help) has them all, in order."""
    import arsdecode.cli.main as cli

    def choices(parser) -> list[str]:
        sub = next(a for a in parser._actions if a.dest == "command")
        return list(sub.choices)

    assert choices(cli.build_parser()) == list(cli.COMMANDS)
    for name in cli.COMMANDS:
        assert choices(cli.build_parser(name)) == [name]
    listed = [line.split()[0] for line in run("--help").stdout.splitlines()
              if line.startswith("    ") and not line.startswith("     ")]
    assert listed == list(cli.COMMANDS)


def test_a_command_imports_only_its_own_module():
    """Building a command's parser imports its own module and no other command's; no parser,
    not even the full one (--help), imports the engine (methods/, core/) or arsdecode.api."""
    code = ("import json, sys\n"
            "from arsdecode.cli.main import build_parser\n"
            "build_parser('tag').parse_args(['tag', 'The dog .'])\n"
            "one = [m for m in sys.modules if m.startswith('arsdecode')]\n"
            "build_parser()\n"
            "print(json.dumps([one, [m for m in sys.modules if m.startswith('arsdecode')]]))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    one, full = (set(modules) for modules in json.loads(proc.stdout))
    assert "arsdecode.cli.tag" in one
    for other in ("cli.lattice", "cli.batch", "cli.marginals", "cli.sms", "batch"):
        assert f"arsdecode.{other}" not in one, other
    assert {f"arsdecode.cli.{m}" for m in ("lattice", "batch", "marginals", "sms", "tag")} <= full
    for loaded in (one, full):
        engine = sorted(m for m in loaded
                        if m.startswith(("arsdecode.methods", "arsdecode.core", "arsdecode.api")))
        assert engine == [], engine


def test_cli_method_and_variant_names_are_the_engines():
    """The parsers take --method, --variant and --nbest-format from plain constants (so that
    building them loads no engine nor n-best writer); they must be the engine's names and
    default."""
    import inspect

    from arsdecode.cli import options
    from arsdecode.core import automaton
    from arsdecode.lattice import nbest_formats
    from arsdecode.methods import ars, dispatch

    assert options.NBEST_FORMATS == nbest_formats.NBEST_FORMATS
    assert options.METHODS == dispatch.METHODS
    assert options.VARIANTS == automaton.VARIANTS
    assert options.DEFAULT_VARIANT == automaton.DEFAULT_VARIANT
    assert inspect.signature(ars.decode).parameters["variant"].default == options.DEFAULT_VARIANT
