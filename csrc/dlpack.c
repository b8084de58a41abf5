/*
 * Producers -> tensors: DLPack imports.
 *
 *   - types with a DLPack C exchange API (__dlpack_c_exchange_api__): for
 *     torch.Tensor its non-owning DLTensor fill, the Tensor object holding a
 *     reference to the torch tensor; for others their managed export; for tensors
 *     on a device with streams, the producer's current stream becomes the
 *     environment stream for the call unless use_stream() is active (see
 *     tensor_from_py.c);
 *   - anything else with __dlpack__: the Python protocol, versioned capsule
 *     when the producer supports it, legacy otherwise; capsules are renamed
 *     "used_..." once consumed; __dlpack_device__ is checked against the
 *     tensor; errors name the argument.
 *
 * Negative strides: DLPack expresses them (strides are signed), so they pass
 * unchanged; consumers that cannot represent them (torch) reject them.
 */
#include "tensor_internal.h"

#include <dlfcn.h>
#include <string.h>

PyObject* g_str_dlpack;
static PyObject* g_str_dlpack_device;
static PyObject* g_max_version_kwargs; /* {"max_version": (1, 0)} */
static PyObject* g_empty_tuple;

/* ---- what a producer's tensor description may say ----------------------------- */
/* The DLDeviceType values of dlpack.h (1-4, 7-18), one bit each. */
#define KNOWN_DEVICE_TYPES ((((uint32_t)1 << 19) - 1) & ~(uint32_t)((1 << 0) | (1 << 5) | (1 << 6)))

/* What is wrong with a producer's DLTensor header (device, dtype, rank, the
 * shape pointer), or NULL when its arrays may be read. Every value is the
 * producer's word, and a lie (ndim < 0, shape NULL, a billion dimensions)
 * would otherwise be read as memory. Strides may be NULL (compact); the data
 * pointer is the producer's to answer for. */
static inline const char* dl_header_fault(const DLTensor* dl) {
  uint32_t dev = (uint32_t)dl->device.device_type;
  if (dev >= 32 || !((KNOWN_DEVICE_TYPES >> dev) & 1) || dl->device.device_id < 0) {
    return "unknown device";
  }
  if (dl->dtype.code > kDLFloat4_e2m1fn || dl->dtype.bits == 0 || dl->dtype.lanes == 0) {
    return "unknown dtype";
  }
  if ((uint32_t)dl->ndim > DL_MAX_NDIM) return "ndim out of range";
  if (dl->ndim > 0 && dl->shape == NULL) return "no shape";
  return NULL;
}

/* The extents must be >= 0 and the element count (empty dimensions counted as
 * 1, as compact strides multiply them) must fit int64_t. Copies the shape to
 * `to` on the way when it is not NULL. */
static inline const char* dl_shape_fault(const DLTensor* dl, int64_t* to) {
  int64_t count = 1;
  for (int i = 0; i < dl->ndim; ++i) {
    int64_t d = dl->shape[i];
    if (d < 0) return "negative shape";
    if (__builtin_mul_overflow(count, d > 0 ? d : 1, &count)) return "shape too large";
    if (to != NULL) to[i] = d;
  }
  return NULL;
}

static inline const char* dl_fault(const DLTensor* dl) {
  const char* what = dl_header_fault(dl);
  return what != NULL ? what : dl_shape_fault(dl, NULL);
}

static Py_NO_INLINE int dl_error(const DLTensor* dl, const char* what, const char* producer,
                                 Py_ssize_t argpos) {
  return tvmffi_arg_error(PyExc_ValueError, argpos,
                          "'%.200s' gave an invalid DLPack tensor (%s: ndim %d, device (%d, %d), "
                          "dtype code %u bits %u lanes %u)",
                          producer, what, (int)dl->ndim, (int)dl->device.device_type,
                          (int)dl->device.device_id, (unsigned)dl->dtype.code,
                          (unsigned)dl->dtype.bits, (unsigned)dl->dtype.lanes);
}

int dl_check(const DLTensor* dl, const char* producer, Py_ssize_t argpos) {
  const char* what = dl_fault(dl);
  return what == NULL ? 0 : dl_error(dl, what, producer, argpos);
}

/* ---- DLPack C exchange API (__dlpack_c_exchange_api__ on the type) ---------- */
/* The attribute is a PyCapsule named "dlpack_exchange_api" (dlpack.h). Any
 * other value (an int would be an address nobody vouches for) is ignored: the
 * type then converts through its Python __dlpack__, if it has one. */
