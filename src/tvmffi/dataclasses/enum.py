"""FFI enums (the official ``tvm_ffi.dataclasses`` ``Enum``, ``IntEnum``, ``StrEnum``).

A variant is a runtime object of the enum's type, made once: every language sees
the same singleton. The runtime keeps one ``ffi.EnumState`` per enum type in its
``__ffi_enum__`` type-attribute column: the variants in order (``entries``), a map
from each canonical index, integer and string, to its variant (``indexes``), and
the extensible attributes (``attrs``: name -> {variant: value}). JSON
serialization, C++ ``EnumDef`` and the field converters read that state; this
module writes it.

Defining ``class Color(Enum, type_key="my.Color")`` runs three steps:

1. *declarations* (``_read_declarations``): the class body's ``entry(...)`` /
   ``auto()`` values, bare ``ClassVar[Color]`` annotations and, for
   ``IntEnum``/``StrEnum``, plain int/str values, in body order;
2. *type*: a type key the runtime does not know yet becomes a Python-defined
   type below the base (``@py_class``; annotated names are the variants'
   fields), one C++ already registered is bound (``@c_class``);
3. *variants* (``_settle``): each declaration's canonical indices are looked up
   in the state; a known index is that variant (an alias, or a variant C++
   made), an unknown one a new variant registered in the state.
"""

from __future__ import annotations

import inspect
import itertools
import threading
import typing
from collections.abc import Iterator
from typing import Any, ClassVar

from .. import _core
from .._core import Object
from ..container import Dict, List
from ..function import _cached_global_func
from ..object import MISSING
from .c_class import c_class
from .common import fields
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
"""The runtime type attribute holding an enum type's :class:`EnumState`."""

_INT64 = range(-(1 << 63), 1 << 63)
# Enum definitions and attribute columns change a state shared with other threads.
_LOCK = threading.RLock()


@c_class("ffi.EnumState")
class EnumState(Object):
    """Registry state shared by enum definition and lookup."""

    entries: List
    indexes: Dict
    attrs: Dict  # name -> Dict(variant -> value)


def _state_of(cls: type) -> Any:
    """The :class:`EnumState` of enum class ``cls``'s own type, or ``None``."""
    info = cls.__dict__.get("__tvm_ffi_type_info__")
    if info is None:
        return None
    return _core._lookup_type_attr(info.type_index, ENUM_STATE_ATTR)


def _canonical(index: Any) -> int | str:
    """``index`` as a key of ``EnumState.indexes`` (a bool is the int it equals)."""
    if isinstance(index, str):
        return index
    if isinstance(index, int):
        if int(index) not in _INT64:
            raise OverflowError(f"enum integer index {index} is outside int64")
        return int(index)
    raise TypeError(f"an enum index is an int or a str, got {type(index).__name__}")


# ---------------------------------------------------------------------------
# Declarations
# ---------------------------------------------------------------------------
class _EnumEntry:
    """A variant declared in a class body with :func:`entry` or :func:`auto`: the
    field values it was given (``value=`` is an IntEnum/StrEnum payload)."""

    __slots__ = ("args", "kwargs")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args
        self.kwargs = kwargs

    def __repr__(self) -> str:
        given = itertools.chain(
            map(repr, self.args), (f"{k}={v!r}" for k, v in self.kwargs.items())
        )
        return "entry(" + ", ".join(given) + ")"


def entry(*args: Any, **kwargs: Any) -> Any:
    """A variant of the enum being defined, with values for its fields (by name, or by
    position in field order); ``value=`` gives an IntEnum/StrEnum variant's payload."""
    return _EnumEntry(*args, **kwargs)


def auto() -> Any:
    """A variant given nothing: its string index is its name in the class body and its
    integer index its place among the variants."""
    return entry()


class _Declaration:
    """One variant named in a class body: ``payload`` is the IntEnum/StrEnum value
    (``None`` when not given), ``values`` the field values."""

    __slots__ = ("name", "payload", "values")

    def __init__(self, name: str, payload: Any, values: _EnumEntry) -> None:
        self.name, self.payload, self.values = name, payload, values


