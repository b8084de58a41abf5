"""Sweep benchmark: every kind of value as an argument and as a result, ours vs official.

Each row calls a ``testing.*`` function of both bindings in one run (minimum
over interleaved repeats, see ``_harness.py``) with ``release_gil = False``:
the binding's own call path without the GIL round trip both pay by default
(reported once, on ``nop()``). Beside the times stand each binding's *own
cost*, the time minus the floor any Python call of a builtin pays (``abs(1)``),
and the ratio of the own costs, the figure the project holds to 0.5.

Sections: values passed to ``nop`` (argument only) and ``echo`` (argument and
result); 1 to 16 arguments; ``load_module`` of generated libraries (1, 100 and
1,000 exports, and 100,000 other dynamic symbols) beside ``dlopen`` itself;
structural equality, hashing and JSON of a fresh 10,000-node value beside the
runtime's own cost called from C++; and peers where they can be built here:
a nanobind module and a torch C++ extension (no-op, add-one, three tensors).

Run: ``python benchmarks/bench_sweep.py`` (part of ``make bench``);
``--quick`` for a short run (fewer repeats, no 100k/1 MB values, peers only
when already built); ``--callgrind`` adds instruction counts per call of the
rows a shared machine makes noisy (valgrind, slow).
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import timeit
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import tvm_ffi  # noqa: E402
import tvm_ffi.testing  # noqa: E402
from _harness import callgrind_per_call, floor_ns, machine, testing_funcs  # noqa: E402

import tvmffi  # noqa: E402
import tvmffi.testing  # noqa: E402

CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.join(ROOT, ".cache")), "bench_sweep")

# ---- timing -----------------------------------------------------------------------


def _timer(stmt: str, env: dict[str, Any]) -> Callable[[int], float]:
    t = timeit.Timer(stmt, globals=env)
    return lambda n: t.timeit(n) / n * 1e9


def _pair(
    ours: str, official: str, env: dict[str, Any], repeats: int, target_s: float
) -> tuple[float, float]:
    """Min ns per run of each statement over interleaved repeats, loop sized to ``target_s``."""
    a, b = _timer(ours, env), _timer(official, env)
    a(1), b(1)  # warm up (caches, pools, first-use imports)
    one = max(a(1), b(1), 1.0)
    number = max(1, min(200000, int(target_s * 1e9 / one)))
    best_a = best_b = float("inf")
    for _ in range(repeats):
        best_a = min(best_a, a(number))
        best_b = min(best_b, b(number))
    return best_a, best_b


class Table:
    """Rows of (name, ours ns, official ns, floor ns) printed as Markdown."""

    def __init__(self, title: str, floor_label: str, theirs: str = "tvm_ffi") -> None:
        self.title = title
        self.floor_label = floor_label
        self.theirs = theirs
        self.rows: list[tuple[str, float, float, float]] = []

    def add(self, name: str, ours: float, official: float, floor: float) -> None:
        """Record one row (times in ns) and echo it, so a long run shows progress."""
        self.rows.append((name, ours, official, floor))
        print(f"  {name}: {_fmt(ours)} / {_fmt(official)}", file=sys.stderr, flush=True)

    def render(self) -> str:
        """The table in Markdown, own costs and their ratio beside the times."""
        out = [
            f"\n### {self.title}\n",
            f"| row | tvmffi | {self.theirs} | ratio | {self.floor_label} | tvmffi own | "
            f"{self.theirs} own | own ratio |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for name, ours, official, floor in self.rows:
            own, theirs = ours - floor, official - floor
            own_ratio = f"{own / theirs:.2f}" if theirs > 0 else "-"
            out.append(
                f"| `{name}` | {_fmt(ours)} | {_fmt(official)} | {ours / official:.2f} | "
                f"{_fmt(floor)} | {_fmt(own)} | {_fmt(theirs)} | {own_ratio} |"
            )
        return "\n".join(out)


def _fmt(ns: float) -> str:
    """ns, µs or ms with three significant figures."""
    if abs(ns) >= 1e6:
        return f"{ns / 1e6:.3g} ms"
    if abs(ns) >= 1e3:
        return f"{ns / 1e3:.3g} µs"
    return f"{ns:.0f} ns"


# ---- values -----------------------------------------------------------------------


def _values(env: dict[str, Any], quick: bool) -> list[tuple[str, str, str]]:
    """(label, our value's expression, official's) of every kind the conversion accepts.

    Values are made once here (in ``env``); each binding gets its own kind of
    object where the kinds differ (Device, dtype, Function, Object, Tensor).
    """
    import torch

    sizes = (10, 1000) if quick else (10, 1000, 100000)
    common: dict[str, Any] = {
        "None": None,
        "True": True,
        "1": 1,
        "2**40": 2**40,
        "2**64 (big)": 2**64,
        "-(2**200) (big)": -(2**200),
        "1.5": 1.5,
        '"hello"': "hello",
        "str[100]": "x" * 100,
        "bytes[5]": b"hello",
        "bytes[100]": b"x" * 100,
        "python callable": lambda x: x,
        "opaque object()": object(),
        "ValueError('x')": ValueError("x"),
        "ctypes.c_void_p": ctypes.c_void_p(0x1234),
        "numpy f32[16]": np.zeros(16, np.float32),
        "numpy f32[32][::2] (strided)": np.zeros(32, np.float32)[::2],
        "numpy f32 0-d": np.array(1.0, np.float32),
        "torch f32[16]": torch.zeros(16),
        "torch f32[4,4].t()": torch.zeros(4, 4).t(),
        "torch f32[32][::2]": torch.zeros(32)[::2],
        "torch f32 0-d": torch.tensor(1.0),
        "numpy.float32 scalar": np.float32(1.5),
        "numpy.int64 scalar": np.int64(3),
    }
    if not quick:
        common["str[1 MB]"] = "x" * (1 << 20)
        common["bytes[1 MB]"] = b"x" * (1 << 20)
    for n in sizes:
        common[f"list[{n}]"] = list(range(n))
        common[f"tuple[{n}]"] = tuple(range(n))
        common[f"dict[{n}]"] = {i: i for i in range(n)}
    paired: dict[str, tuple[Any, Any]] = {
        "Device": (tvmffi.device("cpu", 0), tvm_ffi.device("cpu", 0)),
        "dtype": (tvmffi.dtype("float32"), tvm_ffi.dtype("float32")),
        "Function": (tvmffi.get_global_func("testing.nop"), tvm_ffi.get_global_func("testing.nop")),
        "Object": (
            tvmffi.testing.create_object("testing.TestObjectBase", v_i64=1),
            tvm_ffi.testing.create_object("testing.TestObjectBase", v_i64=1),
        ),
        "official Object [interop]": (
            tvm_ffi.testing.create_object("testing.TestObjectBase", v_i64=1),
            tvm_ffi.testing.create_object("testing.TestObjectBase", v_i64=1),
        ),
        "Array (FFI)": (tvmffi.Array([1, 2, 3]), tvm_ffi.Array([1, 2, 3])),
        "Shape": (tvmffi.Shape([2, 3, 4]), tvm_ffi.Shape([2, 3, 4])),
        "list of 3 Objects": (
            [tvmffi.testing.create_object("testing.TestObjectBase", v_i64=i) for i in range(3)],
            [tvm_ffi.testing.create_object("testing.TestObjectBase", v_i64=i) for i in range(3)],
        ),
        "Tensor": (
            tvmffi.from_dlpack(np.zeros(16, np.float32)),
            tvm_ffi.from_dlpack(np.zeros(16, np.float32)),
        ),
        # The official binding has no TensorView: its nearest is the Tensor.
        "TensorView [official: Tensor]": (
            tvmffi.TensorView(env.setdefault("_tv_src", np.zeros(16, np.float32))),
            tvm_ffi.from_dlpack(np.zeros(16, np.float32)),
        ),
    }
    out = []
    for i, (label, value) in enumerate(common.items()):
        env[f"c{i}"] = value
        out.append((label, f"c{i}", f"c{i}"))
    for i, (label, (ours, theirs)) in enumerate(paired.items()):
        env[f"po{i}"], env[f"pt{i}"] = ours, theirs
        out.append((label, f"po{i}", f"pt{i}"))
    return out


def _container_construction_ns(value: Any) -> float | None:
    """The runtime's own cost of building (and freeing) the FFI container a list,
    tuple or dict converts to, called from C++ on the converted elements; None
    for other values.

    A list, tuple or dict argument becomes a runtime ``Array`` / ``Map`` made by
    the runtime's ``ffi.Array`` / ``ffi.Map`` in both bindings (a hash-map
    insertion per dict entry): a floor outside the binding, like a module's load.
    """
    from _harness import runtime_call_ns

    if type(value) in (list, tuple):
        name, items = "ffi.Array", list(value)
    elif type(value) is dict:
        name, items = "ffi.Map", [x for kv in value.items() for x in kv]
    else:
        return None
    number = max(3, 200000 // max(1, len(items)))
    return runtime_call_ns(name, *items, number=number)


def _value_floors(value: Any) -> dict[str, tuple[float, str]]:
    """What both bindings pay outside their own code for ``value``, with a row note,
    for ``nop`` (an argument) and ``echo`` (an argument and a result).

    A value that travels as a runtime object is made and released by the same C
    API call in both bindings: a container (``ffi.Array`` / ``ffi.Map``), a str or
    bytes beyond 7 bytes (``String`` / ``Bytes``), an int beyond int64 (``BigInt``,
    through CPython's digit conversion, both ways for a result), an opaque object
    (``OpaquePyObject``); that work, timed from C++ once per value, is part of the
    row's floor. For a 1 MB result the floor also holds making the Python object
    from the payload (``bytes`` slice, ``bytes.decode``), which any binding
    returning it pays. Small values: 0.
    """
    from _harness import pylong_convert_ns, runtime_object_ns

    built = _container_construction_ns(value)
    if built is not None:
        both = (built, f" [runtime construction {_fmt(built)}]")
        return {"nop": both, "echo": both}
    kind, payload = _runtime_object_of(value)
    if kind is None:
        return {"nop": (0.0, ""), "echo": (0.0, "")}
    made = runtime_object_ns(kind, payload, max(20, 200000 // max(1, len(payload) // 64)))
    floors = {}
    for fn in ("nop", "echo"):
        extra, note = made, f"runtime object {_fmt(made)}"
        if kind == "bigint":
            digits = pylong_convert_ns(value, fn == "echo")
            extra += digits
            note += f", CPython's digit conversion {_fmt(digits)}"
        if fn == "echo" and len(payload) >= (1 << 20):
            stmt = "p[1:]" if kind == "bytes" else "p.decode()"
            result = min(timeit.repeat(stmt, globals={"p": payload}, number=50, repeat=7))
            extra += result / 50 * 1e9
            note += f", Python result {_fmt(result / 50 * 1e9)}"
        floors[fn] = (extra, f" [{note}]")
    return floors


def _runtime_object_of(value: Any) -> tuple[str | None, bytes]:
    """The kind of runtime object ``value`` travels as (see _harness.runtime_object_ns)."""
    if type(value) is bytes and len(value) > 7:
        return "bytes", value
    if type(value) is str and len(value.encode()) > 7:
        return "string", value.encode()
    if type(value) is int and not -(2**63) <= value < 2**63:
        words = (value.bit_length() + 1 + 63) // 64
        return "bigint", value.to_bytes(8 * words, "little", signed=True)
    if type(value) is object:
        return "opaque", b""
    return None, b""


_REFUSED_STMT = "try:\n    {f}({v})\nexcept Exception:\n    pass"


def sweep_values(env: dict[str, Any], quick: bool, repeats: int, floor: float) -> list[Table]:
    """``nop(v)`` and ``echo(v)`` for every value, then NumPy's read-only array."""
    nop = Table("Arguments: `nop(v)`, release_gil=False", "floor")
    echo = Table("Arguments and results: `echo(v)`, release_gil=False", "floor")
    target = 0.002 if quick else 0.005
    for label, o, t in _values(env, quick):
        floors = _value_floors(env[o])
        for fn, table in (("nop", nop), ("echo", echo)):
            extra, note = floors[fn]
            table.add(
                f"{fn}({label}){note}",
                *_pair(f"og_{fn}({o})", f"tg_{fn}({t})", env, repeats, target),
                floor + extra,
            )
    ro = np.zeros(16, np.float32)
    ro.flags.writeable = False
    env["ro"] = ro
    stmts = [_REFUSED_STMT.format(f=f, v="ro") for f in ("og_nop", "tg_nop")]
    # Both refuse it (BufferError): the floor is a builtin raising an exception
    # that the same try/except catches.
    raised = min(_timer(_REFUSED_STMT.format(f="abs", v="'x'"), env)(20000) for _ in range(7))
    nop.add(
        f"nop(numpy read-only) [refused; floor: abs('x') raising, caught, {_fmt(raised)}]",
        *_pair(*stmts, env, repeats, target),
        raised,
    )
    return [nop, echo]


def sweep_arity(env: dict[str, Any], repeats: int, floor: float) -> Table:
    """``nop`` with 0 to 16 int arguments, and the GIL round trip on ``nop()``."""
    table = Table("Argument count: `nop(1, ..., 1)`, release_gil=False", "floor")
    for n in (0, 1, 2, 4, 8, 16):
        args = ", ".join(["1"] * n)
        table.add(
            f"nop({n} ints)",
            *_pair(f"og_nop({args})", f"tg_nop({args})", env, repeats, 0.003),
            floor,
        )
    table.add("nop() [GIL released]", *_pair("o_nop()", "t_nop()", env, repeats, 0.003), floor)
    table.add("add_one(1)", *_pair("og_add_one(1)", "tg_add_one(1)", env, repeats, 0.003), floor)
    return table


# ---- load_module ------------------------------------------------------------------

_EXPORT = (
    "int __tvm_ffi_f{i}(void* self, const void* args, int n, void* ret) "
    "{{ (void)self; (void)args; (void)n; *(long long*)ret = 0; return 0; }}\n"
)


def _generated_library(exports: int, others: int) -> str:
    """A shared library exporting ``exports`` TVM FFI functions and ``others`` other symbols."""
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"lib_e{exports}_o{others}.so")
    if os.path.exists(path):
        return path
    src = path[:-3] + ".c"
    with open(src, "w") as f:
        for i in range(exports):
            f.write(_EXPORT.format(i=i))
        for i in range(others):
            f.write(f"int other_symbol_{i} = {i};\n")
    cmd = ["gcc", "-O0", "-shared", "-fPIC", "-o", path + ".tmp", src]
    subprocess.run(cmd, check=True)
    os.replace(path + ".tmp", path)
    return path


