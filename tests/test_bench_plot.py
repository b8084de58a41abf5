"""benchmarks/plot.py draws the benchmarks' JSON results as dated SVG charts (issue 43)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytest.importorskip("matplotlib")


def _plot() -> object:
    spec = importlib.util.spec_from_file_location("plot", ROOT / "benchmarks" / "plot.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("plot", module)
    spec.loader.exec_module(module)
    return module


def test_plot_writes_a_dated_chart_per_results_file_and_the_speed_chart(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    rows = [{"call": "add_one(1)", "ours_ns": 57.0, "official_ns": 107.0},
            {"call": "nop()", "ours_ns": 40.0, "official_ns": 90.0}]  # fmt: skip
    data = {"date": "2031-01-02", "header": "", "rows": rows}
    (results / "calls.json").write_text(json.dumps(data))
    out = tmp_path / "charts"
    written = _plot().main(["--results", str(results), "--out", str(out)])  # type: ignore[attr-defined]
    assert sorted(p.name for p in written) == ["calls.svg", "speed.svg"]
    speed = (out / "speed.svg").read_text()
    assert speed.startswith("<?xml") and "<svg" in speed
    assert "measured 2031-01-02" in speed and "add_one(1)" in speed  # text kept as text
    assert "nop()" not in speed  # not a README row
    assert "nop()" in (out / "calls.svg").read_text()
    # Reproducible: the same results give the same file.
    first = speed
    _plot().main(["--results", str(results), "--out", str(out)])  # type: ignore[attr-defined]
    assert (out / "speed.svg").read_text() == first


def test_committed_results_and_charts_agree_and_the_performance_page_opens_with_one() -> None:
    results = ROOT / "benchmarks" / "results"
    assert {p.stem for p in results.glob("*.json")} >= {"calls", "objects", "tensors", "modules"}
    for p in results.glob("*.json"):
        assert (ROOT / "docs" / "_static" / "charts" / f"{p.stem}.svg").is_file(), p.stem
    page = (ROOT / "docs" / "performance.md").read_text().splitlines()
    first = next(line for line in page[1:] if line.strip())
    assert first.startswith("![") and "_static/charts/speed.svg" in first


def test_the_sweep_chart_has_a_dot_per_row(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    rows = [{"call": f"nop({i})", "ours_ns": 30.0 + i, "official_ns": 80.0, "floor_ns": 12.0}
            for i in range(7)]  # fmt: skip
    data = {"date": "2031-01-02", "header": "", "tables": [
        {"title": "Arguments", "theirs": "tvm_ffi", "rows": rows}]}  # fmt: skip
    (results / "sweep.json").write_text(json.dumps(data))
    out = tmp_path / "charts"
    written = _plot().main(["--results", str(results), "--out", str(out)])  # type: ignore[attr-defined]
    assert [p.name for p in written] == ["sweep.svg"]  # no README row: no speed chart
    svg = (out / "sweep.svg").read_text()
    assert "measured 2031-01-02" in svg and "Arguments (vs tvm_ffi, 7 rows)" in svg
