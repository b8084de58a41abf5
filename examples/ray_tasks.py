"""A tvmffi.cpp kernel in Ray tasks: tensors and the kernel itself travel as task arguments.

Every tvmffi value pickles (docs/scaling.md): a CPU tensor by its bytes (out of
band, into Ray's object store), a module's function as its library's bytes and
its name, a Python callback as its callable. Run: python examples/ray_tasks.py
(starts and stops a 2-CPU local Ray cluster).
"""

from __future__ import annotations

import tempfile

import numpy as np
import ray

import tvmffi
import tvmffi.cpp

mod = tvmffi.cpp.load_inline(
    "ray_axpy",
    cpp_sources=r"""
    #include <tvm/ffi/container/tensor.h>
    void axpy(tvm::ffi::TensorView x, tvm::ffi::TensorView y, double alpha,
              tvm::ffi::TensorView out) {
      const float* px = static_cast<const float*>(x.data_ptr());
      const float* py = static_cast<const float*>(y.data_ptr());
      float* po = static_cast<float*>(out.data_ptr());
      for (int64_t i = 0; i < x.size(0); ++i) po[i] = static_cast<float>(alpha) * px[i] + py[i];
    }
    """,
    functions=["axpy"],
    build_directory=tempfile.mkdtemp(),
)


@ray.remote
def axpy_task(kernel: tvmffi.Function, x: tvmffi.Tensor, y: tvmffi.Tensor, alpha: float):
    """Runs in a Ray worker: the kernel and the tensors arrived by pickle."""
    out = tvmffi.from_dlpack(np.empty(x.shape, np.float32))
    kernel(x, y, alpha, out)
    return out  # a tvmffi.Tensor travels back the same way


ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
try:
    kernel = ray.put(mod.axpy)  # the library goes to the object store once
    xs = [tvmffi.from_dlpack(np.full(4, k, np.float32)) for k in range(3)]
    y = tvmffi.from_dlpack(np.ones(4, np.float32))
    results = ray.get([axpy_task.remote(kernel, x, y, 2.0) for x in xs])
finally:
    ray.shutdown()

for k, r in enumerate(results):
    print(f"task {k}: {type(r).__name__} {np.from_dlpack(r).tolist()}")