def sweep_load_module(repeats: int, quick: bool) -> Table:
    """``load_module`` of a loaded library, beside the runtime's own load called from C++.

    Once a library is mapped, the runtime's dlopen is a lookup by name; the
    floor is the runtime's ``ffi.ModuleLoadFromFile`` itself (which both
    bindings call), and dlopen + dlclose of the file is printed beside it.
    """
    import _ctypes

    from _harness import runtime_call_ns

    table = Table("`load_module(path)` of an already loaded library", "runtime load (C++)")
    sizes = [(1, 0), (100, 0), (1000, 0)] + ([] if quick else [(1, 100000)])
    env: dict[str, Any] = {"o_load": tvmffi.load_module, "t_load": tvm_ffi.load_module}
    env["dlopen"], env["dlclose"] = _ctypes.dlopen, _ctypes.dlclose
    for exports, others in sizes:
        path = _generated_library(exports, others)
        env["path"] = path
        keep = tvmffi.load_module(path), tvm_ffi.load_module(path)  # first load outside timing
        ours, official = _pair("o_load(path)", "t_load(path)", env, repeats, 0.01)
        floor = runtime_call_ns("ffi.ModuleLoadFromFile", path, number=2000)
        dl = min(_timer("dlclose(dlopen(path, 2))", env)(200) for _ in range(repeats))
        label = f"load_module({exports} exports" + (f", {others} other symbols)" if others else ")")
        table.add(f"{label} [dlopen+dlclose {_fmt(dl)}]", ours, official, floor)
        del keep
    return table


