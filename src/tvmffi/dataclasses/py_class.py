"""``@py_class``: a Python class whose instances are FFI objects of a new type, with
dataclass semantics.

The class (a subclass of :class:`tvmffi.Object` or of another FFI class) names its
fields with annotations, optionally customized by :func:`field`; ``_: KW_ONLY``
makes the following fields keyword-only and ``ClassVar`` annotations are not
fields. The type is allocated in the runtime's type table below the nearest
registered base, its fields are registered for reflection (every binding reads
and writes them; the runtime builds, copies, compares, prints and frees the
objects), functions marked with :func:`method` become reflected methods and
hook names (``__ffi_repr__``, ``__s_equal__``, ...) type attributes.
"""

from __future__ import annotations

import inspect
import json
import sys
import threading
import typing
import weakref
from collections.abc import Mapping
from copy import copy
from typing import Any, ClassVar, TypedDict, TypeVar

from typing_extensions import Unpack, dataclass_transform

from .._dunder import _DUNDER_OPTIONS, _install_dataclass_dunders
from .._lineage import _chain_fields
from ..object import TypeInfo, _lookup_type_attr, _type_cls_to_type_info
from ..type_schema import TypeSchema
from . import _registration
from .field import KW_ONLY, Field, _field_converter, field, init_property

__all__ = ["method", "py_class"]

_T = TypeVar("_T", bound=type)

# structural_eq= values and the runtime's TVMFFISEqHashKind for each.
_STRUCTURE_KIND_MAP: dict[str | None, int] = {
    None: 0,
    "tree": 1,
    "var": 2,
    "dag": 3,
    "const-tree": 4,
    "singleton": 5,
}

# Names that go to the runtime's type-attribute table rather than its method list.
_FFI_TYPE_ATTR_NAMES: frozenset[str] = frozenset(
    {
        "__ffi_repr__",
        "__ffi_hash__",
        "__ffi_eq__",
        "__ffi_compare__",
        "__ffi_convert__",
        "__ffi_convert_type_schema__",
        "__any_hash__",
        "__any_equal__",
        "__s_equal__",
        "__s_hash__",
        "__s_visit__",
        "__s_mutate__",
        "__s_maybe_inplace_mutate__",
        "__data_to_json__",
        "__data_from_json__",
    }
)


def method(fn: Any) -> Any:
    """Mark ``fn`` (a function or ``staticmethod``) of a ``@py_class`` body as a reflected
    FFI method, callable by name from any language (``TypeInfo.methods``).

    A hook name (``__ffi_repr__``, ...) goes to the type-attribute table instead.
    ``@classmethod`` is refused: its first argument would be the class.
    """
    if isinstance(fn, classmethod):
        raise TypeError(
            "@tvm_ffi.method: @classmethod is not supported (the packed-call convention "
            "passes the object first); use @staticmethod or a plain instance method."
        )
    # The mark goes on the function itself: a staticmethod wrapper keeps its own.
    target = fn.__func__ if isinstance(fn, staticmethod) else fn
    if not callable(target):
        raise TypeError(f"@tvm_ffi.method: expected a callable, got {type(target).__name__}.")
    target.__ffi_method__ = True  # type: ignore[union-attr]
    return fn


def _is_method_marked(value: Any) -> bool:
    if isinstance(value, (staticmethod, classmethod)):
        return getattr(value.__func__, "__ffi_method__", False) is True
    return callable(value) and getattr(value, "__ffi_method__", False) is True


# Parent type attributes a subtype copies unless it names its own list.
_DEFAULT_INHERIT_TYPE_ATTRS = (
    "__s_equal__",
    "__s_hash__",
    "__s_visit__",
    "__data_to_json__",
    "__data_from_json__",
)


def _names_option(cls: type, option: str, default: tuple[str, ...]) -> tuple[str, ...]:
    """The class option ``option`` (inherited like any class attribute): a tuple or list
    of str; ``default`` when no class on the MRO sets it."""
    given = getattr(cls, option, default)
    if isinstance(given, (tuple, list)) and all(isinstance(n, str) for n in given):
        return tuple(given)
    raise TypeError(f"{cls.__name__}.{option} must be a tuple or list of str, got {given!r}")


