"""Timing harness: min over interleaved repeats, ours vs the official binding.

Each case is a pair of zero-argument statements compiled with ``timeit`` (no
lambda overhead in the loop). Repeats alternate between the bindings so that
machine noise (frequency scaling, other processes) hits both alike, and the
minimum of each side is reported.
"""

from __future__ import annotations

import datetime
import functools
import os
import platform
import sys
import timeit
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


@dataclass
class Case:
    """One benchmarked operation, as a statement per binding."""

    name: str
    ours: str
    official: str


def testing_funcs(names: Iterable[str], gil_kept: Iterable[str] = ()) -> dict[str, Any]:
    """``testing.<name>`` from both bindings, as ``o_<name>`` (ours) and ``t_<name>``.

    Each name in ``gil_kept`` also gets separate handles ``og_<name>`` and
    ``tg_<name>`` with ``release_gil = False``: they show the call path without
    the two GIL transitions that both bindings pay by default.
    """
    import tvm_ffi

    import tvmffi
    import tvmffi.testing  # loads the library that registers testing.*

    getters: tuple[Callable[[str], Any], ...] = (tvmffi.get_global_func, tvm_ffi.get_global_func)
    env: dict[str, Any] = {}
    for prefixes, wanted, release_gil in (
        (("o_", "t_"), tuple(names), True),
        (("og_", "tg_"), tuple(gil_kept), False),
    ):
        for get, prefix in zip(getters, prefixes, strict=True):
            for name in wanted:
                func = get("testing." + name)
                if not release_gil:
                    func.release_gil = False
                env[prefix + name] = func
    return env


def _ns(stmt: str, env: dict[str, Any], number: int) -> float:
    return timeit.Timer(stmt, globals=env).timeit(number) / number * 1e9


REPEATS = int(os.environ.get("TVMFFI_BENCH_REPEATS", "15"))
"""Interleaved repeats per case; raise it (TVMFFI_BENCH_REPEATS) on a noisy machine."""


def measure(
    cases: list[Case], env: dict[str, Any], repeats: int = REPEATS, number: int = 20000
) -> list[tuple[Case, float, float]]:
    """Return (case, ours_ns, official_ns) with the min over interleaved repeats."""
    rows = []
    for case in cases:
        # Warm up both (first calls populate caches, allocate pools).
        _ns(case.ours, env, 1000)
        _ns(case.official, env, 1000)
        ours, official = [], []
        for _ in range(repeats):
            ours.append(_ns(case.ours, env, number))
            official.append(_ns(case.official, env, number))
        rows.append((case, min(ours), min(official)))
    return rows


_RUNTIME_CALL_SRC = r"""
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <chrono>
#include <vector>

// ns per call of the global function `name` with `args`, called from C++: the
// runtime's own work for one call, which any binding pays on top of its own.
double global_call_ns(tvm::ffi::String name, tvm::ffi::Array<tvm::ffi::Any> args, int64_t n) {
  tvm::ffi::Function f = tvm::ffi::Function::GetGlobalRequired(name);
  std::vector<tvm::ffi::AnyView> views(args.begin(), args.end());
  tvm::ffi::Any result;
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) {
    f.CallPacked(views.data(), static_cast<int32_t>(views.size()), &result);
  }
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(n);
}
"""


@functools.cache
def _cpp_function(module: str, source: str, function: str, python_api: bool = False) -> Any:
    """``function`` of a C++ helper built once by ``tvmffi.cpp.load_inline``, GIL kept.

    ``python_api``: the source calls CPython's C API (its headers; its symbols are
    left to load time, where the process provides them).
    """
    import sysconfig

    import tvmffi.cpp

    extra: dict[str, list[str]] = {}
    if python_api:
        extra = {
            "extra_include_paths": [sysconfig.get_paths()["include"]],
            "extra_ldflags": ["-Wl,-z,undefs"],
        }
    mod = tvmffi.cpp.load_inline(module, cpp_sources=source, functions=[function], **extra)
    fn = getattr(mod, function)
    fn.release_gil = False
    return fn


def runtime_call_ns(name: str, *args: Any, number: int = 200000) -> float:
    """The runtime's own cost of ``name(*args)``, called from C++ (min of 7 runs).

    The floor under a row whose runtime function does real work (structural
    comparison, hashing): both bindings pay it, so the bindings' own costs are
    the row's times minus this.
    """
    import tvmffi

    f = _cpp_function("bench_runtime_call", _RUNTIME_CALL_SRC, "global_call_ns")
    packed = tvmffi.Array(list(args))
    return float(min(f(name, packed, number) for _ in range(7)))


