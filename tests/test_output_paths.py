"""Issue 29 A: what an output path is decides how it is written (maxarpa.output).

Only a regular file (or a new path) is replaced by a rename. A symbolic link is followed and
the file it names is replaced, beside that file. A FIFO (or a device, /dev/stdout) is written
through, and a full device fails as a full stdout does. Every command that writes a file goes
through the one writer; each is run end to end here onto a FIFO read by a thread and onto a
symbolic link, and its bytes compared with the same command's regular file. No root and
nothing under the machine's /dev is needed: the FIFO and the links live in tmp_path.
"""

from __future__ import annotations

import errno
import json
import os
import random
import resource
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from arpa_fixtures import VALID
from arsdecode.api import DEFAULT_LM
from arsdecode.testing.random_arpa import random_arpa_text
from maxarpa.output import atomic_output, check_output, output_target

LATTICE = {"positions": [[["the", -0.1], ["a", -1.0]], [["nation", -0.2], ["people", -0.3]],
                         [["is", -0.1], ["was", -0.4]]]}
SLF = """VERSION=1.0
N=4 L=5
I=0
I=1
I=2
I=3
J=0 S=0 E=1 W=the a=-0.1
J=1 S=0 E=1 W=a a=-1.0
J=2 S=1 E=2 W=nation a=-0.2
J=3 S=1 E=2 W=people a=-0.3
J=4 S=2 E=3 W=is a=-0.1
"""


class FifoReader:
    """A thread that reads everything written into a FIFO until the writer closes it."""

    def __init__(self, path: Path) -> None:
        self.path, self.data = path, None
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with open(self.path, "rb") as fh:
            self.data = fh.read()

    def result(self, timeout: float = 60) -> bytes | None:
        """What was read; None when no writer ever opened the FIFO (the reader is released)."""
        self.thread.join(timeout if self.data is None else 0)
        if self.thread.is_alive():  # nobody opened it for writing: let the reader go
            os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
            self.thread.join(10)
            return None
        return self.data


def run(*argv: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *argv], capture_output=True, timeout=300,
                          **kwargs)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("inputs")
    (d / "m.arpa").write_text(VALID)
    (d / "lat.json").write_text(json.dumps(LATTICE))
    (d / "lat.slf").write_text(SLF)
    (d / "sentences.txt").write_text("The dog barked .\nA cat sat on the mat .\n")
    rng = random.Random(7)
    (d / "train.txt").write_text("".join(
        " ".join(rng.choice("abcd") for _ in range(rng.randint(2, 6))) + "\n"
        for _ in range(60)))
    (d / "base.arpa").write_text(random_arpa_text(random.Random(5), 2, 3, 0.3, False,
                                                  density=0.9))
    (d / "trf.txt").write_text("w0 w1\nw2 w0 w1\nw1\n" * 20)
    return d


# Each command that writes a file: the arguments, OUT standing for its output path.
COMMANDS = {
    "convert": ["maxarpa", "convert", "{d}/m.arpa", "OUT"],
    "convert --binary": ["maxarpa", "convert", "--binary", "{d}/m.arpa", "OUT"],
    "--fst": ["arsdecode", "decode", "--lm", str(DEFAULT_LM), "--lattice", "{d}/lat.json",
              "--fst", "OUT"],
    "--graphml": ["arsdecode", "decode", "--lm", str(DEFAULT_LM), "--lattice",
                  "{d}/lat.json", "--graphml", "OUT"],
    "--write-lattice": ["arsdecode", "marginals", "--lm", str(DEFAULT_LM), "--lattice",
                        "{d}/lat.slf", "--write-lattice", "OUT"],
    "tag --conll": ["arsdecode", "tag", "--file", "{d}/sentences.txt", "--conll", "OUT"],
    "train-vpylm": ["arsdecode", "train-vpylm", "--text", "{d}/train.txt", "--out", "OUT",
                    "--depth", "3", "--sweeps", "2", "--seed", "11"],
    "train-trf": ["arsdecode", "train-trf", "--lm", "{d}/base.arpa", "--text", "{d}/trf.txt",
                  "--out", "OUT", "--iterations", "3", "--samples", "20", "--seed", "1"],
}


def command(name: str, inputs: Path, out: Path) -> list[str]:
    return [str(out) if a == "OUT" else a.format(d=inputs) for a in COMMANDS[name]]