# ---- structural -------------------------------------------------------------------


def _fresh(binding: Any, i: int) -> Any:
    """A fresh 10,000-node value (an array of 2,500 [int, str, [int]] lists, distinct per i)."""
    return binding.convert([[i, f"s{j}", [j]] for j in range(2500)])


def _fresh_ns(op: Callable[[Any], Any], value: Any) -> float:
    """ns of one ``op(value)`` (the value made outside the timing)."""
    t0 = time.perf_counter_ns()
    op(value)
    return float(time.perf_counter_ns() - t0)


def sweep_structural(repeats: int) -> Table:
    """Structural equality, hash and JSON graph of a fresh value, beside the runtime's cost."""
    from _harness import runtime_call_ns

    table = Table("Structural operations on a fresh 10k-node value", "runtime (C++)")
    sample = _fresh(tvmffi, 0)
    other = _fresh(tvmffi, 0)
    floors = {
        "structural_equal": runtime_call_ns(
            "ffi.StructuralEqual", sample, other, False, False, number=20
        ),
        "structural_hash": runtime_call_ns("ffi.StructuralHash", sample, False, False, number=20),
        "to_json_graph_str": runtime_call_ns("ffi.ToJSONGraphString", sample, None, number=20),
    }
    ops: dict[
        str,
        tuple[
            Callable[[Any], Any], Callable[[Any], Any], Callable[[int], Any], Callable[[int], Any]
        ],
    ] = {
        "structural_equal": (
            lambda p: tvmffi.structural_equal(*p),
            lambda p: tvm_ffi.structural_equal(*p),
            lambda i: (_fresh(tvmffi, 1000 + i), _fresh(tvmffi, 1000 + i)),
            lambda i: (_fresh(tvm_ffi, 1000 + i), _fresh(tvm_ffi, 1000 + i)),
        ),
        "structural_hash": (
            tvmffi.structural_hash,
            tvm_ffi.structural_hash,
            lambda i: _fresh(tvmffi, 2000 + i),
            lambda i: _fresh(tvm_ffi, 2000 + i),
        ),
        "to_json_graph_str": (
            tvmffi.serialization.to_json_graph_str,
            tvm_ffi.serialization.to_json_graph_str,
            lambda i: _fresh(tvmffi, 3000 + i),
            lambda i: _fresh(tvm_ffi, 3000 + i),
        ),
    }
    for name, (o_op, t_op, o_make, t_make) in ops.items():
        ours = official = float("inf")
        for r in range(repeats):  # interleaved, a value never seen before each time
            ours = min(ours, _fresh_ns(o_op, o_make(r)))
            official = min(official, _fresh_ns(t_op, t_make(r)))
        table.add(f"{name}(fresh 10k nodes)", ours, official, floors[name])
    return table


