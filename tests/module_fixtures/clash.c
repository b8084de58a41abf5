/* Test fixture: a module library whose function names clash with Module's own
 * attributes (kind, get_function), beside one that does not (answer). */
#include <stdint.h>
#include <tvm/ffi/c_api.h>

#define EXPORT __attribute__((visibility("default")))

static int set_int(int64_t v, TVMFFIAny* result) {
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = v;
  return 0;
}

EXPORT int __tvm_ffi_kind(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self, (void)args, (void)n;
  return set_int(1, result);
}

EXPORT int __tvm_ffi_get_function(void* self, const TVMFFIAny* args, int32_t n,
                                  TVMFFIAny* result) {
  (void)self, (void)args, (void)n;
  return set_int(2, result);
}

EXPORT int __tvm_ffi_answer(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self, (void)args, (void)n;
  return set_int(42, result);
}
