/* Call an FFI function symbol N times with prepared arguments, for instruction counts.
 *
 * Usage: codegen_driver LIB SYMBOL N MODE
 *   SYMBOL  the exported __tvm_ffi_<name> symbol; it must take (Tensor, Tensor, Tensor,
 *           float32) over 1-d float32 CPU tensors of 64 elements.
 *   MODE    "ptr": tensors passed as DLTensor* (kTVMFFIDLTensorPtr);
 *           "obj": passed as Tensor objects (kTVMFFITensor).
 * The "obj" mode lays a DLTensor right after a TVMFFIObject header, which is
 * where the runtime's Tensor keeps it; callees only read it (no reference
 * counting happens on borrowed arguments), so no runtime allocation is needed.
 *
 * Run under `valgrind --tool=callgrind --toggle-collect=SYMBOL` to count the
 * instructions spent inside the function only (benchmarks/bench_codegen.py does).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tvm/ffi/c_api.h>

typedef struct {
  TVMFFIObject header;
  DLTensor tensor;
} FakeTensorObject;

static float g_data[3][64];
static int64_t g_shape[1] = {64};
static int64_t g_strides[1] = {1};
static FakeTensorObject g_objects[3];

static void prepare(TVMFFIAny* args, int as_objects) {
  for (int i = 0; i < 3; ++i) {
    DLTensor* t = &g_objects[i].tensor;
    t->data = g_data[i];
    t->device.device_type = kDLCPU;
    t->device.device_id = 0;
    t->ndim = 1;
    t->dtype.code = kDLFloat;
    t->dtype.bits = 32;
    t->dtype.lanes = 1;
    t->shape = g_shape;
    t->strides = g_strides;
    t->byte_offset = 0;
    g_objects[i].header.type_index = kTVMFFITensor;
    g_objects[i].header.combined_ref_count = 1;
    memset(&args[i], 0, sizeof(TVMFFIAny));
    if (as_objects) {
      args[i].type_index = kTVMFFITensor;
      args[i].v_obj = &g_objects[i].header;
    } else {
      args[i].type_index = kTVMFFIDLTensorPtr;
      args[i].v_ptr = t;
    }
  }
  memset(&args[3], 0, sizeof(TVMFFIAny));
  args[3].type_index = kTVMFFIFloat;
  args[3].v_float64 = 0.5;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s LIB SYMBOL N ptr|obj\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  TVMFFISafeCallType fn = (TVMFFISafeCallType)(uintptr_t)dlsym(lib, argv[2]);
  if (fn == NULL) {
    fprintf(stderr, "dlsym %s: %s\n", argv[2], dlerror());
    return 1;
  }
  long n = strtol(argv[3], NULL, 10);
  TVMFFIAny args[4];
  prepare(args, strcmp(argv[4], "obj") == 0);
  for (long i = 0; i < n; ++i) {
    TVMFFIAny result;
    result.type_index = kTVMFFINone;
    result.zero_padding = 0;
    result.v_int64 = 0;
    if (fn(NULL, args, 4, &result) != 0) {
      fprintf(stderr, "call %ld failed\n", i);
      return 1;
    }
  }
  printf("%ld calls ok\n", n);
  return 0;
}
