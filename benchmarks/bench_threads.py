"""Threads benchmark: calls per second and CPU time per call with 1, 2 and N threads.

Run: ``python benchmarks/bench_threads.py [--calls N] [--threads 1,2,4] [--repeats R]``
(part of ``make bench``). Each row runs the same statement in every thread at once
(started together), tvmffi beside the official tvm_ffi binding, on shared handles:
one function, one object, the same three NumPy arrays; the list of ``echo`` is each
thread's own, as a list literal at the call site would be.

- ``calls/s``: all threads' calls over the wall time from the common start to the
  last thread's end; with T threads, T times the 1-thread figure is perfect scaling.
- ``CPU ns/call``: the process's CPU time over the calls; flat across thread counts
  when threads do not contend (shared counters, locks, cache lines bouncing).

Every figure is the best of ``--repeats`` interleaved runs. The function rows come
twice: with ``release_gil=False`` (the bindings' own cost, which DESIGN.md's ratio
target is about) and with the default handles (``release_gil=True``: both bindings
also pay the thread-state round trip around the callee).

On a free-threaded interpreter (3.14t) both bindings run without the GIL. With a GIL
only the time a callee spends with the GIL released can overlap: the default rows
release it around ``testing.nop`` / ``testing.add_one``; the rest serialize on the
GIL (their calls/s cannot grow with threads). The header line says which
interpreter, how many cores and the load average at the start: a shared machine's
load lowers the multi-thread rows.

Each loop reads its handles from local variables, with the call on a line of its
own: CPython 3.14 then loads them without touching their reference count
(``LOAD_FAST_BORROW``), for both bindings alike. A closure cell, a global or
``for _ in r: f()`` on one line (``STORE_FAST_LOAD_FAST``) counts a reference per
call unless the object uses deferred reference counting, and on a free-threaded
build every thread then writes the shared object's count (~300 ns a call on two
cores). tvmffi's functions looked up by name and its field and method descriptors
are deferred there; the official binding's handles are not.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))

from _harness import machine

CALL_ROWS = ("nop()", "add_one(1)", "echo([1, 2, 3])", "nop(a, b, c) [3 NumPy]")
ROWS = (
    *(f"{r} [release_gil=False]" for r in CALL_ROWS),
    "attribute p.a",
    *CALL_ROWS,
)


def _calls(binding: Any, np: Any, release_gil: bool) -> list[Callable[[int], None]]:
    """The loops of CALL_ROWS over ``binding``'s handles: ``run(n)`` makes n calls."""
    nop, add_one, echo = (
        binding.get_global_func(f"testing.{name}") for name in ("nop", "add_one", "echo")
    )
    for handle in (nop, add_one, echo):
        handle.release_gil = release_gil
    arrays = tuple(np.zeros((16, 16), dtype="float32") for _ in range(3))

    def run_nop(n: int) -> None:
        f = nop
        for _ in range(n):
            f()

    def run_add(n: int) -> None:
        f = add_one
        for _ in range(n):
            f(1)

    def run_echo(n: int) -> None:
        f, lst = echo, [1, 2, 3]
        for _ in range(n):
            f(lst)

    def run_tensors(n: int) -> None:
        f, (a, b, c) = nop, arrays
        for _ in range(n):
            f(a, b, c)

    return [run_nop, run_add, run_echo, run_tensors]


def _bodies(binding: Any, testing: Any, np: Any) -> dict[str, Callable[[int], None]]:
    """One loop per row of ROWS over ``binding``'s handles."""
    pair = testing.TestIntPair(1, 2)

    def run_attr(n: int) -> None:
        p = pair
        for _ in range(n):
            p.a  # noqa: B018 (the attribute read is the row)

    loops = [*_calls(binding, np, False), run_attr, *_calls(binding, np, True)]
    return dict(zip(ROWS, loops, strict=True))


def measure(body: Callable[[int], None], threads: int, calls: int) -> tuple[float, float]:
    """(calls per second, CPU ns per call) of ``threads`` threads making ``calls`` each."""
    body(min(calls, 2000))  # warm: caches, free lists
    start = threading.Barrier(threads)
    spans: list[tuple[float, float]] = []

    def worker() -> None:
        start.wait()
        t0 = time.perf_counter()
        body(calls)
        spans.append((t0, time.perf_counter()))

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    cpu0 = time.process_time()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    cpu = time.process_time() - cpu0
    wall = max(end for _, end in spans) - min(begin for begin, _ in spans)
    total = threads * calls
    return total / wall, cpu / total * 1e9


def gil_state() -> str:
    """'free-threaded, GIL off' / 'free-threaded, GIL on' / 'GIL build'."""
    is_enabled = getattr(sys, "_is_gil_enabled", None)
    if is_enabled is None or not hasattr(sys, "abiflags") or "t" not in sys.abiflags:
        return "GIL build"
    return "free-threaded, GIL " + ("on" if is_enabled() else "off")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200000, help="calls per thread per row")
    parser.add_argument("--threads", default=f"1,2,{os.cpu_count() or 2}")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved runs; best kept")
    args = parser.parse_args()
    counts = sorted({int(t) for t in args.threads.split(",")})

    import numpy as np
    import tvm_ffi
    import tvm_ffi.testing

    import tvmffi
    import tvmffi.testing

    sides = {
        "tvmffi": _bodies(tvmffi, tvmffi.testing, np),
        "tvm_ffi": _bodies(tvm_ffi, tvm_ffi.testing, np),
    }
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{datetime.date.today()} on {machine()} ({gil_state()}), {os.cpu_count()} cores, "
        f"load average {load:.1f} at the start; tvmffi {tvmffi.__tvmffi_version__}, "
        f"tvm_ffi {tvm_ffi.__version__}; {args.calls} calls per thread, "
        f"best of {args.repeats}"
    )
    heads = " | ".join(f"{t} thr calls/s | {t} thr CPU ns/call" for t in counts)
    print(f"| row | binding | {heads} | CPU ratio (1 thr) |")
    print("| --- | --- |" + " ---: | ---: |" * len(counts) + " ---: |")
    for row in ROWS:
        best: dict[tuple[str, int], tuple[float, float]] = {}
        for _ in range(args.repeats):
            for name, bodies in sides.items():
                for t in counts:
                    rate, cpu_ns = measure(bodies[row], t, args.calls)
                    old = best.get((name, t), (0.0, float("inf")))
                    best[name, t] = (max(old[0], rate), min(old[1], cpu_ns))
        for name in sides:
            cells = [f"{best[name, t][0] / 1e6:.2f} M | {best[name, t][1]:.0f}" for t in counts]
            ratio = best[name, counts[0]][1] / best["tvm_ffi", counts[0]][1]
            shown = f"{ratio:.2f}" if name == "tvmffi" else ""
            print(f"| `{row}` | {name} | {' | '.join(cells)} | {shown} |")


if __name__ == "__main__":
    main()
