"""Cross-language enums: singleton FFI objects of an enum type (``ffi.Enum``).

``class Color(Enum, type_key="my.Color")`` declares the variants in the class body
(``red = entry(...)``, ``green = auto()``, or ``blue: ClassVar[Color]``); each
becomes one object with an integer index (``_int_index``, its ordinal) and a string
index (``_str_index``, its name), registered in the type's ``__ffi_enum__`` state
(an ``ffi.EnumState``: entries in order, an index map, extensible attributes), which
every language reads. :class:`IntEnum` variants carry an int value (their integer
index), :class:`StrEnum` variants a str (their string index). A type the C++ side
defines (``type_key`` known to the runtime) is bound with ``@c_class``; otherwise a
``@py_class`` type is defined, whose extra annotated fields are per-variant data.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from .. import _core
from ..container import Dict
from ..object import MISSING, Object
from .c_class import c_class
from .py_class import py_class

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
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


@c_class("ffi.EnumState")
class EnumState(Object):
    """An enum type's registry: ``entries`` (in order), ``indexes`` (int and str index
    to entry) and ``attrs`` (extensible attribute name to {entry: value})."""

    __slots__ = ()
    entries: Any
    indexes: Any
    attrs: Any


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
    """Declare an enum variant, optionally with its field values (``value=`` for the
    payload of an IntEnum/StrEnum variant)."""
    return _EnumEntry(*args, **kwargs)


def auto() -> Any:
    """Declare a variant whose indices come from its position and name."""
    return _EnumEntry()


class _ClassProperty:
    __slots__ = ("fget",)

    def __init__(self, fget: Callable[[type], Any]) -> None:
        self.fget = fget

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        return self.fget(owner if owner is not None else type(instance))


def _normalize_index(index: Any) -> int | str:
    if isinstance(index, bool):
        return int(index)
    if isinstance(index, int):
        if not _INT64_MIN <= index <= _INT64_MAX:
            raise OverflowError(f"enum integer index {index} is outside int64")
        return index
    if isinstance(index, str):
        return index
    raise TypeError(f"enum index must be int or str, got {type(index).__name__}")


def _state(cls: type, *, create: bool = False) -> Any:
    """The type's ``__ffi_enum__`` state; made and registered first with ``create``."""
    info = getattr(cls, "__tvm_ffi_type_info__", None)
    if info is None:
        return None
    state = _core._lookup_type_attr(info.type_index, ENUM_STATE_ATTR)
    if state is None and create:
        _core._py_class_register_attr(info.type_index, ENUM_STATE_ATTR, EnumState())  # type: ignore[call-arg]
        state = _core._lookup_type_attr(info.type_index, ENUM_STATE_ATTR)
    return state


def _ordered_entries(cls: type) -> list[Any]:
    state = _state(cls)
    return [] if state is None else list(state.entries)


class _EnumMeta(type):
    """Iterating an enum class gives its variants; ``Cls(index)`` the variant at an index."""

    def __iter__(cls) -> Iterator[Any]:
        return iter(_ordered_entries(cls))

    def __len__(cls) -> int:
        return len(_ordered_entries(cls))

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if not kwargs and len(args) == 1:
            value = args[0]
            if isinstance(value, cls):
                return value
            if isinstance(value, (int, str)):
                try:
                    return cls.get(value)  # type: ignore[attr-defined]
                except KeyError:
                    raise ValueError(f"{value!r} is not a valid {cls.__name__}") from None
        return super().__call__(*args, **kwargs)


