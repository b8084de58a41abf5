"""Functions and types of the runtime's testing library (``libtvm_ffi_testing``).

Importing this module loads ``libtvm_ffi_testing.so`` from the same
``apache-tvm-ffi`` wheel as the runtime, which registers the ``testing.*``
global functions. Every ``testing.<name>`` global is available here as an
attribute, e.g. ``tvmffi.testing.echo``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any, TypeVar

from ._core import Function
from ._lib import load_library, testing_lib_path
from .registry import get_global_func

load_library(testing_lib_path())

echo: Function = get_global_func("testing.echo")
nop: Function = get_global_func("testing.nop")
apply: Function = get_global_func("testing.apply")
add_one: Function = get_global_func("testing.add_one")
test_raise_error: Function = get_global_func("testing.test_raise_error")
run_check_signal: Function = get_global_func("testing.run_check_signal")


# --- run_with_gpu_lock (issue 14; the official tvm_ffi.testing helper) ---
_R = TypeVar("_R")


def run_with_gpu_lock(func: Callable[..., _R], /, *args: Any, **kwargs: Any) -> _R:
    """Call ``func(*args, **kwargs)`` holding the machine's GPU lock; return its result.

    Serializes the GPU part of tests run by parallel workers. The lock file is
    ``gpu.lock`` in ``$TVM_FFI_TEST_LOCK_DIR``, or else in a per-user directory
    under the system temporary directory (the official binding's, so both
    bindings' tests share one lock).
    """
    from .utils import FileLock

    lock_dir = os.environ.get("TVM_FFI_TEST_LOCK_DIR")
    if lock_dir:
        lock_dir = os.path.expanduser(lock_dir)
    else:
        try:
            import getpass

            user = getpass.getuser()
        except Exception:
            user = str(os.getuid()) if hasattr(os, "getuid") else "unknown"
        lock_dir = os.path.join(tempfile.gettempdir(), f"tvm-ffi-test-locks-{user}")
    os.makedirs(lock_dir, exist_ok=True)
    with FileLock(os.path.join(lock_dir, "gpu.lock")):
        return func(*args, **kwargs)


def __getattr__(name: str) -> Function:
    func = get_global_func("testing." + name, allow_missing=True)
    if func is None:
        raise AttributeError(f"module 'tvmffi.testing' has no attribute {name!r}")
    return func