def _type_attr_options(cls: type) -> tuple[frozenset[str], tuple[str, ...]]:
    """The names the class registers as type attributes (the runtime's hooks and the
    ``__ffi_type_attr_names__`` it adds), and those it copies from its nearest ancestor
    (``__ffi_inherit_type_attrs__``, by default the structural and JSON hooks)."""
    extra = _names_option(cls, "__ffi_type_attr_names__", ())
    inherit = _names_option(cls, "__ffi_inherit_type_attrs__", _DEFAULT_INHERIT_TYPE_ATTRS)
    return _FFI_TYPE_ATTR_NAMES.union(extra), inherit


def _type_attr_names(cls: type) -> frozenset[str]:
    return _type_attr_options(cls)[0]


def _nearest_type_attr(ancestor: TypeInfo | None, name: str) -> Any:
    """``name``'s value on the closest of ``ancestor`` and its parents that has one; a
    Python class on the way whose body defines ``name`` (even as ``None``) ends the walk."""

    while ancestor is not None:
        found = _lookup_type_attr(ancestor.type_index, name)
        if found is not None or name in vars(ancestor.type_cls or object):
            return found
        ancestor = ancestor.parent_type_info
    return None


def _inherited_type_attrs(cls: type, info: TypeInfo, names: tuple[str, ...]) -> list[Any]:
    """``(name, value, True)`` for each of ``names`` the class body does not define, taken
    from the nearest ancestor type having it."""
    missing = [n for n in names if n not in cls.__dict__]
    pairs = [(n, _nearest_type_attr(info.parent_type_info, n)) for n in missing]
    return [(name, value, True) for name, value in pairs if value is not None]


def _collect_py_methods(cls: type) -> list[tuple[str, Any, bool]] | None:
    """``(name, function, is_static)`` of each entry the class body gives the runtime: the
    ``@method`` functions and the type-attribute names it defines (a ``None`` value only
    hides the inherited one)."""
    attr_names = _type_attr_names(cls)
    entries: list[tuple[str, Any, bool]] = []
    for name, value in cls.__dict__.items():
        if isinstance(value, classmethod) and _is_method_marked(value):
            raise TypeError(
                f"{cls.__name__}.{name}: a @tvm_ffi.method function wrapped by @classmethod "
                "is not supported (the packed call passes the object first); use "
                "@staticmethod or a plain instance method."
            )
        if name in attr_names:
            if value is None:
                continue
        elif not _is_method_marked(value):
            continue
        is_static = isinstance(value, staticmethod)
        entries.append((name, value.__func__ if is_static else value, is_static))
    return entries or None  # None: the class gives the runtime nothing (as officially)


def _method_metadata(cls: type, func: Any, is_static: bool, localns: dict[str, Any]) -> str:
    """A ``@method``'s reflection metadata: its signature as a ``Callable`` type schema
    (the object first for an instance method); a bare ``Callable`` when the annotations
    do not resolve or the signature has ``*args``, ``**kwargs`` or keyword-only
    parameters (a packed call passes positions only)."""


    bare = json.dumps({"type_schema": TypeSchema("Callable").to_json()})
    globalns = getattr(sys.modules.get(cls.__module__), "__dict__", {})
    try:
        hints = typing.get_type_hints(func, globalns=globalns, localns=localns)
        params = list(inspect.signature(func).parameters.values())
        schemas = [] if is_static else [TypeSchema.from_annotation(cls)]
        for param in params if is_static else params[1:]:
            if param.kind not in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
                return bare
            schemas.append(TypeSchema.from_annotation(hints.get(param.name, Any)))
        ret = TypeSchema.from_annotation(hints.get("return", Any))
    except (NameError, AttributeError, TypeError, ValueError):
        return bare
    schema = TypeSchema("Callable", named_args={"return": (ret,), "params": tuple(schemas)})
    return json.dumps({"type_schema": schema.to_json()})


