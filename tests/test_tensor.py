"""Tensors, TensorView, DLPack in both directions, dtypes and streams."""

from __future__ import annotations

import ctypes
import gc
import importlib
import os
import sys
import weakref
from typing import Any

import numpy as np
import pytest
import tvm_ffi  # the apache-tvm-ffi dependency: always installed

import tvmffi
import tvmffi.testing as T


def _optional(name: str) -> Any:
    """Module ``name``, or None: tests that need it are marked to skip, the rest run."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


torch = _optional("torch")
ml_dtypes = _optional("ml_dtypes")
needs_torch = pytest.mark.skipif(torch is None, reason="needs torch (the test extra)")
needs_ml_dtypes = pytest.mark.skipif(ml_dtypes is None, reason="needs ml_dtypes (the test extra)")

HAS_CUDA = torch is not None and torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")


def shares(a: Any, b: Any) -> bool:
    return bool(np.shares_memory(np.asarray(a), np.asarray(b)))


# ---- basics ------------------------------------------------------------------------
def test_from_dlpack_properties() -> None:
    a = np.arange(12, dtype="float32").reshape(3, 4)
    t = tvmffi.from_dlpack(a)
    assert isinstance(t, tvmffi.Tensor)
    assert isinstance(t, tvmffi.Object)
    assert t.type_index == 70
    assert t.shape == (3, 4)
    assert t.strides == (4, 1)
    assert t.ndim == 2
    assert t.dtype == tvmffi.dtype("float32")
    assert t.device == tvmffi.cpu(0)
    assert t.__dlpack_device__() == (1, 0)
    assert t.data_ptr() == a.ctypes.data
    assert "shape=(3, 4)" in repr(t) and "float32" in repr(t)
    # Tensor(x) is from_dlpack(x); a Tensor imports as itself.
    assert tvmffi.Tensor(a).data_ptr() == a.ctypes.data
    assert tvmffi.from_dlpack(t) is t
    assert tvmffi.from_dlpack(ext_tensor=a).shape == (3, 4)  # the official parameter name


def test_tensor_official_methods() -> None:
    a = np.zeros((4, 5, 6), dtype="int16")
    t = tvmffi.from_dlpack(a)
    assert type(t.dtype) is tvmffi.dtype and t.dtype == "int16" and t.dtype is t.dtype
    assert t.numel() == 120
    assert (t.size(0), t.size(-1), t.size(1)) == (4, 6, 5)
    for bad in (3, -4):
        with pytest.raises(IndexError, match="out of range"):
            t.size(bad)
    assert t.is_contiguous()
    s = tvmffi.from_dlpack(a[1:3, :, 1:3])
    assert not s.is_contiguous() and s.numel() == 20
    assert s.data_ptr() == a[1:3, :, 1:3].ctypes.data
    # Size-1 dimensions' strides and empty tensors do not make a layout strided.
    assert not tvmffi.from_dlpack(a[:, :1, :]).is_contiguous()
    assert tvmffi.from_dlpack(a[::2][:1]).is_contiguous()  # strides (60, 6, 1)
    assert tvmffi.from_dlpack(np.zeros((4, 0, 4))[:, :, ::2]).is_contiguous()
    assert tvmffi.from_dlpack(np.array(1.0)).numel() == 1
    v = tvmffi.TensorView(a)
    assert (v.numel(), v.size(-1), v.is_contiguous(), v.data_ptr()) == (120, 6, True, a.ctypes.data)


@needs_torch
def test_shared_memory_both_ways() -> None:
    a = np.zeros((2, 3), dtype="int32")
    t = tvmffi.from_dlpack(a)
    b = np.from_dlpack(t)
    assert shares(a, b)
    b[1, 2] = 7
    assert a[1, 2] == 7
    a[0, 0] = -3
    assert b[0, 0] == -3
    tt = torch.from_dlpack(t)
    tt[0, 1] = 11
    assert a[0, 1] == 11


def test_function_results_are_tensors() -> None:
    a = np.arange(6, dtype="int64")
    r = T.echo(a)
    assert type(r) is tvmffi.Tensor
    assert r.data_ptr() == a.ctypes.data
    back = np.from_dlpack(r)
    back[0] = 100
    assert a[0] == 100
    # a Tensor argument comes back as the very same FFI object
    t = tvmffi.from_dlpack(a)
    assert T.echo(t).same_as(t)


@needs_torch
def test_torch_round_trip() -> None:
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    # torch in, torch out (official behaviour): the tensor handed back is x itself
    assert T.echo(x) is x
    r = tvmffi.from_dlpack(x)
    assert type(r) is tvmffi.Tensor
    assert r.shape == (3, 4) and r.strides == (4, 1)
    assert r.data_ptr() == x.data_ptr()
    y = torch.from_dlpack(r)
    y[0, 0] = 42
    assert x[0, 0] == 42
    n = np.from_dlpack(tvmffi.from_dlpack(x))
    n[2, 3] = -1
    assert x[2, 3] == -1


def test_capsule_input_and_consumption() -> None:
    a = np.arange(4.0)
    cap = a.__dlpack__()
    t = tvmffi.from_dlpack(cap)
    assert t.data_ptr() == a.ctypes.data
    with pytest.raises(ValueError, match="unconsumed"):
        tvmffi.from_dlpack(cap)  # renamed "used_dltensor"
    vcap = a.__dlpack__(max_version=(1, 0))
    assert tvmffi.from_dlpack(vcap).shape == (4,)
    with pytest.raises(ValueError, match="used_dltensor_versioned"):
        tvmffi.from_dlpack(vcap)


def test_from_dlpack_rejects_non_producers() -> None:
    with pytest.raises(TypeError, match="DLPack"):
        tvmffi.from_dlpack([1, 2, 3])
    with pytest.raises(TypeError, match="tensor"):
        tvmffi.from_dlpack(tvmffi.Array([1]))


def test_producer_check_follows_class_changes() -> None:
    # Whether a type is a DLPack producer is asked anew on each from_dlpack /
    # TensorView, so a class that gains or loses __dlpack__ is seen as it is now.
    class Late:
        def __init__(self) -> None:
            self.arr = np.arange(3.0)

    late = Late()
    with pytest.raises(TypeError, match="DLPack producer"):
        tvmffi.from_dlpack(late)
    with pytest.raises(TypeError, match="DLPack producer"):
        tvmffi.TensorView(late)
    Late.__dlpack__ = lambda self, **kw: self.arr.__dlpack__(**kw)  # type: ignore[attr-defined]
    assert tvmffi.from_dlpack(late).data_ptr() == late.arr.ctypes.data
    assert tvmffi.TensorView(late).data_ptr() == late.arr.ctypes.data
    del Late.__dlpack__  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="DLPack producer"):
        tvmffi.from_dlpack(late)
    with pytest.raises(TypeError, match="DLPack producer"):
        tvmffi.TensorView(late)


def test_require_contiguous_and_alignment() -> None:
    a = np.zeros((4, 4), dtype="float32")
    tvmffi.from_dlpack(a, require_contiguous=True)
    with pytest.raises(RuntimeError, match="contiguous"):
        tvmffi.from_dlpack(a[:, ::2], require_contiguous=True)
    raw = np.zeros(17, dtype="uint8")
    base = raw.ctypes.data
    off = 1 if base % 2 == 0 else 0  # an odd address
    with pytest.raises(RuntimeError, match="aligned"):
        tvmffi.from_dlpack(raw[off:], require_alignment=2)


def test_requirements_on_a_tensor() -> None:
    # A Tensor imports as itself; with a requirement it is checked and the
    # result wraps the same handle.
    t = tvmffi.from_dlpack(np.zeros((4, 4), dtype="float32"))
    assert tvmffi.from_dlpack(t) is t
    u = tvmffi.from_dlpack(t, require_contiguous=True, require_alignment=4)
    assert u is not t and u.same_as(t)
    strided = tvmffi.from_dlpack(np.zeros((4, 4), dtype="float32")[:, ::2])
    with pytest.raises(RuntimeError, match="contiguous"):
        tvmffi.from_dlpack(strided, require_contiguous=True)


# ---- dtypes --------------------------------------------------------------------------
NUMPY_DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
]  # fmt: skip


@pytest.mark.parametrize("name", NUMPY_DTYPES)
def test_numpy_dtype_round_trip(name: str) -> None:
    a = (np.arange(6) % 2).astype(name).reshape(2, 3)
    r = T.echo(a)
    assert r.dtype == tvmffi.dtype(np.dtype(name))
    assert str(r.dtype) == ("bool" if name == "bool" else name)
    b = np.from_dlpack(r)
    assert b.dtype == a.dtype and shares(a, b)
    np.testing.assert_array_equal(a, b)
    b[0, 0] = 1
    assert a[0, 0] == 1


TORCH_DTYPES = [
    ("bool", "bool"), ("int8", "int8"), ("int16", "int16"), ("int32", "int32"),
    ("int64", "int64"), ("uint8", "uint8"), ("uint16", "uint16"), ("uint32", "uint32"),
    ("uint64", "uint64"), ("float16", "float16"), ("bfloat16", "bfloat16"),
    ("float32", "float32"), ("float64", "float64"), ("complex64", "complex64"),
    ("complex128", "complex128"), ("float8_e4m3fn", "float8_e4m3fn"),
    ("float8_e5m2", "float8_e5m2"), ("float8_e4m3fnuz", "float8_e4m3fnuz"),
    ("float8_e5m2fnuz", "float8_e5m2fnuz"), ("float8_e8m0fnu", "float8_e8m0fnu"),
    ("float4_e2m1fn_x2", "float4_e2m1fnx2"),
]  # fmt: skip


def _torch_zeros(tdtype: Any, *shape: int) -> Any:
    """Zeros of torch dtype ``tdtype`` (one-byte float8/float4 types made by a view)."""
    if tdtype.itemsize == 1:
        return torch.zeros(*shape, dtype=torch.uint8).view(tdtype)
    return torch.zeros(*shape, dtype=tdtype)


def _torch_dlpack_has(tdtype: Any) -> bool:
    """Whether torch's own DLPack (``torch.from_dlpack``) carries ``tdtype``.

    torch < 2.10 has no DLPack codes for its float8 and float4 types (BufferError);
    the exchange API addon that tvmffi loads for such a torch has them.
    """
    try:
        torch.from_dlpack(_torch_zeros(tdtype, 1))
    except BufferError:
        return False
    return True


@needs_torch
@pytest.mark.parametrize(("torch_name", "ffi_name"), TORCH_DTYPES)
def test_torch_dtype_round_trip(torch_name: str, ffi_name: str) -> None:
    tdtype = getattr(torch, torch_name)
    assert tvmffi.dtype(tdtype) == tvmffi.dtype(ffi_name)
    assert str(tvmffi.dtype(tdtype)) == ffi_name
    x = _torch_zeros(tdtype, 2, 3)
    r = T.echo(tvmffi.from_dlpack(x))
    assert r.dtype == tvmffi.dtype(ffi_name)
    assert r.data_ptr() == x.data_ptr()
    if not _torch_dlpack_has(tdtype):
        pytest.skip(f"this torch's from_dlpack has no DLPack code for {torch_name}")
    y = torch.from_dlpack(r)
    assert y.dtype == tdtype and y.data_ptr() == x.data_ptr() and y.shape == x.shape


@needs_ml_dtypes
@needs_torch
@pytest.mark.parametrize(
    "name",
    ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
     "float8_e8m0fnu", "float8_e4m3", "float8_e3m4", "float8_e4m3b11fnuz"],
)  # fmt: skip
def test_ml_dtypes_arrays(name: str) -> None:
    dt = np.dtype(getattr(ml_dtypes, name))
    assert tvmffi.dtype(dt) == tvmffi.dtype(name)
    assert tvmffi.dtype(getattr(ml_dtypes, name)) == tvmffi.dtype(name)
    a = np.zeros(4, dtype=np.uint8).view(dt) if dt.itemsize == 1 else np.zeros(4, dtype=dt)
    r = T.echo(a)
    assert str(r.dtype) == name
    assert r.data_ptr() == a.ctypes.data
    tdtype = getattr(torch, name, None)
    if tdtype is not None and _torch_dlpack_has(tdtype):  # torch takes this dtype: same memory
        y = torch.from_dlpack(r)
        assert y.dtype == tdtype and y.data_ptr() == a.ctypes.data


@needs_ml_dtypes
def test_padded_subbyte_numpy_dtype_rejected() -> None:
    a = np.zeros(4, dtype=ml_dtypes.int4)
    with pytest.raises(ValueError, match=r"argument 0: .*sub-byte"):
        T.echo(a)


@needs_torch
def test_dtype_object_mapping() -> None:
    assert tvmffi.dtype(torch.float8_e4m3fn) == "float8_e4m3fn"
    assert tvmffi.dtype(torch.bfloat16).type_code == 4
    assert tvmffi.dtype(torch.bool) == "bool"
    assert tvmffi.dtype(np.float16) == "float16"
    assert tvmffi.dtype(np.dtype("complex64")) == "complex64"
    assert tvmffi.dtype("complex128").type_code == 5
    v = tvmffi.dtype("float32x4")
    assert (v.type_code, v.bits, v.lanes) == (2, 32, 4)
    assert str(tvmffi.dtype("float8_e5m2x2")) == "float8_e5m2x2"
    with pytest.raises(TypeError):
        tvmffi.dtype(torch.qint8)
    with pytest.raises(TypeError):
        tvmffi.dtype(np.dtype("O"))
    # As in the official binding, other objects are read by their str().
    with pytest.raises(ValueError):
        tvmffi.dtype(None)


# ---- layouts ------------------------------------------------------------------------
@needs_torch
def test_non_contiguous() -> None:
    a = np.arange(24, dtype="float64").reshape(4, 6)
    v = a[1:, ::2]
    r = T.echo(v)
    assert r.shape == (3, 3)
    assert r.strides == (6, 2)
    assert r.data_ptr() == v.ctypes.data
    b = np.from_dlpack(r)
    np.testing.assert_array_equal(b, v)
    b[0, 0] = -1
    assert a[1, 0] == -1
    tt = torch.from_dlpack(r)
    assert tt.stride() == (6, 2)
    ft = T.echo(np.asfortranarray(a))
    assert ft.strides == (1, 4)


@needs_torch
def test_zero_size_and_zero_dim() -> None:
    z = np.zeros((0, 3), dtype="int8")
    r = T.echo(z)
    assert r.shape == (0, 3)
    assert np.from_dlpack(r).shape == (0, 3)
    s = np.array(2.5)
    r = T.echo(s)
    assert r.shape == () and r.ndim == 0 and r.strides == ()
    assert float(np.from_dlpack(r)) == 2.5
    assert T.echo(torch.tensor(3)).shape == ()


def test_negative_strides() -> None:
    # DLPack strides are signed: reversed views pass unchanged (no copy).
    a = np.arange(6.0)
    v = a[::-1]
    r = T.echo(v)
    assert r.strides == (-1,)
    assert r.data_ptr() == v.ctypes.data
    b = np.from_dlpack(r)
    np.testing.assert_array_equal(b, v)
    b[0] = 50.0
    assert a[5] == 50.0
    # (torch.from_dlpack cannot take negative strides: PyTorch aborts on them,
    # the same as with NumPy's own export, so it is not exercised here.)


def test_strides_not_multiple_of_itemsize() -> None:
    rec = np.zeros(4, dtype=[("a", "i1"), ("b", "i4")])
    with pytest.raises(ValueError, match=r"argument 1: .*not multiples of its itemsize"):
        T.nop(1, rec["b"])
    # a dimension of extent 1 is never stepped over: accepted
    assert T.echo(rec["b"][:1]).shape == (1,)


def test_non_native_byte_order_and_object_dtype() -> None:
    swapped = np.arange(3, dtype=">i4" if sys.byteorder == "little" else "<i4")
    with pytest.raises(ValueError, match=r"argument 0: .*byte order"):
        T.echo(swapped)
    with pytest.raises(TypeError, match="argument 0"):
        T.echo(np.array([object()]))


def test_readonly_array() -> None:
    a = np.arange(3.0)
    a.flags.writeable = False
    # refused on every import route unless the import opts in (BufferError, as the official)
    for route in (
        lambda: tvmffi.from_dlpack(a),
        lambda: T.echo(a),
        lambda: T.echo([a]),
        lambda: tvmffi.TensorView(a),
        lambda: tvmffi.from_dlpack(a.__dlpack__(max_version=(1, 0))),
        lambda: tvmffi.from_dlpack(Box(a)),
        lambda: T.nop(Box(a)),
    ):
        with pytest.raises(BufferError, match="read-only"):
            route()
    t = tvmffi.from_dlpack(a, allow_read_only=True)
    assert t.data_ptr() == a.ctypes.data
    # the DLPack read-only flag travels with the opted-in tensor to every consumer
    assert np.from_dlpack(t).flags.writeable is False
    assert np.from_dlpack(T.echo(t)).flags.writeable is False  # argument, then result
    v = tvmffi.TensorView(a, allow_read_only=True)
    assert np.from_dlpack(v).flags.writeable is False
    assert np.from_dlpack(tvmffi.from_dlpack(v)).flags.writeable is False
    assert np.from_dlpack(T.echo([t])[0]).flags.writeable is False
    # versioned producers set the flag themselves
    cap = a.__dlpack__(max_version=(1, 0))
    t2 = tvmffi.from_dlpack(cap, allow_read_only=True)
    assert np.from_dlpack(t2).flags.writeable is False
    assert np.from_dlpack(tvmffi.from_dlpack(Box(a), allow_read_only=True)).flags.writeable is False
    # writable arrays stay writable
    b = np.arange(3.0)
    assert np.from_dlpack(tvmffi.from_dlpack(b)).flags.writeable is True
    assert np.from_dlpack(T.echo(b)).flags.writeable is True


def capsule_pointer(cap: Any) -> int:
    """Address of the DLManagedTensorVersioned in an unconsumed "dltensor_versioned" capsule."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return int(get(cap, b"dltensor_versioned"))


