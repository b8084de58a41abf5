/* Test fixture: a module library written against c_api.h only. */
#include <stdint.h>
#include <string.h>
#include <tvm/ffi/c_api.h>

#define EXPORT __attribute__((visibility("default")))

static int set_str(const char* s, TVMFFIAny* result) {
  TVMFFIByteArray arr = {s, strlen(s)};
  return TVMFFIStringFromByteArray(&arr, result);
}

static DLTensor* as_tensor(const TVMFFIAny* a) {
  if (a->type_index == kTVMFFIDLTensorPtr) return (DLTensor*)a->v_ptr;
  if (a->type_index == kTVMFFITensor) return (DLTensor*)((char*)a->v_obj + sizeof(TVMFFIObject));
  return NULL;
}

EXPORT int __tvm_ffi_add_one_f32(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self;
  if (n != 1) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "add_one_f32 expects 1 argument");
    return -1;
  }
  DLTensor* t = as_tensor(&args[0]);
  if (t == NULL) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "add_one_f32 expects a tensor");
    return -1;
  }
  if (t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "add_one_f32 expects float32");
    return -1;
  }
  int64_t count = 1;
  for (int i = 0; i < t->ndim; ++i) count *= t->shape[i];
  float* data = (float*)((char*)t->data + t->byte_offset);
  for (int64_t i = 0; i < count; ++i) data[i] += 1.0f;
  result->type_index = kTVMFFINone;
  result->v_int64 = 0;
  return 0;
}

EXPORT int __tvm_ffi_add_int(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self;
  if (n != 2 || args[0].type_index != kTVMFFIInt || args[1].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "add_int expects (int, int)");
    return -1;
  }
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = args[0].v_int64 + args[1].v_int64;
  return 0;
}

EXPORT int __tvm_ffi__doc_add_int(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self; (void)args; (void)n;
  return set_str("Add two integers.\n\nReturns a + b.", result);
}

EXPORT int __tvm_ffi__metadata_add_int(void* self, const TVMFFIAny* args, int32_t n,
                                       TVMFFIAny* result) {
  (void)self; (void)args; (void)n;
  return set_str("{\"type_schema\": \"{\\\"type\\\":\\\"ffi.Function\\\",\\\"args\\\":"
                 "[{\\\"type\\\":\\\"int\\\"},{\\\"type\\\":\\\"int\\\"},{\\\"type\\\":\\\"int\\\"}]}\","
                 " \"origin\": \"plain.c\"}",
                 result);
}

static const char* kKinds[] = {"ValueError", "TypeError", "RuntimeError", "IndexError",
                               "KeyError", "AttributeError", "NotImplementedError"};

EXPORT int __tvm_ffi_raise_error(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self; (void)result;
  if (n != 1 || args[0].type_index != kTVMFFIInt || args[0].v_int64 < 0 ||
      args[0].v_int64 >= (int64_t)(sizeof(kKinds) / sizeof(kKinds[0]))) {
    TVMFFIErrorSetRaisedFromCStr("ValueError", "raise_error expects a kind index");
    return -1;
  }
  TVMFFIErrorSetRaisedFromCStr(kKinds[args[0].v_int64], "raised from plain.c");
  return -1;
}
