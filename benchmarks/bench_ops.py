"""Operators from a signature (issues 25, 35): tvmffi.torch/tvmffi.jax register_op vs hand-written.

Run: ``make bench`` (or ``python benchmarks/bench_ops.py``); ``--callgrind`` also
counts the instructions of each PyTorch route under callgrind (valgrind).

One ``codegen.inline`` kernel, ``axpby(x, y, alpha, out)`` over 16 floats, and
an inout one, ``scale_(x, alpha)``. PyTorch, eager ``torch.ops.<ns>.<name>``
calls timed interleaved in one run (min over repeats):

- the direct FFI call with a pre-allocated output (no operator);
- the operator that ``tvmffi.torch.register_op`` defines: its C++ kernel, and
  the Python kernel it falls back to (``TVMFFI_TORCH_KERNEL=python``);
- the same kernel behind a hand-written ``torch.library.custom_op`` (allocating
  its output with ``torch.empty_like``);
- a hand-written C++ ``TORCH_LIBRARY`` operator computing axpby itself
  (``torch_library_ops.cc``: checks, ``at::empty_like``, the loop), the way users
  write fast operators; the same function through pybind11 without the
  dispatcher (``torch_pybind_axpby.cc``); and a ``TORCH_LIBRARY`` operator whose
  kernel calls the FFI function through ``TVMFFIFunctionCall``.

Issue 35 asks the register_op operator to cost at most the C++ ``TORCH_LIBRARY``
operator. JAX: the operator that ``tvmffi.jax.register_op`` returns against
``jax.jit`` of a hand-written ``jax.ffi.ffi_call`` with its ``ShapeDtypeStruct``
(the same function registered through jax-tvm-ffi by hand; ``alpha`` a static
keyword in both), called eagerly and inside an enclosing ``jax.jit`` (where
both compile to the same custom call, so the ratio shows the noise of the
~20 us dispatch).
"""

from __future__ import annotations

import datetime
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig
import tempfile
import timeit
from importlib.metadata import version
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))

import jax
import jax.numpy as jnp
import jax_tvm_ffi
import numpy as np
import torch
from _harness import REPEATS, machine
from callgrind_tensors import count as callgrind_count

import tvmffi
import tvmffi.cpp
import tvmffi.jax
import tvmffi.torch
from tvmffi import codegen
from tvmffi._torch_kernel import build_flags
from tvmffi.codegen import Scalar, Signature, Tensor, Var

N = Var("n")
AXPBY = Signature(
    "bench_axpby",
    [
        Tensor("x", [N], "float32"),
        Tensor("y", [N], "float32"),
        Scalar("alpha", "float32"),
        Tensor("out", [N], "float32", output=True),
    ],
)
SCALE = Signature(
    "bench_scale", [Tensor("x", [N], "float32", inout=True), Scalar("alpha", "float32")]
)


def _ns(stmt: str, env: dict[str, Any], number: int) -> float:
    return timeit.Timer(stmt, globals=env).timeit(number) / number * 1e9


def interleaved(
    stmts: list[str], env: dict[str, Any], number: int = 20000, repeats: int = REPEATS
) -> list[float]:
    """Min ns per call of each statement over ``repeats`` rounds that run them in turn."""
    for s in stmts:
        _ns(s, env, 1000)
    best = [float("inf")] * len(stmts)
    for _ in range(repeats):
        for i, s in enumerate(stmts):
            best[i] = min(best[i], _ns(s, env, number))
    return best


