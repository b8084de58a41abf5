"""``@c_class(type_key)``: a dataclass view of a C++-defined FFI type.

It registers the class for the type (``register_object``), gives every own
reflected field a :class:`Field` (``fields()`` returns them), publishes the
type's hook attributes (``__ffi_repr__``, ...) on the class and installs the
dataclass dunders derived from the reflection data.
"""

from __future__ import annotations

import inspect
import typing
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from typing_extensions import Unpack, dataclass_transform

from .. import _core
from .._dunder import _install_dataclass_dunders
from ..object import MISSING, TypeInfo, _lookup_type_attr, register_object
from ..type_schema import TypeSchema
from ._registration import add_type_attr_class_attrs, install_ffi_init_attr
from .field import Field, _field_converter, field
from .py_class import _DATACLASS_DEFAULTS, _FFI_TYPE_ATTR_NAMES, _DataclassOptions, _with_defaults

__all__ = ["c_class"]

_T = TypeVar("_T", bound=type)


# Field option <- the reflected field's attribute that carries it.
_FIELD_OPTION_SOURCES = {
    "default": "c_default",
    "default_factory": "c_default_factory",
    "init": "c_init",
    "repr": "c_repr",
    "hash": "c_hash",
    "compare": "c_compare",
    "kw_only": "c_kw_only",
    "structural_eq": "c_structural_eq",
    "doc": "doc",
}


def _field_of(tf: Any, annotation: Any, frozen: bool) -> Field:
    """The :class:`Field` describing reflected field ``tf`` (its C++ options)."""
    options = {option: getattr(tf, source) for option, source in _FIELD_OPTION_SOURCES.items()}
    if options["default_factory"] is None:
        options["default_factory"] = MISSING
    if options["default"] is not MISSING and options["default_factory"] is not MISSING:
        options["default"] = MISSING  # the factory makes the value
    made = Field(name=tf.name, type=annotation, _ty_schema=tf.ty, **options)
    made.frozen = frozen or bool(tf.frozen)
    return made


def _own_fields_as_dataclass_fields(cls: type, info: TypeInfo, frozen: bool) -> None:
    """Give each own reflected field its :class:`Field` (``fields()`` returns them); with
    ``frozen`` the fields refuse plain assignment."""
    annotations = _resolved_annotations(cls)
    for tf in info.fields or ():
        if frozen:
            tf.frozen = True
            if not isinstance(cls.__dict__.get(tf.name), _PayloadEnumProperty):
                setattr(cls, tf.name, tf.as_property(cls))
        tf.dataclass_field = _field_of(tf, annotations.get(tf.name), frozen)


def _resolved_annotations(cls: type) -> dict[str, Any]:
    """The class body's own annotations, string ones evaluated where they can be (a
    ``from __future__ import annotations`` module gives ``"int"``; fields() shows ``int``)."""
    own = inspect.get_annotations(cls)
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # an annotation naming what is not importable stays as written
        return own
    return {name: hints.get(name, value) for name, value in own.items()}


def _attach_field_objects(cls: type, type_info: TypeInfo) -> None:
    """Give every own reflected field of ``type_info`` a :class:`Field` read from ``cls``'s
    annotations (``Field.type`` None where ``cls`` does not annotate it); again replaces
    them. The official tests call it by this name."""
    for tf in type_info.fields or ():
        tf.dataclass_field = _field_of(tf, _resolved_annotations(cls).get(tf.name), False)


def _enum_field_converters(info: TypeInfo) -> dict[str, Callable[[Any], Any]]:
    """The converter of each own field typed as an FFI enum (a payload -> its variant)."""
    converters = {}
    for tf in info.fields or ():
        schema = tf.type_schema
        if isinstance(schema, dict):
            schema = TypeSchema.from_json_obj(schema)
        index = getattr(schema, "origin_type_index", -1) if schema is not None else -1
        if index is None or index < _core_static_object_end():
            continue
        if _lookup_type_attr(index, "__ffi_enum__", ancestor=True) is not None:
            converters[tf.name] = schema._converter()
    return converters


def _core_static_object_end() -> int:
    return 64


