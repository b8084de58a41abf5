"""The dunders of FFI classes, as C methods over one field table per class.

A decorator (``register_object``, ``@c_class``, ``@py_class``) calls
:func:`field_table` once per class: the fields of the type's whole chain, in
layout order, each with the descriptor that reads it and its options, go into a
read-only ``FieldTable`` (csrc/field_table.c). :func:`_install_dataclass_dunders`
then puts the table's methods on the class: ``__init__`` (the type's reflected
constructor, keyword arguments by the runtime's KWARGS protocol, then computed
fields and ``__post_init__``), ``__repr__``, ``__eq__``/``__ne__``, ordering,
``__hash__``, ``__copy__``, ``__deepcopy__``, ``__replace__``; no Python code runs
per call unless the class supplies some (``__post_init__``, a converter).
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Any

from . import _core
from ._lineage import _chain_fields, _deep_copy, _lineage
from .function import _cached_global_func

__all__ = ["_install_dataclass_dunders", "field_table", "install_init"]

# Row flags and table flags, as csrc/field_table.c reads them.
_ROW_INIT, _ROW_REPR, _ROW_COMPARE, _ROW_HASH, _ROW_KW_ONLY, _ROW_CONVERT_ARG = 1, 2, 4, 8, 16, 32
_TABLE_CUSTOM_REPR, _TABLE_POST_INIT, _TABLE_CONVERTS = 1, 2, 4

# The dataclass options of both decorators and their defaults (the official ones).
_DUNDER_OPTIONS: dict[str, bool] = {
    "init": True,
    "repr": True,
    "eq": False,
    "order": False,
    "unsafe_hash": False,
    "match_args": True,
}

MISSING: Any = _cached_global_func("ffi.GetInvalidObject")()
"""The runtime's sentinel (re-exported as ``tvmffi.core.MISSING``): an ``__init__``
parameter whose field has a default shows it; an argument given as it is left out."""

# The dunders each option asks for (None: always).
_OPTION_DUNDERS: tuple[tuple[str | None, list[str]], ...] = (
    ("repr", ["__repr__"]),
    ("eq", ["__eq__", "__ne__"]),
    ("order", ["__lt__", "__le__", "__gt__", "__ge__"]),
    ("unsafe_hash", ["__hash__"]),
    (None, ["__copy__", "__deepcopy__", "__replace__"]),
)

_SET_UP: list[bool] = []


def _set_up() -> None:
    """Hand the runtime's recursive functions to the C side, once."""
    if _SET_UP:
        return
    g = _cached_global_func
    _core._field_table_setup(
        g("ffi.RecursiveEq"),
        g("ffi.RecursiveHash"),
        g("ffi.RecursiveLt"),
        g("ffi.RecursiveLe"),
        g("ffi.RecursiveGt"),
        g("ffi.RecursiveGe"),
        _deep_copy,
        _core.Object.__repr__,
        g("ffi.GetKwargsObject")(),
        MISSING,
    )
    _SET_UP.append(True)


def _row_flags(tf: Any) -> int:
    return (
        (_ROW_INIT if tf.init else 0)
        | (_ROW_REPR if tf.repr else 0)
        | (_ROW_COMPARE if tf.compare else 0)
        | (_ROW_HASH if tf.hash else 0)
        | (_ROW_KW_ONLY if tf.kw_only else 0)
    )


def _row(tf: Any, cls: type) -> tuple[Any, ...]:
    """One table row: (name, descriptor, default, factory, converter, flags). The
    descriptor is the class's own where it has one (an enum-normalizing wrapper)."""
    own = next((k.__dict__[tf.name] for k in cls.__mro__ if tf.name in k.__dict__), None)
    prop = own if own is not None and hasattr(own, "__get__") else tf.as_property(cls)
    declared = tf.dataclass_field
    flags = _row_flags(tf)
    # A field the runtime converts itself (a @py_class field: its setter calls the
    # converter) keeps its converter for reference; a C++ field whose own setter takes
    # only the converted value (an enum variant, not its payload) converts in __init__.
    converter = getattr(prop, "_normalize", None)
    if converter is not None:
        flags |= _ROW_CONVERT_ARG
    if declared is not None:
        default, factory = declared.default, declared.default_factory
        make = getattr(declared._ty_schema, "_converter", None)
        if converter is None and make is not None:
            converter = make()
    elif tf.has_default:
        default, factory = tf.c_default, tf.c_default_factory
    else:
        default, factory = _core_missing(), None
    return (tf.name, prop, default, factory if callable(factory) else None, converter, flags)