# ---- field resolution --------------------------------------------------------------
# A class's fields come from one table read from the class once: a row per annotation of
# the class and of the plain (unregistered) classes only it brings in, base-most first.
# ClassVar annotations make no row; a ``KW_ONLY`` annotation makes the rows after it
# keyword-only. Evaluating the annotations (which may wait for names defined later, see
# "deferred registration") and making the Field objects both read the table.
_NOT_SET = object()


# (Plain slotted classes: a NamedTuple class costs ~4M instructions to create at import.)
class _Row:
    """An annotation that is a field (or a field marker, once evaluated)."""

    __slots__ = ("after_kw_only", "annotation", "name", "owner", "value")

    def __init__(
        self, owner: type, name: str, annotation: Any, value: Any, after_kw_only: bool
    ) -> None:
        self.owner, self.name, self.annotation = owner, name, annotation
        self.value = value  # what the owner's body assigned to the name, or _NOT_SET
        self.after_kw_only = after_kw_only


class _FieldTable:
    __slots__ = ("owners", "rows", "sentinels")

    def __init__(
        self, owners: tuple[type, ...], rows: tuple[_Row, ...], sentinels: tuple[str, ...]
    ) -> None:
        self.owners = owners  # the classes with annotations the rows come from
        self.rows = rows
        self.sentinels = sentinels  # the class's own KW_ONLY names holding a class attribute


_TABLES: weakref.WeakKeyDictionary[type, _FieldTable] = weakref.WeakKeyDictionary()


def _contributors(cls: type) -> list[type]:
    """``cls`` and the classes of its MRO that its nearest registered base does not bring
    in (plain mixins), base-most first."""
    excluded: set[type] = {object}
    for ancestor in cls.__mro__[1:]:
        if _type_cls_to_type_info(ancestor) is not None:
            excluded.update(ancestor.__mro__)
            break
    order = [k for k in cls.__mro__ if k not in excluded]
    order.reverse()
    return order


def _read_table(cls: type) -> _FieldTable:
    owners: list[type] = []
    rows: list[_Row] = []
    sentinels: list[str] = []
    switched = False
    for owner in _contributors(cls):
        annotations = inspect.get_annotations(owner)
        if annotations:
            owners.append(owner)
        for name, annotation in annotations.items():
            if _is_classvar(annotation):
                continue
            value = owner.__dict__.get(name, _NOT_SET)
            if not _is_kw_only(annotation):
                rows.append(_Row(owner, name, annotation, value, switched))
                continue
            switched = True
            if owner is cls and value is not _NOT_SET:
                sentinels.append(name)
    return _FieldTable(tuple(owners), tuple(rows), tuple(sentinels))


def _table(cls: type) -> _FieldTable:
    """The class's field table, read at the first request (the decoration)."""
    found = _TABLES.get(cls)
    if found is None:
        found = _TABLES[cls] = _read_table(cls)
    return found


def _annotation_text(annotation: Any) -> str:
    if isinstance(annotation, str):
        return annotation.strip()
    return str(getattr(annotation, "__forward_arg__", ""))


def _is_classvar(annotation: Any) -> bool:
    if annotation is ClassVar or typing.get_origin(annotation) is ClassVar:
        return True
    text = _annotation_text(annotation)
    return text.split("[", 1)[0] in ("ClassVar", "typing.ClassVar")


def _is_kw_only(annotation: Any) -> bool:
    if annotation is KW_ONLY:
        return True
    text = _annotation_text(annotation)
    return text == "KW_ONLY" or text.endswith(".KW_ONLY")


def _resolve(annotation: Any, globalns: dict[str, Any], localns: dict[str, Any]) -> Any:
    """The annotation evaluated (strings too); an error evaluating it propagates (names
    not defined yet were waited for before: see "deferred registration")."""
    if not isinstance(annotation, str):
        return annotation
    return eval(annotation, globalns, localns)