def content(name: str, data: bytes | None) -> bytes | None:
    """The output's bytes, but for train-trf's first line, which holds the run's timing."""
    if data is None or name != "train-trf":
        return data
    return data.split(b"\n", 1)[1]


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_writes_through_a_fifo_and_follows_a_symlink(name, inputs, tmp_path):
    plain = tmp_path / "plain.out"
    proc = run(*command(name, inputs, plain))
    assert proc.returncode == 0, proc.stderr.decode()
    want = content(name, plain.read_bytes())
    assert want

    fifo = tmp_path / "fifo.out"
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    proc = run(*command(name, inputs, fifo))
    got = reader.result()
    assert proc.returncode == 0, proc.stderr.decode()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # not replaced by a regular file
    assert content(name, got) == want

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "target.out").write_bytes(b"old")
    link = tmp_path / "link.out"
    link.symlink_to(elsewhere / "target.out")
    proc = run(*command(name, inputs, link))
    assert proc.returncode == 0, proc.stderr.decode()
    assert link.is_symlink() and os.readlink(link) == str(elsewhere / "target.out")
    assert content(name, (elsewhere / "target.out").read_bytes()) == want
    assert sorted(p.name for p in elsewhere.iterdir()) == ["target.out"]  # no temporary
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "fifo.out", "link.out",
                                                          "plain.out"]


def test_a_dangling_symlink_creates_its_file(tmp_path):
    src = tmp_path / "m.arpa"
    src.write_text(VALID)
    link = tmp_path / "link.maxarpa"
    link.symlink_to(tmp_path / "new.maxarpa")
    proc = run("maxarpa", "convert", str(src), str(link))
    assert proc.returncode == 0, proc.stderr.decode()
    assert link.is_symlink() and (tmp_path / "new.maxarpa").read_text().startswith("\\max-arpa\\")


def test_a_symlink_into_a_missing_folder_is_refused_before_the_work(tmp_path):
    link = tmp_path / "link.maxarpa"
    link.symlink_to(tmp_path / "nodir" / "m.maxarpa")
    proc = run("maxarpa", "convert", str(tmp_path / "missing.arpa"), str(link))
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "nodir" in err and "does not exist" in err, err
    assert link.is_symlink() and not (tmp_path / "nodir").exists()


def test_fd_aliases_and_devices_are_written_through_never_renamed(tmp_path):
    """Checked without writing: /dev/stdout, /proc/self/fd/1 and a link to /dev/stdout are
    written through even when stdout is a regular file; so is a FIFO."""
    link = tmp_path / "out"
    link.symlink_to("/dev/stdout")
    for path in ("/dev/stdout", "/proc/self/fd/1", str(link), "/dev/null"):
        assert output_target(path).through, path
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert output_target(fifo) == output_target(fifo).__class__(fifo, True)
    assert not output_target(tmp_path / "new").through
    check_output(None, "/dev/null")  # /dev is not writable by everyone: no folder check


class FullDevice:
    """A writer whose every write fails as on a full device."""

    def __init__(self, path: Path) -> None:
        self.fh = open(path, "wb")

    def write(self, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def close(self) -> None:
        self.fh.close()


@pytest.mark.parametrize("kind", ["fifo", "regular"])
def test_a_full_device_says_what_a_full_stdout_says_and_leaves_nothing(kind, tmp_path,
                                                                       monkeypatch):
    temporaries = tmp_path / "tmpdir"
    temporaries.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporaries))
    monkeypatch.setattr("tempfile.tempdir", None)  # read TMPDIR again
    out = tmp_path / "out"
    if kind == "fifo":
        os.mkfifo(out)
        reader = FifoReader(out)
    else:
        out.write_bytes(b"old")
    with pytest.raises(OSError) as info, atomic_output(out) as tmp:
        writer = FullDevice(tmp)
        try:
            writer.write(b"x" * 100)
        finally:
            writer.close()
    assert str(info.value) == (f"[Errno {errno.ENOSPC}] cannot write the output: No space "
                               f"left on device: '{out}'")
    if kind == "fifo":
        assert reader.result(timeout=0.5) is None  # nothing sent: the output failed whole
        assert stat.S_ISFIFO(os.lstat(out).st_mode)
    else:
        assert out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "tmpdir"]
    assert list(temporaries.iterdir()) == []


def _file_size_limit() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))


@pytest.mark.parametrize("name", ["convert", "--fst"])
def test_a_write_that_cannot_go_on_fails_like_stdout_exit_2_one_line(name, inputs, tmp_path):
    """End to end through the CLIs' own handling: the file size limit stops the write (EFBIG);
    the FIFO is left a FIFO, its reader gets nothing, and no temporary file remains."""
    temporaries = tmp_path / "tmpdir"
    temporaries.mkdir()
    fifo = tmp_path / "fifo.out"
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    proc = run(*command(name, inputs, fifo), preexec_fn=_file_size_limit,
               env={**os.environ, "TMPDIR": str(temporaries)})
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.endswith(f": {fifo}: cannot write the output: File too large\n"), err
    assert reader.result(timeout=1) is None
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert list(temporaries.iterdir()) == []