def capsule_flags(cap: Any) -> int:
    """DLManagedTensorVersioned.flags: after version (2 x uint32), manager_ctx, deleter."""
    return int(ctypes.c_uint64.from_address(capsule_pointer(cap) + 24).value)


def test_padded_subbyte_flag_rejected() -> None:
    # A versioned producer flagging padded sub-byte elements is refused (the
    # runtime's Tensor cannot describe them); the capsule is consumed and freed.
    a = np.zeros(4, dtype="uint8")
    ref = weakref.ref(a)
    cap = a.__dlpack__(max_version=(1, 0))
    flags = ctypes.c_uint64.from_address(capsule_pointer(cap) + 24)
    flags.value |= 4  # DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED
    with pytest.raises(ValueError, match="sub-byte"):
        tvmffi.from_dlpack(cap)
    del a, cap, flags
    gc.collect()
    assert ref() is None


@needs_torch
def test_readonly_export_to_torch() -> None:
    # torch has no read-only tensors and ignores the DLPack flag (as it does
    # for NumPy's own read-only export): it imports the memory as it is.
    a = np.arange(4.0)
    a.flags.writeable = False
    t = tvmffi.from_dlpack(a, allow_read_only=True)
    assert capsule_flags(t.__dlpack__(max_version=(1, 0))) & 1  # DLPACK_FLAG_BITMASK_READ_ONLY
    assert capsule_flags(tvmffi.from_dlpack(np.zeros(2)).__dlpack__(max_version=(1, 0))) == 0
    x = torch.from_dlpack(t)
    assert x.data_ptr() == a.ctypes.data
    assert torch.from_dlpack(a).data_ptr() == a.ctypes.data  # the same as NumPy's export
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]


