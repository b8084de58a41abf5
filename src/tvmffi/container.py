"""FFI containers: Array, List (sequences), Map, Dict (mappings), Shape.

Elements are converted to Python lazily, on access. Semantics follow the
official binding (``tvm_ffi.container``): slices are Python lists, ``+``
concatenates into a new container, ``==`` and ``hash`` are structural
(``ffi.RecursiveEq`` / ``ffi.RecursiveHash``), and ``repr`` is the runtime's
``ffi.ReprPrint``.
"""

from __future__ import annotations

import itertools
from collections.abc import (
    Callable,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
    MutableSequence,
    Sequence,
)
from collections.abc import (
    ItemsView as _ItemsViewBase,
)
from collections.abc import (
    KeysView as _KeysViewBase,
)
from collections.abc import (
    ValuesView as _ValuesViewBase,
)
from typing import Any, SupportsIndex

from . import _core
from ._core import Object
from ._lineage import _deep_copy
from .function import _cached_global_func as _g
from .object import MISSING, _register_class

__all__ = ["MISSING", "Array", "Dict", "List", "Map", "Shape"]

_seq_size = _core._seq_size
_seq_getitem = _core._seq_getitem
_init_handle = _core._init_handle


# ``pop``'s "no default given" (the runtime's MISSING is a value a Dict may hold).
_ABSENT: Any = object()


def _one_default(method: str, given: tuple[Any, ...]) -> Any:
    """The optional default of ``method(key[, default])``; ``_ABSENT`` when not given."""
    if len(given) > 1:
        raise TypeError(f"{method} expected at most 2 arguments, got {1 + len(given)}")
    return given[0] if given else _ABSENT


def _normalize_index(length: int, idx: SupportsIndex) -> int:
    """``idx`` as a non-negative index below ``length``; ``IndexError`` otherwise."""
    index = idx.__index__()
    if index < -length or index >= length:
        raise IndexError(f"Index out of range. size: {length}, got index {index}")
    return index + length if index < 0 else index


def _negated(self: Any, other: object) -> Any:
    """``!=`` as the negation of the class's own ``==`` (``NotImplemented`` passes through)."""
    same = self.__eq__(other)
    return same if same is NotImplemented else not same


def _structurally_equal(a: object, b: object) -> bool:
    return bool(_g("ffi.RecursiveEq")(a, b))


class _FFISequence(Object):
    """Read side shared by Array and List."""

    __slots__ = ()
    _contains: str

    def __len__(self) -> int:
        return _seq_size(self)

    def __getitem__(self, idx: Any) -> Any:
        """One element, or a Python ``list`` for a slice (as the official binding)."""
        if isinstance(idx, slice):
            return [_seq_getitem(self, i) for i in range(*idx.indices(_seq_size(self)))]
        return _seq_getitem(self, idx)

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

    def __contains__(self, value: object) -> bool:
        # The runtime's containment test compares objects by identity, and a list or
        # tuple would become a fresh Array there, never found: containers are looked
        # for element by element with ``==``, everything else by the runtime.
        if isinstance(value, (list, tuple, _FFISequence, _MapBase)):
            return any(item == value for item in self)
        try:
            return bool(_g(self._contains)(self, value))
        except TypeError:  # a value the FFI cannot hold is in no FFI sequence
            return False

    def __eq__(self, other: object) -> bool:
        """Structural equality (``ffi.RecursiveEq``) with an Array/List, or a list/tuple
        (compared as this container type holding its items); else ``NotImplemented``."""
        if isinstance(other, _FFISequence):
            return _structurally_equal(self, other)
        if not isinstance(other, (list, tuple)):
            return NotImplemented
        try:
            peer = type(self)(other)  # type: ignore[call-arg]
        except (TypeError, ValueError):  # items the FFI cannot hold: not equal
            return False
        return _structurally_equal(self, peer)

    __ne__ = _negated

    def __hash__(self) -> int:
        """Structural hash (``ffi.RecursiveHash``)."""
        return int(_g("ffi.RecursiveHash")(self))

    def __bool__(self) -> bool:
        return _seq_size(self) > 0

    def __add__(self, other: Iterable[Any]) -> Any:
        return type(self)(itertools.chain(self, other))  # type: ignore[call-arg]

    def __radd__(self, other: Iterable[Any]) -> Any:
        return type(self)(itertools.chain(other, self))  # type: ignore[call-arg]

    def __deepcopy__(self, memo: Any = None) -> Any:
        return _deep_copy(self, memo)


