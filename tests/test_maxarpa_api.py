"""Issues 13 and 20 for maxarpa: the public API reads like the docs, each format owns its
magic and sniff, and one function builds a model (`maxarpa.load`, which applies the Config);
tests/test_imports.py checks that the modules form no import cycle."""

from __future__ import annotations

import inspect

import pytest

import maxarpa
from maxarpa.binary_format import MAGIC, is_binary
from maxarpa.maxarpa_format import MAX_ARPA_MAGIC, is_max_arpa


def test_public_entry_points_have_documented_signatures():
    # rounded_bounds (issue 34): the bounds as a binary file stores them, for conversion
    assert list(inspect.signature(maxarpa.load).parameters) == ["path", "mmap", "config",
                                                                 "rounded_bounds"]
    params = inspect.signature(maxarpa.convert).parameters
    assert list(params)[:4] == ["input", "output", "binary", "config"]
    for fn in (maxarpa.load, maxarpa.convert, maxarpa.Model.log10p, maxarpa.Model.word_id,
               maxarpa.binary_format.read_binary, maxarpa.maxarpa_format.write_max_arpa):
        doc = inspect.getdoc(fn) or ""
        assert "Raises:" in doc, fn
    for fn in (maxarpa.load, maxarpa.convert, maxarpa.Model.log10p):
        doc = inspect.getdoc(fn) or ""
        assert "Returns:" in doc and "log10" in doc, fn
    assert maxarpa.Config.__doc__


def test_one_function_builds_a_model(tmp_path):
    """No constructor beside `maxarpa.load`: the former `Model.from_arpa` skipped the
    strictness checks, and `Model.load` was a second name for `maxarpa.load`."""
    assert not hasattr(maxarpa.Model, "load") and not hasattr(maxarpa.Model, "from_arpa")
    path = tmp_path / "nobos.arpa"
    path.write_text("\\data\\\nngram 1=3\n\n\\1-grams:\n-1.0\t</s>\n-1.0\t<unk>\n"
                    "-0.5\ta\n\n\\end\\\n")
    with pytest.raises(maxarpa.FormatError, match="no <s>"):  # ARPA, too, is checked
        maxarpa.load(path)
    model = maxarpa.load(path, config=maxarpa.Config(sentence_marker_missing="accept"))
    assert model.bos_id is not None


def test_each_format_sniffs_its_own_files(tmp_path):
    from arpa_fixtures import VALID

    arpa = tmp_path / "m.arpa"
    arpa.write_text(VALID)
    text, npz = tmp_path / "m.maxarpa.gz", tmp_path / "m.npz"
    maxarpa.convert(arpa, text)
    maxarpa.convert(arpa, npz, binary=True)
    assert is_max_arpa(text) and not is_max_arpa(arpa) and not is_max_arpa(npz)
    assert is_binary(npz) and not is_binary(text) and not is_binary(arpa)
    assert MAX_ARPA_MAGIC == "\\max-arpa\\" and MAGIC.startswith("maxarpa-binary")
