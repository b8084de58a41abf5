"""``@py_class(type_key)``: a Python class whose instances are FFI objects of a new type.

The decorated class (a subclass of :class:`tvmffi.Object`) names its fields
with annotations (``x: int``). Its type is allocated in the runtime's type
table below the nearest registered base, each field is registered for
reflection (any binding reads and writes it) and every function marked with
:func:`method` is registered as a method of the type, callable from any
language through ``TypeInfo.methods``. Instances are built by keyword or
positional arguments, in field order.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from .. import _core
from .._core import Function, Object
from ..object import _register_class

__all__ = ["method", "py_class"]

_T = TypeVar("_T", bound=type)
_F = TypeVar("_F")

# Names the runtime keeps as type attributes (TypeAttrColumn), not methods.
_TYPE_ATTR_NAMES = frozenset(
    {
        "__ffi_init__",
        "__ffi_repr__",
        "__ffi_hash__",
        "__ffi_eq__",
        "__ffi_compare__",
        "__ffi_shallow_copy__",
        "__ffi_convert__",
    }
)


def method(func: _F) -> _F:
    """Mark ``func`` (a function or ``staticmethod``) to be registered as an FFI method.

    Used inside a ``@py_class`` body; ``@classmethod`` is refused (its first
    argument would be the class, not the instance).
    """
    if isinstance(func, classmethod):
        raise TypeError("@method: @classmethod is not supported (the first argument is the object)")
    target = func.__func__ if isinstance(func, staticmethod) else func
    if not callable(target):
        raise TypeError(f"@method: expected a callable, got {type(func).__name__}")
    target.__ffi_method__ = True  # type: ignore[attr-defined]
    return func


def _is_marked(value: Any) -> bool:
    return bool(getattr(value, "__ffi_method__", False))


def _collect_methods(cls: type) -> list[tuple[str, Callable[..., Any], bool]]:
    found: list[tuple[str, Callable[..., Any], bool]] = []
    for name, value in cls.__dict__.items():
        if isinstance(value, classmethod):
            if _is_marked(value.__func__):
                raise TypeError(
                    f"{cls.__qualname__}.{name}: a @method function is wrapped by @classmethod, "
                    "which is not supported"
                )
            continue
        if isinstance(value, staticmethod):
            if _is_marked(value.__func__):
                found.append((name, value.__func__, True))
            continue
        if _is_marked(value):
            found.append((name, value, False))
    return found


def _field_names(cls: type) -> list[str]:
    return [n for n in inspect.get_annotations(cls) if not n.startswith("__")]


def _parent_index(cls: type) -> int:
    for base in cls.__mro__[1:]:
        index = base.__dict__.get("__tvm_ffi_type_index__")
        if index is not None:
            return int(index)
    return _core._type_key_to_index("ffi.Object")  # type: ignore[return-value]


def _make_init(cls: type, index: int, names: list[str]) -> Callable[..., None]:
    count = len(names)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > count:
            raise TypeError(f"{cls.__name__}() takes {count} field arguments, got {len(args)}")
        values = dict(zip(names[: len(args)], args, strict=True))
        for key, value in kwargs.items():
            if key not in names:
                raise TypeError(f"{cls.__name__}() got an unexpected field {key!r}")
            if key in values:
                raise TypeError(f"{cls.__name__}() got multiple values for field {key!r}")
            values[key] = value
        missing = [n for n in names if n not in values]
        if missing:
            raise TypeError(f"{cls.__name__}() missing field(s): {', '.join(missing)}")
        _core._py_class_init(self, index, count)
        for name in names:
            setattr(self, name, values[name])

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def py_class(type_key: str) -> Callable[[_T], _T]:
    """Class decorator: define the FFI object type ``type_key`` from the decorated class."""
    if not isinstance(type_key, str):
        raise TypeError("py_class expects a type key string")

    def decorate(cls: _T) -> _T:
        if not (isinstance(cls, type) and issubclass(cls, Object)):
            raise TypeError("py_class expects a subclass of tvmffi.Object")
        methods = _collect_methods(cls)
        names = _field_names(cls)
        index = _core._py_class_alloc_type(type_key, _parent_index(cls))
        for pos, name in enumerate(names):
            _core._py_class_register_field(index, name, pos)
        for name, func, is_static in methods:
            ffi_func: Function = _core.to_function(func)
            if name in _TYPE_ATTR_NAMES:
                _core._py_class_register_attr(index, name, ffi_func)
                continue
            _core._py_class_register_method(index, name, ffi_func, is_static, func.__doc__ or "")
        _register_class(cls, type_key, init=False)
        if "__init__" not in cls.__dict__:
            cls.__init__ = _make_init(cls, index, names)  # type: ignore[method-assign]
        return cls

    return decorate
