"""tvmffi Functions as JAX FFI targets through jax-tvm-ffi (issue 11 item 7).

jax-tvm-ffi is built on the official binding: register_ffi_target hands our
Function to it, which must take it as the FFI function it is (by handle, via
``__tvm_ffi_object__``), not as an opaque Python object or a Python trampoline.
"""

from __future__ import annotations

import numpy as np
import pytest
import tvm_ffi

import tvmffi
from tvmffi import codegen
from tvmffi.codegen import Signature, Tensor, Var

try:
    import jax
    import jax.numpy as jnp
    import jax_tvm_ffi
except ImportError:  # each test is reported skipped, with the reason
    jax = jnp = jax_tvm_ffi = None
pytestmark = [
    pytest.mark.skipif(jax is None, reason="needs jax and jax-tvm-ffi (the test extra)"),
    pytest.mark.usefixtures("jax_on_cpu"),  # CPU targets, also beside a GPU
]


@pytest.fixture(scope="module")
def affine(tmp_path_factory: pytest.TempPathFactory) -> tvmffi.Function:
    n = Var("n")
    sig = Signature("jax_affine", [Tensor("x", [n], "float32"), Tensor("y", [n], "float32")])
    return codegen.inline(
        sig,
        "for (int64_t i = 0; i < n; ++i) y[i] = 2.0f * x[i] + 1.0f;",
        output_dir=tmp_path_factory.mktemp("jax_cg"),
    )


def _jitted(target: str) -> object:
    @jax.jit
    def run(x: object) -> object:
        return jax.ffi.ffi_call(target, jax.ShapeDtypeStruct(x.shape, x.dtype))(x)  # type: ignore[attr-defined]

    return run


def test_codegen_kernel_under_jit(affine: tvmffi.Function) -> None:
    jax_tvm_ffi.register_ffi_target("tvmffi_test.affine", affine, platform="cpu")
    run = _jitted("tvmffi_test.affine")
    x = jnp.arange(7, dtype=jnp.float32)
    np.testing.assert_array_equal(np.asarray(run(x)), 2 * np.arange(7, dtype="float32") + 1)
    # a second shape re-traces and runs the same kernel
    y = jnp.linspace(-1, 1, 3, dtype=jnp.float32)
    np.testing.assert_allclose(np.asarray(run(y)), 2 * np.asarray(y) + 1)


def test_registration_passes_the_function_by_handle(affine: tvmffi.Function) -> None:
    # register_ffi_target passes our Function through an official-binding call
    # to jax-tvm-ffi's C++ handler: it arrives as the very same FFI function,
    # not a Python trampoline around it.
    official = tvm_ffi.get_global_func("testing.echo")(affine)
    assert isinstance(official, tvm_ffi.Function)
    assert official.__chandle__() == affine.__chandle__()


def test_python_function_under_jit() -> None:
    def scale(x: object, y: object) -> None:
        np.from_dlpack(y)[:] = np.from_dlpack(x) * 3  # type: ignore[call-overload]

    fn = tvmffi.convert(scale)
    assert isinstance(fn, tvmffi.Function)
    jax_tvm_ffi.register_ffi_target("tvmffi_test.scale", fn, platform="cpu")
    run = _jitted("tvmffi_test.scale")
    out = run(jnp.arange(5, dtype=jnp.float32))
    np.testing.assert_array_equal(np.asarray(out), [0, 3, 6, 9, 12])


def test_global_function_under_jit(affine: tvmffi.Function) -> None:
    # A Function obtained through tvmffi's registry works the same way.
    name = "tvmffi_test.jax_affine_global"
    tvmffi.register_global_func(name, affine, override=True)
    fn = tvmffi.get_global_func(name)
    jax_tvm_ffi.register_ffi_target("tvmffi_test.affine_global", fn, platform="cpu")
    out = _jitted("tvmffi_test.affine_global")(jnp.ones(4, dtype=jnp.float32))
    np.testing.assert_array_equal(np.asarray(out), [3, 3, 3, 3])