class Array(_FFISequence, Sequence[Any]):
    """Immutable FFI array (``ffi.Array``): a ``Sequence``.

    ``tvmffi.convert`` (and every call) turns lists and tuples into Arrays. Elements
    are converted like call arguments; slices give Python lists, ``+`` a new Array,
    and ``==``/``hash`` are structural (an Array also equals a list or tuple of equal
    content).

    Parameters
    ----------
    input_list : iterable, optional
        The elements (default: none).

    Examples
    --------
    >>> import tvmffi
    >>> a = tvmffi.Array([1, "two", 3.5])
    >>> len(a), a[1], a[1:], a == [1, "two", 3.5]
    (3, 'two', ['two', 3.5], True)
    """

    __slots__ = ()
    _contains = "ffi.ArrayContains"

    def __init__(self, input_list: Iterable[Any] = ()) -> None:
        _init_handle(self, _g("ffi.Array"), *input_list)


# List and Dict mutations go through the runtime's builtins (ffi.ListSetItem,
# ffi.DictClear, ...). What such a call is about to drop that only the container
# references is held across it by the call itself (csrc/teardown.c's
# tvmffi_hold_dropped): its last reference then goes from tvmffi, which frees a
# deep value iteratively, not from inside the runtime's recursive deleters (a C
# stack overflow at ~100 000 levels).
class List(_FFISequence, MutableSequence[Any]):
    """Mutable FFI list (``ffi.List``): a ``MutableSequence`` shared by every reference.

    A List passed to a function is the same List there: changes made by the callee
    are visible to the caller, and the other way round.

    Parameters
    ----------
    input_list : iterable, optional
        The elements (default: none).

    Examples
    --------
    >>> import tvmffi
    >>> lst = tvmffi.List([1, 2])
    >>> lst.append(3); lst[0] = 0
    >>> list(lst), lst.pop(), len(lst)
    ([0, 2, 3], 3, 2)
    """

    __slots__ = ()
    _contains = "ffi.ListContains"

    def __init__(self, input_list: Iterable[Any] = ()) -> None:
        _init_handle(self, _g("ffi.List"), *input_list)

    def __setitem__(self, index: Any, value: Any) -> None:
        """``lst[i] = v``; ``lst[a:b] = items`` replaces a run (any length); an extended
        slice (``lst[a:b:k] = items``) takes exactly as many items as it selects."""
        if not isinstance(index, slice):
            _g("ffi.ListSetItem")(self, _normalize_index(len(self), index), value)
            return
        items = list(value)  # first: ``value`` may be this very list, or a generator
        span = range(*index.indices(len(self)))
        if span.step == 1:
            # An empty run (``lst[3:1]``) is an insertion point at its start.
            _g("ffi.ListReplaceSlice")(self, span.start, max(span.start, span.stop), items)
            return
        if len(items) != len(span):
            raise ValueError(
                f"attempt to assign sequence of size {len(items)} "
                f"to extended slice of size {len(span)}"
            )
        for position, item in zip(span, items, strict=True):
            _g("ffi.ListSetItem")(self, position, item)

    def __delitem__(self, index: Any) -> None:
        """``del lst[i]``, or every element a slice selects."""
        if not isinstance(index, slice):
            _g("ffi.ListErase")(self, _normalize_index(len(self), index))
            return
        span = range(*index.indices(len(self)))
        ascending = span if span.step > 0 else span[::-1]
        if not ascending:
            return
        if ascending.step == 1:
            _g("ffi.ListEraseRange")(self, ascending.start, ascending.stop)
            return
        for position in reversed(ascending):  # from the back: earlier positions stay put
            _g("ffi.ListErase")(self, position)

    def insert(self, index: int, value: Any) -> None:
        """Insert ``value`` before ``index`` (clamped like ``list.insert``: a slice start)."""
        start = slice(index, None).indices(len(self))[0]
        _g("ffi.ListInsert")(self, start, value)

    def append(self, value: Any) -> None:
        """Append ``value`` at the end."""
        _g("ffi.ListAppend")(self, value)

    def extend(self, values: Iterable[Any]) -> None:
        """Append every element of ``values``."""
        end = len(self)
        self[end:end] = values

    def pop(self, index: int = -1) -> Any:
        """Remove and return the element at ``index`` (the last by default)."""
        n = len(self)
        if n == 0:
            raise IndexError("pop from empty list")
        return _g("ffi.ListPop")(self, _normalize_index(n, index))

    def reverse(self) -> None:
        """Reverse the list in place."""
        _g("ffi.ListReverse")(self)

    def clear(self) -> None:
        """Remove every element."""
        _g("ffi.ListClear")(self)

    __hash__ = _FFISequence.__hash__


