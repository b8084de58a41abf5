"""FFI containers: Array, List (sequences), Map, Dict (mappings), Shape.

Elements are converted to Python lazily, on access.
"""

from __future__ import annotations

from collections.abc import (
    ItemsView,
    Iterable,
    Iterator,
    KeysView,
    Mapping,
    MutableMapping,
    MutableSequence,
    Sequence,
    ValuesView,
)
from typing import Any

from . import _core
from ._core import Object
from .function import _cached_global_func as _g
from .object import _register_class

__all__ = ["Array", "Dict", "List", "Map", "Shape"]

_seq_size = _core._seq_size
_seq_getitem = _core._seq_getitem
_init_handle = _core._init_handle


def _ne_from_eq(self: Any, other: object) -> bool:
    # Object's C comparison answers != by handle; content-compared containers
    # must answer it from their own __eq__.
    r = self.__eq__(other)
    return r if r is NotImplemented else not r


class _FFISequence(Object):
    """Read side shared by Array and List: lazy element access, slices of the
    same type, and equality with any FFI or Python list/tuple by content."""

    __slots__ = ()

    def __len__(self) -> int:
        return _seq_size(self)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            n = _seq_size(self)
            items = [_seq_getitem(self, j) for j in range(*i.indices(n))]
            return type(self)(items)  # type: ignore[call-arg]
        return _seq_getitem(self, i)

    def __iter__(self) -> Iterator[Any]:
        # Like a list iterator: stops at the current end, so a list shrunk
        # meanwhile (by this or another thread) ends the loop early instead
        # of raising IndexError.
        i = 0
        while True:
            try:
                item = _seq_getitem(self, i)
            except IndexError:
                return
            yield item
            i += 1

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Object):
            if not isinstance(other, _FFISequence):
                return False
            if self.same_as(other):
                return True
        elif not isinstance(other, (list, tuple)):
            return NotImplemented
        n = len(self)
        if n != len(other):
            return False
        other_seq: Any = other
        return all(_seq_getitem(self, i) == other_seq[i] for i in range(n))

    __ne__ = _ne_from_eq

    def __repr__(self) -> str:
        return "[" + ", ".join(repr(x) for x in self) + "]"


class Array(_FFISequence, Sequence[Any]):
    """Immutable FFI array (``ffi.Array``).

    Hashable by content, like a tuple it compares equal to.
    """

    __slots__ = ()

    def __init__(self, items: Iterable[Any] = ()) -> None:
        _init_handle(self, _g("ffi.Array"), *items)

    def __hash__(self) -> int:
        return hash(tuple(self))


class List(_FFISequence, MutableSequence[Any]):
    """Mutable FFI list (``ffi.List``). Unhashable, like ``list``."""

    __slots__ = ()

    def __init__(self, items: Iterable[Any] = ()) -> None:
        _init_handle(self, _g("ffi.List"), *items)

    def _norm(self, i: int) -> int:
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("list index out of range")
        return i

    def __setitem__(self, i: Any, value: Any) -> None:
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                raise ValueError("extended slice assignment is not supported")
            _g("ffi.ListReplaceSlice")(self, start, max(start, stop), list(value))
            return
        _g("ffi.ListSetItem")(self, self._norm(i), value)

    def __delitem__(self, i: Any) -> None:
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                raise ValueError("extended slice deletion is not supported")
            if stop > start:
                _g("ffi.ListEraseRange")(self, start, stop)
            return
        _g("ffi.ListErase")(self, self._norm(i))

    def insert(self, index: int, value: Any) -> None:
        """Insert ``value`` before ``index`` (clamped like ``list.insert``)."""
        n = len(self)
        if index < 0:
            index = max(0, index + n)
        _g("ffi.ListInsert")(self, min(index, n), value)

    def append(self, value: Any) -> None:
        """Append ``value`` at the end."""
        _g("ffi.ListAppend")(self, value)

    def pop(self, index: int = -1) -> Any:
        """Remove and return the element at ``index`` (the last by default)."""
        return _g("ffi.ListPop")(self, self._norm(index))

    def reverse(self) -> None:
        """Reverse the list in place."""
        _g("ffi.ListReverse")(self)

    def clear(self) -> None:
        """Remove every element."""
        _g("ffi.ListClear")(self)

    __hash__ = None  # type: ignore[assignment]


def _flatten(mapping: Any) -> list[Any]:
    items = mapping.items() if hasattr(mapping, "items") else mapping
    out: list[Any] = []
    for k, v in items:
        out.append(k)
        out.append(v)
    return out


class _ItemsView(ItemsView[Any, Any]):
    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        return self._mapping._walk(3)  # type: ignore[attr-defined, no-any-return]


