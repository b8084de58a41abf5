"""Reference counts stay balanced across many calls, on both sides of the ABI."""

from __future__ import annotations

import gc
import sys

import pytest

import tvmffi
import tvmffi.testing as testing
from tvmffi._core import object_use_count

N = 10_000
echo = testing.echo
apply = testing.apply
nop = testing.nop


def _refcount_after(value, loop):
    gc.collect()
    before = sys.getrefcount(value)
    loop(value)
    gc.collect()
    return before, sys.getrefcount(value)


def _echo_loop(value):
    for _ in range(N):
        echo(value)


def _nop_loop(value):
    for _ in range(N):
        nop(value)


@pytest.mark.parametrize(
    "value",
    [
        "small",
        "a heap string well beyond seven bytes",
        "日本語のテキスト",
        b"bytes beyond seven bytes",
        bytearray(b"bytearray payload"),
        [1, "two", [3]],
        (4, 5),
        {"k": [1, 2]},
        2**100,
        12345678901,
        3.25,
        tvmffi.cpu(1),
        tvmffi.dtype("float32"),
    ],
    ids=lambda v: type(v).__name__,
)
@pytest.mark.parametrize("loop", [_echo_loop, _nop_loop], ids=["echo", "nop"])
def test_argument_refcount_unchanged(value, loop):
    before, after = _refcount_after(value, loop)
    assert after == before


def test_list_items_refcounts_unchanged():
    item = "an item string that is long enough for the heap"
    lst = [item, item, [item]]
    gc.collect()
    before_item, before_list = sys.getrefcount(item), sys.getrefcount(lst)
    for _ in range(N):
        echo(lst)
    gc.collect()
    assert sys.getrefcount(item) == before_item
    assert sys.getrefcount(lst) == before_list


def test_callable_refcount_unchanged_through_echo_and_apply():
    def cb(x):
        return x

    gc.collect()
    before = sys.getrefcount(cb)
    for i in range(N):
        assert apply(cb, i) == i
    for _ in range(N):
        echo(cb)
    gc.collect()
    assert sys.getrefcount(cb) == before


def test_callback_argument_and_result_refcounts_unchanged():
    payload = "callback payload long enough for a heap String"
    result = ["kept"]

    def cb(x):
        return result

    gc.collect()
    before_payload, before_result = sys.getrefcount(payload), sys.getrefcount(result)
    for _ in range(N):
        apply(cb, payload)
    gc.collect()
    assert sys.getrefcount(payload) == before_payload
    assert sys.getrefcount(result) == before_result


def test_function_python_refcount_unchanged():
    fn = tvmffi.convert_func(lambda x: x + 1)
    gc.collect()
    before = sys.getrefcount(fn)
    for i in range(N):
        assert apply(fn, i) == i + 1
    for _ in range(N):
        echo(fn)
    gc.collect()
    assert sys.getrefcount(fn) == before


def test_function_ffi_use_count_unchanged():
    fn = tvmffi.convert_func(lambda x: x)
    base = object_use_count(fn)
    assert base == 1
    for i in range(N):
        apply(fn, i)
    assert object_use_count(fn) == base
    for _ in range(N):
        echo(fn)
    assert object_use_count(fn) == base
    for _ in range(N):
        nop(fn, fn, [fn])
    assert object_use_count(fn) == base


def test_ffi_use_count_tracks_live_references():
    fn = tvmffi.convert_func(lambda: 0)
    assert object_use_count(fn) == 1
    r = echo(fn)  # a new wrapper of the same handle, as officially
    assert r.same_as(fn) and r is not fn
    assert object_use_count(fn) == 2
    del r
    assert object_use_count(fn) == 1
    arr = echo([fn, fn])  # the Array holds two more
    assert object_use_count(fn) == 3
    again = arr[0]  # a second Python wrapper owning a fourth reference
    assert again.same_as(fn) and again is not fn
    assert object_use_count(fn) == 4
    del again
    gc.collect()
    assert object_use_count(fn) == 3
    del arr
    gc.collect()
    assert object_use_count(fn) == 1


def test_global_function_use_count_unchanged():
    fn = tvmffi.get_global_func("testing.add_one")
    base = object_use_count(fn)
    for i in range(N):
        assert fn(i) == i + 1
        apply(fn, i)
    assert object_use_count(fn) == base


def test_array_object_use_count_unchanged():
    arr = echo([1, 2, 3])
    assert object_use_count(arr) == 1
    for _ in range(N):
        echo(arr)
        nop(arr)
    assert object_use_count(arr) == 1


def test_runtime_side_use_count_agrees():
    # The runtime's own view of the count matches ours (the argument itself
    # is a borrowed view, so the runtime sees exactly our references).
    arr = echo(["x"])
    assert testing.object_use_count(arr) == object_use_count(arr) == 1


def test_errors_do_not_leak_arguments():
    payload = "an argument of a failing call, heap allocated"

    def boom(x):
        raise ValueError("no")

    gc.collect()
    before_payload, before_cb = sys.getrefcount(payload), sys.getrefcount(boom)
    for _ in range(2000):
        with pytest.raises(ValueError):
            apply(boom, payload)
    gc.collect()
    assert sys.getrefcount(payload) == before_payload
    assert sys.getrefcount(boom) == before_cb


class _Failing:
    """Conversion raises (through the __tvm_ffi_int__ protocol)."""

    def __tvm_ffi_int__(self):
        raise TypeError("_Failing cannot convert")


def test_conversion_failure_does_not_leak():
    item = "string item that is long enough to be heap allocated"
    lst = [item, _Failing()]
    gc.collect()
    before = sys.getrefcount(item)
    for _ in range(2000):
        with pytest.raises(TypeError):
            echo(lst)
    gc.collect()
    assert sys.getrefcount(item) == before


def test_failed_many_argument_call_does_not_leak():
    # More than eight arguments take the heap packing path; the failure comes
    # after a dozen converted (and partly heap-allocated) arguments.
    item = "a heap allocated string argument for the failing call"
    gc.collect()
    before = sys.getrefcount(item)
    for _ in range(2000):
        with pytest.raises(TypeError):
            nop(*([item] * 12), [item], _Failing())
    gc.collect()
    assert sys.getrefcount(item) == before
