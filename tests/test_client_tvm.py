"""Apache TVM (0.27, CPU/LLVM) as a real client: its objects and kernels through tvmffi.

TVM builds on the official binding: ``tvm.target.Target``, ``tvm.runtime.Module``
and ``tvm.runtime.Tensor`` are subclasses of its classes defined in TVM's own
modules. They must be FFI objects to tvmffi (same handle, never wrapped as
Python callbacks nor routed through ``__dlpack__``), and what tvmffi hands back
must be TVM's objects again on TVM's side.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tvm_ffi

import tvmffi

try:
    import tvm
    from tvm import te
except ImportError:  # each test is reported skipped, with the reason
    tvm = te = None
pytestmark = pytest.mark.skipif(tvm is None, reason="needs apache-tvm (the test extra)")

echo = tvmffi.get_global_func("testing.echo")


@pytest.fixture(scope="module")
def kernel_lib(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, str]:
    """``add_one(A, B)``: B[i] = A[i] + 1 over float32 vectors, compiled once for llvm.

    Returns (TVM's executable, path of the exported shared library).
    """
    n = te.var("n")
    a = te.placeholder((n,), name="A", dtype="float32")
    b = te.compute((n,), lambda i: a[i] + 1.0, name="B")
    func = te.create_prim_func([a, b]).with_attr("global_symbol", "add_one")
    executable = tvm.compile(func, target="llvm")
    path = str(tmp_path_factory.mktemp("tvm_kernel") / "add_one.so")
    executable.export_library(path)
    return executable, path


@pytest.mark.slow  # TVM compiles the kernel (kernel_lib)
def test_tvm_kernel_loads_and_runs_through_tvmffi(kernel_lib: tuple[Any, str]) -> None:
    _, path = kernel_lib
    mod = tvmffi.load_module(path)
    add_one = mod["add_one"]
    a = np.arange(5, dtype="float32")
    # NumPy arrays, tvmffi tensors and TVM tensors as arguments.
    b = np.zeros(5, dtype="float32")
    add_one(a, b)
    np.testing.assert_array_equal(b, a + 1)
    tb = tvmffi.from_dlpack(np.zeros(5, dtype="float32"))
    add_one(tvmffi.from_dlpack(a), tb)
    np.testing.assert_array_equal(np.from_dlpack(tb), a + 1)
    ta, tb2 = tvm.runtime.tensor(a), tvm.runtime.tensor(np.zeros(5, dtype="float32"))
    add_one(ta, tb2)
    np.testing.assert_array_equal(tb2.numpy(), a + 1)


@pytest.mark.slow  # TVM compiles the kernel (kernel_lib)
def test_tvm_module_is_an_ffi_object(kernel_lib: tuple[Any, str]) -> None:
    # Before: tvm.runtime.Module (callable) was silently wrapped as a new
    # Python-callback Function.
    executable, _ = kernel_lib
    tvm_mod = executable.mod
    assert isinstance(tvm_mod, tvm.runtime.Module)
    ours = echo(tvm_mod)
    assert isinstance(ours, tvmffi.Module)
    assert ours.__chandle__() == tvm_mod.__chandle__()
    a = np.arange(3, dtype="float32")
    b = np.zeros(3, dtype="float32")
    ours["add_one"](a, b)
    np.testing.assert_array_equal(b, a + 1)
    # And back: TVM's side gets its own Module class for the same handle.
    back = tvm_ffi.get_global_func("testing.echo")(ours)
    assert isinstance(back, tvm.runtime.Module)
    assert back.same_as(tvm_mod)


def test_tvm_target_crosses_both_ways() -> None:
    # Before: TypeError "cannot convert" (the class is defined in tvm.target).
    target = tvm.target.Target("llvm")
    ours = echo(target)
    assert isinstance(ours, tvmffi.Object)
    assert ours.type_key == "target.Target"
    assert ours.__chandle__() == target.__chandle__()
    back = tvm_ffi.get_global_func("testing.echo")(ours)
    assert isinstance(back, tvm.target.Target)
    assert back.same_as(target)
    assert back.kind.name == "llvm"
    # A TVM global function called by tvmffi with the Target object.
    device_type = tvmffi.get_global_func("target.TargetGetDeviceType")(target)
    assert device_type == 1  # kDLCPU


def test_tvm_tensor_passes_by_handle() -> None:
    # Before: tvm.runtime.Tensor took the __dlpack__ route (a new handle per call).
    data = np.arange(6, dtype="int32").reshape(2, 3)
    tvm_tensor = tvm.runtime.tensor(data)
    ours = echo(tvm_tensor)
    assert isinstance(ours, tvmffi.Tensor)
    assert ours.__chandle__() == tvm_tensor.__chandle__()
    assert ours.shape == (2, 3)
    np.testing.assert_array_equal(np.from_dlpack(ours), data)
    # Our Tensor handed to TVM is a tvm.runtime.Tensor of the same handle.
    back = tvm_ffi.get_global_func("testing.echo")(ours)
    assert isinstance(back, tvm.runtime.Tensor)
    assert back.same_as(tvm_tensor)
    np.testing.assert_array_equal(back.numpy(), data)


@pytest.mark.slow  # TVM compiles the kernel (kernel_lib)
def test_tvmffi_tensors_into_tvm_compiled_kernel(kernel_lib: tuple[Any, str]) -> None:
    # TVM's own executable (the official binding's call path) with tvmffi tensors.
    executable, _ = kernel_lib
    a = tvmffi.from_dlpack(np.arange(4, dtype="float32"))
    out = np.zeros(4, dtype="float32")
    b = tvmffi.from_dlpack(out)
    executable["add_one"](a, b)
    np.testing.assert_array_equal(out, np.arange(4, dtype="float32") + 1)


def test_tvm_tensor_view_in_callback_does_not_crash(native: Any) -> None:
    # With tvm imported, the official binding hands a callback a tvm.runtime.Tensor
    # view with handle 0; its __dlpack__ crashes inside tvm_ffi, so tvmffi reads
    # the view's DLTensor instead.
    data = np.arange(4, dtype="float32")
    seen: list[Any] = []

    def callback(view: Any) -> None:
        seen.append(type(view))
        kept = echo(tvmffi.Array([view]))[0]
        seen.append(np.from_dlpack(kept).tolist())

    assert native.call_with_dltensor(tvm_ffi.convert(callback), data.ctypes.data, 4) == 0
    assert issubclass(seen[0], tvm_ffi.Tensor)
    assert seen[1] == [0.0, 1.0, 2.0, 3.0]


def test_tvm_primfunc_is_an_object_not_a_callback() -> None:
    # A PrimFunc is callable in Python; it used to become a new Python-callback
    # Function. It is the IR object itself, by handle, and comes back as one.
    n = te.var("n")
    a = te.placeholder((n,), name="A", dtype="float32")
    b = te.compute((n,), lambda i: a[i] * 2.0, name="B")
    prim_func = te.create_prim_func([a, b])
    assert callable(prim_func)
    ours = echo(prim_func)
    assert not isinstance(ours, tvmffi.Function)
    assert ours.type_key.endswith("PrimFunc")
    assert ours.__chandle__() == prim_func.__chandle__()
    back = tvm_ffi.get_global_func("testing.echo")(ours)
    assert type(back) is type(prim_func)
    assert back.same_as(prim_func)
