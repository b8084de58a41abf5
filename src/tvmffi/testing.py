"""Functions and types of the runtime's testing library (``libtvm_ffi_testing``).

Importing this module loads ``libtvm_ffi_testing.so`` from the same
``apache-tvm-ffi`` wheel as the runtime, which registers the ``testing.*``
global functions and object types. Every ``testing.<name>`` global is available
here as an attribute (e.g. ``tvmffi.testing.echo``), and the testing object
types have their classes here, as in the official ``tvm_ffi.testing``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any, TypeVar

from ._core import Function, Object
from ._lib import load_library, testing_lib_path
from .object import _lookup_type_attr, register_object
from .registry import get_global_func

load_library(testing_lib_path())

echo: Function = get_global_func("testing.echo")
nop: Function = get_global_func("testing.nop")
apply: Function = get_global_func("testing.apply")
add_one: Function = get_global_func("testing.add_one")
test_raise_error: Function = get_global_func("testing.test_raise_error")
run_check_signal: Function = get_global_func("testing.run_check_signal")

_C = TypeVar("_C", bound=type)


def _register(type_key: str) -> Any:
    """``register_object(type_key)``, skipping types an older testing library lacks."""

    def decorator(cls: _C) -> _C:
        if type_key in _TYPE_KEYS:
            return register_object(type_key)(cls)  # type: ignore[no-any-return]
        return cls

    return decorator


_TYPE_KEYS = frozenset(get_global_func("ffi.GetRegisteredTypeKeys")())


def create_object(type_key: str, **kwargs: Any) -> Object:
    """An object of ``type_key`` made by reflection, fields set from ``kwargs``."""
    args: list[Any] = [type_key]
    for k, v in kwargs.items():
        args.append(k)
        args.append(v)
    return get_global_func("ffi.MakeObjectFromPackedArgs")(*args)  # type: ignore[no-any-return]


def make_unregistered_object() -> Object:
    """An object of a type no Python class is registered for."""
    return get_global_func("testing.make_unregistered_object")()  # type: ignore[no-any-return]


@_register("testing.TestObjectBase")
class TestObjectBase(Object):
    """Test object base class (fields ``v_i64``, ``v_f64``, ``v_str``; ``add_i64``)."""

    __slots__ = ()
    __test__ = False


@_register("testing.TestIntPair")
class TestIntPair(Object):
    """Test int pair (fields ``a``, ``b``; ``sum()``)."""

    __slots__ = ()
    __test__ = False


@_register("testing.TestFrozenCxx")
class TestFrozenCxx(Object):
    """Test object with fields ``value`` and ``tag``."""

    __slots__ = ()
    __test__ = False


@_register("testing.TestObjectDerived")
class TestObjectDerived(TestObjectBase):
    """Test object derived class (adds ``v_map``, ``v_array``)."""

    __slots__ = ()
    __test__ = False


@_register("testing.TestObjectPtrHolder")
class TestObjectPtrHolder(Object):
    """Test object holding ``value`` and ``optional_value`` object fields."""

    __slots__ = ()
    __test__ = False


@_register("testing.TestNonCopyable")
class TestNonCopyable(Object):
    """Test object whose C++ class cannot be copied."""

    __slots__ = ()
    __test__ = False


@_register("testing.SchemaAllTypes")
class _SchemaAllTypes(Object):
    """Test object with a field of every schema type."""

    __slots__ = ()


@_register("testing.TestCompare")
class TestCompare(Object):
    """Test object with ``ignored_field`` left out of comparison."""

    __slots__ = ()
    __test__ = False


@_register("testing.TestHash")
class TestHash(Object):
    """Test object with ``hash_ignored`` left out of hashing."""

    __slots__ = ()
    __test__ = False


@_register("testing.TestCustomHash")
class TestCustomHash(Object):
    """Test object with a custom ``__ffi_hash__`` (hashes only ``key``)."""

    __slots__ = ()
    __test__ = False


@_register("testing.TestCustomCompare")
class TestCustomCompare(Object):
    """Test object with custom ``__ffi_eq__`` / ``__ffi_compare__`` (only ``key``)."""

    __slots__ = ()
    __test__ = False


@_register("testing.TestEqWithoutHash")
class TestEqWithoutHash(Object):
    """Test object with ``__ffi_eq__`` but no ``__ffi_hash__``."""

    __slots__ = ()
    __test__ = False


@_register("testing.TestCxxClassBase")
class _TestCxxClassBase(Object):
    """Test class whose Python ``__init__`` adjusts its arguments (``v_i64 + 1``, ``v_i32 + 2``)."""

    __slots__ = ()
    not_field_1 = 1
    not_field_2 = 2

    def __init__(self, v_i64: int, v_i32: int) -> None:
        info = type(self).__tvm_ffi_type_info__  # type: ignore[attr-defined]
        ffi_init = _lookup_type_attr(info.type_index, "__ffi_init__")
        self.__init_handle_by_constructor__(ffi_init, v_i64 + 1, v_i32 + 2)


@_register("testing.TestCxxClassDerived")
class _TestCxxClassDerived(_TestCxxClassBase):
    """Derived test class (adds ``v_f64``, ``v_f32``)."""

    __slots__ = ()


@_register("testing.TestCxxClassDerivedDerived")
class _TestCxxClassDerivedDerived(_TestCxxClassDerived):
    """Second-level derived test class (adds ``v_str``, ``v_bool``)."""

    __slots__ = ()


@_register("testing.TestCxxInitSubset")
class _TestCxxInitSubset(Object):
    """Test class whose ``__ffi_init__`` takes a subset of its fields."""

    __slots__ = ()


@_register("testing.TestCxxKwOnly")
class _TestCxxKwOnly(Object):
    """Test class with keyword-only init fields."""

    __slots__ = ()


@_register("testing.TestCxxAutoInit")
class _TestCxxAutoInit(Object):
    """Test class with ``init(false)`` and keyword-only fields."""

    __slots__ = ()
    __test__ = False


@_register("testing.TestCxxAutoInitSimple")
class _TestCxxAutoInitSimple(Object):
    """Test class with positional fields only."""

    __slots__ = ()
    __test__ = False


@_register("testing.TestCxxAutoInitAllInitOff")
class _TestCxxAutoInitAllInitOff(Object):
    """Test class with every field out of the generated init."""

    __slots__ = ()
    __test__ = False


@_register("testing.TestCxxAutoInitKwOnlyDefaults")
class _TestCxxAutoInitKwOnlyDefaults(Object):
    """Test class mixing positional, keyword-only, default and init-off fields."""

    __slots__ = ()
    __test__ = False


@_register("testing.TestCxxNoAutoInit")
class _TestCxxNoAutoInit(Object):
    """Test class without a generated ``__ffi_init__``."""

    __slots__ = ()
    __test__ = False


@_register("testing.TestCxxAutoInitParent")
class _TestCxxAutoInitParent(Object):
    """Parent class for inherited auto-init."""

    __slots__ = ()
    __test__ = False


@_register("testing.TestCxxAutoInitChild")
class _TestCxxAutoInitChild(_TestCxxAutoInitParent):
    """Child class for inherited auto-init."""

    __slots__ = ()
    __test__ = False


# --- run_with_gpu_lock (issue 14; the official tvm_ffi.testing helper) ---
_R = TypeVar("_R")


def run_with_gpu_lock(func: Callable[..., _R], /, *args: Any, **kwargs: Any) -> _R:
    """Call ``func(*args, **kwargs)`` holding the machine's GPU lock; return its result.

    Serializes the GPU part of tests run by parallel workers. The lock file is
    ``gpu.lock`` in ``$TVM_FFI_TEST_LOCK_DIR``, or else in a per-user directory
    under the system temporary directory (the official binding's, so both
    bindings' tests share one lock).
    """
    from .utils import FileLock

    lock_dir = os.environ.get("TVM_FFI_TEST_LOCK_DIR")
    if lock_dir:
        lock_dir = os.path.expanduser(lock_dir)
    else:
        try:
            import getpass

            user = getpass.getuser()
        except Exception:
            user = str(os.getuid()) if hasattr(os, "getuid") else "unknown"
        lock_dir = os.path.join(tempfile.gettempdir(), f"tvm-ffi-test-locks-{user}")
    os.makedirs(lock_dir, exist_ok=True)
    with FileLock(os.path.join(lock_dir, "gpu.lock")):
        return func(*args, **kwargs)


def __getattr__(name: str) -> Function:
    func = get_global_func("testing." + name, allow_missing=True)
    if func is None:
        raise AttributeError(f"module 'tvmffi.testing' has no attribute {name!r}")
    return func