# ---- peers ------------------------------------------------------------------------

_NANOBIND_SRC = r"""
#include <nanobind/nanobind.h>
namespace nb = nanobind;
NB_MODULE(nb_peer, m) {
  m.def("nop", []() {});
  m.def("add_one", [](long long x) { return x + 1; });
  m.def("echo", [](nb::object x) { return x; });
}
"""

_TORCH_SRC = r"""
#include <torch/extension.h>
void nop() {}
int64_t add_one(int64_t x) { return x + 1; }
void three(at::Tensor a, at::Tensor b, at::Tensor c) { (void)a; (void)b; (void)c; }
"""


def _nanobind_module(quick: bool) -> Any | None:
    """The nanobind peer module, built once into the cache (None where nanobind is absent)."""
    try:
        import nanobind
    except ImportError:
        return None
    out_dir = os.path.join(CACHE, "nanobind")
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    target = os.path.join(out_dir, "nb_peer" + suffix)
    if not os.path.exists(target):
        if quick:
            return None
        os.makedirs(out_dir, exist_ok=True)
        src = os.path.join(out_dir, "nb_peer.cpp")
        with open(src, "w") as f:
            f.write(_NANOBIND_SRC)
        nb_dir = os.path.dirname(nanobind.__file__)
        cmd = [
            "g++", "-std=c++17", "-O2", "-shared", "-fPIC", "-fvisibility=hidden",
            "-DNDEBUG", "-DNB_COMPACT_ASSERTIONS",
            f"-I{sysconfig.get_paths()['include']}", f"-I{nanobind.include_dir()}",
            f"-I{os.path.join(nb_dir, 'ext', 'robin_map', 'include')}",
            src, os.path.join(nb_dir, "src", "nb_combined.cpp"), "-o", target + ".tmp",
        ]  # fmt: skip
        subprocess.run(cmd, check=True)
        os.replace(target + ".tmp", target)
    sys.path.insert(0, out_dir)
    import nb_peer  # type: ignore[import-not-found]

    return nb_peer


