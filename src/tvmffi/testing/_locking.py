"""``run_with_gpu_lock``: serialize the GPU part of tests run by parallel workers."""

from __future__ import annotations

import getpass
import os
import tempfile
from collections.abc import Callable
from typing import Any, TypeVar

from ..utils.lockfile import FileLock

__all__ = ["run_with_gpu_lock"]

_R = TypeVar("_R")


def _lock_dir() -> str:
    """``$TVM_FFI_TEST_LOCK_DIR``, else a per-user directory under the temporary directory
    (the official binding's, so both bindings' tests share one lock)."""
    lock_dir = os.environ.get("TVM_FFI_TEST_LOCK_DIR")
    if lock_dir:
        return os.path.expanduser(lock_dir)
    try:
        user = getpass.getuser()
    except Exception:
        user = str(os.getuid()) if hasattr(os, "getuid") else "unknown"
    return os.path.join(tempfile.gettempdir(), f"tvm-ffi-test-locks-{user}")


def run_with_gpu_lock(func: Callable[..., _R], /, *args: Any, **kwargs: Any) -> _R:
    """Call ``func(*args, **kwargs)`` holding the machine's GPU lock (``gpu.lock``); return
    its result."""
    lock_dir = _lock_dir()
    os.makedirs(lock_dir, exist_ok=True)
    with FileLock(os.path.join(lock_dir, "gpu.lock")):
        return func(*args, **kwargs)
