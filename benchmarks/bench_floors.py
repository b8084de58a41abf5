"""Floors under the sweep's rows that make a runtime object: what the runtime itself costs.

A ``bytes`` argument of 1 MB, an opaque Python object and an int beyond int64
travel as runtime objects (``Bytes``, ``OpaquePyObject``, ``BigInt``) that
both bindings make through the same C API call and release after the call.
This times, in one process and interleaved (minimum of the repeats), each
``testing.nop(v)`` through tvmffi and through the official binding
(``release_gil = False``), beside the runtime's construction and release of
the same object called from C++ (and, for 1 MB, a bare ``memcpy``), and the
floor of any Python call (``abs(1)``). A binding's own cost is its time minus
both floors.

Run: ``python benchmarks/bench_floors.py [--repeats N]``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import tvm_ffi  # noqa: E402
from _harness import floor_ns, machine, runtime_object_ns, testing_funcs  # noqa: E402

import tvmffi  # noqa: E402


class _Opaque:
    """A class no conversion claims: passed as an opaque Python object."""


def _rows(env: dict[str, object]) -> list[tuple[str, str, tuple[str, bytes] | None, int]]:
    """(row, argument expression, (runtime floor kind, its payload) or None, loop size)."""
    big_words = (2**64).to_bytes(16, "little", signed=True)
    return [
        ("nop(bytes[1 MB])", "b1m", ("bytes", env["b1m"]), 200),  # type: ignore[list-item]
        ("nop(bytes[1 MB]) memcpy only", "b1m", ("memcpy", env["b1m"]), 200),  # type: ignore[list-item]
        ("nop(opaque object())", "opq", ("opaque", b""), 100000),
        ("nop(2**64 (big))", "2**64", ("bigint", big_words), 100000),
        ("echo(2**64 (big))", "2**64", ("bigint", big_words), 100000),
        ("echo(2**40)", "2**40", None, 100000),
    ]


def main(argv: list[str] | None = None) -> None:
    """Time the rows and print them as Markdown."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    env: dict[str, object] = testing_funcs(("nop", "echo"), gil_kept=("nop", "echo"))
    env.update(b1m=b"x" * (1 << 20), opq=_Opaque())
    py_floor = floor_ns(env, number=50000)
    print(
        f"{datetime.date.today()} on {machine()}; tvmffi {tvmffi.__tvmffi_version__}, "
        f"tvm_ffi {tvm_ffi.__version__}; min of {args.repeats} interleaved repeats; "
        f"Python call floor `abs(1)` {py_floor:.0f} ns\n"
    )
    print(
        "| row | tvmffi | tvm_ffi | runtime floor (C++) | tvmffi own | tvm_ffi own | own ratio |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    for name, arg, floor, number in _rows(env):
        fn = "echo" if name.startswith("echo") else "nop"
        ours = timeit.Timer(f"og_{fn}({arg})", globals=env)
        theirs = timeit.Timer(f"tg_{fn}({arg})", globals=env)
        best = [float("inf")] * 3
        for _ in range(args.repeats):  # interleaved
            best[0] = min(best[0], ours.timeit(number) / number * 1e9)
            best[1] = min(best[1], theirs.timeit(number) / number * 1e9)
            if floor is not None:
                best[2] = min(best[2], runtime_object_ns(floor[0], floor[1], number, runs=1))
        under = py_floor + (best[2] if floor is not None else 0.0)
        own, their_own = best[0] - under, best[1] - under
        ratio = f"{own / their_own:.2f}" if own > 0 and their_own > 0 else "-"
        print(
            f"| `{name}` | {_fmt(best[0])} | {_fmt(best[1])} | "
            f"{_fmt(best[2]) if floor is not None else '-'} | {_fmt(own)} | {_fmt(their_own)} | "
            f"{ratio} |"
        )


def _fmt(ns: float) -> str:
    return f"{ns / 1000:.1f} µs" if ns >= 10000 else f"{ns:.0f} ns"


if __name__ == "__main__":
    main()
