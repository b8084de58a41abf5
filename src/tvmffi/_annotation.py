"""Python annotations -> TypeSchema (``TypeSchema.from_annotation``).

An annotation is either a bare class or a subscripted generic. Bare classes resolve
through a table of Python builtins, then through the FFI type index a registered
class carries (``__tvm_ffi_type_info__``), which also covers the official binding's
classes. Generics dispatch on their origin to one small function each.
"""

from __future__ import annotations

import collections.abc
import ctypes
import types
import typing
from collections.abc import Callable
from typing import Any

from . import _core
from .type_schema import _INDEX_ORIGIN, _K_STATIC_OBJECT_BEGIN, TypeSchema

_NONE_TYPE = type(None)


def schema_of(annotation: object) -> TypeSchema:
    """The schema of ``annotation``; ``TypeError`` when it has no FFI type."""
    if annotation is None or annotation is _NONE_TYPE:
        return TypeSchema("None")
    if annotation is typing.Any:
        return TypeSchema("Any")
    origin = typing.get_origin(annotation)
    if origin is None:
        return _bare(annotation)
    args = typing.get_args(annotation)
    handler = _GENERIC.get(origin)
    if handler is not None:
        return handler(args)
    if isinstance(origin, type):
        return _ffi_generic(origin, args, annotation)
    raise TypeError(f"Cannot convert {annotation!r} to TypeSchema")


# ---- bare classes ---------------------------------------------------------------------
def _bare(cls: object) -> TypeSchema:
    if cls is typing.Callable or cls is collections.abc.Callable:
        return _callable_bare()
    if not isinstance(cls, type):
        raise TypeError(f"Cannot convert {cls!r} to TypeSchema")
    if cls is tuple:
        return TypeSchema("tuple", None)
    for base, origin in _BUILTIN_BASES:
        if issubclass(cls, base):
            return TypeSchema(origin)
    index = _registered_index(cls)
    if index is None:
        raise TypeError(f"Cannot convert {cls.__qualname__}: it is not registered as an FFI type")
    return TypeSchema.from_type_index(index)


def _registered_index(cls: type) -> int | None:
    """The FFI type index ``cls`` was registered under, else None; raises for an FFI
    object class that is not registered itself (an abstract base)."""
    builtin = _CORE_CLASS_INDEX.get(cls)
    if builtin is not None:
        return builtin
    info = cls.__dict__.get("__tvm_ffi_type_info__")
    if info is not None:
        return int(info.type_index)
    if issubclass(cls, _core.Object) or hasattr(cls, "__tvm_ffi_type_info__"):
        raise TypeError(f"Cannot convert {cls.__qualname__}: the class is not registered")
    return None


# The extension's own classes (they carry no type info of their own): static indices.
_CORE_CLASS_INDEX: dict[type, int] = {
    _core.Object: _K_STATIC_OBJECT_BEGIN,
    _core.Function: 68,
    _core.Tensor: 70,
}


def _callable_bare() -> TypeSchema:
    return TypeSchema("Callable")


# Checked in order (dtype is a str, bool an int): a subclass maps as its base.
_BUILTIN_BASES: tuple[tuple[type, str], ...] = (
    (_core.dtype, "dtype"),
    (_core.Device, "Device"),
    (bool, "bool"),
    (int, "int"),
    (float, "float"),
    (str, "str"),
    (bytes, "bytes"),
    (ctypes.c_void_p, "ctypes.c_void_p"),
    (list, "List"),
    (dict, "Dict"),
)


# ---- generics ---------------------------------------------------------------------------
def _union(args: tuple[Any, ...]) -> TypeSchema:
    members = [a for a in args if a is not None and a is not _NONE_TYPE]
    inner = [schema_of(a) for a in members]
    core = inner[0] if len(inner) == 1 else TypeSchema("Union", tuple(inner))
    if len(members) == len(args):
        return core
    return TypeSchema("Optional", (core,))


def _list(args: tuple[Any, ...]) -> TypeSchema:
    if len(args) > 1:
        raise TypeError(f"list takes at most 1 type argument, got {len(args)}")
    return TypeSchema("List", tuple(schema_of(a) for a in args))


def _dict(args: tuple[Any, ...]) -> TypeSchema:
    if len(args) not in (0, 2):
        raise TypeError(f"dict requires 0 or 2 type arguments, got {len(args)}")
    return TypeSchema("Dict", tuple(schema_of(a) for a in args))


def _tuple(args: tuple[Any, ...]) -> TypeSchema:
    if len(args) == 2 and args[1] is Ellipsis:
        return TypeSchema("Array", (schema_of(args[0]),))
    if args == ((),):  # typing.Tuple[()] on older Pythons
        args = ()
    return TypeSchema("tuple", tuple(schema_of(a) for a in args))


def _callable(args: tuple[Any, ...]) -> TypeSchema:
    if not args:
        return _callable_bare()
    params, ret = args[0], args[1] if len(args) > 1 else typing.Any
    if params is Ellipsis:
        return TypeSchema("Callable", (schema_of(ret),))
    named = {"return": (schema_of(ret),), "params": tuple(schema_of(p) for p in params)}
    return TypeSchema("Callable", named_args=named)


_GENERIC: dict[Any, Callable[[tuple[Any, ...]], TypeSchema]] = {
    typing.Union: _union,
    list: _list,
    dict: _dict,
    tuple: _tuple,
    collections.abc.Callable: _callable,
}
if hasattr(types, "UnionType"):  # X | Y (3.10+)
    _GENERIC[types.UnionType] = _union


def _ffi_generic(cls: type, args: tuple[Any, ...], annotation: object) -> TypeSchema:
    """``Array[X]`` / ``List[X]`` / ``Map[K, V]`` / ``Dict[K, V]`` of an FFI container class."""
    try:
        index = _registered_index(cls)
    except TypeError:
        index = None
    origin = _INDEX_ORIGIN.get(index) if index is not None else None
    wanted = {"Array": 1, "List": 1, "Map": 2, "Dict": 2}.get(origin or "")
    if wanted is None:
        raise TypeError(f"Cannot convert {annotation!r} to TypeSchema")
    if len(args) != wanted:
        raise TypeError(f"{origin} requires {wanted} type argument(s), got {len(args)}")
    return TypeSchema(str(origin), tuple(schema_of(a) for a in args))
