"""``tvmffi.core``: the official binding's ``tvm_ffi.core`` names, answered by tvmffi.

The official binding keeps its Cython-level classes and helpers in
``tvm_ffi.core``; code written against it imports them from there
(``tvm_ffi.core.Error``, ``tvm_ffi.core.TypeSchema``, ...). Each name here is
tvmffi's implementation of it, re-exported; blocks are grouped by area.
"""

from __future__ import annotations

# ---- functions, registry, errors, conversion (w13c) -------------------------
from ._core import _OPAQUE_PTR_HANDLERS, Function, Object
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

__all__ = [
    "MISSING",
    "_OPAQUE_PTR_HANDLERS",
    "Bytes",
    "DataType",
    "Device",
    "Error",
    "Function",
    "Object",
    "ObjectConvertible",
    "OpaquePyObject",
    "String",
    "TypeInfo",
    "TypeSchema",
    "_lookup_type_attr",
    "_type_cls_to_type_info",
]
