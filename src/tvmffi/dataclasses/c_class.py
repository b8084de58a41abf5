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
from .._dunder import _find_ffi_init, _install_dataclass_dunders, _payload_enum_normalizers
from ..object import TypeInfo, register_object
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


def _attach_field_objects(cls: type, type_info: TypeInfo, *, frozen: bool = False) -> None:
    """Give each own reflected field of ``type_info`` a :class:`Field` (``dataclass_field``),
    built from its reflection flags and the class annotation; ``frozen`` freezes them all."""
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve here: fields go untyped
        hints = {}
    for reflected in type_info.fields or ():
        reflected.frozen = reflected.frozen or frozen
        options = {opt: getattr(reflected, src) for opt, src in _FIELD_OPTION_SOURCES.items()}
        made = Field(reflected.name, reflected.ty, frozen=reflected.frozen, **options)
        made.type = hints.get(reflected.name)
        reflected.dataclass_field = made


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


@dataclass_transform(eq_default=False, order_default=False, field_specifiers=(Field, field))
def c_class(type_key: str, **options: Unpack[_DataclassOptions]) -> Callable[[_T], _T]:
    """Register the C++ type ``type_key`` for the decorated class, with dataclass dunders.

    ``init``: ``__init__`` from the reflected fields (their init/kw_only/default
    traits); ``repr``: the runtime printer; ``eq``/``order``/``unsafe_hash``:
    recursive structural comparison and hashing; ``frozen``: the type's own fields
    refuse assignment (``type(obj).name.set(obj, v)`` still writes);
    ``match_args``: ``__match_args__`` of the positional init fields. Dunders the
    class body defines are kept.
    """
    if not isinstance(type_key, str):
        raise TypeError(f"c_class expects a type key string, got {type(type_key).__name__}")

    dunders = _with_defaults("c_class", options, _DATACLASS_DEFAULTS)
    frozen = dunders.pop("frozen")

    def decorator(cls: _T) -> _T:
        for name, value in list(cls.__dict__.items()):
            if isinstance(value, Field):
                delattr(cls, name)
        cls = register_object(type_key, init=False)(cls)
        type_info: TypeInfo = cls.__dict__["__tvm_ffi_type_info__"]
        _warn_missing_field_annotations(cls, type_info, stacklevel=2)
        _attach_field_objects(cls, type_info, frozen=frozen)
        if frozen:  # the descriptors register_object installed still allow assignment
            for tf in type_info.fields:
                own = cls.__dict__.get(tf.name)
                if own is None or isinstance(own, _core.FieldProperty):
                    setattr(cls, tf.name, tf.as_property(cls))
        enum_fields = _payload_enum_normalizers(type_info, own_only=True, init_only=False)
        for name, normalize in enum_fields.items():
            own = cls.__dict__.get(name)
            if isinstance(own, _core.FieldProperty):
                setattr(cls, name, _PayloadEnumProperty(own, normalize))
        add_type_attr_class_attrs(cls, type_info, _FFI_TYPE_ATTR_NAMES)
        ffi_init = _find_ffi_init(type_info)
        if ffi_init is not None and "__ffi_init__" not in cls.__dict__:
            install_ffi_init_attr(cls, type_info, ffi_init)
        _install_dataclass_dunders(cls, **dunders)
        cls.__ffi_is_dataclass__ = True  # type: ignore[attr-defined]
        return cls

    return decorator


c_class.__dataclass_transform__["kwargs"]["converter"] = _field_converter  # type: ignore[attr-defined]
