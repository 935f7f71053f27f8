"""The `maxarpa` command line, round two of issue 19: input read once (stdin, pipes), `query`
answering line by line (and as KenLM's `query` with --sentence), progress totals, stale
temporary files, a full disk, one-line messages showing words as their bytes. Every test runs
the real command in a subprocess on real files."""

from __future__ import annotations

import fcntl
import gzip
import json
import os
import pty
import random
import re
import resource
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from arpa_fixtures import VALID, edited
from arsdecode.testing.random_arpa import random_arpa_text
from maxarpa import load
from maxarpa.query import display_log10

PY = sys.executable
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "arpa"
KENLM_TEST = SHARED / "set1" / "kenlm_test.arpa"


def run(args, stdin: bytes | str = b"", **kwargs) -> subprocess.CompletedProcess:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run([PY, "-m", "maxarpa", *map(str, args)], input=data,
                          capture_output=True, timeout=300, **kwargs)


def err_text(proc: subprocess.CompletedProcess) -> str:
    return proc.stderr.decode("utf-8", "replace")


def needs_shared(path: Path) -> Path:
    if not path.is_file():
        pytest.skip(f"{path} not found (../shared/data/arpa)")
    return path


# ------------------------------------------------------------------------------------------
# Standard input and pipes: the input is read once


@pytest.mark.parametrize("how", ["dash", "dev-stdin"])
def test_convert_reads_model_from_a_pipe(tmp_path, how):
    out = tmp_path / "m.maxarpa"
    src = "-" if how == "dash" else "/dev/stdin"
    proc = run(["convert", src, out], stdin=gzip.compress(VALID.encode()))
    assert proc.returncode == 0, err_text(proc)
    direct = tmp_path / "direct.maxarpa"
    (tmp_path / "m.arpa").write_text(VALID)
    assert run(["convert", tmp_path / "m.arpa", direct]).returncode == 0
    assert out.read_bytes() == direct.read_bytes()


def test_process_substitution_is_read_once(tmp_path):
    (tmp_path / "m.arpa").write_text(VALID)
    script = f"{PY} -m maxarpa info <(cat {tmp_path / 'm.arpa'})"
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^ngram 2\t2$", proc.stdout, re.M)


