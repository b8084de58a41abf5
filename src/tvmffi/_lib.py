"""Locate and load the one ``libtvm_ffi`` shared with the official binding.

The runtime is the library shipped in the ``apache-tvm-ffi`` wheel, at
``tvm_ffi/lib/libtvm_ffi.so``, the file ``tvm_ffi.libinfo.find_libtvm_ffi()``
finds through the wheel's RECORD. We take it from there directly (without
importing ``tvm_ffi``, which would load its Cython core) and fall back to
executing that stdlib-only libinfo file when the wheel layout differs. The
file is loaded with ``RTLD_GLOBAL`` before
``tvmffi._core`` is imported. The extension's ``DT_NEEDED libtvm_ffi.so`` entry
then resolves, by soname, to this very copy, so both bindings in one process
share one function registry, one type table and one error channel.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import sys
from types import ModuleType

_loaded: dict[str, ctypes.CDLL] = {}


@functools.cache
def _package_dir() -> str:
    """Directory of the installed ``apache-tvm-ffi`` package (``.../site-packages/tvm_ffi``).

    Found once, when tvmffi is imported (before anything may answer ``tvm_ffi``
    with another package), and kept.
    """
    spec = importlib.util.find_spec("tvm_ffi")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("tvmffi needs the apache-tvm-ffi package (pip install apache-tvm-ffi)")
    return str(next(iter(spec.submodule_search_locations)))


def _libinfo() -> ModuleType:
    existing = sys.modules.get("tvm_ffi.libinfo")
    if existing is not None:
        return existing
    path = os.path.join(_package_dir(), "libinfo.py")
    file_spec = importlib.util.spec_from_file_location("_tvmffi_tvm_ffi_libinfo", path)
    if file_spec is None or file_spec.loader is None:
        raise ImportError(f"cannot read {path}")
    module = importlib.util.module_from_spec(file_spec)
    file_spec.loader.exec_module(module)
    return module


@functools.cache
def lib_path() -> str:
    """Return the path of the ``libtvm_ffi`` shared library in use (found once, at load)."""
    if "tvm_ffi.libinfo" not in sys.modules:
        # Where the wheel ships it; asking libinfo costs ~40 ms of
        # importlib.metadata at import, so it is only the fallback.
        shipped = os.path.join(_package_dir(), "lib", "libtvm_ffi.so")
        if os.path.isfile(shipped):
            return os.path.realpath(shipped)
    path = _libinfo().find_libtvm_ffi()
    return os.path.realpath(str(path))


def load_library(path: str) -> ctypes.CDLL:
    """Load a shared library into the process with global symbol visibility."""
    real = os.path.realpath(path)
    lib = _loaded.get(real)
    if lib is None:
        lib = ctypes.CDLL(real, mode=os.RTLD_GLOBAL)
        _loaded[real] = lib
    return lib


def testing_lib_path() -> str:
    """Return the path of ``libtvm_ffi_testing`` next to the runtime library."""
    return os.path.join(os.path.dirname(lib_path()), "libtvm_ffi_testing.so")


load_library(lib_path())
# Another libtvm_ffi already mapped (by a package that ships its own): refused
# before the extension binds to one of the two by soname.
from . import _runtime_guard  # noqa: E402

_runtime_guard.check(lib_path(), ImportError)
_package_dir()
# The official binding's core links libtvm_ffi_testing, so the ``testing.*``
# globals exist as soon as it is imported; code written against it relies on
# that (about 2 ms).
load_library(testing_lib_path())
