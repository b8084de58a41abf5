"""TVM TIRx (apache-tvm-tirx) on tvmffi: TVMScript, a pass, LLVM build and run, export and load.

Run plain or with TVMFFI_HOST=1 (tests/test_hosted_clients.py compares the two): prints
one line of results, then ``hosted OK`` or ``plain OK``.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import tvm_ffi  # the binding TIRx runs on: tvmffi when hosted
import tvm_tirx as tvm
from _common import check_hosted
from tvm_tirx.script import tirx as T


# TVMScript: a module parsed from Python, with an index a pass simplifies.
@T.ir_module
class Before:
    @T.function
    def affine(A: T.Tensor((6,), "float32"), B: T.Tensor((6,), "float32")):
        for i in range(6):
            B[i] = A[i * 1 + 0] * T.float32(2) + T.float32(1)


@T.ir_module
class Expected:
    @T.function
    def affine(A: T.Tensor((6,), "float32"), B: T.Tensor((6,), "float32")):
        for i in range(6):
            B[i] = A[i] * T.float32(2) + T.float32(1)


# A pass: StmtSimplify folds `i * 1 + 0` to `i`.
after = tvm.tirx.transform.StmtSimplify()(Before)
tvm.ir.assert_structural_equal(after, Expected)
text = after.script()
assert "A[i * 1 + 0]" not in text and "A[i]" in text, text

# LLVM: compile, run on the CPU, export a shared library, load it back and run it again.
dev = tvm.cpu(0)
ex = tvm.tirx.compile(after, target="llvm")
x = tvm.runtime.tensor(np.arange(6, dtype="float32"), dev)
y = tvm.runtime.tensor(np.zeros(6, dtype="float32"), dev)
ex["affine"](x, y)
expected = np.arange(6, dtype="float32") * 2 + 1
np.testing.assert_array_equal(y.numpy(), expected)
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "affine.so")
    ex.export_library(path)
    loaded = tvm.runtime.load_module(path)
    z = tvm.runtime.tensor(np.zeros(6, dtype="float32"), dev)
    loaded["affine"](x, z)
    np.testing.assert_array_equal(z.numpy(), expected)

# An error from the compiled function crosses the FFI as a Python exception.
try:
    ex["affine"](x, tvm.runtime.tensor(np.zeros(5, dtype="float32"), dev))
except Exception as err:
    error = type(err).__name__
else:
    raise AssertionError("a wrong shape was accepted")

print(
    "result",
    hashlib.sha256(text.encode()).hexdigest()[:16],
    z.numpy().tolist(),
    error,
)
if os.environ.get("TVMFFI_HOST"):
    check_hosted()
    print("hosted OK")
else:
    assert tvm_ffi.__name__ == "tvm_ffi", tvm_ffi
    print("plain OK")