def _schema_of(annotation: Any) -> Any:
    """The annotation's TypeSchema (``Any`` for a name not defined yet); an annotation
    that names no FFI type raises ``TypeError``, as officially."""

    if annotation is None:
        return TypeSchema("Any")
    return TypeSchema.from_annotation(annotation)


def _declared_field(row: _Row, cls: type, init_props: dict[str, Any]) -> Field:
    """The :class:`Field` the row's body assignment stands for: a ``field()`` (copied when a
    plain base declared it, which other classes may share), an ``init_property`` (a
    computed field outside ``__init__``, repr and comparisons) or a plain default."""
    value = row.value
    if isinstance(value, Field):
        return value if row.owner is cls else copy(value)
    made: Field
    if isinstance(value, init_property):
        init_props[row.name] = value.func
        made = field(init=False, repr=False, hash=False, compare=False, structural_eq="ignore")
    else:
        made = field() if value is _NOT_SET else field(default=value)
    return made


def _marker_types(cls: type) -> tuple[type, ...]:
    markers = getattr(cls, "__ffi_field_markers__", ())
    if isinstance(markers, (tuple, list)) and all(isinstance(m, type) for m in markers):
        return tuple(markers)
    raise TypeError("__ffi_field_markers__ must be a tuple or list of types")


def _missing_names(
    cls: type, globalns: dict[str, Any], localns: dict[str, Any], every_error: bool = False
) -> list[str]:
    """``"name: annotation (error)"`` of each string annotation naming something not
    defined (yet): a ``NameError`` or ``AttributeError`` evaluating it (with
    ``every_error``, any error: a diagnostic)."""
    missing = []
    for row in _table(cls).rows:
        if not isinstance(row.annotation, str):
            continue
        try:
            eval(row.annotation, globalns, localns)
        except Exception as err:
            if every_error or isinstance(err, (NameError, AttributeError)):
                missing.append(f"{row.name}: {row.annotation.strip()} ({err})")
    return missing


def _namespaces(cls: type) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """What the class's string annotations are evaluated in: its module's globals, and the
    ``@py_class`` classes by name (its own module's over the others', then the class itself
    and its body's names); with the annotations that do not resolve yet."""
    module = sys.modules.get(cls.__module__)
    globalns: dict[str, Any] = dict(vars(module)) if module is not None else {}
    localns: dict[str, Any] = {}
    for module_name, classes in _PY_CLASSES_BY_MODULE.items():
        if module_name != cls.__module__:
            localns.update(classes)
    localns.update(_PY_CLASSES_BY_MODULE.get(cls.__module__, {}))
    localns.update(vars(cls))
    localns[cls.__name__] = cls
    return globalns, localns, _missing_names(cls, globalns, localns)


def _resolve_fields(cls: type, params: dict[str, Any]) -> tuple[list[Field], dict[str, Any]]:
    """The class's own :class:`Field` list (completed) and its init-property functions.

    Rows whose annotation evaluates to one of the class's ``__ffi_field_markers__`` (an
    extension's) are not fields: each records its place among the fields, counting the
    inherited ones first, after the parent's markers (``params["field_markers"]``). A name
    declared again (a mixin's field redeclared) keeps its first place."""
    table = _table(cls)
    globalns, localns, _ = _namespaces(cls)
    marker_types = _marker_types(cls)
    parent = _parent_info(cls)
    markers = list(parent._decorator_args.get("field_markers", ()))
    offset = len(_chain_fields(parent))
    by_name: dict[str, Field] = {}
    init_props: dict[str, Any] = {}
    consumed = list(table.sentinels)
    for row in table.rows:
        evaluated = _resolve(row.annotation, globalns, localns)
        if any(evaluated is m for m in marker_types):
            markers.append((evaluated, row.owner, row.name, offset + len(by_name)))
            continue
        made = _declared_field(row, cls, init_props)
        made.name, made.type, made._ty_schema = row.name, evaluated, _schema_of(evaluated)
        if made.kw_only is None:
            made.kw_only = bool(params["kw_only"]) or row.after_kw_only
        made.frozen = made.frozen or bool(params["frozen"])
        if made.hash is None:
            made.hash = made.compare
        by_name[row.name] = made
        if row.owner is cls and row.value is not _NOT_SET:
            consumed.append(row.name)
    # The body's defaults now live in the fields: the class attributes would shadow the
    # field descriptors the registration installs.
    for name in consumed:
        if name in cls.__dict__:
            delattr(cls, name)
    params["field_markers"] = tuple(markers)
    return list(by_name.values()), init_props


