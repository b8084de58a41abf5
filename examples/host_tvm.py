"""Apache TVM running on tvmffi: the host switch.

# requires: tvmffi.host

``tvmffi.host()`` makes packages built on the official binding (``import
tvm_ffi``) run on tvmffi; called before ``import tvm``, TVM's compiler and
runtime objects are then tvmffi objects. This example compiles a kernel with
TVM's tensor expressions and runs it on NumPy arrays. (The test suite skips it
where this tvmffi has no ``host``.)

Run: ``.venv/bin/python examples/host_tvm.py`` (after ``make test`` has
installed apache-tvm).
"""

from __future__ import annotations

import numpy as np

import tvmffi

tvmffi.host()

import tvm  # noqa: E402  (after the host switch)
from tvm import te  # noqa: E402

n = te.var("n")
a = te.placeholder((n,), name="a", dtype="float32")
b = te.compute((n,), lambda i: a[i] + 1.0, name="b")
prim_func = te.create_prim_func([a, b]).with_attr("global_symbol", "add_one")
add_one = tvm.compile(prim_func, target="llvm")["add_one"]

x = np.arange(4, dtype=np.float32)
y = np.zeros(4, dtype=np.float32)
add_one(tvm.runtime.tensor(x), out := tvm.runtime.tensor(y))
print("add_one:", out.numpy().tolist())
assert out.numpy().tolist() == [1.0, 2.0, 3.0, 4.0]
