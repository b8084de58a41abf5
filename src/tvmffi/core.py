"""``tvmffi.core``: the official binding's ``tvm_ffi.core`` names, answered by tvmffi.

The official binding keeps its Cython-level classes and helpers in
``tvm_ffi.core``; code written against it imports them from there
(``tvm_ffi.core.Error``, ``tvm_ffi.core.TypeSchema``, ...). Each name here is
tvmffi's implementation of it, re-exported; blocks are grouped by area.
"""

from __future__ import annotations

from typing import Any

# ---- functions, registry, errors, conversion (w13c) -------------------------
from . import _core
from ._core import _OPAQUE_PTR_HANDLERS, CAny, Function, Object, _to_py_class_value
from .dtype import dtype as DataType
from .error import ErrorObject as Error
from .object import TypeInfo
from .type_schema import TypeSchema

# isort: split
# ---- objects, strings, containers (w13b) ---------------------------------------
from ._core import Device
from ._strings import Bytes, String
from .object import (
    MISSING,
    ObjectConvertible,
    OpaquePyObject,
    _lookup_type_attr,  # official signature (type_index, attr_key, ancestor=False)
    _type_cls_to_type_info,
)

# isort: split
# ---- dataclasses: reflection model and Python-defined types (dc) ---------------------
from ._core import FieldProperty as FFIProperty
from .dataclasses._registration import register_py_class as _register_py_class
from .object import _REGISTERED as _REGISTERED_CLASSES
from .object import FieldInfo as TypeField
from .object import MethodInfo as TypeMethod
from .object import _kwargs_marker, _register_class
from .object import _repr_hook as object_repr
from .object import get_type_info as _get_type_info

# isort: split
# ---- devices, dtypes, tensors, streams (w13a) -------------------------------------
from .device import DLDeviceType
from .tensor import Tensor, from_dlpack

#: The official core's base class of every FFI object class (``tvm_ffi.core.CObject``).
CObject = Object


def _object_type_key_to_index(type_key: str) -> int | None:
    """Type index of registered object type ``type_key``; ``None`` when not registered."""
    index: int | None = _core._type_key_to_index(type_key)
    return index


def _lookup_or_register_type_info_from_type_key(type_key: str) -> TypeInfo:
    """The :class:`TypeInfo` of registered type ``type_key``; ``ValueError`` when unknown."""
    return _get_type_info(type_key)


KWARGS = _kwargs_marker()


def _register_type_attr(type_index: int, attr_key: str, value: Any) -> None:
    """Set type attribute ``attr_key`` of type ``type_index`` (``TVMFFITypeRegisterAttr``)."""
    _core._py_class_register_attr(type_index, attr_key, value)


"""The runtime's marker between positional and keyword arguments (``ffi.GetKwargsObject``)."""


def _env_get_current_stream(device_type: int, device_id: int) -> int:
    """Return the environment stream of device ``(device_type, device_id)`` (0 when none)."""
    return int(_core.current_stream(device_type, device_id))


def _set_class_device(cls: type) -> None:
    """Devices the binding hands out are instances of ``cls`` (a :class:`Device` subclass).

    The official hook, as TVM calls it with ``tvm.runtime.Device``: call results,
    fields, container items, ``Tensor.device`` and :func:`tvmffi.device` give ``cls``.
    """
    _core._set_class_device(cls)


def _set_class_tensor(cls: type) -> None:
    """Tensors the binding hands out are instances of ``cls`` (a :class:`Tensor` subclass).

    The official hook, as TVM calls it with ``tvm.runtime.Tensor``: the class is
    registered for ``ffi.Tensor``, as :func:`register_object` would.
    """
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"_set_class_tensor: {cls!r} is not a subclass of tvmffi.Tensor")
    _register_class(cls, "ffi.Tensor", install=False, init=False)


def __getattr__(name: str) -> Any:
    """``_CLASS_DEVICE`` / ``_CLASS_TENSOR``: the classes the two hooks above set."""
    if name == "_CLASS_DEVICE":
        return _core._device_class()
    if name == "_CLASS_TENSOR":
        index = _core._type_key_to_index("ffi.Tensor")
        return _REGISTERED_CLASSES.get(index, Tensor) if index is not None else Tensor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "KWARGS",
    "MISSING",
    "_OPAQUE_PTR_HANDLERS",
    "Bytes",
    "CAny",
    "CObject",
    "DLDeviceType",
    "DataType",
    "Device",
    "Error",
    "FFIProperty",
    "Function",
    "Object",
    "ObjectConvertible",
    "OpaquePyObject",
    "String",
    "Tensor",
    "TypeField",
    "TypeInfo",
    "TypeMethod",
    "TypeSchema",
    "_env_get_current_stream",
    "_lookup_or_register_type_info_from_type_key",
    "_lookup_type_attr",
    "_object_type_key_to_index",
    "_register_py_class",
    "_register_type_attr",
    "_set_class_device",
    "_set_class_tensor",
    "_to_py_class_value",
    "_type_cls_to_type_info",
    "from_dlpack",
    "object_repr",
]
