"""Real-client benchmark: objects of packages built on the official binding, in tvmffi.

Run: ``make bench`` (or ``python benchmarks/bench_clients.py``).

Cases: ``nop(t, t, t)`` with three tensors made by the official binding's
``from_dlpack`` (tvmffi converts them by their handle); a kernel compiled by
Apache TVM for ``llvm`` (``B[i] = A[i] + 1`` over 4 floats), loaded by each
binding's ``load_module`` from the same exported library and called with TVM's
own ``tvm.runtime.Tensor`` arguments, and with each binding's own tensors. The
``[release_gil=False]`` rows leave out the GIL round trip that both bindings pay
when they release it (DESIGN.md "Performance": the target is measured there).
"""

from __future__ import annotations

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))

import numpy as np
import tvm
import tvm_ffi
from _harness import Case, report, testing_funcs
from tvm import te

import tvmffi


def _tvm_kernel(path: str) -> None:
    """Compile ``add_one`` for llvm with TVM and export it to ``path``."""
    n = te.var("n")
    a = te.placeholder((n,), name="A", dtype="float32")
    b = te.compute((n,), lambda i: a[i] + 1.0, name="B")
    func = te.create_prim_func([a, b]).with_attr("global_symbol", "add_one")
    tvm.compile(func, target="llvm").export_library(path)


def _env(work: str) -> dict[str, object]:
    env = testing_funcs(("nop",), gil_kept=("nop",))
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


def main() -> None:
    """Measure and print the table."""
    with tempfile.TemporaryDirectory() as work:
        report(CASES, _env(work), f", apache-tvm {tvm.__version__}")


if __name__ == "__main__":
    main()
