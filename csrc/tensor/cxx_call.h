/* cxx_call.cc's one function, shared by C (exchange.c) and the C++ file. */
#ifndef TVMFFI_TENSOR_CXX_CALL_H_
#define TVMFFI_TENSOR_CXX_CALL_H_

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A C++ function filling a DLTensor from a tensor (torch's at::Tensor). */
typedef void (*TvmffiDLFillFn)(const void* tensor, DLTensor* out);

/* fn(tensor, out) with its C++ exceptions caught: 0 when it returned, -1
 * when it threw (out is then unspecified). */
int tvmffi_call_dl_fill(TvmffiDLFillFn fn, const void* tensor, DLTensor* out);

#ifdef __cplusplus
}
#endif

#endif  /* TVMFFI_TENSOR_CXX_CALL_H_ */
