"""Utilities of the tvmffi package (the official binding's ``tvm_ffi.utils``)."""

from . import kwargs_wrapper

# --- build utilities (issue 14): FileLock; embed_cubin is the submodule utils.embed_cubin ---
from .lockfile import FileLock

__all__ = ["FileLock", "kwargs_wrapper"]


def __getattr__(name: str) -> object:
    """``unpack_dataclass``, the submodule the official package imports eagerly, on first use."""
    if name == "unpack_dataclass":
        import importlib  # import-time: the submodule on first use (docstring)

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