const DLPackExchangeAPI* lookup_exchange_api(PyTypeObject* tp) {
  PyObject* attr = PyObject_GetAttrString((PyObject*)tp, "__dlpack_c_exchange_api__");
  if (attr == NULL) {
    PyErr_Clear();
    return NULL;
  }
  const DLPackExchangeAPI* api = NULL;
  if (PyCapsule_IsValid(attr, "dlpack_exchange_api")) {
    api = PyCapsule_GetPointer(attr, "dlpack_exchange_api");
  }
  PyErr_Clear();
  Py_DECREF(attr);
  if (api == NULL || api->header.version.major != DLPACK_MAJOR_VERSION ||
      api->managed_tensor_from_py_object_no_sync == NULL) {
    return NULL;
  }
  return api;
}

/* The shared object that `addr` lies in, or NULL. */
static const char* library_of(const void* addr, void** base) {
  Dl_info info;
  if (dladdr(addr, &info) == 0 || info.dli_fname == NULL) return NULL;
  *base = info.dli_fbase;
  return info.dli_fname;
}

int exchange_api_is_torchs(const DLPackExchangeAPI* api) {
  void *struct_base, *fill_base;
  const char* lib = library_of(api, &struct_base);
  if (lib == NULL || api->dltensor_from_py_object_no_sync == NULL ||
      library_of((const void*)(uintptr_t)api->dltensor_from_py_object_no_sync, &fill_base) == NULL ||
      fill_base != struct_base) {
    return 0;
  }
  const char* name = strrchr(lib, '/');
  name = name != NULL ? name + 1 : lib;
  return strncmp(name, "libtorch_python.", strlen("libtorch_python.")) == 0;
}

/* ---- torch's lazy conjugate and negative bits ---------------------------------- */
/* torch.Tensor.is_conj / is_neg as unbound methods, called without lookups. */
static PyObject* g_torch_is_conj;
static PyObject* g_torch_is_neg;

static int torch_bit(PyObject* obj, PyObject** method, const char* name) {
  if (*method == NULL) {
    /* torch.Tensor's own method: a subclass may override it. */
    *method = PyObject_GetAttrString((PyObject*)g_torch_tensor_type, name);
    if (*method == NULL) return -1;
  }
  PyObject* r = PyObject_Vectorcall(*method, &obj, 1, NULL);
  if (r == NULL) return -1;
  int set = PyObject_IsTrue(r);
  Py_DECREF(r);
  return set;
}

/* A torch tensor whose conjugate or negative bit is set means values its
 * memory does not hold (conj(x), -x); DLPack has no such flags, so passing the
 * memory would hand the callee wrong values. Refused, as torch's own
 * __dlpack__ refuses the conjugate bit (the official binding drops both). */
int torch_ask_lazy_bits(PyObject* obj, const DLTensor* dl, Py_ssize_t argpos) {
  int conj = dl->dtype.code == kDLComplex ? torch_bit(obj, &g_torch_is_conj, "is_conj") : 0;
  int neg = conj == 0 ? torch_bit(obj, &g_torch_is_neg, "is_neg") : 0;
  if (conj < 0 || neg < 0) return wrap_error(argpos, obj, "is_conj()/is_neg()");
  if (conj || neg) {
    return tvmffi_arg_error(PyExc_ValueError, argpos,
                            "torch.Tensor with the %s bit set cannot be passed: DLPack cannot "
                            "carry it and the callee would read wrong values; call %s first",
                            conj ? "conjugate" : "negative",
                            conj ? ".resolve_conj()" : ".resolve_neg()");
  }
  return 0;
}

/* A producer's non-owning DLTensor fill (see exchange_fills), checked. */
int exchange_fill(PyObject* obj, const TypeEntry* e, Py_ssize_t argpos, DLTensor* dl) {
  if (e->api->dltensor_from_py_object_no_sync(obj, dl) != 0) {
    return wrap_error(argpos, obj, "DLPack export");
  }
  if (dl_check(dl, Py_TYPE(obj)->tp_name, argpos) != 0) return -1;
  return e->is_torch ? torch_check_lazy_bits(obj, dl, argpos) : 0;
}

/* A Tensor object describing a producer's DLTensor, checked as dl_check
 * does in the pass that copies its shape. */
