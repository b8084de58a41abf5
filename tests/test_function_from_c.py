"""Functions from raw C symbols: ``Function.__from_extern_c__`` and
``Function.__from_mlir_packed_safe_call__`` (official semantics)."""

from __future__ import annotations

import gc
import sys
import weakref

import pytest

import tvmffi
import tvmffi.testing


def add_one_symbol() -> int:
    return int(tvmffi.get_global_func("testing.get_add_one_c_symbol")())


def mlir_add_one_symbol() -> int:
    return int(tvmffi.get_global_func("testing.get_mlir_add_one_c_symbol")())


def test_from_extern_c_calls_the_symbol() -> None:
    f = tvmffi.Function.__from_extern_c__(add_one_symbol())
    assert isinstance(f, tvmffi.Function)
    assert f(1) == 2
    assert f(41) == 42
    with pytest.raises(TypeError):
        f(None)
    # An FFI function like any other: passes by handle to another function.
    assert tvmffi.get_global_func("testing.apply")(f, 9) == 10


def test_from_extern_c_keeps_the_object_alive() -> None:
    keep_alive = [1, 2, 3]
    base = sys.getrefcount(keep_alive)
    f = tvmffi.Function.__from_extern_c__(add_one_symbol(), keep_alive_object=keep_alive)
    assert f(2) == 3
    assert sys.getrefcount(keep_alive) == base + 1
    del f
    gc.collect()
    assert sys.getrefcount(keep_alive) == base


def test_mlir_packed_safe_call_symbol_behaves_like_any_function() -> None:
    class Owner:  # stands for the JIT engine that owns the compiled code
        pass

    owner = Owner()
    gone = weakref.ref(owner)
    f = tvmffi.Function.__from_mlir_packed_safe_call__(
        mlir_add_one_symbol(), keep_alive_object=owner
    )
    del owner
    # Called from Python and from C (testing.apply).
    assert [f(v) for v in (-5, 0, 2**20)] == [-4, 1, 2**20 + 1]
    assert tvmffi.get_global_func("testing.apply")(f, 99) == 100
    # The symbol's own type check surfaces as TypeError, and the function still works after.
    with pytest.raises(TypeError):
        f("seven")
    assert f(6) == 7
    # Stored in a container, the function (and what it keeps alive) outlives the Python name.
    held = tvmffi.Array([f])
    del f
    gc.collect()
    assert gone() is not None and held[0](1) == 2
    del held
    gc.collect()
    assert gone() is None


@pytest.mark.parametrize(
    "factory",
    [tvmffi.Function.__from_extern_c__, tvmffi.Function.__from_mlir_packed_safe_call__],
    ids=["extern_c", "mlir"],
)
def test_bad_symbols_raise(factory: object) -> None:
    make = factory  # type: ignore[assignment]
    with pytest.raises(ValueError, match="NULL"):
        make(0)  # type: ignore[operator]
    with pytest.raises(TypeError, match="int address"):
        make("0x1234")  # type: ignore[operator]
    with pytest.raises(TypeError):
        make(add_one_symbol(), object())  # type: ignore[operator]  # keyword-only


def test_official_binding_sees_the_same_function() -> None:
    tvm_ffi = pytest.importorskip("tvm_ffi")
    f = tvmffi.Function.__from_extern_c__(add_one_symbol())
    assert tvm_ffi.get_global_func("testing.apply")(f, 1) == 2
