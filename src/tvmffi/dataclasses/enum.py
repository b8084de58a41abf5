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
from collections.abc import Iterator
from typing import Any, ClassVar, NamedTuple

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
_I64 = range(-(1 << 63), 1 << 63)


@c_class("ffi.EnumState")
class EnumState(Object):
    """An enum type's registry: ``entries`` (in order), ``indexes`` (int and str index
    to entry) and ``attrs`` (extensible attribute name to {entry: value})."""

    __slots__ = ()
    entries: Any
    """The variants, in the order they were made."""
    indexes: Any
    """Each variant under its int index and under its str index."""
    attrs: Any
    """Extensible attributes: name to {variant: value}."""


class _EnumEntry:
    """What the class body said of one variant: the field values given to :func:`entry`."""

    __slots__ = ("args", "kwargs")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs

    def __repr__(self) -> str:
        shown = list(map(repr, self.args)) + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return "entry(" + ", ".join(shown) + ")"


def entry(*args: Any, **kwargs: Any) -> Any:
    """Declare an enum variant, optionally with its field values (``value=`` for the
    payload of an IntEnum/StrEnum variant)."""
    return _EnumEntry(*args, **kwargs)


def auto() -> Any:
    """Declare a variant whose indices come from its position and name."""
    return entry()


def _index_key(index: Any) -> int | str:
    """An index as the state's map keys it (bools count as ints; ints must fit int64)."""
    if isinstance(index, str):
        return index
    if not isinstance(index, int):
        raise TypeError(f"enum index must be int or str, got {type(index).__name__}")
    if index not in _I64:
        raise OverflowError(f"enum integer index {index} is outside int64")
    return int(index)


def _enum_state(cls: type) -> Any:
    """The type's ``__ffi_enum__`` state; ``None`` when it has none (yet)."""
    info = getattr(cls, "__tvm_ffi_type_info__", None)
    return None if info is None else _core._lookup_type_attr(info.type_index, ENUM_STATE_ATTR)


def _ensure_enum_state(cls: type) -> Any:
    """The type's state, registered empty first when it has none."""
    state = _enum_state(cls)
    if state is None:
        index = cls.__tvm_ffi_type_info__.type_index  # type: ignore[attr-defined]
        _core._py_class_register_attr(index, ENUM_STATE_ATTR, EnumState())  # type: ignore[call-arg]
        state = _enum_state(cls)
    return state


def _variants(cls: type) -> list[Any]:
    state = _enum_state(cls)
    return list(state.entries) if state is not None else []


class _EnumMeta(type):
    """An enum class iterates over its variants; ``Cls(index)`` looks one up."""

    def __iter__(cls) -> Iterator[Any]:
        yield from _variants(cls)

    def __len__(cls) -> int:
        return len(_variants(cls))

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        lookup = len(args) == 1 and not kwargs and isinstance(args[0], (cls, int, str))
        if not lookup:
            return type.__call__(cls, *args, **kwargs)
        if isinstance(args[0], cls):
            return args[0]
        try:
            return cls.get(args[0])  # type: ignore[attr-defined]
        except KeyError:
            raise ValueError(f"{args[0]!r} is not a valid {cls.__name__}") from None


class _AttrDictDescriptor:
    """``Cls.attr_dict``: read on the class, it is the state's attribute dictionary."""

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        state = _enum_state(owner if owner is not None else type(instance))
        return state.attrs if state is not None else Dict({})


@c_class("ffi.Enum", init=False)
class Enum(Object, metaclass=_EnumMeta):
    """Base class of FFI enums (singleton variants with an int and a str index)."""

    __slots__ = ()
    _int_index: int
    _str_index: str

    attr_dict: ClassVar[Any] = _AttrDictDescriptor()
    """The live extensible-attribute dictionary (name to {variant: value})."""

    def __init_subclass__(cls, *, type_key: str | None = None, **options: Any) -> None:
        """``type_key=`` makes the subclass an enum type; ``frozen=`` (Python-defined
        types), ``init=`` and ``repr=`` (C++-defined ones) tune how it is bound."""
        chosen = {k: options.pop(k, True) for k in ("frozen", "init", "repr")}
        super().__init_subclass__(**options)
        if type_key is not None:
            _define_enum(cls, type_key, **chosen)

    @classmethod
    def get(cls, index: int | str) -> Any:
        """The variant at an integer or string index; ``KeyError`` when none."""
        key = _index_key(index)
        state = _enum_state(cls)
        found = state.indexes.get(key) if state is not None else None
        if found is None:
            raise KeyError(key)
        return found

    @classmethod
    def all_entries(cls) -> Iterator[Any]:
        """The variants in declaration order."""
        return iter(_variants(cls))

    @classmethod
    def def_attr(cls, name: str, *, default: Any = MISSING) -> EnumAttrMap:
        """A per-variant view of extensible attribute ``name``."""
        return EnumAttrMap(cls, name, default=default)


