"""Cross-language enums (the official ``tvm_ffi.dataclasses.enum`` names).

Only the class skeleton is provided so far: subclassing :class:`Enum`,
:class:`IntEnum` or :class:`StrEnum` with ``type_key=...`` registers the class for
that FFI type (``@c_class`` when C++ defines it, else ``@py_class``); the
variants declared with :func:`entry` / :func:`auto` stay plain class attributes
(no enum state is registered with the runtime yet).
"""

from __future__ import annotations

from typing import Any

from .. import _core
from ..object import Object

__all__ = [
    "ENUM_STATE_ATTR",
    "Enum",
    "EnumAttrMap",
    "EnumState",
    "IntEnum",
    "StrEnum",
    "auto",
    "entry",
]

ENUM_STATE_ATTR = "__ffi_enum__"


class _EnumEntry:
    """A variant declaration: the values given to :func:`entry`."""

    __slots__ = ("args", "kwargs")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args
        self.kwargs = kwargs

    def __repr__(self) -> str:
        values = [repr(a) for a in self.args]
        values.extend(f"{k}={v!r}" for k, v in self.kwargs.items())
        return f"entry({', '.join(values)})"


def entry(*args: Any, **kwargs: Any) -> Any:
    """Declare an enum variant, optionally with field values."""
    return _EnumEntry(*args, **kwargs)


def auto() -> Any:
    """Declare a variant whose value is inferred."""
    return _EnumEntry()


class Enum(Object):
    """Base class of FFI enums; ``class Color(Enum, type_key="my.Color")``."""

    __slots__ = ()

    def __init_subclass__(cls, type_key: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if type_key is None:
            return
        from .c_class import c_class
        from .py_class import py_class

        if _core._type_key_to_index(type_key) is not None:
            c_class(type_key, init=False)(cls)
        else:
            py_class(type_key)(cls)


class IntEnum(Enum):
    """An enum whose variants carry an int value."""

    __slots__ = ()


class StrEnum(Enum):
    """An enum whose variants carry a str value."""

    __slots__ = ()


class EnumState(Object):
    """The runtime's enum registry state (``ffi.EnumState``)."""

    __slots__ = ()


class EnumAttrMap(dict):  # type: ignore[type-arg]
    """Per-variant attribute values of an enum."""
