"""``tvm_ffi._dtype``: the module the official binding defines its dtype class in.

Clients import from it directly (TVM: ``from tvm_ffi._dtype import dtype as DataType,
DataTypeCode``); every name is :mod:`tvmffi.dtype`'s own (the dtype literals too).
"""

from __future__ import annotations

import sys
from typing import Any

from .dtype import DataType, DataTypeCode, dtype

__all__ = ["DataType", "DataTypeCode", "dtype"]


def __getattr__(name: str) -> Any:
    """The other names of :mod:`tvmffi.dtype` (``float32``, ``bool``, ...)."""
    return getattr(sys.modules[__package__ + ".dtype"], name)


def __dir__() -> list[str]:
    """This module's names and the dtype literals :func:`__getattr__` answers."""
    names = vars(sys.modules[__package__ + ".dtype"])
    literals = {n for n, v in names.items() if isinstance(v, dtype)}
    return sorted(set(globals()) | literals)
