// benchmarks/bench_ops.py: the hand-written axpby of torch_library_ops.cc as a
// pybind11 function (torch's C++ extension way, no dispatcher in the call).
#include <torch/extension.h>

namespace {

at::Tensor axpby(const at::Tensor& x, const at::Tensor& y, double alpha) {
  TORCH_CHECK_VALUE(x.dim() == 1 && y.dim() == 1, "axpby: x and y must be 1-D");
  TORCH_CHECK_VALUE(x.scalar_type() == at::kFloat && y.scalar_type() == at::kFloat,
                    "axpby: x and y must be float32");
  TORCH_CHECK_VALUE(y.size(0) == x.size(0), "axpby: y must have x's size");
  TORCH_CHECK_VALUE(x.is_contiguous() && y.is_contiguous(), "axpby: x and y must be contiguous");
  at::Tensor out = at::empty_like(x);
  const float* px = x.const_data_ptr<float>();
  const float* py = y.const_data_ptr<float>();
  float* po = out.mutable_data_ptr<float>();
  const float a = static_cast<float>(alpha);
  for (int64_t i = 0, n = x.size(0); i < n; ++i) po[i] = a * px[i] + py[i];
  return out;
}

}  // namespace

PYBIND11_MODULE(bench_ops_pybind, m) { m.def("axpby", &axpby); }
