"""``repr()`` of object graphs in memory proportional to the text.

The runtime's printer (``ffi.ReprPrint``) keeps the text of every object it has
printed, so a chain of N objects holds N texts of up to N levels each: memory
quadratic in depth (8,000 levels of a ``py_class`` chain took ~600 MB). Here the
objects the runtime would print field by field (``type_key(name=value, ...)``: a
reflected object, not of the runtime's own kinds, without a ``__ffi_repr__`` hook of
its own or of an ancestor), and the containers between them (``(a, b)``, ``[a]``,
``{k: v}``), are written by one loop over an explicit stack into one list of parts;
every other value (numbers, strings, tensors, objects with a hook) is printed by the
runtime, so the text is the runtime's. A cycle or ``TVM_FFI_REPR_WITH_ADDR`` leaves the whole
graph to the runtime, whose notation (``...``, addresses) it then gets.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from . import _core
from ._core import Object
from .function import _cached_global_func

# type index -> (type key, (name, reflected getter) of each field it prints), or None:
# the runtime prints it.
_Layout = tuple[str, tuple[tuple[str, Any], ...]]
_LAYOUT: dict[int, _Layout | None] = {}


class _Cycle(Exception):
    """The graph reaches an object being printed: the runtime's ``...`` notation."""


def _layout(obj: Any) -> _Layout | None:
    index = obj.type_index
    if index in _LAYOUT:
        return _LAYOUT[index]
    from .object import _type_info_by_index

    info = _type_info_by_index(index)
    chain = [info]
    while (parent := chain[-1].parent_type_info) is not None:
        chain.append(parent)
    # The runtime prints its own kinds (``ffi.*``: enums, errors, containers) its way.
    own_kind = any(t.type_key.startswith("ffi.") and t.type_key != "ffi.Object" for t in chain)
    hooked = any(_core._lookup_type_attr(t.type_index, "__ffi_repr__") is not None for t in chain)
    fields = [f for t in reversed(chain) for f in t.fields or ()]
    # Read through the reflected field itself: a class may shadow the name in Python.
    names = tuple((f.name, f.as_property(Object)) for f in fields if f.c_repr)
    # No field shown: the runtime writes the bare type key.
    layout = None if own_kind or hooked or not names else (info.type_key, names)
    _LAYOUT[index] = layout
    return layout


def forget_layouts() -> None:
    """Drop what is known of types' fields (a type's fields were registered anew)."""
    _LAYOUT.clear()


def print_graph(root: Any) -> str:
    """The runtime's text for ``root``, built in memory proportional to it."""
    runtime = _cached_global_func("ffi.ReprPrint")
    if os.environ.get("TVM_FFI_REPR_WITH_ADDR") or _layout(root) is None:
        return str(runtime(root))
    try:
        return _print_fields(root, runtime)
    except _Cycle:
        return str(runtime(root))


@functools.cache
def _container_indices() -> tuple[frozenset[int], frozenset[int], frozenset[int]]:
    """Type indices of (Array and List, List, Map and Dict): containers are told apart by
    the runtime's type, so this module needs no container classes (a layer above it)."""
    keys = ("ffi.Array", "ffi.List", "ffi.Map", "ffi.Dict")
    array, lst, map_, dict_ = (int(_core._type_key_to_index(k) or -1) for k in keys)
    return frozenset((array, lst)), frozenset((lst,)), frozenset((map_, dict_))


def _type_index(item: Any) -> int | None:
    return item.type_index if isinstance(item, _core.Object) else None


def _print_fields(root: Any, runtime: Any) -> str:
    sequences, lists, mappings = _container_indices()
    parts: list[str] = []
    open_handles: set[int] = set()  # objects and containers whose text is being written
    # Work items, last first: ("text", str), ("value", v) or ("close", handle).
    work: list[tuple[str, Any]] = [("value", root)]

    def enter(item: Any, opening: str, closing: str, pieces: list[tuple[str, Any]]) -> None:
        handle = item.__chandle__()
        if handle in open_handles:
            raise _Cycle
        open_handles.add(handle)
        parts.append(opening)
        work.append(("close", handle))
        work.append(("text", closing))
        work.extend(reversed(pieces))

    while work:
        kind, item = work.pop()
        if kind == "text":
            parts.append(item)
        elif kind == "close":
            open_handles.discard(item)
        elif (index := _type_index(item)) in sequences:
            pieces = _separated([("value", v) for v in item])
            is_list = index in lists
            closing = "]" if is_list else ",)" if len(item) == 1 else ")"
            enter(item, "[" if is_list else "(", closing, pieces)
        elif index in mappings:
            pairs = [[("value", k), ("text", ": "), ("value", v)] for k, v in item.items()]
            enter(item, "{", "}", _separated(pairs, flat=True))
        elif isinstance(item, _core.Object) and (layout := _layout(item)) is not None:
            key, names = layout
            fields = [[("text", f"{n}="), ("value", get.__get__(item))] for n, get in names]
            enter(item, f"{key}(", ")", _separated(fields, flat=True))
        else:
            parts.append(str(runtime(item)))
    return "".join(parts)


def _separated(items: list[Any], *, flat: bool = False) -> list[tuple[str, Any]]:
    """The work items of ``items`` with ``", "`` between them (``flat``: each item is a
    list of work items)."""
    out: list[tuple[str, Any]] = []
    for i, item in enumerate(items):
        if i:
            out.append(("text", ", "))
        out.extend(item if flat else [item])
    return out
