"""apache-tvm-ffi-orcjit as a real client: a library that only registers globals
and types, and object files from ``tvmffi.codegen.export_object`` run by its JIT."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import numpy as np
import pytest

import tvmffi
from tvmffi import codegen
from tvmffi.codegen import Scalar, Signature, Tensor, Var

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tvm_ffi_orcjit") is None,
    reason="needs apache-tvm-ffi-orcjit (the test extra)",
)

KERNEL = (
    "#include <stdint.h>\n"
    "int axpy_k(float* y, const float* x, float a, int64_t n) "
    "{ for (int64_t i = 0; i < n; ++i) y[i] += a * x[i]; return 0; }\n"
)


def orcjit_library() -> str:
    spec = importlib.util.find_spec("tvm_ffi_orcjit")
    assert spec is not None and spec.origin is not None
    return os.path.join(os.path.dirname(spec.origin), "lib", "libtvm_ffi_orcjit.so")


@pytest.fixture(scope="module")
def axpy_object(tmp_path_factory: pytest.TempPathFactory) -> str:
    n = Var("n")
    sig = Signature(
        "axpy", [Tensor("y", [n], "float32"), Tensor("x", [n], "float32"), Scalar("a", "float32")]
    )
    path = tmp_path_factory.mktemp("orcjit") / "axpy.o"
    return codegen.export_object([(sig, "axpy_k")], sources=[KERNEL], path=path)


def check_axpy(mod: Any) -> None:
    y = np.ones(4, dtype="float32")
    x = np.arange(4, dtype="float32")
    mod["axpy"](y, x, 2.0)
    np.testing.assert_array_equal(y, 1 + 2 * np.arange(4, dtype="float32"))


def test_tvmffi_loads_orcjit_and_runs_an_exported_object(axpy_object: str) -> None:
    # libtvm_ffi_orcjit.so exports no __tvm_ffi_ function: it registers its globals
    # and types when loaded (tvmffi used to refuse it).
    lib = tvmffi.load_module(orcjit_library())
    assert lib.kind == "library"
    session = tvmffi.get_global_func("tvm_ffi_orcjit.ExecutionSession")(None, 0)
    assert session.type_key == "tvm_ffi_orcjit.ExecutionSession"
    load = tvmffi.get_global_func("tvm_ffi_orcjit.SessionLoadModule")
    mod = load(session, [axpy_object], "", None, None)
    assert isinstance(mod, tvmffi.Module)
    assert mod.kind == "orcjit"
    check_axpy(mod)


def test_orcjit_python_api_objects_cross_into_tvmffi(axpy_object: str) -> None:
    # The package's own Python classes (official-binding subclasses defined in
    # tvm_ffi_orcjit) are FFI objects to tvmffi, and back.
    import tvm_ffi
    import tvm_ffi_orcjit

    session = tvm_ffi_orcjit.ExecutionSession(orc_rt=None)
    official_mod = session.load_module(axpy_object)
    echo = tvmffi.get_global_func("testing.echo")
    ours = echo(official_mod)
    assert isinstance(ours, tvmffi.Module)
    assert ours.__chandle__() == official_mod.__chandle__()
    check_axpy(ours)
    ours_session = echo(session)
    assert ours_session.__chandle__() == session.__chandle__()
    back = tvm_ffi.get_global_func("testing.echo")(ours_session)
    assert isinstance(back, tvm_ffi_orcjit.ExecutionSession)
    assert back.same_as(session)
    # A module made through tvmffi's globals, used through the official binding.
    load = tvmffi.get_global_func("tvm_ffi_orcjit.SessionLoadModule")
    mod2 = load(ours_session, [axpy_object], "", None, None)
    official_view = tvm_ffi.get_global_func("testing.echo")(mod2)
    assert isinstance(official_view, tvm_ffi.Module)
    y = np.zeros(2, dtype="float32")
    official_view["axpy"](y, np.ones(2, dtype="float32"), 3.0)
    assert y.tolist() == [3.0, 3.0]


def test_orcjit_loaded_by_the_runtimes_own_loader_stays_loaded() -> None:
    # issue 21, item 7: the module from get_global_func("ffi.ModuleLoadFromFile") is
    # dropped; the library's globals must still be callable (they used to segfault).
    import subprocess
    import sys

    code = (
        "import gc, sys, tvmffi\n"
        "mod = tvmffi.get_global_func('ffi.ModuleLoadFromFile')(sys.argv[1])\n"
        "del mod\n"
        "gc.collect()\n"
        "session = tvmffi.get_global_func('tvm_ffi_orcjit.ExecutionSession')(None, 0)\n"
        "print(session.type_key)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, orcjit_library()], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "tvm_ffi_orcjit.ExecutionSession"