def _torch_extension(quick: bool) -> Any | None:
    """The torch C++ extension peer (load_inline, cached under the cache directory)."""
    import torch.utils.cpp_extension as ext

    build = os.path.join(CACHE, "torch_ext")
    os.makedirs(build, exist_ok=True)
    if quick and not any(f.endswith(".so") for f in os.listdir(build)):
        return None
    return ext.load_inline(
        "tvmffi_bench_torch_peer", cpp_sources=_TORCH_SRC,
        functions=["nop", "add_one", "three"], build_directory=build,
        extra_cflags=["-O2"], verbose=False,
    )  # fmt: skip


def sweep_peers(env: dict[str, Any], repeats: int, floor: float, quick: bool) -> Table | None:
    """No-op, add-one and three torch tensors: tvmffi beside nanobind and a torch extension."""
    import torch

    table = Table("Peers: tvmffi (release_gil=False) vs a peer binding", "floor", "peer")
    nb = _nanobind_module(quick)
    tx = _torch_extension(quick)
    env["ta"], env["tb"], env["tc"] = torch.zeros(4), torch.zeros(4), torch.zeros(4)
    # Each callable is a global of the timed statement, as ours are: a module
    # attribute (nb.nop()) would add a lookup to the peer's side only.
    if nb is not None:
        env["nb_nop"], env["nb_add_one"] = nb.nop, nb.add_one
        table.add("nop() vs nanobind", *_pair("og_nop()", "nb_nop()", env, repeats, 0.003), floor)
        table.add(
            "add_one(1) vs nanobind",
            *_pair("og_add_one(1)", "nb_add_one(1)", env, repeats, 0.003),
            floor,
        )
    if tx is not None:
        env["tx_nop"], env["tx_add_one"], env["tx_three"] = tx.nop, tx.add_one, tx.three
        table.add(
            "nop() vs torch extension", *_pair("og_nop()", "tx_nop()", env, repeats, 0.003), floor
        )
        table.add(
            "add_one(1) vs torch extension",
            *_pair("og_add_one(1)", "tx_add_one(1)", env, repeats, 0.003),
            floor,
        )
        table.add(
            "nop(3 torch tensors) vs torch extension",
            *_pair("og_nop(ta, tb, tc)", "tx_three(ta, tb, tc)", env, repeats, 0.003),
            floor,
        )
    return table if table.rows else None


