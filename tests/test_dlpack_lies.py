"""DLPack producers whose tensor description lies (issue 12): hand-made capsules
with arbitrary ndim, shape, device and dtype, through an argument and through
from_dlpack. A sound description imports with its shape; anything else raises
ValueError naming what was wrong; nothing crashes or reads out of bounds."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tvmffi
import tvmffi.testing as testing
from tvmffi import _core


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("major", ctypes.c_uint32),
        ("minor", ctypes.c_uint32),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

# The described memory must outlive every tensor made from it (the tensors
# here have no deleter and read the managed struct when released): kept for
# the whole test session.
_KEEP: list[Any] = []
_DATA = np.zeros(64, dtype=np.uint8)


def make_capsule(
    ndim: int,
    shape: list[int] | None,
    device: tuple[int, int] = (1, 0),
    dtype: tuple[int, int, int] = (2, 32, 1),
    versioned: bool = True,
) -> Any:
    """A capsule describing _DATA with the given (possibly lying) metadata.
    `shape` None means a NULL shape pointer; otherwise it is stored as given."""
    shape_arr = None if shape is None else (ctypes.c_int64 * max(len(shape), 1))(*shape)
    dl = DLTensor(
        data=_DATA.ctypes.data,
        device=DLDevice(*device),
        ndim=ndim,
        dtype=DLDataType(*dtype),
        shape=ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64)) if shape_arr else None,
        strides=None,
        byte_offset=0,
    )
    if versioned:
        mt: Any = DLManagedTensorVersioned(major=1, minor=0, dl_tensor=dl)
        name = b"dltensor_versioned"
    else:
        mt = DLManagedTensor(dl_tensor=dl)
        name = b"dltensor"
    _KEEP.append((mt, shape_arr))
    return _capsule_new(ctypes.addressof(mt), name, None)


class Producer:
    """A __dlpack__ producer handing out one prepared capsule."""

    def __init__(self, capsule: Any) -> None:
        self.capsule = capsule

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.capsule


def sound(
    ndim: int, shape: list[int] | None, device: tuple[int, int], dtype: tuple[int, int, int]
) -> bool:
    known_devices = {1, 2, 3, 4, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}
    code, bits, lanes = dtype
    return (
        0 <= ndim <= 64
        and (ndim == 0 or shape is not None)
        and device[0] in known_devices
        and device[1] >= 0
        and code <= 17
        and bits > 0
        and lanes > 0
        and all(d >= 0 for d in (shape or [])[:ndim])
        and _count(shape or [], ndim) < 2**63
    )


def _count(shape: list[int], ndim: int) -> int:
    n = 1
    for d in shape[:ndim]:
        n *= max(d, 1)
    return n


def import_both_ways(args: tuple[Any, ...], versioned: bool) -> list[Any]:
    """The tensor through from_dlpack(capsule) and as a call argument (a Producer)."""
    results = []
    for route in ("from_dlpack", "argument"):
        cap = make_capsule(*args, versioned=versioned)
        try:
            if route == "from_dlpack":
                results.append(tvmffi.from_dlpack(cap))
            else:
                results.append(testing.echo(Producer(cap)))
        except ValueError as e:
            results.append(e)
    return results


@pytest.mark.parametrize("versioned", [True, False])
@pytest.mark.parametrize(
    ("ndim", "shape", "what"),
    [
        (-1, [2], "ndim out of range"),
        (10**9, [2], "ndim out of range"),
        (65, [1] * 65, "ndim out of range"),
        (2, None, "no shape"),
        (2, [3, -4], "negative shape"),
        (3, [2**40, 2**40, 0], "shape too large"),
    ],
)
def test_lying_shapes_raise_value_error(
    ndim: int, shape: list[int] | None, what: str, versioned: bool
) -> None:
    for res in import_both_ways((ndim, shape), versioned):
        assert isinstance(res, ValueError) and what in str(res), res


def test_tensor_view_checks_the_description_too() -> None:
    with pytest.raises(ValueError, match="no shape"):
        tvmffi.TensorView(Producer(make_capsule(3, None)))
    with pytest.raises(ValueError, match="ndim out of range"):
        tvmffi.TensorView(make_capsule(10**9, [1], versioned=False))
    assert tvmffi.TensorView(Producer(make_capsule(1, [5]))).shape == (5,)


def test_argument_errors_name_the_argument() -> None:
    with pytest.raises(ValueError, match=r"argument 1: 'Producer' gave an invalid DLPack tensor"):
        testing.nop(0, Producer(make_capsule(-1, [1])))


@pytest.mark.parametrize(
    ("device", "dtype", "what"),
    [
        ((999, 0), (2, 32, 1), "unknown device"),
        ((1, -1), (2, 32, 1), "unknown device"),
        ((1, 0), (200, 32, 1), "unknown dtype"),
        ((1, 0), (2, 0, 1), "unknown dtype"),
        ((1, 0), (2, 32, 0), "unknown dtype"),
    ],
)
def test_unknown_device_and_dtype_raise_value_error(
    device: tuple[int, int], dtype: tuple[int, int, int], what: str
) -> None:
    for res in import_both_ways((1, [4], device, dtype), True):
        assert isinstance(res, ValueError) and what in str(res), res


def test_sound_description_still_imports() -> None:
    for res in import_both_ways((2, [3, 4], (1, 0), (2, 32, 1)), True):
        assert isinstance(res, tvmffi.Tensor) and res.shape == (3, 4)


def test_exchange_api_attribute_that_is_not_a_capsule_is_ignored() -> None:
    class IntApi:
        __dlpack_c_exchange_api__ = 12345

        def __init__(self) -> None:
            self.arr = np.arange(6, dtype=np.int32)

        def __dlpack__(self, **kwargs: Any) -> Any:
            return self.arr.__dlpack__(**kwargs)

        def __dlpack_device__(self) -> tuple[int, int]:
            return (1, 0)

    res = testing.echo(IntApi())  # through __dlpack__, not through address 12345
    assert res.shape == (6,)
    assert tvmffi.from_dlpack(IntApi()).shape == (6,)
    # Without __dlpack__ it is no tensor: an opaque Python object, as any other.
    plain = type("NoProtocol", (), {"__dlpack_c_exchange_api__": 12345})()
    assert testing.echo(plain) is plain


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ndim=st.one_of(st.integers(-3, 70), st.integers(-(2**31), 2**31 - 1)),
    shape_kind=st.sampled_from(["null", "match"]),
    dims=st.lists(st.one_of(st.integers(0, 8), st.integers(-(2**63), 2**63 - 1)), max_size=70),
    device=st.tuples(st.integers(-5, 40) | st.integers(-(2**31), 2**31 - 1), st.integers(-3, 3)),
    dtype=st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(0, 65535)),
    versioned=st.booleans(),
)
def test_arbitrary_descriptions_import_or_raise(
    ndim: int,
    shape_kind: str,
    dims: list[int],
    device: tuple[int, int],
    dtype: tuple[int, int, int],
    versioned: bool,
) -> None:
    # A shape array always holds at least ndim entries when it is there (a
    # shorter one is a lie no consumer can detect); ndim beyond it is refused
    # before the shape is read.
    shape: list[int] | None = None
    if shape_kind == "match":
        n = ndim if 0 <= ndim <= 64 else len(dims)
        shape = (dims + [1] * n)[:n] if n > 0 else [1]
    args = (ndim, shape, device, dtype)
    for res in import_both_ways(args, versioned):
        if sound(*args):
            assert isinstance(res, tvmffi.Tensor), res
            assert res.shape == tuple((shape or [])[:ndim])
        else:
            assert isinstance(res, ValueError), res
            assert "invalid DLPack tensor" in str(res)


# ---- a torch subclass whose exchange API's DLTensor fill lies ------------------
class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


_FILL = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(DLTensor))
_MANAGED = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


class _ExchangeAPI(ctypes.Structure):
    _fields_ = [
        ("version", _Version),
        ("prev_api", ctypes.c_void_p),
        ("managed_tensor_allocator", ctypes.c_void_p),
        ("managed_tensor_from_py_object_no_sync", _MANAGED),
        ("managed_tensor_to_py_object_no_sync", ctypes.c_void_p),
        ("dltensor_from_py_object_no_sync", _FILL),
        ("current_work_stream", ctypes.c_void_p),
    ]


def _lying_torch_class(ndim: int, shape: list[int] | None, dtype: tuple[int, int, int]) -> Any:
    """A torch.Tensor subclass whose exchange API fills the given description."""
    torch = pytest.importorskip("torch")
    shape_arr = None if shape is None else (ctypes.c_int64 * max(len(shape), 1))(*shape)

    def fill(_obj: int, out: Any) -> int:
        out[0] = DLTensor(
            data=_DATA.ctypes.data,
            device=DLDevice(1, 0),
            ndim=ndim,
            dtype=DLDataType(*dtype),
            shape=ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64)) if shape_arr else None,
            strides=None,
            byte_offset=0,
        )
        return 0

    def managed(_obj: int, _out: int) -> int:
        return -1  # never reached: torch tensors go through the fill

    api = _ExchangeAPI(
        version=_Version(1, 0),
        managed_tensor_from_py_object_no_sync=_MANAGED(managed),
        dltensor_from_py_object_no_sync=_FILL(fill),
    )
    _KEEP.append((api, shape_arr, fill, managed))
    capsule = _capsule_new(ctypes.addressof(api), b"dlpack_exchange_api", None)
    return type("LyingTensor", (torch.Tensor,), {"__dlpack_c_exchange_api__": capsule})


def test_only_torchs_own_exchange_api_is_trusted() -> None:
    # torch's own fill of its own tensors is not checked again; an API a subclass
    # hands over (here from ctypes memory) always is.
    torch = pytest.importorskip("torch")
    assert _core._tensor_route(torch.Tensor) == ("exchange", 1)
    lying = _lying_torch_class(1, [4], (2, 32, 1))
    assert _core._tensor_route(lying) == ("exchange", 0)
    # a subclass that keeps torch's API is torch's
    assert _core._tensor_route(type("Sub", (torch.Tensor,), {})) == ("exchange", 1)


@pytest.mark.parametrize(
    ("ndim", "shape", "dtype", "what"),
    [
        (-1, [4], (2, 32, 1), "ndim out of range"),
        (10**9, [4], (2, 32, 1), "ndim out of range"),
        (2, None, (2, 32, 1), "no shape"),
        (2, [4, -3], (2, 32, 1), "negative shape"),
        (3, [2**40, 2**40, 2**40], (2, 32, 1), "shape too large"),
        (1, [4], (99, 32, 1), "unknown dtype"),
    ],
)
def test_lying_torch_exchange_fill_raises(
    ndim: int, shape: list[int] | None, dtype: tuple[int, int, int], what: str
) -> None:
    torch = pytest.importorskip("torch")
    cls = _lying_torch_class(ndim, shape, dtype)
    t = torch.zeros(4).as_subclass(cls)
    nop = tvmffi.get_global_func("testing.nop")
    for _ in range(2):  # the Tensor objects of a failed call are released, none leaks
        with pytest.raises(ValueError, match=what):
            nop(torch.zeros(4), t)
    good = _lying_torch_class(2, [2, 3], (2, 32, 1))
    # the same route with a sound description: the callee sees the described shape
    arr = tvmffi.Array([torch.zeros(4).as_subclass(good)])
    assert tuple(arr[0].shape) == (2, 3)