# module name -> {class name: class} of every @py_class type, for annotation lookup.
_PY_CLASSES_BY_MODULE: dict[str, dict[str, type]] = {}


def _parent_info(cls: type) -> TypeInfo:
    for base in cls.__mro__[1:]:
        info = _type_cls_to_type_info(base)
        if info is not None:
            return info
    raise TypeError(
        f"{cls.__name__} must inherit from a registered FFI Object type (e.g. tvmffi.Object)"
    )


def _finish(cls: type, info: TypeInfo) -> None:
    """Register the class's fields, methods and type attributes and install its dunders,
    with the decorator's options as they are after the field-resolution hooks ran."""
    params = info._decorator_args
    own_fields, init_props = _resolve_fields(cls, params)
    _TABLES.pop(cls, None)
    hooks = [
        hook
        for base in reversed(cls.__mro__)
        for hook in base.__dict__.values()
        if callable(hook) and getattr(hook, "__ffi_on_fields_resolved__", False) is True
    ]
    for hook in hooks:
        hook(info, own_fields)
    for f in own_fields:  # a field-resolution hook consumes the options meant for it
        if f.extra_kwargs:
            raise TypeError(
                f"{cls.__name__}.{f.name}: unrecognized field options: "
                + ", ".join(sorted(f.extra_kwargs))
            )
    if init_props:
        cls.__ffi_init_property_funcs__ = init_props  # type: ignore[attr-defined]
    info._register_fields(own_fields, _STRUCTURE_KIND_MAP[params["structural_eq"]])
    attr_names, inherited = _type_attr_options(cls)
    localns = dict(_PY_CLASSES_BY_MODULE.get(cls.__module__, {}))
    localns[cls.__name__] = cls
    methods: list[tuple[Any, ...]] = [
        (*m, None if m[0] in attr_names else _method_metadata(cls, m[1], m[2], localns))
        for m in _collect_py_methods(cls) or []
    ]
    methods.extend(_inherited_type_attrs(cls, info, inherited))
    info._register_py_methods(methods, type_attr_names=attr_names)
    _registration.add_class_attrs(cls, info, type_attr_names=attr_names)
    dunders = {k: params[k] for k in ("init", "repr", "eq", "order", "unsafe_hash", "match_args")}
    _install_dataclass_dunders(cls, py_class_mode=True, **dunders)


# ---- deferred registration ---------------------------------------------------------
# A class whose annotations name a type not defined yet (a self, mutual or forward
# reference) gets its type at once, so that the other classes can name it, and its fields
# once every name resolves (as the official binding does): after each later @py_class
# registers its fields, or at its first instantiation, which raises TypeError naming what
# still does not resolve. A subclass of such a class waits for it.
_PENDING: list[type] = []
# Finishing a class registers it with the runtime once: one thread at a time decides.
_PENDING_LOCK = threading.RLock()


def _own_info(cls: type) -> TypeInfo:
    info: TypeInfo = cls.__dict__["__tvm_ffi_type_info__"]
    return info


def _waits_for(cls: type) -> list[str]:
    """What keeps pending ``cls`` from registering its fields (a diagnostic): its
    annotations that do not evaluate, or those of a pending ancestor."""
    parent = _parent_info(cls)
    base = parent.type_cls
    if parent.fields is None and base is not None:
        return [f"{base.__name__} (base class): {', '.join(_waits_for(base))}"]
    globalns, localns, _ = _namespaces(cls)
    return _missing_names(cls, globalns, localns, every_error=True)