# ---- lifetimes ----------------------------------------------------------------------
class Box:
    """A DLPack producer we can watch die."""

    def __init__(self, arr: np.ndarray) -> None:
        self.arr = arr

    def __dlpack__(self, **kw: Any) -> Any:
        return self.arr.__dlpack__(**kw)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.arr.__dlpack_device__()


@needs_torch
def test_source_lifetime() -> None:
    a = np.arange(1000, dtype="float32")
    ref = weakref.ref(a)
    t = tvmffi.from_dlpack(a)
    del a
    gc.collect()
    assert ref() is not None  # the tensor keeps the array alive
    np.testing.assert_array_equal(np.from_dlpack(t), np.arange(1000, dtype="float32"))
    back = torch.from_dlpack(t)
    del t
    gc.collect()
    assert ref() is not None  # ... and so does a consumer of the tensor
    assert float(back[999]) == 999.0
    del back
    gc.collect()
    assert ref() is None


def test_make_array_with_tensor_keeps_source_alive() -> None:
    a = np.arange(8, dtype="int32")
    ref = weakref.ref(a)
    arr = T.make_array_with_tensor(a)
    del a
    gc.collect()
    assert ref() is not None
    t = arr[0]
    assert isinstance(t, tvmffi.Tensor)
    np.testing.assert_array_equal(np.from_dlpack(t), np.arange(8, dtype="int32"))
    del arr, t
    gc.collect()
    assert ref() is None


