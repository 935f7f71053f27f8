"""The `arsdecode` command line on hostile input and full disks (issue 19, sections C and D).

Why subprocesses and real files: the promise is about what a user sees, one line on stderr,
exit status 2, no traceback, and nothing half-written, so each test runs the real command on
the shipped model and checks exactly that. Full disks are real too: /dev/full, or a file-size
limit (RLIMIT_FSIZE) set in the child, which makes write() fail as a full disk does.
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from arsdecode.api import DEFAULT_LM

EMBEDDED = str(DEFAULT_LM)
LATTICE = {"positions": [[["the", -0.1], ["a", -1.0]], [["nation", -0.2], ["people", -0.3]],
                         [["is", 0.0], ["was", -0.4]]]}


def run(*args: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **kwargs}
    return subprocess.run([sys.executable, "-m", "arsdecode", *args], text=True,
                          timeout=timeout, **streams)


def check_error(proc: subprocess.CompletedProcess, *words: str) -> None:
    """Exit 2, one stderr line that names each of `words`, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


@pytest.fixture()
def lattice(tmp_path) -> Path:
    path = tmp_path / "lat.json"
    path.write_text(json.dumps(LATTICE))
    return path


def file_size_limit(limit: int):
    """preexec_fn: writes beyond `limit` bytes fail with EFBIG, as on a full disk."""
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


# ---- C: lattices that are not UTF-8, gzip lattices, stdin --------------------------------


