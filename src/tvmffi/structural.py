"""Structural equality, hashing and traversal of FFI values (``ffi.Structural*``).

Mirrors the official ``tvm_ffi.structural``: every operation is the runtime's own
global function (``ffi.StructuralEqual``, ``ffi.StructuralWalk``, ...), so results are
those of any other binding on the same runtime. This module only turns the Python
spellings (callback entries keyed by Python types, walk orders as strings) into the
``(type_index, callback)`` lists the runtime takes.
"""

from __future__ import annotations

import collections.abc
import ctypes
import functools
import inspect
import types
import typing
from collections.abc import Callable, Sequence
from enum import IntEnum
from typing import TYPE_CHECKING, Any, TypeVar, cast

from . import _core
from ._core import Function, Object, ObjectRValueRef, Tensor
from .object import register_object
from .registry import get_global_func

if TYPE_CHECKING:
    from .access_path import AccessPath

__all__ = [
    "DefRegionKind",
    "InplaceMode",
    "StructuralKey",
    "StructuralMutator",
    "StructuralVisitor",
    "VisitInterrupt",
    "WalkOrder",
    "WalkResult",
    "get_first_structural_mismatch",
    "structural_equal",
    "structural_hash",
    "structural_map",
    "structural_mutate",
    "structural_visit",
    "structural_walk",
]

_U64_MASK = 0xFFFFFFFFFFFFFFFF
# The runtime's ``TVMFFITypeIndex`` values that a callback type may name directly.
_ANY_INDEX = -1
_POD_TYPE_INDEX: dict[Any, int] = {
    type(None): 0,
    None: 0,
    int: 1,
    bool: 2,
    float: 3,
    ctypes.c_void_p: 4,
    _core.dtype: 5,
    _core.Device: 6,
}
_CALLABLE_FORMS: tuple[Any, ...] = (typing.Callable, collections.abc.Callable)
# Classes standing for a builtin object type without being registered for it.
_BASE_CLASS_KEYS: dict[Any, str] = {
    Object: "ffi.Object",
    Function: "ffi.Function",
    Tensor: "ffi.Tensor",
    list: "ffi.List",
    dict: "ffi.Dict",
}


# The runtime's traversals recurse on the C stack once per level of nesting and have no
# cycle check: every value they get goes through _check first (ValueError for a cycle,
# RecursionError when it would not fit this thread's stack), given these estimates of
# the stack each level takes (about 2.5x what the runtime's worst case measured). Fields
# marked structural_eq="ignore" are skipped, as every structural traversal skips them
# (a parent back-pointer there is not a cycle for them).
# Entry points check and call in one step (_call): between a separate check and the
# call another thread could make a checked List contain itself.
_check = _core._graph_check
_call = _core._graph_call
_graph_epoch = _core._graph_epoch
_HASH_LEVEL_BYTES = 1024  # structural hash, StructuralKey: ~230 bytes measured
_EQ_LEVEL_BYTES = 2048  # structural equal and mismatch: ~850
_TRAVERSE_LEVEL_BYTES = 3584  # walk, visit, map, mutate: ~1450

# The runtime's functions this module calls, looked up once.
_StructuralEqual = get_global_func("ffi.StructuralEqual")
_StructuralHash = get_global_func("ffi.StructuralHash")
_GetFirstStructuralMismatch = get_global_func("ffi.GetFirstStructuralMismatch")
_StructuralKey = get_global_func("ffi.StructuralKey")
_StructuralKeyEqual = get_global_func("ffi.StructuralKeyEqual")
_VisitInterrupt = get_global_func("ffi.VisitInterrupt")
_StructuralVisitorVisit = get_global_func("ffi.StructuralVisitorVisit")
_StructuralVisitorDefaultVisit = get_global_func("ffi.StructuralVisitorDefaultVisit")
_StructuralVisitorDefRegionKind = get_global_func("ffi.StructuralVisitorDefRegionKind")
_StructuralVisitorWithDefRegionKind = get_global_func("ffi.StructuralVisitorWithDefRegionKind")
_StructuralMutatorMutate = get_global_func("ffi.StructuralMutatorMutate")
_StructuralMutatorDefaultMutate = get_global_func("ffi.StructuralMutatorDefaultMutate")
_StructuralMutatorVarRemapGet = get_global_func("ffi.StructuralMutatorVarRemapGet")
_StructuralMutatorVarRemapSet = get_global_func("ffi.StructuralMutatorVarRemapSet")
_StructuralMutatorDefRegionKind = get_global_func("ffi.StructuralMutatorDefRegionKind")
_StructuralMutatorWithDefRegionKind = get_global_func("ffi.StructuralMutatorWithDefRegionKind")
_StructuralWalk = get_global_func("ffi.StructuralWalk")
_StructuralVisit = get_global_func("ffi.StructuralVisit")
_StructuralMutate = get_global_func("ffi.StructuralMutate")
_StructuralMap = get_global_func("ffi.StructuralMap")


