"""Packages built on the official binding, hosted on tvmffi (TVMFFI_HOST=1), unchanged.

Each client runs in its own interpreter started with ``TVMFFI_HOST=1``: the installed
``tvmffi_host.pth`` hosts it before any user code, so ``import tvm_ffi`` inside TVM,
jax-tvm-ffi, apache-tvm-ffi-orcjit and xgrammar answers tvmffi. The scripts in ``tests/hosted/``
check their results, that tvmffi answered, and that no official Python code was
imported, and print OK.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from tvmffi import codegen
from tvmffi.codegen import Scalar, Signature, Tensor, Var

HOSTED = os.path.join(os.path.dirname(__file__), "hosted")
# Each client (TVM, jax, xgrammar, orcjit) starts in its own interpreter and imports its
# whole stack: make test-fast leaves them out.
pytestmark = pytest.mark.slow


def run_hosted(script: str, *args: str, timeout: float = 900) -> None:
    env = dict(os.environ, TVMFFI_HOST="1")
    proc = subprocess.run(
        [sys.executable, os.path.join(HOSTED, script), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0 and proc.stdout.strip().endswith("OK"), (
        f"{script} failed hosted (rc {proc.returncode}):\n"
        f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    )


def _needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (the `test` extra installs it)")


def test_tvm_hosted_builds_runs_exports_and_round_trips_tvmscript() -> None:
    # TIR and Relax compiled for llvm and run (Relax VM), export_library and load,
    # TVMScript print/parse; TVM's Device/Tensor are what tvmffi hands out.
    _needs("tvm")
    run_hosted("tvm_smoke.py")


def test_jax_tvm_ffi_hosted_runs_a_kernel_under_jit(tmp_path: object) -> None:
    _needs("jax_tvm_ffi")
    run_hosted("jax_smoke.py", str(tmp_path))


def test_xgrammar_hosted_guides_decoding_with_a_json_schema() -> None:
    # Its library through libinfo.load_lib_module, registered objects and errors, DLPack
    # token bitmasks (xgrammar's own suite: docs/hosting.md).
    _needs("xgrammar")
    run_hosted("xgrammar_smoke.py")


def test_orcjit_hosted_loads_and_runs_an_object_file(tmp_path: object) -> None:
    _needs("tvm_ffi_orcjit")
    n = Var("n")
    sig = Signature(
        "axpy", [Tensor("y", [n], "float32"), Tensor("x", [n], "float32"), Scalar("a", "float32")]
    )
    kernel = (
        "#include <stdint.h>\n"
        "int axpy_k(float* y, const float* x, float a, int64_t n) "
        "{ for (int64_t i = 0; i < n; ++i) y[i] += a * x[i]; return 0; }\n"
    )
    obj = codegen.export_object(
        [(sig, "axpy_k")], sources=[kernel], path=os.path.join(str(tmp_path), "axpy.o")
    )
    run_hosted("orcjit_smoke.py", str(obj))


def _run_tirx(hosted: bool) -> str:
    env = {k: v for k, v in os.environ.items() if k != "TVMFFI_HOST"}
    if hosted:
        env["TVMFFI_HOST"] = "1"
    proc = subprocess.run(
        [sys.executable, os.path.join(HOSTED, "tirx_smoke.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    want = "hosted OK" if hosted else "plain OK"
    assert proc.returncode == 0 and proc.stdout.strip().endswith(want), (
        f"tirx_smoke.py failed {'hosted' if hosted else 'plain'} (rc {proc.returncode}):\n"
        f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    )
    (result,) = [line for line in proc.stdout.splitlines() if line.startswith("result ")]
    return result


def test_tirx_hosted_gives_the_plain_results() -> None:
    # apache-tvm-tirx: TVMScript, a pass (StmtSimplify), LLVM build and run, export_library
    # and load_module, an error crossing the FFI; the same printed results on the official
    # binding and on tvmffi.
    _needs("tvm_tirx")
    plain = _run_tirx(hosted=False)
    assert plain.endswith("[1.0, 3.0, 5.0, 7.0, 9.0, 11.0] ValueError"), plain
    assert _run_tirx(hosted=True) == plain
