"""Objects: class registration, reflection (fields, methods, constructors), type info."""

from __future__ import annotations

import functools
import json
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from . import _core, _function_doc
from ._annotation import schema_of as _schema_of
from ._core import Object
from ._dunder import MISSING as _MISSING
from ._dunder import install_init
from ._repr import forget_layouts, print_graph
from .function import _cached_global_func
from .type_schema import TypeSchema, _FromAbove

__all__ = [
    "MISSING",
    "FieldInfo",
    "MethodInfo",
    "Object",
    "TypeInfo",
    "get_fields",
    "get_methods",
    "get_type_info",
    "register_object",
    "type_index",
    "type_key",
]

_T = TypeVar("_T", bound=type)

# Field flag bits (c_api.h, TVMFFIFieldFlagBitMask*).
_WRITABLE = 1 << 0
_HAS_DEFAULT = 1 << 1
_IS_STATIC = 1 << 2
_DEFAULT_FROM_FACTORY = 1 << 5
_REPR_OFF = 1 << 6
_COMPARE_OFF = 1 << 7
_HASH_OFF = 1 << 8
_INIT_OFF = 1 << 9
_KW_ONLY = 1 << 10
_SEQ_HASH_IGNORE = 1 << 3
_SEQ_HASH_DEF_PATTERN = 1 << 4
_SEQ_HASH_DEF_SIMPLE = 1 << 12


MISSING: Any = _MISSING
"""The runtime's sentinel object (``ffi.GetInvalidObject``): no value, no default.

The same object as the official binding's ``tvm_ffi.core.MISSING``: maps answer it
for absent keys (``ffi.MapGetItemOrMissing``) and reflected fields without a
default carry it.
"""


def _json_object(text: str) -> dict[str, Any]:
    """``text`` parsed as JSON; a non-object value comes back as ``{"value": value}``.

    Raises ``ValueError`` for text that is not JSON.
    """
    value = json.loads(text)
    return value if isinstance(value, dict) else {"value": value}


def _parse_json(text: str) -> dict[str, Any]:
    """Reflection metadata: ``{}`` when empty, ``{"raw": text}`` when not JSON."""
    if not text:
        return {}
    try:
        return _json_object(text)
    except ValueError:
        return {"raw": text}


def _decode_type_schema(schema: Any) -> Any:
    """A ``type_schema`` given as a JSON string, parsed; anything else (or bad JSON) as is."""
    if isinstance(schema, str):
        try:
            return json.loads(schema)
        except ValueError:
            return schema
    return schema


