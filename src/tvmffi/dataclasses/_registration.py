"""Registering a Python-defined FFI type with the runtime (the layer under ``@py_class``).

``register_py_class`` allocates the type (below its parent) and binds the class;
``register_fields`` lays the fields out after the parent's (each an owned Any),
registers them for reflection, and has the runtime generate the type's allocator,
constructor (``__ffi_init__``: positional, keyword-only, defaults, factories) and
shallow copy (``ffi._PyClassRegisterTypeAttrColumns``), as the official binding
does, so these objects are built, read, compared, copied and freed by the runtime
in any language. ``register_methods`` registers ``@method`` functions and
type-attribute hooks. ``add_class_attrs`` puts the descriptors on the class.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Collection
from typing import Any

from .. import _core
from .._dunder import install_init
from ..function import _cached_global_func
from ..object import (
    _COMPARE_OFF,
    _DEFAULT_FROM_FACTORY,
    _HAS_DEFAULT,
    _HASH_OFF,
    _INIT_OFF,
    _KW_ONLY,
    _REGISTRY_LOCK,
    _REPR_OFF,
    _SEQ_HASH_DEF_PATTERN,
    _SEQ_HASH_DEF_SIMPLE,
    _SEQ_HASH_IGNORE,
    _TYPE_INFO_CACHE,
    MISSING,
    TypeInfo,
    _bind_class,
    _forget_synthetic,
    _refresh_type_info,
    _unbind_class,
)

_OBJECT_HEADER_SIZE = 24  # sizeof(TVMFFIObject)

_STRUCTURAL_EQ_FLAGS = {
    None: 0,
    "ignore": _SEQ_HASH_IGNORE,
    "def": _SEQ_HASH_DEF_PATTERN,
    "def-pattern": _SEQ_HASH_DEF_PATTERN,
    "def-simple": _SEQ_HASH_DEF_SIMPLE,
}


def register_py_class(parent_info: TypeInfo, type_key: str, cls: type) -> TypeInfo:
    """Allocate FFI type ``type_key`` below ``parent_info`` and bind ``cls`` to it.

    The returned TypeInfo has ``fields`` ``None`` until :func:`register_fields`.
    Raises ``ValueError`` when ``type_key`` is already registered.
    """
    if not isinstance(type_key, str) or not type_key:
        raise TypeError(f"type_key must be a non-empty str, got {type_key!r}")
    if not isinstance(parent_info, TypeInfo):
        raise TypeError(f"parent_info must be a TypeInfo, got {type(parent_info).__name__}")
    # Looking the key up and allocating it is one step: two threads decorating classes
    # with one key would otherwise both find it free and both register fields on it.
    with _CLAIM_LOCK:
        index = _core._type_key_to_index(type_key)
        if index is None:
            index = _core._py_class_alloc_type(type_key, parent_info.type_index)
        elif (
            _RETRYABLE.get(type_key) != (index, parent_info.type_index)
            or _core._type_info(index, MISSING)[3]
        ):  # reused only while still without fields (no one registered any meanwhile)
            raise ValueError(f"type key {type_key!r} is already registered")
        _RETRYABLE.pop(type_key, None)
    ancestors = (*parent_info.ancestors, parent_info.type_index)
    info = TypeInfo(index, type_key, ancestors, None, ())
    _TYPE_INFO_CACHE[index] = info
    try:
        with _REGISTRY_LOCK:
            _forget_synthetic()
            _bind_class(index, cls)
    except BaseException:  # the key stays claimable by a later decoration
        _RETRYABLE[type_key] = (index, parent_info.type_index)
        raise
    cls.__tvm_ffi_type_index__ = index  # type: ignore[attr-defined]
    cls.__tvm_ffi_type_info__ = info  # type: ignore[attr-defined]
    return info


# Type keys of failed decorations that registered nothing with the runtime but the type:
# key -> (type index, parent index); a retry under the same parent takes the type back.
_RETRYABLE: dict[str, tuple[int, int]] = {}
_CLAIM_LOCK = threading.Lock()


def unregister_py_class(cls: type, info: TypeInfo) -> None:
    """Undo the Python side of :func:`register_py_class` (a failed decoration).

    The runtime keeps the type (type indices are never freed); when no field was
    registered for it, a new decoration with the same key and parent reuses it.
    """
    runtime_fields = _core._type_info(info.type_index, MISSING)[3]
    if not runtime_fields and info.parent_type_index is not None:
        _RETRYABLE[info.type_key] = (info.type_index, info.parent_type_index)
    _unbind_class(info.type_index, cls)
    for name in ("__tvm_ffi_type_index__", "__tvm_ffi_type_info__"):
        if name in cls.__dict__:
            delattr(cls, name)


def _fields_end(info: TypeInfo | None) -> int:
    """Where a direct subtype's first field may start: the end of ``info``'s fields."""
    if info is None:
        return _OBJECT_HEADER_SIZE
    end = _fields_end(info.parent_type_info)
    for f in info.fields or ():
        end = max(end, f.offset + f.size)
    return end


def _field_flags(f: Any) -> int:
    flags = 0
    if f.default is not MISSING or f.default_factory is not MISSING:
        flags |= _HAS_DEFAULT
    if f.default_factory is not MISSING:
        flags |= _DEFAULT_FROM_FACTORY
    if not f.init:
        flags |= _INIT_OFF
    if not f.repr:
        flags |= _REPR_OFF
    hash_on = f.compare if f.hash is None else f.hash
    if not hash_on:
        flags |= _HASH_OFF
    if not f.compare:
        flags |= _COMPARE_OFF
    if f.kw_only:
        flags |= _KW_ONLY
    flags |= _STRUCTURAL_EQ_FLAGS[f.structural_eq]
    return flags


def _schema_json(f: Any) -> str:
    """The field's reflection metadata: its type schema (``Any`` when unknown)."""
    schema = f._ty_schema
    to_json = getattr(schema, "to_json", None)
    obj = to_json() if callable(to_json) else {"type": "Any"}
    return json.dumps({"type_schema": obj})