def _classvar_of(annotation: Any, cls: type) -> bool:
    """Whether ``annotation`` is ``ClassVar[cls]`` (written as a string or not)."""
    if isinstance(annotation, str):
        text = annotation.replace(" ", "")
        head, _, rest = text.partition("[")
        inner = rest[:-1].strip("'\"") if rest.endswith("]") else ""
        return head.split(".")[-1] == "ClassVar" and inner.split(".")[-1] == cls.__name__
    if typing.get_origin(annotation) is not ClassVar:
        return False
    (inner,) = typing.get_args(annotation) or (None,)
    inner = getattr(inner, "__forward_arg__", inner)
    return inner is cls or (isinstance(inner, str) and inner.split(".")[-1] == cls.__name__)


def _is_plain_value(name: str, value: Any) -> bool:
    """A public class attribute that is data, not a method, descriptor or class."""
    return not name.startswith("_") and not callable(value) and not hasattr(value, "__get__")


def _own_annotations(cls: type) -> dict[str, Any]:
    """The annotations written in ``cls``'s own body (not inherited ones)."""
    return dict(inspect.get_annotations(cls))


def _body_order(cls: type) -> list[str]:
    """The class body's names, assigned or only annotated, in the order written (an
    annotation-only name goes before the next name both annotated and assigned)."""
    annotated = list(_own_annotations(cls))
    assigned = [n for n in cls.__dict__ if n != "__annotations__"]
    order: list[str] = []
    pending = [n for n in annotated if n not in cls.__dict__]
    for name in assigned:
        if name in annotated:
            cut = annotated.index(name)
            order += [n for n in pending if annotated.index(n) < cut]
            pending = [n for n in pending if annotated.index(n) > cut]
        order.append(name)
    return order + pending


def _read_declarations(cls: type, payload: type | None) -> list[_Declaration]:
    annotations = _own_annotations(cls)
    found = []
    for name in _body_order(cls):
        value = cls.__dict__.get(name, MISSING)
        if isinstance(value, _EnumEntry):
            kwargs = dict(value.kwargs)
            given = kwargs.pop("value", None) if payload is not None else None
            found.append(_Declaration(name, given, _EnumEntry(*value.args, **kwargs)))
        elif value is MISSING and _classvar_of(annotations.get(name), cls):
            found.append(_Declaration(name, None, _EnumEntry()))
        elif payload is not None and name not in annotations and _is_plain_value(name, value):
            found.append(_Declaration(name, value, _EnumEntry()))
    for d in found:
        if payload is not None and d.payload is not None:
            if type(d.payload) is bool or not isinstance(d.payload, payload):
                raise TypeError(f"{cls.__name__}.{d.name} value must be {payload.__name__}")
            _canonical(d.payload)
    return found


# ---------------------------------------------------------------------------
# Variants
# ---------------------------------------------------------------------------
def _variant_fields(cls: type) -> list[str]:
    """The declared fields a positional ``entry(...)`` argument fills, in order."""
    return [str(f.name) for f in fields(cls) if f.name not in ("_int_index", "_str_index", "value")]


def _new_variant(cls: type, state: Any, int_index: int, str_index: str, d: _Declaration) -> Any:
    info = cls.__dict__["__tvm_ffi_type_info__"]
    names = _variant_fields(cls)
    if len(d.values.args) > len(names):
        raise TypeError(f"{cls.__name__}.{d.name}: entry() got more values than fields {names}")
    values = dict(zip(names, d.values.args, strict=False))
    values.update(d.values.kwargs)
    packed: list[Any] = ["_int_index", int_index, "_str_index", str_index]
    if issubclass(cls, (IntEnum, StrEnum)):
        packed += ["value", int_index if issubclass(cls, IntEnum) else str_index]
    for name, value in values.items():
        packed += [name, value]
    try:
        made = _cached_global_func("ffi.MakeObjectFromPackedArgs")(info.type_index, *packed)
    except Exception as err:
        raise TypeError(f"{cls.__name__}.{d.name}: invalid enum entry: {err}") from err
    state.entries.append(made)
    state.indexes[int_index] = made
    state.indexes[str_index] = made
    return made


def _indices(cls: type, d: _Declaration) -> tuple[int | None, str]:
    """(integer index or None when free, string index) of declaration ``d``."""
    if issubclass(cls, IntEnum):
        return (None if d.payload is None else int(d.payload)), d.name
    if issubclass(cls, StrEnum):
        return None, (d.name if d.payload is None else str(d.payload))
    return None, d.name