@needs_torch
def test_last_reference_dropped_without_the_gil() -> None:
    # The runtime may drop a tensor's last reference with the GIL released
    # (ctypes releases it around foreign calls): the source is still released.
    lib = ctypes.CDLL(os.path.realpath(tvm_ffi.libinfo.find_libtvm_ffi()))
    for name in ("TVMFFIObjectIncRef", "TVMFFIObjectDecRef"):
        getattr(lib, name).argtypes = [ctypes.c_void_p]
        getattr(lib, name).restype = ctypes.c_int
    for kind in ("numpy", "torch", "view"):
        data = torch.arange(5.0) if kind == "torch" else np.arange(5.0)
        ref = weakref.ref(data)
        src = tvmffi.TensorView(data) if kind == "view" else data
        del data
        t = tvmffi.from_dlpack(src)
        handle = t.__chandle__()
        assert lib.TVMFFIObjectIncRef(handle) == 0
        del t, src
        gc.collect()
        assert ref() is not None
        assert lib.TVMFFIObjectDecRef(handle) == 0  # the last reference, GIL released
        gc.collect()
        assert ref() is None


@needs_torch
def test_torch_source_lifetime() -> None:
    x = torch.arange(5)
    ref = weakref.ref(x)
    ptr = x.data_ptr()
    arr = T.make_array_with_tensor(x)
    del x
    gc.collect()
    assert ref() is not None  # the kept Tensor holds the torch tensor
    assert arr[0].data_ptr() == ptr
    assert torch.from_dlpack(arr[0]).tolist() == [0, 1, 2, 3, 4]
    del arr
    gc.collect()
    assert ref() is None


