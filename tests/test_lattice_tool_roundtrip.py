"""Round trips with SRILM's lattice-tool (issue 32): the rescored lattice written by
`decode --write-lattice`, read back by lattice-tool (`-read-htk`, no LM), gives the same 1-best
as arsdecode; and lattice-tool's own decode of the input with the same LM and scales agrees.
Skipped with the reason where SRILM is not installed (this project's machines do not have it;
`bench/bench_lattice_list.py` records the figures where it is)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess

import pytest
from cli_in_process import in_process_cli as _cli

from arsdecode.lattice.lattice_files import write_word_lattice
from arsdecode.testing.brute_dag import random_word_lattice

LATTICE_TOOL = shutil.which("lattice-tool")
pytestmark = pytest.mark.skipif(LATTICE_TOOL is None,
                                reason="SRILM lattice-tool is not installed (not on PATH)")


def test_lattice_tool_decodes_the_rescored_lattice_to_our_best_path(random_lms, tmp_path,
                                                                    capsys):
    model = random_lms[4]
    wl = random_word_lattice(random.Random(61), model.words, max_nodes=6)
    path = tmp_path / "in.slf"
    write_word_lattice(wl, path)
    out = tmp_path / "rescored.slf"
    code, stdout, err = _cli(capsys, "decode", "--lm", str(model.path), "--lattice", str(path),
                             "--json", "--write-lattice", str(out), "--no-htk-quotes")
    assert code == 0, err
    best = json.loads(stdout)["tokens"]
    assert LATTICE_TOOL is not None
    proc = subprocess.run([LATTICE_TOOL, "-read-htk", "-htk-logbase", "2.718281828459045",
                           "-in-lattice", str(out), "-viterbi-decode"],
                          capture_output=True, text=True, check=True)
    words = [w for w in proc.stdout.split()[1:] if w not in ("<s>", "</s>")]
    assert words == best
