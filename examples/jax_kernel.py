"""JAX calling a tvmffi kernel inside jax.jit, through jax-tvm-ffi.

A kernel compiled with tvmffi.codegen is a ``tvmffi.Function``;
``jax_tvm_ffi.register_ffi_target`` registers it as an XLA FFI target, and
``jax.ffi.ffi_call`` calls it from jitted code on JAX arrays, without copies.

Run: ``.venv/bin/python examples/jax_kernel.py`` (after ``make test`` has
installed jax and jax-tvm-ffi).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax_tvm_ffi
import numpy as np

from tvmffi import codegen
from tvmffi.codegen import Signature, Tensor, Var

n = Var("n")
sig = Signature("softplus", [Tensor("x", [n], "float32"), Tensor("out", [n], "float32")])
softplus = codegen.inline(
    sig,
    "for (int64_t i = 0; i < n; ++i) out[i] = x[i] > 20 ? x[i] : log1pf(expf(x[i]));",
    extra_ldflags=["-lm"],  # libm: expf, log1pf
)
jax_tvm_ffi.register_ffi_target("example.softplus", softplus, platform="cpu")


@jax.jit
def model(x: jax.Array) -> jax.Array:
    out = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return jax.ffi.ffi_call("example.softplus", out)(x * 2.0) - 1.0


# The kernel is registered for the CPU: keep its input there, also where a GPU is JAX's default.
x = jax.device_put(jnp.linspace(-3, 3, 7, dtype=jnp.float32), jax.devices("cpu")[0])
got = np.asarray(model(x))
want = np.log1p(np.exp(2 * np.asarray(x))) - 1
print("model(x) =", np.round(got, 4).tolist())
assert np.allclose(got, want, atol=1e-5)