class WalkOrder(IntEnum):
    """Whether walk/map callbacks run before (pre) or after (post) a node's children."""

    PREORDER = 0
    POSTORDER = 1


class WalkResult(IntEnum):
    """What a walk callback asks for: go on into the children, or skip them."""

    ADVANCE = 0
    SKIP = 1


class InplaceMode(IntEnum):
    """Whether a mutation callback's value is uniquely owned and may be changed in place."""

    DISALLOW = 0
    ALLOW = 1


class DefRegionKind(IntEnum):
    """The definition region a visit is in (``TVMFFIDefRegionKind`` of the C ABI)."""

    NONE = 0
    DEF_PATTERN = 1
    DEF_SIMPLE = 2


_F = TypeVar("_F", bound=Callable[..., Any])
_AS_BOOL = 1  # graph_entry.c result kinds
_AS_U64 = 2


def _native(fn: Function, level_bytes: int, checked: int, result: int) -> Callable[[_F], _F]:
    """Replace a prototype by its native entry point (``_core._graph_entry``).

    The prototype gives the public name, docstring and signature; the entry binds the
    arguments, checks those in bit mask ``checked`` and calls ``fn`` in one C step, and
    converts the result as ``result`` says, with no Python frame on the way.
    """

    def wrap(proto: _F) -> _F:
        params = inspect.signature(proto).parameters.values()
        names = tuple(p.name for p in params)
        defaults = tuple(p.default for p in params if p.default is not p.empty)
        entry = _core._graph_entry(
            proto.__name__, fn, level_bytes, True, checked, names, defaults, result
        )
        return cast(_F, functools.update_wrapper(entry, proto))

    return wrap


@_native(_StructuralEqual, _EQ_LEVEL_BYTES, checked=0b11, result=_AS_BOOL)
def structural_equal(
    lhs: Any, rhs: Any, map_free_vars: bool = False, skip_tensor_content: bool = False
) -> bool:
    """True if ``lhs`` and ``rhs`` are structurally equal (``ffi.StructuralEqual``).

    ``map_free_vars`` lets free variables map to each other; ``skip_tensor_content``
    compares tensors by shape and dtype only.
    """
    raise AssertionError("replaced by its native entry point")


@_native(_StructuralHash, _HASH_LEVEL_BYTES, checked=0b1, result=_AS_U64)
def structural_hash(
    value: Any, map_free_vars: bool = False, skip_tensor_content: bool = False
) -> int:
    """Structural hash of ``value``, consistent with :func:`structural_equal`.

    The runtime's int64 hash is returned as an unsigned 64-bit int, as officially.
    """
    raise AssertionError("replaced by its native entry point")


def get_first_structural_mismatch(
    lhs: Any, rhs: Any, map_free_vars: bool = False, skip_tensor_content: bool = False
) -> tuple[AccessPath, AccessPath] | None:
    """``None`` if the values are structurally equal, else the first mismatch's access paths."""
    result = _call(_GetFirstStructuralMismatch, _EQ_LEVEL_BYTES, True, 0b11, lhs, rhs,
                   map_free_vars, skip_tensor_content)
    if result is None:
        return None
    return (result[0], result[1])