@dataclass(eq=False)
class FieldInfo:
    """A reflected field of an FFI object type (the official ``tvm_ffi.core.TypeField``).

    Read from the runtime's type table. Two attributes are the Python layer's own and
    may be set by the dataclass decorators: ``frozen`` (plain assignment refused) and
    ``dataclass_field`` (the :class:`tvmffi.dataclasses.Field` describing it).
    """

    name: str
    doc: str
    flags: int
    static_type_index: int
    metadata: dict[str, Any] = field(default_factory=dict)
    default: Any = MISSING
    owner_type_index: int = -1
    position: int = -1
    size: int = 0
    """Native size of the field in bytes (the C++ member's ``sizeof``)."""
    alignment: int = 0
    """Native alignment of the field in bytes."""
    offset: int = 0
    """Byte offset of the field from the start of the ``TVMFFIObject`` header."""
    _frozen: bool = field(default=False, repr=False)
    dataclass_field: Any = None

    @property
    def writable(self) -> bool:
        return bool(self.flags & _WRITABLE)

    @property
    def has_default(self) -> bool:
        return bool(self.flags & _HAS_DEFAULT)

    @property
    def default_from_factory(self) -> bool:
        return bool(self.flags & _DEFAULT_FROM_FACTORY)

    @property
    def repr(self) -> bool:
        return not self.flags & _REPR_OFF

    @property
    def compare(self) -> bool:
        return not self.flags & _COMPARE_OFF

    @property
    def hash(self) -> bool:
        return not self.flags & _HASH_OFF

    @property
    def init(self) -> bool:
        return not self.flags & _INIT_OFF

    @property
    def kw_only(self) -> bool:
        return bool(self.flags & _KW_ONLY)

    @property
    def frozen(self) -> bool:
        """Assignment refused: registered read-only (``def_ro``, no setter), or frozen by a
        dataclass decorator (``type(obj).name.set(obj, v)`` still writes that one)."""
        return self._frozen or not self.flags & _WRITABLE

    @frozen.setter
    def frozen(self, value: bool) -> None:
        self._frozen = bool(value)

    @property
    def structural_eq(self) -> str | None:
        """Structural-equality role: ``"ignore"``, ``"def-pattern"``, ``"def-simple"`` or None."""
        if self.flags & _SEQ_HASH_IGNORE:
            return "ignore"
        if self.flags & _SEQ_HASH_DEF_PATTERN:
            return "def-pattern"
        if self.flags & _SEQ_HASH_DEF_SIMPLE:
            return "def-simple"
        return None

    @property
    def type_schema(self) -> Any:
        return _decode_type_schema(self.metadata.get("type_schema"))

    # ---- the official TypeField names ----
    @property
    def field_static_type_index(self) -> int:
        return self.static_type_index

    @functools.cached_property
    def ty(self) -> Any:
        """The field's :class:`TypeSchema` (from its ``type_schema`` metadata), or ``None``;
        parsed once."""
        schema = self.metadata.get("type_schema")
        if schema is None:
            return None
        try:
            if isinstance(schema, str):
                return TypeSchema.from_json_str(schema)
            return TypeSchema.from_json_obj(schema)
        except Exception:
            return None

    @property
    def c_init(self) -> bool:
        return self.init

    @property
    def c_kw_only(self) -> bool:
        return self.kw_only

    @property
    def c_has_default(self) -> bool:
        return self.has_default

    @property
    def c_default(self) -> Any:
        """The default value; ``MISSING`` when none or when it comes from a factory."""
        return self.default if self.has_default and not self.default_from_factory else MISSING

    @property
    def c_default_factory(self) -> Any:
        """The default factory; ``MISSING`` when the field has none."""
        return self.default if self.has_default and self.default_from_factory else MISSING

    @property
    def c_repr(self) -> bool:
        return self.repr

    @property
    def c_compare(self) -> bool:
        return self.compare

    @property
    def c_hash(self) -> bool:
        return self.hash

    @property
    def c_structural_eq(self) -> str | None:
        """``None``, ``"ignore"``, ``"def-pattern"`` or ``"def-simple"``."""
        return self.structural_eq

    def as_property(self, cls: type) -> Any:
        """A fresh field descriptor (``FFIProperty``) for ``cls``, honouring ``frozen``."""
        del cls  # the descriptor checks the object's FFI type, not its class
        return _core._field_property(self.owner_type_index, self.position, self._frozen)


@dataclass(frozen=True)
class MethodInfo:
    """A reflected method of an FFI object type."""

    name: str
    doc: str
    flags: int
    func: Any
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def is_static(self) -> bool:
        return bool(self.flags & _IS_STATIC)


