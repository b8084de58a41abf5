"""The kernels the operator tests (test_ops_*.py) share: axpby as a signature, a C body, C++."""

from __future__ import annotations

from tvmffi.codegen import EnvStream, Scalar, Signature, Tensor, Var

N = Var("n")

AXPBY_BODY = "for (int64_t i = 0; i < n; ++i) out[i] = alpha * x[i] + y[i];"


def axpby_signature(name: str, device: str = "cpu") -> Signature:
    """``name(x: [n] f32, y: [n] f32, alpha: f32, out: [n] f32 output)`` on ``device``.

    On a GPU the kernel also gets the environment stream to launch on.
    """
    params: list[Tensor | Scalar | EnvStream] = [
        Tensor("x", [N], "float32", device=device),
        Tensor("y", [N], "float32", device=device),
        Scalar("alpha", "float32"),
        Tensor("out", [N], "float32", device=device, output=True),
    ]
    if device != "cpu":
        params.append(EnvStream("stream"))
    return Signature(name, params)


def cpp_axpby_source(name: str) -> str:
    """C++ for tvmffi.cpp.load_inline: ``name`` takes axpby's parameters and checks nothing."""
    return f"""
#include <tvm/ffi/container/tensor.h>
void {name}(tvm::ffi::TensorView x, tvm::ffi::TensorView y, double alpha,
            tvm::ffi::TensorView out) {{
  const float* px = static_cast<const float*>(x.data_ptr());
  const float* py = static_cast<const float*>(y.data_ptr());
  float* po = static_cast<float*>(out.data_ptr());
  for (int64_t i = 0; i < x.size(0); ++i) po[i] = static_cast<float>(alpha) * px[i] + py[i];
}}
"""