def _field_default(f: Any) -> Any:
    if f.default_factory is not MISSING:
        return _core.to_function(f.default_factory)
    return None if f.default is MISSING else f.default


# Native layout of a field by its schema's origin: (size, alignment, static type index),
# as the official binding lays Python-defined fields out; other origins are objects
# (an ObjectRef, 8 bytes). str/bytes/Optional/Union may hold inline values: Any.
_K_ANY = -1
_K_OBJECT = 64
_NATIVE_LAYOUT: dict[str, tuple[int, int, int]] = {
    "int": (8, 8, 1),
    "float": (8, 8, 3),
    "bool": (1, 1, 2),
    "ctypes.c_void_p": (8, 8, 4),
    "dtype": (4, 2, 5),
    "Device": (8, 4, 6),
    "Any": (16, 8, _K_ANY),
    "str": (16, 8, _K_ANY),
    "bytes": (16, 8, _K_ANY),
    "Optional": (16, 8, _K_ANY),
    "Union": (16, 8, _K_ANY),
}

# Field converters (TypeConverter objects), referenced (not owned) by the runtime's
# setters: a type is never unregistered, so they live as long as the process.
_CONVERTERS: list[Any] = []


def _layout(f: Any) -> tuple[int, int, int]:
    origin = getattr(f._ty_schema, "origin", "Any")
    return _NATIVE_LAYOUT.get(origin, (8, 8, _K_OBJECT))


def _getter_and_setter(f: Any, static_index: int) -> tuple[int, Any]:
    """The runtime's getter (an address) and converting setter (a Function) for a field of
    ``static_index``; ``(0, None)`` for an untyped (``Any``) field, stored as given."""
    schema = f._ty_schema
    if schema is None or getattr(schema, "origin", "Any") == "Any":
        return 0, None
    converter = schema._converter()
    converter_address, convert_address = converter._setter_entry()
    _CONVERTERS.append(converter)
    getter = int(_cached_global_func("ffi.MakeFieldGetter")(static_index))
    setter = _cached_global_func("ffi.MakeFieldSetter")(
        static_index, converter_address, convert_address
    )
    return getter, setter


