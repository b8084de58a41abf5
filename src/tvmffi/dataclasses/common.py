"""Whole-object helpers of FFI dataclasses: :func:`is_dataclass`, :func:`fields`,
:func:`asdict`, :func:`astuple`, :func:`replace`, and ``_make_namedtuple`` (a plain
:func:`collections.namedtuple` whose items are converted to the fields' types).

A class is an FFI dataclass when ``@py_class`` / ``@c_class`` marked it
(``__ffi_is_dataclass__``). Its fields are read from the runtime type chain, root
first: each reflected field the decorators described carries its
:class:`~tvmffi.dataclasses.Field` as ``dataclass_field``.
"""

from __future__ import annotations

import collections
import copy
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .._core import Object, _to_py_class_value
from ..object import get_fields
from ..type_schema import TypeSchema
from .field import Field

__all__ = ["asdict", "astuple", "fields", "is_dataclass", "replace"]


def _dataclass_type(x: Any) -> type | None:
    """The FFI dataclass ``x`` is or is an instance of; ``None`` when it is neither."""
    cls = x if isinstance(x, type) else type(x)
    if issubclass(cls, Object) and getattr(cls, "__ffi_is_dataclass__", False) is True:
        return cls
    return None


def is_dataclass(obj: Any) -> bool:
    """Whether ``obj`` is an ``@c_class`` / ``@py_class`` type or an instance of one.

    Standard-library dataclasses are not FFI dataclasses: use
    :func:`dataclasses.is_dataclass` for those.
    """
    return _dataclass_type(obj) is not None


def fields(class_or_instance: Any) -> tuple[Field, ...]:
    """The :class:`Field` descriptors of an FFI dataclass (type or instance),
    inherited ones first."""
    cls = _dataclass_type(class_or_instance)
    if cls is None:
        raise TypeError(
            "fields() expects a c_class or py_class type or instance, "
            f"got {type(class_or_instance).__name__}"
        )
    reflected = get_fields(cls.__tvm_ffi_type_info__.type_key)  # type: ignore[attr-defined]
    return tuple(f.dataclass_field for f in reflected if f.dataclass_field is not None)


def _instance_or_raise(obj: Any, what: str) -> None:
    if isinstance(obj, type) or _dataclass_type(obj) is None:
        raise TypeError(
            f"{what}() should be called on c_class / py_class instances, "
            f"got {obj.__qualname__ if isinstance(obj, type) else type(obj).__name__}"
        )


def replace(obj: Any, /, **changes: Any) -> Any:
    """A new object like ``obj`` with ``changes`` applied (its ``__replace__``); frozen
    fields may be replaced too."""
    _instance_or_raise(obj, "replace")
    return type(obj).__replace__(obj, **changes)


# ---------------------------------------------------------------------------
# asdict / astuple
# ---------------------------------------------------------------------------
# ``_unpacked(value, record)`` is dispatched on the value's class; ``record`` says what
# a dataclass instance becomes (a dict, a tuple...). Leaves of no listed kind are
# deep-copied, as :func:`dataclasses.asdict` does.
_Record = Callable[[Any], Any]


@functools.singledispatch
def _unpacked(value: Any, record: _Record) -> Any:
    return copy.deepcopy(value)


@_unpacked.register
def _(value: Object, record: _Record) -> Any:
    if _dataclass_type(value) is not None:
        return record(value)
    if isinstance(value, Mapping):  # ffi.Map / ffi.Dict: a plain dict
        return {_unpacked(k, record): _unpacked(v, record) for k, v in value.items()}
    if isinstance(value, Sequence):  # ffi.Array / ffi.List: a plain list
        return [_unpacked(item, record) for item in value]
    return value  # another FFI object (tensor, function...) is shared, not copied


@_unpacked.register
def _(value: list, record: _Record) -> Any:  # type: ignore[type-arg]
    return type(value)(_unpacked(item, record) for item in value)