def _find_ffi_init(info: Any) -> Any:
    """The type's reflected constructor: its ``__ffi_init__`` method, else the
    type-attribute entry; ``None`` when it has neither."""
    for m in info.methods:
        if m.name == "__ffi_init__":
            return m.func
    return _core._lookup_type_attr(info.type_index, "__ffi_init__")


def field_table(cls: type, info: Any, *, fields: bool = True) -> Any:
    """The read-only field table of ``cls`` (type ``info``): with ``fields`` a row per
    field of the type's chain, root type's first."""
    _set_up()
    rows = tuple(_row(tf, cls) for tf in _chain_fields(info)) if fields else ()
    by_name = {r[0]: r[1] for r in rows}
    init_props = tuple(
        (by_name[name], func) for name, func in _init_property_funcs(cls).items() if name in by_name
    )
    flags = 0
    if any(r[5] & _ROW_CONVERT_ARG for r in rows):
        flags |= _TABLE_CONVERTS
    # The runtime prints these types its own way (a hook, an enum variant's name).
    if any(
        _core._lookup_type_attr(level.type_index, "__ffi_repr__") is not None
        or level.type_key == "ffi.Enum"
        for level in _lineage(info)
    ):
        flags |= _TABLE_CUSTOM_REPR
    if callable(getattr(cls, "__post_init__", None)):
        flags |= _TABLE_POST_INIT
    return _core._field_table(
        info.type_key,
        _find_ffi_init(info),
        _core._lookup_type_attr(info.type_index, "__ffi_shallow_copy__"),
        rows,
        init_props,
        tuple(_positional_rows(rows)),
        flags,
    )


def _init_property_funcs(cls: type) -> dict[str, Any]:
    """name -> function of every ``init_property`` of the class and its bases (a
    subclass's own overriding its base's)."""
    found: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        found.update(klass.__dict__.get("__ffi_init_property_funcs__", {}))
    return found


def _positional_rows(rows: tuple[tuple[Any, ...], ...]) -> list[int]:
    """The row each positional ``__init__`` argument sets: the init fields that are not
    keyword-only, those without a default first (the runtime's order)."""
    missing = _core_missing()
    takes = [i for i, r in enumerate(rows) if r[5] & _ROW_INIT and not r[5] & _ROW_KW_ONLY]
    return sorted(takes, key=lambda i: rows[i][2] is not missing or rows[i][3] is not None)


def _method(cls: type, table: Any, name: str) -> Any:
    return _core._table_method(table, name, cls, f"{cls.__qualname__}.{name}")


def _init_signature(table: Any) -> inspect.Signature:
    """``(self, <positional fields>, *, <keyword-only fields>)``; a field with a default
    shows ``MISSING`` (the runtime fills the default in)."""
    empty = inspect.Parameter.empty
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    positional: list[inspect.Parameter] = []
    keyword: list[inspect.Parameter] = []
    for i in range(len(table)):
        name, _, default, factory, _, flags = table.row(i)
        if not flags & _ROW_INIT:
            continue
        has_default = factory is not _core_missing() or default is not _core_missing()
        kind = (
            inspect.Parameter.KEYWORD_ONLY
            if flags & _ROW_KW_ONLY
            else inspect.Parameter.POSITIONAL_OR_KEYWORD
        )
        param = inspect.Parameter(name, kind, default=_core_missing() if has_default else empty)
        (keyword if flags & _ROW_KW_ONLY else positional).append(param)
    # Required fields come first in each group: the runtime's constructor takes them so.
    positional.sort(key=lambda p: p.default is not empty)
    keyword.sort(key=lambda p: p.default is not empty)
    return inspect.Signature(params + positional + keyword)


def _core_missing() -> Any:
    return MISSING


