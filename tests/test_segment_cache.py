"""The segmentation model's binary cache (issue 33, `model_cache`): the cached model is exactly
the text it came from (every array of its table, and the scores of real sentences against
maxarpa's scalar walk on the text model), its trie equals one built afresh, a second load
reads the cache without rebuilding, an unwritable folder or a damaged entry falls back to the
text; and `arsdecode segment --file` streams lines as str.splitlines cuts the whole text."""

from __future__ import annotations

import gzip
import json
import shutil

import numpy as np
import pytest
from cli_in_process import in_process_cli as _cli
from test_maxarpa_binary import assert_rounded_up

import maxarpa
from arsdecode.api import DEFAULT_LM
from arsdecode.tasks.segment import SurfaceIndex, segment_many
from arsdecode.tasks.segment.compiled import TrieIndex
from arsdecode.tasks.segment.model_cache import CACHE_ENV, cached_files, load_shipped

SENTENCES = ["the state of the union is strong", "we will not forget our soldiers",
             "xqzt unheardof words <unk> and numbers 1945"]


@pytest.fixture
def source(tmp_path):
    """A copy of the embedded 5-gram's MAX-ARPA text (the cache keys on its bytes)."""
    dst = tmp_path / "model" / "sotu.maxarpa.gz"
    dst.parent.mkdir()
    shutil.copy(DEFAULT_LM, dst)
    return dst


def test_cached_model_scores_as_the_text_model(source, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    text_model = maxarpa.load(source)
    model, trie = load_shipped(source)
    assert trie is not None and str(model.source).startswith(str(tmp_path / "cache"))
    assert model.vocab == text_model.vocab
    assert len(model.trie.nodes) == len(text_model.trie.nodes)
    for a, b in zip(model.trie.nodes, text_model.trie.nodes, strict=True):
        for field in ("keys", "rows", "log10p", "log10bow", "listed"):
            assert np.array_equal(getattr(a, field), getattr(b, field)), field
        for field in ("mf", "mbow"):  # the binary's bounds are rounded up (format 3)
            assert_rounded_up(getattr(b, field), getattr(a, field))
    for sent in SENTENCES:
        words = ["<s>", *sent.split(), "</s>"]
        for k in range(1, len(words)):
            assert model.log10p(words[k], words[:k]) == text_model.log10p(words[k], words[:k])
    fresh = TrieIndex.of(SurfaceIndex.of_model(text_model).words, text_model.vocab)
    assert trie.words == fresh.words and trie.vocab_digest == fresh.vocab_digest
    for name in ("surf_word_off", "child_off", "child_sym", "child_node", "node_surface",
                 "vocab_ids"):
        assert np.array_equal(getattr(trie, name), getattr(fresh, name)), name


def test_second_load_reads_the_cache(source, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    files = cached_files(source)
    assert files is not None and all(f.is_file() for f in files)
    stamps = [f.stat().st_mtime_ns for f in files]
    assert cached_files(source) == files
    assert [f.stat().st_mtime_ns for f in files] == stamps  # not rebuilt
    assert sorted(p.name for p in files[0].parent.iterdir()) == sorted(f.name for f in files)


def test_unwritable_folder_and_damaged_entry_fall_back_to_the_text(source, tmp_path,
                                                                     monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(CACHE_ENV, str(blocker))
    model, trie = load_shipped(source)
    assert trie is None and model.vocab == maxarpa.load(source).vocab
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    files = cached_files(source)
    assert files is not None
    files[1].write_bytes(b"PK\x03\x04 damaged")
    model, trie = load_shipped(source)
    assert trie is None and str(model.source) == str(source)
    assert not files[1].exists()  # dropped, rebuilt on the next load
    assert load_shipped(source)[1] is not None


def test_file_is_streamed_as_splitlines_cuts_it(tmp_path, capsys):
    lines = "thisisatest\r\n\n#StateOfTheUnion\rgodblesstheunion\x0cwewill\n\nlast"
    src = tmp_path / "in.txt"
    src.write_bytes(lines.encode())
    packed = tmp_path / "in.txt.gz"
    packed.write_bytes(gzip.compress(lines.encode()))
    want = [" ".join(r.words) for r in segment_many(lines.splitlines())]
    for path in (src, packed):
        code, out, err = _cli(capsys, "segment", "--file", str(path))
        assert code == 0, err
        assert out.splitlines() == want
    code, out, err = _cli(capsys, "segment", "--file", str(src), "--json")
    assert [json.loads(line)["words"] for line in out.splitlines()] == [
        r.words for r in segment_many(lines.splitlines())]


def test_a_line_that_is_not_utf8_is_one_line_naming_it(tmp_path, capsys):
    src = tmp_path / "bad.txt"
    src.write_bytes(b"fine\nalso fine\nbad \xff here\n")
    code, out, err = _cli(capsys, "segment", "--file", str(src))
    assert code != 0 and "Traceback" not in err
    assert err.strip().splitlines()[-1].endswith(f"{src}:3: not UTF-8 text: byte 0xff")
    code, out, err = _cli(capsys, "segment", "--file", str(tmp_path / "missing.txt"))
    assert code != 0 and "missing.txt: cannot read text" in err and "Traceback" not in err