def _settle(cls: type, state: Any, declarations: list[_Declaration]) -> None:
    """Give each declaration its variant (found in the state or made) as a class attribute."""
    for d in declarations:
        int_index, str_index = _indices(cls, d)
        known = state.indexes.get(int_index if int_index is not None else str_index)
        if known is None:
            if int_index is None and issubclass(cls, IntEnum):
                raise TypeError(f"{cls.__name__}.{d.name} requires an int value")
            if int_index is None:
                int_index = len(state.entries)
            if state.indexes.get(str_index) is not None or state.indexes.get(int_index) is not None:
                raise ValueError(f"{cls.__name__}.{d.name}: duplicate enum index")
            known = _new_variant(cls, state, int_index, str_index, d)
        setattr(cls, d.name, known)


def _own_state(cls: type) -> Any:
    """The state of ``cls``'s own type, made and published on first use."""
    info = cls.__dict__.get("__tvm_ffi_type_info__")
    if info is None:
        raise TypeError(f"{cls.__name__} has no type_key: it is not an enum type of its own")
    state = _core._lookup_type_attr(info.type_index, ENUM_STATE_ATTR)
    if state is None:
        state = _cached_global_func("ffi.MakeObjectFromPackedArgs")(
            "ffi.EnumState", "entries", List(), "indexes", Dict(), "attrs", Dict()
        )
        _core._py_class_register_attr(info.type_index, ENUM_STATE_ATTR, state)
    return state


def _define(cls: type, type_key: str, frozen: bool) -> None:
    payload = int if issubclass(cls, IntEnum) else str if issubclass(cls, StrEnum) else None
    annotations = _own_annotations(cls)
    if payload is not None and "value" in annotations:
        base = "IntEnum" if payload is int else "StrEnum"
        raise TypeError(f"{cls.__name__}: {base} reserves `value` for the variant's payload")
    declarations = _read_declarations(cls, payload)
    for d in declarations:  # the variants replace these once they exist
        if d.name in cls.__dict__:
            delattr(cls, d.name)
    known_index = _core._type_key_to_index(type_key)
    with _LOCK:
        if known_index is not None:  # a C++ type: its variants may exist already
            existing = _core._lookup_type_attr(known_index, ENUM_STATE_ATTR)
            _check_bindable(cls, existing, declarations)
            c_class(type_key, frozen=frozen, init=False, repr=False)(cls)
        else:
            py_class(type_key, frozen=frozen, init=False, repr=False, structural_eq="singleton")(
                cls
            )
            if cls.__tvm_ffi_type_info__.fields is None:  # type: ignore[attr-defined]
                raise TypeError(f"{cls.__name__}: enum fields must resolve at definition")
        state = _own_state(cls)
        _settle(cls, state, declarations)
        cls.attr_dict = {str(name): EnumAttrMap(cls, str(name)) for name in state.attrs}  # type: ignore[attr-defined]


def _check_bindable(cls: type, state: Any, declarations: list[_Declaration]) -> None:
    """A plain enum bound to C++ variants names each one by its string index."""
    if state is None or len(state.entries) == 0 or issubclass(cls, (IntEnum, StrEnum)):
        return
    for d in declarations:
        if state.indexes.get(d.name) is None:
            raise RuntimeError(
                f"{cls.__name__}.{d.name}: the C++ enum has no variant with string index {d.name!r}"
            )


_ABSENT = object()


class EnumAttrMap:
    """Mutable singleton-keyed view of one extensible enum attribute.

    The values live in the enum's runtime state (``attrs[name]``, a Dict keyed by
    variant), where C++ ``EnumDef::set_attr`` puts them too; every view of one
    name reads and writes the same Dict.
    """

    __slots__ = ("_default", "_enum", "_name")

    def __init__(self, enum_cls: type, name: str, *, default: Any = MISSING) -> None:
        self._enum = enum_cls
        self._name = name
        self._default = default

    @property
    def name(self) -> str:
        """The attribute's name."""
        return self._name

    def _stored(self, variant: object) -> Any:
        """The value stored for ``variant``; ``_ABSENT`` when there is none."""
        state = _state_of(self._enum)
        by_variant = None if state is None else state.attrs.get(self._name)
        if by_variant is None or not isinstance(variant, self._enum):
            return _ABSENT
        return by_variant.get(variant, _ABSENT)

    def __setitem__(self, variant: object, value: Any) -> None:
        if not isinstance(variant, self._enum):
            raise TypeError(
                f"{self._name}: expected {self._enum.__name__}, got {type(variant).__name__}"
            )
        with _LOCK:  # two first writers must not each install a Dict of their own
            columns = _own_state(self._enum).attrs
            if self._name not in columns:
                columns[self._name] = Dict()
            by_variant = columns[self._name]
        by_variant[variant] = value

    def __getitem__(self, variant: object) -> Any:
        found = self._stored(variant)
        if found is not _ABSENT:
            return found
        if self._default is MISSING:
            raise KeyError(f"{variant!r} has no extensible attribute {self._name!r}")
        return self._default

    def __contains__(self, variant: object) -> bool:
        return self._stored(variant) is not _ABSENT

    def get(self, variant: object, default: Any = None) -> Any:
        """The value stored for ``variant``, else ``default`` (not the view's default)."""
        found = self._stored(variant)
        return default if found is _ABSENT else found


