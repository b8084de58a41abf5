/* Test fixture: kernels that allocate their output through the environment
 * allocator (TVMFFIEnvTensorAlloc), as flashinfer's workspaces and tilelang's
 * callee-allocated outputs do. */
#include <stdint.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

#define EXPORT __attribute__((visibility("default")))

static DLTensor* as_tensor(const TVMFFIAny* a) {
  if (a->type_index == kTVMFFIDLTensorPtr) return (DLTensor*)a->v_ptr;
  if (a->type_index == kTVMFFITensor) return (DLTensor*)((char*)a->v_obj + sizeof(TVMFFIObject));
  return NULL;
}

/* doubled(x: float32 tensor) -> a new compact float32 tensor 2 * x. */
EXPORT int __tvm_ffi_doubled(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self;
  DLTensor* x = n == 1 ? as_tensor(&args[0]) : NULL;
  if (x == NULL || x->dtype.code != kDLFloat || x->dtype.bits != 32 || x->dtype.lanes != 1) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "doubled expects one float32 tensor");
    return -1;
  }
  DLTensor proto = *x;
  proto.data = NULL;
  proto.strides = NULL;
  proto.byte_offset = 0;
  TVMFFIObjectHandle out;
  if (TVMFFIEnvTensorAlloc(&proto, &out) != 0) return -1;
  DLTensor* y = (DLTensor*)((char*)out + sizeof(TVMFFIObject));
  int64_t count = 1;
  for (int i = 0; i < x->ndim; ++i) count *= x->shape[i];
  /* x may be strided: walk it in row-major order. */
  const char* base = (const char*)x->data + x->byte_offset;
  float* dst = (float*)((char*)y->data + y->byte_offset);
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t rem = flat, offset = 0, stride = 1;
    for (int d = x->ndim - 1; d >= 0; --d) {
      int64_t idx = rem % x->shape[d];
      rem /= x->shape[d];
      offset += idx * (x->strides != NULL ? x->strides[d] : stride);
      stride *= x->shape[d];
    }
    dst[flat] = 2.0f * ((const float*)base)[offset];
  }
  result->type_index = kTVMFFITensor;
  result->zero_padding = 0;
  result->v_obj = (TVMFFIObject*)out;
  return 0;
}
