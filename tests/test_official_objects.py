"""One object world with the official binding (``tvm_ffi``), both directions.

Objects of the official binding's classes, and of subclasses defined in any
module, are FFI objects to tvmffi (same handle, no copy); tvmffi's objects are
FFI objects to the official binding through ``__tvm_ffi_object__``, and
``Device`` / ``dtype`` through the DLPack protocols.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tvm_ffi
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tvmffi
from tvmffi._core import object_use_count

echo = tvmffi.get_global_func("testing.echo")


# ---- tvmffi objects out ---------------------------------------------------------
def test_tvmffi_containers_are_ffi_objects_to_official() -> None:
    # Before: "Expected ffi.Array but got ffi.OpaquePyObject".
    assert tvm_ffi.get_global_func("ffi.ArraySize")(tvmffi.Array([1, 2, 3])) == 3
    assert tvm_ffi.get_global_func("ffi.MapSize")(tvmffi.Map({"a": 1, "b": 2})) == 2
    shape = tvmffi.Shape((2, 3))
    assert tvm_ffi.get_global_func("testing.echo")(shape) == (2, 3)


@pytest.mark.parametrize(
    "make",
    [
        lambda: tvmffi.Array([1, "x"]),
        lambda: tvmffi.Map({"k": 1}),
        lambda: tvmffi.get_global_func("testing.echo"),
        lambda: tvmffi.from_dlpack(np.arange(4.0)),
        lambda: tvmffi.system_lib(),
    ],
    ids=["array", "map", "function", "tensor", "module"],
)
def test_tvm_ffi_object_same_handle_and_identity(make: Any) -> None:
    ours = make()
    official = ours.__tvm_ffi_object__()
    assert isinstance(official, tvm_ffi.core.CObject)
    assert official.__chandle__() == ours.__chandle__()
    # Crossing through the official binding and back keeps identity.
    back = echo(tvm_ffi.get_global_func("testing.echo")(ours))
    assert back.same_as(ours)
    assert echo(official).same_as(ours)


def test_tvm_ffi_object_class_is_the_official_one() -> None:
    assert isinstance(tvmffi.Array([1]).__tvm_ffi_object__(), tvm_ffi.Array)
    assert isinstance(tvmffi.get_global_func("testing.echo").__tvm_ffi_object__(), tvm_ffi.Function)
    t = tvmffi.from_dlpack(np.arange(6, dtype="int32").reshape(2, 3))
    ot = t.__tvm_ffi_object__()
    assert isinstance(ot, tvm_ffi.Tensor)
    assert ot.shape == (2, 3)
    np.testing.assert_array_equal(np.from_dlpack(ot), np.arange(6).reshape(2, 3))
    assert isinstance(tvmffi.system_lib().__tvm_ffi_object__(), tvm_ffi.Module)


def test_tvmffi_function_called_by_official_is_not_a_trampoline() -> None:
    f = tvmffi.get_global_func("testing.add_one")
    official_apply = tvm_ffi.get_global_func("testing.apply")
    assert official_apply(f, 41) == 42
    # The official binding sees the very function object (same handle).
    assert tvm_ffi.get_global_func("testing.echo")(f).__chandle__() == f.__chandle__()


def test_tvm_ffi_object_balances_references() -> None:
    arr = tvmffi.Array([1, 2])
    base = object_use_count(arr)
    for _ in range(50):
        official = arr.__tvm_ffi_object__()
        assert official.__chandle__() == arr.__chandle__()
        del official
        tvm_ffi.get_global_func("ffi.ArraySize")(arr)
    assert object_use_count(arr) == base


def test_empty_object_has_no_official_object() -> None:
    with pytest.raises(ValueError, match="holds no FFI handle"):
        tvmffi.Object().__tvm_ffi_object__()


def test_export_global_refuses_direct_calls() -> None:
    # The hand-over function only answers a __tvm_ffi_object__ call.
    with pytest.raises(ValueError, match="__tvm_ffi_object__"):
        tvmffi.get_global_func("tvmffi.__export_object__")()
    with pytest.raises(ValueError, match="__tvm_ffi_object__"):
        tvm_ffi.get_global_func("tvmffi.__export_object__")(1)


def test_device_and_dtype_dlpack_protocols() -> None:
    dev = tvmffi.Device("cuda", 1)
    assert dev.__dlpack_device__() == (2, 1)
    assert tvmffi.cpu(0).__dlpack_device__() == (1, 0)
    dt = tvmffi.dtype("float32x4")
    assert dt.__dlpack_data_type__() == (2, 32, 4)
    assert tvmffi.dtype("bfloat16").__dlpack_data_type__() == (4, 16, 1)
    official_echo = tvm_ffi.get_global_func("testing.echo")
    back_dev = official_echo(dev)
    assert (back_dev.dlpack_device_type(), back_dev.index) == (2, 1)
    assert str(official_echo(dt)) == "float32x4"


# ---- official objects in ----------------------------------------------------------
def test_official_objects_convert_by_handle() -> None:
    arr = tvm_ffi.convert([1, 2, 3])
    assert tvmffi.get_global_func("ffi.ArraySize")(arr) == 3
    got = echo(arr)
    assert isinstance(got, tvmffi.Array)
    assert got.__chandle__() == arr.__chandle__()
    m = tvm_ffi.convert({"a": 1})
    assert echo(m).__chandle__() == m.__chandle__()


def test_official_object_subclass_from_another_module() -> None:
    # A tvm_ffi.Function subclass defined outside tvm_ffi (as CuTe DSL makes) is
    # the function itself, not a new Python callback around it.
    ns: dict[str, Any] = {"tvm_ffi": tvm_ffi, "__name__": "some_package.objects"}
    exec(
        "class Sub(tvm_ffi.Function):\n    pass\n",
        ns,
    )
    sub_cls = ns["Sub"]
    assert sub_cls.__module__ == "some_package.objects"
    add_one = tvm_ffi.get_global_func("testing.add_one")
    sub = sub_cls.__new__(sub_cls)
    sub.__move_handle_from__(tvm_ffi.get_global_func("testing.add_one"))
    assert sub.__chandle__() == add_one.__chandle__()
    got = echo(sub)
    assert isinstance(got, tvmffi.Function)
    assert got.__chandle__() == add_one.__chandle__()
    assert got(1) == 2


def test_official_tensor_converts_by_handle() -> None:
    x = tvm_ffi.from_dlpack(np.arange(5.0))
    got = echo(x)
    assert isinstance(got, tvmffi.Tensor)
    assert got.__chandle__() == x.__chandle__()
    np.testing.assert_array_equal(np.from_dlpack(got), np.arange(5.0))


def test_official_shape_stays_a_shape() -> None:
    shape = tvm_ffi.Shape((4, 5))
    got = echo(shape)
    assert isinstance(got, tvmffi.Shape)
    assert tuple(got) == (4, 5)


def test_official_empty_object_raises() -> None:
    empty = tvm_ffi.core.Object.__new__(tvm_ffi.core.Object)
    with pytest.raises(ValueError, match=r"argument 0: .*holds no FFI handle"):
        echo(empty)


def test_official_handles_balanced() -> None:
    arr = tvm_ffi.convert([1, 2])
    ours = echo(arr)
    base = object_use_count(ours)
    for _ in range(50):
        echo(arr)
    del ours
    assert object_use_count(echo(arr)) == base


# ---- views the official binding hands to callbacks -----------------------------------
def test_official_view_in_callback_converts(native: Any) -> None:
    # A callback registered with the official binding receives a DLTensor* as a
    # tvm_ffi.Tensor whose handle is 0; tvmffi converts it from its fields.
    data = np.arange(3, dtype="float32")
    seen: list[Any] = []

    def callback(view: Any) -> None:
        assert view.__chandle__() == 0
        t = echo(tvmffi.Array([view]))[0]  # kept in a container: becomes a Tensor
        seen.append((tuple(t.shape), np.from_dlpack(t).tolist()))
        seen.append(tvmffi.get_global_func("testing.echo")(view).shape)

    rc = native.call_with_dltensor(tvm_ffi.convert(callback), data.ctypes.data, 3)
    assert rc == 0
    assert seen[0] == ((3,), [0.0, 1.0, 2.0])
    assert tuple(seen[1]) == (3,)


def test_official_view_with_null_data_raises(native: Any) -> None:
    errors: list[BaseException] = []

    def callback(view: Any) -> None:
        try:
            echo(view)
        except BaseException as err:
            errors.append(err)

    assert native.call_with_dltensor(tvm_ffi.convert(callback), None, 3) == 0
    assert len(errors) == 1
    assert isinstance(errors[0], ValueError)
    assert "NULL data" in str(errors[0])


# ---- __tvm_ffi_object__ of foreign classes ------------------------------------------
def test_tvm_ffi_object_protocol_returning_non_object_raises() -> None:
    class Bad:
        def __tvm_ffi_object__(self) -> Any:
            return 42

    with pytest.raises(TypeError, match="__tvm_ffi_object__"):
        echo(Bad())


def test_tvm_ffi_object_protocol_returning_official_object() -> None:
    arr = tvm_ffi.convert([7])

    class Holder:
        def __tvm_ffi_object__(self) -> Any:
            return arr

    got = echo(Holder())
    assert got.__chandle__() == arr.__chandle__()


def test_official_view_through_from_dlpack_and_tensor_view(native: Any) -> None:
    # from_dlpack / TensorView of a handle-less official view read its DLTensor
    # (calling the view's __dlpack__ crashes inside tvm_ffi).
    data = np.arange(3, dtype="float32")
    seen: list[Any] = []
    errors: list[BaseException] = []

    def callback(view: Any) -> None:
        seen.append(np.from_dlpack(tvmffi.from_dlpack(view)).tolist())
        seen.append(tuple(tvmffi.TensorView(view).shape))

    def null_callback(view: Any) -> None:
        for convert in (tvmffi.from_dlpack, tvmffi.TensorView):
            try:
                convert(view)
            except ValueError as err:
                errors.append(err)

    assert native.call_with_dltensor(tvm_ffi.convert(callback), data.ctypes.data, 3) == 0
    assert seen == [[0.0, 1.0, 2.0], (3,)]
    assert native.call_with_dltensor(tvm_ffi.convert(null_callback), None, 3) == 0
    assert len(errors) == 2
    assert all("NULL data" in str(err) for err in errors)


def test_from_dlpack_of_official_tensor_keeps_the_handle() -> None:
    official = tvm_ffi.from_dlpack(np.arange(4, dtype="int64"))
    ours = tvmffi.from_dlpack(official)
    assert ours.__chandle__() == official.__chandle__()
    np.testing.assert_array_equal(np.from_dlpack(ours), np.arange(4))


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    shape=st.lists(st.integers(min_value=-2, max_value=4), max_size=4),
    null_data=st.booleans(),
)
def test_official_views_of_any_shape(native: Any, shape: list[int], null_data: bool) -> None:
    # A handle-less view converts iff its shape is readable and its data is there
    # (or it has no elements); otherwise ValueError, never a crash.
    buffer = np.zeros(max(1, int(np.prod([max(d, 0) for d in shape]))), dtype="float32")
    outcome: list[Any] = []

    def callback(view: Any) -> None:
        try:
            outcome.append(tuple(echo(view).shape))
        except ValueError as err:
            outcome.append(err)

    data = None if null_data else buffer.ctypes.data
    assert native.call_with_dltensor_nd(tvm_ffi.convert(callback), data, shape) == 0
    (got,) = outcome
    bad = any(d < 0 for d in shape) or (null_data and all(d != 0 for d in shape))
    if bad:
        assert isinstance(got, ValueError)
    else:
        assert got == tuple(shape)
