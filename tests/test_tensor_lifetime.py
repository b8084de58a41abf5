"""Views and arrays with every writability and lifetime (issue 21 items 2 and 3).

Read-only memory is refused with ``BufferError`` on every import route unless
the import opts in (``allow_read_only=True``); a DLTensor* that reaches Python
comes back as a ``tvmffi.Tensor`` that keeps its source alive (a live
``TensorView``'s) or expires when the callback it was lent to returns.
"""

from __future__ import annotations

import gc
import os
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tvmffi
import tvmffi.testing as T

torch = pytest.importorskip("torch")

BIG = 1 << 21  # float64 elements: 16 MiB, freed back to the OS when dropped


class Producer:
    """A DLPack producer of the Python protocol only (no C exchange API)."""

    def __init__(self, arr: Any) -> None:
        self.arr = arr

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.arr.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


def _memmap(writable: bool, n: int) -> np.ndarray:
    fd, path = tempfile.mkstemp()
    with os.fdopen(fd, "wb") as fh:
        fh.write(np.arange(n, dtype="float64").tobytes())
    arr = np.memmap(path, dtype="float64", mode="r+" if writable else "r", shape=(n,))
    os.unlink(path)  # the mapping stays valid
    return arr


def make_source(kind: str, writable: bool, n: int) -> Any:
    """An array of ``n`` float64 values 0..n-1 of the given kind and writability."""
    if kind == "numpy":
        a = np.arange(n, dtype="float64")
        a.flags.writeable = writable
        return a
    if kind == "frombuffer":
        data = np.arange(n, dtype="float64").tobytes()
        return np.frombuffer(bytearray(data) if writable else data, dtype="float64")
    if kind == "memmap":
        return _memmap(writable, n)
    if kind == "protocol":
        return Producer(make_source("numpy", writable, n))
    assert kind == "torch"  # torch has no read-only tensors
    return torch.arange(n, dtype=torch.float64)


IMPORTS: dict[str, Callable[[Any, bool], Any]] = {
    "from_dlpack": lambda x, ok: tvmffi.from_dlpack(x, allow_read_only=ok),
    "Tensor": lambda x, ok: tvmffi.Tensor(x, allow_read_only=ok),
    "TensorView": lambda x, ok: tvmffi.TensorView(x, allow_read_only=ok),
    "argument": lambda x, ok: T.echo(x),
    "container element": lambda x, ok: T.echo([x])[0],
    "view, then argument": lambda x, ok: T.echo(tvmffi.TensorView(x, allow_read_only=ok)),
    "view, then callback": lambda x, ok: _kept_by_callback(
        tvmffi.TensorView(x, allow_read_only=ok)
    ),
}


def _kept_by_callback(view: Any) -> Any:
    kept: list[Any] = []
    T.apply(kept.append, view)
    return kept[0]


def _values(t: Any) -> np.ndarray:
    return np.from_dlpack(t) if not isinstance(t, torch.Tensor) else t.numpy()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(["numpy", "frombuffer", "memmap", "protocol", "torch"]),
    writable=st.booleans(),
    route=st.sampled_from(sorted(IMPORTS)),
    allow_read_only=st.booleans(),
    big=st.booleans(),
)
def test_every_writability_and_lifetime(
    kind: str, writable: bool, route: str, allow_read_only: bool, big: bool
) -> None:
    n = BIG if big else 5
    src = make_source(kind, writable, n)
    read_only = kind != "torch" and not writable
    opted_in = allow_read_only and route not in ("argument", "container element")
    if read_only and not opted_in:
        with pytest.raises(BufferError, match="read-only"):
            IMPORTS[route](src, allow_read_only)
        return
    result = IMPORTS[route](src, allow_read_only)
    del src  # the result alone keeps the memory alive
    gc.collect()
    got = _values(result)
    assert got.shape == (n,)
    assert got[0] == 0.0 and got[n - 1] == n - 1
    if not isinstance(result, torch.Tensor):
        assert got.flags.writeable is not read_only  # the flag travels


def test_echo_of_a_view_keeps_its_array_alive() -> None:
    a = np.arange(BIG, dtype="float64")
    r = T.echo(tvmffi.TensorView(a))
    assert type(r) is tvmffi.Tensor  # as the official binding's result
    del a
    gc.collect()
    assert np.from_dlpack(r)[BIG - 1] == BIG - 1


def test_callback_keeping_a_view_keeps_its_array_alive() -> None:
    a = np.arange(BIG, dtype="float64")
    kept: list[Any] = []
    T.apply(kept.append, tvmffi.TensorView(a))
    assert type(kept[0]) is tvmffi.Tensor
    del a
    gc.collect()
    assert np.from_dlpack(kept[0])[BIG - 1] == BIG - 1


def test_foreign_dltensor_is_a_tensor_until_the_callback_returns(native: Any) -> None:
    data = np.arange(4, dtype="float32")
    seen: list[Any] = []

    def callback(t: Any) -> None:
        seen.append(type(t))
        seen.append(np.from_dlpack(t).tolist())  # valid while the callback runs
        seen.append(t)  # kept beyond it

    assert native.call_with_dltensor(tvmffi.convert(callback), data.ctypes.data, 4) == 0
    assert seen[0] is tvmffi.Tensor  # the official binding gives a Tensor too
    assert seen[1] == [0.0, 1.0, 2.0, 3.0]
    kept = seen[2]
    for use in (lambda: np.from_dlpack(kept), lambda: kept.shape, lambda: kept.data_ptr()):
        with pytest.raises(ValueError, match="lent to a Python callback"):
            use()
    # whatever else got hold of it sees an empty tensor, never the caller's memory
    assert T.echo(tvmffi.Array([kept]))[0] is not None


def test_foreign_dltensor_copied_inside_the_callback_survives(native: Any) -> None:
    data = np.arange(4, dtype="float32")
    copies: list[np.ndarray] = []
    fn = tvmffi.convert(lambda t: copies.append(np.array(np.from_dlpack(t))))
    assert native.call_with_dltensor(fn, data.ctypes.data, 4) == 0
    assert copies[0].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_read_only_refused_like_the_official_binding() -> None:
    tvm_ffi = pytest.importorskip("tvm_ffi")
    a = np.frombuffer(b"\0" * 16, dtype="float64")
    for binding in (tvm_ffi, tvmffi):
        with pytest.raises(BufferError):
            binding.from_dlpack(a)
        with pytest.raises(BufferError):
            binding.get_global_func("testing.nop")(a)


def test_read_only_memmap_argument_names_the_argument() -> None:
    m = _memmap(False, 8)
    with pytest.raises(BufferError, match="argument 1: 'memmap' holds read-only memory"):
        T.nop(1, m)
    t = tvmffi.from_dlpack(m, allow_read_only=True)
    T.nop(1, t)  # the opted-in Tensor passes
    assert np.from_dlpack(T.echo(t)).flags.writeable is False