def _try_finish(cls: type) -> bool:
    """Register the fields of pending ``cls`` (its pending ancestors' first) when all its
    names resolve; ``False`` when one still does not. Errors of the registration itself
    propagate, with ``cls`` still pending."""
    info = _own_info(cls)
    if info.fields is not None:
        return True
    parent = _parent_info(cls)
    base = parent.type_cls
    if parent.fields is None and (base is None or base not in _PENDING or not _try_finish(base)):
        return False
    if _namespaces(cls)[2]:
        return False
    placeholder = cls.__dict__.get("__init__")
    user_init = cls.__dict__.get("__ffi_py_class_user_init__")
    # The real __init__ (generated, or the body's own) replaces the placeholder in one
    # assignment: a thread constructing meanwhile meets one or the other, never the
    # base class's __init__ (which made objects without this type's fields).
    _finish(cls, info)
    if cls.__dict__.get("__init__") is placeholder:  # nothing was installed over it
        if user_init is None:
            del cls.__init__  # type: ignore[misc]
        else:
            cls.__init__ = user_init  # type: ignore[misc]
    if user_init is not None:
        del cls.__ffi_py_class_user_init__  # type: ignore[attr-defined]
    _PENDING.remove(cls)
    return True


def _flush_pending() -> None:
    """Finish every pending class whose names resolve now, until none does. One whose
    registration fails stays pending: its instantiation raises the error."""
    progress = True
    while progress:
        progress = False
        for cls in list(_PENDING):
            if cls not in _PENDING:
                continue  # finished meanwhile, as another one's base class
            try:
                progress |= _try_finish(cls)
            except Exception:
                continue  # the error is raised again by the class's instantiation


def _unregister(cls: type, info: TypeInfo) -> None:
    """Undo a decoration: the class is no longer pending and its type key can be decorated
    again."""
    if cls in _PENDING:
        _PENDING.remove(cls)
    _TABLES.pop(cls, None)
    _registration.unregister_py_class(cls, info)
    module_classes = _PY_CLASSES_BY_MODULE.get(cls.__module__, {})
    if module_classes.get(cls.__name__) is cls:
        del module_classes[cls.__name__]


# Classes whose deferred registration failed at instantiation (their key was freed).
_FAILED: weakref.WeakSet[type] = weakref.WeakSet()


def _finish_at_instantiation(cls: type) -> None:
    """Register pending ``cls`` now, or raise ``TypeError`` saying what still does not
    resolve (the decoration is then undone, freeing the type key)."""
    with _PENDING_LOCK:
        if cls in _FAILED:
            raise TypeError(f"Cannot instantiate {cls.__name__}: its registration failed before")
        if cls not in _PENDING:
            return
        _flush_pending()
        if cls not in _PENDING:
            return
        info = _own_info(cls)
        try:
            finished = _try_finish(cls)
        except Exception as err:
            _unregister(cls, info)
            _FAILED.add(cls)
            raise TypeError(f"Cannot instantiate {cls.__name__}: {err}") from err
        if not finished:
            waiting = "; ".join(_waits_for(cls))
            _unregister(cls, info)
            _FAILED.add(cls)
            raise TypeError(
                f"Cannot instantiate {cls.__name__}: its annotations do not resolve: {waiting}"
            )


def _defer(cls: type, info: TypeInfo) -> None:
    """Leave ``cls`` pending: an ``__init__`` placeholder finishes it at the first
    instantiation (the class body's own ``__init__`` is kept aside until then)."""
    del info
    _PENDING.append(cls)
    own_init = cls.__dict__.get("__init__")
    if own_init is not None:
        cls.__ffi_py_class_user_init__ = own_init  # type: ignore[attr-defined]

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        _finish_at_instantiation(cls)
        cls.__init__(self, *args, **kwargs)  # type: ignore[misc]

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__ffi_deferred_placeholder__ = True  # type: ignore[attr-defined]
    cls.__init__ = __init__  # type: ignore[misc]


def _marked(cls: _T) -> _T:
    cls.__ffi_is_dataclass__ = True  # type: ignore[attr-defined]
    return cls


