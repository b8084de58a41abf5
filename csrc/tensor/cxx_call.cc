/*
 * The one C++ file of the extension: a C++ function called from C with its
 * exceptions caught.
 *
 * exchange.c calls torch's at::toDLPackNonOwning directly (the function
 * behind torch's own DLPack exchange fill, without the pybind11 cast and GIL
 * acquisition around it). It throws c10::Error for a tensor DLPack cannot
 * describe (a dtype without a DLPack code, a tensor without storage); an
 * exception unwinding into C frames would terminate the process, so the call
 * is made here, inside try/catch, and a throw becomes -1: the caller then
 * takes torch's own fill, which reports the error as a Python exception.
 */
#include "cxx_call.h"

int tvmffi_call_dl_fill(TvmffiDLFillFn fn, const void* tensor, DLTensor* out) {
  try {
    fn(tensor, out);
    return 0;
  } catch (...) {
    return -1;
  }
}
