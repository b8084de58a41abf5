"""``tvmffi.core``: the official binding's ``tvm_ffi.core`` names, answered by tvmffi.

The official binding keeps its Cython-level classes and helpers in
``tvm_ffi.core``; code written against it imports them from there
(``tvm_ffi.core.Error``, ``tvm_ffi.core.TypeSchema``, ...). Each name here is
tvmffi's implementation of it, re-exported; blocks are grouped by area.
"""

from __future__ import annotations

# ---- functions, registry, errors, conversion (w13c) -------------------------
from ._core import _OPAQUE_PTR_HANDLERS, Function, Object, _lookup_type_attr
from .dtype import dtype as DataType
from .error import ErrorObject as Error
from .object import TypeInfo
from .type_schema import TypeSchema

__all__ = [
    "_OPAQUE_PTR_HANDLERS",
    "DataType",
    "Error",
    "Function",
    "Object",
    "TypeInfo",
    "TypeSchema",
    "_lookup_type_attr",
]
