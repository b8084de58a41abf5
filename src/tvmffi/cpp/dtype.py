"""``to_cpp_dtype``: the C++ type spelling of a dtype, for generating kernel source."""

from __future__ import annotations

import functools
import sys
from typing import Any

__all__ = ["to_cpp_dtype"]

# Fixed-width integers are <stdint.h>'s ``intN_t``; the rest are C++ builtins.
_CPU = {f"{sign}int{bits}": f"{sign}int{bits}_t" for sign in ("", "u") for bits in (8, 16, 32, 64)}
_CPU.update(float32="float", float64="double", bool="bool")
# Types from cuda_fp16.h, cuda_bf16.h, cuda_fp8.h and cuda_fp4.h.
_CUDA = {
    "float16": "__half",
    "bfloat16": "__nv_bfloat16",
    "float8_e4m3fn": "__nv_fp8_e4m3",
    "float8_e5m2": "__nv_fp8_e5m2",
    "float8_e8m0fnu": "__nv_fp8_e8m0",
    "float4_e2m1": "__nv_fp4_e2m1",
    "float4_e2m1fn_x2": "__nv_fp4x2_e2m1",
}
_ROCM = {
    "float16": "__half",
    "bfloat16": "__hip_bfloat16",
    "float8_e4m3fn": "__hip_fp8_e4m3",
    "float8_e4m3fnuz": "__hip_fp8_e4m3_fnuz",
    "float8_e5m2": "__hip_fp8_e5m2",
    "float8_e5m2fnuz": "__hip_fp8_e5m2_fnuz",
    "float4_e2m1": "__hip_fp4_e2m1",
    "float4_e2m1fn_x2": "__hip_fp4x2_e2m1",
}


@functools.cache
def _gpu_backend() -> str:
    """ "cuda" or "rocm" when torch sees a GPU of that kind, else "cpu"."""
    try:
        import torch
    except ImportError:
        return "cpu"
    if not torch.cuda.is_available():
        return "cpu"
    version = sys.modules.get("torch.version")
    if getattr(version, "hip", None):
        return "rocm"
    return "cuda" if getattr(version, "cuda", None) else "cpu"


def to_cpp_dtype(dtype_str: str | Any) -> str:
    """The C++ type for a dtype name (``"float32"`` -> ``"float"``) or a ``torch.dtype``.

    Half, bfloat16, float8 and float4 names map to the CUDA (or ROCm) types when
    torch sees a GPU. Raises ``ValueError`` for a dtype without a C++ type here.
    """
    name = dtype_str if isinstance(dtype_str, str) else str(dtype_str)
    name = name.removeprefix("torch.")
    found = _CPU.get(name)
    if found is not None:
        return found
    backend = _gpu_backend()
    table = _CUDA if backend == "cuda" else _ROCM if backend == "rocm" else {}
    found = table.get(name)
    if found is not None:
        return found
    raise ValueError(f"Unsupported dtype string: {name} for backend = {backend!r}")


# The tables under the official module's names (clients read them to generate source).
CPU_DTYPE_MAP = _CPU
CUDA_DTYPE_MAP = _CUDA
ROCM_DTYPE_MAP = _ROCM