class _MapView:
    """Shared part of the key, value and item views: a live view of the map."""

    _mapping: Any

    def __init__(self, backend_map: Any) -> None:
        self._mapping = backend_map

    def __len__(self) -> int:
        return len(self._mapping)


class KeysView(_MapView, _KeysViewBase[Any]):
    """Live view of a Map's or Dict's keys."""

    def __iter__(self) -> Iterator[Any]:
        return self._mapping._walk(0)  # type: ignore[no-any-return]

    def __contains__(self, key: object) -> bool:
        return key in self._mapping


class ValuesView(_MapView, _ValuesViewBase[Any]):
    """Live view of a Map's or Dict's values."""

    def __iter__(self) -> Iterator[Any]:
        return self._mapping._walk(1)  # type: ignore[no-any-return]


class ItemsView(_MapView, _ItemsViewBase[Any, Any]):
    """Live view of a Map's or Dict's (key, value) pairs."""

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        return self._mapping._walk(3)  # type: ignore[no-any-return]

    def __contains__(self, item: object) -> bool:
        if not isinstance(item, tuple) or len(item) != 2:
            return False
        value = self._mapping.get(item[0], MISSING)
        return value is not MISSING and bool(value == item[1])


def _flatten(mapping: Mapping[Any, Any] | None) -> list[Any]:
    """``k0, v0, k1, v1, ...``: the arguments the runtime's Map and Dict constructors take."""
    return [] if mapping is None else list(itertools.chain.from_iterable(mapping.items()))


class _MapBase(Object):
    """Read side shared by Map and Dict; the runtime functions differ by name."""

    __slots__ = ()
    _size: str
    _get: str
    _get_or_missing: str
    _count: str
    _iter: str

    def __len__(self) -> int:
        return int(_g(self._size)(self))

    def __bool__(self) -> bool:
        return len(self) > 0

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
        """Keys (0), values (1) or items (3) in the map's iteration order.

        A snapshot taken in one step (no Python code runs during it), so a map
        another thread mutates meanwhile is never walked by a stale runtime
        iterator; like ``list(d.items())`` of a Python dict.
        """
        yield from _core._map_snapshot(self, _g(self._size), _g(self._iter), what)

    def __iter__(self) -> Iterator[Any]:
        return self._walk(0)

    def keys(self) -> KeysView:
        """A live view of the keys."""
        return KeysView(self)

    def values(self) -> ValuesView:
        """A live view of the values."""
        return ValuesView(self)

    def items(self) -> ItemsView:
        """A live view of the (key, value) pairs."""
        return ItemsView(self)

    def get(self, key: Any, default: Any = None) -> Any:
        """``self[key]`` if present, else ``default``."""
        try:
            value = _g(self._get_or_missing)(self, key)
        except TypeError:
            return default
        return default if value is MISSING or MISSING.same_as(value) else value

    def __eq__(self, other: object) -> bool:
        """Structural equality with a Map or Dict; other values are ``NotImplemented``."""
        return _structurally_equal(self, other) if isinstance(other, _MapBase) else NotImplemented

    __ne__ = _negated

    def __hash__(self) -> int:
        """Structural hash (``ffi.RecursiveHash``)."""
        return int(_g("ffi.RecursiveHash")(self))

    def __deepcopy__(self, memo: Any = None) -> Any:
        return _deep_copy(self, memo)


class Map(_MapBase, Mapping[Any, Any]):
    """Immutable FFI map (``ffi.Map``): a ``Mapping``; ``tvmffi.convert`` maps dicts to it.

    ``keys()``, ``values()`` and ``items()`` are live views; ``==``/``hash`` are
    structural (a Map never equals a Python ``dict``).

    Parameters
    ----------
    input_dict : mapping
        The entries.

    Examples
    --------
    >>> import tvmffi
    >>> m = tvmffi.Map({"a": 1, "b": [2]})
    >>> m["a"], "b" in m, sorted(m.keys())
    (1, True, ['a', 'b'])
    """

    __slots__ = ()
    _size, _get, _count = "ffi.MapSize", "ffi.MapGetItem", "ffi.MapCount"
    _get_or_missing, _iter = "ffi.MapGetItemOrMissing", "ffi.MapForwardIterFunctor"

    def __init__(self, input_dict: Mapping[Any, Any]) -> None:
        _init_handle(self, _g("ffi.Map"), *_flatten(input_dict))


