"""Utilities of the tvmffi package (the official binding's ``tvm_ffi.utils``)."""

from . import kwargs_wrapper

__all__ = ["kwargs_wrapper"]
