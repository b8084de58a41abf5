/*
 * Tensors -> consumers: tvmffi.Tensor.__dlpack__ (capsules, versioned when
 * the consumer asks for DLPack 1.x) and tvmffi.Tensor's own DLPack C exchange
 * API. The read-only flag known for our tensors is carried into versioned
 * exports (the runtime's export always says writable).
 */
#include "internal.h"

/* ---- exporting: Tensor.__dlpack__ ----------------------------------------------- */
static void capsule_destructor_versioned(PyObject* cap) {
  if (!PyCapsule_IsValid(cap, kCapsuleVersioned)) return; /* consumed */
  DLManagedTensorVersioned* mt = PyCapsule_GetPointer(cap, kCapsuleVersioned);
  if (mt->deleter != NULL) mt->deleter(mt);
}

static void capsule_destructor_legacy(PyObject* cap) {
  if (!PyCapsule_IsValid(cap, kCapsule)) return; /* consumed */
  DLManagedTensor* mt = PyCapsule_GetPointer(cap, kCapsule);
  if (mt->deleter != NULL) mt->deleter(mt);
}

/* A versioned managed tensor sharing `h`, carrying the flags known for it
 * (the runtime's export always says writable). */
static int export_versioned(TVMFFIObjectHandle h, DLManagedTensorVersioned** out) {
  if (TVMFFITensorToDLPackVersioned(h, out) != 0) {
    tvmffi_raise_ffi_error();
    return -1;
  }
  (*out)->flags |= tensor_flags(h) & DLPACK_FLAG_BITMASK_READ_ONLY;
  return 0;
}

/* __dlpack__(stream=None, max_version=None, dl_device=None, copy=None) for
 * the tensor `h` (borrowed). */
PyObject* dlpack_export(TVMFFIObjectHandle h, PyObject* args, PyObject* kwargs) {
  static char* kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOOO:__dlpack__", kwlist, &stream,
                                   &max_version, &dl_device, &copy)) {
    return NULL;
  }
  /* No synchronisation: a Tensor records no pending work or producing stream;
   * kernels that wrote it ran on the environment stream the caller chose. */
  (void)stream;
  const DLTensor* dl = (const DLTensor*)tvmffi_cell(h);
  if (copy != Py_None) {
    int c = PyObject_IsTrue(copy);
    if (c < 0) return NULL;
    if (c) {
      PyErr_SetString(PyExc_BufferError, "tvmffi.Tensor.__dlpack__: copy=True is not supported");
      return NULL;
    }
  }
  if (dl_device != Py_None) {
    int type, id;
    if (!PyArg_ParseTuple(dl_device, "ii;dl_device must be a (device_type, device_id) tuple",
                          &type, &id)) {
      return NULL;
    }
    if (type != (int)dl->device.device_type || id != dl->device.device_id) {
      PyErr_Format(PyExc_BufferError,
                   "tvmffi.Tensor.__dlpack__: cannot export to device (%d, %d); the tensor is "
                   "on (%d, %d) and copies are not supported",
                   type, id, (int)dl->device.device_type, (int)dl->device.device_id);
      return NULL;
    }
  }
  int major = 0, minor = 0;
  if (max_version != Py_None) {
    if (!PyArg_ParseTuple(max_version, "ii;max_version must be a (major, minor) tuple", &major,
                          &minor)) {
      return NULL;
    }
  }
  if (major >= 1) {
    DLManagedTensorVersioned* mt;
    if (export_versioned(h, &mt) != 0) return NULL;
    if (major == DLPACK_MAJOR_VERSION && minor < (int)mt->version.minor) {
      mt->version.minor = (uint32_t)(minor < 0 ? 0 : minor); /* 1.x layouts are identical */
    }
    PyObject* cap = PyCapsule_New(mt, kCapsuleVersioned, capsule_destructor_versioned);
    if (cap == NULL) mt->deleter(mt);
    return cap;
  }
  /* Legacy DLPack has no flags: a read-only tensor exports as writable. */
  DLManagedTensor* mt;
  if (TVMFFITensorToDLPack(h, &mt) != 0) return tvmffi_raise_ffi_error();
  PyObject* cap = PyCapsule_New(mt, kCapsule, capsule_destructor_legacy);
  if (cap == NULL) mt->deleter(mt);
  return cap;
}

/* ---- DLPack C exchange API of tvmffi.Tensor --------------------------------------- */
/* Lets other consumers (e.g. the tvm_ffi binding) import our tensors in C. */
/* The tensor handle of a tvmffi.Tensor handed to the API, or NULL (raised). */
static TVMFFIObjectHandle api_tensor_handle(void* py_obj) {
  PyObject* obj = (PyObject*)py_obj;
  if (is_tensor_object(obj)) return ((TVMFFIPyObject*)obj)->handle;
  PyErr_Format(PyExc_TypeError, "expected a tvmffi.Tensor, got '%.200s'", Py_TYPE(obj)->tp_name);
  return NULL;
}

static int api_managed_from_py(void* py_obj, DLManagedTensorVersioned** out) {
  TVMFFIObjectHandle h = api_tensor_handle(py_obj);
  return h == NULL ? -1 : export_versioned(h, out);
}

static int api_dltensor_from_py(void* py_obj, DLTensor* out) {
  TVMFFIObjectHandle h = api_tensor_handle(py_obj);
  if (h == NULL) return -1;
  *out = *(const DLTensor*)tvmffi_cell(h);
  return 0;
}

static int api_managed_to_py(DLManagedTensorVersioned* mt, void** out) {
  if (mt == NULL) {
    PyErr_SetString(PyExc_ValueError, "managed_tensor_to_py_object_no_sync: no tensor");
    return -1;
  }
  if (dl_check(&mt->dl_tensor, "managed_tensor_to_py_object_no_sync", -1) != 0) {
    release_managed(mt, NULL);
    return -1;
  }
  OwnTensor* h = own_from_managed(mt, NULL, -1);
  if (h == NULL) return -1;
  PyObject* t = tvmffi_object_wrap_owned(h);
  if (t == NULL) return -1;
  *out = t;
  return 0;
}

static int api_current_stream(DLDeviceType device_type, int32_t device_id, void** out) {
  *out = device_type == kDLCPU ? NULL : TVMFFIEnvGetStream(device_type, device_id);
  return 0;
}

static DLPackExchangeAPI g_tensor_api = {
    .header = {.version = {.major = DLPACK_MAJOR_VERSION, .minor = DLPACK_MINOR_VERSION},
               .prev_api = NULL},
    .managed_tensor_allocator = NULL,
    .managed_tensor_from_py_object_no_sync = api_managed_from_py,
    .managed_tensor_to_py_object_no_sync = api_managed_to_py,
    .dltensor_from_py_object_no_sync = api_dltensor_from_py,
    .current_work_stream = api_current_stream,
};

int dlpack_export_init(void) {
  PyObject* api = PyCapsule_New(&g_tensor_api, "dlpack_exchange_api", NULL);
  if (api == NULL) return -1;
  int rc = PyDict_SetItemString(TVMFFITensorType.tp_dict, "__dlpack_c_exchange_api__", api);
  Py_DECREF(api);
  if (rc != 0) return -1;
  PyType_Modified(&TVMFFITensorType);
  return 0;
}