# ---- instruction counts -----------------------------------------------------------

_CALLGRIND_ROWS = [
    ("add_one(1)", "og_add_one(1)", "tg_add_one(1)"),
    ("nop(2**64)", "og_nop(2**64)", "tg_nop(2**64)"),
    ("echo(2**64)", "og_echo(2**64)", "tg_echo(2**64)"),
    ("nop(ValueError('x'))", "og_nop(exc)", "tg_nop(exc)"),
    ("echo(bytes[100])", "og_echo(b100)", "tg_echo(b100)"),
    ("nop(ctypes.c_void_p)", "og_nop(vp)", "tg_nop(vp)"),
]

_CALLGRIND_SETUP = """
import ctypes, sys
sys.path.insert(0, {here!r})
from _harness import testing_funcs
names = ("nop", "echo", "add_one")
env = testing_funcs(names, gil_kept=names)
globals().update(env)
exc = ValueError("x"); b100 = b"x" * 100; vp = ctypes.c_void_p(0x1234)
"""


def callgrind_table() -> str:
    """Instructions per call (callgrind) of the rows the shared machine makes noisy."""
    out = [
        "\n### Instructions per call (callgrind), release_gil=False\n",
        "| row | tvmffi | tvm_ffi | ratio |",
        "| --- | ---: | ---: | ---: |",
    ]
    setup = _CALLGRIND_SETUP.format(here=HERE)
    for name, ours, theirs in _CALLGRIND_ROWS:
        a = callgrind_per_call(setup, ours)
        b = callgrind_per_call(setup, theirs)
        out.append(f"| `{name}` | {a:.0f} | {b:.0f} | {a / b:.2f} |")
        print(f"  callgrind {name}: {a:.0f} / {b:.0f}", file=sys.stderr, flush=True)
    return "\n".join(out)


