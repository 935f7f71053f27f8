"""The bench tools' logic: the shared record (bench.record), the comparison against the stored
previous run (bench.compare) and the A/B table (bench.ab). No timing is asserted: the figures
here are written by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench import ab, compare
from bench.record import Record, load_record, record_path


def _record(tmp: Path, bench: str, figures: dict[str, tuple[float | None, str]],
            argv: list[str] | None = None, quick: bool = True) -> Path:
    rec = Record(bench, quick=quick, argv=argv or ["--quick"])
    for name, (value, kind) in figures.items():
        rec.add(name, value, kind)  # type: ignore[arg-type]
    return rec.save(tmp)


def test_record_round_trip_keeps_kinds_rss_and_unmeasured(tmp_path: Path) -> None:
    path = _record(tmp_path, "bench_x", {"a/b": (1.5, "ratio"), "t_s": (0.25, "time"),
                                         "gone": (None, "count")})
    assert path == record_path("bench_x", tmp_path)
    raw = json.loads(path.read_text())
    assert raw["mode"] == "quick" and raw["argv"] == ["--quick"]
    assert raw["figures"]["gone"]["value"] is None  # NaN is written as JSON null
    assert raw["figures"]["t_s"]["peak_rss_mb"] > 0  # peak RSS beside every time
    assert "peak_rss_mb" not in raw["figures"]["a/b"]
    assert raw["figures"]["peak_rss_mb"]["kind"] == "rss_mb"
    back = load_record(path)
    assert back["figures"]["a/b"]["value"] == 1.5
    assert math.isnan(back["figures"]["gone"]["value"])


def test_record_refuses_unknown_kind_and_duplicates() -> None:
    rec = Record("bench_x")
    with pytest.raises(ValueError, match="kind"):
        rec.add("x", 1.0, "seconds")  # type: ignore[arg-type]
    rec.ratio("x", 1.0)
    with pytest.raises(ValueError, match="twice"):
        rec.time("x", 1.0)


def test_load_record_names_the_file_when_it_is_not_a_record(tmp_path: Path) -> None:
    bad = tmp_path / "bench_y.figures.json"
    bad.write_text('{"rows": []}')
    with pytest.raises(ValueError, match="bench_y.figures.json"):
        load_record(bad)


def test_compare_flags_moves_past_the_threshold_only() -> None:
    old = {"bench": "b", "figures": {
        "up": {"value": 1.0, "kind": "ratio"}, "small": {"value": 1.0, "kind": "ratio"},
        "down": {"value": 2.0, "kind": "time"}, "zero": {"value": 0.0, "kind": "count"},
        "lost": {"value": 3.0, "kind": "count"}, "nan": {"value": 1.0, "kind": "ratio"},
        "both_nan": {"value": math.nan, "kind": "ratio"}}}
    new = {"bench": "b", "figures": {
        "up": {"value": 1.105, "kind": "ratio"}, "small": {"value": 1.095, "kind": "ratio"},
        "down": {"value": 1.7, "kind": "time"}, "zero": {"value": 1.0, "kind": "count"},
        "nan": {"value": math.nan, "kind": "ratio"},
        "both_nan": {"value": math.nan, "kind": "ratio"}}}
    moves = {m.figure: m for m in compare.compare(old, new, threshold=0.10)}
    assert set(moves) == {"up", "down", "zero", "lost", "nan"}
    assert moves["lost"].why == "missing" and moves["nan"].why == "unmeasured"
    assert "+10.5%" in moves["up"].line() and "-15.0%" in moves["down"].line()
    only_ratios = compare.compare(old, new, threshold=0.10, kinds=("ratio",))
    assert {m.figure for m in only_ratios} == {"up", "nan"}


def test_compare_cli_fails_naming_every_moved_figure_and_updates(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records, history = tmp_path / "new", tmp_path / "history"
    _record(records, "bench_x", {"a/b": (2.0, "ratio"), "c": (10.0, "count")})
    argv = ["--records", str(records), "--history", str(history)]
    assert compare.main([*argv, "--update"]) == 0  # no previous run: stored
    assert (history / "bench_x.quick.json").exists()
    assert "no previous quick run" in capsys.readouterr().out
    _record(records, "bench_x", {"a/b": (2.5, "ratio"), "c": (10.5, "count")})
    assert compare.main(argv) == 1
    out = capsys.readouterr().out
    assert "bench_x: a/b (ratio) moved 2 -> 2.5 (+25.0%)" in out and ": c " not in out
    assert compare.main([*argv, "--threshold", "0.3"]) == 0
    _record(records, "bench_x", {"a/b": (2.0, "ratio")}, argv=["--quick", "--n", "3"])
    assert compare.main(argv) == 2  # other settings: not comparable
    assert "not comparable" in capsys.readouterr().err


def _run(side: str, rnd: int, figures: dict[str, tuple[float, str]], exit: int = 0) -> ab.Run:
    return ab.Run("bench_x", side, rnd, exit, 1.0, 100.0,
                  {n: {"value": v, "kind": k} for n, (v, k) in figures.items()})


def test_ab_medians_leave_out_failed_runs_and_unmeasured_values() -> None:
    runs = [_run("a", 0, {"r": (1.0, "ratio"), "t": (math.nan, "time")}),
            _run("a", 1, {"r": (3.0, "ratio"), "t": (2.0, "time")}),
            _run("a", 2, {"r": (100.0, "ratio")}, exit=1),
            _run("a", 3, {"r": (2.5, "ratio")})]
    med = ab.medians(runs)
    assert med["r"] == ("ratio", 2.5) and med["t"] == ("time", 2.0)


def test_ab_table_flags_beyond_the_threshold_and_puts_ratios_first() -> None:
    a = {"t_s": ("time", 1.0), "x/y": ("ratio", 2.0), "states": ("count", 100.0),
         "same": ("ratio", 1.0)}
    b = {"t_s": ("time", 1.3), "x/y": ("ratio", 2.12), "states": ("count", 104.0),
         "same": ("ratio", 1.0), "new": ("ratio", 5.0)}
    rows = ab.table_rows("bench_x", a, b, threshold=0.05)
    names = [r.split(" | ")[1] for r in rows]
    assert names[:3] == ["x/y", "same", "new"] and names[-1] == "t_s"
    by_name = dict(zip(names, rows, strict=True))
    assert "1.060" in by_name["x/y"] and "**+6%**" in by_name["x/y"]
    assert by_name["states"].endswith("| 1.040 |  |")  # 4%: within 5%, no flag
    assert "**+30%**" in by_name["t_s"]
    assert "| - | 5 | n/a |" in by_name["new"]  # only on B: no ratio, no flag