@needs_torch
def test_refcounts_unchanged_after_many_calls() -> None:
    a = np.zeros((2, 2), dtype="float32")
    x = torch.zeros(3)
    t = tvmffi.from_dlpack(np.zeros(2))
    v = tvmffi.TensorView(a)
    before = (sys.getrefcount(a), sys.getrefcount(x), tvmffi._core.object_use_count(t))
    for _ in range(10000):
        T.nop(a, x, t, v)
        T.echo(a)
        T.echo(x)
    gc.collect()
    after = (sys.getrefcount(a), sys.getrefcount(x), tvmffi._core.object_use_count(t))
    assert after == before


def test_callback_receives_tensor() -> None:
    a = np.zeros(3, dtype="float32")
    seen = []

    def cb(t: Any) -> Any:
        seen.append(type(t))
        np.from_dlpack(t)[1] = 5.0
        return t

    r = T.apply(tvmffi.to_function(cb), a)
    assert seen == [tvmffi.Tensor]
    assert a[1] == 5.0
    assert r.data_ptr() == a.ctypes.data
    # a callback returning a NumPy array returns a tensor sharing it
    out = T.apply(tvmffi.to_function(lambda: a))
    assert out.data_ptr() == a.ctypes.data


# ---- TensorView ---------------------------------------------------------------------
def test_tensor_view() -> None:
    a = np.arange(6, dtype="int16").reshape(2, 3)
    v = tvmffi.TensorView(a)
    assert v.shape == (2, 3) and v.strides == (3, 1) and v.ndim == 2
    assert v.dtype == "int16" and v.device == tvmffi.cpu()
    assert v.data_ptr() == a.ctypes.data
    r = T.echo(v)  # travels as DLTensor*, comes back as the view's Tensor
    assert type(r) is tvmffi.Tensor
    assert r.shape == (2, 3) and r.data_ptr() == a.ctypes.data
    assert T.optional_tensor_view_has_value(v) is True
    b = np.from_dlpack(v)
    b[0, 0] = 9
    assert a[0, 0] == 9
    # converting a view into a Tensor keeps the view (and so the array) alive
    t = tvmffi.from_dlpack(v)
    assert t.data_ptr() == a.ctypes.data
    with pytest.raises(TypeError, match="DLPack"):
        tvmffi.TensorView(3)


@needs_torch
def test_tensor_view_keeps_managed_tensor_alive() -> None:
    src = np.arange(10.0)
    ref = weakref.ref(src)
    box = Box(src)
    v = tvmffi.TensorView(box)
    del box, src
    gc.collect()
    assert ref() is not None  # held by the consumed capsule's managed tensor
    assert np.from_dlpack(v)[9] == 9.0
    del v
    gc.collect()
    assert ref() is None
    x = torch.arange(4)
    vt = tvmffi.TensorView(x)
    assert vt.data_ptr() == x.data_ptr()
    t = tvmffi.from_dlpack(x)
    vv = tvmffi.TensorView(t)
    assert vv.data_ptr() == x.data_ptr() and vv.shape == (4,)