@dataclass(eq=False)
class TypeInfo:
    """Runtime type information: key, ancestry, own fields and methods.

    ``fields`` is ``None`` for a Python-defined type whose fields are not
    registered yet (``_register_fields`` registers them and fills it in).
    """

    type_index: int
    type_key: str
    ancestors: tuple[int, ...]
    fields: Any  # tuple[FieldInfo, ...], or None before _register_fields
    methods: tuple[MethodInfo, ...]
    doc: str = ""
    own_total_size: int | None = None
    """``sizeof`` of the native object (header included) from the type's own metadata;
    ``None`` when the type registered none (``ffi.Function``, ...)."""

    @property
    def _has_type_metadata(self) -> bool:
        """Whether the runtime publishes native size metadata for this very type."""
        return self.own_total_size is not None

    @property
    def total_size(self) -> int:
        """Native object size in bytes; a type without metadata reports its parent's,
        extended by its own fields (a Python-defined type without structural kind)."""
        if self.own_total_size is not None:
            return self.own_total_size
        parent = self.parent_type_info
        end = 24 if parent is None else parent.total_size
        for f in self.fields or ():
            end = max(end, f.offset + f.size)
        return (end + 7) & ~7

    _decorator_args: dict[str, Any] = field(default_factory=dict)

    def _register_fields(self, fields: Any, structure_kind: int | None = None) -> None:
        """Register ``fields`` (``tvmffi.dataclasses.Field``) as this Python-defined type's."""
        _REGISTRATION["fields"](self, list(fields), structure_kind)

    def _register_py_methods(
        self,
        py_methods: Any = None,
        type_attr_names: frozenset[str] = frozenset(),
    ) -> None:
        """Register ``(name, func, is_static[, metadata])`` entries as methods or type attrs."""
        _REGISTRATION["methods"](self, list(py_methods or ()), type_attr_names)

    @property
    def parent_type_index(self) -> int | None:
        return self.ancestors[-1] if self.ancestors else None

    @property
    def type_ancestors(self) -> list[int]:
        """Ancestor type indices, root first (the official name)."""
        return list(self.ancestors)

    @property
    def parent_type_info(self) -> TypeInfo | None:
        """TypeInfo of the parent type; ``None`` for a root."""
        parent = self.parent_type_index
        return None if parent is None else _type_info_by_index(parent)

    @property
    def type_cls(self) -> type | None:
        """The Python class registered for the type (``Object`` for ``ffi.Object``)."""
        if self.type_key == "ffi.Object":
            return Object
        return _REGISTERED.get(self.type_index)


_TYPE_INFO_CACHE: dict[int, TypeInfo] = {}

# What registers a Python-defined type's fields and methods with the runtime lives a
# layer up (tvmffi.dataclasses._registration); that package plugs its two functions in
# here when imported, which ``import tvmffi`` always does first.
_REGISTRATION: dict[str, Callable[..., None]] = {}


_KNOWN_TYPE_INDICES: set[int] = set()
_TYPE_INDEX_CHECK = threading.local()


def _check_type_index(index: int) -> None:
    """``ValueError`` unless runtime type ``index`` exists (for indices from outside).

    The runtime aborts the process when asked for the type info of an unknown
    index, so an index not met before is looked up among the registered types'
    first (the set is rebuilt when a new type appears). The lookup's own result
    (an Array) asks for type info of indices the runtime just handed out, which
    exist: those nested questions are not checked again.
    """
    if index in _KNOWN_TYPE_INDICES or getattr(_TYPE_INDEX_CHECK, "busy", False):
        return
    _TYPE_INDEX_CHECK.busy = True
    try:
        keys = list(_cached_global_func("ffi.GetRegisteredTypeKeys")())
    finally:
        _TYPE_INDEX_CHECK.busy = False
    for key in keys:
        found = _core._type_key_to_index(str(key))
        if found is not None:
            _KNOWN_TYPE_INDICES.add(int(found))
    if index not in _KNOWN_TYPE_INDICES:
        raise ValueError(f"unknown type index {index}")


def _type_info_by_index(index: int) -> TypeInfo:
    info = _TYPE_INFO_CACHE.get(index)
    if info is not None:
        return info
    tindex, key, anc, raw_fields, raw_methods, doc, total_size = _core._type_info(index, MISSING)
    fields = tuple(
        FieldInfo(
            name=f[0],
            doc=f[1],
            metadata=_parse_json(f[2]),
            flags=f[3],
            static_type_index=f[4],
            default=f[5],
            owner_type_index=tindex,
            position=i,
            size=f[6],
            alignment=f[7],
            offset=f[8],
        )
        for i, f in enumerate(raw_fields)
    )
    methods = tuple(
        MethodInfo(name=m[0], doc=m[1], metadata=_parse_json(m[2]), flags=m[3], func=m[4])
        for m in raw_methods
    )
    for m in methods:
        if isinstance(m.func, _core.Function):
            _function_doc.note_method(m.func, key, m.name, m.doc, m.metadata, m.is_static)
    info = TypeInfo(tindex, key, tuple(anc), fields, methods, doc, total_size)
    _TYPE_INFO_CACHE[index] = info
    return info


