"""A NumPy array passed straight to a call lends itself to the call's Tensor.

The Tensor object a positional ndarray argument travels as takes no reference to
the array while the call runs (the caller holds it; on a free-threaded build
threads passing one array would otherwise all write its count). The reference is
taken when the callee keeps the Tensor, so what it kept outlives the caller's
array; every other outcome leaves the array's count as it was.
"""

from __future__ import annotations

import gc
import sys
import threading
import weakref
from typing import Any

import numpy as np
import pytest

import tvmffi

nop = tvmffi.get_global_func("testing.nop")
make_array = tvmffi.get_global_func("ffi.Array")


def _from_tensor(t: Any) -> np.ndarray:
    return np.from_dlpack(t)


def test_a_call_leaves_the_count_as_it_was() -> None:
    arr = np.arange(12, dtype="float32")
    before = sys.getrefcount(arr)
    for _ in range(100):
        nop(arr)
        nop(arr, arr, arr)  # one Tensor object for the three
    assert sys.getrefcount(arr) == before


def test_a_refused_argument_leaves_the_count_as_it_was() -> None:
    arr = np.arange(4, dtype="float64")
    arr.flags.writeable = False
    before = sys.getrefcount(arr)
    for _ in range(20):
        with pytest.raises(BufferError, match="read-only"):
            nop(arr)
    assert sys.getrefcount(arr) == before


def test_a_tensor_kept_by_the_callee_keeps_the_array_alive() -> None:
    arr = np.arange(1000, dtype="float64")
    alive = weakref.ref(arr)
    kept = make_array(arr)  # the runtime's Array keeps the call's Tensor
    del arr
    gc.collect()
    assert alive() is not None
    assert np.array_equal(_from_tensor(kept[0]), np.arange(1000, dtype="float64"))
    del kept
    gc.collect()
    assert alive() is None


def test_a_tensor_a_callback_keeps_keeps_the_array_alive() -> None:
    stash: list[Any] = []
    keep = tvmffi.convert(stash.append)
    arr = np.arange(6, dtype="int32")
    alive = weakref.ref(arr)
    keep(arr)
    del arr
    gc.collect()
    assert alive() is not None
    assert _from_tensor(stash[0]).tolist() == [0, 1, 2, 3, 4, 5]
    stash.clear()
    gc.collect()
    assert alive() is None


def test_threads_sharing_arrays_keep_counts_and_data() -> None:
    arrays = [np.full((8, 8), i, dtype="float32") for i in range(3)]
    before = [sys.getrefcount(a) for a in arrays]
    kept: list[list[Any]] = [[] for _ in range(8)]

    def work(k: int) -> None:
        a, b, c = arrays
        for i in range(300):
            nop(a, b, c)
            if i % 50 == 0:
                kept[k].append(make_array(a, b, c))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    held = [x for per in kept for x in per]
    assert len(held) == 48
    for arr_list in held:
        for i in range(3):
            assert float(_from_tensor(arr_list[i])[0, 0]) == i
    assert [sys.getrefcount(a) for a in arrays] == [n + 48 for n in before]
    del held, arr_list
    for per in kept:
        per.clear()
    gc.collect()
    assert [sys.getrefcount(a) for a in arrays] == before