class _DataclassOptions(TypedDict, total=False):
    """The :func:`dataclasses.dataclass` options both decorators take."""

    frozen: bool
    init: bool
    repr: bool
    eq: bool
    order: bool
    unsafe_hash: bool
    match_args: bool


class _PyClassOptions(_DataclassOptions, total=False):
    """``@py_class``'s options: the dataclass ones and its own."""

    type_key: str | None
    kw_only: bool
    structural_eq: str | None
    slots: bool


_DATACLASS_DEFAULTS: dict[str, Any] = {"frozen": False, **_DUNDER_OPTIONS}
_PY_CLASS_DEFAULTS: dict[str, Any] = dict(
    _DATACLASS_DEFAULTS, type_key=None, kw_only=False, structural_eq="tree", slots=True
)


def _with_defaults(decorator: str, given: Mapping[str, Any], defaults: dict[str, Any]) -> Any:
    """The decorator's options: ``defaults`` overridden by the ``given`` keywords."""
    for name in given.keys() - defaults.keys():
        raise TypeError(f"{decorator}() got an unexpected keyword argument {name!r}")
    return {**defaults, **given}


def _check_options(params: dict[str, Any]) -> None:
    """``ValueError`` for option values no class can take (checked when the decorator is
    made, before any class is seen)."""
    if params["order"] and not params["eq"]:
        raise ValueError("order=True requires eq=True")
    if params["structural_eq"] not in _STRUCTURE_KIND_MAP:
        raise ValueError(
            f"structural_eq must be one of {sorted(_STRUCTURE_KIND_MAP, key=str)}, "
            f"got {params['structural_eq']!r}"
        )


def _decorate(cls: _T, params: dict[str, Any]) -> _T:
    """Register ``cls`` as a new FFI type with ``params`` (the decorator's options)."""
    if not isinstance(cls, type):
        raise TypeError(f"@py_class decorates a class, got {type(cls).__name__}")
    _check_options(params)
    parent = _parent_info(cls)
    _marker_types(cls)
    key = params["type_key"] or f"{cls.__module__}.{cls.__qualname__}"
    info = _registration.register_py_class(parent, key, cls)
    info._decorator_args = params
    _PY_CLASSES_BY_MODULE.setdefault(cls.__module__, {})[cls.__name__] = cls
    try:
        with _PENDING_LOCK:
            ready = parent.fields is not None and not _namespaces(cls)[2]
            if ready:
                _finish(cls, info)
            else:
                _defer(cls, info)
            _flush_pending()
    except BaseException:
        _unregister(cls, info)
        raise
    return _marked(cls)


@dataclass_transform(field_specifiers=(field, Field, init_property))
def py_class(type_key: Any = None, /, **options: Unpack[_PyClassOptions]) -> Any:
    """Class decorator: a new FFI object type whose Python class is the decorated one, with
    dataclass semantics (see the module docstring).

    ``@py_class``, ``@py_class("my.Key")`` or ``@py_class(type_key=..., eq=True, ...)``;
    the type key defaults to ``"<module>.<qualname>"``. Options: ``init``, ``repr``,
    ``eq``, ``order``, ``unsafe_hash``, ``match_args``, ``frozen``, ``kw_only`` (those of
    :func:`dataclasses.dataclass`), ``structural_eq`` (the type's structural equality
    kind: ``"tree"``, ``"var"``, ``"dag"``, ``"const-tree"``, ``"singleton"`` or
    ``None``) and ``slots``.
    """
    if isinstance(type_key, type):
        return _decorate(type_key, _with_defaults("py_class", options, _PY_CLASS_DEFAULTS))
    if type_key is not None and not isinstance(type_key, str):
        raise TypeError(f"type_key must be a str, got {type(type_key).__name__}")
    params = _with_defaults("py_class", options, _PY_CLASS_DEFAULTS)
    _check_options(params)
    if type_key is not None:
        params["type_key"] = type_key

    def decorator(cls: _T) -> _T:
        return _decorate(cls, dict(params))

    return decorator


py_class.__dataclass_transform__["kwargs"]["converter"] = _field_converter  # type: ignore[attr-defined]
