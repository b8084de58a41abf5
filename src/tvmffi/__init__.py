"""tvmffi: a fast, complete Python binding of the TVM FFI stable C ABI."""

from __future__ import annotations

# isort: off
from . import _lib  # must load libtvm_ffi before the extension is imported
# isort: on
from . import _core
from ._core import Object
from .device import Device, cpu, cuda, metal, opencl, rocm, vulkan
from .dtype import DataType
from .error import Error, register_error
from .function import (
    Function,
    get_global_func,
    list_global_func_names,
    register_global_func,
    to_function,
)

__version__ = "0.1.0"


def tvm_ffi_version() -> str:
    """Return the version ``major.minor.patch`` of the loaded TVM FFI runtime."""
    return _core.tvm_ffi_version()


def lib_path() -> str:
    """Return the path of the ``libtvm_ffi`` shared library in use."""
    return _lib.lib_path()


__all__ = [
    "DataType",
    "Device",
    "Error",
    "Function",
    "Object",
    "__version__",
    "cpu",
    "cuda",
    "get_global_func",
    "lib_path",
    "list_global_func_names",
    "metal",
    "opencl",
    "register_error",
    "register_global_func",
    "rocm",
    "to_function",
    "tvm_ffi_version",
    "vulkan",
]
