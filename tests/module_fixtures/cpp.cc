// Test fixture: a module library using the runtime's C++ export macros.
#define TVM_FFI_DLL_EXPORT_INCLUDE_METADATA 1
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>

#include <string>

static int64_t Mul(int64_t a, int64_t b) { return a * b; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(mul, Mul);
TVM_FFI_DLL_EXPORT_TYPED_FUNC_DOC(mul, "Multiply two integers.");

static tvm::ffi::String Greet(tvm::ffi::String name) {
  return tvm::ffi::String("hello " + std::string(name));
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(greet, Greet);

static int64_t Fail(int64_t x) { TVM_FFI_THROW(ValueError) << "bad value " << x; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(fail, Fail);
