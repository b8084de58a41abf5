/*
 * The Python DLPack protocol route: anything else with __dlpack__ gives a
 * capsule, versioned when the producer supports it, legacy otherwise;
 * capsules are renamed "used_..." once consumed; __dlpack_device__ is
 * checked against the tensor; errors name the argument.
 *
 * Negative strides: DLPack expresses them (strides are signed), so they pass
 * unchanged; consumers that cannot represent them (torch) reject them.
 */
#include "internal.h"

PyObject* g_str_dlpack;
static PyObject* g_str_dlpack_device;
static PyObject* g_max_version_kwargs; /* {"max_version": (1, 0)} */
static PyObject* g_empty_tuple;

/* ---- the Python DLPack protocol --------------------------------------------- */
/* obj.__dlpack_device__() as a validated device, or 0 when obj has none. */
static int protocol_device(PyObject* obj, Py_ssize_t argpos, DLDevice* dev) {
  PyObject* res = PyObject_CallMethodNoArgs(obj, g_str_dlpack_device);
  if (res == NULL) {
    if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
      PyErr_Clear();
      return 0;
    }
    return wrap_error(argpos, obj, "__dlpack_device__()");
  }
  int rc = -1;
  if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 2 ||
      !PyLong_Check(PyTuple_GET_ITEM(res, 0)) || !PyLong_Check(PyTuple_GET_ITEM(res, 1))) {
    tvmffi_arg_error(PyExc_TypeError, argpos,
              "'%.200s'.__dlpack_device__() returned %R; expected a (device_type, device_id) "
              "tuple of two ints",
              Py_TYPE(obj)->tp_name, res);
  } else {
    long type = PyLong_AsLong(PyTuple_GET_ITEM(res, 0));
    long id = PyLong_AsLong(PyTuple_GET_ITEM(res, 1));
    if (PyErr_Occurred()) {
      PyErr_Clear();
      type = -1;
    }
    if (type < 1 || type > 64 || id < 0 || id > INT32_MAX) {
      tvmffi_arg_error(PyExc_ValueError, argpos,
                "'%.200s'.__dlpack_device__() returned %R, which is not a valid DLPack device",
                Py_TYPE(obj)->tp_name, res);
    } else {
      dev->device_type = (DLDeviceType)type;
      dev->device_id = (int32_t)id;
      rc = 1;
    }
  }
  Py_DECREF(res);
  return rc;
}

/* obj.__dlpack__(**kwargs), with stream=<handle> added when a stream is given. */
static PyObject* call_dlpack(PyObject* method, PyObject* kwargs, void* stream) {
  if (stream == NULL) {
    return kwargs ? PyObject_Call(method, g_empty_tuple, kwargs) : PyObject_CallNoArgs(method);
  }
  PyObject* kw = kwargs ? PyDict_Copy(kwargs) : PyDict_New();
  PyObject* s = PyLong_FromVoidPtr(stream);
  PyObject* res = NULL;
  if (kw != NULL && s != NULL && PyDict_SetItemString(kw, "stream", s) == 0) {
    res = PyObject_Call(method, g_empty_tuple, kw);
  }
  Py_XDECREF(kw);
  Py_XDECREF(s);
  return res;
}

/* A fresh capsule from obj.__dlpack__(): versioned when the producer accepts
 * max_version, legacy otherwise. Sets *versioned. New reference. For a device
 * with streams, the producer is given the environment stream (when one is
 * set) so it can order its pending work before ours, per the array API. */