_RUNTIME_OBJECT_SRC = r"""
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
// argument: "string" / "bytes" (TVMFFIStringFromByteArray / TVMFFIBytesFromByteArray
// of `data`), "bigint" (TVMFFIBigIntFromByteArray of `data` as little-endian words),
// "opaque" (TVMFFIObjectCreateOpaque); "memcpy": a copy of `data` into a reused buffer.
double runtime_ns(tvm::ffi::String what, tvm::ffi::Bytes data, int64_t n) {
  TVMFFIByteArray ba{data.data(), data.size()};
  if (what == "string") {
    return per_call_ns(n, [&](TVMFFIAny* o) { return TVMFFIStringFromByteArray(&ba, o); });
  }
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


def runtime_object_ns(kind: str, payload: bytes, number: int, runs: int = 7) -> float:
    """ns of the runtime making and releasing the object a binding makes for an argument.

    ``kind``: ``"string"`` / ``"bytes"`` (from ``payload``), ``"bigint"`` (``payload``
    as little-endian words), ``"opaque"`` (an opaque Python object handle), or
    ``"memcpy"`` (a bare copy of ``payload``). Called from C++ through the C API
    functions both bindings call (min of ``runs`` runs of ``number``): the floor
    under a row whose value travels as such an object.
    """
    f = _cpp_function("bench_runtime_object", _RUNTIME_OBJECT_SRC, "runtime_ns")
    return float(min(f(kind, payload, number) for _ in range(runs)))


_PYLONG_SRC = r"""
#include <Python.h>

#include <chrono>
#include <cstdint>