@register_object("ffi.StructuralKey", init=False)
class StructuralKey(Object):
    """A key hashed and compared structurally, for Python dicts and :class:`tvmffi.Map`.

    ``StructuralKey([1, 2]) == StructuralKey([1, 2])`` and both hash alike; the hash
    is computed once, by the runtime, when the key is made.
    """

    __slots__ = ()
    key: Any
    hash_i64: int

    def __init__(self, key: Any) -> None:
        """Wrap ``key``."""
        _call(self.__init_handle_by_constructor__, _HASH_LEVEL_BYTES, True, 0b10,
              _StructuralKey, key)

    def __hash__(self) -> int:
        """The cached structural hash (unsigned)."""
        return int(self.hash_i64) & _U64_MASK

    def __eq__(self, other: object) -> bool:
        """Structural equality of the wrapped keys."""
        if not isinstance(other, StructuralKey):
            return False
        # A key's value may have been made cyclic or deeper (a List inside) since.
        return bool(_call(_StructuralKeyEqual, _EQ_LEVEL_BYTES, True, 0b11, self, other))

    def __ne__(self, other: object) -> bool:
        """Negation of ``==``."""
        return not self.__eq__(other)


@register_object("ffi.VisitInterrupt", init=False)
class VisitInterrupt(Object):
    """Returned by a walk/visit callback to stop the traversal; carries ``value`` back."""

    __slots__ = ()
    value: Any

    def __init__(self, value: Any = None) -> None:
        """An interrupt carrying ``value`` to the traversal's caller."""
        self.__init_handle_by_constructor__(_VisitInterrupt, value)


def _no_direct_construction(cls_name: str) -> Callable[..., None]:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        raise TypeError(f"{cls_name} cannot be constructed directly; a traversal supplies it")

    return __init__


@register_object("ffi.StructuralVisitor", init=False)
class StructuralVisitor(Object):
    """The visitor an active :func:`structural_visit` hands to its callbacks."""

    __slots__ = ()
    __init__ = _no_direct_construction("StructuralVisitor")

    def visit(self, value: Any) -> VisitInterrupt | None:
        """Visit ``value`` through this visitor's callbacks; a :class:`VisitInterrupt` stops."""
        return _call(  # type: ignore[no-any-return]
            _StructuralVisitorVisit, _TRAVERSE_LEVEL_BYTES, True, 0b10, self, value
        )

    def default_visit(self, value: Any) -> VisitInterrupt | None:
        """Visit ``value``'s children by its registered/reflected traversal.

        The callbacks are bypassed for ``value`` itself, not for its children. Never
        call it on the value whose own ``__s_visit__`` hook is running (that recurses).
        """
        return _call(  # type: ignore[no-any-return]
            _StructuralVisitorDefaultVisit, _TRAVERSE_LEVEL_BYTES, True, 0b10, self, value
        )

    def def_region_kind(self) -> DefRegionKind:
        """The definition region the visit is in now."""
        return DefRegionKind(_StructuralVisitorDefRegionKind(self))

    def with_def_region_kind(self, kind: int, callback: Callable[[], Any]) -> Any:
        """Run the nullary ``callback`` inside definition region ``kind``; its result."""
        return _StructuralVisitorWithDefRegionKind(self, int(kind), callback)


@register_object("ffi.StructuralMutator", init=False)
class StructuralMutator(Object):
    """The mutator an active :func:`structural_mutate` / map hands to its callbacks."""

    __slots__ = ()
    __init__ = _no_direct_construction("StructuralMutator")

    def mutate(self, value: Any) -> Any:
        """``value`` mutated through the callbacks (a copy where anything changed)."""
        return _call(_StructuralMutatorMutate, _TRAVERSE_LEVEL_BYTES, True, 0b10, self, value)

    def default_mutate(self, value: Any) -> Any:
        """``value`` mutated by its registered/reflected default, bypassing the callbacks
        for ``value`` itself (its children go through them)."""
        return _call(
            _StructuralMutatorDefaultMutate, _TRAVERSE_LEVEL_BYTES, True, 0b10, self, value
        )

    def var_remap_get(self, var: Object) -> Any | None:
        """The replacement recorded for variable ``var``, or ``None``."""
        return _StructuralMutatorVarRemapGet(self, var)

    def var_remap_set(self, var: Object, mapped_value: Any) -> None:
        """Record ``mapped_value`` as the replacement of variable ``var``."""
        _StructuralMutatorVarRemapSet(self, var, mapped_value)

    def def_region_kind(self) -> DefRegionKind:
        """The definition region the mutation is in now."""
        return DefRegionKind(_StructuralMutatorDefRegionKind(self))

    def with_def_region_kind(self, kind: int, callback: Callable[[], Any]) -> Any:
        """Run the nullary ``callback`` inside definition region ``kind``; its result."""
        return _StructuralMutatorWithDefRegionKind(self, int(kind), callback)


