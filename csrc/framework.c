/*
 * A call's DLPack C exchange API: frameworks get their own tensors back.
 *
 * When a call's tensor arguments came through a framework's DLPack C exchange
 * API (torch.Tensor.__dlpack_c_exchange_api__), or one of its arguments is a
 * container returned by such a call, the call records that API in its
 * TempList (one pointer, set while packing: no per-call lookups). Then, as the
 * official binding does:
 *   - the framework's managed_tensor_allocator is the environment allocator
 *     while the callee runs (TVMFFIEnvTensorAlloc allocates framework tensors),
 *     and the previous allocator is restored afterwards;
 *   - a Tensor result comes back as the framework's tensor
 *     (managed_tensor_to_py_object_no_sync), zero copy;
 *   - an Array/List/Map/Dict result remembers the API, so its tensor elements
 *     come back as the framework's tensors too, and passing it to another
 *     call carries the API into that call.
 * The API pointer is process-lifetime (DLPack spec), so holding it raw is safe.
 * torch tensors that came through the Python protocol (a torch without an
 * exchange API) record a fallback API that only converts results back.
 */
#include "core.h"

int tvmffi_framework_enter(const DLPackExchangeAPI* api, DLPackManagedTensorAllocator* prev,
                           int* restore) {
  *restore = 0;
  if (api->managed_tensor_allocator == NULL) return 0;
  if (TVMFFIEnvSetDLPackManagedTensorAllocator(api->managed_tensor_allocator, 0, prev) != 0) {
    tvmffi_raise_ffi_error();
    return -1;
  }
  *restore = *prev != api->managed_tensor_allocator;
  return 0;
}

int tvmffi_framework_leave(DLPackManagedTensorAllocator prev) {
  if (TVMFFIEnvSetDLPackManagedTensorAllocator(prev, 0, NULL) != 0) {
    tvmffi_raise_ffi_error();
    return -1;
  }
  return 0;
}

/* The framework's tensor sharing the Tensor `h` (owned; released on success),
 * or NULL without an exception when the framework cannot take it: the caller
 * then keeps `h` and returns it as a tvmffi.Tensor, as the official binding
 * falls back. */
static PyObject* framework_tensor(TVMFFIObjectHandle h, const DLPackExchangeAPI* api) {
  DLManagedTensorVersioned* mv;
  if (api->managed_tensor_to_py_object_no_sync == NULL) return NULL; /* an API without the way back */
  if (TVMFFITensorToDLPackVersioned(h, &mv) != 0) {
    tvmffi_discard_ffi_error();
    return NULL;
  }
  void* out = NULL;
  if (api->managed_tensor_to_py_object_no_sync(mv, &out) != 0) {
    /* Not taken: the managed tensor is still ours to release. */
    if (mv->deleter != NULL) mv->deleter(mv);
    PyErr_Clear();
    return NULL;
  }
  if (out == NULL) { /* taken, but no tensor came back: keep `h` as ours */
    PyErr_Clear();
    return NULL;
  }
  TVMFFIObjectDecRef(h); /* the framework's tensor holds its own reference */
  return (PyObject*)out;
}

/* ---- torch without an exchange API (torch < 2.10, no torch-c-dlpack-ext) ------- */
/* Tensors still go back to torch, as the official binding's fallback does:
 * through torch.from_dlpack on a versioned capsule. The capsule has no
 * destructor: torch owns the tensor once it took it; if it did not, the
 * caller (framework_tensor) releases it, exactly once. No allocator. */
static int torch_fallback_to_py(DLManagedTensorVersioned* mv, void** out) {
  PyObject* torch = PyImport_ImportModule("torch");
  PyObject* from_dlpack = torch != NULL ? PyObject_GetAttrString(torch, "from_dlpack") : NULL;
  Py_XDECREF(torch);
  PyObject* cap = from_dlpack != NULL ? PyCapsule_New(mv, "dltensor_versioned", NULL) : NULL;
  PyObject* res = cap != NULL ? PyObject_CallOneArg(from_dlpack, cap) : NULL;
  int taken = cap != NULL && PyCapsule_IsValid(cap, "used_dltensor_versioned");
  Py_XDECREF(cap);
  Py_XDECREF(from_dlpack);
  if (!taken) {
    Py_XDECREF(res);
    return -1; /* still the caller's to release */
  }
  *out = res; /* NULL if torch failed after taking it: then torch releases it */
  return 0;
}

static const DLPackExchangeAPI g_torch_fallback = {
    .header = {.version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION}, .prev_api = NULL},
    .managed_tensor_allocator = NULL,
    .managed_tensor_from_py_object_no_sync = NULL,
    .managed_tensor_to_py_object_no_sync = torch_fallback_to_py,
    .dltensor_from_py_object_no_sync = NULL,
    .current_work_stream = NULL,
};

const DLPackExchangeAPI* tvmffi_torch_fallback_api(void) { return &g_torch_fallback; }

static int is_container_index(int32_t type_index) {
  return type_index == kTVMFFIArray || type_index == kTVMFFIList || type_index == kTVMFFIMap ||
         type_index == kTVMFFIDict;
}

PyObject* tvmffi_any_to_py_framework(TVMFFIAny* value, const DLPackExchangeAPI* api) {
  int32_t type_index = value->type_index;
  if (type_index == kTVMFFITensor && api->managed_tensor_to_py_object_no_sync != NULL) {
    PyObject* t = framework_tensor(value->v_obj, api);
    if (t != NULL) return t;
  }
  PyObject* res = tvmffi_any_to_py_owned(value);
  if (res != NULL && is_container_index(type_index) && tvmffi_is_object(res)) {
    ((TVMFFIPyObject*)res)->dlpack_api = api;
  }
  return res;
}