class _ValuesView(ValuesView[Any]):
    def __iter__(self) -> Iterator[Any]:
        return self._mapping._walk(1)  # type: ignore[attr-defined, no-any-return]


class _MapBase(Object):
    """Read side shared by Map and Dict; the runtime functions differ by name."""

    __slots__ = ()
    _size: str
    _get: str
    _count: str
    _iter: str

    def __len__(self) -> int:
        return int(_g(self._size)(self))

    def __getitem__(self, key: Any) -> Any:
        try:
            return _g(self._get)(self, key)
        except KeyError:
            raise KeyError(key) from None

    def __contains__(self, key: object) -> bool:
        try:
            return bool(_g(self._count)(self, key))
        except TypeError:
            return False

    def _walk(self, what: int) -> Iterator[Any]:
        n = len(self)
        if n == 0:
            return
        functor = _g(self._iter)(self)
        for _ in range(n):
            if what == 3:
                yield (functor(0), functor(1))
            else:
                yield functor(what)
            if not functor(2):
                break

    def __iter__(self) -> Iterator[Any]:
        return self._walk(0)

    def keys(self) -> KeysView[Any]:
        """A view of the keys, in the map's iteration order."""
        return KeysView(self)

    def values(self) -> ValuesView[Any]:
        """A view of the values, in the map's iteration order."""
        return _ValuesView(self)

    def items(self) -> ItemsView[Any, Any]:
        """A view of the (key, value) pairs, in the map's iteration order."""
        return _ItemsView(self)

    def get(self, key: Any, default: Any = None) -> Any:
        """``self[key]`` if present, else ``default``."""
        try:
            return self[key]
        except (KeyError, TypeError):
            return default

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Object):
            if not isinstance(other, _MapBase):
                return False
            if self.same_as(other):
                return True
        elif not isinstance(other, Mapping):
            return NotImplemented
        if len(self) != len(other):
            return False
        other_map: Any = other
        return all(k in other_map and other_map[k] == v for k, v in self._walk(3))

    __ne__ = _ne_from_eq

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in self._walk(3)) + "}"


class Map(_MapBase, Mapping[Any, Any]):
    """Immutable FFI map (``ffi.Map``). Hashable by content (its items)."""

    __slots__ = ()
    _size, _get, _count, _iter = "ffi.MapSize", "ffi.MapGetItem", "ffi.MapCount", (
        "ffi.MapForwardIterFunctor"
    )

    def __init__(self, mapping: Any = ()) -> None:
        _init_handle(self, _g("ffi.Map"), *_flatten(mapping))

    def __hash__(self) -> int:
        return hash(frozenset(self._walk(3)))


class Dict(_MapBase, MutableMapping[Any, Any]):
    """Mutable FFI dict (``ffi.Dict``). Unhashable, like ``dict``."""

    __slots__ = ()
    _size, _get, _count, _iter = "ffi.DictSize", "ffi.DictGetItem", "ffi.DictCount", (
        "ffi.DictForwardIterFunctor"
    )

    def __init__(self, mapping: Any = ()) -> None:
        _init_handle(self, _g("ffi.Dict"), *_flatten(mapping))

    def __setitem__(self, key: Any, value: Any) -> None:
        _g("ffi.DictSetItem")(self, key, value)

    def __delitem__(self, key: Any) -> None:
        if key not in self:
            raise KeyError(key)
        _g("ffi.DictErase")(self, key)

    def clear(self) -> None:
        """Remove every entry."""
        _g("ffi.DictClear")(self)

    __hash__ = None  # type: ignore[assignment]


class Shape(Object, Sequence[Any]):
    """Immutable FFI shape (``ffi.Shape``): a tuple of ints."""

    __slots__ = ()

    def __init__(self, dims: Iterable[int] = ()) -> None:
        _init_handle(self, _g("ffi.Shape"), *[int(d) for d in dims])

    def _tuple(self) -> tuple[int, ...]:
        return _core._shape_tuple(self)

    def __len__(self) -> int:
        return len(self._tuple())

    def __getitem__(self, i: Any) -> Any:
        return self._tuple()[i]

    def __iter__(self) -> Iterator[int]:
        return iter(self._tuple())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Shape):
            return self._tuple() == other._tuple()
        if isinstance(other, (tuple, list)):
            return self._tuple() == tuple(other)
        if isinstance(other, Object):
            return False
        return NotImplemented

    __ne__ = _ne_from_eq

    def __hash__(self) -> int:
        return hash(self._tuple())

    def __repr__(self) -> str:
        return f"Shape({self._tuple()!r})"


for _cls, _key in (
    (Array, "ffi.Array"),
    (List, "ffi.List"),
    (Map, "ffi.Map"),
    (Dict, "ffi.Dict"),
    (Shape, "ffi.Shape"),
):
    _register_class(_cls, _key, install=False)
