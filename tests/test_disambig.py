"""`arsdecode disambig` and its inputs (arsdecode.lattice.disambig_map): SRILM disambig's map
and text files, checked against brute force on small random models with positive backoffs."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest

from arsdecode.cli import main as cli
from arsdecode.cli.disambig import BYTELOG_PER_LN
from arsdecode.errors import LatticeError, ObservationError
from arsdecode.lattice import Lattice
from arsdecode.lattice.disambig_map import DisambigMap, text_lattices
from arsdecode.testing.brute import brute_model

LN10 = math.log(10.0)


# ---------------------------------------------------------------- map parsing


def test_plain_probabilities_and_default_one():
    m = DisambigMap.parse("a x 0.25 y\nb y 0.5 x 0.5 z 0\n", source="m.txt")
    ra, rb = m.rows["a"], m.rows["b"]
    assert ra.hidden == ("x", "y")
    np.testing.assert_array_equal(ra.log_probs, [math.log(0.25), 0.0])  # y: no p means p = 1
    assert rb.hidden == ("y", "x", "z")
    np.testing.assert_array_equal(rb.log_probs, [math.log(0.5), math.log(0.5), -math.inf])


def test_log10_probabilities():
    m = DisambigMap.parse("a x -0.5 y -inf z\n", logmap=True)
    np.testing.assert_allclose(m.rows["a"].log_probs[:1], [-0.5 * LN10], rtol=0, atol=0)
    assert m.rows["a"].log_probs[1] == -math.inf
    assert m.rows["a"].log_probs[2] == 0.0  # log10 0 = p 1


def test_identical_rows_are_shared_and_lattices_share_arrays():
    m = DisambigMap.parse("a x 0.5 y 0.5\nb x 0.5 y 0.5\nc x 0.5 y 0.25\n")
    assert m.rows["a"] is m.rows["b"]
    assert m.rows["c"] is not m.rows["a"]
    assert m.distinct_rows == 2 and len(m) == 3
    lat = m.lattice(["a", "b", "c"])
    assert lat.log_emissions[0] is lat.log_emissions[1]
    assert lat.tokens[0] is lat.tokens[1]
    scaled = m.lattice(["a", "b"], mapw=2.0)
    assert scaled.log_emissions[0] is scaled.log_emissions[1]
    np.testing.assert_array_equal(scaled.log_emissions[0], 2.0 * np.log([0.5, 0.5]))


def test_later_line_replaces_earlier_as_srilm():
    m = DisambigMap.parse("a x\na y 0.5\n")
    assert m.rows["a"].hidden == ("y",)


def test_mapw_keeps_zero_probability_impossible():
    m = DisambigMap.parse("a x 0 y 0.1\n")
    for w in (0.0, 0.5, 3.0):
        e = m.lattice(["a"], mapw=w).log_emissions[0]
        assert e[0] == -math.inf
        assert e[1] == pytest.approx(w * math.log(0.1))


@pytest.mark.parametrize("text, logmap, fragment", [
    ("a x -0.1\n", False, "probability '-0.1'"),
    ("a x 0.5 x 0.5\n", False, "listed twice"),
    ("a 0.5 x\n", False, "expected a hidden word"),
    ("a\n", False, "maps to no hidden word"),
    ("a x 0 y 0\n", False, "probability 0"),
    ("a <s>\n", False, "sentence marker"),
    ("a x 0.5 y 0.5 </s>\n", False, "sentence marker"),
    ("a x -0.5\nb x 0 y 0 z 0 z 0\n", True, "listed twice"),
    # issue 29 C: every number is checked, on the fast path too (SRILM takes them as they come)
    ("TEH the 1.5 teh 0.5\n", False, "probability '1.5', not one in [0, 1]"),
    ("TEH the 0.5 teh 7\n", False, "probability '7', not one in [0, 1]"),
    ("TEH the 0.5 teh 1e400\n", False, "probability '1e400', not one in [0, 1]"),
    ("a x 0\nTEH the -0.5 teh 0.25\n", True, "probability '0.25', not one in [-inf, 0]"),
    ("TEH the -0.5 teh 1e400\n", True, "probability '1e400', not one in [-inf, 0]"),
])
def test_malformed_lines_name_file_and_line(text, logmap, fragment):
    with pytest.raises(LatticeError) as err:
        DisambigMap.parse(text, source="m.txt", logmap=logmap)
    msg = str(err.value)
    assert "\n" not in msg and fragment in msg
    assert msg.startswith(f"m.txt:{text.count(chr(10))}:")


def test_srilm_default_marker_lines_are_ignored():
    m = DisambigMap.parse("<s> <s>\n</s> </s>\na x\n")
    assert set(m.rows) == {"a"}


def test_missing_token_is_an_error_naming_text_file_and_line(tmp_path):
    (tmp_path / "m").write_text("a x 0.5 y 0.5\n")
    (tmp_path / "t").write_text("a a\n\na b a\n")
    m = DisambigMap.read(tmp_path / "m")
    with pytest.raises(ObservationError) as err:
        text_lattices(m, tmp_path / "t")
    msg = str(err.value)
    assert msg.startswith(f"{tmp_path / 't'}:3: ") and "'b'" in msg and str(tmp_path / "m") in msg


def test_keep_unk_passes_token_through():
    m = DisambigMap.parse("a x 0.5 y 0.5\n")
    lat = m.lattice(["a", "zz", "a"], keep_unk=True)
    assert lat.tokens[1] == ("zz",)
    np.testing.assert_array_equal(lat.log_emissions[1], [0.0])


def test_tolower_lowercases_map_and_text():
    m = DisambigMap.parse("A X 0.5 y 0.5\n", tolower=True)
    assert m.rows["a"].hidden == ("x", "y")
    lat = m.lattice(["A"])
    assert lat.tokens == (("x", "y"),)
    strict = DisambigMap.parse("A X 0.5\n")
    with pytest.raises(ObservationError):
        strict.lattice(["a"])


def test_blank_lines_are_empty_sentences(tmp_path):
    (tmp_path / "t").write_text("a\n\n  \na a\n")
    lats = text_lattices(DisambigMap.parse("a x\n"), tmp_path / "t")
    assert [None if x is None else len(x) for x in lats] == [1, None, None, 2]


# ---------------------------------------------------------------- the command vs brute force


def _random_problem(rng: random.Random, words: list[str], logmap: bool, zero: bool = True):
    """A random map (as text and as the independent reference dict) and text lines."""
    observed = [f"o{i}" for i in range(rng.randint(2, 4))]
    ref: dict[str, list[tuple[str, float]]] = {}
    lines = []
    for o in observed:
        hidden = rng.sample(words, rng.randint(1, min(3, len(words))))
        fields = [o]
        cands = []
        for h in hidden:
            r = rng.random()
            if r < 0.2:  # no probability: p = 1
                fields.append(h)
                cands.append((h, 0.0))
            elif zero and r < 0.3 and len(hidden) > 1 and not cands:
                fields += [h, "-inf" if logmap else "0"]
                cands.append((h, -math.inf))
            else:
                p = round(rng.uniform(0.01, 1.0), 4)
                if logmap:
                    fields += [h, repr(math.log10(p))]
                    cands.append((h, math.log10(p) * LN10))
                else:
                    fields += [h, repr(p)]
                    cands.append((h, math.log(p)))
        ref[o] = cands
        lines.append(" ".join(fields))
    text = [[rng.choice(observed) for _ in range(rng.randint(1, 4))]
            for _ in range(rng.randint(1, 4))]
    return "\n".join(lines) + "\n", ref, text


def _reference_lattice(ref, sentence, mapw=1.0) -> Lattice:
    return Lattice.from_lists([[(h, -math.inf if lp == -math.inf else lp * mapw)
                                for h, lp in ref[o]] for o in sentence])


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(["disambig", *argv])
    except SystemExit as stop:  # argparse's errors
        code = stop.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("logmap", [False, True])
def test_cli_equals_brute_force(random_lms, tmp_path, capsys, logmap):
    rng = random.Random(7 + logmap)
    for trial, model in enumerate(random_lms * 2):
        map_text, ref, text = _random_problem(rng, model.words, logmap)
        mapw = 1.0 if trial % 3 else rng.choice([0.5, 2.0])
        (tmp_path / "map").write_text(map_text)
        (tmp_path / "obs").write_text("\n".join(" ".join(s) for s in text) + "\n")
        argv = ["--text", str(tmp_path / "obs"), "--map", str(tmp_path / "map"),
                "--lm", str(model.path), "--mapw", str(mapw)]
        if logmap:
            argv.append("--logmap")
        code, out, _ = _run(capsys, *argv)
        assert code == 0, (model, map_text)
        lines = out.splitlines()
        assert len(lines) == len(text)
        for sentence, line in zip(text, lines, strict=True):
            brute = brute_model(model.lm, _reference_lattice(ref, sentence, mapw))
            assert tuple(line.split()) in brute.near_best(1e-9), (model, map_text, sentence)


def _disambig_nbest(out: str) -> list[list[tuple[float, list[str]]]]:
    """disambig's --nbest lines split per sentence (each starts at NBEST_0) as
    (log10 score, hidden words without <s> and </s>)."""
    blocks: list[list[tuple[float, list[str]]]] = []
    for line in out.splitlines():
        tag, score, *words = line.split()
        assert tag.startswith("NBEST_"), line
        if tag == "NBEST_0":
            blocks.append([])
        assert int(tag[6:]) == len(blocks[-1])
        blocks[-1].append((float(score), [w for w in words if w not in ("<s>", "</s>")]))
    return blocks


def test_cli_nbest_format_equals_brute_force(random_lms, tmp_path, capsys):
    rng = random.Random(3)
    for model in random_lms:
        map_text, ref, text = _random_problem(rng, model.words, False, zero=False)
        (tmp_path / "map").write_text(map_text)
        (tmp_path / "obs").write_text("\n".join(" ".join(s) for s in text) + "\n")
        k = 4
        base = ["--text", str(tmp_path / "obs"), "--map", str(tmp_path / "map"), "--lm",
                str(model.path), "--nbest", str(k)]
        code, out, _ = _run(capsys, *base, "--nbest-format", "NBestList1.0")
        assert code == 0
        blocks = out.split("NBestList1.0\n")
        assert blocks[0] == "" and len(blocks) == len(text) + 1
        code, lines, _ = _run(capsys, *base)  # disambig's own layout: NBEST_k lines
        assert code == 0
        ours = _disambig_nbest(lines)
        assert len(ours) == len(text)
        for sentence, block, hyps_log10 in zip(text, blocks[1:], ours, strict=True):
            brute = brute_model(model.lm, _reference_lattice(ref, sentence))
            ranked = sorted(brute.log_p, reverse=True)
            hyps = block.splitlines()
            assert len(hyps) == len(hyps_log10) == min(k, len(brute.paths))
            for rank, (hyp, (log10_score, words)) in enumerate(zip(hyps, hyps_log10,
                                                                   strict=True)):
                score, _, listed = hyp.partition(" ")
                assert score.startswith("(") and score.endswith(")")
                lp = brute.score(listed.split())
                assert lp == pytest.approx(ranked[rank], abs=1e-9)
                assert int(score[1:-1]) == int(np.rint(lp * BYTELOG_PER_LN))
                assert brute.score(words) == pytest.approx(ranked[rank], abs=1e-9)
                assert log10_score == pytest.approx(ranked[rank] / math.log(10), abs=1e-9)


def test_cli_nbest_lines_carry_the_sentence_markers_as_disambig(tmp_path, capsys):
    (tmp_path / "map").write_text("A the 0.9 a 0.1\nB state\n")
    (tmp_path / "obs").write_text("a b\n")
    base = ["--text", str(tmp_path / "obs"), "--map", str(tmp_path / "map"), "--tolower"]
    code, out, _ = _run(capsys, *base, "--nbest", "2")
    assert code == 0
    lines = out.splitlines()
    assert [ln.split()[0] for ln in lines] == ["NBEST_0", "NBEST_1"]
    assert lines[0].split()[2:] == ["<s>", "the", "state", "</s>"]
    code, out, _ = _run(capsys, *base, "--nbest", "1", "--no-eos")
    assert code == 0 and out.split() == ["<s>", "the", "state"]  # K = 1: no NBEST_ prefix


def test_cli_lmw_scales_the_map_against_the_lm(random_lms, tmp_path, capsys):
    """lmw * ln p_LM + mapw * ln p_map: best path and NBestList scores vs brute force."""
    rng = random.Random(5)
    for model in random_lms:
        map_text, ref, text = _random_problem(rng, model.words, False, zero=False)
        (tmp_path / "map").write_text(map_text)
        (tmp_path / "obs").write_text("\n".join(" ".join(s) for s in text) + "\n")
        lmw, mapw = rng.choice([(2.0, 0.5), (0.3, 1.0), (4.0, 3.0)])
        base = ["--text", str(tmp_path / "obs"), "--map", str(tmp_path / "map"), "--lm",
                str(model.path), "--lmw", str(lmw), "--mapw", str(mapw)]
        code, out, _ = _run(capsys, *base)
        assert code == 0
        code, nbest, _ = _run(capsys, *base, "--nbest", "2", "--nbest-format", "NBestList1.0")
        assert code == 0
        for sentence, line, block in zip(text, out.splitlines(),
                                         nbest.split("NBestList1.0\n")[1:], strict=True):
            # brute force on the unscaled pieces: LM from the model, map from the reference
            lattice = _reference_lattice(ref, sentence)
            lm_only = brute_model(model.lm, Lattice.from_lists(
                [[(h, 0.0) for h, _ in ref[o]] for o in sentence]))
            emis = {p: lp_all - lp_lm for p, lp_all, lp_lm in zip(
                lm_only.paths, brute_model(model.lm, lattice).log_p, lm_only.log_p,
                strict=True)}
            total = {p: lmw * lm_only.score(p) + mapw * emis[p] for p in lm_only.paths}
            best = max(total.values())
            assert total[tuple(line.split())] == pytest.approx(best, abs=1e-9)
            for hyp in block.splitlines():
                score, _, words = hyp.partition(" ")
                assert int(score[1:-1]) == int(np.rint(total[tuple(words.split())]
                                                       * BYTELOG_PER_LN))


def test_cli_keep_unk_blank_lines_and_default_model(tmp_path, capsys):
    (tmp_path / "map").write_text("TEH the 0.9 teh 0.1\nSTATE state\n")
    (tmp_path / "obs").write_text("teh state\n\nteh zzqq state\n")
    code, out, err = _run(capsys, "--text", str(tmp_path / "obs"), "--map",
                          str(tmp_path / "map"), "--tolower", "--keep-unk")
    assert code == 0
    assert out.splitlines() == ["the state", "", "the zzqq state"]
    assert "not in the model's vocabulary" in err  # zzqq (and teh) are scored as <unk>


@pytest.mark.parametrize("case, fragment", [
    ("missing", "obs:2: the observed token 'b' is not in the map"),
    ("badmap", "map:1: hidden word 'x' has the probability '-1'"),
    ("nofile", "cannot read map"),
    ("lmw0", "argument --lmw/-lmw: must be a finite number > 0, got 0"),
    ("lmwneg", "argument --lmw/-lmw: must be a finite number > 0, got -1"),
    ("nbestfb", "--nbest is Viterbi decoding; it does not combine with --fb"),
    ("order0", "argument --order/-order: must be >= 1, got 0"),
])
def test_cli_errors_are_one_line_exit_2(random_lms, tmp_path, capsys, case, fragment):
    model = next(m for m in random_lms if m.lm.order >= 2)
    (tmp_path / "map").write_text("a x -1\n" if case == "badmap" else f"a {model.words[0]}\n")
    (tmp_path / "obs").write_text("a\nb\n" if case == "missing" else "a a\n")
    argv = ["--text", str(tmp_path / "obs"), "--map",
            str(tmp_path / ("nope" if case == "nofile" else "map")), "--lm", str(model.path)]
    argv += {"lmw0": ["--lmw", "0"], "lmwneg": ["-lmw", "-1"], "order0": ["--order", "0"],
             "nbestfb": ["--nbest", "2", "--posteriors"]}.get(case, [])
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("arsdecode") and fragment in err
    assert "Traceback" not in err


def test_order_at_or_above_the_models_is_accepted(random_lms, tmp_path, capsys):
    model = random_lms[0]
    (tmp_path / "map").write_text(f"a {model.words[0]}\n")
    (tmp_path / "obs").write_text("a\n")
    for order in (model.lm.order, model.lm.order + 2):
        code, out, _ = _run(capsys, "--text", str(tmp_path / "obs"), "--map",
                            str(tmp_path / "map"), "--lm", str(model.path), "--order", str(order))
        assert code == 0 and out == f"{model.words[0]}\n"


def test_shared_rows_on_a_big_map(tmp_path: Path):
    """Many observed tokens with one candidate list: one parsed row, one array."""
    lines = [f"o{i} x 0.5 y 0.25 z 0.25" for i in range(1000)]
    m = DisambigMap.parse("\n".join(lines))
    assert m.distinct_rows == 1


# ---------------------------------------------------------------- batch --map


def test_batch_map_equals_brute_force_and_names_bad_lines(random_lms, tmp_path, capsys):
    import json

    rng = random.Random(11)
    for model in random_lms[:4]:
        map_text, ref, text = _random_problem(rng, model.words, False)
        (tmp_path / "map").write_text(map_text)
        items = [{"id": i, "observed": s} for i, s in enumerate(text)]
        items.append({"id": "bad", "observed": ["nope"]})
        items.append({"id": "shape", "positions": [[["a", 0.0]]]})
        (tmp_path / "in.jsonl").write_text("".join(json.dumps(x) + "\n" for x in items))
        out = tmp_path / f"out_{model.name}.jsonl"
        code = cli.main(["batch", "--lm", str(model.path), "--in", str(tmp_path / "in.jsonl"),
                         "--out", str(out), "--map", str(tmp_path / "map"),
                         "--model-cache", str(tmp_path / "cache"), "--ordered"])
        capsys.readouterr()
        assert code == 0
        lines = [json.loads(x) for x in out.read_text().splitlines()]
        assert [x["id"] for x in lines] == [x["id"] for x in items]
        for sentence, line in zip(text, lines, strict=False):
            brute = brute_model(model.lm, _reference_lattice(ref, sentence))
            assert tuple(line["tokens"]) in brute.near_best(1e-9)
            assert line["log_p"] == pytest.approx(brute.best_log_p, abs=1e-9)
        assert lines[-2]["error"].startswith("line ") and "'nope' is not in the map" in \
            lines[-2]["error"]
        assert '"observed" must be a non-empty list' in lines[-1]["error"]


@pytest.mark.parametrize("extra, fragment", [
    (["--task", "tag", "--map", "MAP"], "--map is for --task decode or sample"),
    (["--keep-unk"], "need --map"),
    (["--map", "-"], "--map must be a file"),
])
def test_batch_map_option_errors(random_lms, tmp_path, capsys, extra, fragment):
    (tmp_path / "map").write_text("a x\n")
    (tmp_path / "in.jsonl").write_text('{"id": 1, "observed": ["a"]}\n')
    extra = [str(tmp_path / "map") if x == "MAP" else x for x in extra]
    code = cli.main(["batch", "--lm", str(random_lms[0].path), "--in",
                     str(tmp_path / "in.jsonl"), "--out", str(tmp_path / "o.jsonl"),
                     "--model-cache", str(tmp_path / "cache"), *extra])
    _, err = capsys.readouterr()
    assert code == 2 and len(err.splitlines()) == 1 and fragment in err


def test_fast_path_parses_as_the_general_grammar():
    """Lines in the common `word prob` form take a fast path; it must agree with the general
    grammar on every line, odd ones included (numbers as words, 1_0, nan, inf, -inf)."""
    from arsdecode.lattice.disambig_map import _fast_row, _general_row

    rng = random.Random(0)
    pool = ["x", "y", "1st", "-z", "nan", "inf", "0.5", "1e-3", "-inf", "1_0", ".5", "0",
            "2", "-0.3", "+1", "w_1", "Infinity", "\u0663", "1e5", "5.", "-.5e-1", "1e",
            "1", "-2.5", "0.25", "1e400", "-1e400", "0.1", "0.9", "-0.7", "1e-9"]
    agreed = refused = 0
    for _ in range(6000):
        fields = ["o"] + [rng.choice(pool) for _ in range(rng.randint(1, 6))]
        for logmap in (False, True):
            fast = _fast_row(fields, logmap)
            try:
                general = _general_row(fields, logmap, "m:1")
            except LatticeError:  # what the general grammar refuses, the fast path must too
                assert fast is None, (fields, logmap)
                refused += 1
                continue
            if fast is None:
                continue
            assert fast == general, (fields, logmap)
            agreed += 1
    assert agreed > 100 and refused > 100


# ---------------------------------------------------------------- decode/sample --map


def test_decode_map_equals_brute_force(random_lms, tmp_path, capsys):
    import json

    rng = random.Random(21)
    for model in random_lms:
        map_text, ref, text = _random_problem(rng, model.words, True)
        (tmp_path / "map").write_text(map_text)
        (tmp_path / "obs").write_text("\n" + " ".join(text[0]) + "\n\n")  # blank lines skipped
        code = cli.main(["decode", "--lm", str(model.path), "--map", str(tmp_path / "map"),
                         "--logmap", "--text", str(tmp_path / "obs"), "--mapw", "0.7",
                         "--json"])
        out, _ = capsys.readouterr()
        assert code == 0
        r = json.loads(out)
        brute = brute_model(model.lm, _reference_lattice(ref, text[0], 0.7))
        assert tuple(r["tokens"]) in brute.near_best(1e-9)
        assert r["log_p"] == pytest.approx(brute.best_log_p, abs=1e-9)


def test_sample_map_runs(random_lms, tmp_path, capsys):
    model = random_lms[1]
    (tmp_path / "map").write_text(f"a {model.words[0]} 0.5 {model.words[1]} 0.5\n")
    (tmp_path / "obs").write_text("a a\n")
    code = cli.main(["sample", "--lm", str(model.path), "--map", str(tmp_path / "map"),
                     "--text", str(tmp_path / "obs"), "-n", "5", "--seed", "1"])
    capsys.readouterr()
    assert code == 0


@pytest.mark.parametrize("argv, fragment", [
    (["--map", "MAP"], "--map needs --text"),
    (["--text", "OBS"], "need --map"),
    ([], "give --lattice, or --map with --text"),
    (["--map", "MAP", "--text", "OBS2"], "holds 2 sentences"),
    (["--map", "MAP", "--text", "OBS", "--lattice", "x.json"], "not both"),
])
def test_decode_map_option_errors(random_lms, tmp_path, capsys, argv, fragment):
    model = random_lms[0]
    (tmp_path / "map").write_text(f"a {model.words[0]}\n")
    (tmp_path / "obs").write_text("a\n")
    (tmp_path / "obs2").write_text("a\na a\n")
    names = {"MAP": "map", "OBS": "obs", "OBS2": "obs2"}
    argv = [str(tmp_path / names[x]) if x in names else x for x in argv]
    code = cli.main(["decode", "--lm", str(model.path), *argv])
    _, err = capsys.readouterr()
    assert code == 2 and len(err.splitlines()) == 1 and fragment in err


@pytest.mark.parametrize("sentences, candidates", [(2, 10**9), (1000, 1), (1000, 7)])
def test_cli_chunks_keep_line_order(random_lms, tmp_path, capsys, monkeypatch, sentences,
                                    candidates):
    """Chunks by sentences (CHUNK) or by candidates (CHUNK_CANDIDATES: 1 makes every
    sentence a chunk of its own, past the cap)."""
    import arsdecode.cli.disambig as dis

    monkeypatch.setattr(dis, "CHUNK", sentences)
    monkeypatch.setattr(dis, "CHUNK_CANDIDATES", candidates)
    model = random_lms[2]
    rng = random.Random(9)
    map_text, ref, _ = _random_problem(rng, model.words, False)
    text = [[rng.choice(list(ref)) for _ in range(rng.randint(1, 3))] for _ in range(7)]
    text[3] = []  # a blank line inside a chunk
    (tmp_path / "map").write_text(map_text)
    (tmp_path / "obs").write_text("\n".join(" ".join(s) for s in text) + "\n")
    code, out, _ = _run(capsys, "--text", str(tmp_path / "obs"), "--map", str(tmp_path / "map"),
                        "--lm", str(model.path))
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 7 and lines[3] == ""
    for sentence, line in zip(text, lines, strict=True):
        if sentence:
            brute = brute_model(model.lm, _reference_lattice(ref, sentence))
            assert tuple(line.split()) in brute.near_best(1e-9)


def test_chunks_respect_both_caps_and_cover_the_input(monkeypatch):
    import arsdecode.cli.disambig as dis
    from arsdecode.lattice import Lattice

    rng = random.Random(4)
    lattices = [None if rng.random() < 0.2 else
                Lattice.from_lists([[(w, 0.0) for w in "abcd"[: rng.randint(1, 4)]]
                                    for _ in range(rng.randint(1, 5))])
                for _ in range(60)]
    for cap_s, cap_c in ((1000, 10**9), (3, 10**9), (1000, 6), (4, 9), (1000, 1)):
        monkeypatch.setattr(dis, "CHUNK", cap_s)
        monkeypatch.setattr(dis, "CHUNK_CANDIDATES", cap_c)
        chunks = list(dis._chunks(lattices))
        assert [lat for c in chunks for lat in c] == lattices
        for c in chunks:
            sizes = [0 if lat is None else sum(lat.widths) for lat in c]
            assert c and len(c) <= cap_s and (sum(sizes) <= cap_c or len(c) == 1)


# ---------------------------------------------------------------- SRILM's scoring options:
# --lmw, --no-eos, --no-bos, --order N, and forward-backward: --posteriors, --totals, --fb


def _weighted_reference(lm, ref, sentence, lmw, mapw, sos, eos):
    """Brute force over every hidden sentence: lmw * the LM (stripped of <s> / </s> as asked,
    scalar log10p calls) + mapw * the map (tests/test_weighted_lm.py `reference`)."""
    from test_weighted_lm import reference

    return reference(lm, _reference_lattice(ref, sentence, mapw), lmw, sos, eos)


def _posterior_blocks(out: str, sentences, sos: bool, eos: bool, totals: bool):
    """Split --posteriors [--totals] output into per-sentence (rows, total) pieces."""
    lines = out.splitlines()
    blocks = []
    at = 0
    for sentence in sentences:
        n = len(sentence) + sos + eos
        rows = lines[at : at + n]
        at += n
        total = None
        if totals:
            total = float(lines[at])
            at += 1
        blocks.append((rows, total))
    assert at == len(lines)
    return blocks


@pytest.mark.parametrize("logmap", [False, True])
def test_posteriors_and_totals_equal_brute_force(random_lms, tmp_path, capsys, logmap):
    from test_weighted_lm import brute_marginals

    rng = random.Random(21 + logmap)
    checked = 0
    for model in random_lms:
        map_text, ref, text = _random_problem(rng, model.words, logmap)
        lmw, mapw = rng.choice([(1.0, 1.0), (2.0, 0.5), (0.4, 1.5)])
        sos, eos = rng.random() < 0.6, rng.random() < 0.6
        (tmp_path / "map").write_text(map_text)
        (tmp_path / "obs").write_text("\n".join(" ".join(s) for s in text) + "\n")
        argv = ["--text", str(tmp_path / "obs"), "--map", str(tmp_path / "map"), "--lm",
                str(model.path), "--lmw", str(lmw), "--mapw", str(mapw), "--posteriors",
                "--totals"] + (["--logmap"] if logmap else []) + (
                [] if sos else ["--no-bos"]) + ([] if eos else ["--no-eos"])
        code, out, err = _run(capsys, *argv)
        assert code == 0, err
        assert "estimates" not in err
        for sentence, (rows, total) in zip(text, _posterior_blocks(out, text, sos, eos, True),
                                           strict=True):
            brute = _weighted_reference(model.lm, ref, sentence, lmw, mapw, sos, eos)
            assert total == pytest.approx(brute.log_Z / LN10, abs=1e-9), (model, sentence)
            lattice = _reference_lattice(ref, sentence, mapw)
            want = brute_marginals(brute, lattice)
            if sos:
                assert rows[0] == f"<s>\t <s> {0.0 if logmap else 1.0}"
            if eos:
                assert rows[-1] == f"</s>\t </s> {0.0 if logmap else 1.0}"
            body = rows[sos : len(rows) - eos]
            for i, (obs, row) in enumerate(zip(sentence, body, strict=True)):
                head, _, cells = row.partition("\t")
                assert head == obs and cells.startswith(" ")
                fields = cells.split()
                got = {fields[j]: float(fields[j + 1]) for j in range(0, len(fields), 2)}
                assert set(got) == set(lattice.tokens[i])
                assert fields[0::2] == list(lattice.tokens[i])  # the map's order, as disambig
                for j, tok in enumerate(lattice.tokens[i]):
                    p = 10.0 ** got[tok] if logmap else got[tok]
                    assert p == pytest.approx(want[i][j], abs=1e-9), (model, sentence, tok)
            checked += 1
    assert checked >= len(random_lms)


def test_fb_prints_the_most_probable_word_of_each_position(random_lms, tmp_path, capsys):
    from test_weighted_lm import brute_marginals

    rng = random.Random(31)
    for model in random_lms[:5]:
        map_text, ref, text = _random_problem(rng, model.words, False)
        (tmp_path / "map").write_text(map_text)
        (tmp_path / "obs").write_text("\n".join(" ".join(s) for s in text) + "\n")
        code, out, _ = _run(capsys, "--text", str(tmp_path / "obs"), "--map",
                            str(tmp_path / "map"), "--lm", str(model.path), "-fb", "-lmw", "1.5")
        assert code == 0
        for sentence, line in zip(text, out.splitlines(), strict=True):
            brute = _weighted_reference(model.lm, ref, sentence, 1.5, 1.0, True, True)
            lattice = _reference_lattice(ref, sentence)
            for i, (word, probs) in enumerate(zip(line.split(), brute_marginals(brute, lattice),
                                                  strict=True)):
                assert probs[lattice.tokens[i].index(word)] == pytest.approx(probs.max(),
                                                                             abs=1e-12)


def test_no_eos_no_bos_best_path_and_nbest_equal_brute_force(random_lms, tmp_path, capsys):
    rng = random.Random(41)
    for model in random_lms:
        map_text, ref, text = _random_problem(rng, model.words, False, zero=False)
        (tmp_path / "map").write_text(map_text)
        (tmp_path / "obs").write_text("\n".join(" ".join(s) for s in text) + "\n")
        sos, eos = rng.choice([(False, True), (True, False), (False, False)])
        flags = ([] if sos else ["-no-sos"]) + ([] if eos else ["-no-eos"])
        base = ["-text", str(tmp_path / "obs"), "-map", str(tmp_path / "map"), "-lm",
                str(model.path), "-lmw", "0.8", *flags]
        code, out, _ = _run(capsys, *base)
        assert code == 0
        code, nbest, _ = _run(capsys, *base, "-nbest", "3", "--nbest-format", "NBestList1.0")
        assert code == 0
        for sentence, line, block in zip(text, out.splitlines(),
                                         nbest.split("NBestList1.0\n")[1:], strict=True):
            brute = _weighted_reference(model.lm, ref, sentence, 0.8, 1.0, sos, eos)
            assert tuple(line.split()) in brute.near_best(1e-9), (model, sentence, sos, eos)
            ranked = sorted(brute.log_p, reverse=True)
            for rank, hyp in enumerate(block.splitlines()):
                score, _, words = hyp.partition(" ")
                assert brute.score(words.split()) == pytest.approx(ranked[rank], abs=1e-9)
                assert int(score[1:-1]) == int(np.rint(ranked[rank] * BYTELOG_PER_LN))


def test_order_below_the_models_truncates_it(random_lms, tmp_path, capsys):
    import maxarpa

    rng = random.Random(51)
    checked = 0
    for model in random_lms:
        if model.lm.order < 3:
            continue
        map_text, ref, text = _random_problem(rng, model.words, False)
        (tmp_path / "map").write_text(map_text)
        (tmp_path / "obs").write_text("\n".join(" ".join(s) for s in text) + "\n")
        for order in range(1, model.lm.order):
            code, out, _ = _run(capsys, "--text", str(tmp_path / "obs"), "--map",
                                str(tmp_path / "map"), "--lm", str(model.path), "--order",
                                str(order), "--totals")
            assert code == 0
            small = maxarpa.truncate(model.lm, order)
            for sentence, total in zip(text, out.splitlines(), strict=True):
                brute = brute_model(small, _reference_lattice(ref, sentence))
                assert float(total) == pytest.approx(brute.log_Z / LN10, abs=1e-9)
            checked += 1
    assert checked >= 5


def test_blank_lines_in_forward_backward_output(random_lms, tmp_path, capsys):
    model = random_lms[2]
    (tmp_path / "map").write_text(f"a {model.words[0]} 0.5 {model.words[1]} 0.5\n")
    (tmp_path / "obs").write_text("a\n\n")
    code, out, _ = _run(capsys, "--text", str(tmp_path / "obs"), "--map",
                        str(tmp_path / "map"), "--lm", str(model.path), "--posteriors",
                        "--totals")
    assert code == 0
    lines = out.splitlines()
    assert lines[-3:-1] == ["<s>\t <s> 1.0", "</s>\t </s> 1.0"]
    # the empty sentence's total is p(</s> | <s>), as disambig scores a line of no words
    assert float(lines[-1]) == pytest.approx(model.lm.log10p("</s>", ["<s>"]), abs=1e-12)
    code, out, _ = _run(capsys, "--text", str(tmp_path / "obs"), "--map",
                        str(tmp_path / "map"), "--lm", str(model.path), "--totals", "--no-eos")
    assert code == 0 and float(out.splitlines()[1]) == 0.0


def test_sentences_past_the_exact_budget_are_estimates_with_a_warning(
        random_lms, tmp_path, capsys, monkeypatch):
    from arsdecode.methods import dispatch

    model = random_lms[5]
    rng = random.Random(61)
    map_text, ref, text = _random_problem(rng, model.words, False)
    (tmp_path / "map").write_text(map_text)
    (tmp_path / "obs").write_text("\n".join(" ".join(s) for s in text) + "\n")
    argv = ["--text", str(tmp_path / "obs"), "--map", str(tmp_path / "map"), "--lm",
            str(model.path), "--totals", "--samples", "300"]
    code, exact, err = _run(capsys, *argv)
    assert code == 0 and "estimates" not in err
    monkeypatch.setattr(dispatch, "MARGINALS_FULL_STATES", 1)  # the numpy DP's budget
    monkeypatch.setattr(dispatch, "memory_pairs_budget", lambda: 1)  # the compiled DP's
    code, sampled, err = _run(capsys, *argv)
    assert code == 0
    assert len(err.splitlines()) == 1 and "estimates from 300 exact samples" in err
    for a, b in zip(exact.splitlines(), sampled.splitlines(), strict=True):
        assert abs(float(a) - float(b)) < 0.5  # an estimate of the same number


def test_srilm_spellings_equal_the_long_options(random_lms, tmp_path, capsys):
    model = random_lms[3]
    rng = random.Random(71)
    map_text, _, text = _random_problem(rng, model.words, True)
    (tmp_path / "map").write_text(map_text)
    (tmp_path / "obs").write_text("\n".join(" ".join(s) for s in text) + "\n")
    files = [str(tmp_path / "obs"), str(tmp_path / "map"), str(model.path)]
    long = ["--text", files[0], "--map", files[1], "--lm", files[2], "--logmap", "--mapw",
            "0.7", "--lmw", "1.3", "--no-eos", "--no-bos", "--posteriors", "--totals",
            "--order", "2"]
    srilm = ["-text", files[0], "-map", files[1], "-lm", files[2], "-logmap", "-mapw", "0.7",
             "-lmw", "1.3", "-no-eos", "-no-sos", "-posteriors", "-totals", "-order", "2"]
    code_a, out_a, _ = _run(capsys, *long)
    code_b, out_b, _ = _run(capsys, *srilm)
    assert code_a == code_b == 0 and out_a == out_b and out_a