// ns per conversion of the Python int at `addr` into `nbytes` bytes of two's
// complement and, with `back`, into a new int again (released): the CPython
// functions a binding calls for an int beyond int64 (PyLong_AsNativeBytes /
// PyLong_FromNativeBytes from 3.13, the _PyLong_*ByteArray helpers before).
// The caller holds the GIL (release_gil = False).
double pylong_convert_ns(int64_t addr, int64_t nbytes, bool back, int64_t n) {
  PyObject* v = reinterpret_cast<PyObject*>(addr);
  unsigned char buf[1024];
  if (nbytes <= 0 || nbytes > 1024) return -1;
  auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) {
#if PY_VERSION_HEX >= 0x030D0000
    if (PyLong_AsNativeBytes(v, buf, nbytes, Py_ASNATIVEBYTES_LITTLE_ENDIAN) < 0) return -1;
    PyObject* r = back ? PyLong_FromNativeBytes(buf, nbytes, Py_ASNATIVEBYTES_LITTLE_ENDIAN)
                       : nullptr;
#else
    if (_PyLong_AsByteArray(reinterpret_cast<PyLongObject*>(v), buf, nbytes, 1, 1) < 0) return -1;
    PyObject* r = back ? _PyLong_FromByteArray(buf, nbytes, 1, 1) : nullptr;
#endif
    Py_XDECREF(r);
  }
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(n);
}
"""


def pylong_convert_ns(value: int, back: bool, number: int = 100000, runs: int = 7) -> float:
    """ns of CPython converting ``value`` to whole 64-bit words (and, with ``back``, to an
    int again): the floor under an int beyond int64, which both bindings hand to CPython
    (min of ``runs`` runs of ``number``, called from C++ with the GIL held)."""
    f = _cpp_function("bench_pylong", _PYLONG_SRC, "pylong_convert_ns", python_api=True)
    nbytes = 8 * ((value.bit_length() + 1 + 63) // 64)
    return float(min(f(id(value), nbytes, back, number) for _ in range(runs)))


def own_cost_table(
    rows: list[tuple[Case, float, float]], floors: dict[str, tuple[float, float]]
) -> str:
    """Markdown table of the rows with a floor: each binding's own cost beside it.

    ``floors`` maps a row's name to the work outside the bindings under that row,
    (under ours, under the official's): the runtime function's own cost, or a
    framework's export cost by the route each binding takes.
    """
    out = [
        "| call | floor under ours / official (ns) | tvmffi own (ns) | tvm_ffi own (ns) "
        "| ratio of own costs |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for case, ours, official in rows:
        if case.name not in floors:
            continue
        floor_ours, floor_official = floors[case.name]
        own, theirs = ours - floor_ours, official - floor_official
        out.append(
            f"| `{case.name}` | {floor_ours:.0f} / {floor_official:.0f} | {own:.0f} | "
            f"{theirs:.0f} | {own / theirs:.2f} |"
        )
    return "\n".join(out)


def floor_ns(env: dict[str, Any], number: int = 200000) -> float:
    """Cost of a plain builtin call, the floor any binding pays."""
    return min(_ns("_floor(1)", {**env, "_floor": abs}, number) for _ in range(7))


def machine() -> str:
    """A short description of this machine."""
    return (
        f"{platform.processor() or platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}, {platform.system()}"
    )


COLUMNS = ("call", "tvmffi (ns)", "tvm_ffi (ns)", "ratio ours/official")
"""Default column titles of :func:`table`: the case, ours, the official, their ratio."""


def table(
    rows: list[tuple[Case, float, float]], floor: float, columns: tuple[str, ...] = COLUMNS
) -> str:
    """Markdown table of the measured rows, under the four ``columns`` titles."""
    out = [
        f"| {' | '.join(columns)} |",
        "| --- | ---: | ---: | ---: |",
    ]
    for case, ours, official in rows:
        out.append(f"| `{case.name}` | {ours:.0f} | {official:.0f} | {ours / official:.2f} |")
    out.append(f"| `abs(1)` (builtin floor) | {floor:.0f} | | |")
    return "\n".join(out)


def report(
    cases: list[Case], env: dict[str, Any], extra: str = "", columns: tuple[str, ...] = COLUMNS
) -> list[tuple[Case, float, float]]:
    """Measure ``cases``, print the dated header line and the table, return the rows."""
    import tvm_ffi

    import tvmffi

    rows = measure(cases, env)
    header = (
        f"{datetime.date.today()} on {machine()}; tvmffi {tvmffi.__tvmffi_version__}, "
        f"tvm_ffi {tvm_ffi.__version__}, runtime {tvmffi.tvm_ffi_version()}{extra}"
    )
    print(header)
    print(table(rows, floor_ns(env), columns))
    save_results(rows, header)
    return rows


RESULTS_DIR = os.environ.get(
    "TVMFFI_BENCH_RESULTS", os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
)
"""Where :func:`save_results` writes (``benchmarks/results``; TVMFFI_BENCH_RESULTS)."""


def save_results(rows: list[tuple[Case, float, float]], header: str, name: str = "") -> str:
    """Write the rows as ``RESULTS_DIR/<name>.json`` (``name``: the running script's,
    ``bench_calls.py`` -> ``calls``), what ``benchmarks/plot.py`` draws; return the path."""
    import json

    if not name:
        name = os.path.splitext(os.path.basename(sys.argv[0] or "bench"))[0]
        name = name.removeprefix("bench_")
    os.makedirs(RESULTS_DIR, exist_ok=True)
    path = os.path.join(RESULTS_DIR, f"{name}.json")
    data = {
        "date": str(datetime.date.today()),
        "header": header,
        "rows": [
            {"call": case.name, "ours_ns": round(ours, 1), "official_ns": round(official, 1)}
            for case, ours, official in rows
        ],
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    return path


_CALLGRIND_LOOP = """
import timeit
_t = timeit.Timer({stmt!r}, globals=globals())
_t.timeit({number})
"""


def _callgrind_total(setup: str, stmt: str, number: int) -> int:
    """Instructions callgrind counts for a Python process running ``stmt`` ``number`` times."""
    import re
    import subprocess
    import tempfile

    code = setup + _CALLGRIND_LOOP.format(stmt=stmt, number=number)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
        subprocess.run(
            [*cmd, sys.executable, "-c", code],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        with open(out) as f:
            found = re.search(r"^summary:\s*(\d+)", f.read(), re.MULTILINE)
    if found is None:
        raise RuntimeError("callgrind wrote no summary line")
    return int(found.group(1))


def callgrind_per_call(setup: str, stmt: str, low: int = 2000, high: int = 12000) -> float:
    """Instructions per run of ``stmt`` after ``setup`` (valgrind's callgrind, load-free).

    Two processes run the statement ``low`` and ``high`` times; the difference of
    their totals over ``high - low`` removes start-up, imports and ``setup``.
    """
    return (_callgrind_total(setup, stmt, high) - _callgrind_total(setup, stmt, low)) / (high - low)
