"""jax-tvm-ffi hosted on tvmffi: a tvmffi kernel as a JAX FFI target under jax.jit.

Run with TVMFFI_HOST=1; argv[1] is a folder for the kernel's build. Prints OK at the end.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import jax
import jax.numpy as jnp
import jax_tvm_ffi
from _common import check_hosted

from tvmffi import codegen
from tvmffi.codegen import Signature, Tensor, Var

n = Var("n")
sig = Signature("hosted_affine", [Tensor("x", [n], "float32"), Tensor("y", [n], "float32")])
affine = codegen.inline(
    sig, "for (int64_t i = 0; i < n; ++i) y[i] = 2.0f * x[i] + 1.0f;", output_dir=sys.argv[1]
)
jax_tvm_ffi.register_ffi_target("tvmffi_hosted.affine", affine, platform="cpu")


@jax.jit
def run(x: object) -> object:
    call = jax.ffi.ffi_call("tvmffi_hosted.affine", jax.ShapeDtypeStruct(x.shape, x.dtype))  # type: ignore[attr-defined]
    return call(x)


x = jnp.arange(7, dtype=jnp.float32)
np.testing.assert_array_equal(np.asarray(run(x)), 2 * np.arange(7, dtype="float32") + 1)
check_hosted()
print("OK")
