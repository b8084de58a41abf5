"""``to_cpp_dtype``: the C++ type spelling of a dtype, for generating kernel source."""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["to_cpp_dtype"]

# Host types: <stdint.h>'s fixed-width integers and the C++ builtins.
_CPU = {f"{sign}int{bits}": f"{sign}int{bits}_t" for sign in ("", "u") for bits in (8, 16, 32, 64)}
_CPU.update(float32="float", float64="double", bool="bool")

# Device-only types, one row per dtype: (CUDA spelling, ROCm spelling), None where that
# toolkit has none. CUDA's come from cuda_fp16.h / cuda_bf16.h / cuda_fp8.h /
# cuda_fp4.h, ROCm's from the matching hip_*.h headers.
_DEVICE_TYPES: dict[str, tuple[str | None, str | None]] = {
    "float16": ("__half", "__half"),
    "bfloat16": ("__nv_bfloat16", "__hip_bfloat16"),
    "float8_e4m3fn": ("__nv_fp8_e4m3", "__hip_fp8_e4m3"),
    "float8_e5m2": ("__nv_fp8_e5m2", "__hip_fp8_e5m2"),
    "float8_e4m3fnuz": (None, "__hip_fp8_e4m3_fnuz"),
    "float8_e5m2fnuz": (None, "__hip_fp8_e5m2_fnuz"),
    "float8_e8m0fnu": ("__nv_fp8_e8m0", None),
    "float4_e2m1": ("__nv_fp4_e2m1", "__hip_fp4_e2m1"),
    "float4_e2m1fn_x2": ("__nv_fp4x2_e2m1", "__hip_fp4x2_e2m1"),
}


def _column(which: int) -> dict[str, str]:
    return {dtype: cxx for dtype, row in _DEVICE_TYPES.items() if (cxx := row[which]) is not None}


# The tables under the official module's names (clients read them to generate source).
CPU_DTYPE_MAP = _CPU
CUDA_DTYPE_MAP = _column(0)
ROCM_DTYPE_MAP = _column(1)


@functools.cache
def _device_map() -> tuple[str, dict[str, str]]:
    """The device table of the GPU torch sees: (toolkit name, table), empty without one."""
    try:
        import torch  # optional: only a GPU build of torch tells which toolkit compiles
    except ImportError:
        return "no GPU toolkit (torch is not installed)", {}
    if not torch.cuda.is_available():
        return "no GPU available", {}
    if getattr(torch.version, "hip", None):
        return "ROCm", ROCM_DTYPE_MAP
    return "CUDA", CUDA_DTYPE_MAP


def to_cpp_dtype(dtype_str: str | Any) -> str:
    """The C++ type for a dtype: ``"float32"`` -> ``"float"``, ``torch.int64`` -> ``"int64_t"``.

    ``dtype_str`` is a dtype name, or anything whose ``str`` is one (a ``tvmffi.dtype``,
    a NumPy dtype, a ``torch.dtype`` such as ``torch.float16``). Half, bfloat16, fp8 and
    fp4 types are spelled for the GPU toolkit in use (CUDA or ROCm, as torch reports);
    an unknown dtype, or a device type with no GPU, raises ``ValueError``.
    """
    name = str(dtype_str).removeprefix("torch.")
    host = _CPU.get(name)
    if host is not None:
        return host
    toolkit, table = _device_map()
    spelled = table.get(name)
    if spelled is None:
        raise ValueError(f"Unsupported dtype {name!r} for C++ code ({toolkit})")
    return spelled
