"""Functions and types of the runtime's testing library (``libtvm_ffi_testing``).

Importing this module loads ``libtvm_ffi_testing.so`` from the same
``apache-tvm-ffi`` wheel as the runtime, which registers the ``testing.*``
global functions. Every ``testing.<name>`` global is available here as an
attribute, e.g. ``tvmffi.testing.echo``.
"""

from __future__ import annotations

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


def __getattr__(name: str) -> Function:
    func = get_global_func("testing." + name, allow_missing=True)
    if func is None:
        raise AttributeError(f"module 'tvmffi.testing' has no attribute {name!r}")
    return func
