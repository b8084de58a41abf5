"""tvmffi.jax.register_op: one codegen signature -> a JAX operator (issue 25).

The operator lowers to an XLA FFI custom call through jax-tvm-ffi; its output
types come from the signature, whose checks run at trace time with the
generated wrapper's messages.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tvmffi
import tvmffi.cpp
from tvmffi import codegen
from tvmffi.codegen import Scalar, Signature, Tensor, Var

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
pytest.importorskip("jax_tvm_ffi")
from ops_kernels import AXPBY_BODY, N, axpby_signature, cpp_axpby_source  # noqa: E402

import tvmffi.jax  # noqa: E402  (needs jax)

AXPBY = axpby_signature("jaxpby")
SCALE = Signature(
    "jscale_",
    [Scalar("alpha", "float64"), Tensor("x", [N], "float32", inout=True), Scalar("k", "int32")],
)
M = Var("m")
ROWSUM = Signature(
    "jrowsum",
    [
        Tensor("x", [M, N], "float32"),
        Tensor("sums", [M], "float32", output=True),
        Tensor("count", [1], "int64", output=True),
    ],
)


def _msg(sig: Signature, text: str) -> str:
    return f"{text} when calling: `{sig}`"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ops-jax")


@pytest.fixture(scope="module")
def axpby(cache: Path) -> Any:
    fn = codegen.inline(AXPBY, AXPBY_BODY, output_dir=cache)
    return tvmffi.jax.register_op("tvmffi_ops_test.axpby", fn, AXPBY)


@pytest.fixture(scope="module")
def scale(cache: Path) -> Any:
    body = "for (int64_t i = 0; i < n; ++i) x[i] = x[i] * alpha + k;"
    return tvmffi.jax.register_op(
        "tvmffi_ops_test.scale", codegen.inline(SCALE, body, output_dir=cache)
    )


@pytest.fixture(scope="module")
def rowsum(cache: Path) -> Any:
    body = """
    for (int64_t i = 0; i < m; ++i) {
      sums[i] = 0;
      for (int64_t j = 0; j < n; ++j) sums[i] += x[i * n + j];
    }
    count[0] = m * n;
    """
    return tvmffi.jax.register_op(
        "tvmffi_ops_test.rowsum", codegen.inline(ROWSUM, body, output_dir=cache)
    )


def test_jit_returns_the_output(axpby: Any) -> None:
    x, y = jnp.arange(5, dtype=jnp.float32), jnp.ones(5, jnp.float32)
    run = jax.jit(lambda x, y: axpby(x, y, alpha=2.0))
    np.testing.assert_array_equal(np.asarray(run(x, y)), 2 * np.arange(5) + 1)
    np.testing.assert_array_equal(np.asarray(axpby(x, y, alpha=-1.0)), 1 - np.arange(5))  # eager
    np.testing.assert_array_equal(
        np.asarray(axpby(x, y, alpha=np.float32(3))), 3 * np.arange(5) + 1
    )
    # a new shape traces again and runs the same kernel
    z = jnp.linspace(0, 1, 9, dtype=jnp.float32)
    np.testing.assert_allclose(np.asarray(run(z, z)), 3 * np.asarray(z), rtol=1e-6)


def test_lowers_to_one_ffi_call_with_the_scalar_as_attribute(axpby: Any) -> None:
    x = jnp.ones(3, jnp.float32)
    text = str(jax.make_jaxpr(lambda x, y: axpby(x, y, alpha=2.5))(x, x))
    assert text.count("ffi_call[") == 1
    assert "target_name=tvmffi_ops_test.axpby" in text and "('alpha', np.float32(2.5))" in text


def test_shapes_checked_at_trace_time(axpby: Any) -> None:
    expected = _msg(
        AXPBY, "Parameter `y` expects shape[0]=n=4 (bound by `x`.shape[0]) but got shape[0]=5"
    )
    x, y = jax.ShapeDtypeStruct((4,), jnp.float32), jax.ShapeDtypeStruct((5,), jnp.float32)
    with pytest.raises(ValueError) as info:  # eval_shape traces without running anything
        jax.eval_shape(lambda x, y: axpby(x, y, alpha=2.0), x, y)
    assert str(info.value) == expected
    with pytest.raises(ValueError, match=re.escape("expects dtype=float32 but got dtype=int32")):
        jax.jit(lambda x, y: axpby(x, y, alpha=1.0))(jnp.ones(4, jnp.int32), jnp.ones(4))
    with pytest.raises(TypeError, match=re.escape("expects float32 but got str")):
        axpby(jnp.ones(4), jnp.ones(4), alpha="2")
    with pytest.raises(TypeError, match=re.escape("missing ['alpha']")):
        axpby(jnp.ones(4), jnp.ones(4))


def test_several_outputs(rowsum: Any) -> None:
    x = jnp.arange(6, dtype=jnp.float32).reshape(2, 3)
    sums, count = jax.jit(rowsum)(x)
    np.testing.assert_array_equal(np.asarray(sums), [3, 12])
    assert str(count.dtype) == "int64"  # the signature's dtype, x64 mode or not
    assert int(count[0]) == 6


def test_inout_is_aliased_and_returned(scale: Any) -> None:
    x = jnp.arange(4, dtype=jnp.float32)
    run = jax.jit(lambda x: scale(x, alpha=3.0, k=1) + 0)
    np.testing.assert_array_equal(np.asarray(run(x)), [1, 4, 7, 10])
    np.testing.assert_array_equal(np.asarray(x), [0, 1, 2, 3])  # not donated: x is unchanged
    text = str(jax.make_jaxpr(lambda x: scale(x, alpha=3.0, k=1))(x))
    assert "input_output_aliases=((0, 0),)" in text
    with pytest.raises(ValueError, match=re.escape("expects ndim=1 but got ndim=2")):
        jax.jit(lambda x: scale(x, alpha=3.0, k=1))(jnp.ones((2, 2)))
    with pytest.raises(ValueError, match=re.escape("expects an int32 but got 4294967296")):
        scale(x, alpha=1.0, k=2**32)


def test_vmap_is_sequential(axpby: Any) -> None:
    xs = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)
    out = jax.vmap(lambda x, y: axpby(x, y, alpha=2.0))(xs, xs)
    np.testing.assert_array_equal(np.asarray(out), 3 * np.asarray(xs))


def test_vmap_refused_when_asked(cache: Path) -> None:
    fn = codegen.inline(
        axpby_signature("jaxpby_novmap"),
        AXPBY_BODY,
        output_dir=cache,
    )
    op = tvmffi.jax.register_op("tvmffi_ops_test.axpby_novmap", fn, vmap_method=None)
    xs = jnp.ones((2, 3), jnp.float32)
    with pytest.raises(NotImplementedError, match="vmap"):
        jax.vmap(lambda x: op(x, x, alpha=1.0))(xs)


def test_load_inline_function_with_a_signature(cache: Path) -> None:
    mod = tvmffi.cpp.load_inline(
        "ops_jax_cpp_axpby",
        cpp_sources=cpp_axpby_source("jcpp_axpby"),
        functions=["jcpp_axpby"],
        build_directory=str(cache / "cpp"),
    )
    sig = axpby_signature("jcpp_axpby")
    op = tvmffi.jax.register_op("tvmffi_ops_test.cpp_axpby", mod.jcpp_axpby, sig)
    x, y = jnp.arange(3, dtype=jnp.float32), jnp.ones(3, jnp.float32)
    np.testing.assert_array_equal(
        np.asarray(jax.jit(lambda x, y: op(x, y, alpha=2.0))(x, y)), [1, 3, 5]
    )
    with pytest.raises(ValueError, match=re.escape("(bound by `x`.shape[0]) but got shape[0]=2")):
        jax.jit(lambda x, y: op(x, y, alpha=2.0))(x, jnp.ones(2))


def test_signatures_the_jax_route_cannot_call() -> None:
    fn = tvmffi.get_global_func("testing.echo")
    split = Signature(
        "split_inputs",
        [
            Tensor("x", [N], "float32"),
            Tensor("out", [N], "float32", output=True),
            Tensor("y", [N], "float32"),
        ],
    )
    with pytest.raises(ValueError, match="input tensors are not adjacent"):
        tvmffi.jax.register_op("tvmffi_ops_test.bad1", fn, split)
    both = Signature(
        "both",
        [Tensor("x", [N], "float32", inout=True), Tensor("out", [N], "float32", output=True)],
    )
    with pytest.raises(ValueError, match="both outputs and inout"):
        tvmffi.jax.register_op("tvmffi_ops_test.bad2", fn, both)
    with pytest.raises(TypeError, match="needs the signature"):
        tvmffi.jax.register_op("tvmffi_ops_test.bad3", fn)