class EnumAttrMap:
    """Mutable, variant-keyed view of one extensible enum attribute (shared with every
    language through the enum state)."""

    __slots__ = ("_default", "_enum_cls", "_name")

    def __init__(self, enum_cls: type, name: str, *, default: Any = MISSING) -> None:
        self._enum_cls, self._name, self._default = enum_cls, name, default

    @property
    def name(self) -> str:
        """The attribute name."""
        return self._name

    def _own(self, variant: object) -> None:
        """Refuse a variant of another enum type."""
        if not isinstance(variant, self._enum_cls):
            raise TypeError(f"expected {self._enum_cls.__name__}, got {type(variant).__name__}")

    def _column(self) -> Any:
        """This attribute's {variant: value} dictionary in the state, if it has one."""
        state = _enum_state(self._enum_cls)
        return None if state is None else state.attrs.get(self._name)

    def _writable_column(self) -> Any:
        """The attribute's dictionary, made (with the state, if needed) when absent."""
        attrs = _ensure_enum_state(self._enum_cls).attrs
        if self._name not in attrs:
            attrs[self._name] = Dict({})
        return attrs[self._name]

    def __setitem__(self, variant: object, value: Any) -> None:
        self._own(variant)
        self._writable_column()[variant] = value

    def __getitem__(self, variant: object) -> Any:
        self._own(variant)
        if variant in self:
            return self._column()[variant]
        if self._default is MISSING:
            raise KeyError(f"{variant!r} has no extensible attribute {self._name!r}")
        return self._default

    def __contains__(self, variant: object) -> bool:
        column = self._column() if isinstance(variant, self._enum_cls) else None
        return column is not None and variant in column

    def get(self, variant: object, default: Any = None) -> Any:
        """The stored value, or ``default``."""
        column = self._column() if variant in self else None
        return default if column is None else column[variant]


class _PayloadBehaviour:
    """What an IntEnum/StrEnum variant does as its payload (``value``): compare, hash and
    print; copied onto each payload enum class where its body does not say otherwise."""

    def __eq__(self: Any, other: object) -> Any:
        if isinstance(other, type(self)):
            other = other.value
        elif not isinstance(other, type(self.value)):
            return NotImplemented
        return self.value == other

    def __ne__(self: Any, other: object) -> Any:
        same = _PayloadBehaviour.__eq__(self, other)
        return same if same is NotImplemented else not same

    def __hash__(self: Any) -> int:
        return hash(self.value)

    def __str__(self: Any) -> str:
        return str(self.value)

    def __repr__(self: Any) -> str:
        return f"{type(self).__name__}.{self.name}"

    @property
    def name(self: Any) -> str:
        return str(self._str_index)


_PAYLOAD_NAMES = ("__eq__", "__ne__", "__hash__", "__str__", "__repr__", "name")


