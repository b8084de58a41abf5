"""Dataclass dunder methods of ``@c_class`` and ``@py_class`` types.

Everything is derived from the type's reflection data and delegates to the
runtime: ``__init__`` packs its arguments for the type's ``__ffi_init__`` (which
binds positional, keyword-only and default fields), ``__eq__``/ordering/
``__hash__`` call ``ffi.RecursiveEq``/``Lt``/.../``RecursiveHash``, ``__copy__``
the type's ``__ffi_shallow_copy__``, ``__deepcopy__`` ``ffi.DeepCopy``.
A dunder the class body defines itself is never replaced.
"""

from __future__ import annotations

import copy
import functools
import inspect
import sys
from collections import ChainMap
from collections.abc import Callable
from typing import Any

from . import _core
from .function import _cached_global_func
from .object import MISSING, TypeInfo, _kwargs_marker, _repr_hook

__all__ = ["_install_dataclass_dunders"]


def _lineage(type_info: TypeInfo) -> list[TypeInfo]:
    """``type_info`` and its ancestors, root type first."""
    parent = type_info.parent_type_info
    return [type_info] if parent is None else [*_lineage(parent), type_info]


def _chain_fields(type_info: TypeInfo) -> list[Any]:
    """All reflected fields, root type's first."""
    return [f for info in _lineage(type_info) for f in info.fields or ()]


def _make_init_signature(type_info: TypeInfo) -> inspect.Signature:
    """The signature ``__ffi_init__`` binds: required positionals, defaulted ones, then
    keyword-only (required first); defaults show as ``MISSING`` (the runtime fills them)."""
    positional = [f for f in _chain_fields(type_info) if f.c_init and not f.c_kw_only]
    kw_only = [f for f in _chain_fields(type_info) if f.c_init and f.c_kw_only]
    pos_kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    kw_kind = inspect.Parameter.KEYWORD_ONLY
    params = [inspect.Parameter("self", pos_kind)]
    for group, kind in ((positional, pos_kind), (kw_only, kw_kind)):
        params += [inspect.Parameter(f.name, kind) for f in group if not f.c_has_default]
        params += [
            inspect.Parameter(f.name, kind, default=MISSING) for f in group if f.c_has_default
        ]
    return inspect.Signature(params)


def _collect_init_property_funcs(type_cls: type) -> list[tuple[str, Callable[..., Any]]]:
    """``(name, func)`` of every ``init_property`` of the class and its bases: each
    class body's table (``__ffi_init_property_funcs__``) layered over its bases', so a
    name comes in the place of the root-most class declaring it, with the function of the
    most derived one."""
    layers = [vars(k).get("__ffi_init_property_funcs__", {}) for k in type_cls.__mro__]
    return list(ChainMap(*layers).items())


def _pack_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """Positional arguments, then the runtime's KWARGS marker and key/value pairs
    (a ``MISSING`` value is left out: the field takes its default)."""
    packed = list(args)
    if kwargs:
        packed.append(_kwargs_marker())
        for key, value in kwargs.items():
            if value is not MISSING:
                packed.append(key)
                packed.append(value)
    return packed


def _payload_enum_normalizers(
    type_info: TypeInfo, *, own_only: bool = False, init_only: bool = True
) -> dict[str, Callable[[Any], Any]]:
    """For each init field typed as an IntEnum/StrEnum, a function that turns a raw
    payload (``10``, ``"+"``) into its variant, as the field's converter does; a C++
    field's setter would not."""
    from ._type_converter import convert_field_value
    from .object import _REGISTERED

    enum_module = sys.modules.get("tvmffi.dataclasses.enum")
    payload_bases = tuple(
        base
        for base in (getattr(enum_module, "IntEnum", None), getattr(enum_module, "StrEnum", None))
        if isinstance(base, type)
    )
    if not payload_bases:  # no enum class exists yet (the enum module is being imported)
        return {}

    out: dict[str, Callable[[Any], Any]] = {}
    for f in type_info.fields or () if own_only else _chain_fields(type_info):
        ty = f.ty if f.c_init or not init_only else None
        target = _REGISTERED.get(getattr(ty, "origin_type_index", -1)) if ty else None
        if isinstance(target, type) and issubclass(target, payload_bases):

            def normalize(value: Any, schema: Any = ty) -> Any:
                return _core._to_py_class_value(convert_field_value(schema, value))

            out[f.name] = normalize
    return out


