"""``Object.__move_handle_from__(other)``: self takes other's FFI object, other is left empty.

The official binding's semantics (its ``core.pyi`` and ``test_function_subclass``): a
subclass of ``Function`` with a Python mixin, created empty, takes over a function
made elsewhere (CuTe DSL's compiled functions do this). The reference moves: the
object's count does not change, and it is released once, when the new owner dies.
A moved-from wrapper is empty (``__chandle__() == 0``) and raises when used.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
from typing import Any

import pytest

import tvmffi


class JitFunction:
    def __init__(self, metadata: Any) -> None:
        self.metadata = metadata


class MyFunction(tvmffi.Function, JitFunction):
    def __init__(self, metadata: Any) -> None:
        JitFunction.__init__(self, metadata)

    __call__ = tvmffi.Function.__call__


def _use_count(obj: tvmffi.Object) -> int:
    count: int = tvmffi.get_global_func("testing.object_use_count")(obj)
    return count - 1  # the argument itself holds one while the call runs


def test_function_subclass_takes_the_handle() -> None:
    f = tvmffi.convert(lambda x: x + 1)
    handle = f.__chandle__()
    g = MyFunction(128)
    assert g.__chandle__() == 0  # a subclass instance starts empty
    g.__move_handle_from__(f)
    assert isinstance(g, MyFunction) and isinstance(g, JitFunction)
    assert g.metadata == 128
    assert g.__chandle__() == handle
    assert f.__chandle__() == 0  # the source is left empty
    assert g(2) == 3
    echoed = tvmffi.get_global_func("testing.echo")(g)
    assert isinstance(echoed, tvmffi.Function)
    assert echoed.__chandle__() == handle
    assert echoed(10) == 11


def test_ownership_moves_exactly_once() -> None:
    keep_alive = object()
    base = sys.getrefcount(keep_alive)
    f = tvmffi.convert(lambda k=keep_alive: k)  # the defaults hold one reference
    assert sys.getrefcount(keep_alive) == base + 1
    count = _use_count(f)
    g = MyFunction(None)
    g.__move_handle_from__(f)
    assert _use_count(g) == count  # moved, not shared
    del f
    gc.collect()
    assert g() is keep_alive  # the empty source released nothing
    assert sys.getrefcount(keep_alive) == base + 1
    del g
    gc.collect()
    assert sys.getrefcount(keep_alive) == base  # released once, with its new owner


def test_registered_class_takes_an_object_of_its_type() -> None:
    a = tvmffi.Array([1, 2, 3])
    count = _use_count(a)
    b = tvmffi.Array.__new__(tvmffi.Array)
    b.__move_handle_from__(a)
    assert list(b) == [1, 2, 3]
    assert _use_count(b) == count
    assert a.__chandle__() == 0
    with pytest.raises(ValueError, match="no FFI handle"):
        len(a)
    with pytest.raises(ValueError, match="no FFI handle"):
        a[0]
    with pytest.raises(ValueError, match="no FFI handle"):
        tvmffi.get_global_func("testing.echo")(a)


def test_plain_object_takes_any_object() -> None:
    m = tvmffi.Map({"a": 1})
    o = tvmffi.Object.__new__(tvmffi.Object)
    o.__move_handle_from__(m)
    assert o.type_key == "ffi.Map"
    assert m.__chandle__() == 0


def test_refusals_leave_both_sides_unchanged() -> None:
    f = tvmffi.convert(lambda: 7)
    g = MyFunction(None)
    with pytest.raises(TypeError, match=r"expects a tvmffi\.Object, not int"):
        g.__move_handle_from__(3)  # type: ignore[arg-type]
    a = tvmffi.Array([1])
    with pytest.raises(TypeError, match=r"'ffi\.Function' objects, not 'ffi\.Array'"):
        g.__move_handle_from__(a)
    assert list(a) == [1] and g.__chandle__() == 0
    m = tvmffi.Map.__new__(tvmffi.Map)
    with pytest.raises(TypeError, match=r"'ffi\.Map' objects, not 'ffi\.Array'"):
        m.__move_handle_from__(a)
    g.__move_handle_from__(f)
    with pytest.raises(ValueError, match="holds no FFI handle"):
        MyFunction(None).__move_handle_from__(f)  # f was moved from already
    other = tvmffi.convert(lambda: 8)
    with pytest.raises(RuntimeError, match="already holds an FFI object"):
        g.__move_handle_from__(other)  # a handle, once set, is not replaced
    with pytest.raises(RuntimeError, match="already holds an FFI object"):
        g.__move_handle_from__(g)
    assert g() == 7 and other() == 8


def test_moved_from_function_raises_when_called() -> None:
    # In a subprocess: an empty function reaching the call path would crash.
    code = textwrap.dedent(
        """
        import tvmffi

        class Sub(tvmffi.Function):
            pass

        for f in (tvmffi.convert(lambda x: x), tvmffi.get_global_func("testing.echo")):
            s = Sub()
            s.__move_handle_from__(f)
            assert s(5) == 5
            for args in ((), (1,), (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)):
                try:
                    f(*args)
                except ValueError as err:
                    assert "holds no FFI function" in str(err), err
                else:
                    raise AssertionError("a moved-from function ran")
        print("OK")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "OK", proc.stderr[-3000:]