class Dict(_MapBase, MutableMapping[Any, Any]):
    """Mutable FFI dict (``ffi.Dict``): a ``MutableMapping`` shared by every reference.

    Parameters
    ----------
    input_dict : mapping, optional
        The entries (default: none). ``update`` also takes pairs and keywords.

    Examples
    --------
    >>> import tvmffi
    >>> d = tvmffi.Dict({"a": 1})
    >>> d["b"] = 2
    >>> d.pop("a"), d.get("zz", 0), dict(d.items())
    (1, 0, {'b': 2})
    """

    __slots__ = ()
    _size, _get, _count = "ffi.DictSize", "ffi.DictGetItem", "ffi.DictCount"
    _get_or_missing, _iter = "ffi.DictGetItemOrMissing", "ffi.DictForwardIterFunctor"

    def __init__(self, input_dict: Mapping[Any, Any] | None = None) -> None:
        _init_handle(self, _g("ffi.Dict"), *_flatten(input_dict))

    def __setitem__(self, key: Any, value: Any) -> None:
        _g("ffi.DictSetItem")(self, key, value)

    def __delitem__(self, key: Any) -> None:
        if key not in self:
            raise KeyError(key)
        _g("ffi.DictErase")(self, key)

    def pop(self, key: Any, *default: Any) -> Any:
        """Remove ``key`` and return its value, or ``default`` when absent."""
        fallback = _one_default("pop", default)
        value = self.get(key, _ABSENT)
        if value is not _ABSENT:
            _g("ffi.DictErase")(self, key)
            return value
        if fallback is _ABSENT:
            raise KeyError(key)
        return fallback

    def clear(self) -> None:
        """Remove every entry."""
        _g("ffi.DictClear")(self)

    def update(self, other: Any = (), /, **kwargs: Any) -> None:
        """Set every (key, value) of ``other`` (a mapping or pairs) and of ``kwargs``."""
        items = other.items() if hasattr(other, "items") else other
        for k, v in items:
            self[k] = v
        for k, v in kwargs.items():
            self[k] = v


class Shape(tuple):  # type: ignore[type-arg]
    """Shape (``ffi.Shape``): a ``tuple`` of ints that keeps its FFI object, as officially.

    ``Shape((2, 3))`` makes the FFI object at once; ``ffi.Shape`` results come back as
    ``Shape``; passing one to a call passes its object (``_tvm_ffi_cached_object``).
    """

    _tvm_ffi_cached_object: Any

    def __new__(cls, content: Iterable[int] = ()) -> Shape:
        """A Shape of the ints in ``content``; ``ValueError`` for anything else."""
        dims = tuple(content)
        if not all(isinstance(d, int) for d in dims):
            raise ValueError("Shape must be a tuple of integers")
        made = _g("ffi.Shape")(*dims)  # comes back as a Shape holding its object
        if type(made) is cls:
            return made
        self = super().__new__(cls, dims)
        self._tvm_ffi_cached_object = made._tvm_ffi_cached_object
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (tuple(self),))


_core._set_shape_class(Shape)

for _cls, _key in (
    (Array, "ffi.Array"),
    (List, "ffi.List"),
    (Map, "ffi.Map"),
    (Dict, "ffi.Dict"),
):
    _register_class(_cls, _key, install=False)


# Helpers the official module exposes for sequence-like classes written by clients.
normalize_index = _normalize_index


def getitem_helper(
    obj: Any, elem_getter: Callable[[Any, int], Any], length: int, idx: SupportsIndex | slice
) -> Any:
    """``obj[idx]`` for a sequence of ``length`` items read by ``elem_getter(obj, i)``.

    An integer index (negative counts from the end) gives one item, ``IndexError`` when
    out of range; a slice gives a :class:`list` of the items it selects.
    """
    if isinstance(idx, slice):
        return [elem_getter(obj, i) for i in range(*idx.indices(length))]
    return elem_getter(obj, _normalize_index(length, idx))
