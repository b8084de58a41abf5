"""A small kernel library for PyTorch, written in C++ and built with tvmffi.cpp.

The C++ functions take ``tvm::ffi::TensorView`` (a borrowed DLTensor) and write
their result into an output tensor the caller allocates; torch tensors are
passed zero-copy. ``load_inline`` compiles once and caches the library (the
next run loads it without starting the compiler).

Run: ``.venv/bin/python examples/torch_kernels.py`` (after ``make test`` has
installed torch).
"""

from __future__ import annotations

import inspect

import torch

import tvmffi.cpp

SOURCE = r"""
#include <cstdint>

namespace {
void check_same_1d(tvm::ffi::TensorView a, tvm::ffi::TensorView b) {
  TVM_FFI_ICHECK(a.ndim() == 1 && b.ndim() == 1) << "expected 1-d tensors";
  TVM_FFI_ICHECK(a.size(0) == b.size(0)) << "sizes differ: " << a.size(0) << " vs " << b.size(0);
}
}  // namespace

// out = x * alpha + y
void axpy(tvm::ffi::TensorView x, tvm::ffi::TensorView y, tvm::ffi::TensorView out,
          double alpha) {
  check_same_1d(x, y);
  check_same_1d(x, out);
  const float* px = static_cast<const float*>(x.data_ptr());
  const float* py = static_cast<const float*>(y.data_ptr());
  float* po = static_cast<float*>(out.data_ptr());
  for (int64_t i = 0; i < x.size(0); ++i) po[i] = static_cast<float>(alpha) * px[i] + py[i];
}

// The sum of a float32 vector.
double total(tvm::ffi::TensorView x) {
  TVM_FFI_ICHECK(x.ndim() == 1) << "expected a 1-d tensor";
  const float* px = static_cast<const float*>(x.data_ptr());
  double s = 0;
  for (int64_t i = 0; i < x.size(0); ++i) s += px[i];
  return s;
}
"""

lib = tvmffi.cpp.load_inline(
    "example_torch_kernels",
    cpp_sources=SOURCE,
    functions={"axpy": "out = alpha * x + y (float32, 1-d)", "total": "Sum of a float32 vector."},
    # Export each function's type schema and doc: signatures and help() come from them.
    extra_cflags=["-DTVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"],
)

x = torch.arange(5, dtype=torch.float32)
y = torch.ones(5)
out = torch.empty(5)
lib.axpy(x, y, out, 2.0)
print("axpy:", out.tolist())
assert torch.equal(out, 2 * x + y)
print("total:", lib.total(x))
assert lib.total(x) == 10.0

# Each function knows its signature, built from the type schema the library exports.
print("signature of axpy:", inspect.signature(lib.axpy))
print(lib.total.__doc__)

try:
    lib.axpy(x, torch.ones(3), out, 1.0)
except RuntimeError as err:  # the C++ check's message arrives as a Python exception
    print("refused:", str(err).splitlines()[0])