def _normalizing(
    type_info: TypeInfo, normalizers: dict[str, Callable[[Any], Any]]
) -> Callable[[tuple[Any, ...], dict[str, Any]], tuple[tuple[Any, ...], dict[str, Any]]]:
    """Arguments with payload-enum fields normalized: positional ones in the order the
    runtime binds them (required positional fields, then defaulted ones)."""
    positional = [f for f in _chain_fields(type_info) if f.c_init and not f.c_kw_only]
    order = [f.name for f in positional if not f.c_has_default]
    order += [f.name for f in positional if f.c_has_default]

    def apply(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        new_args = (
            tuple(
                normalizers[name](v) if name in normalizers else v
                for name, v in zip(order, args, strict=False)
            )
            + args[len(order) :]
        )
        new_kwargs = {
            k: normalizers[k](v) if k in normalizers and v is not MISSING else v
            for k, v in kwargs.items()
        }
        return new_args, new_kwargs

    return apply


def _make_init(
    type_cls: type, type_info: TypeInfo, ffi_init: Any, py_class_mode: bool = False
) -> Callable[..., None]:
    """``__init__`` calling ``ffi_init``, then the init properties and ``__post_init__``.

    In a ``@py_class`` a second call (``super().__init__()`` of a subclass whose own
    ``__init__`` built the object) does nothing; in a ``@c_class`` it is refused.
    """
    init_props = _collect_init_property_funcs(type_cls)
    has_post_init = hasattr(type_cls, "__post_init__")
    type_name = type_cls.__name__

    def finish(self: Any) -> None:
        if init_props:
            cls = type(self)
            for name, func in init_props:
                getattr(cls, name).set(self, func(self))
        if has_post_init:
            self.__post_init__()

    if py_class_mode:

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            if self.__chandle__() != 0:
                return
            self.__init_handle_by_constructor__(ffi_init, *_pack_args(args, kwargs))
            finish(self)

    else:
        normalizers = _payload_enum_normalizers(type_info)
        normalize = _normalizing(type_info, normalizers) if normalizers else None

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            if normalize is not None:
                args, kwargs = normalize(args, kwargs)
            if type_info is not getattr(type(self), "__tvm_ffi_type_info__", None):
                raise TypeError(
                    f"Calling `super().__init__()` is not supported for @c_class "
                    f"`{type_name}`. Use @py_class for inheritance with manual "
                    f"__init__, or define `{type(self).__name__}` with init=True."
                )
            self.__init_handle_by_constructor__(ffi_init, *_pack_args(args, kwargs))
            finish(self)

    __init__.__signature__ = _make_init_signature(type_info)  # type: ignore[attr-defined]
    __init__.__qualname__ = f"{type_cls.__qualname__}.__init__"
    __init__.__module__ = type_cls.__module__
    return __init__


def _make_no_init(cls: type) -> Callable[..., None]:
    msg = (
        f"`{cls.__name__}` cannot be constructed directly. "
        "Define a custom __init__ or use a factory method."
    )

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        raise TypeError(msg)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__module__ = cls.__module__
    return __init__


def _allocate_if_new(obj: Any, ffi_new: Any) -> None:
    """Give ``obj`` its FFI object (fields at their zero values) unless it has one."""
    if obj.__chandle__() == 0:
        obj.__init_handle_by_constructor__(ffi_new)


def _wrap_user_init(user_init: Callable[..., None], ffi_new: Any) -> Callable[..., None]:
    """A ``@py_class`` body's own ``__init__``, run on an allocated object so that it may
    set fields or call ``self.__ffi_init__`` (it keeps the body's name and signature)."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        _allocate_if_new(self, ffi_new)
        user_init(self, *args, **kwargs)

    return functools.update_wrapper(__init__, user_init)


def _refuse_copy(self: Any) -> Any:
    raise TypeError(
        f"Type `{type(self).__name__}` does not support copy. "
        "The underlying C++ type is not copy-constructible."
    )


def _deep_copy(self: Any, memo: Any = None) -> Any:
    """``copy.deepcopy``: the runtime copies the whole graph (``ffi.DeepCopy``); a graph
    holding what the runtime cannot copy (a tensor, a function) is copied the way pickle
    sends it (tensors by their bytes)."""
    if memo is not None and ("tvmffi.handle", self.__chandle__()) in memo:
        return memo[("tvmffi.handle", self.__chandle__())]  # a cycle through deep_copy_graph
    try:
        return _cached_global_func("ffi.DeepCopy")(self)
    except RuntimeError as err:
        from ._pickle import copies_what_deepcopy_refused

        if not copies_what_deepcopy_refused(err):
            raise  # a type that is not copyable at all (as officially)
    from ._pickle import deep_copy_graph

    return deep_copy_graph(self, memo)


def _replace_fields(self: Any, **changes: Any) -> Any:
    """``copy.replace``: a shallow copy with ``changes`` written through the field
    descriptors (frozen fields included)."""
    clone = copy.copy(self)
    for name, value in changes.items():
        try:
            write = getattr(type(clone), name).set
        except AttributeError:
            raise TypeError(
                f"{type(clone).__name__}.__replace__() got an unexpected field {name!r}"
            ) from None
        write(clone, value)
    return clone


def _copy_dunders(index: int) -> dict[str, Callable[..., Any]]:
    """``__copy__`` (the type's ``__ffi_shallow_copy__``, or a refusal), ``__deepcopy__``
    and ``__replace__``."""
    shallow = _core._lookup_type_attr(index, "__ffi_shallow_copy__")
    if shallow is None:
        return {
            "__copy__": _refuse_copy,
            "__deepcopy__": _deep_copy,
            "__replace__": _replace_fields,
        }

    def __copy__(self: Any) -> Any:
        return shallow(self)

    return {"__copy__": __copy__, "__deepcopy__": _deep_copy, "__replace__": _replace_fields}


def _set_match_args(cls: type, type_info: TypeInfo) -> None:
    """``__match_args__``: the positional init fields, root type's first."""
    if "__match_args__" in cls.__dict__:
        return
    names = []
    for f in _chain_fields(type_info):
        df = f.dataclass_field
        if df is not None and df.init and not df.kw_only:
            names.append(f.name)
    cls.__match_args__ = tuple(names)  # type: ignore[attr-defined,misc]


def _is_comparable(self: Any, other: Any) -> bool:
    return isinstance(other, type(self)) or isinstance(self, type(other))


def _comparison(name: str, ffi_name: str, negate: bool = False) -> Callable[[Any, Any], Any]:
    func = _cached_global_func(ffi_name)  # returns a bool

    # Two objects of one class skip the isinstance checks (the common case).
    if negate:

        def compare(self: Any, other: Any) -> Any:
            if type(other) is not type(self) and not _is_comparable(self, other):
                return NotImplemented
            return not func(self, other)

    else:

        def compare(self: Any, other: Any) -> Any:
            if type(other) is not type(self) and not _is_comparable(self, other):
                return NotImplemented
            return func(self, other)

    compare.__name__ = name
    return compare


def _install_comparisons(cls: type, eq: bool, order: bool, unsafe_hash: bool) -> None:
    # A family (eq/ne, the four orderings) is installed whole or not at all, so a
    # user's member never disagrees with a generated one.
    own = set(cls.__dict__)
    if eq and not ({"__eq__", "__ne__"} & own):
        cls.__eq__ = _comparison("__eq__", "ffi.RecursiveEq")  # type: ignore[method-assign,assignment]
        cls.__ne__ = _comparison("__ne__", "ffi.RecursiveEq", negate=True)  # type: ignore[method-assign,assignment]
    if order and not ({"__lt__", "__le__", "__gt__", "__ge__"} & own):
        for op in ("lt", "le", "gt", "ge"):
            setattr(cls, f"__{op}__", _comparison(f"__{op}__", f"ffi.Recursive{op.title()}"))
    if unsafe_hash and "__hash__" not in own:
        recursive_hash = _cached_global_func("ffi.RecursiveHash")

        def __hash__(self: Any) -> int:
            return int(recursive_hash(self))

        cls.__hash__ = __hash__  # type: ignore[method-assign,assignment]


def _find_ffi_init(type_info: TypeInfo) -> Any:
    for m in type_info.methods:
        if m.name == "__ffi_init__":
            return m.func
    return _core._lookup_type_attr(type_info.type_index, "__ffi_init__")


_DUNDER_OPTIONS = {
    "init": True,
    "repr": True,
    "eq": False,
    "order": False,
    "unsafe_hash": False,
    "match_args": True,
}


def _install_dataclass_dunders(cls: type, *, py_class_mode: bool = False, **options: bool) -> None:
    """Install the dataclass dunders on ``cls`` (registered, with ``__tvm_ffi_type_info__``).

    ``options`` are the decorator's ``init``/``repr``/``eq``/``order``/``unsafe_hash``/
    ``match_args`` (``dataclasses`` defaults). ``init``: ``__init__`` from the reflected
    fields (``init=False``: one that raises ``TypeError``); a ``@py_class`` body's own
    ``__init__`` is kept, run on a freshly allocated object. ``repr``: the runtime's
    printer. ``eq``/``order``/``unsafe_hash``: recursive structural comparison and
    hashing (``NotImplemented`` across unrelated types). ``__copy__``/``__deepcopy__``/
    ``__replace__`` always.
    """
    unknown = options.keys() - _DUNDER_OPTIONS.keys()
    if unknown:
        raise TypeError(f"unexpected dataclass options: {', '.join(sorted(unknown))}")
    want = {**_DUNDER_OPTIONS, **options}
    info: TypeInfo = cls.__dict__["__tvm_ffi_type_info__"]
    generated = _copy_dunders(info.type_index)
    init = _init_dunder(cls, info, want["init"], py_class_mode)
    if init is not None:
        generated["__init__"] = init
    if want["repr"]:
        generated["__repr__"] = _repr_hook
    for name, value in generated.items():
        if name not in cls.__dict__ or (name == "__init__" and py_class_mode):
            setattr(cls, name, value)
    _install_comparisons(cls, want["eq"], want["order"], want["unsafe_hash"])
    if want["match_args"]:
        _set_match_args(cls, info)


def _init_dunder(
    cls: type, info: TypeInfo, init: bool, py_class_mode: bool
) -> Callable[..., None] | None:
    """The ``__init__`` to install, if any: the body's own one wrapped to allocate first
    (``@py_class``), one calling ``__ffi_init__``, or (``init=False``) a refusal."""
    own = cls.__dict__.get("__init__")
    if getattr(own, "__ffi_placeholder__", False):  # a deferred py_class's: the body's own
        own = cls.__dict__.get("__ffi_py_class_user_init__")
    if own is not None:
        ffi_new = _core._lookup_type_attr(info.type_index, "__ffi_new__")
        return _wrap_user_init(own, ffi_new) if py_class_mode and ffi_new is not None else None
    if not init:
        return _make_no_init(cls)
    ffi_init = _find_ffi_init(info)
    return None if ffi_init is None else _make_init(cls, info, ffi_init, py_class_mode)
