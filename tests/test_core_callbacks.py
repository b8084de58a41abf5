"""Python callables called by the FFI: arguments, results, nesting, threads."""

from __future__ import annotations

import ctypes
import gc
import threading
import weakref

import pytest
from conftest import array_items, map_get

import tvmffi
import tvmffi.testing as testing

apply = testing.apply


def test_args_arrive_as_python_values():
    received = {}
    fn_arg = tvmffi.get_global_func("testing.add_one")

    def cb(*args):
        received["args"] = args
        return "done"

    args = (
        None,
        True,
        7,
        2**80,
        1.25,
        "small",
        "a heap string of some length",
        b"raw",
        b"raw bytes beyond seven",
        tvmffi.cuda(3),
        tvmffi.dtype("float16"),
        ctypes.c_void_p(0x1000),
        fn_arg,
        [1, 2],
        {"k": "v"},
    )
    assert apply(cb, *args) == "done"
    got = received["args"]
    assert len(got) == len(args)
    (none, flag, i, big, f, s, hs, b, hb, dev, dt, ptr, fn, arr, m) = got
    assert none is None
    assert flag is True
    assert type(i) is int and i == 7
    assert type(big) is int and big == 2**80
    assert type(f) is float and f == 1.25
    assert type(s) is str and s == "small"
    # Heap strings and bytes arrive as the official String / Bytes (str / bytes subclasses).
    assert type(hs) is tvmffi.core.String and hs == "a heap string of some length"
    assert type(b) is bytes and b == b"raw"
    assert type(hb) is tvmffi.core.Bytes and hb == b"raw bytes beyond seven"
    assert type(dev) is tvmffi.Device and dev == tvmffi.cuda(3)
    assert type(dt) is tvmffi.dtype and dt == tvmffi.dtype("float16")
    assert type(ptr) is ctypes.c_void_p and ptr.value == 0x1000
    assert isinstance(fn, tvmffi.Function) and fn.same_as(fn_arg) and fn(1) == 2
    assert arr.type_key == "ffi.Array" and array_items(arr) == [1, 2]
    assert m.type_key == "ffi.Map" and map_get(m, "k") == "v"


@pytest.mark.parametrize(
    "result",
    [
        None,
        False,
        -3,
        2**100,
        -(2**100),
        3.5,
        "",
        "r",
        "result string > 7 bytes",
        b"\0\1",
        b"bytes result > 7",
        tvmffi.rocm(1),
        tvmffi.dtype("int4"),
    ],
    ids=repr,
)
def test_result_converted_back(result):
    out = apply(lambda: result)
    heap = {str: tvmffi.core.String, bytes: tvmffi.core.Bytes}
    if isinstance(result, (str, bytes)) and len(result) > 7:
        assert type(out) is heap[type(result)]  # heap forms, as the official binding
    else:
        assert type(out) is type(result)
    assert out == result


def test_result_containers_and_functions():
    arr = apply(lambda: [1, "two", 3.0])
    assert arr.type_key == "ffi.Array"
    assert array_items(arr) == [1, "two", 3.0]
    m = apply(lambda: {"a": [1]})
    assert m.type_key == "ffi.Map"
    assert array_items(map_get(m, "a")) == [1]
    inner = apply(lambda: lambda y: y * 2)
    assert isinstance(inner, tvmffi.Function)
    assert inner(21) == 42
    ptr = apply(lambda: ctypes.c_void_p(99))
    assert type(ptr) is ctypes.c_void_p and ptr.value == 99


def test_opaque_result_comes_back_as_itself():
    # As with the official binding: a result with no FFI conversion travels
    # as an opaque object and is the same Python object on the other side.
    value = object()
    assert apply(lambda: value) is value


def test_failing_result_conversion_raises_its_error():
    class Failing:
        def __tvm_ffi_int__(self):
            raise TypeError("Failing cannot convert")

    with pytest.raises(TypeError, match="Failing cannot convert"):
        apply(lambda: Failing())


def test_callback_keeps_arguments_beyond_the_call():
    # Arguments are borrowed from the caller; what the callback keeps must
    # become owned and stay valid after the call returns.
    kept = []
    fn = tvmffi.convert_func(lambda x: x + 5)

    def cb(*args):
        kept.extend(args)

    apply(cb, fn, "a string kept after the call", b"bytes kept after the call", [4, 5])
    gc.collect()
    f, s, b, arr = kept
    assert f(1) == 6
    assert s == "a string kept after the call"
    assert b == b"bytes kept after the call"
    assert array_items(arr) == [4, 5]


def test_callback_kwargs_rejected():
    fn = tvmffi.convert_func(lambda x=1: x)
    with pytest.raises(TypeError):
        fn(x=2)


def test_callback_wrong_arity_is_type_error():
    def two(a, b):
        return a + b

    with pytest.raises(TypeError):
        apply(two, 1)


