"""Object classes and helpers of the runtime's testing library (``libtvm_ffi_testing``).

The classes are ``@c_class`` views of the library's ``testing.*`` object types
(their fields, reflected ``__init__`` and, where the official ones have them,
structural ``==``/ordering/hash), as in the official ``tvm_ffi.testing.testing``.
"""

from __future__ import annotations

import itertools
import sys
from typing import Any, ClassVar, TypeVar

from .. import _core
from .._core import Object
from ..dataclasses import IntEnum, StrEnum, c_class
from ..registry import get_global_func

try:  # the skip marks of the official module; pytest is only needed to use them
    import pytest

    requires_py310 = pytest.mark.skipif(sys.version_info < (3, 10), reason="requires Python 3.10+")
    requires_py312 = pytest.mark.skipif(sys.version_info < (3, 12), reason="requires Python 3.12+")
    requires_py313 = pytest.mark.skipif(sys.version_info < (3, 13), reason="requires Python 3.13+")
except ImportError:  # pragma: no cover
    pass

_C = TypeVar("_C", bound=type)
_TYPE_KEYS = frozenset(get_global_func("ffi.GetRegisteredTypeKeys")())


def _register(type_key: str, **options: Any) -> Any:
    """``c_class(type_key, **options)``, skipping types an older testing library lacks."""

    def decorator(cls: _C) -> _C:
        if type_key in _TYPE_KEYS:
            return c_class(type_key, **options)(cls)
        return cls

    return decorator


def create_object(type_key: str, **kwargs: Any) -> Object:
    """An object of ``type_key`` made by reflection, fields set from ``kwargs``."""
    pairs = itertools.chain.from_iterable(kwargs.items())
    return get_global_func("ffi.MakeObjectFromPackedArgs")(type_key, *pairs)  # type: ignore[no-any-return]


def make_unregistered_object() -> Object:
    """An object of a type no Python class is registered for."""
    return get_global_func("testing.make_unregistered_object")()  # type: ignore[no-any-return]


def add_one(x: int) -> int:
    """``x + 1``, computed by the testing library."""
    return get_global_func("testing.add_one")(x)  # type: ignore[no-any-return]


@_register("testing.TestObjectBase")
class TestObjectBase(Object):
    """Test object base class (fields ``v_i64``, ``v_f64``, ``v_str``; ``add_i64``)."""

    __slots__ = ()
    v_i64: int
    v_f64: float
    v_str: str
    __test__ = False


@_register("testing.TestIntPair")
class TestIntPair(Object):
    """Test int pair (fields ``a``, ``b``; ``sum()``)."""

    __slots__ = ()
    a: int
    b: int
    __test__ = False


@_register("testing.TestFrozenCxx", frozen=True)
class TestFrozenCxx(Object):
    """Test object with fields ``value`` and ``tag``."""

    __slots__ = ()
    value: int
    tag: str
    __test__ = False


@_register("testing.TestObjectDerived")
class TestObjectDerived(TestObjectBase):
    """Test object derived class (adds ``v_map``, ``v_array``)."""

    __slots__ = ()
    v_map: Any
    v_array: Any
    __test__ = False


@_register("testing.TestObjectPtrHolder")
class TestObjectPtrHolder(Object):
    """Test object holding ``value`` and ``optional_value`` object fields."""

    __slots__ = ()
    value: Any
    optional_value: Any
    __test__ = False


@_register("testing.TestNonCopyable")
class TestNonCopyable(Object):
    """Test object whose C++ class cannot be copied."""

    __slots__ = ()
    value: int
    __test__ = False


@_register("testing.SchemaAllTypes")
class _SchemaAllTypes(Object):
    """Test object with a field of every schema type."""

    __slots__ = ()
    v_bool: bool
    v_int: int
    v_float: float
    v_device: Any
    v_dtype: Any
    v_string: str
    v_bytes: bytes
    v_opt_int: int | None
    v_opt_str: str | None
    v_arr_int: Any
    v_arr_str: Any
    v_map_str_int: Any
    v_map_str_arr_int: Any
    v_variant: Any
    v_opt_arr_variant: Any


@_register("testing.TestCompare")
class TestCompare(Object):
    """Test object with ``ignored_field`` left out of comparison."""

    __slots__ = ()
    key: int
    name: str
    ignored_field: int
    __test__ = False


@_register("testing.TestHash")
class TestHash(Object):
    """Test object with ``hash_ignored`` left out of hashing."""

    __slots__ = ()
    key: int
    name: str
    hash_ignored: int
    __test__ = False


@_register("testing.TestCustomHash")
class TestCustomHash(Object):
    """Test object with a custom ``__ffi_hash__`` (hashes only ``key``)."""

    __slots__ = ()
    key: int
    label: str
    __test__ = False


