"""FFI object types defined in Python (the official binding's ``tvm_ffi.dataclasses``).

Only ``py_class`` and ``method`` are provided so far.
"""

from .._core import Object  # re-exported as officially (``dc.Object`` in class bases)
from .py_class import method, py_class

__all__ = ["Object", "method", "py_class"]
