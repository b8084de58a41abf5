"""``dataclasses``-style helpers for ``@c_class`` and ``@py_class`` types and instances."""

from __future__ import annotations

import copy
from collections import namedtuple
from collections.abc import Callable
from functools import update_wrapper
from typing import Any, TypeVar

from .. import _core
from .._lineage import _chain_fields
from ..container import Array, Dict, List, Map
from .field import Field

__all__ = ["asdict", "astuple", "fields", "is_dataclass", "replace"]

_T = TypeVar("_T")

# Leaves copied by reference, the stdlib's ``dataclasses`` list of immutable builtins.
_ATOMIC_TYPES: frozenset[type] = frozenset((type(None), bool, int, float, complex, str, bytes))
_ATOMIC_TYPES |= {type(Ellipsis), type(NotImplemented)}


def is_dataclass(obj: Any) -> bool:
    """True for a ``@c_class`` / ``@py_class`` type or an instance of one.

    FFI containers (Array, List, Map, Dict) are registered types too, but not dataclasses.
    """
    cls = obj if isinstance(obj, type) else type(obj)
    return getattr(cls, "__ffi_is_dataclass__", False) is True


def fields(obj_or_cls: Any) -> tuple[Field, ...]:
    """The :class:`Field` of every field of a dataclass type or instance, root type's first
    (the order of the generated ``__init__``'s positional fields before reordering).

    Raises ``TypeError`` for anything that is not a ``@c_class`` / ``@py_class``.
    """
    if not is_dataclass(obj_or_cls):
        raise TypeError(
            "fields() argument must be a c_class or py_class type or instance, "
            f"got {type(obj_or_cls).__name__}"
        )
    cls = obj_or_cls if isinstance(obj_or_cls, type) else type(obj_or_cls)
    info = getattr(cls, "__tvm_ffi_type_info__", None)
    reflected = () if info is None else _chain_fields(info)
    return tuple(tf.dataclass_field for tf in reflected if tf.dataclass_field is not None)


class _ItemConversion:
    """Converts a named tuple's items, one per field, as the fields convert their values.

    A plan entry per field: the label an error names (``"Typename.field"``) and the
    field's TypeSchema (its cached one, else one made from its annotation).
    """

    __slots__ = ("plan",)

    def __init__(self, typename: str, fields: tuple[Field, ...]) -> None:
        from ..type_schema import TypeSchema

        self.plan = [
            (
                f"{typename}.{f.name}",
                TypeSchema.from_annotation(f.type) if f._ty_schema is None else f._ty_schema,
            )
            for f in fields
        ]

    def apply(self, items: tuple[Any, ...]) -> list[Any]:
        return [self._one(entry, item) for entry, item in zip(self.plan, items, strict=True)]

    @staticmethod
    def _one(entry: tuple[str, Any], item: Any) -> Any:
        label, schema = entry
        try:
            return _core._to_py_class_value(schema.convert(item))
        except TypeError as exc:
            raise TypeError(f"{label}: {exc}") from exc


def _converting(tuple_cls: Any, conversion: _ItemConversion) -> Any:
    """``tuple_cls`` (a fresh namedtuple) with construction routed through ``conversion``.

    The namedtuple's own ``__new__`` still binds the arguments first (its arity and
    keyword errors, its signature for ``inspect``); ``_make`` keeps its own length check
    and then constructs through ``cls(...)``, and ``_replace`` (built on ``_make``)
    follows. ``cls`` may be a subclass.
    """
    plain_new = tuple_cls.__new__
    plain_make = tuple_cls._make.__func__

    def new(cls: type, /, *args: Any, **kwargs: Any) -> Any:
        bound = plain_new(cls, *args, **kwargs)
        return plain_new(cls, *conversion.apply(bound))

    def make(cls: Any, iterable: Any) -> Any:
        return cls(*plain_make(cls, iterable))

    tuple_cls.__new__ = staticmethod(update_wrapper(new, plain_new))
    tuple_cls._make = classmethod(make)
    return tuple_cls