def test_function_keeps_callable_alive_and_releases_it():
    class Callee:
        def __call__(self, x):
            return x * 2

    callee = Callee()
    ref = weakref.ref(callee)
    fn = tvmffi.convert_func(callee)
    del callee
    gc.collect()
    assert ref() is not None, "the Function must own a reference to the callable"
    assert fn(4) == 8
    del fn
    gc.collect()
    assert ref() is None, "dropping the Function must release the callable"


def test_temporary_callable_argument_released_after_call():
    class Callee:
        def __call__(self):
            return 1

    callee = Callee()
    ref = weakref.ref(callee)
    assert apply(callee) == 1
    del callee
    gc.collect()
    assert ref() is None


# ---- nesting -------------------------------------------------------------------


def test_nested_callbacks_three_deep():
    trail = []

    def level3(x):
        trail.append(("l3", x))
        return x * 2

    def level2(x):
        trail.append(("l2", x))
        return apply(level3, x + 1) + 1

    def level1(x):
        trail.append(("l1", x))
        return apply(level2, x + 1) + 1

    assert apply(level1, 1) == ((1 + 1 + 1) * 2 + 1) + 1
    assert trail == [("l1", 1), ("l2", 2), ("l3", 3)]


def test_callback_receives_and_calls_functions():
    def compose(f, g, x):
        return f(g(x))

    add_one = tvmffi.get_global_func("testing.add_one")
    assert apply(compose, add_one, lambda v: v * 10, 4) == 41


def test_recursive_callback_via_ffi():
    def fact(n):
        return 1 if n <= 1 else n * apply(fact, n - 1)

    assert apply(fact, 10) == 3628800


# ---- Python threads ------------------------------------------------------------


def test_callbacks_from_many_python_threads():
    nthreads, ncalls = 8, 1000
    barrier = threading.Barrier(nthreads)
    results: dict[int, list[int]] = {}
    errors: list[BaseException] = []

    def cb(tid, i):
        return tid * 100000 + i * 3

    def worker(tid):
        try:
            barrier.wait()
            out = [apply(cb, tid, i) for i in range(ncalls)]
            results[tid] = out
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(results) == list(range(nthreads))
    for tid, out in results.items():
        assert out == [tid * 100000 + i * 3 for i in range(ncalls)]


def test_shared_function_from_many_python_threads():
    counter = {"n": 0}
    lock = threading.Lock()

    def bump(k):
        with lock:
            counter["n"] += k
        return k

    fn = tvmffi.convert_func(bump)
    errors = []

    def worker():
        try:
            for _ in range(500):
                assert apply(fn, 2) == 2
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert counter["n"] == 8 * 500 * 2


# ---- native threads ------------------------------------------------------------


def test_callback_from_native_thread(native):
    seen = {}

    def cb(x):
        seen["native_id"] = threading.get_native_id()
        seen["ident"] = threading.get_ident()
        return x * 7 + 1

    fn = tvmffi.convert_func(cb)
    res = native.call_int(fn, 6, spawn=True)
    assert res["rc"] == 0, res
    assert res["out"] == 43
    assert seen["native_id"] != threading.get_native_id()
    assert seen["native_id"] == res["tid"]
    assert seen["ident"] != threading.get_ident()


def test_callback_from_native_caller_same_thread(native):
    seen = {}

    def cb(x):
        seen["native_id"] = threading.get_native_id()
        return -x

    res = native.call_int(tvmffi.convert_func(cb), 5, spawn=False)
    assert res["rc"] == 0, res
    assert res["out"] == -5
    assert seen["native_id"] == threading.get_native_id() == res["tid"]


def test_callbacks_from_many_native_threads_concurrently(native):
    thread_ids = set()
    lock = threading.Lock()

    def cb(x):
        with lock:
            thread_ids.add(threading.get_native_id())
        return x + 1

    nthreads, iters = 6, 200
    failures, total = native.call_concurrently(tvmffi.convert_func(cb), nthreads, iters)
    assert failures == 0
    expected = sum(t * 1000000 + i + 1 for t in range(nthreads) for i in range(iters))
    assert total == expected
    assert threading.get_native_id() not in thread_ids
    assert len(thread_ids) == nthreads


def test_python_function_registered_globally_called_from_native_thread(native, unique_name):
    tvmffi.register_global_func(unique_name, lambda x: x * x)
    fn = tvmffi.get_global_func(unique_name)
    res = native.call_int(fn, 12, spawn=True)
    assert res["rc"] == 0 and res["out"] == 144


def test_ffi_function_called_from_native_thread(native):
    res = native.call_int(tvmffi.get_global_func("testing.add_one"), 41, spawn=True)
    assert res["rc"] == 0 and res["out"] == 42