def test_tensor_view_of_capsules_releases_them() -> None:
    # A view consumes a legacy or versioned capsule and gives its managed
    # tensor back when the view dies.
    for max_version in (None, (1, 0)):
        src = np.arange(6.0)
        ref = weakref.ref(src)
        cap = src.__dlpack__() if max_version is None else src.__dlpack__(max_version=max_version)
        v = tvmffi.TensorView(cap)
        with pytest.raises(ValueError, match="used_dltensor"):
            tvmffi.TensorView(cap)
        del cap, src
        gc.collect()
        assert ref() is not None
        assert v.shape == (6,) and np.from_dlpack(v)[5] == 5.0
        del v
        gc.collect()
        assert ref() is None


def test_kept_tensor_view_becomes_tensor() -> None:
    # A callback result is kept by the caller: a raw DLTensor* would dangle,
    # so a returned view travels as a Tensor that keeps the view alive.
    a = np.arange(3.0)
    out = T.apply(tvmffi.to_function(lambda: tvmffi.TensorView(a)))
    assert type(out) is tvmffi.Tensor
    assert out.data_ptr() == a.ctypes.data and out.shape == (3,)


def test_tensor_view_inside_containers_becomes_tensor() -> None:
    # A container keeps its elements beyond the call: a view inside a list,
    # tuple or dict travels as a Tensor that keeps the view (and the array) alive.
    x = np.arange(6, dtype="float32")
    ref = weakref.ref(x)
    ptr = x.ctypes.data
    arr = T.echo([tvmffi.TensorView(x), 1])
    nested = T.echo([(tvmffi.TensorView(x),), [[tvmffi.TensorView(x)]]])
    mapping = T.echo({"k": tvmffi.TensorView(x)})
    del x
    gc.collect()
    assert ref() is not None
    for t in (arr[0], nested[0][0], nested[1][0][0], mapping["k"]):
        assert type(t) is tvmffi.Tensor
        assert t.data_ptr() == ptr and t.shape == (6,)
        np.testing.assert_array_equal(np.from_dlpack(t), np.arange(6, dtype="float32"))
    np.from_dlpack(arr[0])[2] = 42.0  # shares memory with the original array
    assert float(np.from_dlpack(mapping["k"])[2]) == 42.0
    del arr, nested, mapping, t
    gc.collect()
    assert ref() is None


def test_tensor_view_not_accepted_where_tensor_is_kept() -> None:
    # A direct view argument stays a DLTensor*; a callee that keeps a Tensor
    # refuses it instead of storing a pointer that would dangle.
    x = np.arange(3.0)
    with pytest.raises(TypeError, match="DLTensor"):
        T.make_array_with_tensor(tvmffi.TensorView(x))
    arr = T.echo([tvmffi.TensorView(x)])  # the container route makes it a Tensor
    assert T.make_array_with_tensor(arr[0])[0].data_ptr() == x.ctypes.data


def test_compact_strides_computed() -> None:
    # legacy producers may leave DLTensor.strides NULL for compact tensors
    for obj in (np.zeros((2, 3, 4)).__dlpack__(), np.zeros((2, 3, 4))):
        assert tvmffi.from_dlpack(obj).strides == (12, 4, 1)
    assert tvmffi.TensorView(Box(np.zeros((5, 2)))).strides == (2, 1)


# ---- DLPack export --------------------------------------------------------------------
def test_dlpack_export_arguments() -> None:
    a = np.arange(4.0)
    t = tvmffi.from_dlpack(a)
    cap = t.__dlpack__()
    assert "dltensor" in repr(cap) and "versioned" not in repr(cap)
    vcap = t.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(vcap)
    assert t.__dlpack__(max_version=(0, 8)) is not None
    assert t.__dlpack__(dl_device=(1, 0), copy=False, stream=None) is not None
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError):
        t.__dlpack__(copy=True)
    del cap, vcap  # unconsumed capsules release their tensors
    gc.collect()
    n = tvmffi._core.object_use_count(t)
    for _ in range(100):
        t.__dlpack__(max_version=(1, 0))
        t.__dlpack__()
    assert tvmffi._core.object_use_count(t) == n