def _make_namedtuple(typename: str, fields: tuple[Field, ...]) -> Any:
    """A ``collections.namedtuple`` of the given fields whose construction (``cls(...)``,
    ``_make``, ``_replace``) converts each value as the field does.

    Every field is required, in the given order (``init=False`` ones too); defaults
    and init hooks of the source type do not take part. Invalid names raise the
    namedtuple's ``ValueError``.
    """
    tuple_cls = namedtuple(typename, [str(f.name) for f in fields])  # type: ignore[misc]
    tuple_cls.__annotations__ = {str(f.name): f.type for f in fields if f.type is not None}
    return _converting(tuple_cls, _ItemConversion(typename, fields))


def replace(obj: _T, /, **changes: Any) -> _T:
    """A copy of ``obj`` with the named fields replaced (frozen ones too), as
    :func:`dataclasses.replace`; it calls ``obj.__replace__``."""
    method = getattr(obj, "__replace__", None)
    if method is None:
        raise TypeError(
            f"replace() should be called on dataclass instances, got {type(obj).__name__}"
        )
    return method(**changes)  # type: ignore[no-any-return]


def _is_instance(obj: Any) -> bool:
    return not isinstance(obj, type) and is_dataclass(obj)


def _rebuild(obj: Any, inner: Callable[[Any], Any]) -> Any:
    """``obj`` (a builtin container or a subclass of one) with ``inner`` applied inside;
    anything else deep-copied."""
    obj_type = type(obj)
    if isinstance(obj, tuple):
        if hasattr(obj, "_fields"):  # a namedtuple takes its items positionally
            return obj_type(*[inner(v) for v in obj])
        return obj_type(inner(v) for v in obj)
    if isinstance(obj, list):
        return obj_type(inner(v) for v in obj)
    if isinstance(obj, dict):
        if hasattr(obj_type, "default_factory"):  # defaultdict
            result = obj_type(obj.default_factory)  # type: ignore[attr-defined]
            for k, v in obj.items():
                result[inner(k)] = inner(v)
            return result
        return obj_type((inner(k), inner(v)) for k, v in obj.items())
    return copy.deepcopy(obj)


def _asdict_inner(obj: Any, dict_factory: Callable[..., Any]) -> Any:
    if type(obj) in _ATOMIC_TYPES:
        return obj

    def inner(v: Any) -> Any:
        return _asdict_inner(v, dict_factory)

    # FFI containers become their builtin analogues: the result is plain data.
    if isinstance(obj, (Array, List)):
        return [inner(v) for v in obj]
    if isinstance(obj, (Map, Dict)):
        return dict_factory([(inner(k), inner(v)) for k, v in obj.items()])
    if _is_instance(obj):
        return dict_factory([(f.name, inner(getattr(obj, f.name))) for f in fields(obj)])  # type: ignore[arg-type]
    if type(obj) is dict:
        return {inner(k): inner(v) for k, v in obj.items()}
    return _rebuild(obj, inner)


def _astuple_inner(obj: Any, tuple_factory: Callable[..., Any]) -> Any:
    if type(obj) in _ATOMIC_TYPES:
        return obj

    def inner(v: Any) -> Any:
        return _astuple_inner(v, tuple_factory)

    if isinstance(obj, (Array, List)):
        return [inner(v) for v in obj]
    if isinstance(obj, (Map, Dict)):
        return {inner(k): inner(v) for k, v in obj.items()}
    if _is_instance(obj):
        return tuple_factory([inner(getattr(obj, f.name)) for f in fields(obj)])  # type: ignore[arg-type]
    return _rebuild(obj, inner)


def asdict(obj: Any, *, dict_factory: Callable[..., Any] = dict) -> Any:
    """The fields of a dataclass instance as a new dict, recursively (as
    :func:`dataclasses.asdict`); FFI sequences become lists, FFI maps dicts.

    Raises ``TypeError`` unless ``obj`` is a ``@c_class`` / ``@py_class`` instance.
    """
    if not _is_instance(obj):
        raise TypeError("asdict() should be called on c_class / py_class instances")
    return _asdict_inner(obj, dict_factory)


def astuple(obj: Any, *, tuple_factory: Callable[..., Any] = tuple) -> Any:
    """The field values of a dataclass instance as a new tuple, recursively (as
    :func:`dataclasses.astuple`).

    Raises ``TypeError`` unless ``obj`` is a ``@c_class`` / ``@py_class`` instance.
    """
    if not _is_instance(obj):
        raise TypeError("astuple() should be called on c_class / py_class instances")
    return _astuple_inner(obj, tuple_factory)