static OwnTensor* own_from_checked(const DLTensor* dl, PyObject* owner, Py_ssize_t argpos) {
  const char* what = dl_header_fault(dl);
  if (what != NULL) {
    dl_error(dl, what, Py_TYPE(owner)->tp_name, argpos);
    return NULL;
  }
  OwnTensor* t = own_new(dl->ndim, owner);
  if (t == NULL) return NULL;
  if ((what = dl_shape_fault(dl, t->storage)) != NULL) {
    own_deleter(t, kTVMFFIObjectDeleterFlagBitMaskBoth);
    dl_error(dl, what, Py_TYPE(owner)->tp_name, argpos);
    return NULL;
  }
  own_describe_rest(t, dl);
  return t;
}

/* The same for torch's own fill of its own tensor (TypeEntry.trusted): torch
 * describes a tensor it holds, so only what our own copy relies on (the rank
 * and the shape pointer) is looked at. */
static OwnTensor* own_from_trusted(const DLTensor* dl, PyObject* owner, Py_ssize_t argpos) {
  if ((uint32_t)dl->ndim > DL_MAX_NDIM || (dl->ndim > 0 && dl->shape == NULL)) {
    return own_from_checked(dl, owner, argpos); /* reports it */
  }
  return own_from_dl(dl, owner, 0);
}

/* A framework tensor's non-owning DLTensor fill (see exchange_fills) as a
 * Tensor object that keeps the framework tensor alive. */
OwnTensor* exchange_fill_tensor(PyObject* obj, const TypeEntry* e, Py_ssize_t argpos) {
  DLTensor dl;
  if (e->api->dltensor_from_py_object_no_sync(obj, &dl) != 0) {
    wrap_error(argpos, obj, "DLPack export");
    return NULL;
  }
  OwnTensor* t = e->trusted ? own_from_trusted(&dl, obj, argpos) : own_from_checked(&dl, obj, argpos);
  if (t == NULL) return NULL;
  if (e->is_torch && torch_check_lazy_bits(obj, &t->dl, argpos) != 0) {
    own_deleter(t, kTVMFFIObjectDeleterFlagBitMaskBoth);
    return NULL;
  }
  t->exchange_fill = 1;
  return t;
}

/* A producer's managed export, now owned by the caller. */
int exchange_managed(PyObject* obj, const TypeEntry* e, Py_ssize_t argpos,
                     DLManagedTensorVersioned** mv) {
  if (e->api->managed_tensor_from_py_object_no_sync(obj, mv) != 0) {
    return wrap_error(argpos, obj, "DLPack export");
  }
  if (*mv == NULL) {
    return tvmffi_arg_error(PyExc_ValueError, argpos, "'%.200s' exported no DLPack tensor",
                            Py_TYPE(obj)->tp_name);
  }
  if (dl_check(&(*mv)->dl_tensor, Py_TYPE(obj)->tp_name, argpos) != 0 ||
      (e->is_torch && torch_check_lazy_bits(obj, &(*mv)->dl_tensor, argpos) != 0)) {
    release_managed(*mv, NULL);
    *mv = NULL;
    return -1;
  }
  return 0;
}

/* Tensor object from a producer's DLPack C exchange API. For torch, whose
 * Python tensor owns its TensorImpl and storage, the non-owning DLTensor fill
 * plus a reference to the Python tensor keeps the data alive exactly as long
 * as the managed export would (which holds the same TensorImpl), with ~30%
 * fewer instructions and no allocation inside torch (measured: echo(torch)
 * ~10% and nop() of three distinct torch tensors ~15% faster, the same tensor
 * three times even). Other producers only promise the fill until control
 * returns, so they go through their managed export. */
OwnTensor* exchange_tensor(PyObject* obj, const TypeEntry* e, Py_ssize_t argpos) {
  if (exchange_fills(e)) return exchange_fill_tensor(obj, e, argpos);
  DLManagedTensorVersioned* mv;
  if (exchange_managed(obj, e, argpos, &mv) != 0) return NULL;
  return own_from_managed(mv, NULL, argpos);
}

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

/* Capsule for obj, checked against obj.__dlpack_device__(). */
static PyObject* protocol_checked_capsule(PyObject* obj, Py_ssize_t argpos, int* versioned) {
  DLDevice dev = {kDLCPU, 0};
  int has_dev = PyCapsule_CheckExact(obj) ? 0 : protocol_device(obj, argpos, &dev);
  if (has_dev < 0) return NULL;
  PyObject* cap = protocol_capsule(obj, argpos, has_dev ? &dev : NULL, versioned);
  if (cap == NULL) return NULL;
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
int protocol_take(PyObject* obj, Py_ssize_t argpos, DLManagedTensorVersioned** mv,
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

int dlpack_init(void) {
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