# ---- the official binding ------------------------------------------------------------
def test_official_binding_interop() -> None:
    a = np.arange(5, dtype="int32")
    t = tvmffi.from_dlpack(a)
    # ours -> official -> numpy, same memory
    ot = tvm_ffi.from_dlpack(t)
    assert tuple(ot.shape) == (5,)
    assert ot.data_ptr() == a.ctypes.data
    # an official Tensor passed to our functions is its FFI object itself
    r = T.echo(ot)
    assert type(r) is tvmffi.Tensor and r.__chandle__() == ot.__chandle__()
    assert tvmffi.from_dlpack(ot).data_ptr() == a.ctypes.data
    # our Tensor passed to an official function is the same FFI object there
    # (__tvm_ffi_object__, which the official binding prefers to the DLPack
    # exchange API): it comes back as the official Tensor of the same handle
    o_echo = tvm_ffi.get_global_func("testing.echo")
    back = o_echo(t)
    assert isinstance(back, tvm_ffi.Tensor) and back.__chandle__() == t.__chandle__()
    assert back.data_ptr() == a.ctypes.data
    assert T.echo(back).same_as(t)
    assert tvmffi.from_dlpack(back).data_ptr() == a.ctypes.data
    np.from_dlpack(back)[0] = 77
    assert a[0] == 77
    # and an official function receiving a NumPy array returns a Tensor we can take
    assert tvmffi.from_dlpack(o_echo(a)).data_ptr() == a.ctypes.data


# ---- misbehaving producers -------------------------------------------------------------
class BadProducer:
    def __init__(self, arr: np.ndarray, mode: str) -> None:
        self.arr = arr
        self.mode = mode

    def __dlpack__(self, **kw: Any) -> Any:
        if self.mode == "returns_int":
            return 42
        if self.mode == "raises":
            raise RuntimeError("producer exploded")
        if self.mode == "raises_type":
            raise TypeError("bad call")
        if self.mode == "used_capsule":
            cap = self.arr.__dlpack__(**kw)
            tvmffi.from_dlpack(cap)  # consume it first
            return cap
        return self.arr.__dlpack__(**kw)

    def __dlpack_device__(self) -> Any:
        if self.mode == "device_str":
            return "cpu"
        if self.mode == "device_short":
            return (1,)
        if self.mode == "device_bad":
            return (-5, 0)
        if self.mode == "device_mismatch":
            return (2, 0)
        if self.mode == "device_raises":
            raise ValueError("no device")
        return (1, 0)


@pytest.mark.parametrize(
    ("mode", "exc", "pattern"),
    [
        ("returns_int", TypeError, r"argument 1: .*__dlpack__\(\) returned 'int'"),
        ("raises", ValueError, r"argument 1: .*RuntimeError: producer exploded"),
        ("raises_type", TypeError, r"argument 1: .*bad call"),
        ("used_capsule", ValueError, r"argument 1: .*used_dltensor"),
        ("device_str", TypeError, r"argument 1: .*__dlpack_device__\(\) returned 'cpu'"),
        ("device_short", TypeError, r"argument 1: .*__dlpack_device__"),
        ("device_bad", ValueError, r"argument 1: .*not a valid DLPack device"),
        ("device_mismatch", ValueError, r"argument 1: .*reports \(2, 0\)"),
        ("device_raises", ValueError, r"argument 1: .*no device"),
    ],
)
def test_misbehaving_producer(mode: str, exc: type[BaseException], pattern: str) -> None:
    base = np.arange(4.0)
    bad = BadProducer(base, mode)
    for _ in range(3):  # warm caches before counting
        with pytest.raises(exc, match=pattern):
            T.nop(0, bad)
    gc.collect()
    before = sys.getrefcount(base), sys.getrefcount(bad)
    for _ in range(50):
        with pytest.raises(exc, match=pattern):
            T.nop(0, bad)
        with pytest.raises((TypeError, ValueError)):
            tvmffi.from_dlpack(bad)
    gc.collect()
    assert (sys.getrefcount(base), sys.getrefcount(bad)) == before


def test_producer_exception_chained() -> None:
    bad = BadProducer(np.zeros(1), "raises")
    with pytest.raises(ValueError) as info:
        T.echo(bad)
    assert isinstance(info.value.__cause__, RuntimeError)


def test_legacy_and_versioned_producers() -> None:
    a = np.arange(3.0)
    caps: list[Any] = []

    class Legacy:
        def __dlpack__(self, stream: Any = None) -> Any:
            caps.append(a.__dlpack__())
            return caps[-1]

        def __dlpack_device__(self) -> tuple[int, int]:
            return (1, 0)

    class Versioned(Legacy):
        def __dlpack__(self, stream: Any = None, max_version: Any = None) -> Any:
            assert max_version == (1, 0)
            caps.append(a.__dlpack__(max_version=max_version))
            return caps[-1]

    assert T.echo(Legacy()).data_ptr() == a.ctypes.data
    assert "used_dltensor" in repr(caps[-1])
    assert T.echo(Versioned()).data_ptr() == a.ctypes.data
    assert "used_dltensor_versioned" in repr(caps[-1])


# ---- streams ------------------------------------------------------------------------------
@needs_torch
def test_use_raw_stream_sets_and_restores() -> None:
    dev = tvmffi.device("cuda:0")  # the environment stream is bookkeeping: no GPU needed
    assert tvmffi.get_raw_stream(dev) == 0
    with tvmffi.use_raw_stream(dev, 0x1234) as ctx:
        assert isinstance(ctx, tvmffi.StreamContext)
        assert tvmffi.get_raw_stream(dev) == 0x1234
        assert tvmffi.get_raw_stream(tvmffi.cuda(1)) == 0
        with tvmffi.use_raw_stream(dev, ctypes.c_void_p(0x5678)):
            assert tvmffi.get_raw_stream(dev) == 0x5678
        assert tvmffi.get_raw_stream(dev) == 0x1234
        with pytest.raises(KeyError), tvmffi.use_raw_stream(dev, 99):
            assert tvmffi.get_raw_stream(dev) == 99
            raise KeyError("x")
        assert tvmffi.get_raw_stream(dev) == 0x1234
    assert tvmffi.get_raw_stream(dev) == 0
    assert tvmffi.get_raw_stream(tvmffi.cpu()) == 0

    class S:
        cuda_stream = 0x5678

    # As in the official binding: raw handles only (use_torch_stream for torch's).
    with pytest.raises(ValueError, match="use_torch_stream"):
        tvmffi.use_raw_stream(dev, S())


