"""Real-client benchmark: objects of packages built on the official binding, in tvmffi.

Run: ``make bench`` (or ``python benchmarks/bench_clients.py``).

Cases: ``nop(t, t, t)`` with three tensors made by the official binding's
``from_dlpack`` (tvmffi converts them by their handle); a kernel compiled by
Apache TVM for ``llvm`` (``B[i] = A[i] + 1`` over 4 floats), loaded by each
binding's ``load_module`` from the same exported library and called with TVM's
own ``tvm.runtime.Tensor`` arguments, and with each binding's own tensors. The
``[release_gil=False]`` rows leave out the GIL round trip that both bindings pay
when they release it (DESIGN.md "Performance": the target is measured there).

``kwargs_wrapper`` rows: ``utils.kwargs_wrapper.make_kwargs_wrapper`` of each binding
over its ``testing.nop`` (kept GIL), called positionally, with a keyword, with a
default, and with a dataclass parameter (``map_dataclass_to_tuple``).

``--cutedsl``: CuTe DSL (nvidia-cutlass-dsl) host-only ``@cute.jit`` functions compiled
with ``--enable-tvm-ffi`` and called as CuTe DSL calls them (its compiled-function
object, its ``kwargs_wrapper``), in fresh processes, alternately plain (the official
binding) and hosted (``TVMFFI_HOST=1``), the minimum of each side over the repeats:
``f(a, x, y)`` (a float, two torch tensors), ``g(x, y)`` (keyword-only ``a`` defaulted),
``g(x, y, a=3.0)``, ``h(x, y, p)`` (``p`` a two-field dataclass).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import timeit
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))

import numpy as np
from _harness import Case, machine, report, testing_funcs


def _tvm_kernel(path: str) -> None:
    """Compile ``add_one`` for llvm with TVM and export it to ``path``."""
    import tvm
    from tvm import te

    n = te.var("n")
    a = te.placeholder((n,), name="A", dtype="float32")
    b = te.compute((n,), lambda i: a[i] + 1.0, name="B")
    func = te.create_prim_func([a, b]).with_attr("global_symbol", "add_one")
    tvm.compile(func, target="llvm").export_library(path)


@dataclasses.dataclass
class Pair:
    """The dataclass argument of the kwargs_wrapper rows."""

    u: int
    v: float


def _env(work: str) -> dict[str, object]:
    import tvm
    import tvm_ffi
    import tvm_ffi.utils.kwargs_wrapper as t_kw

    import tvmffi
    import tvmffi.utils.kwargs_wrapper as o_kw

    env = testing_funcs(("nop",), gil_kept=("nop",))
    for prefix, kw in (("o", o_kw), ("t", t_kw)):
        nop = env[f"{prefix}g_nop"]
        env[f"{prefix}_w"] = kw.make_kwargs_wrapper(nop, ["a", "b"])
        env[f"{prefix}_wd"] = kw.make_kwargs_wrapper(nop, ["a", "b"], (2,))
        env[f"{prefix}_wp"] = kw.make_kwargs_wrapper(nop, ["a", "p"], map_dataclass_to_tuple=["p"])
    env["pair"] = Pair(1, 2.0)
    x = np.zeros((16, 16), dtype="float32")
    env["tt"] = tvm_ffi.from_dlpack(x)
    path = os.path.join(work, "add_one.so")
    _tvm_kernel(path)
    for prefix, load in (("o", tvmffi.load_module), ("t", tvm_ffi.load_module)):
        released = load(path)["add_one"]
        released.release_gil = True  # both sides alike (defaults differ for module functions)
        env[f"{prefix}_k"] = released
        kept = load(path)["add_one"]
        kept.release_gil = False
        env[f"{prefix}g_k"] = kept
    a, b = np.arange(4, dtype="float32"), np.zeros(4, dtype="float32")
    env["va"], env["vb"] = tvm.runtime.tensor(a), tvm.runtime.tensor(b)
    env["oa"], env["ob"] = tvmffi.from_dlpack(a), tvmffi.from_dlpack(b)
    env["ta"], env["tb"] = tvm_ffi.from_dlpack(a), tvm_ffi.from_dlpack(b)
    return env


CASES = [
    Case("nop(1, 2) [the target, release_gil=False]", "og_nop(1, 2)", "tg_nop(1, 2)"),
    Case("kwargs_wrapper w(1, 2) [positional]", "o_w(1, 2)", "t_w(1, 2)"),
    Case("kwargs_wrapper w(1, b=2) [a keyword]", "o_w(1, b=2)", "t_w(1, b=2)"),
    Case("kwargs_wrapper w(1) [a default]", "o_wd(1)", "t_wd(1)"),
    Case("kwargs_wrapper w(1, p) [a dataclass, unpacked]", "o_wp(1, pair)", "t_wp(1, pair)"),
    Case("nop(t, t, t) [official-binding tensors]", "o_nop(tt, tt, tt)", "t_nop(tt, tt, tt)"),
    Case(
        "nop(t, t, t) [official-binding tensors, release_gil=False]",
        "og_nop(tt, tt, tt)",
        "tg_nop(tt, tt, tt)",
    ),
    Case("TVM add_one(a, b) [tvm.runtime.Tensor, GIL released]", "o_k(va, vb)", "t_k(va, vb)"),
    Case(
        "TVM add_one(a, b) [tvm.runtime.Tensor, release_gil=False]",
        "og_k(va, vb)",
        "tg_k(va, vb)",
    ),
    Case(
        "TVM add_one(a, b) [each binding's own tensors, release_gil=False]",
        "og_k(oa, ob)",
        "tg_k(ta, tb)",
    ),
]


CUTE_ROWS = {
    "f": ("`f(a, x, y)` (2 torch tensors, float)", "cf(2.0, x, y)"),
    "g": ("`g(x, y)` (keyword-only `a` defaulted)", "cg(x, y)"),
    "g_kw": ("`g(x, y, a=3.0)`", "cg(x, y, a=3.0)"),
    "h": ("`h(x, y, p)` (`p` a 2-field dataclass)", "ch(x, y, p)"),
}


def _cutedsl_worker(repeats: int) -> dict[str, float]:
    """In this process (plain or hosted): ns per call of each CuTe DSL row."""
    import cutlass
    import cutlass.cute as cute
    import torch

    # The annotations below are strings (PEP 563): CuTe DSL evaluates them in this
    # module's globals.
    globals().update(cutlass=cutlass, cute=cute)

    @dataclasses.dataclass
    class Params:
        u: cutlass.Int32
        v: cutlass.Float32

    globals()["Params"] = Params

    @cute.jit
    def f(a: cutlass.Float32, x: cute.Tensor, y: cute.Tensor) -> None:
        pass

    @cute.jit
    def g(x: cute.Tensor, y: cute.Tensor, *, a: cutlass.Float32 = 1.0) -> None:
        pass

    @cute.jit
    def h(x: cute.Tensor, y: cute.Tensor, p: Params) -> None:
        pass

    def dyn(t: Any) -> Any:
        return cute.runtime.from_dlpack(t, enable_tvm_ffi=True).mark_layout_dynamic()

    opt = "--enable-tvm-ffi"
    x, y = torch.zeros(4), torch.zeros(4)
    env: dict[str, Any] = {
        "cf": cute.compile(f, 1.0, dyn(x), dyn(y), options=opt),
        "cg": cute.compile(g, dyn(x), dyn(y), options=opt),
        "ch": cute.compile(
            h, dyn(x), dyn(y), Params(cutlass.Int32(1), cutlass.Float32(2.0)), options=opt
        ),
        "x": x,
        "y": y,
        "p": Params(3, 4.0),
    }
    out = {}
    for key, (_, stmt) in CUTE_ROWS.items():
        timer = timeit.Timer(stmt, globals=env)
        timer.timeit(2000)
        out[key] = min(timer.repeat(repeats, 1000)) / 1000 * 1e9
    return out


def cutedsl(processes: int = 5, repeats: int = 200) -> None:
    """The CuTe DSL table: fresh processes, plain and hosted alternately."""
    best: dict[str, dict[str, float]] = {"plain": {}, "hosted": {}}
    for _ in range(processes):
        for mode in ("plain", "hosted"):
            env = {k: v for k, v in os.environ.items() if k != "TVMFFI_HOST"}
            if mode == "hosted":
                env["TVMFFI_HOST"] = "1"
            cmd = [sys.executable, __file__, "--cutedsl-worker", str(repeats)]
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise RuntimeError(f"{mode} worker failed:\n{proc.stderr[-4000:]}")
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            for key, ns in row.items():
                best[mode][key] = min(ns, best[mode].get(key, float("inf")))
    from importlib.metadata import version

    print(
        f"{__import__('datetime').date.today()} on {machine()}; nvidia-cutlass-dsl "
        f"{version('nvidia-cutlass-dsl')}, best of {processes} processes x {repeats} repeats"
    )
    print("| call | official | hosted on tvmffi | ratio |\n| --- | ---: | ---: | ---: |")
    for key, (name, _) in CUTE_ROWS.items():
        p, h = best["plain"][key], best["hosted"][key]
        print(f"| {name} | {p:,.0f} ns | {h:,.0f} ns | {h / p:.2f} |")


def main() -> None:
    """Measure and print the table (``--cutedsl``: the CuTe DSL table instead)."""
    if "--cutedsl-worker" in sys.argv:
        print(json.dumps(_cutedsl_worker(int(sys.argv[-1]))))
        return
    if "--cutedsl" in sys.argv:
        cutedsl()
        return
    import tvm

    with tempfile.TemporaryDirectory() as work:
        report(CASES, _env(work), f", apache-tvm {tvm.__version__}")


if __name__ == "__main__":
    main()