@_register("testing.TestCustomCompare")
class TestCustomCompare(Object):
    """Test object with custom ``__ffi_eq__`` / ``__ffi_compare__`` (only ``key``)."""

    __slots__ = ()
    key: int
    label: str
    __test__ = False


@_register("testing.TestEqWithoutHash")
class TestEqWithoutHash(Object):
    """Test object with ``__ffi_eq__`` but no ``__ffi_hash__``."""

    __slots__ = ()
    key: int
    label: str
    __test__ = False


@_register("testing.TestCxxClassBase")
class _TestCxxClassBase(Object):
    """Test class whose Python ``__init__`` adjusts its arguments (``v_i64 + 1``, ``v_i32 + 2``)."""

    __slots__ = ()
    v_i64: int
    v_i32: int
    not_field_1 = 1
    not_field_2: ClassVar[int] = 2

    def __init__(self, v_i64: int, v_i32: int) -> None:
        info = type(self).__tvm_ffi_type_info__  # type: ignore[attr-defined]
        ffi_init = _core._lookup_type_attr(info.type_index, "__ffi_init__")
        self.__init_handle_by_constructor__(ffi_init, v_i64 + 1, v_i32 + 2)


@_register("testing.TestCxxClassDerived", eq=True, order=True, unsafe_hash=True)
class _TestCxxClassDerived(_TestCxxClassBase):
    """Derived test class (adds ``v_f64``, ``v_f32``)."""

    __slots__ = ()
    v_f64: float
    v_f32: float


@_register("testing.TestCxxClassDerivedDerived")
class _TestCxxClassDerivedDerived(_TestCxxClassDerived):
    """Second-level derived test class (adds ``v_str``, ``v_bool``)."""

    __slots__ = ()
    v_str: str
    v_bool: bool


@_register("testing.TestCxxInitSubset")
class _TestCxxInitSubset(Object):
    """Test class whose ``__ffi_init__`` takes a subset of its fields."""

    __slots__ = ()
    required_field: int
    optional_field: int
    note: str


@_register("testing.TestCxxKwOnly")
class _TestCxxKwOnly(Object):
    """Test class with keyword-only init fields."""

    __slots__ = ()
    x: int
    y: int
    z: int
    w: int


@_register("testing.TestCxxAutoInit")
class _TestCxxAutoInit(Object):
    """Test class with ``init(false)`` and keyword-only fields."""

    __slots__ = ()
    a: int
    b: int
    c: int
    d: int
    __test__ = False


@_register("testing.TestCxxAutoInitSimple")
class _TestCxxAutoInitSimple(Object):
    """Test class with positional fields only."""

    __slots__ = ()
    x: int
    y: int
    __test__ = False


@_register("testing.TestCxxAutoInitAllInitOff")
class _TestCxxAutoInitAllInitOff(Object):
    """Test class with every field out of the generated init."""

    __slots__ = ()
    x: int
    y: int
    z: int
    __test__ = False


@_register("testing.TestCxxAutoInitKwOnlyDefaults")
class _TestCxxAutoInitKwOnlyDefaults(Object):
    """Test class mixing positional, keyword-only, default and init-off fields."""

    __slots__ = ()
    p_required: int
    p_default: int
    k_required: int
    k_default: int
    hidden: int
    __test__ = False


@_register("testing.TestCxxNoAutoInit", init=False)
class _TestCxxNoAutoInit(Object):
    """Test class without a generated ``__ffi_init__``."""

    __slots__ = ()
    x: int
    y: int
    __test__ = False


@_register("testing.TestCxxAutoInitParent")
class _TestCxxAutoInitParent(Object):
    """Parent class for inherited auto-init."""

    __slots__ = ()
    parent_required: int
    parent_default: int
    __test__ = False


@_register("testing.TestCxxAutoInitChild")
class _TestCxxAutoInitChild(_TestCxxAutoInitParent):
    """Child class for inherited auto-init."""

    __slots__ = ()
    child_required: int
    child_kw_only: int
    __test__ = False


class _TestCxxIntEnum(IntEnum, type_key="testing.TestCxxIntEnum"):
    """The C++ test IntEnum: its variants, bound by their int values."""

    low = 10
    high = 20


class _TestCxxStrEnum(StrEnum, type_key="testing.TestCxxStrEnum"):
    """The C++ test StrEnum: its variants, bound by their str values."""

    add = "+"
    mul = "*"


@_register("testing.TestCxxEnumHolder")
class _TestCxxEnumHolder(Object):
    """Test object holding an int-enum and a str-enum field."""

    __slots__ = ()
    __test__ = False
    priority: _TestCxxIntEnum
    opcode: _TestCxxStrEnum
