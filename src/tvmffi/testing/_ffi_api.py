"""The runtime testing library's ``testing.*`` global functions, as module attributes.

Importing it loads ``libtvm_ffi_testing`` from the same ``apache-tvm-ffi`` wheel as
the runtime, which registers those functions and the ``testing.*`` object types.
"""

from __future__ import annotations

from .._lib import load_library, testing_lib_path
from ..registry import init_ffi_api

load_library(testing_lib_path())
init_ffi_api("testing", __name__)