def _key_to_index(key: str) -> int:
    index = _core._type_key_to_index(key)
    if index is None:
        raise ValueError(f"unknown FFI type key {key!r}")
    return index


def _resolve_index(x: Any) -> int:
    if isinstance(x, str):
        return _key_to_index(x)
    if isinstance(x, Object):
        return int(x.type_index)
    if isinstance(x, type) and issubclass(x, Object):
        found = x.__dict__.get("__tvm_ffi_type_index__")
        if found is None:
            raise TypeError(f"{x.__qualname__} is not registered with register_object")
        return int(found)
    raise TypeError(f"expected a type key, a registered class or an Object, got {type(x).__name__}")


def type_index(x: Any) -> int:
    """Runtime type index of a registered class or an object."""
    if isinstance(x, str):
        raise TypeError("type_index expects a registered class or an Object, not a str")
    return _resolve_index(x)


def type_key(x: Any) -> str:
    """Type key of a registered class or an object."""
    return get_type_info(x).type_key


def get_type_info(x: Any) -> TypeInfo:
    """TypeInfo for a type key, a registered class or an object."""
    return _type_info_by_index(_resolve_index(x))


def _refresh_type_info(info: TypeInfo) -> None:
    """Re-read a type's fields and methods from the runtime into ``info`` (kept as the
    cached object, so identities hold); ``frozen``/``dataclass_field`` are kept by name."""
    _TYPE_INFO_CACHE.pop(info.type_index, None)
    forget_layouts()
    fresh = _type_info_by_index(info.type_index)
    old = {f.name: f for f in info.fields or ()}
    for f in fresh.fields:
        prev = old.get(f.name)
        if prev is not None:
            f._frozen, f.dataclass_field = prev._frozen, prev.dataclass_field
    info.fields, info.methods = fresh.fields, fresh.methods
    info.own_total_size = fresh.own_total_size
    _TYPE_INFO_CACHE[info.type_index] = info
    for index in [
        i
        for i in _ATTR_CACHE
        if i == info.type_index or info.type_index in _type_info_by_index(i).ancestors
    ]:
        del _ATTR_CACHE[index]


def _chain(index: int) -> list[TypeInfo]:
    info = _type_info_by_index(index)
    return [_type_info_by_index(a) for a in info.ancestors] + [info]


def get_fields(x: Any) -> list[FieldInfo]:
    """All reflected fields of the type, inherited ones first."""
    return [f for info in _chain(_resolve_index(x)) for f in info.fields or ()]


def get_methods(x: Any) -> list[MethodInfo]:
    """All reflected methods of the type, inherited ones first (a subtype's wins)."""
    out: dict[str, MethodInfo] = {}
    for info in _chain(_resolve_index(x)):
        for m in info.methods:
            out.pop(m.name, None)
            out[m.name] = m
    return list(out.values())


# ---- attribute tables -----------------------------------------------------
_ATTR_CACHE: dict[int, dict[str, Any]] = {}


def _attrs_of(index: int) -> dict[str, Any]:
    """name -> descriptor (fields, then methods) of a type and its ancestors."""
    table = _ATTR_CACHE.get(index)
    if table is not None:
        return table
    table = {}
    for info in _chain(index):
        for f in info.fields or ():
            table[f.name] = f.as_property(Object)
        for m in info.methods:
            if m.name == "__ffi_init__":
                continue
            table[m.name] = (
                staticmethod(m.func)
                if m.is_static
                else _core.MethodDescriptor(m.func, False, m.doc or None)
            )
    _ATTR_CACHE[index] = table
    return table


