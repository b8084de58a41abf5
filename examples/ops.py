"""Write a kernel's signature once; get a PyTorch operator and a JAX operator from it.

Run with ``python examples/ops.py`` (tests/test_examples.py runs it). The
kernel is C built by ``tvmffi.codegen.inline``; the same signature makes
``torch.ops.example.axpby`` (eager, ``torch.compile``, ``torch.export``) and a
JAX operator for ``jax.jit``. Every check the signature implies (shapes, dtypes,
devices) runs in the kernel's C wrapper eagerly and while tracing.
"""

from __future__ import annotations

import tempfile

import jax
import jax.numpy as jnp
import numpy as np
import torch

import tvmffi.jax
import tvmffi.torch
from tvmffi import codegen
from tvmffi.codegen import Scalar, Signature, Tensor, Var

n = Var("n")
axpby_sig = Signature(
    "axpby",
    [
        Tensor("x", [n], "float32"),
        Tensor("y", [n], "float32"),
        Scalar("alpha", "float32"),
        Tensor("out", [n], "float32", output=True),  # allocated and returned by the operators
    ],
)
scale_sig = Signature(
    "scale_", [Tensor("x", [n], "float32", inout=True), Scalar("alpha", "float32")]
)

with tempfile.TemporaryDirectory() as cache:
    axpby = codegen.inline(
        axpby_sig,
        "for (int64_t i = 0; i < n; ++i) out[i] = alpha * x[i] + y[i];",
        output_dir=cache,
    )
    scale_ = codegen.inline(
        scale_sig, "for (int64_t i = 0; i < n; ++i) x[i] *= alpha;", output_dir=cache
    )

# ---- PyTorch -------------------------------------------------------------------------------
tvmffi.torch.register_op("example::axpby", axpby)  # codegen's functions carry their signature
tvmffi.torch.register_op("example::scale_", scale_)
x, y = torch.arange(4, dtype=torch.float32), torch.ones(4)
print("eager:   ", torch.ops.example.axpby(x, y, 2.0))


@torch.compile(fullgraph=True)
def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    torch.ops.example.scale_(y, 0.5)  # mutates y, also when compiled
    return torch.ops.example.axpby(x, y, 2.0).relu()


print("compiled:", step(x, y), "y is now", y)


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.ops.example.axpby(x, y, 3.0)


exported = torch.export.export(Model(), (x, y))
print(
    "exported:", [str(node.target) for node in exported.graph.nodes if node.op == "call_function"]
)
try:
    torch.ops.example.axpby(x, torch.ones(5), 2.0)
except ValueError as err:
    print("error:   ", err)

# ---- JAX -----------------------------------------------------------------------------------
axpby_jax = tvmffi.jax.register_op("example.axpby", axpby)
scale_jax = tvmffi.jax.register_op("example.scale_", scale_)


@jax.jit
def jstep(x: jax.Array, y: jax.Array) -> jax.Array:
    y = scale_jax(y, alpha=0.5)  # inout: the new value comes back (XLA aliases the buffer)
    return axpby_jax(x, y, alpha=2.0)


result = jstep(jnp.arange(4, dtype=jnp.float32), jnp.ones(4, jnp.float32))
print("jax.jit: ", result)
np.testing.assert_allclose(np.asarray(result), step(x, torch.ones(4)).numpy())
try:
    jax.jit(lambda x: axpby_jax(x, x[:2], alpha=1.0))(jnp.ones(4, jnp.float32))
except ValueError as err:
    print("trace-time error:", err)
