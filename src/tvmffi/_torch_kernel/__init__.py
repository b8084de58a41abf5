"""The C++ eager kernel of ``tvmffi.torch.register_op`` operators (``kernel.cc``).

``kernel.cc`` is one boxed dispatcher kernel for every operator. It is built
once per torch installation and compiler by :mod:`tvmffi.cpp` (tvmffi's build
system: cached under ``$TVM_FFI_CACHE_DIR``, a later process only loads it) and
each operator registers it with a description of its signature, its *plan*: a
flat list of int64 that :func:`plan` writes and ``ParsePlan`` in ``kernel.cc``
reads. Where the library cannot be built (no C++ compiler, no torch headers)
:func:`register` returns ``None`` after one warning and the operator keeps the
Python kernel.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable
from typing import Any

import torch

from ..codegen._emit import _VAR_RANGES
from ..codegen._spec import DEVICES, DTYPES, Scalar, Signature, Tensor, Var
from ..function import Function
from ..module import load_module

__all__ = ["build_flags", "library", "plan", "register"]

# The layout of a plan; kernel.cc's kPlanVersion.
PLAN_VERSION = 1

_SCALAR_KINDS = {"int32": 0, "int64": 1, "float32": 2, "float64": 2, "bool": 3}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {}  # "library": the loaded Module, or None after a failed build


def build_flags() -> dict[str, list[str]]:
    """``tvmffi.cpp`` build arguments for C++ that uses torch's headers and libraries.

    The language level and C++ ABI torch was built with, its include directories,
    and its ``c10`` and ``torch_cpu`` libraries (with an rpath to them).
    """
    from torch.utils import cpp_extension

    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    libdir = cpp_extension.library_paths()[0]
    return {
        "extra_cflags": ["-std=c++20", f"-D_GLIBCXX_USE_CXX11_ABI={abi}"],
        "extra_include_paths": list(cpp_extension.include_paths()),
        "extra_ldflags": [f"-L{libdir}", "-lc10", "-ltorch_cpu", f"-Wl,-rpath,{libdir}"],
    }


def _build() -> Any:
    from .. import cpp

    source = os.path.join(os.path.dirname(__file__), "kernel.cc")
    name = "tvmffi_torch_kernel_" + torch.__version__.replace("+", "_")
    path = cpp.build(name, sources=[source], **build_flags())  # type: ignore[arg-type]
    return load_module(path)


def library() -> Any:
    """The loaded kernel library (built on the first call), or ``None`` where it cannot be built.

    The first failure warns once (``RuntimeWarning``) and is remembered for the process.
    """
    with _LOCK:
        if "library" not in _STATE:
            try:
                _STATE["library"] = _build()
            except Exception as err:  # a build or load failure of any kind: Python's kernel
                _STATE["library"] = None
                first = str(err).strip().splitlines()[0] if str(err).strip() else repr(err)
                warnings.warn(
                    "tvmffi.torch: the C++ operator kernel could not be built "
                    f"({first}); register_op operators run their kernel in Python",
                    RuntimeWarning,
                    stacklevel=4,
                )
        return _STATE["library"]


def _dims(dims: tuple[int | Var, ...], var_index: dict[str, int]) -> list[int]:
    out: list[int] = []
    for d in dims:
        out += [1, var_index[d.name]] if isinstance(d, Var) else [0, d]
    return out


def plan(sig: Signature, checked: bool) -> list[int]:
    """The description of ``sig`` that ``kernel.cc`` runs a call by (see ``ParsePlan``).

    ``checked``: the FFI function runs the signature's checks itself, so the
    kernel only reads the Vars the outputs need from the inputs that bind them.
    """
    op_params = [p for p in sig.ffi_params if not (isinstance(p, Tensor) and p.output)]
    arg_of = {p.name: i for i, p in enumerate(op_params)}
    var_index = {v.name: i for i, v in enumerate(sig.vars)}
    sources: dict[str, tuple[int, int, int]] = {}
    for t in sig.inputs:
        for is_stride, dims in ((0, t.shape), (1, t.strides or ())):
            for k, d in enumerate(dims):
                if isinstance(d, Var):
                    sources.setdefault(d.name, (arg_of[t.name], is_stride, k))
    first = arg_of[sig.inputs[0].name] if sig.inputs else -1
    cuda = DEVICES["rocm"] if torch.version.hip else DEVICES["cuda"]
    out = [PLAN_VERSION, int(checked), cuda, len(op_params), first, len(sig.vars)]
    out.append(len(sig.ffi_params))
    for v in sig.vars:
        lo, hi = _VAR_RANGES.get(v.dtype, (_INT64_MIN, _INT64_MAX))
        # A Var no input binds cannot be (Signature checks outputs): (-1, 0, 0) is never read.
        src = sources.get(v.name, (-1, 0, 0))
        out += [max(lo, _INT64_MIN), min(hi, _INT64_MAX), v.divisibility or 0, *src]
    outputs = 0
    for p in sig.ffi_params:
        if isinstance(p, Scalar):
            out += [0, arg_of[p.name], _SCALAR_KINDS[p.dtype]]
            continue
        info = DTYPES[p.dtype]
        if p.output:
            out += [2, outputs]
            outputs += 1
        else:
            out += [1, arg_of[p.name]]
        out += [info.code, info.bits, DEVICES[p.device], int(p.inout), len(p.shape)]
        out += _dims(p.shape, var_index)
        out += [0] if p.strides is None else [1, *_dims(p.strides, var_index)]
    return out


def register(
    ns: str,
    name: str,
    fn: Any,
    sig: Signature,
    checked: bool,
    explain: Callable[[Any], None],
) -> Any:
    """Register the C++ kernel for the defined operator ``ns::name``; its owner, or ``None``.

    ``explain(items)`` runs the signature's checks on the description of a
    call the kernel rejected (each argument: a scalar, or ``[dtype name, device
    type, device index, shape, strides]``) and raises their error. The returned
    object keeps the kernel registered; ``None`` when ``fn`` is not an FFI
    function, the library cannot be built, or ``$TVMFFI_TORCH_KERNEL`` is
    ``python`` (the caller registers the Python kernel).
    """
    if not isinstance(fn, Function) or os.environ.get("TVMFFI_TORCH_KERNEL") == "python":
        return None
    lib = library()
    if lib is None:
        return None
    return lib.register_kernel(ns, name, fn, explain, plan(sig, checked))
