"""FFI object types defined in Python (the official binding's ``tvm_ffi.dataclasses``).

Only ``py_class`` and ``method`` are provided so far.
"""

from .py_class import method, py_class

__all__ = ["method", "py_class"]