# ---- main -------------------------------------------------------------------------


def _save(tables: list[Table], header: str) -> None:
    """``results/sweep.json`` (every table's rows), which ``benchmarks/plot.py`` draws."""
    import json

    from _harness import RESULTS_DIR

    os.makedirs(RESULTS_DIR, exist_ok=True)
    data = {
        "date": str(datetime.date.today()),
        "header": header,
        "tables": [
            {
                "title": t.title,
                "theirs": t.theirs,
                "rows": [
                    {"call": n, "ours_ns": o, "official_ns": off, "floor_ns": f}
                    for n, o, off, f in t.rows
                ],
            }
            for t in tables
        ],
    }
    with open(os.path.join(RESULTS_DIR, "sweep.json"), "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, ensure_ascii=False)
        f.write("\n")


def main(argv: list[str] | None = None) -> None:
    """Run the sweep and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short run: fewer repeats and sizes")
    parser.add_argument("--callgrind", action="store_true", help="add instruction counts")
    parser.add_argument("--only", default="", help="comma list: values,arity,load,structural,peers")
    args = parser.parse_args(argv)
    repeats = 3 if args.quick else int(os.environ.get("TVMFFI_BENCH_REPEATS", "9"))
    only = set(filter(None, args.only.split(",")))
    names = ("nop", "echo", "add_one")
    env = testing_funcs(names, gil_kept=names)
    floor = floor_ns(env, number=50000)
    header = (
        f"{datetime.date.today()} on {machine()} ({os.cpu_count()} CPUs); "
        f"tvmffi {tvmffi.__tvmffi_version__}, "
        f"tvm_ffi {tvm_ffi.__version__}; min of {repeats} interleaved repeats; "
        f"floor = `abs(1)` {floor:.0f} ns"
    )
    print(header)
    tables: list[Table] = []
    if not only or "values" in only:
        tables += sweep_values(env, args.quick, repeats, floor)
    if not only or "arity" in only:
        tables.append(sweep_arity(env, repeats, floor))
    if not only or "load" in only:
        tables.append(sweep_load_module(repeats, args.quick))
    if not only or "structural" in only:
        tables.append(sweep_structural(max(repeats, 5)))
    if not only or "peers" in only:
        peers = sweep_peers(env, repeats, floor, args.quick)
        if peers is not None:
            tables.append(peers)
    for table in tables:
        print(table.render())
    _save(tables, header)
    if args.callgrind and shutil.which("valgrind"):
        print(callgrind_table())


if __name__ == "__main__":
    main()
