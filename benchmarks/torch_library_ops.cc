// Hand-written C++ PyTorch operators for benchmarks/bench_ops.py: the way users
// write fast ops (TORCH_LIBRARY, an unboxed kernel registered for CPU).
//
// - bench_cpp::axpby: the kernel computes out = alpha * x + y itself, after the
//   checks a careful author writes, allocating with at::empty_like;
// - bench_cpp::axpby_ffi: the same checks and allocation, then the TVM-FFI
//   function set by `bench_set_ffi_axpby` through TVMFFIFunctionCall (the floor
//   of an operator whose kernel is a TVM-FFI function).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/function.h>

namespace {

tvm::ffi::Function g_ffi_axpby;

void check_args(const at::Tensor& x, const at::Tensor& y) {
  TORCH_CHECK_VALUE(x.dim() == 1 && y.dim() == 1, "axpby: x and y must be 1-D");
  TORCH_CHECK_VALUE(x.scalar_type() == at::kFloat && y.scalar_type() == at::kFloat,
                    "axpby: x and y must be float32");
  TORCH_CHECK_VALUE(y.size(0) == x.size(0), "axpby: y must have x's size");
  TORCH_CHECK_VALUE(x.is_contiguous() && y.is_contiguous(), "axpby: x and y must be contiguous");
}

at::Tensor axpby(const at::Tensor& x, const at::Tensor& y, double alpha) {
  check_args(x, y);
  at::Tensor out = at::empty_like(x);
  const float* px = x.const_data_ptr<float>();
  const float* py = y.const_data_ptr<float>();
  float* po = out.mutable_data_ptr<float>();
  const float a = static_cast<float>(alpha);
  for (int64_t i = 0, n = x.size(0); i < n; ++i) po[i] = a * px[i] + py[i];
  return out;
}

void fill(const at::Tensor& t, void* data, DLTensor* d) {
  d->data = data;
  d->device = DLDevice{kDLCPU, 0};
  d->ndim = static_cast<int32_t>(t.dim());
  d->dtype = DLDataType{kDLFloat, 32, 1};
  d->shape = const_cast<int64_t*>(t.sizes().data());
  d->strides = const_cast<int64_t*>(t.strides().data());
  d->byte_offset = 0;
}

at::Tensor axpby_ffi(const at::Tensor& x, const at::Tensor& y, double alpha) {
  check_args(x, y);
  at::Tensor out = at::empty_like(x);
  DLTensor dl[3];
  fill(x, const_cast<void*>(x.const_data_ptr()), &dl[0]);
  fill(y, const_cast<void*>(y.const_data_ptr()), &dl[1]);
  fill(out, out.mutable_data_ptr(), &dl[2]);
  TVMFFIAny args[4];
  for (int i = 0; i < 4; ++i) args[i].zero_padding = 0;
  args[0].type_index = args[1].type_index = args[3].type_index = kTVMFFIDLTensorPtr;
  args[0].v_ptr = &dl[0];
  args[1].v_ptr = &dl[1];
  args[3].v_ptr = &dl[2];
  args[2].type_index = kTVMFFIFloat;
  args[2].v_float64 = alpha;
  TVMFFIAny result;
  result.type_index = kTVMFFINone;
  result.zero_padding = 0;
  result.v_int64 = 0;
  void* handle = const_cast<tvm::ffi::FunctionObj*>(g_ffi_axpby.get());
  TORCH_CHECK(TVMFFIFunctionCall(handle, args, 4, &result) == 0, "axpby_ffi: the call failed");
  return out;
}

}  // namespace

// The TVM-FFI function bench_cpp::axpby_ffi calls.
void bench_set_ffi_axpby(tvm::ffi::Function f) { g_ffi_axpby = std::move(f); }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(bench_set_ffi_axpby, bench_set_ffi_axpby);

TORCH_LIBRARY(bench_cpp, m) {
  m.def("axpby(Tensor x, Tensor y, float alpha) -> Tensor");
  m.def("axpby_ffi(Tensor x, Tensor y, float alpha) -> Tensor");
}

TORCH_LIBRARY_IMPL(bench_cpp, CPU, m) {
  m.impl("axpby", &axpby);
  m.impl("axpby_ffi", &axpby_ffi);
}
