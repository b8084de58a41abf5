"""Data types: ``dtype`` (a ``str`` subclass) from strings, NumPy, ml_dtypes and torch dtypes.

``dtype("float32")`` is the string ``"float32"`` that also carries its DLPack
``(type_code, bits, lanes)``; it can be passed wherever a dtype string is
accepted (``numpy.zeros(3, dtype=tvmffi.float32)``). ``DataType`` is tvmffi's
earlier name of the same class.
"""

from __future__ import annotations

import builtins
import sys
from enum import IntEnum
from typing import Any

from . import _core
from ._core import dtype

DataType = dtype

# The dtype literals below are public but left out of __all__ (as officially), so
# `from tvmffi.dtype import *` never shadows the builtin `bool`.
__all__ = ["DataType", "DataTypeCode", "dtype"]


class DataTypeCode(IntEnum):
    """DLPack's data type codes (``dtype.type_code``), under the official names."""

    INT = 0
    UINT = 1
    FLOAT = 2
    HANDLE = 3
    BFLOAT = 4
    BOOL = 6
    Float8E3M4 = 7
    Float8E4M3 = 8
    Float8E4M3B11FNUZ = 9
    Float8E4M3FN = 10
    Float8E4M3FNUZ = 11
    Float8E5M2 = 12
    Float8E5M2FNUZ = 13
    Float8E8M0FNU = 14
    Float6E2M3FN = 15
    Float6E3M2FN = 16
    Float4E2M1FN = 17

_PY_SCALARS: dict[type, str] = {
    builtins.bool: "bool",
    int: "int64",
    float: "float64",
    complex: "complex128",
}


# torch dtypes whose names differ from the runtime's dtype strings.
_TORCH_RENAMES: dict[str, str] = {"float4_e2m1fn_x2": "float4_e2m1fnx2"}
# torch dtypes with no DLPack equivalent (quantized, opaque bit containers).
_TORCH_UNSUPPORTED_PREFIXES = ("qint", "quint", "bits")


def _from_torch(value: Any) -> str | None:
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(value, torch.dtype):
        return None
    name = str(value).removeprefix("torch.")
    if name.startswith(_TORCH_UNSUPPORTED_PREFIXES):
        raise TypeError(f"{value} has no DLPack data type")
    return _TORCH_RENAMES.get(name, name)


def _from_numpy(value: Any) -> str | None:
    np = sys.modules.get("numpy")
    if np is None:
        return None
    # Only dtypes and scalar types: np.dtype() also accepts None, dicts, lists.
    if isinstance(value, np.dtype):
        dt = value
    elif isinstance(value, type) and issubclass(value, np.generic):
        dt = np.dtype(value)
    else:
        return None
    known = dtype._NUMPY_DTYPE_TO_STR.get(dt)  # what a client added wins
    if known is not None:
        return str(known)
    if dt.kind == "b":
        return "bool"
    if dt.kind in "iu" or (dt.kind == "f" and dt.itemsize <= 8) or dt.kind == "c":
        return str(dt.name)
    # ml_dtypes registers extension types (bfloat16, float8_*) under their names.
    if dt.name in _ML_DTYPE_NAMES:
        return str(dt.name)
    raise TypeError(f"NumPy dtype {dt!r} has no DLPack data type")


_ML_DTYPE_NAMES = frozenset(
    {
        "bfloat16",
        "float8_e3m4",
        "float8_e4m3",
        "float8_e4m3b11fnuz",
        "float8_e4m3fn",
        "float8_e4m3fnuz",
        "float8_e5m2",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "float6_e2m3fn",
        "float6_e3m2fn",
        "float4_e2m1fn",
        "int2",
        "int4",
        "uint2",
        "uint4",
    }
)


def _dtype_string(value: Any) -> str:
    """Map a dtype-like object to the runtime's dtype string (called from C)."""
    name = _from_torch(value)
    if name is None:
        name = _from_numpy(value)
    if name is None and isinstance(value, type):
        name = _PY_SCALARS.get(value)
    if name is None:
        # As the official binding does: any other object by its str().
        name = str(value)
    return name


_core.set_dtype_hook(_dtype_string)


class _NumpyDtypeTable:
    """``dtype._NUMPY_DTYPE_TO_STR``: ``{numpy.dtype: dtype string}``, as the official class has.

    The table NumPy dtypes are converted by first (a client may add to it or replace
    it). Filled on first use, so importing tvmffi does not import NumPy: the NumPy
    dtypes with a DLPack equivalent, and ml_dtypes' bfloat16/float8/float4 when
    installed.
    """

    def __init__(self) -> None:
        self._table: dict[Any, str] | None = None

    def __get__(self, obj: object, owner: type | None = None) -> dict[Any, str]:
        if self._table is None:
            self._table = _numpy_dtype_table()
        return self._table


def _numpy_dtype_table() -> dict[Any, str]:
    table: dict[Any, str] = {}
    try:
        import numpy as np
    except ImportError:
        return table
    for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float16", "float32", "float64"):  # fmt: skip
        table[np.dtype(name)] = name
    try:
        import ml_dtypes
    except ImportError:
        return table
    for name in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn"):
        if hasattr(ml_dtypes, name):
            table[np.dtype(getattr(ml_dtypes, name))] = name
    return table


# The dtype class is open to class attributes (csrc/dtype.c), as the official Python class is.
dtype._NUMPY_DTYPE_TO_STR = _NumpyDtypeTable()  # type: ignore[assignment]

# The official binding's dtype literals (``bool`` shadows the builtin here, as there).
bool = dtype("bool")
int8, int16, int32, int64 = (dtype(f"int{bits}") for bits in (8, 16, 32, 64))
uint8, uint16, uint32, uint64 = (dtype(f"uint{bits}") for bits in (8, 16, 32, 64))
float16, float32, float64, bfloat16 = map(dtype, ("float16", "float32", "float64", "bfloat16"))
float8_e3m4, float8_e4m3, float8_e4m3b11fnuz, float8_e4m3fn = map(
    dtype, ("float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn")
)
float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu = map(
    dtype, ("float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu")
)
float6_e2m3fn, float6_e3m2fn, float4_e2m1fn, float4_e2m1fnx2 = map(
    dtype, ("float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn", "float4_e2m1fnx2")
)
float4_e2m1fn_x2 = float4_e2m1fnx2  # torch's spelling
