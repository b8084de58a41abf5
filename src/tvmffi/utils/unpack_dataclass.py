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
    """Whether values of annotation ``tp`` certainly hold no dataclass: a leaf type, or
    a tuple/dict/set/union of leaves only (``...`` of ``tuple[int, ...]`` included).
    Anything else (``Any``, a string not resolved, ``list``, a class) is not certain."""
    origin = typing.get_origin(tp)
    if origin is None:
        return tp is Ellipsis or (isinstance(tp, type) and tp in _LEAF_TYPES)
    args = typing.get_args(tp)
    return origin in _LEAF_GENERIC_ORIGINS and bool(args) and all(map(_is_leaf_annotation, args))


def _entry_for(tp: Any, seen: set[type]) -> str | dict[str, Any] | None:
    """The schema entry of a field annotated ``tp``: a nested schema for a dataclass
    (one already being expanded, a self reference, dispatches at run time), ``None``
    for a certain leaf, :data:`UNPACK` for the rest."""
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return UNPACK if tp in seen else _extract_dataclass_to_tuple_schema(tp, memo=seen)
    return None if _is_leaf_annotation(tp) else UNPACK


def _hints(cls: type) -> dict[str, Any]:
    """``cls``'s resolved annotations; none when they do not resolve (a reference to a
    class local to a function): every field is then decided per value."""
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError, AttributeError):
        return {}


def _extract_dataclass_to_tuple_schema(
    cls: type, *, memo: set[type] | None = None
) -> dict[str, Any]:
    """The unpacking schema of dataclass ``cls``, from its resolved annotations
    (``memo``: the classes being expanded, shared by the nested calls)."""
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise TypeError(f"Expected a dataclass class, got {cls!r}")
    seen = set() if memo is None else memo
    seen.add(cls)
    hints = _hints(cls)
    return {f.name: _entry_for(hints.get(f.name, f.type), seen) for f in dataclasses.fields(cls)}


def _check_name(name: Any) -> None:
    """Refuse a field name that is not a plain identifier (it is written into source)."""
    if not isinstance(name, str):
        raise TypeError(f"Schema field name must be a string, got {type(name).__name__}")
    if not name.isidentifier():
        raise ValueError(f"Schema field name {name!r} is not a valid Python identifier")
    if keyword.iskeyword(name):
        raise ValueError(f"Schema field name {name!r} is a Python keyword")


def _validate_dataclass_to_tuple_schema(schema: dict[str, Any]) -> None:
    """Check that ``schema`` and the schemas nested in it only name fields by plain
    identifiers, before any code is built from it."""
    todo: list[Any] = [schema]
    while todo:
        current = todo.pop()
        if not isinstance(current, dict):
            raise TypeError(f"DataclassToTupleSchema must be a dict, got {type(current).__name__}")
        for name in current:
            _check_name(name)
        todo.extend(e for e in current.values() if e is not None and e != UNPACK)


def _item_source(base: str, name: str, entry: Any) -> str:
    """Source reading field ``name`` of the object at ``base``, per its schema entry."""
    attr = f"{base}.{name}"
    if entry is None:
        return attr
    if entry == UNPACK:
        return f"_dispatch({attr})"
    return _tuple_expression(attr, entry)


def _tuple_expression(base: str, schema: dict[str, Any]) -> str:
    """Source of a tuple expression reading ``schema``'s fields from ``base`` (every item
    followed by a comma: a one-item tuple needs it, the others accept it)."""
    return "(" + "".join(f"{_item_source(base, n, e)}, " for n, e in schema.items()) + ")"


def _compile_unpacker(cls: type) -> Callable[[Any], Any]:
    schema = _extract_dataclass_to_tuple_schema(cls)
    _validate_dataclass_to_tuple_schema(schema)
    source = f"def _unpack(_x):\n    return {_tuple_expression('_x', schema)}\n"
    scope: dict[str, Any] = {}
    # The generated code sees only the dispatcher; field names were validated above.
    exec(source, {"__builtins__": {}, "_dispatch": unpack_dataclass_to_tuple}, scope)
    unpack: Callable[[Any], Any] = scope["_unpack"]
    return unpack


# Handlers of the values that are not dataclasses, one per kind.
def _identity(x: Any) -> Any:
    return x


def _unpack_record(x: Any) -> Any:  # a named tuple takes its items positionally
    return type(x)(*map(unpack_dataclass_to_tuple, x))


def _unpack_sequence(x: Any) -> Any:
    return type(x)(map(unpack_dataclass_to_tuple, x))


def _unpack_mapping(x: Any) -> Any:
    return {k: unpack_dataclass_to_tuple(v) for k, v in x.items()}


def _handler_for(cls: type) -> Callable[[Any], Any]:
    """How values of type ``cls`` are unpacked (decided once per type and thread)."""
    if dataclasses.is_dataclass(cls):
        return _compile_unpacker(cls)
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return _unpack_record
    if issubclass(cls, (list, tuple)):
        return _unpack_sequence
    if issubclass(cls, dict):
        return _unpack_mapping
    return _identity


def unpack_dataclass_to_tuple(x: Any) -> Any:
    """Recursively unpack dataclass instances in ``x`` into tuples of field values.

    Dataclass instances become tuples of their (unpacked) fields; lists and
    tuples are rebuilt with the same type (named tuples included) from their
    unpacked elements; dicts get their values unpacked; anything else is
    returned unchanged and uncopied.
    """
    handlers: dict[type, Callable[[Any], Any]] | None = getattr(_local, "handlers", None)
    if handlers is None:
        handlers = _local.handlers = {}
    handler = handlers.get(type(x))
    if handler is None:
        handler = handlers[type(x)] = _handler_for(type(x))
    return handler(x)