def test_arsdecode_lm_from_dev_stdin(tmp_path):
    lattice = tmp_path / "lattice.json"
    lattice.write_text('{"positions": [[["a", 0.0]]]}')
    proc = subprocess.run([PY, "-m", "arsdecode", "decode", "--lm", "/dev/stdin", "--lattice",
                           str(lattice), "--json"], input=VALID, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["tokens"] == ["a"]


def test_info_names_stdin(tmp_path):
    proc = run(["info", "-"], stdin=VALID)
    assert proc.returncode == 0 and proc.stdout.decode().startswith("model\t<stdin>\n")


def test_piped_malformed_model_names_stdin_not_a_temporary_file():
    bad = edited(l2="ngram 1=5")
    proc = run(["info", "-"], stdin=bad)
    assert proc.returncode == 2
    text = err_text(proc).strip()
    assert text.startswith("maxarpa: <stdin>:"), text
    assert "tmp" not in text and "Traceback" not in text and "\n" not in text


def test_query_reads_the_queries_from_a_file_or_dash(tmp_path):
    model = tmp_path / "m.arpa"
    model.write_text(VALID)
    queries = tmp_path / "q.txt"
    queries.write_text("<s> a\na\n")
    from_file = run(["query", model, queries])
    from_dash = run(["query", model, "-"], stdin=queries.read_bytes())
    assert from_file.returncode == 0 and from_dash.returncode == 0, err_text(from_file)
    assert from_file.stdout == from_dash.stdout and len(from_file.stdout.splitlines()) == 2
    both = run(["query", "-", "-"], stdin="a\n")
    assert both.returncode == 2 and "both" in err_text(both)


# ------------------------------------------------------------------------------------------
# query: line by line, and KenLM's format with --sentence


def _converse(args, lines: list[str]) -> list[str]:
    """Write one line, wait for its answer (30 s at most), then the next."""
    proc = subprocess.Popen([PY, "-m", "maxarpa", *map(str, args)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    answers = []
    try:
        for line in lines:
            proc.stdin.write(line.encode() + b"\n")
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], 30)
            assert ready, f"no answer to {line!r} while the input stays open"
            answers.append(proc.stdout.readline().decode().rstrip("\n"))
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()
    finally:
        proc.kill()
        proc.wait()
    return answers


def test_query_answers_each_line_before_the_next_is_written(tmp_path):
    model_path = tmp_path / "m.arpa"
    model_path.write_text(VALID)
    model = load(model_path)
    answers = _converse(["query", model_path], ["<s> a", "a", "a </s>"])
    assert [float(a.split("\t")[0]) for a in answers] == [
        model.log10p("a", ["<s>"]), model.log10p("a", []), model.log10p("</s>", ["a"])]


def test_query_empty_line_is_not_an_abort(tmp_path):
    model_path = tmp_path / "m.arpa"
    model_path.write_text(VALID)
    proc = run(["query", model_path], stdin="a\n\n<s> a\n")
    assert proc.returncode == 0, err_text(proc)
    lines = proc.stdout.decode().split("\n")
    assert lines[1] == "" and len(lines) == 4 and lines[2]


def _parse_sentence_line(line: str) -> tuple[list[tuple[str, int, int, float]], float, int]:
    *cells, tail = line.split("\t")
    words = []
    for cell in cells:
        surface_id, length, logp = cell.rsplit(" ", 2)
        surface, wid = surface_id.rsplit("=", 1)
        words.append((surface, int(wid), int(length), float(logp)))
    m = re.fullmatch(r"Total: (\S+) OOV: (\d+)", tail)
    assert m, tail
    return words, float(m.group(1)), int(m.group(2))


SENTENCES = ["language modeling is fun .", "", "the", "looking on a little more loin",
             "zzz qqq", "<unk> is a word"]


@pytest.mark.parametrize("streamed", [False, True], ids=["batch", "conversation"])
def test_sentence_mode_matches_kenlm(streamed):
    kenlm = pytest.importorskip("kenlm")
    path = needs_shared(KENLM_TEST)
    model = load(path)
    sentences = list(SENTENCES)
    if streamed:
        lines = _converse(["query", "--sentence", path], sentences)
    else:  # and random sentences: every n-gram length, blank suffix nodes, OOVs
        rng = random.Random(4)
        vocab = [w for w in model.vocab if w not in ("<s>", "</s>")] + ["oov1", "oov2"]
        sentences += [" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 8)))
                      for _ in range(500)]
        proc = run(["query", "--sentence", path], stdin="\n".join(sentences) + "\n")
        assert proc.returncode == 0, err_text(proc)
        lines = proc.stdout.decode().splitlines()[: len(sentences)]
    ref = kenlm.Model(str(path))
    total_p, total_oov, total_oov_p, tokens = 0.0, 0, 0.0, 0
    for sentence, line in zip(sentences, lines, strict=True):
        words, total, oov = _parse_sentence_line(line)
        expected = list(ref.full_scores(sentence))
        assert [w[0] for w in words] == [*sentence.split(), "</s>"]
        assert len(words) == len(expected)
        for (surface, wid, length, logp), (k_p, k_len, k_oov) in zip(words, expected):
            assert logp == pytest.approx(k_p, abs=1e-5), (sentence, surface)
            assert length == k_len, (sentence, surface)
            assert wid == model.word_id(surface)
            assert (wid == model.unk_id) == k_oov
            total_oov_p += logp if k_oov else 0.0
        assert total == pytest.approx(sum(w[3] for w in words), abs=1e-9)
        assert oov == sum(k_oov for _, _, k_oov in expected)
        total_p, total_oov, tokens = total_p + total, total_oov + oov, tokens + len(words)
    if not streamed:
        summary = dict(line.split(":\t") for line in proc.stdout.decode().splitlines()
                       [len(sentences):])
        assert int(summary["OOVs"]) == total_oov and int(summary["Tokens"]) == tokens
        assert float(summary["Perplexity including OOVs"]) == pytest.approx(
            10 ** (-total_p / tokens), rel=1e-9)
        assert float(summary["Perplexity excluding OOVs"]) == pytest.approx(
            10 ** (-(total_p - total_oov_p) / (tokens - total_oov)), rel=1e-9)


def test_sentence_mode_on_a_generated_model(tmp_path):
    path = tmp_path / "m.arpa"
    path.write_text(VALID)
    model = load(path)
    proc = run(["query", "--sentence", path], stdin="a\n\nb a\n")
    assert proc.returncode == 0, err_text(proc)
    out = proc.stdout.decode().splitlines()
    words, total, oov = _parse_sentence_line(out[0])
    assert [(w[0], w[2]) for w in words] == [("a", 2), ("</s>", 2)]
    # -0.1 + -0.2: the float sum is -0.30000000000000004; query prints it for people, -0.3.
    exact = model.log10p("a", ["<s>"]) + model.log10p("</s>", ["<s>", "a"])
    assert total == float(display_log10(exact)) == pytest.approx(exact, rel=1e-12)
    words, total, oov = _parse_sentence_line(out[1])  # the empty sentence: </s> after <s>
    assert [w[0] for w in words] == ["</s>"] and total == model.log10p("</s>", ["<s>"])
    words, total, oov = _parse_sentence_line(out[2])
    assert oov == 1 and words[0][1] == model.unk_id and words[0][3] == model.log10p("b", ["<s>"])
    assert out[3].startswith("Perplexity including OOVs:\t") and out[-1] == "Tokens:\t6"


def test_query_unknown_word_without_unk_is_one_message_naming_the_line(tmp_path):
    path = tmp_path / "nounk.arpa"
    path.write_text(edited(l2="ngram 1=3", l6=None))
    proc = run(["query", "--sentence", path], stdin="a\na zzz\n")
    assert proc.returncode == 2
    text = err_text(proc)
    assert text.count("\n") == 1 and text.startswith("maxarpa: <stdin>:2: unknown word 'zzz'")
    assert "--unknown-missing accept" in text and "warning" not in text
    assert len(proc.stdout.decode().splitlines()) == 1  # the first line was answered


# ------------------------------------------------------------------------------------------
# Progress: a total, reached (on a terminal); nothing when piped


def _stderr_on_a_terminal(args) -> str:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 100 columns
    try:
        proc = subprocess.run([PY, "-m", "maxarpa", *map(str, args)], stderr=slave,
                              stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=300)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the terminal's other end is closed and drained
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    assert proc.returncode == 0, b"".join(chunks)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_convert_progress_shows_its_total_and_reaches_it(tmp_path, binary):
    text = random_arpa_text(random.Random(5), 3, 15, 0.5, False, density=0.5)
    src = tmp_path / "m.arpa"
    src.write_text(text)
    header = sum(int(n) for n in re.findall(r"^ngram \d+=(\d+)$", text, re.M))
    out = tmp_path / ("m.npz" if binary else "m.maxarpa")
    shown = _stderr_on_a_terminal(["convert", *(["--binary"] if binary else []), src, out])
    assert re.search(rf"reading.*\b{header}/{header}\b", shown), shown
    finals = re.findall(r"writing.*?\b(\d+)/(\d+)\b", shown)
    assert finals and finals[-1][0] == finals[-1][1], shown
    piped = run(["convert", *(["--binary"] if binary else []), src, tmp_path / f"p{out.suffix}"])
    assert piped.returncode == 0 and piped.stderr == b""


# ------------------------------------------------------------------------------------------
# Stale temporary files of writers killed with SIGKILL


def _dead_pid() -> int:
    proc = subprocess.Popen([PY, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_convert_removes_the_temporary_file_of_a_dead_writer_only(tmp_path):
    src = tmp_path / "m.arpa"
    src.write_text(VALID)
    out = tmp_path / "m.maxarpa"
    dead = tmp_path / f".m.maxarpa.{_dead_pid()}.tmp"
    live = tmp_path / f".m.maxarpa.{os.getpid()}.tmp"  # this test's process is alive
    other = tmp_path / f".other.maxarpa.{_dead_pid()}.tmp"  # another output's: not ours
    for f in (dead, live, other):
        f.write_bytes(b"half a model")
    proc = run(["convert", src, out])
    assert proc.returncode == 0, err_text(proc)
    assert not dead.exists()
    assert live.exists() and other.exists()


def test_a_sigkilled_convert_leaves_a_temporary_that_the_next_run_removes(tmp_path):
    src = tmp_path / "big.arpa"
    src.write_text(random_arpa_text(random.Random(3), 3, 15, 0.5, False, density=0.5))
    out = tmp_path / "big.maxarpa.gz"
    # SIGKILL itself, sent by the writer while its temporary file is open
    code = ("import os, signal\n"
            "def stop(*a):\n"
            "    os.kill(os.getpid(), signal.SIGKILL)\n"
            "import maxarpa.native\n"
            "maxarpa.native.format_lines = stop\n"
            f"from maxarpa.cli import main; main(['convert', {str(src)!r}, {str(out)!r}])\n")
    proc = subprocess.run([PY, "-c", code], capture_output=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL
    left = list(tmp_path.glob(".big.maxarpa.gz.*.tmp"))
    assert left and not out.exists()
    time.sleep(0.1)
    assert run(["convert", src, out]).returncode == 0
    assert not list(tmp_path.glob(".big.maxarpa.gz.*.tmp")) and out.exists()


# ------------------------------------------------------------------------------------------
# A full disk, a file-size limit: exit 2, one line, no partial file


def test_file_size_limit_exits_2_and_leaves_nothing(tmp_path):
    src = tmp_path / "m.arpa"
    src.write_text(random_arpa_text(random.Random(8), 2, 60, 0.5, False, density=0.9))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "m.maxarpa"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    proc = run(["convert", src, out], preexec_fn=limit)
    assert proc.returncode == 2, (proc.returncode, err_text(proc))
    text = err_text(proc)
    assert text.startswith(f"maxarpa: {out}: ") and text.count("\n") == 1, text
    assert list(out_dir.iterdir()) == []


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_stdout_on_a_full_disk_exits_2(tmp_path):
    src = tmp_path / "m.arpa"
    src.write_text(VALID)
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([PY, "-m", "maxarpa", "convert", str(src), "-"], stdout=full,
                              stderr=subprocess.PIPE, timeout=120)
    assert proc.returncode == 2
    text = proc.stderr.decode()
    assert "No space left on device" in text and text.count("\n") == 1, text
    assert not (tmp_path / "-").exists()


def test_convert_to_stdout_writes_the_max_arpa_text(tmp_path):
    src = tmp_path / "m.arpa"
    src.write_text(VALID)
    proc = run(["convert", src, "-"])
    assert proc.returncode == 0, err_text(proc)
    out = tmp_path / "m.maxarpa"
    assert run(["convert", src, out]).returncode == 0
    assert proc.stdout == out.read_bytes() and not (tmp_path / "-").exists()
    binary = run(["convert", "--binary", src, "-"])
    assert binary.returncode == 2 and "standard output" in err_text(binary)


# ------------------------------------------------------------------------------------------
# Messages: words as their bytes, one backslash, warnings on one line


def test_error_shows_a_latin1_word_as_its_bytes(tmp_path):
    path = tmp_path / "latin1.arpa"
    text = (VALID.replace("-0.4\ta\t0.2", "0.5\tch\xe9\t0.2").replace("<s> a", "<s> ch\xe9")
            .replace("a </s>", "ch\xe9 </s>"))
    path.write_bytes(text.encode("latin-1"))
    proc = run(["info", path])
    assert proc.returncode == 2
    # The byte as maxarpa.errors.shown spells it (\xe9), the same on both CLIs and any stream.
    assert b"'ch\\xe9'" in proc.stderr and b"\\udc" not in proc.stderr, proc.stderr


def test_error_shows_a_section_mark_with_one_backslash(tmp_path):
    path = tmp_path / "nocounts.arpa"
    path.write_text("\\data\\\n\n\\1-grams:\n-1\ta\n\n\\end\\\n")
    proc = run(["info", path])
    assert proc.returncode == 2
    text = err_text(proc)
    assert "'\\1-grams:'" in text and "\\\\" not in text, text


def test_a_warning_is_one_line_naming_no_source_file(tmp_path):
    path = tmp_path / "nobos.arpa"
    path.write_text(edited(l7=None, l12=None, l2="ngram 1=3", l3="ngram 2=1"))
    proc = run(["info", "--sentence-marker-missing", "warn", path])
    assert proc.returncode == 0, err_text(proc)
    text = err_text(proc)
    assert text.startswith("maxarpa: warning: ") and text.count("\n") == 1, text
    assert ".py" not in text


def test_query_prints_sums_short_not_with_their_last_bit_error(tmp_path):
    """A backed-off log10p is a float sum (-0.1 + -0.2 = -0.30000000000000004 in float64);
    query prints what a person reads, -0.3, as KenLM's query prints a short number."""
    path = tmp_path / "m.arpa"
    path.write_text("\\data\\\nngram 1=4\nngram 2=1\n\n\\1-grams:\n-1\t<s>\t-0.5\n"
                    "-0.5\t</s>\n-0.7\ta\t-0.1\n-0.2\tb\n\n\\2-grams:\n-0.4\t<s> a\n\n"
                    "\\end\\\n")
    assert -0.1 + -0.2 != -0.3  # the premise: the sum carries a last-bit error
    proc = run(["query", path], stdin="a b\n")
    assert proc.returncode == 0, err_text(proc)
    log10p, bound = proc.stdout.split()
    assert log10p == b"-0.3" and float(bound) >= -0.3
    sentence = run(["query", "--sentence", path], stdin="a b\n")
    assert b"b=" in sentence.stdout and b"0.30000000000000004" not in sentence.stdout
