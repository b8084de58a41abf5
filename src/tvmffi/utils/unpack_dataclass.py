"""Recursive dataclass-to-tuple unpacking, compiled once per dataclass.

``unpack_dataclass_to_tuple(x)`` turns a (possibly nested) ``dataclasses``
instance into nested tuples of its field values, the shape
``dataclasses.astuple`` gives, without deep-copying leaf values. Lists, tuples
(named tuples keep their type) and dicts are walked element by element; every
other value is returned as is.

Each dataclass gets one generated unpacker: its field annotations decide, per
field, whether the value is a leaf (read as is), a nested dataclass known from
the annotation (unpacked inline), or something to dispatch on at run time
(``Any``, lists, unknown classes). Unpackers are cached per thread, so a call
on a known class costs one dict lookup plus the generated expression.
"""

from __future__ import annotations

import dataclasses
import keyword
import threading
import types
import typing
from collections.abc import Callable
from typing import Any, Union

__all__ = ["unpack_dataclass_to_tuple"]

#: A field schema: ``None`` (leaf), :data:`UNPACK` (dispatch at run time) or
#: a nested schema (a dataclass known from the annotation), keyed by field name.
DataclassToTupleSchema = dict

#: The schema entry of a field whose value is unpacked by run-time dispatch.
UNPACK = "unpack"

# Types whose values never hold a dataclass and are never rewritten.
_LEAF_TYPES: frozenset[type] = frozenset({int, float, str, bool, bytes, complex, type(None)})

# Generic origins that are leaves when every type argument is one. ``list`` is
# not among them: a list is rebuilt element by element.
_LEAF_GENERIC_ORIGINS: tuple[Any, ...] = (
    tuple,
    dict,
    set,
    frozenset,
    Union,
    types.UnionType,
)

_local = threading.local()


def _is_leaf_annotation(tp: Any) -> bool:
    """Whether values of annotation ``tp`` certainly hold no dataclass."""
    if isinstance(tp, type):
        return tp in _LEAF_TYPES
    if tp is Ellipsis:  # tuple[int, ...]
        return True
    if typing.get_origin(tp) in _LEAF_GENERIC_ORIGINS:
        targs = typing.get_args(tp)
        return len(targs) > 0 and all(_is_leaf_annotation(a) for a in targs)
    return False


def _field_schema(tp: Any, seen: set[type]) -> str | dict[str, Any] | None:
    """The schema entry of a field annotated ``tp``; leaf only when certain."""
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        # A class already being expanded (self-reference) is dispatched at run time.
        return UNPACK if tp in seen else _extract_dataclass_to_tuple_schema(tp, memo=seen)
    if _is_leaf_annotation(tp):
        return None
    return UNPACK


def _extract_dataclass_to_tuple_schema(
    cls: type, *, memo: set[type] | None = None
) -> dict[str, Any]:
    """The unpacking schema of dataclass ``cls``, from its resolved annotations.

    Annotations that cannot be resolved (``typing.get_type_hints`` fails, e.g. a
    reference to a class local to a function) leave every field to run-time
    dispatch.
    """
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"Expected a dataclass class, got {cls!r}")
    seen = set() if memo is None else memo
    seen.add(cls)
    try:
        hints = typing.get_type_hints(cls)
    except (NameError, TypeError, AttributeError):
        hints = {}
    schema: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        tp = hints.get(f.name, f.type)
        # An unresolved (string) annotation, Any or object: decided per value.
        if isinstance(tp, str) or tp is Any or tp is object:
            schema[f.name] = UNPACK
        else:
            schema[f.name] = _field_schema(tp, seen)
    return schema


def _validate_dataclass_to_tuple_schema(schema: dict[str, Any]) -> None:
    """Check that ``schema`` only names fields by plain identifiers.

    The names are written into generated source, so anything but an
    identifier that is not a keyword is refused before any code is built.
    """
    if not isinstance(schema, dict):
        raise TypeError(f"DataclassToTupleSchema must be a dict, got {type(schema).__name__}")
    for name, entry in schema.items():
        if not isinstance(name, str):
            raise TypeError(f"Schema field name must be a string, got {type(name).__name__}")
        if not name.isidentifier():
            raise ValueError(f"Schema field name {name!r} is not a valid Python identifier")
        if keyword.iskeyword(name):
            raise ValueError(f"Schema field name {name!r} is a Python keyword")
        if entry is None or entry == UNPACK:
            continue
        _validate_dataclass_to_tuple_schema(entry)


def _tuple_expression(base: str, schema: dict[str, Any]) -> str:
    """Source of a tuple expression reading ``schema``'s fields from ``base``."""
    items = []
    for name, entry in schema.items():
        attr = f"{base}.{name}"
        if entry is None:
            items.append(attr)
        elif entry == UNPACK:
            items.append(f"_dispatch({attr})")
        else:
            items.append(_tuple_expression(attr, entry))
    if len(items) == 1:
        return f"({items[0]},)"
    return "(" + ", ".join(items) + ")"


def _compile_unpacker(cls: type) -> Callable[[Any], Any]:
    schema = _extract_dataclass_to_tuple_schema(cls)
    _validate_dataclass_to_tuple_schema(schema)
    source = f"def _unpack(_x):\n    return {_tuple_expression('_x', schema)}\n"
    scope: dict[str, Any] = {}
    # The generated code sees only the dispatcher; field names were validated above.
    exec(source, {"__builtins__": {}, "_dispatch": unpack_dataclass_to_tuple}, scope)
    unpack: Callable[[Any], Any] = scope["_unpack"]
    return unpack


def _identity(x: Any) -> Any:
    return x


def unpack_dataclass_to_tuple(x: Any) -> Any:
    """Recursively unpack dataclass instances in ``x`` into tuples of field values.

    Dataclass instances become tuples of their (unpacked) fields; lists and
    tuples are rebuilt with the same type (named tuples included) from their
    unpacked elements; dicts get their values unpacked; anything else is
    returned unchanged and uncopied.
    """
    cache: dict[type, Callable[[Any], Any]]
    try:
        cache = _local.cache
    except AttributeError:
        cache = _local.cache = {}
    cls = type(x)
    fn = cache.get(cls)
    if fn is not None:
        return fn(x)
    if dataclasses.is_dataclass(cls):
        fn = cache[cls] = _compile_unpacker(cls)
        return fn(x)
    if isinstance(x, tuple) and hasattr(cls, "_fields"):
        return cls(*(unpack_dataclass_to_tuple(e) for e in x))
    if isinstance(x, (list, tuple)):
        return cls(unpack_dataclass_to_tuple(e) for e in x)
    if isinstance(x, dict):
        return {k: unpack_dataclass_to_tuple(v) for k, v in x.items()}
    cache[cls] = _identity
    return x