def install_init(cls: type, info: Any, *, init: bool) -> None:
    """What ``register_object`` gives a class: ``__ffi_init__`` when the type has a
    constructor, and with ``init`` an ``__init__`` calling it (or refusing, for a type
    without one) unless the class defines its own."""
    want_init = init and "__init__" not in cls.__dict__
    table = field_table(cls, info, fields=want_init)
    if table_has_init(info):
        cls.__ffi_init__ = _method(cls, table, "__ffi_init__")  # type: ignore[attr-defined]
    if want_init:
        made = _method(cls, table, "__init__")
        if table_has_init(info):
            made.__signature__ = _init_signature(table)
        cls.__init__ = made  # type: ignore[misc]


def table_has_init(info: Any) -> bool:
    return _find_ffi_init(info) is not None


def _no_init_table(cls: type, info: Any) -> Any:
    """A table without a constructor: its ``__init__`` refuses to construct."""
    return _core._field_table(info.type_key, None, None, (), (), (), 0)


def _wrap_own_init(cls: type, info: Any, table: Any) -> None:
    """A ``@py_class`` body's own ``__init__`` runs on an object the type's allocator made
    (its fields then assignable); ``self.__ffi_init__(...)`` replaces that object."""
    own = cls.__dict__.get("__ffi_py_class_user_init__") or cls.__dict__["__init__"]
    if isinstance(own, _core.TableMethod):
        return
    ffi_new = _core._lookup_type_attr(info.type_index, "__ffi_new__")
    made = _core._table_method(table, "__init__", cls, f"{cls.__qualname__}.__init__", own, ffi_new)
    with contextlib.suppress(TypeError, ValueError):  # a callable without a signature
        made.__signature__ = inspect.signature(own)
    cls.__init__ = made  # type: ignore[misc]
    if "__ffi_py_class_user_init__" in cls.__dict__:
        cls.__ffi_py_class_user_init__ = made  # type: ignore[attr-defined]


def _defines_init(cls: type) -> bool:
    """Whether the class body has its own ``__init__`` (a deferred class keeps it aside
    behind a placeholder until its fields register)."""
    own = cls.__dict__.get("__init__")
    if own is not None and not getattr(own, "__ffi_deferred_placeholder__", False):
        return True
    return "__ffi_py_class_user_init__" in cls.__dict__


def _install_dataclass_dunders(cls: type, py_class_mode: bool = False, **options: bool) -> None:
    """Install the dataclass dunders of ``cls`` (registered) from its field table; a
    dunder the class body defines stays. ``options`` are those of ``_DUNDER_OPTIONS``
    (unnamed ones keep its defaults). ``__init__``: with ``init`` the constructor's (a
    C++ type without one keeps ``Object``'s; with ``py_class_mode`` one refusing is
    installed then); without ``init`` a C++ type's refuses construction."""
    unknown = sorted(options.keys() - _DUNDER_OPTIONS.keys())
    if unknown:
        raise TypeError(f"unknown dataclass options: {', '.join(unknown)}")
    chosen = {**_DUNDER_OPTIONS, **options}
    init, eq, order = chosen["init"], chosen["eq"], chosen["order"]
    if order and not eq:
        raise ValueError("order=True requires eq=True")
    info = cls.__dict__.get("__tvm_ffi_type_info__") or cls.__tvm_ffi_type_info__  # type: ignore[attr-defined]
    table = field_table(cls, info)
    own = cls.__dict__
    if table_has_init(info):
        cls.__ffi_init__ = _method(cls, table, "__ffi_init__")  # type: ignore[attr-defined]
    wanted: list[str] = []
    if py_class_mode and _defines_init(cls):
        _wrap_own_init(cls, info, table)
    elif not _defines_init(cls) and (init or not py_class_mode):
        has_init = init and table_has_init(info)
        if has_init or py_class_mode or not init:
            made = _method(cls, table if has_init else _no_init_table(cls, info), "__init__")
            if has_init:
                made.__signature__ = _init_signature(table)
            cls.__init__ = made  # type: ignore[misc]
    for option, dunders in _OPTION_DUNDERS:
        if option is None or chosen[option]:
            wanted += dunders
    for name in wanted:
        if name not in own:
            setattr(cls, name, _method(cls, table, name))
    if chosen["match_args"] and "__match_args__" not in own:
        rows = [table.row(i) for i in range(len(table))]
        cls.__match_args__ = tuple(  # type: ignore[attr-defined,misc]
            r[0] for r in rows if r[5] & _ROW_INIT and not r[5] & _ROW_KW_ONLY
        )
