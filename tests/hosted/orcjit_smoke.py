"""apache-tvm-ffi-orcjit hosted on tvmffi: its Python API loads and runs an object file.

Run with TVMFFI_HOST=1; argv[1] is an object file exporting ``axpy(y, x, a)``
(tvmffi.codegen.export_object). Prints OK at the end.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import tvm_ffi_orcjit
from _common import check_hosted

import tvmffi

session = tvm_ffi_orcjit.ExecutionSession(orc_rt=None)
assert isinstance(session, tvmffi.Object)
# keep_module_alive: the package calls tvm_ffi._ffi_api.ModuleGlobalsAdd itself.
mod = session.load_module(sys.argv[1], keep_module_alive=True)
assert isinstance(mod, tvmffi.Module)
y = np.ones(4, dtype="float32")
mod["axpy"](y, np.arange(4, dtype="float32"), 2.0)
np.testing.assert_array_equal(y, 1 + 2 * np.arange(4, dtype="float32"))
check_hosted()
print("OK")