def _find_ffi_init(index: int) -> Any:
    for m in _type_info_by_index(index).methods:
        if m.name == "__ffi_init__":
            return m.func
    return _core._lookup_type_attr(index, "__ffi_init__")


@functools.cache
def _kwargs_marker() -> Any:
    """The runtime's marker between positional and keyword arguments, fetched once."""
    return _cached_global_func("ffi.GetKwargsObject")()


_REGISTERED: dict[int, type] = {}
# Guards every change of the class registries (_REGISTERED and the extension's, kept
# equal): a registration, with the drop of generated classes it implies, and the making
# of a generated class are each one step for every other thread. Re-entrant: making an
# object while registering may generate a class on the same thread.
_REGISTRY_LOCK = threading.RLock()


def _bind_class(index: int, cls: type) -> None:
    """``cls`` wraps the objects of type ``index`` from now on, in both registries."""
    with _REGISTRY_LOCK:
        _core.register_object_class(index, cls)
        _REGISTERED[index] = cls


def _unbind_class(index: int, cls: type) -> None:
    """Forget ``cls`` for type ``index``, in both registries, if it is still the one."""
    with _REGISTRY_LOCK:
        if _REGISTERED.get(index) is cls:
            del _REGISTERED[index]
            _core.unregister_object_class(index)


def _register_class(cls: _T, key: str, *, install: bool = True, init: bool = True) -> _T:
    if not (isinstance(cls, type) and issubclass(cls, Object)):
        raise TypeError("register_object expects a subclass of tvmffi.Object")
    with _REGISTRY_LOCK:
        _bind_new_class(cls, key, install=install, init=init)
    return cls


def _bind_new_class(cls: type[Object], key: str, *, install: bool, init: bool) -> None:
    """Register ``cls`` for ``key`` (descriptors and ``__init__`` first); the caller holds
    the registry lock."""
    index = _key_to_index(key)
    if not _is_synthetic(cls):
        _forget_synthetic()
    cls.__tvm_ffi_type_index__ = index  # type: ignore[attr-defined]
    cls.__tvm_ffi_type_info__ = _type_info_by_index(index)  # type: ignore[attr-defined]
    if install:
        for name, desc in _attrs_of(index).items():
            if name not in cls.__dict__ and not _defined_by_user_base(cls, name):
                setattr(cls, name, desc)
    install_init(cls, cls.__tvm_ffi_type_info__, init=init)  # type: ignore[attr-defined]
    _bind_class(index, cls)


def _is_synthetic(cls: type) -> bool:
    return bool(cls.__dict__.get("__tvm_ffi_synthetic__", False))


def _forget_synthetic() -> None:
    """Drop generated subclasses: a newly registered class may be a nearer ancestor."""
    with _REGISTRY_LOCK:
        for index, cls in [(i, c) for i, c in _REGISTERED.items() if _is_synthetic(c)]:
            _unbind_class(index, cls)


def _subclass_hook(index: int, ancestor: type) -> type:
    """Class for objects of an unregistered subtype of a registered class.

    It derives from the ancestor's class (so ``isinstance`` holds and the
    ancestor's Python methods apply) and adds the subtype's own reflected
    fields and methods. Registering a class for the subtype later replaces it.
    """
    with _REGISTRY_LOCK:
        made = _REGISTERED.get(index)  # by another thread while this one waited
        return made if made is not None else _make_subclass(index, ancestor)


def _make_subclass(index: int, ancestor: type) -> type:
    key = _type_info_by_index(index).type_key
    module, _, name = key.rpartition(".")
    namespace = {
        "__slots__": (),
        "__module__": module,
        "__qualname__": key,
        "__doc__": (
            f"Auto-generated fallback class for {key}.\n"
            f"This class is generated because the class is not registered "
            f"(a subtype of {ancestor.__qualname__}).\n"
            "Register a class with the `register_object` decorator instead of using this one."
        ),
        "__tvm_ffi_synthetic__": True,
    }
    return _register_class(type(name, (ancestor,), namespace), key)


