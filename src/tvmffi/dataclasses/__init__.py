"""FFI dataclasses (the official ``tvm_ffi.dataclasses``): ``@c_class`` for C++-defined
types, ``@py_class`` for Python-defined ones, :func:`field`, :func:`fields`,
:func:`asdict`, :func:`astuple`, :func:`replace`, :func:`is_dataclass`, and
:func:`gen_abi_cpp` (C++ ABI-view headers of reflected types)."""

from .. import object as _object
from .._core import Object  # re-exported as officially (``dc.Object`` in class bases)
from ..object import MISSING
from ._registration import register_fields as _register_fields
from ._registration import register_methods as _register_methods
from .c_class import c_class
from .common import asdict, astuple, fields, is_dataclass, replace
from .enum import Enum, EnumAttrMap, EnumState, IntEnum, StrEnum, auto, entry
from .field import KW_ONLY, Field, field, init_property
from .gen_abi_cpp import gen_abi_cpp
from .py_class import method, py_class

# The object model (a layer down) registers a py_class's fields and methods through these.
_object._REGISTRATION.update(fields=_register_fields, methods=_register_methods)

__all__ = [
    "KW_ONLY",
    "MISSING",
    "Enum",
    "EnumAttrMap",
    "EnumState",
    "Field",
    "IntEnum",
    "Object",
    "StrEnum",
    "asdict",
    "astuple",
    "auto",
    "c_class",
    "entry",
    "field",
    "fields",
    "gen_abi_cpp",
    "init_property",
    "is_dataclass",
    "method",
    "py_class",
    "replace",
]