class _PayloadEnum(Enum):
    """Shared checks of :class:`IntEnum` and :class:`StrEnum` subclasses."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        kind = next(base for base in cls.__mro__ if _PayloadEnum in base.__bases__)
        if kind is not cls and ("value" in cls.__dict__ or "value" in inspect.get_annotations(cls)):
            raise TypeError(f"{kind.__name__} reserves `value` as its canonical index alias")
        super().__init_subclass__(**kwargs)


@c_class("ffi.IntEnum", init=False)
class IntEnum(_PayloadEnum):
    """Enum whose ``value`` is its signed 64-bit integer index."""

    __slots__ = ()
    value: int


@c_class("ffi.StrEnum", init=False)
class StrEnum(_PayloadEnum):
    """Enum whose ``name`` and ``value`` are its string index."""

    __slots__ = ()
    value: str


class _Variant(NamedTuple):
    """One variant to find or make: its class attribute, its indices (``None``: the next
    ordinal), the remaining field values, and whether only a bare annotation named it."""

    alias: str
    int_index: int | None
    str_index: str
    decl: _EnumEntry
    bare: bool


def _is_class_var(annotation: Any) -> bool:
    if isinstance(annotation, str):
        text = annotation.replace(" ", "")
        return text.startswith("ClassVar") or text.startswith("typing.ClassVar")
    return annotation is ClassVar or typing.get_origin(annotation) is ClassVar


def _payload_of(cls: type) -> type | None:
    if issubclass(cls, IntEnum):
        return int
    return str if issubclass(cls, StrEnum) else None


def _declared_variants(cls: type, payload: type | None) -> list[_Variant]:
    """The variants the body declares, bare ``ClassVar`` binders first; each declaration
    is taken off the class (the variant object takes its place later)."""
    annotations = inspect.get_annotations(cls)
    public = [n for n in annotations if not n.startswith("_")]
    found: list[_Variant] = [
        _Variant(n, None, n, _EnumEntry(), True)
        for n in public
        if n not in cls.__dict__ and _is_class_var(annotations[n])
    ]
    for name, value in list(cls.__dict__.items()):
        if name.startswith("_") or (name in annotations and not _is_class_var(annotations[name])):
            continue
        if not isinstance(value, _EnumEntry):
            descriptor = isinstance(value, (staticmethod, classmethod, property))
            if payload is None or descriptor or callable(value):
                continue
            value = _EnumEntry(value=value)
        found.append(_with_indices(cls, name, value, payload))
        delattr(cls, name)
    return found


def _with_indices(cls: type, alias: str, decl: _EnumEntry, payload: type | None) -> _Variant:
    """A declaration's indices: a payload enum's ``value`` is its int (IntEnum) or str
    (StrEnum) index; the other index comes from position or name."""
    if {"_int_index", "_str_index"} & decl.kwargs.keys():
        raise TypeError(f"{cls.__name__}.{alias}: enum indices are inferred")
    if payload is None:
        return _Variant(alias, None, alias, decl, False)
    rest = dict(decl.kwargs)
    value = rest.pop("value", MISSING)
    if value is MISSING:
        raise TypeError(f"{cls.__name__}.{alias} requires a {payload.__name__} value")
    if type(value) is not payload:
        raise TypeError(f"{cls.__name__}.{alias} value must be {payload.__name__}")
    decl = _EnumEntry(*decl.args, **rest)
    if payload is int:
        return _Variant(alias, int(_index_key(value)), alias, decl, False)
    return _Variant(alias, None, str(value), decl, False)


def _define_enum(cls: type, type_key: str, *, frozen: bool, init: bool, repr: bool) -> None:
    """Make ``cls`` the enum type ``type_key`` and bind each declared variant to it."""
    payload = _payload_of(cls)
    own = set(cls.__dict__)
    variants = _declared_variants(cls, payload)
    from_cxx = _core._type_key_to_index(type_key) is not None
    bind = (
        c_class(type_key, init=init, repr=repr)
        if from_cxx
        else py_class(type_key, frozen=frozen, structural_eq="singleton")
    )
    bind(cls)
    if payload is not None:
        for name in _PAYLOAD_NAMES:
            if name not in own:
                setattr(cls, name, _PayloadBehaviour.__dict__[name])
    state = _ensure_enum_state(cls)
    for v in variants:
        setattr(cls, v.alias, _find_or_make(cls, state, v, type_key, from_cxx, payload))


def _find_or_make(
    cls: type, state: Any, v: _Variant, type_key: str, from_cxx: bool, payload: type | None
) -> Any:
    """The variant ``v`` names: the one the state holds already (made by this or another
    language), else a new one, added to the state."""
    indexes = state.indexes
    key = v.int_index if payload is int and not v.bare else v.str_index
    if key in indexes:
        return indexes[key]
    if v.bare and from_cxx:
        raise RuntimeError(f"{type_key!r} has no enum at string index {v.alias!r}")
    if v.bare and payload is int:
        raise TypeError(f"{cls.__name__}.{v.alias} requires an integer value")
    int_index = len(state.entries) if v.int_index is None else v.int_index
    if int_index in indexes or v.str_index in indexes:
        raise ValueError(f"duplicate enum index in {cls.__name__}.{v.alias}")
    try:
        made = (
            _build_cxx(cls, int_index, v)
            if from_cxx
            else cls(*v.decl.args, _int_index=int_index, _str_index=v.str_index, **v.decl.kwargs)
        )
    except Exception as err:
        raise TypeError(f"{cls.__name__}.{v.str_index}: invalid enum entry: {err}") from None
    state.entries.append(made)
    indexes[int_index] = indexes[v.str_index] = made
    return made


def _reflected_setter(cls: type, name: str) -> Any:
    setter = getattr(cls, name, None)
    if not isinstance(setter, _core.FieldProperty):
        raise TypeError(f"field {name!r} has no reflected setter")
    return setter


def _build_cxx(cls: type, int_index: int, v: _Variant) -> Any:
    """A variant of a C++-defined enum type: allocated bare, then filled field by field
    through the reflected setters (keyword values only; every name is checked before
    the allocation)."""
    if v.decl.args:
        raise TypeError("C++-backed enum entries require keyword fields")
    values = {"_int_index": int_index, "_str_index": v.str_index, **v.decl.kwargs}
    setters = [(_reflected_setter(cls, name), value) for name, value in values.items()]
    allocate = _core._lookup_type_attr(cls.__tvm_ffi_type_info__.type_index, "__ffi_new__")  # type: ignore[attr-defined]
    if allocate is None:
        raise TypeError("enum type has no allocator")
    made = allocate()
    for setter, value in setters:
        setter.set(made, value)
    return made
