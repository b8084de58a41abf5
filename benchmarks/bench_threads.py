"""Threads benchmark: calls per second and CPU time per call with 1, 2 and N threads.

Run: ``python benchmarks/bench_threads.py [--calls N] [--threads 1,2,4]`` (part of
``make bench``). Each row runs the same statement in every thread at once (started
together, one shared object or function), tvmffi beside the official tvm_ffi binding:

- ``calls/s``: all threads' calls over the wall time from the common start to the
  last thread's end; with T threads, T times the 1-thread figure is perfect scaling.
- ``CPU ns/call``: the process's CPU time over the calls; flat across thread counts
  when threads do not contend (shared counters, locks, cache lines bouncing).

On a free-threaded interpreter (3.14t) both bindings run without the GIL. With a GIL
only the time a callee spends with the GIL released can overlap: those rows use
``testing.nop`` / ``testing.add_one`` handles with ``release_gil=True`` (the default);
the rest serialize on the GIL (their calls/s cannot grow with threads). The header
line says which interpreter, how many cores and the load average at the start: a
shared machine's load lowers the multi-thread rows.
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

ROWS = ("nop()", "add_one(1)", "echo([1, 2, 3])", "attribute p.a", "nop(a, b, c) [3 NumPy]")


def _bodies(binding: Any, testing: Any, np: Any) -> dict[str, Callable[[int], None]]:
    """One loop per row over ``binding``'s handles: ``run(n)`` makes n calls."""
    nop = binding.get_global_func("testing.nop")
    add_one = binding.get_global_func("testing.add_one")
    echo = binding.get_global_func("testing.echo")
    pair = testing.TestIntPair(1, 2)
    lst = [1, 2, 3]
    a, b, c = (np.zeros((16, 16), dtype="float32") for _ in range(3))

    def run_nop(n: int) -> None:
        for _ in range(n):
            nop()

    def run_add(n: int) -> None:
        for _ in range(n):
            add_one(1)

    def run_echo(n: int) -> None:
        for _ in range(n):
            echo(lst)

    def run_attr(n: int) -> None:
        for _ in range(n):
            pair.a  # noqa: B018 (the attribute read is the row)

    def run_tensors(n: int) -> None:
        for _ in range(n):
            nop(a, b, c)

    return dict(zip(ROWS, (run_nop, run_add, run_echo, run_attr, run_tensors), strict=True))


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
    args = parser.parse_args()
    counts = sorted({int(t) for t in args.threads.split(",")})

    import numpy as np
    import tvm_ffi
    import tvm_ffi.testing

    import tvmffi
    import tvmffi.testing

    ours = _bodies(tvmffi, tvmffi.testing, np)
    official = _bodies(tvm_ffi, tvm_ffi.testing, np)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{datetime.date.today()} on {machine()} ({gil_state()}), {os.cpu_count()} cores, "
        f"load average {load:.1f} at the start; tvmffi {tvmffi.__tvmffi_version__}, "
        f"tvm_ffi {tvm_ffi.__version__}; {args.calls} calls per thread"
    )
    heads = " | ".join(f"{t} thr calls/s | {t} thr CPU ns/call" for t in counts)
    print(f"| row | binding | {heads} |")
    print("| --- | --- |" + " ---: | ---: |" * len(counts))
    for row in ROWS:
        for name, bodies in (("tvmffi", ours), ("tvm_ffi", official)):
            cells = []
            for t in counts:
                rate, cpu_ns = measure(bodies[row], t, args.calls)
                cells.append(f"{rate / 1e6:.2f} M | {cpu_ns:.0f}")
            print(f"| `{row}` | {name} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
