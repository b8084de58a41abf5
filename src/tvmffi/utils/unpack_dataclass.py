"""Dataclass values to tuples: :func:`unpack_dataclass_to_tuple`.

The conversion itself is C (``csrc/dataclass_unpack.c``): a dataclass instance
becomes the tuple of its field values, lists and tuples are rebuilt element by
element (keeping their type), dicts on their values (as plain dicts), and any other
value is returned as it is, never copied. What a class needs is worked out once, here,
from its fields' annotations (:func:`_extract_dataclass_to_tuple_schema`), and kept by
the C side per class: a field annotated with a leaf type (``int``, ``str``, ``int |
None``, ``dict[str, float]``...) is passed through, any other is looked at by its
value's type at run time.

A schema (``DataclassToTupleSchema``) maps each field name, in field order, to
``None`` (a leaf), :data:`UNPACK` (``"unpack"``: decided by the value at run time) or
the nested schema of a dataclass-typed field.
"""

from __future__ import annotations

import dataclasses
import keyword
import types
import typing
from typing import Any, Union

from .._core import unpack_dataclass_to_tuple

__all__ = ["UNPACK", "unpack_dataclass_to_tuple"]

#: A schema entry for a field whose value is unpacked by its type at run time.
UNPACK = "unpack"

DataclassToTupleSchema = dict[str, Any]
"""Field name -> ``None`` (leaf), ``"unpack"`` or a nested schema."""

_KNOWN_LEAF_TYPES: set[type] = {int, float, bool, str, bytes, complex, type(None)}

_UNION_ORIGINS = (Union, types.UnionType)


def _is_dataclass_type(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _is_leaf(tp: Any) -> bool:
    return tp in _KNOWN_LEAF_TYPES


def _args_all_leaf(args: tuple[Any, ...]) -> bool:
    return all(a is Ellipsis or _is_leaf(a) for a in args)


def _classify(tp: Any, memo: set[type]) -> Any:
    """The schema entry of one field annotated ``tp`` (resolved)."""
    if _is_leaf(tp):
        return None
    if _is_dataclass_type(tp):
        if tp in memo:  # expanded once already (or the class itself): decided at run time
            return UNPACK
        memo.add(tp)
        return _schema_of(tp, memo)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in _UNION_ORIGINS:
        return None if _args_all_leaf(args) else UNPACK
    if origin is dict and len(args) == 2:
        return None if _is_leaf(args[1]) else UNPACK
    if origin is tuple and args:
        return None if _args_all_leaf(args) else UNPACK
    # list (whose values always come back as a new list), bare containers, Any,
    # classes of unknown content, unresolved names: decided by the value.
    return UNPACK


def _schema_of(cls: type, memo: set[type]) -> DataclassToTupleSchema:
    fields = dataclasses.fields(cls)
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # a name the annotations use cannot be resolved here
        return {f.name: UNPACK for f in fields}
    return {f.name: _classify(hints.get(f.name, Any), memo) for f in fields}


def _extract_dataclass_to_tuple_schema(cls: type) -> DataclassToTupleSchema:
    """The schema of dataclass class ``cls``, from its fields' annotations.

    A field annotated with a leaf type, a union of leaves, or a ``dict``/``tuple`` of
    leaves is ``None``; a field of a dataclass type is that class's nested schema (the
    first time the class appears; after that, and for the class itself, ``"unpack"``,
    so self-references end); anything else (``Any``, ``list[...]``, other classes) is
    ``"unpack"``. When the annotations cannot be resolved, every field is
    ``"unpack"``.
    """
    if not _is_dataclass_type(cls):
        raise TypeError(f"Expected a dataclass class, got {cls!r}")
    return _schema_of(cls, {cls})


def _key_problem(name: object) -> Exception | None:
    """What is wrong with a schema key, as the exception to raise (or ``None``)."""
    if not isinstance(name, str):
        return TypeError(f"Schema field name must be a string, got {type(name).__name__}")
    if not name.isidentifier():
        return ValueError(f"Schema field name {name!r} is not a valid Python identifier")
    return (
        ValueError(f"Schema field name {name!r} is a Python keyword")
        if keyword.iskeyword(name)
        else None
    )


def _validate_dataclass_to_tuple_schema(schema: DataclassToTupleSchema) -> None:
    """Check that ``schema`` is a schema: a dict of identifiers (not keywords) to
    ``None``, ``"unpack"`` or a nested schema. ``TypeError``/``ValueError`` otherwise.

    Walked with a work list (nesting depth costs no Python recursion)."""
    pending: list[Any] = [schema]
    while pending:
        node = pending.pop()
        if not isinstance(node, dict):
            kind = type(node).__name__
            raise TypeError(f"DataclassToTupleSchema must be a dict, got {kind}")
        problems = (_key_problem(key) for key in node)
        found = next((p for p in problems if p is not None), None)
        if found is not None:
            raise found
        pending.extend(v for v in node.values() if v is not None and v != UNPACK)


def _dataclass_plan(cls: type) -> tuple[tuple[str, bool], ...] | None:
    """The C side's question on meeting type ``cls`` for the first time: ``None`` when
    it is not a dataclass, else ``(field name, decided at run time)`` per field."""
    if not _is_dataclass_type(cls):
        return None
    schema = _extract_dataclass_to_tuple_schema(cls)
    return tuple((name, entry is not None) for name, entry in schema.items())