def test_lattice_not_utf8_is_one_line(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes('{"positions": [[["caf\u00e9", -0.1]]]}'.encode("latin-1"))
    check_error(run("decode", "--lm", EMBEDDED, "--lattice", str(path)), str(path), "UTF-8")


def test_gzip_lattice_is_read_when_named_gz(tmp_path, lattice):
    gz = tmp_path / "lat.json.gz"
    gz.write_bytes(gzip.compress(lattice.read_bytes()))
    plain = run("decode", "--lm", EMBEDDED, "--lattice", str(lattice), "--json")
    packed = run("decode", "--lm", EMBEDDED, "--lattice", str(gz), "--json")
    assert packed.returncode == 0, packed.stderr
    assert json.loads(packed.stdout)["tokens"] == json.loads(plain.stdout)["tokens"]
    # gzip bytes under another name: one line that says what the bytes are
    wrong = tmp_path / "lat.json"
    wrong.write_bytes(gz.read_bytes())
    check_error(run("decode", "--lm", EMBEDDED, "--lattice", str(wrong)), str(wrong), "gzip")
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(gz.read_bytes()[:20])
    check_error(run("decode", "--lm", EMBEDDED, "--lattice", str(broken)), str(broken))


def test_lattice_dash_is_stdin(lattice):
    proc = run("decode", "--lm", EMBEDDED, "--lattice", "-", "--json",
               input=lattice.read_text())
    assert proc.returncode == 0, proc.stderr
    want = run("decode", "--lm", EMBEDDED, "--lattice", str(lattice), "--json")
    assert json.loads(proc.stdout)["tokens"] == json.loads(want.stdout)["tokens"]
    check_error(run("decode", "--lm", EMBEDDED, "--lattice", "-", input="{"), "<stdin>")


def test_tag_file_not_utf8_is_one_line(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("The caf\u00e9 .\n".encode("latin-1"))
    check_error(run("tag", "--file", str(path)), str(path), "UTF-8")
    proc = subprocess.run([sys.executable, "-m", "arsdecode", "tag", "--file", "-"],
                          input=path.read_bytes(), capture_output=True, timeout=120)
    check_error(subprocess.CompletedProcess(proc.args, proc.returncode, "",
                                            proc.stderr.decode()), "<stdin>", "UTF-8")


def test_duplicate_token_error_names_the_token(tmp_path):
    path = tmp_path / "dup.json"
    path.write_text(json.dumps({"positions": [[["the", -0.1], ["nation", -1.0],
                                               ["the", -2.0]]]}))
    check_error(run("decode", "--lm", EMBEDDED, "--lattice", str(path)), "'the'", "position 0")


# ---- C: sizes that cannot fit ----------------------------------------------------------


@pytest.mark.parametrize("command,option,value", [
    ("sample", "--batch", "99999999999"),
    ("sample", "--batch", "100000000"),
    ("marginals", "--batch", "100000000"),
])
def test_sampling_batch_that_cannot_fit_is_refused(lattice, command, option, value):
    proc = run(command, "--lm", EMBEDDED, "--lattice", str(lattice), "-n", "1", option, value)
    check_error(proc, f"{option} {value}", "memory")


@pytest.mark.parametrize("value", ["99999999999999999999", "9999999999"])
def test_nbest_that_cannot_fit_is_refused(tmp_path, value):
    wide = tmp_path / "wide.json"  # 3^30 paths: K cannot be cut down to the paths there are
    wide.write_text(json.dumps({"positions": [[["the", -0.1], ["a", -1.0], ["of", -0.5]]] * 30}))
    check_error(run("decode", "--lm", EMBEDDED, "--lattice", str(wide), "--nbest", value),
                f"--nbest {value}", "memory")


def test_nbest_beyond_the_paths_of_the_lattice_lists_them_all(lattice):
    proc = run("decode", "--lm", EMBEDDED, "--lattice", str(lattice), "--nbest", "9999999999",
               "--json")
    assert proc.returncode == 0, proc.stderr
    nbest = json.loads(proc.stdout)["nbest"]
    assert len({tuple(p["tokens"]) for p in nbest}) == 8  # every path, once


@pytest.mark.parametrize("command", [("sms", "843", "--sample", "2"),
                                     ("tag", "The dog", "--sample", "2")])
def test_task_sampling_batch_that_cannot_fit_is_refused(command):
    check_error(run(*command, "--batch", "99999999999"), "--batch 99999999999", "memory")


def test_sms_k_that_overflows_the_channel_is_refused():
    proc = run("sms", "843", "--k", "1e308")
    check_error(proc, "--k", "1e308")
    assert "RuntimeWarning" not in proc.stderr


# ---- C: full disks ----------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ("sample", "-n", "300", "--json"),
    ("sample", "-n", "300"),
    ("sample", "-n", "300", "--jsonl"),
    ("marginals", "-n", "300", "--json"),
    ("decode", "--nbest", "8"),
])
def test_output_that_does_not_fit_exits_2(lattice, tmp_path, args):
    """A disk that fills up part-way through the output: exit 2 and one line, even when
    Python runs unbuffered (PYTHONUNBUFFERED=1, where a short write was silently lost)."""
    out = tmp_path / "out.txt"
    with open(out, "w") as fh:
        proc = subprocess.run(
            [sys.executable, "-m", "arsdecode", args[0], "--lm", EMBEDDED, "--lattice",
             str(lattice), *args[1:]], stdout=fh, stderr=subprocess.PIPE, text=True,
            timeout=120, preexec_fn=file_size_limit(150),
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    check_error(proc, "File too large")
    with open("/dev/full", "w") as full:
        proc = run(args[0], "--lm", EMBEDDED, "--lattice", str(lattice), *args[1:],
                   stdout=full)
    check_error(proc, "No space left on device")


@pytest.mark.parametrize("flag", ["--fst", "--graphml"])
def test_automaton_file_on_a_full_disk_leaves_nothing(lattice, tmp_path, flag):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "q.out"
    proc = subprocess.run(
        [sys.executable, "-m", "arsdecode", "decode", "--lm", EMBEDDED, "--lattice",
         str(lattice), flag, str(target)], capture_output=True, text=True, timeout=120,
        preexec_fn=file_size_limit(100))
    check_error(proc, str(target), "File too large")
    assert ".tmp" not in proc.stderr
    assert list(out_dir.iterdir()) == []  # no partial file, no temporary file


# ---- D: messages ------------------------------------------------------------------------

NO_UNK_ARPA = """\\data\\
ngram 1=4
ngram 2=2

\\1-grams:
-1.0\t<s>\t-0.3
-0.5\t</s>
-0.6\tthe\t-0.2
-0.7\tdog\t-0.2

\\2-grams:
-0.2\t<s> the
-0.1\tthe dog

\\end\\
"""


def test_model_without_unk_says_one_thing(tmp_path):
    arpa = tmp_path / "nounk.arpa"
    arpa.write_text(NO_UNK_ARPA)
    lat = tmp_path / "lat.json"
    lat.write_text(json.dumps({"positions": [[["the", -0.1], ["cat", -1.0]], [["dog", 0.0]]]}))
    proc = run("decode", "--lm", str(arpa), "--lattice", str(lat))
    check_error(proc, str(arpa), "no <unk>", "'cat'")
    assert "scored as <unk>" not in proc.stderr


def test_help_texts_say_what_the_command_has():
    marginals = run("marginals", "--help").stdout
    assert "95%" in marginals and "%%" not in marginals
    for command in ("batch", "tag"):
        assert "--trace" not in run(command, "--help").stdout, command
    assert "--fst, --graphml and --trace need 'ars'" in " ".join(
        run("decode", "--help").stdout.split())
    assert "--trace need 'ars'" in " ".join(run("sms", "--help").stdout.split())


def test_options_that_need_ars_name_no_internals(lattice, tmp_path):
    proc = run("decode", "--lm", EMBEDDED, "--lattice", str(lattice), "--method", "full",
               "--fst", str(tmp_path / "q.fst"))
    check_error(proc, "--fst", "--method ars")
    assert "keep_automaton" not in proc.stderr
    proc = run("sms", "843", "--method", "full", "--trace")
    check_error(proc, "--trace", "--method ars")
    assert "on_iteration" not in proc.stderr


def test_huge_weights_print_in_exponent_form(tmp_path):
    path = tmp_path / "huge.json"
    path.write_text(json.dumps({"positions": [[["the", -1e300], ["a", -1.0]],
                                              [["people", -1e300]]]}))
    proc = run("decode", "--lm", EMBEDDED, "--lattice", str(path), "--nbest", "2")
    assert proc.returncode == 0, proc.stderr
    assert max(len(line) for line in proc.stdout.splitlines()) < 80, proc.stdout
    second = proc.stdout.splitlines()[1].split("\t")
    assert second[2] == "the people" and float(second[1]) == pytest.approx(-2e300)
    proc = run("sample", "--lm", EMBEDDED, "--lattice", str(path), "-n", "2")
    assert proc.returncode == 0 and len(proc.stderr) < 200, proc.stderr



def test_integer_weight_beyond_float64_is_one_line(tmp_path):
    """A 400-digit JSON integer weight was an OverflowError traceback (float(int))."""
    path = tmp_path / "overflow.json"
    path.write_text('{"positions": [[["the", -' + "9" * 400 + '], ["a", -1.0]]]}')
    proc = run("decode", "--lm", EMBEDDED, "--lattice", str(path))
    check_error(proc, "overflow.json", "float64")

# ---- D: the Python API and the docs -----------------------------------------------------


def test_tag_returns_words_and_tags():
    import arsdecode

    r = arsdecode.tag("The dog barked .")
    assert r.words == ["The", "dog", "barked", "."]
    assert len(r.tags) == 4 and r.tags[0] == "DT" and r.tags == r.tokens
    assert isinstance(r, arsdecode.DecodeResult) and isinstance(r, arsdecode.TagResult)
    out = json.loads(json.dumps(r.to_json()))
    assert out["words"] == r.words and out["tags"] == r.tags
    assert arsdecode.tag(["The", "dog"]).words == ["The", "dog"]


def test_readme_python_example_prints_json(tmp_path):
    """The README's Python block runs (on the shipped model) and what it prints as the
    result's JSON is JSON."""
    import re

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    block = re.search(r"^```python\n(.*?)^```", readme, re.S | re.M).group(1)
    block = block.replace('"model.maxarpa"', repr(EMBEDDED))
    proc = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()[:2]
    assert json.loads(first)["certified"] is True
    assert second.startswith("['DT'")


def test_guide_says_how_to_reach_the_venv():
    guide = (Path(__file__).resolve().parent.parent / "docs" / "guide.md").read_text()
    intro = guide[: guide.index("```")]
    assert "source .venv/bin/activate" in intro and ".venv/bin/arsdecode" in intro


def test_install_stamp_ignores_bytecode_and_build_products(tmp_path):
    """scripts/install.sh redoes the project install (and the 60 s build of the compiled
    core) only when a source is newer than its stamp: not for the __pycache__ it writes
    itself, nor for the build's .cpp and .so."""
    import os
    import re
    import time

    script = (Path(__file__).resolve().parent.parent / "scripts" / "install.sh").read_text()
    func = re.search(r"^sources_newer_than\(\) \{\n.*?^\}\n", script, re.S | re.M)
    assert func, "install.sh has no sources_newer_than function"
    for name in ("pyproject.toml", "setup.py", "arsdecode/native/_core.pyx",
                 "arsdecode/native/_fulldp.pxi", "maxarpa/native/textio.hpp"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    stamp = tmp_path / "stamp"
    stamp.write_text("")
    later = time.time() + 5
    for name in ("arsdecode/native/__pycache__/__init__.cpython-311.pyc",
                 "arsdecode/native/_core.cpp", "arsdecode/native/_core.cpython-311.so"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
        os.utime(tmp_path / name, (later, later))

    def newer() -> str:
        proc = subprocess.run(["bash", "-c", func.group(0) + 'sources_newer_than "$1"', "_",
                               str(stamp)], cwd=tmp_path, capture_output=True, text=True)
        return proc.stdout.strip()

    assert newer() == ""
    os.utime(tmp_path / "arsdecode/native/_fulldp.pxi", (later, later))
    assert newer() == "arsdecode/native/_fulldp.pxi"


@pytest.fixture(scope="module")
def binary_model(tmp_path_factory) -> Path:
    import maxarpa

    path = tmp_path_factory.mktemp("model") / "state_union.npz"
    maxarpa.convert(DEFAULT_LM, path, binary=True)
    return path


def test_conll_and_batch_outputs_on_a_full_disk(tmp_path, binary_model):
    """tag --conll is written atomically: nothing left. batch --out is appended a chunk at a
    time: the error names the file, and the next run resumes after the whole lines."""
    sentences = tmp_path / "s.txt"
    sentences.write_text("The dog barked .\n" * 20)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "arsdecode", "tag", "--file", str(sentences), "--conll",
         str(out_dir / "t.conll")], capture_output=True, text=True, timeout=120,
        preexec_fn=file_size_limit(100))
    check_error(proc, str(out_dir / "t.conll"), "File too large")
    assert list(out_dir.iterdir()) == []
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": i, **LATTICE}) + "\n" for i in range(6)))
    out = out_dir / "o.jsonl"
    args = [sys.executable, "-m", "arsdecode", "batch", "--lm", str(binary_model), "--in", str(src),
            "--out", str(out), "--chunk-size", "2"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120,
                          preexec_fn=file_size_limit(1200))  # a chunk of 2 lines is ~780 B
    check_error(proc, str(out), "File too large")
    kept = out.read_text().count("\n")
    assert 1 <= kept < 6
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and f"{kept} already done" in proc.stderr, proc.stderr
    assert sorted(json.loads(line)["id"] for line in out.read_text().splitlines()) == list(
        range(6))


def test_every_error_arsdecode_defines_is_in_the_one_tree():
    """The CLI (exit 2) and batch (an error line) treat exactly `ArsDecodeError` and maxarpa's
    `MaxArpaError` as bad input. An exception class defined elsewhere in arsdecode, outside
    that tree, would escape both as a traceback; a stop (Ctrl-C, SIGTERM) is a
    KeyboardInterrupt. Each class of the tree is named in errors.py's docstring."""
    import importlib
    import inspect
    import pkgutil

    import arsdecode
    import arsdecode.errors as errors

    defined = {}
    for info in pkgutil.walk_packages(arsdecode.__path__, "arsdecode."):
        if info.name.endswith("__main__"):  # runs the CLI
            continue
        if info.name.startswith("arsdecode.testing"):  # the oracles' own errors (e.g. the
            continue  # reference ARPA reader's), raised to test code, never by the CLI or batch
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and issubclass(obj, BaseException)
                    and obj.__module__ == info.name):
                defined[f"{info.name}.{name}"] = obj
    assert "arsdecode.errors.ArsDecodeError" in defined and len(defined) > 10
    outside = [name for name, cls in defined.items()
               if not issubclass(cls, (errors.ArsDecodeError, KeyboardInterrupt))]
    assert outside == []
    undocumented = [name for name, cls in defined.items()
                    if issubclass(cls, errors.ArsDecodeError)
                    and f" {cls.__name__} " not in errors.__doc__]
    assert undocumented == []