# ---- callback entries -------------------------------------------------------------
_Callbacks = tuple | Sequence | Callable  # type: ignore[type-arg]


def _order_index(order: str | WalkOrder, api_name: str) -> int:
    if isinstance(order, WalkOrder):
        return int(order)
    if order == "pre":
        return int(WalkOrder.PREORDER)
    if order == "post":
        return int(WalkOrder.POSTORDER)
    what = "walk" if api_name == "structural_walk" else "map"
    raise ValueError(f"Unknown structural {what} order: {order!r}")


def _is_entry(entry: object) -> bool:
    return isinstance(entry, tuple) and len(entry) == 2 and callable(entry[1])


def _entries(callbacks: Any, api_name: str) -> list[tuple[Any, Callable[..., Any]]]:
    """``(type, callback)`` pairs, one per type, in the order given.

    A bare callable is a catch-all; ``((t1, t2), f)`` stands for ``(t1, f), (t2, f)``.
    """
    if callable(callbacks):
        groups = [(Any, callbacks)]
    elif _is_entry(callbacks):
        groups = [callbacks]
    elif isinstance(callbacks, Sequence) and not isinstance(callbacks, (str, bytes)):
        groups = list(callbacks)
        if not all(_is_entry(g) for g in groups):
            raise TypeError(
                f"{api_name} callbacks within a sequence must be (type, callback) tuples"
            )
    else:
        raise TypeError(
            f"{api_name} callbacks must be callbacks, (type, callback) entries, "
            "((type1, type2, ...), callback) entries, or sequences of tuple entries"
        )
    out: list[tuple[Any, Callable[..., Any]]] = []
    for kinds, fn in groups:
        for t in kinds if isinstance(kinds, tuple) else (kinds,):
            out.append((t, fn))
    return out


def _class_type_index(cls: type) -> int | None:
    """The FFI type index of a class: registered tvmffi class or official-binding class."""
    index = getattr(cls, "__tvm_ffi_type_index__", None)
    if isinstance(index, int):
        return index
    info = cls.__dict__.get("__tvm_ffi_type_info__")  # an official-binding class
    index = getattr(info, "type_index", None)
    return index if isinstance(index, int) else None


def _type_index_of(annotation: Any) -> int | None:
    """The type index a callback type stands for, ``None`` if it names no FFI type."""
    if annotation is Any or annotation is object:
        return _ANY_INDEX
    if annotation in _CALLABLE_FORMS:
        return _registered_index("ffi.Function")
    origin = typing.get_origin(annotation)
    if origin is not None:  # Array[int], list[int], Callable[[int], int], ...
        if origin in (typing.Union, types.UnionType) or not isinstance(origin, type):
            return None
        return _type_index_of(origin)
    try:
        pod = _POD_TYPE_INDEX.get(annotation)
    except TypeError:  # unhashable
        return None
    if pod is not None:
        return pod
    if not isinstance(annotation, type):
        return None
    if issubclass(annotation, str):
        return _registered_index("ffi.String")
    if issubclass(annotation, bytes):
        return _registered_index("ffi.Bytes")
    key = _BASE_CLASS_KEYS.get(annotation)
    if key is not None:
        return _registered_index(key)
    return _class_type_index(annotation)


def _registered_index(key: str) -> int:
    index = _core._type_key_to_index(key)
    if index is None:  # every runtime registers its own builtin types
        raise RuntimeError(f"the runtime has no type {key!r}")
    return index