# ---------------------------------------------------------------------------
# The classes
# ---------------------------------------------------------------------------
class _EnumMeta(type):
    """Enum classes iterate over their variants and are called with an index."""

    def __iter__(cls) -> Iterator[Any]:
        return cls.all_entries()  # type: ignore[attr-defined, no-any-return]

    def __len__(cls) -> int:
        state = _state_of(cls)
        return 0 if state is None else len(state.entries)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) != 1:
            raise TypeError(f"{cls.__name__}() takes one canonical index (an int or a str)")
        try:
            return cls.get(args[0])  # type: ignore[attr-defined]
        except KeyError:
            raise ValueError(f"{args[0]!r} is not a valid {cls.__name__}") from None


@c_class("ffi.Enum", frozen=True, init=False, repr=False)
class Enum(Object, metaclass=_EnumMeta):
    """Base class for FFI-registered enum singletons."""

    _int_index: int
    _str_index: str
    attr_dict: ClassVar[dict[str, EnumAttrMap]] = {}

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
        del init, repr  # variants are looked up, not constructed; printed by index
        if type_key is not None:
            _define(cls, type_key, frozen)

    @classmethod
    def get(cls, index: int | str) -> Any:
        """Return the singleton at a canonical integer or string index."""
        key = _canonical(index)
        state = _state_of(cls)
        found = None if state is None else state.indexes.get(key)
        if found is None:
            raise KeyError(index)
        return found

    @classmethod
    def all_entries(cls) -> Iterator[Any]:
        """Iterate over variants in registration order."""
        state = _state_of(cls)
        return iter(() if state is None else list(state.entries))

    @classmethod
    def def_attr(cls, name: str, *, default: Any = MISSING) -> EnumAttrMap:
        """Return a per-variant extensible-attribute view."""
        return EnumAttrMap(cls, name, default=default)

    def __repr__(self) -> str:
        return f"{type(self).__tvm_ffi_type_info__.type_key}.{self._str_index}"  # type: ignore[attr-defined]

    def __deepcopy__(self, memo: Any = None) -> Any:
        return self  # a variant is a singleton: copying it deeply is keeping it


class _ByPayload:
    """The dunders IntEnum and StrEnum share: a variant equals, hashes and prints as its
    payload, the index its class's ``_payload_type`` names."""

    __slots__ = ()
    _payload_type: type
    _int_index: int
    _str_index: str

    def _payload(self) -> int | str:
        return self._int_index if self._payload_type is int else self._str_index

    @property
    def name(self) -> str:
        return self._str_index

    def __eq__(self, other: object) -> bool:
        if isinstance(other, self._payload_type) and not isinstance(other, Object):
            return self._payload() == other
        return isinstance(other, Object) and self.same_as(other)  # type: ignore[attr-defined]

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self._payload())

    def __str__(self) -> str:
        return str(self._payload())

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self._str_index}"


@c_class("ffi.IntEnum", frozen=True, init=False, repr=False)
class IntEnum(_ByPayload, Enum):
    """Enum whose ``value`` aliases its signed 64-bit integer index."""

    _payload_type = int  # a field of this type also takes the int payload (type_schema)

    value: int  # the runtime's field, the integer index again


@c_class("ffi.StrEnum", frozen=True, init=False, repr=False)
class StrEnum(_ByPayload, Enum):
    """Enum whose ``name`` and ``value`` alias its string index."""

    _payload_type = str  # a field of this type also takes the str payload (type_schema)

    value: str  # the runtime's field, the string index again

