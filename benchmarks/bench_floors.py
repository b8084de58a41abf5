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
from collections.abc import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import tvm_ffi  # noqa: E402
from _harness import floor_ns, machine, testing_funcs  # noqa: E402

import tvmffi  # noqa: E402
import tvmffi.cpp  # noqa: E402

_SRC = r"""
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/string.h>

#include <chrono>
#include <cstring>
#include <vector>

namespace {
void keep(void*) {}  // the opaque payload is not owned here

template <typename Make>
double per_call_ns(int64_t n, Make make) {
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) {
    TVMFFIAny out{};
    if (make(&out) != 0) return -1;
    if (out.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(out.v_obj);
  }
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(n);
}
}  // namespace

// ns per construction + release of the runtime object a binding makes for an
// argument: "bytes" (TVMFFIBytesFromByteArray of `data`), "bigint"
// (TVMFFIBigIntFromByteArray of `data` as little-endian words), "opaque"
// (TVMFFIObjectCreateOpaque); "memcpy": a copy of `data` into a reused buffer.
double runtime_ns(tvm::ffi::String what, tvm::ffi::Bytes data, int64_t n) {
  TVMFFIByteArray ba{data.data(), data.size()};
  if (what == "bytes") {
    return per_call_ns(n, [&](TVMFFIAny* o) { return TVMFFIBytesFromByteArray(&ba, o); });
  }
  if (what == "bigint") {
    return per_call_ns(n, [&](TVMFFIAny* o) { return TVMFFIBigIntFromByteArray(&ba, o); });
  }
  if (what == "opaque") {
    return per_call_ns(n, [&](TVMFFIAny* o) {
      void* h = nullptr;
      int rc = TVMFFIObjectCreateOpaque(&ba, kTVMFFIOpaquePyObject, keep, &h);
      o->type_index = kTVMFFIOpaquePyObject;
      o->v_obj = static_cast<TVMFFIObject*>(h);
      return rc;
    });
  }
  std::vector<char> sink(data.size());
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(sink.data(), ba.data, ba.size);
    asm volatile("" : : "r"(sink.data()) : "memory");
  }
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(n);
}
"""


class _Opaque:
    """A class no conversion claims: passed as an opaque Python object."""


def _rows(
    env: dict[str, object], runtime: Callable[..., float]
) -> list[tuple[str, str, tuple[str, bytes] | None, int]]:
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
    mod = tvmffi.cpp.load_inline("bench_floors", cpp_sources=_SRC, functions=["runtime_ns"])
    runtime = mod.runtime_ns
    runtime.release_gil = False
    env: dict[str, object] = testing_funcs(("nop", "echo"), gil_kept=("nop", "echo"))
    env.update(b1m=b"x" * (1 << 20), opq=_Opaque())
    py_floor = floor_ns(env, number=50000)
    print(
        f"{datetime.date.today()} on {machine()}; tvmffi {tvmffi.__version__}, "
        f"tvm_ffi {tvm_ffi.__version__}; min of {args.repeats} interleaved repeats; "
        f"Python call floor `abs(1)` {py_floor:.0f} ns\n"
    )
    print(
        "| row | tvmffi | tvm_ffi | runtime floor (C++) | tvmffi own | tvm_ffi own | own ratio |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    for name, arg, floor, number in _rows(env, runtime):
        fn = "echo" if name.startswith("echo") else "nop"
        ours = timeit.Timer(f"og_{fn}({arg})", globals=env)
        theirs = timeit.Timer(f"tg_{fn}({arg})", globals=env)
        best = [float("inf")] * 3
        for _ in range(args.repeats):  # interleaved
            best[0] = min(best[0], ours.timeit(number) / number * 1e9)
            best[1] = min(best[1], theirs.timeit(number) / number * 1e9)
            if floor is not None:
                best[2] = min(best[2], runtime(floor[0], floor[1], number))
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