static PyObject* protocol_capsule(PyObject* obj, Py_ssize_t argpos, const DLDevice* dev,
                                  int* versioned) {
  PyObject* cap;
  if (PyCapsule_CheckExact(obj)) {
    cap = Py_NewRef(obj); /* from_dlpack(capsule) */
  } else {
    void* stream = NULL;
    if (dev != NULL && dev->device_type != kDLCPU) {
      stream = TVMFFIEnvGetStream(dev->device_type, dev->device_id);
    }
    PyObject* method = PyObject_GetAttr(obj, g_str_dlpack);
    if (method == NULL) return wrap_error(argpos, obj, "__dlpack__"), NULL;
    cap = call_dlpack(method, g_max_version_kwargs, stream);
    if (cap == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
      /* A producer older than DLPack 1.0 does not take max_version. */
      PyErr_Clear();
      cap = call_dlpack(method, NULL, stream);
    }
    Py_DECREF(method);
    if (cap == NULL) return wrap_error(argpos, obj, "__dlpack__()"), NULL;
  }
  if (PyCapsule_IsValid(cap, kCapsuleVersioned)) {
    *versioned = 1;
    DLManagedTensorVersioned* mt = PyCapsule_GetPointer(cap, kCapsuleVersioned);
    if (mt->version.major != DLPACK_MAJOR_VERSION) {
      tvmffi_arg_error(PyExc_ValueError, argpos, "'%.200s' produced DLPack version %u.%u; %d.x is needed",
                Py_TYPE(obj)->tp_name, mt->version.major, mt->version.minor,
                DLPACK_MAJOR_VERSION);
      Py_DECREF(cap); /* unconsumed: its destructor releases the tensor */
      return NULL;
    }
    return cap;
  }
  if (PyCapsule_IsValid(cap, kCapsule)) {
    *versioned = 0;
    return cap;
  }
  if (PyCapsule_CheckExact(cap)) {
    const char* name = PyCapsule_GetName(cap);
    PyErr_Clear();
    tvmffi_arg_error(PyExc_ValueError, argpos,
              "'%.200s' gave a PyCapsule named '%s'; expected an unconsumed 'dltensor' or "
              "'dltensor_versioned' capsule",
              Py_TYPE(obj)->tp_name, name ? name : "(null)");
  } else {
    tvmffi_arg_error(PyExc_TypeError, argpos,
              "'%.200s'.__dlpack__() returned '%.200s'; expected a DLPack PyCapsule",
              Py_TYPE(obj)->tp_name, Py_TYPE(cap)->tp_name);
  }
  Py_DECREF(cap);
  return NULL;
}

/* The tensor described by a DLPack capsule (still owned by the capsule). */
static DLTensor* capsule_dl(PyObject* cap, int versioned) {
  if (versioned) {
    return &((DLManagedTensorVersioned*)PyCapsule_GetPointer(cap, kCapsuleVersioned))->dl_tensor;
  }
  return &((DLManagedTensor*)PyCapsule_GetPointer(cap, kCapsule))->dl_tensor;
}

/* Mark a capsule consumed, per the DLPack protocol. */
static void capsule_consume(PyObject* cap, int versioned) {
  PyCapsule_SetName(cap, versioned ? kCapsuleVersionedUsed : kCapsuleUsed);
}

/* ---- torch without the exchange API: its C-level export -------------------- */
/* torch.Tensor.__dlpack__ and __dlpack_device__ are Python methods (~4 us a
 * tensor together) and __dlpack__ refuses tensors that require grad; the
 * function behind torch.utils.dlpack.to_dlpack, torch._C._to_dlpack_versioned
 * (or _to_dlpack before it existed), exports any tensor in ~0.2 us, as the
 * official binding uses it. For an exact torch.Tensor only, and only where no
 * stream is to be handed over (it takes none): a device tensor while an
 * environment stream is set goes through __dlpack__(stream=...). */
static PyObject* g_torch_export; /* the function, Py_None once known absent, NULL: not looked up */

static PyObject* torch_export_fn(void) {
  PyObject* known = TVMFFI_LOAD_PTR(g_torch_export);
  if (known != NULL) return known == Py_None ? NULL : known;
  PyObject* c = PyImport_ImportModule("torch._C");
  PyObject* fn = NULL;
  if (c != NULL) {
    fn = PyObject_GetAttrString(c, "_to_dlpack_versioned");
    if (fn == NULL) {
      PyErr_Clear();
      fn = PyObject_GetAttrString(c, "_to_dlpack");
    }
    Py_DECREF(c);
  }
  PyErr_Clear();
  PyObject* found = fn != NULL && PyCallable_Check(fn) ? fn : Py_NewRef(Py_None);
  if (found == Py_None) Py_XDECREF(fn);
  found = tvmffi_publish_once(&g_torch_export, found); /* another thread's, if first */
  return found == Py_None ? NULL : found;
}

/* A capsule of an exact torch.Tensor from torch's C-level export, or NULL
 * with no error set when that route does not apply (then the protocol runs). */