@c_class("ffi.Enum", init=False)
class Enum(Object, metaclass=_EnumMeta):
    """Base class of FFI enums (singleton variants with an int and a str index)."""

    __slots__ = ()
    _int_index: int
    _str_index: str

    def __init_subclass__(
        cls,
        *,
        type_key: str | None = None,
        frozen: bool = True,
        init: bool = True,
        repr: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        if type_key is None:
            return
        payload = int if issubclass(cls, IntEnum) else str if issubclass(cls, StrEnum) else None
        user_repr = "__repr__" in cls.__dict__
        binders, declarations = _collect_declarations(cls, payload)
        cxx_backed = _core._type_key_to_index(type_key) is not None
        if cxx_backed:
            c_class(type_key, init=init, repr=repr)(cls)
        else:
            py_class(type_key, frozen=frozen, structural_eq="singleton")(cls)
        if payload is not None:
            _install_payload_behavior(cls, payload, user_repr)
        _resolve(cls, binders, declarations, type_key, cxx_backed, payload)

    @classmethod
    def get(cls, index: int | str) -> Any:
        """The variant at an integer or string index; ``KeyError`` when none."""
        index = _normalize_index(index)
        state = _state(cls)
        if state is not None and index in state.indexes:
            return state.indexes[index]
        raise KeyError(index)

    @classmethod
    def all_entries(cls) -> Iterator[Any]:
        """The variants in declaration order."""
        return iter(_ordered_entries(cls))

    @_ClassProperty
    def attr_dict(cls: type) -> Any:
        """The live extensible-attribute dictionary (name to {variant: value})."""
        state = _state(cls)
        return Dict({}) if state is None else state.attrs

    @classmethod
    def def_attr(cls, name: str, *, default: Any = MISSING) -> EnumAttrMap:
        """A per-variant view of extensible attribute ``name``."""
        return EnumAttrMap(cls, name, default=default)


class EnumAttrMap:
    """Mutable, variant-keyed view of one extensible enum attribute (shared with every
    language through the enum state)."""

    __slots__ = ("_default", "_enum_cls", "_name")

    def __init__(self, enum_cls: type, name: str, *, default: Any = MISSING) -> None:
        self._enum_cls = enum_cls
        self._name = name
        self._default = default

    def _check(self, variant: object) -> None:
        if not isinstance(variant, self._enum_cls):
            raise TypeError(f"expected {self._enum_cls.__name__}, got {type(variant).__name__}")

    def _column(self, create: bool) -> Any:
        state = _state(self._enum_cls, create=create)
        if state is None:
            return None
        attrs = state.attrs
        column = attrs.get(self._name)
        if column is None and create:
            column = Dict({})
            attrs[self._name] = column
        return column

    def __setitem__(self, variant: object, value: Any) -> None:
        self._check(variant)
        self._column(True)[variant] = value

    def __getitem__(self, variant: object) -> Any:
        self._check(variant)
        column = self._column(False)
        if column is not None and variant in column:
            return column[variant]
        if self._default is not MISSING:
            return self._default
        raise KeyError(f"{variant!r} has no extensible attribute {self._name!r}")

    def __contains__(self, variant: object) -> bool:
        if not isinstance(variant, self._enum_cls):
            return False
        column = self._column(False)
        return column is not None and variant in column

    def get(self, variant: object, default: Any = None) -> Any:
        """The stored value, or ``default``."""
        if variant not in self:
            return default
        return self[variant]

    @property
    def name(self) -> str:
        """The attribute name."""
        return self._name


def _install_payload_behavior(cls: type, payload: type, user_repr: bool) -> None:
    """IntEnum/StrEnum variants compare, hash and print as their payload."""

    def __eq__(self: Any, other: object) -> Any:
        if isinstance(other, type(self)):
            return self.value == other.value
        if isinstance(other, payload):
            return self.value == other
        return NotImplemented

    def __ne__(self: Any, other: object) -> Any:
        result = __eq__(self, other)
        return NotImplemented if result is NotImplemented else not result

    defaults: dict[str, Any] = {
        "__eq__": __eq__,
        "__ne__": __ne__,
        "__str__": lambda self: str(self.value),
        "__hash__": lambda self: hash(self.value),
    }
    for name, value in defaults.items():
        if name not in cls.__dict__:
            setattr(cls, name, value)
    if "name" not in cls.__dict__:
        cls.name = property(lambda self: str(self._str_index))  # type: ignore[attr-defined]
    if not user_repr:

        def __repr__(self: Any) -> str:
            return f"{type(self).__name__}.{self.name}"

        cls.__repr__ = __repr__  # type: ignore[method-assign,assignment]


def _reject_value_field(cls: type, base_name: str) -> None:
    if "value" in cls.__dict__ or "value" in inspect.get_annotations(cls):
        raise TypeError(f"{base_name} reserves `value` as its canonical index alias")


@c_class("ffi.IntEnum", init=False)
class IntEnum(Enum):
    """Enum whose ``value`` is its signed 64-bit integer index."""

    __slots__ = ()
    value: int

    def __init_subclass__(cls, **kwargs: Any) -> None:
        _reject_value_field(cls, "IntEnum")
        super().__init_subclass__(**kwargs)


@c_class("ffi.StrEnum", init=False)
class StrEnum(Enum):
    """Enum whose ``name`` and ``value`` are its string index."""

    __slots__ = ()
    value: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        _reject_value_field(cls, "StrEnum")
        super().__init_subclass__(**kwargs)


def _is_class_var(annotation: Any) -> bool:
    if annotation is ClassVar or typing.get_origin(annotation) is ClassVar:
        return True
    if isinstance(annotation, str):
        return annotation.replace(" ", "").startswith(("ClassVar", "typing.ClassVar"))
    return False


def _collect_declarations(
    cls: type, payload: type | None
) -> tuple[list[str], dict[str, _EnumEntry]]:
    """Bare ``name: ClassVar[...]`` binders and ``name = entry(...)`` declarations of the
    body (a plain value declares a payload variant); the declarations leave the class."""
    annotations = inspect.get_annotations(cls)
    binders = [
        name
        for name, ann in annotations.items()
        if not name.startswith("_") and _is_class_var(ann) and name not in cls.__dict__
    ]
    fields = {name for name, ann in annotations.items() if not _is_class_var(ann)}
    declarations: dict[str, _EnumEntry] = {}
    for name, value in list(cls.__dict__.items()):
        if name.startswith("_") or name in fields:
            continue
        if isinstance(value, _EnumEntry):
            declarations[name] = value
        elif payload is not None and not (
            isinstance(value, (staticmethod, classmethod, property)) or callable(value)
        ):
            declarations[name] = _EnumEntry(value=value)
        else:
            continue
        delattr(cls, name)
    return binders, declarations


def _indices(
    cls: type, alias: str, ordinal: int, declaration: _EnumEntry, payload: type | None
) -> tuple[int, str, _EnumEntry]:
    kwargs = dict(declaration.kwargs)
    if "_int_index" in kwargs or "_str_index" in kwargs:
        raise TypeError(f"{cls.__name__}.{alias}: enum indices are inferred")
    if payload is None:
        return ordinal, alias, declaration
    if "value" not in kwargs:
        raise TypeError(f"{cls.__name__}.{alias} requires a {payload.__name__} value")
    value = kwargs.pop("value")
    if type(value) is not payload:
        raise TypeError(f"{cls.__name__}.{alias} value must be {payload.__name__}")
    rest = _EnumEntry(*declaration.args, **kwargs)
    if payload is int:
        return int(_normalize_index(value)), alias, rest
    return ordinal, str(value), rest


def _create(
    cls: type, int_index: int, str_index: str, declaration: _EnumEntry, cxx_backed: bool
) -> Any:
    """One variant object: built by the type's constructor (Python-defined enum) or
    allocated and filled field by field (a C++ enum type)."""
    try:
        if not cxx_backed:
            return cls(
                *declaration.args,
                _int_index=int_index,
                _str_index=str_index,
                **declaration.kwargs,
            )
        if declaration.args:
            raise TypeError("C++-backed enum entries require keyword fields")
        info = cls.__tvm_ffi_type_info__  # type: ignore[attr-defined]
        ffi_new = _core._lookup_type_attr(info.type_index, "__ffi_new__")
        if ffi_new is None:
            raise TypeError("enum type has no allocator")
        instance = ffi_new()
        values = {"_int_index": int_index, "_str_index": str_index, **declaration.kwargs}
        for name, value in values.items():
            descriptor = getattr(cls, name, None)
            if not isinstance(descriptor, _core.FieldProperty):
                raise TypeError(f"field {name!r} has no reflected setter")
            descriptor.set(instance, value)
        return instance
    except Exception as err:
        raise TypeError(f"{cls.__name__}.{str_index}: invalid enum entry: {err}") from None


def _register(entries: Any, indexes: Any, instance: Any) -> None:
    entries.append(instance)
    indexes[instance._int_index] = instance
    indexes[instance._str_index] = instance


def _resolve(
    cls: type,
    binders: list[str],
    declarations: dict[str, _EnumEntry],
    type_key: str,
    cxx_backed: bool,
    payload: type | None,
) -> None:
    """Create (or find, when another language already made them) the variants and bind
    each to its class attribute."""
    state = _state(cls, create=True)
    entries, indexes = state.entries, state.indexes
    for alias in binders:
        instance = indexes.get(alias)
        if instance is None:
            if cxx_backed:
                raise RuntimeError(f"{type_key!r} has no enum at string index {alias!r}")
            if payload is int:
                raise TypeError(f"{cls.__name__}.{alias} requires an integer value")
            instance = _create(cls, len(entries), alias, _EnumEntry(), cxx_backed)
            _register(entries, indexes, instance)
        setattr(cls, alias, instance)
    for alias, declaration in declarations.items():
        int_index, str_index, rest = _indices(cls, alias, len(entries), declaration, payload)
        instance = indexes.get(int_index if payload is int else str_index)
        if instance is None:
            if int_index in indexes or str_index in indexes:
                raise ValueError(f"duplicate enum index in {cls.__name__}.{alias}")
            instance = _create(cls, int_index, str_index, rest, cxx_backed)
            _register(entries, indexes, instance)
        setattr(cls, alias, instance)