def _defined_by_user_base(cls: type, name: str) -> bool:
    """True if a non-reflected attribute of that name comes from a base class."""
    for base in cls.__mro__[1:]:
        if name in base.__dict__:
            value = base.__dict__[name]
            return not isinstance(
                value, (_core.FieldProperty, _core.MethodDescriptor, staticmethod)
            )
    return False


def register_object(type_key: str | type | None = None, *, init: bool = True) -> Any:
    """Class decorator: make the decorated class the Python class of an FFI object type.

    Every object of type ``type_key`` (and of its subtypes that have no class of their
    own) that reaches Python, as a call's result, a field or a container element,
    is wrapped in this class. The type's reflected fields become properties and its
    reflected methods become methods (static ones static methods); subclasses of
    :class:`Object` that declare ``__slots__ = ()`` keep instances free of a
    ``__dict__``.

    Parameters
    ----------
    type_key : str, type or None
        The runtime's type key (``"testing.TestIntPair"``). ``None``, or the class
        itself (bare ``@register_object``), uses the class's ``__name__``.
    init : bool
        With ``True`` (the default) calling the class calls the type's reflected
        ``__ffi_init__`` with the given positional and keyword arguments; a type with
        no constructor then raises ``TypeError`` when called. With ``False`` the class
        keeps its own ``__init__``.

    Returns
    -------
    callable or type
        The decorator (or, for bare use, the registered class itself).

    Raises
    ------
    TypeError
        ``type_key`` is neither a ``str``, a class nor ``None``.
    ValueError
        No object type is registered under the key (raised when decorating).

    Notes
    -----
    Registering another class for a key replaces the earlier one, as in the
    official binding.

    Examples
    --------
    >>> import tvmffi
    >>> @tvmffi.register_object("testing.TestIntPair")
    ... class IntPair(tvmffi.Object):
    ...     __slots__ = ()
    >>> p = IntPair(1, 2)
    >>> p.a, p.b, p.sum()
    (1, 2, 3)
    """

    def decorator_with(key: str) -> Callable[[_T], _T]:
        def decorator(cls: _T) -> _T:
            return _register_or_skip(cls, key, init)

        return decorator

    if isinstance(type_key, str):
        return decorator_with(type_key)
    if type_key is None:
        return lambda cls: _register_or_skip(cls, cls.__name__, init)
    if isinstance(type_key, type):
        return _register_or_skip(type_key, type_key.__name__, init)
    raise TypeError("type_key must be a string, type, or None")


def _register_or_skip(cls: _T, key: str, init: bool) -> _T:
    """Register ``cls`` for ``key``; an unknown key leaves ``cls`` as it is when the
    official switch ``registry._SKIP_UNKNOWN_OBJECTS`` is on (TVM sets it in its
    runtime-only mode, where the compiler's types are not registered)."""
    registry = sys.modules.get(__package__ + ".registry")
    if getattr(registry, "_SKIP_UNKNOWN_OBJECTS", False) and _core._type_key_to_index(key) is None:
        return cls
    return _register_class(cls, key, init=init)


# ---- hooks of the generic Object -------------------------------------------
def _getattr_hook(obj: Object, name: str) -> Any:
    desc = _attrs_of(obj.type_index).get(name)
    if desc is None:
        # A registered class may resolve other names itself (Module: its functions).
        # Unlike a Python __getattr__ this keeps hits on the C getattro fast path.
        fallback = getattr(type(obj), "__tvm_ffi_getattr__", None)
        if fallback is not None:
            return fallback(obj, name)
        raise AttributeError(f"{obj.type_key} object has no attribute {name!r}")
    return desc.__get__(obj, type(obj))


def _dir_hook(obj: Object) -> list[str]:
    names = set(object.__dir__(obj))
    if obj.__chandle__() != 0:
        names.update(_attrs_of(obj.type_index))
    else:  # not made yet, or moved from: the attributes of the class's type
        info = getattr(type(obj), "__tvm_ffi_type_info__", None)
        if info is not None:
            names.update(_attrs_of(info.type_index))
    return sorted(names)