class _PayloadEnumProperty:
    """The descriptor of a C++ field typed as an IntEnum/StrEnum: a raw payload (``20``,
    ``"*"``) assigned to it becomes its variant first (the C++ setter takes only the
    variant object); otherwise the field's own descriptor does the work."""

    __slots__ = ("_field", "_normalize")

    def __init__(self, field_property: Any, normalize: Callable[[Any], Any]) -> None:
        self._field = field_property
        self._normalize = normalize

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        return self if obj is None else self._field.__get__(obj, owner)

    def __set__(self, obj: Any, value: Any) -> None:
        self._field.__set__(obj, self._normalize(value))

    def __delete__(self, obj: Any) -> None:
        self._field.__delete__(obj)

    def set(self, obj: Any, value: Any) -> None:
        """Write the field, also when frozen (``FFIProperty.set``)."""
        self._field.set(obj, self._normalize(value))

    @property
    def name(self) -> str:
        return str(self._field.name)

    @property
    def frozen(self) -> bool:
        return bool(self._field.frozen)

    @property
    def fget(self) -> Any:
        return self._field.fget

    @property
    def fset(self) -> Any:
        return None if self._field.fset is None else self.set


def _unannotated_fields(cls: type, type_info: TypeInfo) -> list[str]:
    """The type's own reflected fields that the class body does not annotate, sorted."""
    annotated = inspect.get_annotations(cls)
    return sorted(f.name for f in type_info.fields or () if f.name not in annotated)


def _warn_missing_field_annotations(cls: type, type_info: TypeInfo, *, stacklevel: int) -> None:
    """A ``UserWarning`` (at ``stacklevel`` from the caller) listing the type's reflected
    fields the class body leaves unannotated: IDEs and docs read the annotations."""
    missing = _unannotated_fields(cls, type_info)
    if not missing:
        return
    message = (
        f"@c_class({type_info.type_key!r}): class `{cls.__qualname__}` does not annotate "
        f"the following reflected field(s): {', '.join(missing)}. Add type annotations "
        "(e.g. `field_name: type`) to the class body for IDE support and documentation."
    )
    warnings.warn(message, UserWarning, stacklevel=stacklevel + 1)


@dataclass_transform(field_specifiers=(field, Field))
def c_class(type_key: str, **options: Unpack[_DataclassOptions]) -> Callable[[_T], _T]:
    """Class decorator: a dataclass view of the C++-defined FFI type ``type_key``.

    The class is registered for the type (``register_object``); its reflected fields
    get :class:`Field` objects, its constructor ``__ffi_init__`` and, with ``init``,
    ``__init__``; the ``options`` (those of :func:`dataclasses.dataclass`: ``repr``,
    ``eq``, ``order``, ``unsafe_hash``, ``match_args``, ``frozen``) choose the other
    dunders, which read the type's reflection data.
    """
    params = _with_defaults("c_class", options, _DATACLASS_DEFAULTS)
    if params["order"] and not params["eq"]:
        raise ValueError("order=True requires eq=True")

    def decorator(cls: _T) -> _T:
        register_object(type_key, init=False)(cls)
        info: TypeInfo = cls.__tvm_ffi_type_info__  # type: ignore[attr-defined]
        _warn_missing_field_annotations(cls, info, stacklevel=2)
        for name, convert in _enum_field_converters(info).items():
            setattr(cls, name, _PayloadEnumProperty(info_property(cls, info, name), convert))
        _own_fields_as_dataclass_fields(cls, info, bool(params["frozen"]))
        add_type_attr_class_attrs(cls, info, _FFI_TYPE_ATTR_NAMES)
        install_ffi_init_attr(cls, info)
        _install_dataclass_dunders(
            cls,
            init=bool(params["init"]),
            **{k: params[k] for k in ("repr", "eq", "order", "unsafe_hash", "match_args")},
        )
        cls.__ffi_is_dataclass__ = True  # type: ignore[attr-defined]
        return cls

    return decorator


def info_property(cls: type, info: TypeInfo, name: str) -> Any:
    """The field descriptor ``register_object`` put on ``cls`` for ``name`` (or a new one)."""
    found = cls.__dict__.get(name)
    if isinstance(found, _core.FieldProperty):
        return found
    return next(tf for tf in info.fields or () if tf.name == name).as_property(cls)


c_class.__dataclass_transform__["kwargs"]["converter"] = _field_converter  # type: ignore[attr-defined]