static PyObject* torch_capsule(PyObject* obj, Py_ssize_t argpos, int* versioned) {
  PyObject* fn = Py_TYPE(obj) == g_torch_tensor_type ? torch_export_fn() : NULL;
  if (fn == NULL) return NULL;
  PyObject* raw = PyObject_CallOneArg(fn, obj);
  if (raw == NULL) return wrap_error(argpos, obj, "torch DLPack export"), NULL;
  PyObject* cap = protocol_capsule(raw, argpos, NULL, versioned); /* checks it as a capsule */
  Py_DECREF(raw);
  if (cap == NULL) return NULL;
  DLDevice dev = capsule_dl(cap, *versioned)->device;
  if (dev.device_type != kDLCPU && TVMFFIEnvGetStream(dev.device_type, dev.device_id) != NULL) {
    Py_DECREF(cap); /* unconsumed: its destructor releases the tensor */
    return NULL;
  }
  return cap;
}

/* Capsule for obj (torch's C-level export, or the protocol), checked, and
 * checked against obj.__dlpack_device__() when the protocol gave it. */
static PyObject* protocol_checked_capsule(PyObject* obj, Py_ssize_t argpos, int* versioned) {
  DLDevice dev = {kDLCPU, 0};
  int has_dev = 0;
  PyObject* cap = torch_capsule(obj, argpos, versioned);
  if (cap == NULL) {
    if (PyErr_Occurred()) return NULL;
    has_dev = PyCapsule_CheckExact(obj) ? 0 : protocol_device(obj, argpos, &dev);
    if (has_dev < 0) return NULL;
    cap = protocol_capsule(obj, argpos, has_dev ? &dev : NULL, versioned);
    if (cap == NULL) return NULL;
  }
  DLTensor* dl = capsule_dl(cap, *versioned);
  if (dl_check(dl, Py_TYPE(obj)->tp_name, argpos) != 0) {
    Py_DECREF(cap); /* unconsumed: its destructor releases the tensor */
    return NULL;
  }
  if (has_dev && (dl->device.device_type != dev.device_type ||
                  dl->device.device_id != dev.device_id)) {
    tvmffi_arg_error(PyExc_ValueError, argpos,
              "'%.200s'.__dlpack_device__() reports (%d, %d) but its DLPack tensor is on "
              "(%d, %d)",
              Py_TYPE(obj)->tp_name, (int)dev.device_type, (int)dev.device_id,
              (int)dl->device.device_type, (int)dl->device.device_id);
    Py_DECREF(cap);
    return NULL;
  }
  return cap;
}

/* The managed tensor of a capsule from obj.__dlpack__() (or of the capsule
 * `obj` itself), which is marked consumed: exactly one of *mv (versioned) and
 * *ml (legacy) is set, now owned by the caller. */
static int protocol_take(PyObject* obj, Py_ssize_t argpos, DLManagedTensorVersioned** mv,
                  DLManagedTensor** ml) {
  int versioned;
  PyObject* cap = protocol_checked_capsule(obj, argpos, &versioned);
  if (cap == NULL) return -1;
  *mv = versioned ? PyCapsule_GetPointer(cap, kCapsuleVersioned) : NULL;
  *ml = versioned ? NULL : PyCapsule_GetPointer(cap, kCapsule);
  capsule_consume(cap, versioned); /* ownership passes to the caller */
  Py_DECREF(cap);
  return 0;
}

/* Tensor object owning the tensor taken by protocol_take. */
OwnTensor* protocol_tensor(PyObject* obj, Py_ssize_t argpos) {
  DLManagedTensorVersioned* mv;
  DLManagedTensor* ml;
  if (protocol_take(obj, argpos, &mv, &ml) != 0) return NULL;
  return own_from_managed(mv, ml, argpos);
}

int capsule_init(void) {
  g_str_dlpack = PyUnicode_InternFromString("__dlpack__");
  g_str_dlpack_device = PyUnicode_InternFromString("__dlpack_device__");
  g_max_version_kwargs = Py_BuildValue("{s(ii)}", "max_version", 1, 0);
  g_empty_tuple = PyTuple_New(0);
  if (g_str_dlpack == NULL || g_str_dlpack_device == NULL || g_max_version_kwargs == NULL ||
      g_empty_tuple == NULL) {
    return -1;
  }
  return 0;
}