def register_fields(info: TypeInfo, fields: list[Any], structure_kind: int | None = None) -> None:
    """Register ``fields`` as the own fields of the Python-defined type ``info``.

    Also registers the runtime-generated ``__ffi_init__``, ``__ffi_new__`` and
    ``__ffi_shallow_copy__`` and, for a ``structure_kind`` other than 0/None, the
    type's structural equality kind. Fills ``info.fields`` (each with its
    ``dataclass_field`` and ``frozen``).
    """
    if info.fields is not None:
        raise RuntimeError(f"fields of {info.type_key!r} are already registered")
    names = [getattr(f, "name", None) for f in fields]
    for name in names:
        if not isinstance(name, str) or not name:
            raise TypeError(f"every field needs a name to be registered, got {name!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate field names in {info.type_key!r}: {names}")
    offset = _fields_end(info.parent_type_info)
    for f in fields:
        size, alignment, static_index = _layout(f)
        offset = (offset + alignment - 1) & ~(alignment - 1)
        getter, setter = _getter_and_setter(f, static_index)
        _core._py_class_register_field(
            info.type_index,
            f.name,
            f.doc or "",
            _schema_json(f),
            _field_flags(f),
            offset,
            size,
            alignment,
            static_index,
            _field_default(f),
            getter,
            setter,
        )
        offset += size
    total_size = max((offset + 7) & ~7, _OBJECT_HEADER_SIZE)
    _cached_global_func("ffi._PyClassRegisterTypeAttrColumns")(info.type_index, total_size)
    _core._py_class_learn_deleter(info.type_index)  # deep chains of these free iteratively
    if structure_kind:
        _core._py_class_register_metadata(info.type_index, total_size, int(structure_kind), "")
    _refresh_type_info(info)
    registered: list[Any] = list(info.fields or ())
    for f, tf in zip(fields, registered, strict=True):
        tf.dataclass_field = f
        tf.frozen = bool(f.frozen)


def _as_ffi_value(value: Any) -> Any:
    if callable(value) and not isinstance(value, (_core.Function, _core.Object)):
        return _core.to_function(value)
    return value


def register_methods(
    info: TypeInfo, py_methods: list[tuple[Any, ...]], type_attr_names: Collection[str]
) -> None:
    """Register ``(name, func, is_static[, metadata JSON])`` entries of a Python-defined type.

    A name in ``type_attr_names`` goes to the type-attribute table (the
    runtime's ``__ffi_repr__``, ``__s_equal__``, ... hooks); others become
    reflected methods, callable from any language.
    """
    for entry in py_methods:
        name, func, is_static = entry[0], entry[1], bool(entry[2])
        if name in type_attr_names:
            _core._py_class_register_attr(info.type_index, name, _as_ffi_value(func))
            continue
        ffi_func = func if isinstance(func, _core.Function) else _core.to_function(func)
        doc = getattr(func, "__doc__", None) or ""
        metadata = entry[3] if len(entry) > 3 and entry[3] is not None else ""
        _core._py_class_register_method(info.type_index, name, ffi_func, is_static, doc, metadata)
    if py_methods:
        _refresh_type_info(info)


def install_ffi_init_attr(cls: type, info: TypeInfo) -> None:
    """Give ``cls`` the instance method ``__ffi_init__`` (the type's reflected
    constructor, for a class whose own ``__init__`` builds the object through it)."""
    install_init(cls, info, init=False)


def _method_attr(method: Any) -> Any:
    """How a reflected method appears on the class: a ``staticmethod``, or a bound-method
    descriptor carrying the method's doc."""
    if method.is_static:
        return staticmethod(method.func)
    return _core.MethodDescriptor(method.func, False, method.doc or None)


def add_class_attrs(cls: type, info: TypeInfo, type_attr_names: Collection[str] = ()) -> type:
    """Publish the type's own reflected fields (descriptors) and methods on ``cls``, its
    ``__ffi_init__`` and the named type attributes; a name the class body defines stays.
    Returns ``cls``."""
    published: dict[str, Any] = {m.name: _method_attr(m) for m in info.methods}
    published.update((tf.name, tf.as_property(cls)) for tf in info.fields or ())
    published.pop("__ffi_init__", None)  # the table's method, below
    for name in published.keys() - cls.__dict__.keys():
        setattr(cls, name, published[name])
    install_ffi_init_attr(cls, info)
    add_type_attr_class_attrs(cls, info, type_attr_names)
    return cls


def add_type_attr_class_attrs(cls: type, info: TypeInfo, type_attr_names: Collection[str]) -> None:
    """Set each of ``type_attr_names`` the type has in the type-attribute table on ``cls``,
    unless the class body defines it."""
    absent = [name for name in type_attr_names if name not in cls.__dict__]
    values = {name: _core._lookup_type_attr(info.type_index, name) for name in absent}
    for name, value in values.items():
        if value is not None:
            setattr(cls, name, value)
