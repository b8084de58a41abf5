/* Test fixture: a library that exports no __tvm_ffi_ symbol and only
 * registers a global function from a static initializer, as fftvm's extension
 * and libtvm_ffi_orcjit.so do. Its code must stay loaded while the global may
 * be called. */
#include <tvm/ffi/c_api.h>

static int add_two(void* self, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* result) {
  (void)self;
  if (nargs != 1 || args[0].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "static_init_fixture.add_two expects one int");
    return -1;
  }
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = args[0].v_int64 + 2;
  return 0;
}

__attribute__((constructor)) static void register_add_two(void) {
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionCreate(NULL, add_two, NULL, &f) != 0) return;
  static const char name[] = "static_init_fixture.add_two";
  TVMFFIByteArray ba = {name, sizeof(name) - 1};
  TVMFFIFunctionSetGlobal(&ba, f, 1);
  TVMFFIObjectDecRef(f);
}
