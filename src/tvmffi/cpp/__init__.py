"""Compile C++ and CUDA kernels into TVM FFI modules on the fly (the official ``tvm_ffi.cpp``).

:func:`load_inline` / :func:`build_inline` take source text and the names of the
functions to export; :func:`load` / :func:`build` take source files that export
their functions themselves. All four build through :mod:`tvmffi._build`, the
build system :mod:`tvmffi.codegen` uses too; failures raise :class:`CompileError`.
"""

from __future__ import annotations

from .._build import CompileError
from .dtype import to_cpp_dtype
from .extension import build, build_inline, load, load_inline

__all__ = ["CompileError", "build", "build_inline", "load", "load_inline", "to_cpp_dtype"]
