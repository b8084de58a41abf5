"""Charts of the benchmarks' results: tvmffi vs the official binding, ns per call.

Run: ``python benchmarks/plot.py`` (``make bench`` runs it after the benchmarks). Reads
the JSON files the benchmarks write (``benchmarks/results/<name>.json``,
``_harness.save_results``) and writes matplotlib SVGs into ``docs/_static/charts/``:

- ``speed.svg``: the README's speed table (rows picked from the calls, objects, tensors
  and modules results), the chart docs/performance.md opens with;
- ``<name>.svg``: every row of each results file; ``sweep.svg``: every row of the sweep
  (``bench_sweep.py``) as a fraction of the other binding's time, table by table.

Each chart is dated with its measurement's date. The SVGs are reproducible (no creation
date, a fixed id salt), so an unchanged result leaves them unchanged.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = Path(os.environ.get("TVMFFI_BENCH_RESULTS", HERE / "results"))
CHARTS = HERE.parent / "docs" / "_static" / "charts"

# The README speed table: (label, results file, the benchmark's row name).
SPEED_ROWS = [
    ("add_one(1)", "calls", "add_one(1)"),
    ("add_one(1), release_gil=False", "calls", "add_one(1) [release_gil=False]"),
    ('echo("hello")', "calls", 'echo("hello")'),
    ("echo(<100-char str>)", "calls", "echo(<100-char str>)"),
    ("apply(<python callable>, 1)", "calls", "apply(<python callable>, 1)"),
    ("obj.add_i64(1) (reflected method)", "objects", "obj.add_i64(1)"),
    ("arr[1] (Array element)", "objects", "arr[1]"),
    ("nop(x, x, x) (3 NumPy arrays)", "tensors", "nop(x, x, x) [3 NumPy arrays]"),
    ("nop(x, x, x) (3 torch CPU tensors)", "tensors", "nop(x, x, x) [3 torch CPU tensors]"),
    (
        "nop(a, b, c) (3 distinct torch tensors)",
        "tensors",
        "nop(a, b, c) [3 distinct torch tensors]",
    ),
    ("mod.add_int(1, 2) (library function)", "modules", "mod.add_int(1, 2)"),
]

OURS_COLOR, OFFICIAL_COLOR = "#2a7ab9", "#b0b0b0"


def load(results: Path) -> dict[str, dict[str, Any]]:
    """``{name: results}`` of every ``results/<name>.json``."""
    files = sorted(results.glob("*.json"))
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in files}


def speed_rows(results: dict[str, dict[str, Any]]) -> tuple[list[tuple[str, float, float]], str]:
    """The README table's rows found in ``results`` and the dates they were measured."""
    rows, dates = [], set()
    for label, name, call in SPEED_ROWS:
        found = [r for r in results.get(name, {}).get("rows", []) if r["call"] == call]
        if found:
            rows.append((label, found[0]["ours_ns"], found[0]["official_ns"]))
            dates.add(results[name]["date"])
    return rows, ", ".join(sorted(dates))


def chart(rows: list[tuple[str, float, float]], title: str, out: Path) -> None:
    """Horizontal bars, tvmffi beside tvm_ffi for each call, written as an SVG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "tvmffi"
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: searchable, small
    height = 0.38
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(rows) + 1.3))
    ys = list(range(len(rows)))[::-1]
    ours = [r[1] for r in rows]
    official = [r[2] for r in rows]
    ax.barh([y + height / 2 for y in ys], ours, height, label="tvmffi", color=OURS_COLOR)
    ax.barh([y - height / 2 for y in ys], official, height, label="tvm_ffi (official)",
            color=OFFICIAL_COLOR)  # fmt: skip
    for y, o, t in zip(ys, ours, official, strict=True):
        ax.text(o, y + height / 2, f" {o:.0f}", va="center", fontsize=8)
        ax.text(t, y - height / 2, f" {t:.0f} ({o / t:.2f}x)", va="center", fontsize=8)
    ax.set_yticks(ys)
    ax.set_yticklabels([r[0] for r in rows], fontsize=9)
    ax.set_xlabel("ns per call (lower is better)")
    ax.set_xlim(0, max(official + ours) * 1.3)
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)


def sweep_chart(data: dict[str, Any], out: Path) -> None:
    """The sweep: each row's time as a fraction of the other binding's, one dot per row,
    the tables one above the other (``results/sweep.json``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "tvmffi"
    matplotlib.rcParams["svg.fonttype"] = "none"
    tables = [t for t in data["tables"] if t["rows"]]
    fig, ax = plt.subplots(figsize=(8, 0.55 * len(tables) + 1.5))
    for y, table in zip(range(len(tables))[::-1], tables, strict=True):
        ratios = [r["ours_ns"] / r["official_ns"] for r in table["rows"] if r["official_ns"]]
        jitter = [((i % 5) - 2) * 0.06 for i in range(len(ratios))]
        ax.scatter(ratios, [y + j for j in jitter], s=14, color=OURS_COLOR, alpha=0.7)
    ax.axvline(1.0, color="#888888", linewidth=1)
    ax.axvline(0.5, color="#888888", linewidth=1, linestyle=":")
    labels = [f"{t['title'].replace('`', '')} (vs {t['theirs']}, {len(t['rows'])} rows)"
              for t in tables]  # fmt: skip
    ax.set_yticks(range(len(tables))[::-1])
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlim(0, 1.3)
    ax.set_xlabel("time per call, tvmffi / the other binding (1.0: equal; lower is better)")
    ax.set_title(f"bench_sweep.py: every row (measured {data['date']})", fontsize=10)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)


def main(argv: list[str] | None = None) -> list[Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--out", type=Path, default=CHARTS)
    args = parser.parse_args(argv)
    results = load(args.results)
    written = []
    rows, dates = speed_rows(results)
    if rows:
        out = args.out / "speed.svg"
        chart(rows, f"tvmffi vs the official binding, ns per call (measured {dates})", out)
        written.append(out)
    for name, data in results.items():
        out = args.out / f"{name}.svg"
        if "tables" in data:  # the sweep
            sweep_chart(data, out)
            written.append(out)
            continue
        rows = [(r["call"], r["ours_ns"], r["official_ns"]) for r in data["rows"]]
        chart(rows, f"bench_{name}.py: ns per call (measured {data['date']})", out)
        written.append(out)
    for path in written:
        print(f"wrote {path}")
    return written


if __name__ == "__main__":
    main()