def _callback_type_index(callback_type: Any, api_name: str) -> int:
    index = _type_index_of(callback_type)
    if index is None or (index < 0 and index != _ANY_INDEX):
        raise TypeError(
            f"{api_name} callback type must be a supported builtin, "
            f"typing.Any/object, or an FFI-registered object class, not {callback_type!r}"
        )
    return index


def _typed(callbacks: Any, api_name: str) -> list[tuple[int, Callable[..., Any]]]:
    return [(_callback_type_index(t, api_name), fn) for t, fn in _entries(callbacks, api_name)]


def _with_region_kind(fn: Callable[..., Any]) -> Callable[[Any, int], Any]:
    """The runtime passes the region kind as an int; callbacks get a DefRegionKind."""
    return lambda value, kind: fn(value, DefRegionKind(kind))


def _checked_result(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` whose result is checked like a traversal root before the runtime descends it."""
    return lambda *args: _check(fn(*args), _TRAVERSE_LEVEL_BYTES, True)


def _descent_checked(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A pre-order walk callback after which its value is checked again: the runtime
    descends that value next, and the callback may have changed it (made it contain
    itself, or nest deeper than this thread's stack allows)."""

    def checked(value: Any, *rest: Any) -> Any:
        result = fn(value, *rest)
        skips = isinstance(result, int) and result == WalkResult.SKIP
        if not skips and not isinstance(result, VisitInterrupt):
            _check(value, _TRAVERSE_LEVEL_BYTES, True)
        return result

    return checked


class _RootGuard:
    """Checks a traversal's root again after any callback during which Python code may have
    added an edge to a value graph (``_core._graph_epoch`` moved: a field write, a List/Dict
    insertion, by the callback or by another thread while it ran). Such a change could make
    a node the traversal has not reached yet contain the root, or nest it deeper than this
    thread's stack allows, and the runtime would then recurse without end. A root handed
    over with ``_move()`` cannot be looked at again and is not re-checked."""

    __slots__ = ("epoch", "root")

    def __init__(self, root: Any) -> None:
        self.root = None if isinstance(root, ObjectRValueRef) else root
        self.epoch = _graph_epoch()

    def after_callback(self) -> None:
        epoch = _graph_epoch()
        if epoch != self.epoch:
            self.epoch = epoch
            if self.root is not None:
                _check(self.root, _TRAVERSE_LEVEL_BYTES, True)

    def wrap(
        self, entries: list[tuple[int, Callable[..., Any]]]
    ) -> list[tuple[int, Callable[..., Any]]]:
        """The entries with each callback followed by the check."""

        def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
            def call(*args: Any) -> Any:
                result = fn(*args)
                self.after_callback()
                return result

            return call

        return [(index, guarded(fn)) for index, fn in entries]


def _typed_with_region_kind(callbacks: Any, api_name: str) -> list[tuple[int, Callable[..., Any]]]:
    return [(index, _with_region_kind(fn)) for index, fn in _typed(callbacks, api_name)]


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _accepts_inplace_mode(callback: Callable[..., Any]) -> bool:
    """Whether a ``structural_mutate`` callback takes the third argument ``inplace_mode``.

    Read from the callback's signature: ``True`` when three positional arguments fit,
    ``False`` when only ``(value, mutator)`` do (or the signature cannot be read, as for
    some builtins); ``TypeError`` when neither form can be called.
    """
    try:
        params = list(inspect.signature(callback).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in _POSITIONAL]
    needed = sum(p.default is inspect.Parameter.empty for p in positional)
    varargs = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
    room = 3 if varargs else len(positional)
    keyword_needed = any(
        p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty
        for p in params
    )
    if keyword_needed or needed > 3 or room < 2:
        raise TypeError(
            f"structural_mutate callback {callback!r} must accept (value, mutator) "
            "or (value, mutator, inplace_mode)"
        )
    return room >= 3


# ---- traversals -------------------------------------------------------------------
def structural_walk(
    root: Any,
    callbacks: _Callbacks = (),
    with_def_region_kind: _Callbacks = (),
    order: str | WalkOrder = "post",
) -> VisitInterrupt | None:
    """Walk ``root`` as a tree, calling the first callback whose type matches each value.

    ``callbacks`` take ``(value)``; ``with_def_region_kind`` ones take
    ``(value, DefRegionKind)``. Each is a callable (catch-all), a ``(type, fn)`` entry,
    a ``((type, ...), fn)`` entry or a sequence of entries; types are builtins,
    FFI object classes, or ``typing.Any``/``object``. ``order`` is ``"post"`` (default),
    ``"pre"`` or a :class:`WalkOrder`. A callback returning :attr:`WalkResult.SKIP`
    (pre-order) skips the children; one returning a :class:`VisitInterrupt` stops the
    walk, which then returns it. Returns ``None`` when the walk completes.
    """
    order_index = _order_index(order, "structural_walk")
    plain = _typed(callbacks, "structural_walk")
    regioned = _typed_with_region_kind(with_def_region_kind, "structural_walk")
    if order_index == WalkOrder.PREORDER:
        plain = [(index, _descent_checked(fn)) for index, fn in plain]
        regioned = [(index, _descent_checked(fn)) for index, fn in regioned]
    guard = _RootGuard(root)
    plain, regioned = guard.wrap(plain), guard.wrap(regioned)
    return _call(  # type: ignore[no-any-return]
        _StructuralWalk, _TRAVERSE_LEVEL_BYTES, True, 0b1, root, plain, regioned, order_index
    )


def structural_visit(root: Any, callbacks: _Callbacks = ()) -> VisitInterrupt | None:
    """Visit ``root`` with callbacks ``(value, visitor)`` that own their value's descent.

    A callback descends with :meth:`StructuralVisitor.visit` (chosen children) or
    :meth:`StructuralVisitor.default_visit` (the default children); otherwise that
    subtree is pruned. Entries as for :func:`structural_walk`; the first match wins.
    Returns ``None``, or the :class:`VisitInterrupt` that stopped the visit.
    """
    entries = _RootGuard(root).wrap(_typed(callbacks, "structural_visit"))
    return _call(  # type: ignore[no-any-return]
        _StructuralVisit, _TRAVERSE_LEVEL_BYTES, True, 0b1, root, entries
    )


def structural_mutate(root: Any, callbacks: _Callbacks = ()) -> Any:
    """Mutate ``root`` with callbacks ``(value, mutator[, inplace_mode])`` that own recursion.

    A callback's result is final (not traversed again); it recurses with
    :meth:`StructuralMutator.mutate` / :meth:`StructuralMutator.default_mutate`. The
    optional ``inplace_mode`` is :attr:`InplaceMode.ALLOW` (as an int) only on a uniquely
    owned path. Unmatched values get the default mutation. Pass ``root._move()`` to
    allow in-place changes along unique paths; otherwise ``root`` is preserved.
    """
    typed = _typed(callbacks, "structural_mutate")
    guarded = _RootGuard(root).wrap(typed)
    entries = [
        (index, fn, _accepts_inplace_mode(original))
        for (index, fn), (_, original) in zip(guarded, typed, strict=True)
    ]
    return _call(_StructuralMutate, _TRAVERSE_LEVEL_BYTES, True, 0b1, root, entries)


def structural_map(
    root: Any,
    callbacks: _Callbacks = (),
    with_def_region_kind: _Callbacks = (),
    order: str | WalkOrder = "post",
) -> Any:
    """Map ``root`` structurally: each matching callback returns its value's replacement.

    Callbacks must not change their input in place. Entries, ``with_def_region_kind``
    and ``order`` as for :func:`structural_walk`. Unchanged subtrees keep their
    identity; changed paths are copied unless ``root._move()`` hands over ownership.
    """
    order_index = _order_index(order, "structural_map")
    # A replacement gets the default descent too: check it as the root is checked.
    plain = [(i, _checked_result(fn)) for i, fn in _typed(callbacks, "structural_map")]
    regioned = [
        (i, _checked_result(fn))
        for i, fn in _typed_with_region_kind(with_def_region_kind, "structural_map")
    ]
    guard = _RootGuard(root)
    plain, regioned = guard.wrap(plain), guard.wrap(regioned)
    return _call(
        _StructuralMap, _TRAVERSE_LEVEL_BYTES, True, 0b1, root, plain, regioned, order_index
    )