@_unpacked.register
def _(value: tuple, record: _Record) -> Any:  # type: ignore[type-arg]
    items = [_unpacked(item, record) for item in value]
    named = hasattr(type(value), "_fields")  # a named tuple takes its items as arguments
    return type(value)(*items) if named else type(value)(items)


@_unpacked.register
def _(value: dict, record: _Record) -> Any:  # type: ignore[type-arg]
    pairs = [(_unpacked(k, record), _unpacked(v, record)) for k, v in value.items()]
    if isinstance(value, collections.defaultdict):
        return type(value)(value.default_factory, pairs)
    return type(value)(pairs)


def _asdict_inner(value: Any, dict_factory: Callable[[Any], Any]) -> Any:
    def record(obj: Any) -> Any:
        return dict_factory(
            [(str(f.name), _unpacked(getattr(obj, str(f.name)), record)) for f in fields(obj)]
        )

    return _unpacked(value, record)


def _astuple_inner(value: Any, tuple_factory: Callable[[Any], Any]) -> Any:
    def record(obj: Any) -> Any:
        return tuple_factory([_unpacked(getattr(obj, str(f.name)), record) for f in fields(obj)])

    return _unpacked(value, record)


def asdict(obj: Any, *, dict_factory: Callable[[Any], Any] = dict) -> Any:
    """``obj``'s fields as a dict, recursively (nested dataclasses become dicts, FFI
    arrays/lists lists, FFI maps/dicts dicts); ``dict_factory`` builds each dict."""
    _instance_or_raise(obj, "asdict")
    return _asdict_inner(obj, dict_factory)


def astuple(obj: Any, *, tuple_factory: Callable[[Any], Any] = tuple) -> Any:
    """``obj``'s field values as a tuple, recursively; ``tuple_factory`` builds each."""
    _instance_or_raise(obj, "astuple")
    return _astuple_inner(obj, tuple_factory)


# ---------------------------------------------------------------------------
# _make_namedtuple: a native named tuple whose items go through the field types.
# ---------------------------------------------------------------------------
def _item_converter(record_name: str, f: Field) -> Callable[[Any], Any]:
    """A function taking a raw item to the value of field ``f``'s type; the field's own
    cached schema is used when it has one, its annotation otherwise (``f`` is not
    changed either way)."""
    schema = f._ty_schema
    if schema is None:
        schema = TypeSchema.from_annotation(f.type)
    label = f"{record_name}.{f.name}"

    def convert(item: Any) -> Any:
        try:
            converted = schema.convert(item)
        except TypeError as err:
            raise TypeError(f"{label}: {err}") from err
        return _to_py_class_value(converted)

    return convert


def _make_namedtuple(name: str, record_fields: Iterable[Field]) -> type:
    """A :func:`collections.namedtuple` class ``name`` (a direct ``tuple`` subclass) with
    one item per field, in the given order. Construction (positional, keyword,
    ``_make``, ``_replace``) converts each item to its field's type; arity and name
    errors are the native named tuple's own."""
    chosen = tuple(record_fields)
    native: Callable[..., Any] = collections.namedtuple
    cls: Any = native(name, [str(f.name) for f in chosen])
    converters = tuple(_item_converter(name, f) for f in chosen)

    def converted(raw: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(conv(item) for conv, item in zip(converters, raw, strict=True))

    native_new, native_make = cls.__new__, cls._make.__func__

    @functools.wraps(native_new)
    def __new__(klass: type, /, *args: Any, **kwargs: Any) -> Any:
        return tuple.__new__(klass, converted(native_new(klass, *args, **kwargs)))

    def _make(klass: type, iterable: Iterable[Any]) -> Any:
        return tuple.__new__(klass, converted(native_make(klass, iterable)))

    _make.__doc__ = native_make.__doc__
    cls.__new__ = __new__
    cls._make = classmethod(_make)
    cls.__annotations__ = {str(f.name): f.type for f in chosen if f.type is not None}
    made: type = cls
    return made
