"""``tvm_ffi._dtype``: the module the official binding defines its dtype class in.

Clients import from it directly (TVM: ``from tvm_ffi._dtype import dtype as DataType,
DataTypeCode``); every name is tvmffi's own, from :mod:`tvmffi.dtype`.
"""

from __future__ import annotations

from .dtype import *  # noqa: F403
from .dtype import (  # noqa: F401
    DataType,
    DataTypeCode,
    bfloat16,
    bool,
    dtype,
    float4_e2m1fn,
    float4_e2m1fn_x2,
    float4_e2m1fnx2,
    float6_e2m3fn,
    float6_e3m2fn,
    float8_e3m4,
    float8_e4m3,
    float8_e4m3b11fnuz,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float8_e8m0fnu,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