def _cpp_ops() -> Any:
    """Build (once, cached by tvmffi.cpp) and load the hand-written C++ operators.

    Returns the pybind11 module; ``torch.ops.bench_cpp`` holds the others.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    flags = build_flags()
    lib = tvmffi.load_module(
        tvmffi.cpp.build(
            "bench_torch_library_ops", sources=[os.path.join(here, "torch_library_ops.cc")], **flags
        )
    )
    path = tvmffi.cpp.build(
        "bench_ops_pybind",
        sources=[os.path.join(here, "torch_pybind_axpby.cc")],
        extra_cflags=[*flags["extra_cflags"], "-DTORCH_EXTENSION_NAME=bench_ops_pybind"],
        extra_include_paths=[*flags["extra_include_paths"], sysconfig.get_paths()["include"]],
        extra_ldflags=[*flags["extra_ldflags"], "-ltorch", "-ltorch_python", "-Wl,-z,undefs"],
    )
    loader = importlib.machinery.ExtensionFileLoader("bench_ops_pybind", path)
    spec = importlib.util.spec_from_file_location("bench_ops_pybind", path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return lib, module


def _torch_env(work: str) -> dict[str, Any]:
    axpby = codegen.inline(
        AXPBY, "for (int64_t i = 0; i < n; ++i) out[i] = alpha * x[i] + y[i];", output_dir=work
    )
    scale = codegen.inline(SCALE, "for (int64_t i = 0; i < n; ++i) x[i] *= alpha;", output_dir=work)
    tvmffi.torch.register_op("bench_ops::axpby", axpby)
    tvmffi.torch.register_op("bench_ops::scale_", scale)
    os.environ["TVMFFI_TORCH_KERNEL"] = "python"  # the same operators with the Python kernel
    try:
        tvmffi.torch.register_op("bench_ops::axpby_py", axpby, AXPBY)
        tvmffi.torch.register_op("bench_ops::scale_py", scale, SCALE)
    finally:
        del os.environ["TVMFFI_TORCH_KERNEL"]

    @torch.library.custom_op("bench_hand::axpby", mutates_args=())
    def hand(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
        out = torch.empty_like(x)
        axpby(x, y, alpha, out)
        return out

    @hand.register_fake
    def _(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
        return torch.empty_like(x)

    @torch.library.custom_op("bench_hand::scale_", mutates_args=("x",))
    def hand_scale(x: torch.Tensor, alpha: float) -> None:
        scale(x, alpha)

    cpp_lib, pybind = _cpp_ops()
    cpp_lib.bench_set_ffi_axpby(axpby)
    env = {
        "fn": axpby,
        "scale": scale,
        "ours": torch.ops.bench_ops,
        "hand": torch.ops.bench_hand,
        "cpp": torch.ops.bench_cpp,
        "pybind": pybind,
        "x": torch.arange(16, dtype=torch.float32),
        "y": torch.ones(16),
        "out": torch.empty(16),
    }
    for stmt in [s for _, s in AXPBY_ROUTES[1:]]:
        got = eval(stmt, env)
        assert torch.equal(got, 2 * env["x"] + 1), stmt
    return env


# (route, statement): the first is the direct call, the C++ TORCH_LIBRARY op the ratios' base.
AXPBY_ROUTES = [
    ("the tvmffi function called directly, output preallocated", "fn(x, y, 2.0, out)"),
    ("`tvmffi.torch.register_op` operator (C++ kernel)", "ours.axpby(x, y, 2.0)"),
    (
        "`register_op` operator, Python kernel (`TVMFFI_TORCH_KERNEL=python`)",
        "ours.axpby_py(x, y, 2.0)",
    ),
    ("hand-written Python `torch.library.custom_op`", "hand.axpby(x, y, 2.0)"),
    ("hand-written C++ `TORCH_LIBRARY` op", "cpp.axpby(x, y, 2.0)"),
    ("the same C++ function through pybind11, no dispatcher", "pybind.axpby(x, y, 2.0)"),
    (
        "C++ `TORCH_LIBRARY` op calling the tvmffi function (`TVMFFIFunctionCall`)",
        "cpp.axpby_ffi(x, y, 2.0)",
    ),
]
SCALE_ROUTES = [
    ("the tvmffi function called directly", "scale(x, 1.0)"),
    ("`tvmffi.torch.register_op` operator (C++ kernel)", "ours.scale_(x, 1.0)"),
    ("`register_op` operator, Python kernel", "ours.scale_py(x, 1.0)"),
    ("hand-written Python `torch.library.custom_op`", "hand.scale_(x, 1.0)"),
]
CPP_ROUTE = 4  # AXPBY_ROUTES' hand-written C++ TORCH_LIBRARY op


def torch_rows(env: dict[str, Any], counts: list[float] | None) -> list[str]:
    """Markdown rows: axpby's routes then scale_'s, ns per call (and instructions)."""
    # Many short rounds: on a loaded machine the min finds the quiet moments.
    times = interleaved([s for _, s in AXPBY_ROUTES], env, 2000, REPEATS * 10)
    times += interleaved([s for _, s in SCALE_ROUTES], env, 2000, REPEATS * 10)
    rows = []
    for i, (name, _) in enumerate(AXPBY_ROUTES + SCALE_ROUTES):
        kernel = "axpby" if i < len(AXPBY_ROUTES) else "scale_"
        ratio = f"{times[i] / times[CPP_ROUTE]:.2f}" if i < len(AXPBY_ROUTES) else ""
        row = f"| `{kernel}` | {name} | {times[i]:.0f} | {ratio} |"
        if counts is not None:
            row += f" {counts[i]:,.0f} |"
        rows.append(row)
    return rows


_CALLGRIND_CHILD = r"""
import os, sys, tempfile
sys.path.insert(0, {here!r})
import bench_ops
globals().update(bench_ops._torch_env(tempfile.mkdtemp()))
"""


def torch_counts() -> list[float]:
    """Instructions per call of each route (callgrind; the loop's own cost subtracted).

    The first dump also counts callgrind's start-up of its counters: a throw-away
    ``pass`` row takes it, the second is the loop alone.
    """
    stmts = [s for _, s in AXPBY_ROUTES + SCALE_ROUTES]
    setup = _CALLGRIND_CHILD.format(here=os.path.dirname(os.path.abspath(__file__)))
    counts = callgrind_count(["pass", "pass", *stmts], 5000, setup=setup)
    return [c - counts[1] for c in counts[2:]]


def _jax_env(work: str) -> dict[str, Any]:
    fn = codegen.inline(
        Signature("bench_jaxpby", AXPBY.params),
        "for (int64_t i = 0; i < n; ++i) out[i] = alpha * x[i] + y[i];",
        output_dir=work,
    )
    op = tvmffi.jax.register_op("bench_ops.axpby", fn)
    jax_tvm_ffi.register_ffi_target("bench_hand.axpby", fn, ["args", "attrs.alpha", "rets"])

    def hand(x: Any, y: Any, alpha: float) -> Any:
        out = jax.ShapeDtypeStruct(x.shape, x.dtype)
        return jax.ffi.ffi_call("bench_hand.axpby", out, vmap_method="sequential")(
            x, y, alpha=np.float32(alpha)
        )

    hand_jit = jax.jit(hand, static_argnames="alpha")
    env = {
        "op": op,
        "hand": hand_jit,
        "op_in_jit": jax.jit(lambda x, y: op(x, y, alpha=2.0)),
        "hand_in_jit": jax.jit(lambda x, y: hand(x, y, alpha=2.0)),
        "x": jnp.arange(16, dtype=jnp.float32),
        "y": jnp.ones(16, jnp.float32),
        "block": jax.block_until_ready,
    }
    expected = 2 * env["x"] + 1
    for call in (op, hand_jit):
        assert (call(env["x"], env["y"], alpha=2.0) == expected).all()
    for f in ("op_in_jit", "hand_in_jit"):
        assert (env[f](env["x"], env["y"]) == expected).all(), f  # type: ignore[operator]
    return env


def jax_rows(env: dict[str, Any]) -> list[str]:
    """One markdown row per way of calling: ours, hand-written, their ratio."""
    rows = []
    for name, ours, hand in (
        (
            "eager, alpha a static keyword",
            "block(op(x, y, alpha=2.0))",
            "block(hand(x, y, alpha=2.0))",
        ),
        ("inside jax.jit", "block(op_in_jit(x, y))", "block(hand_in_jit(x, y))"),
    ):
        o, h = interleaved([ours, hand], env, number=5000)
        rows.append(f"| `{name}` | {o:.0f} | {h:.0f} | {o / h:.2f} |")
    return rows


def main() -> None:
    """Measure and print both tables (``--callgrind``: with instruction counts)."""
    counts = torch_counts() if "--callgrind" in sys.argv else None
    print(
        f"{datetime.date.today()} on {machine()}; tvmffi {tvmffi.__tvmffi_version__}, torch "
        f"{torch.__version__}, jax {jax.__version__}, jax-tvm-ffi {version('jax-tvm-ffi')}"
    )
    with tempfile.TemporaryDirectory() as work:
        head = "| kernel | route | ns per eager call | / C++ op |"
        rule = "| --- | --- | ---: | ---: |"
        if counts is not None:
            head, rule = head + " instructions |", rule + " ---: |"
        print(head + "\n" + rule)
        print("\n".join(torch_rows(_torch_env(work), counts)))
        print()
        print("| call | tvmffi.jax op (ns) | hand-written ffi_call (ns) | ratio |")
        print("| --- | ---: | ---: | ---: |")
        print("\n".join(jax_rows(_jax_env(work))))


if __name__ == "__main__":
    main()
