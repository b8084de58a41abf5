/* Test fixture: registers functions into the system library on load. */
#include <stdint.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

static int sys_add(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self;
  if (n != 2 || args[0].type_index != kTVMFFIInt || args[1].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "syslib_add expects (int, int)");
    return -1;
  }
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = args[0].v_int64 + args[1].v_int64;
  return 0;
}

static int sys_neg(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self;
  if (n != 1 || args[0].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "neg expects an int");
    return -1;
  }
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = -args[0].v_int64;
  return 0;
}

__attribute__((constructor)) static void register_symbols(void) {
  TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi_syslib_add", (void*)sys_add);
  TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi_tvmffitest_neg", (void*)sys_neg);
}
