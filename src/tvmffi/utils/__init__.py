"""Utilities of the tvmffi package (the official binding's ``tvm_ffi.utils``)."""

from . import kwargs_wrapper

# --- build utilities (issue 14): FileLock; embed_cubin is the submodule utils.embed_cubin ---
from .lockfile import FileLock

__all__ = ["FileLock", "kwargs_wrapper"]
