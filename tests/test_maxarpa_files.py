"""Issue 9, section C (maxarpa's part): outputs are checked first, written atomically,
compressed by their suffix, cleaned up on every termination signal, and errors name the
user's path. `maxarpa ... | head -1` exits quietly."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import signal
import subprocess
import sys
import time

import pytest
from stop_signals import default_stop_signals

import maxarpa
from arpa_fixtures import VALID
from maxarpa.output import OutputError, atomic_output


def cli(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "maxarpa", *map(str, args)],
                          capture_output=True, text=True, **kwargs)


@pytest.fixture
def arpa(tmp_path):
    path = tmp_path / "m.arpa"
    path.write_text(VALID)
    return path


@pytest.mark.parametrize("how", ["same", "hardlink", "symlink"])
def test_convert_onto_its_input_is_refused(tmp_path, arpa, how):
    target = arpa
    if how == "hardlink":
        target = tmp_path / "link.arpa"
        os.link(arpa, target)
    elif how == "symlink":
        target = tmp_path / "sym.arpa"
        target.symlink_to(arpa)
    for binary in (False, True):
        with pytest.raises(OutputError, match="is the input"):
            maxarpa.convert(arpa, target, binary=binary)
    proc = cli("convert", arpa, target)
    assert proc.returncode == 2 and str(target) in proc.stderr and "Traceback" not in proc.stderr
    assert arpa.read_text() == VALID


@pytest.mark.parametrize("suffix, opener", [(".gz", gzip.open), (".bz2", bz2.open),
                                            (".xz", lzma.open)])
def test_output_is_compressed_by_its_suffix(tmp_path, arpa, suffix, opener):
    plain = tmp_path / "m.maxarpa"
    packed = tmp_path / f"m.maxarpa{suffix}"
    maxarpa.convert(arpa, plain)
    proc = cli("convert", arpa, packed)
    assert proc.returncode == 0, proc.stderr
    with opener(packed, "rb") as fh:
        assert fh.read() == plain.read_bytes()
    assert maxarpa.load(packed).vocab == maxarpa.load(plain).vocab
    again = tmp_path / f"again{suffix}"
    maxarpa.convert(arpa, again)
    assert again.read_bytes() == packed.read_bytes()  # no time or temp name in the header


def test_unsupported_or_binary_compression_suffix_is_refused_before_reading(tmp_path, arpa):
    for out, binary in ((tmp_path / "m.maxarpa.zst", False), (tmp_path / "m.npz.gz", True)):
        with pytest.raises(OutputError, match=out.suffix):
            maxarpa.convert(tmp_path / "does-not-exist.arpa", out, binary=binary)
        assert not out.exists()
    proc = cli("convert", arpa, tmp_path / "nodir" / "m.maxarpa")
    assert proc.returncode == 2 and "nodir" in proc.stderr and "does not exist" in proc.stderr


def test_write_errors_name_the_users_path_not_the_temporary_file(tmp_path):
    out = tmp_path / "out.maxarpa"
    with pytest.raises(OSError) as err:
        with atomic_output(out) as tmp:
            tmp.write_text("partial")
            open(tmp / "impossible", "w")  # a real OSError about the temporary file
    assert err.value.filename == str(out) and ".tmp" not in str(err.value)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_termination_signal_while_writing_leaves_no_file(tmp_path, signum):
    """A real conversion in a subprocess gets the signal once its temporary file exists."""
    from arsdecode.api import DEFAULT_LM

    out = tmp_path / "big.maxarpa.xz"  # xz keeps the writer busy for a while
    proc = subprocess.Popen([sys.executable, "-m", "maxarpa", "convert", "--quiet",
                             str(DEFAULT_LM), str(out)], stderr=subprocess.PIPE, text=True,
                            # A background job inherits SIGINT ignored; a terminal gives the
                            # default disposition, which is what this test is about.
                            preexec_fn=default_stop_signals)
    deadline = time.monotonic() + 120
    while not any(name.endswith(".tmp") for name in os.listdir(tmp_path)):
        assert proc.poll() is None, "finished before its temporary file was seen"
        assert time.monotonic() < deadline
        time.sleep(0.002)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0, err
    assert "Traceback" not in err, err
    assert os.listdir(tmp_path) == [], os.listdir(tmp_path)


FINALISER_STOP = """
import os, signal, sys
from maxarpa.output import atomic_output

class SendsTheSignal:
    def __del__(self):
        os.kill(os.getpid(), {signum})
        for _ in range(10_000):  # the handler runs here, inside the finaliser
            pass

try:
    with atomic_output(sys.argv[1]) as tmp:
        with open(tmp, "w") as fh:
            fh.write("whole")
        SendsTheSignal()  # dropped at once: its __del__ runs now
except KeyboardInterrupt:
    sys.exit(130)
print("finished")
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_stop_that_lands_in_a_finaliser_still_leaves_no_file(tmp_path, signum):
    """Issue 29 F, the cause of the flaky test above: a signal handler runs wherever the main
    thread is; an exception it raises inside a finaliser (`IOBase.__del__` reading
    `LZMAFile.closed` did it under load) was printed as "Exception ignored" and dropped, and
    the file was renamed into place with exit 0. Here the finaliser is made to run then."""
    out = tmp_path / "out.txt"
    proc = subprocess.run([sys.executable, "-c", FINALISER_STOP.format(signum=int(signum)),
                           str(out)], capture_output=True, text=True, timeout=60,
                          preexec_fn=default_stop_signals)
    assert proc.returncode == 128 + signum, (proc.returncode, proc.stderr)
    assert "finished" not in proc.stdout and "Traceback" not in proc.stderr, proc.stderr
    assert os.listdir(tmp_path) == [], os.listdir(tmp_path)
    if signum != signal.SIGINT:
        name = signal.Signals(signum).name
        assert proc.stderr == f"maxarpa: terminated by {name}; removed the unfinished {out}\n"


def test_stop_handlers_are_installed_while_writing_and_restored_after(tmp_path):
    watched = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    before = {s: signal.getsignal(s) for s in watched}
    with atomic_output(tmp_path / "a") as a:
        during = {s: signal.getsignal(s) for s in watched}
        with atomic_output(tmp_path / "b") as b:  # nested: the outer block keeps them
            b.write_text("b")
        assert {s: signal.getsignal(s) for s in watched} == during
        a.write_text("a")
    assert all(during[s] is not before[s] for s in watched if callable(before[s])
               or before[s] == signal.SIG_DFL and s != signal.SIGINT)
    assert {s: signal.getsignal(s) for s in watched} == before
    assert sorted(os.listdir(tmp_path)) == ["a", "b"]


def test_query_into_head_exits_quietly(tmp_path, arpa):
    queries = tmp_path / "q.txt"
    queries.write_text("<s> a\n" * 200_000)
    script = (f"{sys.executable} -m maxarpa query {arpa} < {queries} 2> {tmp_path / 'err'} "
              "| head -1; echo status=${PIPESTATUS[0]}")
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    assert proc.stdout.splitlines()[-1] == "status=0", proc.stdout
    assert (tmp_path / "err").read_text() == ""
