"""The runtime's testing library (``libtvm_ffi_testing``): its functions and object types.

Importing this package loads ``libtvm_ffi_testing.so`` from the same
``apache-tvm-ffi`` wheel as the runtime. Every ``testing.<name>`` global function is
an attribute (``tvmffi.testing.echo``), and the testing object types have their
``@c_class`` classes here, as in the official ``tvm_ffi.testing``.
"""

from __future__ import annotations

from .._core import Function
from ..registry import get_global_func
from . import _ffi_api  # noqa: F401 (loads the testing library)
from ._locking import run_with_gpu_lock
from .testing import (
    TestCompare,
    TestCustomCompare,
    TestCustomHash,
    TestEqWithoutHash,
    TestFrozenCxx,
    TestHash,
    TestIntPair,
    TestNonCopyable,
    TestObjectBase,
    TestObjectDerived,
    TestObjectPtrHolder,
    _SchemaAllTypes,
    _TestCxxAutoInit,
    _TestCxxAutoInitAllInitOff,
    _TestCxxAutoInitChild,
    _TestCxxAutoInitKwOnlyDefaults,
    _TestCxxAutoInitParent,
    _TestCxxAutoInitSimple,
    _TestCxxClassBase,
    _TestCxxClassDerived,
    _TestCxxClassDerivedDerived,
    _TestCxxEnumHolder,
    _TestCxxInitSubset,
    _TestCxxIntEnum,
    _TestCxxKwOnly,
    _TestCxxNoAutoInit,
    _TestCxxStrEnum,
    add_one,
    create_object,
    make_unregistered_object,
)

echo: Function = get_global_func("testing.echo")
nop: Function = get_global_func("testing.nop")
apply: Function = get_global_func("testing.apply")
test_raise_error: Function = get_global_func("testing.test_raise_error")
run_check_signal: Function = get_global_func("testing.run_check_signal")

__all__ = [
    "TestCompare",
    "TestCustomCompare",
    "TestCustomHash",
    "TestEqWithoutHash",
    "TestFrozenCxx",
    "TestHash",
    "TestIntPair",
    "TestNonCopyable",
    "TestObjectBase",
    "TestObjectDerived",
    "TestObjectPtrHolder",
    "_SchemaAllTypes",
    "_TestCxxAutoInit",
    "_TestCxxAutoInitAllInitOff",
    "_TestCxxAutoInitChild",
    "_TestCxxAutoInitKwOnlyDefaults",
    "_TestCxxAutoInitParent",
    "_TestCxxAutoInitSimple",
    "_TestCxxClassBase",
    "_TestCxxClassDerived",
    "_TestCxxClassDerivedDerived",
    "_TestCxxEnumHolder",
    "_TestCxxInitSubset",
    "_TestCxxIntEnum",
    "_TestCxxKwOnly",
    "_TestCxxNoAutoInit",
    "_TestCxxStrEnum",
    "add_one",
    "apply",
    "create_object",
    "echo",
    "make_unregistered_object",
    "nop",
    "run_check_signal",
    "run_with_gpu_lock",
    "test_raise_error",
]


def __getattr__(name: str) -> Function:
    """Any other ``testing.<name>`` global function (registered after import, too)."""
    func = get_global_func("testing." + name, allow_missing=True)
    if func is None:
        raise AttributeError(f"module 'tvmffi.testing' has no attribute {name!r}")
    return func
