"""A kernel with symbolic shapes, compiled by tvmffi.codegen.

``Var("n")`` and ``Var("m")`` are dimensions bound by the first tensor that uses
them and checked against every other: the generated wrapper validates ranks,
shapes, dtypes and devices before the kernel body runs, and a mismatch raises
``ValueError`` naming the parameter. The kernel receives typed data pointers
and the values of the variables.

Run: ``.venv/bin/python examples/codegen_symbolic.py``.
"""

from __future__ import annotations

import inspect

import numpy as np

from tvmffi import codegen
from tvmffi.codegen import Scalar, Signature, Tensor, Var

n, m = Var("n"), Var("m")
sig = Signature(
    "matvec",
    [
        Tensor("a", [n, m], "float32"),
        Tensor("x", [m], "float32"),
        Tensor("y", [n], "float32"),
        Scalar("beta", "float32"),
    ],
    doc="y = a @ x + beta * y",
)
matvec = codegen.inline(
    sig,
    """
    for (int64_t i = 0; i < n; ++i) {
      float acc = 0;
      for (int64_t j = 0; j < m; ++j) acc += a[i * m + j] * x[j];
      y[i] = acc + beta * y[i];
    }
    """,
)
print("signature:", inspect.signature(matvec))
print(codegen.emit_c(sig, "matvec_kernel").count("\n"), "lines of generated C wrapper")

a = np.arange(6, dtype=np.float32).reshape(2, 3)
x = np.ones(3, dtype=np.float32)
y = np.ones(2, dtype=np.float32)
matvec(a, x, y, 0.5)
print("y =", y.tolist())
assert y.tolist() == [3.5, 12.5]

try:
    matvec(a, np.ones(4, dtype=np.float32), y, 0.0)  # m is 3 (bound by a), x has 4
except ValueError as err:
    print("refused:", str(err).splitlines()[0])