def _function_repr(func: Any) -> str:
    """``<tvmffi.Function testing.add_one>``: the name it is known by (a global function's
    registry name, a module function's or a method's qualified name); a function of unknown
    origin (a converted Python callable) ``<tvmffi.Function at 0x...>``. The runtime's
    printer writes the bare type key, ``ffi.Function``, for every one."""
    cls = type(func)
    kind = "tvmffi.Function" if cls is _core.Function else f"{cls.__module__}.{cls.__qualname__}"
    try:
        name = getattr(func, "__qualname__", None)
    except Exception:
        name = None
    if isinstance(name, str) and name:
        return f"<{kind} {name}>"
    return f"<{kind} at {func.__chandle__():#x}>"


def _repr_hook(obj: Object) -> str:
    """The runtime's printer's text (``ffi.ReprPrint``), as the official binding, in memory
    proportional to it (:mod:`._repr`); a Function's names it (:func:`_function_repr`);
    never raises."""
    try:
        if isinstance(obj, _core.Function):
            return _function_repr(obj)
        return print_graph(obj)
    except Exception:
        return f"{type(obj).__name__}({obj.__chandle__()})"


def _new_object(cls: Any) -> Any:
    """Pickle's constructor: an instance of ``cls`` without a handle (state comes next)."""
    return cls.__new__(cls)


_core._set_object_hooks(_repr_hook, _getattr_hook, _dir_hook, _subclass_hook)
# The pickle hooks (``__reduce__`` / ``__setstate__``) are set by tvmffi._pickle_hooks.


class ObjectConvertible:
    """Base class of Python classes convertible to an :class:`Object`.

    Subclasses implement :meth:`asobject`; :func:`tvmffi.convert` calls it.
    """

    def asobject(self) -> Object:
        """The :class:`Object` this value stands for."""
        raise NotImplementedError()

    def __tvm_ffi_object__(self) -> Object:
        """An FFI call converts the value through :meth:`asobject` (as officially)."""
        return self.asobject()


class OpaquePyObject(Object):
    """An arbitrary Python object carried through the FFI (``ffi.OpaquePyObject``).

    Values with no FFI form travel as one; :meth:`pyobject` gives the object back.
    """

    __slots__ = ()

    def pyobject(self) -> Any:
        """The Python object held."""
        return _core._opaque_pyobject(self)


def _type_cls_to_type_info(type_cls: type) -> TypeInfo | None:
    """TypeInfo of a registered class, or ``None`` (``tvm_ffi.core`` helper)."""
    if type_cls is Object:
        return _type_info_by_index(_key_to_index("ffi.Object"))
    info = type_cls.__dict__.get("__tvm_ffi_type_info__")
    return info if isinstance(info, TypeInfo) else None


def _lookup_type_attr(type_index: int, attr_key: str, ancestor: bool = False) -> Any:
    """The type attribute ``attr_key`` registered on ``type_index``, or ``None``.

    With ``ancestor=True`` a type without its own value inherits the one of its
    closest ancestor that has one. An index the runtime does not know has no
    attributes (``None``), rather than an error.
    """
    own = _core._lookup_type_attr(type_index, attr_key)
    if own is not None or not ancestor:
        return own
    try:
        _check_type_index(type_index)  # the runtime aborts on type info of an unknown one
    except ValueError:
        return None
    lineage = _type_info_by_index(type_index).ancestors
    inherited = (_core._lookup_type_attr(i, attr_key) for i in lineage[::-1])
    return next((value for value in inherited if value is not None), None)


_register_class(OpaquePyObject, "ffi.OpaquePyObject", install=False, init=False)


# The schema layer imports nothing above it: this layer hands it what it needs.
_FromAbove.check_type_index = _check_type_index
_FromAbove.type_info = _type_info_by_index
_FromAbove.registered = _REGISTERED
_FromAbove.parse_annotation = _schema_of
