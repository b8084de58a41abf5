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
  if (TVMFFITensorToDLPackVersioned(h, &mv) != 0) {
    tvmffi_discard_ffi_error();
    return NULL;
  }
  void* out = NULL;
  if (api->managed_tensor_to_py_object_no_sync(mv, &out) != 0 || out == NULL) {
    /* Not taken: the managed tensor is still ours to release. */
    if (mv->deleter != NULL) mv->deleter(mv);
    PyErr_Clear();
    return NULL;
  }
  TVMFFIObjectDecRef(h); /* the framework's tensor holds its own reference */
  return (PyObject*)out;
}

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
