"""Apache TVM hosted on tvmffi: build and run TIR and Relax on llvm, export, TVMScript.

Run with TVMFFI_HOST=1 (tests/test_hosted_clients.py); prints OK at the end.
"""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import tvm
from _common import check_hosted
from tvm import relax, te
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

import tvmffi

# TVM's own classes are what tvmffi hands out (core._set_class_device/_set_class_tensor).
dev = tvm.cpu(0)
assert type(dev) is tvm.runtime.Device and type(tvmffi.device("cpu")) is tvm.runtime.Device
assert type(tvmffi.get_global_func("testing.echo")(dev)) is tvm.runtime.Device

# TIR through te: compile for llvm, run, export_library (write_to_file of an llvm module).
n = te.var("n")
a = te.placeholder((n,), name="A", dtype="float32")
b = te.compute((n,), lambda i: a[i] * 2.0 + 1.0, name="B")
lib = tvm.compile(te.create_prim_func([a, b]).with_attr("global_symbol", "affine"), target="llvm")
x = tvm.runtime.tensor(np.arange(6, dtype="float32"), dev)
y = tvm.runtime.tensor(np.zeros(6, dtype="float32"), dev)
assert type(x) is tvm.runtime.Tensor and type(x.device) is tvm.runtime.Device
lib["affine"](x, y)
np.testing.assert_array_equal(y.numpy(), np.arange(6, dtype="float32") * 2 + 1)
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "affine.so")
    lib.export_library(path)
    loaded = tvm.runtime.load_module(path)
    z = tvm.runtime.tensor(np.zeros(6, dtype="float32"), dev)
    loaded["affine"](x, z)
    np.testing.assert_array_equal(z.numpy(), y.numpy())


# Relax: a module in TVMScript, built and run on the Relax VM.
@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def add_one(a: T.handle, b: T.handle) -> None:
        A = T.match_buffer(a, (4,), "float32")
        B = T.match_buffer(b, (4,), "float32")
        for i in range(4):
            B[i] = A[i] + T.float32(1)

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Module
        y = R.call_tir(cls.add_one, (x,), R.Tensor((4,), "float32"))
        return y


ex = relax.build(Module, target="llvm")
vm = relax.VirtualMachine(ex, dev)
out = vm["main"](tvm.runtime.tensor(np.arange(4, dtype="float32"), dev))
assert type(out) is tvm.runtime.Tensor
np.testing.assert_array_equal(out.numpy(), np.arange(4, dtype="float32") + 1)

# TVMScript print -> parse round trip, structurally equal.
text = Module.script()
reparsed = tvm.script.from_source(text)
tvm.ir.assert_structural_equal(Module, reparsed)
assert "def main" in text and "R.call_tir" in text

# A runtime module in a JSON graph: TVM teaches the runtime to read ffi.Module
# (its __data_from_json__), and the graph validator lets the type read its own data.
csrc = tvm.runtime._ffi_api.CSourceModuleCreate("", "cc", [], [])
again = tvm.ir.load_json(tvm.ir.save_json(csrc))
assert again.kind == "c" and again.is_binary_serializable()

check_hosted()
print("OK")