def test_stream_context_and_tvmffi_aliases() -> None:
    dev = tvmffi.cuda(0)
    ctx = tvmffi.StreamContext(dev, 0x42)
    with ctx, ctx:  # re-entrant: each exit restores what its enter saw
        assert tvmffi.get_raw_stream(dev) == 0x42
    assert tvmffi.get_raw_stream(dev) == 0
    # tvmffi's earlier names: use_stream also takes stream objects and device names.
    assert tvmffi.use_stream is tvmffi.StreamContext
    assert tvmffi.current_stream is tvmffi.get_raw_stream

    class S:
        cuda_stream = 0x5678

    with tvmffi.use_stream("cuda:0", S()):
        assert tvmffi.current_stream(dev) == 0x5678
    with pytest.raises(TypeError):
        tvmffi.use_stream(dev, "stream")


@needs_torch
@pytest.mark.skipif(HAS_CUDA, reason="checks the CPU-only torch error")
def test_use_torch_stream_without_cuda_raises() -> None:
    ctx = tvmffi.use_torch_stream()
    with pytest.raises((AssertionError, RuntimeError)), ctx:
        pass
    assert tvmffi.get_raw_stream(tvmffi.cuda(0)) == 0


def test_producer_gets_environment_stream() -> None:
    # A CUDA producer is told the consumer's stream (array API `stream=`) when
    # an environment stream is set; here it only records what it was given.
    calls: list[dict[str, Any]] = []

    class FakeCuda:
        def __dlpack__(self, **kw: Any) -> Any:
            calls.append(kw)
            raise BufferError("not really a GPU array")

        def __dlpack_device__(self) -> tuple[int, int]:
            return (2, 0)

    with pytest.raises(ValueError, match=r"argument 0: .*not really a GPU array"):
        T.echo(FakeCuda())
    assert calls[-1] == {"max_version": (1, 0)}
    with tvmffi.use_raw_stream(tvmffi.cuda(0), 0x1234), pytest.raises(ValueError):
        T.echo(FakeCuda())
    assert calls[-1] == {"max_version": (1, 0), "stream": 0x1234}


@needs_torch
@needs_cuda
def test_cuda_tensor_device_recorded() -> None:
    x = torch.arange(6, device="cuda").reshape(2, 3)
    r = T.echo(tvmffi.from_dlpack(x))
    assert r.device == tvmffi.cuda(x.device.index or 0)
    assert r.__dlpack_device__() == (2, x.device.index or 0)
    assert r.data_ptr() == x.data_ptr()
    y = torch.from_dlpack(r)
    assert y.device == x.device and y.data_ptr() == x.data_ptr()


@needs_torch
@needs_cuda
def test_calls_use_torch_current_stream() -> None:
    x = torch.zeros(4, device="cuda")
    dev = tvmffi.cuda(x.device.index or 0)
    seen: list[int] = []
    probe = tvmffi.to_function(lambda t: seen.append(tvmffi.get_raw_stream(dev)))
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        T.apply(probe, x)
    assert seen[-1] == s.cuda_stream
    assert tvmffi.get_raw_stream(dev) == 0  # restored after the call
    with tvmffi.use_raw_stream(dev, 0xABC), torch.cuda.stream(s):
        T.apply(probe, x)  # an explicit stream context wins
    assert seen[-1] == 0xABC


def test_use_torch_stream_enters_torch_context_then_its_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A stand-in torch (no CUDA needed): the torch context is entered first, then torch's
    # current stream (read after it) is the environment stream of its device until exit;
    # a failure reading it leaves the torch context exited again.
    import types

    log: list[str] = []
    dev = tvmffi.cpu(0)

    class Current:
        device, cuda_stream = "cpu:0", 0x77

    class TorchContext:
        def __enter__(self) -> None:
            log.append("enter")

        def __exit__(self, *exc: Any) -> None:
            log.append("exit")

    fake = types.ModuleType("torch")
    fake.cuda = types.SimpleNamespace(current_stream=Current)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", fake)
    with tvmffi.use_torch_stream(TorchContext()):
        assert log == ["enter"] and tvmffi.get_raw_stream(dev) == 0x77
    assert log == ["enter", "exit"] and tvmffi.get_raw_stream(dev) == 0

    def broken() -> Any:
        raise RuntimeError("no CUDA")

    fake.cuda = types.SimpleNamespace(current_stream=broken)  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError, match="no CUDA"), tvmffi.use_torch_stream(TorchContext()):
        pass
    assert log == ["enter", "exit", "enter", "exit"]
