"""Issue 19, section C: values that overflow are refused at load, naming the n-gram and line.

An ARPA backoff of 1e308 is a number of the grammar, but ln 10 times it is +inf, and bounds
add backoffs; decode used to print numpy RuntimeWarnings and "every path has probability
zero". Every value and bound must now be -inf or at most maxarpa.bound.LARGEST_LOG10 in
magnitude (any sum of them over a lattice stays finite), whatever the file format.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

import maxarpa
from maxarpa import FormatError
from maxarpa.maxarpa_format import write_max_arpa

TEXT = ("\\data\\\nngram 1=4\nngram 2=3\n\n\\1-grams:\n-1.0\t<unk>\n-99\t<s>\t-0.3\n"
        "-0.5\t</s>\n-0.4\ta\t{a}\n\n\\2-grams:\n-0.1\t<s> a\n-0.2\ta </s>\n-0.3\ta a\t{aa}\n\n"
        "\\end\\\n")


def arpa(tmp_path, a: str, aa: str = "0", name: str = "m.arpa"):
    path = tmp_path / name
    path.write_text(TEXT.format(a=a, aa=aa))
    return path


@pytest.mark.parametrize("value", ["1e308", "1e307", "-1e307", "1.7976931348623157e308"])
def test_a_backoff_too_large_is_refused_with_its_line(tmp_path, value):
    path = arpa(tmp_path, value)
    with pytest.raises(FormatError) as err:
        maxarpa.load(path)
    assert err.value.line == 9
    assert f"the 1-gram 'a': its backoff is {float(value)!r} (log10)" in str(err.value)


def test_backoffs_whose_sum_overflows_name_the_accumulated_bound(tmp_path):
    """Each backoff is allowed; their sum in mbow(a) = bow(a) + mbow(a a) is not."""
    path = arpa(tmp_path, "1.5e298", "1.5e298")
    with pytest.raises(FormatError) as err:
        maxarpa.load(path)
    assert err.value.line == 9
    assert "the 1-gram 'a': its max backoff sum (mbow) is 3e+298" in str(err.value)


def test_max_arpa_bounds_too_large_are_refused(tmp_path):
    """A MAX-ARPA mf of 1e300 is still a bound (checks.py accepts looser ones), but it does
    not fit a sum in natural log. Even a file whose digest vouches for it (written here with
    the digest stamped on purpose) is refused: the finite check runs on every load. An edited
    file without a matching digest gets its bounds recomputed, so the 1e300 never survives."""
    src, out = arpa(tmp_path, "0.5"), tmp_path / "m.maxarpa"
    model = maxarpa.load(src)
    model.trie.nodes[0].mf = model.trie.nodes[0].mf.copy()
    model.trie.nodes[0].mf[0] = 1e300  # looser than needed, still a bound
    write_max_arpa(model, out, bounds_verified=True)  # trusted as written
    with pytest.raises(FormatError, match=r"m.maxarpa: the 1-gram '.*': its max probability "
                                          r"bound \(mf\) is 1e\+300"):
        maxarpa.load(out)
    maxarpa.convert(src, out)
    lines = out.read_text().split("\n")
    at = lines.index("\\1-grams:") + 1
    fields = lines[at].split("\t")
    fields[3] = "1e300"
    lines[at] = "\t".join(fields)
    out.write_text("\n".join(lines))
    assert maxarpa.load(out).trie.nodes[0].mf[0] == maxarpa.load(src).trie.nodes[0].mf[0]


def lattice(tmp_path, length: int):
    path = tmp_path / "lat.json"
    path.write_text(json.dumps({"positions": [[["a", 0.0], ["<unk>", 0.0]]] * length}))
    return path


def decode(lm, lat):
    return subprocess.run([sys.executable, "-m", "arsdecode", "decode", "--lm", str(lm),
                           "--lattice", str(lat), "--json"], capture_output=True, text=True)


def test_decode_refuses_an_overflowing_model_in_one_line(tmp_path):
    proc = decode(arpa(tmp_path, "1e308"), lattice(tmp_path, 3))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Warning" not in proc.stderr
    assert "m.arpa:9: the 1-gram 'a': its backoff is 1e+308" in proc.stderr


def test_values_within_the_limit_decode_to_finite_scores(tmp_path):
    proc = decode(arpa(tmp_path, "1e298"), lattice(tmp_path, 12))
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr
    result = json.loads(proc.stdout)
    assert math.isfinite(result["log_p"]) and result["log_p"] > 1e298 and result["certified"]
