"""The floor under passing 1 MB of bytes: the runtime's own Bytes construction.

Both bindings pass a ``bytes`` argument as a runtime ``Bytes`` object, built by
``TVMFFIBytesFromByteArray`` (a fresh allocation and a copy of the content) and
freed after the call. This times, in one process and interleaved (minimum of
the repeats): ``testing.nop(b)`` through tvmffi and through the official binding
(``release_gil = False``), the runtime's construction and release of the same
``Bytes`` called from C++, and a bare ``memcpy`` of the content into a reused
buffer. The construction is the floor under both bindings' rows.

Run: ``python benchmarks/bench_bytes_floor.py [--size BYTES] [--repeats N]``.
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
from _harness import machine, testing_funcs  # noqa: E402

import tvmffi  # noqa: E402
import tvmffi.cpp  # noqa: E402

_SRC = r"""
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/string.h>

#include <chrono>
#include <cstring>
#include <vector>

// ns per TVMFFIBytesFromByteArray + release of `data` (what a bytes argument
// costs the runtime), or per memcpy of it into a reused buffer (copy_only).
double bytes_ns(tvm::ffi::Bytes data, int64_t n, bool copy_only) {
  TVMFFIByteArray ba{data.data(), data.size()};
  std::vector<char> sink(data.size());
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) {
    if (copy_only) {
      std::memcpy(sink.data(), ba.data, ba.size);
      asm volatile("" : : "r"(sink.data()) : "memory");
      continue;
    }
    TVMFFIAny out{};
    if (TVMFFIBytesFromByteArray(&ba, &out) != 0) return -1;
    TVMFFIObjectDecRef(out.v_obj);
  }
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(n);
}
"""


def main(argv: list[str] | None = None) -> None:
    """Time the rows and print them as Markdown."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 20, help="bytes passed (default 1 MB)")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    mod = tvmffi.cpp.load_inline("bench_bytes_floor", cpp_sources=_SRC, functions=["bytes_ns"])
    runtime = mod.bytes_ns
    runtime.release_gil = False
    env = testing_funcs(("nop",), gil_kept=("nop",))
    data = b"x" * args.size
    held = tvmffi.convert(data)  # the runtime's Bytes of the same content, made once
    env.update(data=data)
    number = 200
    rows = {
        "tvmffi `nop(b)`": lambda: timeit.Timer("og_nop(data)", globals=env).timeit(number)
        / number
        * 1e9,
        "tvm_ffi `nop(b)`": lambda: timeit.Timer("tg_nop(data)", globals=env).timeit(number)
        / number
        * 1e9,
        "runtime `TVMFFIBytesFromByteArray` + release (C++)": lambda: runtime(
            held, number, False
        ),
        "`memcpy` into a reused buffer (C++)": lambda: runtime(held, number, True),
    }
    best = dict.fromkeys(rows, float("inf"))
    for _ in range(args.repeats):  # interleaved
        for name, run in rows.items():
            best[name] = min(best[name], run())
    print(
        f"{datetime.date.today()} on {machine()}; tvmffi {tvmffi.__version__}, "
        f"tvm_ffi {tvm_ffi.__version__}; {args.size} bytes, min of {args.repeats} "
        "interleaved repeats\n"
    )
    print("| row | per call |\n| --- | ---: |")
    for name, ns in best.items():
        print(f"| {name} | {ns / 1000:.1f} µs |")


if __name__ == "__main__":
    main()
