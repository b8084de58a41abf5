"""Generated wrapper vs the runtime's C++ typed export, both called from tvmffi.

Run: ``make bench`` (or ``python benchmarks/bench_codegen.py``).

The same operation, ``c[0] = a[0] + alpha * b[0]`` on three float32 tensors of
64 elements and one float32 scalar, exported twice:

- ``generated``: ``tvmffi.codegen.build`` of ``add3(a: Tensor([n], float32),
  b: Tensor([n], float32), c: Tensor([n], float32), alpha: float32)`` — checks
  count, types, ndim, dtype, device type and id, the shared dimension ``n``,
  compact strides, and the scalar type;
- ``C++ typed``: ``TVM_FFI_DLL_EXPORT_TYPED_FUNC`` of a C++ function taking
  three ``TensorView`` and a ``float`` — checks count and argument types only.

Both are called from tvmffi with pre-converted tensors (``tvmffi.from_dlpack``),
with NumPy arrays (converted on every call) and with ``TensorView`` (DLTensor*).
Then ``valgrind --tool=callgrind`` counts the instructions executed inside each
exported symbol per call, from ``benchmarks/codegen_driver.c`` (no Python).
"""

from __future__ import annotations

import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))

import numpy as np
from _harness import Case, floor_ns, machine, measure, table

import tvmffi

# Both libraries are built by tvmffi's one build system (codegen.build and
# tvmffi.cpp.build): same compilers ($CC/$CXX honoured), flags and runtime.
import tvmffi.cpp
from tvmffi import codegen, libinfo
from tvmffi._build import toolchain
from tvmffi.codegen import Scalar, Signature, Tensor, Var

HERE = os.path.dirname(os.path.abspath(__file__))

KERNEL = r"""
#include <stdint.h>
int add3_kernel(float* a, float* b, float* c, float alpha, int64_t n) {
  (void)n;
  c[0] = a[0] + alpha * b[0];
  return 0;
}
"""

CPP = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

static void Add3(tvm::ffi::TensorView a, tvm::ffi::TensorView b, tvm::ffi::TensorView c,
                 float alpha) {
  float* pa = reinterpret_cast<float*>(static_cast<char*>(a.data_ptr()) + a.byte_offset());
  float* pb = reinterpret_cast<float*>(static_cast<char*>(b.data_ptr()) + b.byte_offset());
  float* pc = reinterpret_cast<float*>(static_cast<char*>(c.data_ptr()) + c.byte_offset());
  pc[0] = pa[0] + alpha * pb[0];
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add3_cpp, Add3);
"""


def build_both(work: str) -> tuple[str, str]:
    """Build the generated library and the C++ one; return their paths."""
    n = Var("n")
    sig = Signature(
        "add3",
        [
            Tensor("a", [n], "float32"),
            Tensor("b", [n], "float32"),
            Tensor("c", [n], "float32"),
            Scalar("alpha", "float32"),
        ],
    )
    codegen.build([(sig, "add3_kernel")], sources=[KERNEL], name="add3", output_dir=work)
    (gen_dir,) = [d for d in os.listdir(work) if d.startswith("add3-")]
    generated = os.path.join(work, gen_dir, "libadd3.so")
    src = os.path.join(work, "add3_cpp.cc")
    with open(src, "w") as f:
        f.write(CPP)
    cpp = tvmffi.cpp.build("add3_cpp", sources=[src], build_directory=os.path.join(work, "cpp"))
    return generated, cpp


def timings(generated: str, cpp: str) -> list[tuple[Case, float, float]]:
    gen = tvmffi.load_module(generated)["add3"]
    typed = tvmffi.load_module(cpp)["add3_cpp"]
    arrays = [np.zeros(64, np.float32) for _ in range(3)]
    env: dict[str, object] = {
        "g": gen,
        "p": typed,
        "x": arrays[0],
        "y": arrays[1],
        "z": arrays[2],
        "tx": tvmffi.from_dlpack(arrays[0]),
        "ty": tvmffi.from_dlpack(arrays[1]),
        "tz": tvmffi.from_dlpack(arrays[2]),
        "vx": tvmffi.TensorView(arrays[0]),
        "vy": tvmffi.TensorView(arrays[1]),
        "vz": tvmffi.TensorView(arrays[2]),
    }
    cases = [
        Case(
            "add3(t, t, t, 0.5) [from_dlpack tensors]", "g(tx, ty, tz, 0.5)", "p(tx, ty, tz, 0.5)"
        ),
        Case("add3(x, x, x, 0.5) [3 NumPy arrays]", "g(x, y, z, 0.5)", "p(x, y, z, 0.5)"),
        Case(
            "add3(v, v, v, 0.5) [TensorView, DLTensor*]", "g(vx, vy, vz, 0.5)", "p(vx, vy, vz, 0.5)"
        ),
    ]
    return measure(cases, env)


def _instructions(driver: str, lib: str, symbol: str, mode: str, calls: int) -> float | None:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        proc = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                f"--toggle-collect={symbol}",
                driver,
                lib,
                symbol,
                str(calls),
                mode,
            ],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return None
        with open(out) as f:
            text = f.read()
    match = re.search(r"^totals:\s+(\d+)", text, re.M) or re.search(
        r"^summary:\s+(\d+)", text, re.M
    )
    return int(match.group(1)) / calls if match else None


def instruction_counts(work: str, generated: str, cpp: str) -> list[tuple[str, float, float]]:
    """Instructions per call inside each exported symbol, from the C driver under callgrind."""
    if shutil.which("valgrind") is None:
        return []
    include = libinfo.find_include_path()
    driver = os.path.join(work, "codegen_driver")
    subprocess.run(
        [
            toolchain.compiler("c"),
            "-std=c11",
            "-O2",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-o",
            driver,
            os.path.join(HERE, "codegen_driver.c"),
            "-I",
            include,
            "-ldl",
        ],
        check=True,
    )
    rows = []
    for mode, label in (("ptr", "DLTensor* arguments"), ("obj", "Tensor object arguments")):
        ours = _instructions(driver, generated, "__tvm_ffi_add3", mode, 10000)
        theirs = _instructions(driver, cpp, "__tvm_ffi_add3_cpp", mode, 10000)
        if ours is not None and theirs is not None:
            rows.append((label, ours, theirs))
    return rows


def main() -> None:
    """Measure and print both tables."""
    with tempfile.TemporaryDirectory() as work:
        generated, cpp = build_both(work)
        rows = timings(generated, cpp)
        floor = floor_ns({})
        counts = instruction_counts(work, generated, cpp)
    print(
        f"{datetime.date.today()} on {machine()}; tvmffi {tvmffi.__tvmffi_version__}, "
        f"runtime {tvmffi.tvm_ffi_version()}, numpy {np.__version__}"
    )
    print(
        table(
            rows, floor, ("call (from tvmffi)", "generated (ns)", "C++ typed export (ns)", "ratio")
        )
    )
    if counts:
        print()
        print(
            "| instructions per call (callgrind, inside the symbol) | generated | "
            "C++ typed export |"
        )
        print("| --- | ---: | ---: |")
        for label, ours_i, theirs_i in counts:
            print(f"| {label} | {ours_i:.0f} | {theirs_i:.0f} |")


if __name__ == "__main__":
    main()
