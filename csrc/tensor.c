/*
 * Tensors and DLPack.
 *
 *   tvmffi.Tensor      the runtime's reference-counted tensor (type index
 *                      kTVMFFITensor), an Object subclass; DLPack producer.
 *   tvmffi.TensorView  a borrowed DLTensor (passed as kTVMFFIDLTensorPtr) that
 *                      keeps whatever its source handed out alive.
 *
 * Python objects become tensors by the cheapest route that is still safe:
 *   - numpy.ndarray: data/shape/strides/descr read from the array (see the
 *     NumPy section; the buffer protocol is the fallback), the dtype cached
 *     per descr, and the Tensor object holds a reference to the array; no
 *     capsule;
 *   - types with a DLPack C exchange API (__dlpack_c_exchange_api__): for
 *     torch.Tensor its non-owning DLTensor fill, the Tensor object holding a
 *     reference to the torch tensor; for others their managed export; for tensors
 *     on a device with streams, the producer's current stream becomes the
 *     environment stream for the call unless use_stream() is active;
 *   - anything else with __dlpack__: the Python protocol, versioned capsule
 *     when the producer supports it, legacy otherwise; capsules are renamed
 *     "used_..." once consumed; __dlpack_device__ is checked against the
 *     tensor; errors name the argument.
 * Each route ends in ONE Tensor object built here (see OwnTensor), so the
 * callee gets a Tensor object that owns a reference to its source, and the
 * DLPack read-only flag travels with it to every later export.
 *
 * Negative strides: DLPack expresses them (strides are signed), so they pass
 * unchanged; consumers that cannot represent them (torch) reject them.
 */
#include "core.h"

#include <stddef.h>
#include <string.h>

PyTypeObject* tvmffi_numpy_ndarray_type;
static PyTypeObject* g_torch_tensor_type;
static PyObject* g_str_dtype;
static PyObject* g_str_isnative;
static PyObject* g_str_dlpack;
static PyObject* g_str_dlpack_device;
static PyObject* g_max_version_kwargs; /* {"max_version": (1, 0)} */
static PyObject* g_empty_tuple;

static const char* const kCapsule = "dltensor";
static const char* const kCapsuleUsed = "used_dltensor";
static const char* const kCapsuleVersioned = "dltensor_versioned";
static const char* const kCapsuleVersionedUsed = "used_dltensor_versioned";

/* ---- small helpers ------------------------------------------------------------ */
/* Copy shape and strides (compact when NULL) into storage[0, 2*ndim). */
static void copy_shape_strides(const DLTensor* src, int64_t* storage) {
  int n = src->ndim;
  memcpy(storage, src->shape, sizeof(int64_t) * (size_t)n);
  if (src->strides != NULL) {
    memcpy(storage + n, src->strides, sizeof(int64_t) * (size_t)n);
  } else {
    int64_t s = 1;
    for (int i = n - 1; i >= 0; --i) {
      storage[n + i] = s;
      s *= src->shape[i];
    }
  }
}

static PyObject* fetch_exception(void) {
#if PY_VERSION_HEX >= 0x030C0000
  return PyErr_GetRaisedException();
#else
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (value != NULL && tb != NULL) PyException_SetTraceback(value, tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  return value;
#endif
}

/* Replace the pending exception by one that names the argument: TypeError
 * stays TypeError, other Exceptions become ValueError; the original is kept as
 * __cause__. MemoryError and non-Exception exceptions pass through. */
static int wrap_error(Py_ssize_t argpos, PyObject* obj, const char* what) {
  if (!PyErr_ExceptionMatches(PyExc_Exception) || PyErr_ExceptionMatches(PyExc_MemoryError)) {
    return -1;
  }
  PyObject* exc = fetch_exception();
  if (exc == NULL) return -1;
  PyObject* cls = PyObject_TypeCheck(exc, (PyTypeObject*)PyExc_TypeError) ? PyExc_TypeError
                                                                            : PyExc_ValueError;
  PyObject* msg;
  if (argpos >= 0) {
    msg = PyUnicode_FromFormat("argument %zd: %s of '%.200s' failed: %.200s: %S", argpos, what,
                               Py_TYPE(obj)->tp_name, Py_TYPE(exc)->tp_name, exc);
  } else {
    msg = PyUnicode_FromFormat("%s of '%.200s' failed: %.200s: %S", what, Py_TYPE(obj)->tp_name,
                               Py_TYPE(exc)->tp_name, exc);
  }
  PyObject* new_exc = msg ? PyObject_CallOneArg(cls, msg) : NULL;
  Py_XDECREF(msg);
  if (new_exc == NULL) {
    Py_DECREF(exc);
    return -1;
  }
  PyException_SetCause(new_exc, exc); /* steals exc */
  PyErr_SetObject(cls, new_exc);
  Py_DECREF(new_exc);
  return -1;
}

/* Raise `cls` with a message prefixed by the argument position. */
static int arg_error(PyObject* cls, Py_ssize_t argpos, const char* fmt, ...) {
  va_list va;
  va_start(va, fmt);
  PyObject* msg = PyUnicode_FromFormatV(fmt, va);
  va_end(va);
  if (msg == NULL) return -1;
  if (argpos >= 0) {
    PyErr_Format(cls, "argument %zd: %U", argpos, msg);
  } else {
    PyErr_SetObject(cls, msg);
  }
  Py_DECREF(msg);
  return -1;
}

/* ---- known array types (resolved once their module is imported) --------------- */
static PyTypeObject* module_type(const char* module, const char* name) {
  PyObject* mod = PyDict_GetItemString(PyImport_GetModuleDict(), module); /* borrowed */
  if (mod == NULL) return NULL;
  PyObject* tp = PyObject_GetAttrString(mod, name);
  if (tp == NULL || !PyType_Check(tp)) {
    PyErr_Clear();
    Py_XDECREF(tp);
    return NULL;
  }
  return (PyTypeObject*)tp; /* kept for the life of the process */
}

static void refresh_known_types(void) {
  if (tvmffi_numpy_ndarray_type == NULL) tvmffi_numpy_ndarray_type = module_type("numpy", "ndarray");
  if (g_torch_tensor_type == NULL) g_torch_tensor_type = module_type("torch", "Tensor");
}

static int is_ndarray_type(PyTypeObject* tp) {
  if (tvmffi_numpy_ndarray_type == NULL) refresh_known_types();
  return tvmffi_numpy_ndarray_type != NULL && PyType_IsSubtype(tp, tvmffi_numpy_ndarray_type);
}

static int is_torch_type(PyTypeObject* tp) {
  if (g_torch_tensor_type == NULL) refresh_known_types();
  return g_torch_tensor_type != NULL && PyType_IsSubtype(tp, g_torch_tensor_type);
}

int tvmffi_is_tensor_type(PyTypeObject* tp) {
  refresh_known_types();
  if (PyType_IsSubtype(tp, &TVMFFITensorViewType)) return 1;
  PyObject* attr = PyObject_GetAttr((PyObject*)tp, g_str_dlpack);
  if (attr == NULL) {
    PyErr_Clear();
    return 0;
  }
  Py_DECREF(attr);
  return 1;
}

/* ---- Tensor objects built here ------------------------------------------------ */
/* A runtime Tensor (type index kTVMFFITensor) made in ONE allocation: the C
 * ABI's object header, the DLTensor that follows it in every Tensor object
 * (the runtime's TensorObj is exactly header + DLTensor), then what keeps the
 * data alive and the shape and strides. Callees, the runtime and other
 * bindings see an ordinary Tensor: they read the DLTensor, retain and release
 * through the header's reference count and destroy through our deleter.
 * Compared with handing a managed tensor to TVMFFITensorFromDLPackVersioned,
 * this saves the managed tensor and the runtime's second object per argument,
 * and it keeps the DLPack flags (read-only), which the runtime's Tensor drops. */
typedef struct {
  TVMFFIObject header;
  DLTensor dl;
  PyObject* owner;              /* Python object keeping the data alive, or NULL */
  DLManagedTensorVersioned* mv; /* consumed producer tensor released with us, or NULL */
  DLManagedTensor* ml;          /* same, legacy DLPack */
  uint64_t flags;               /* DLPACK_FLAG_BITMASK_* that hold for the data */
  int py_alloc;                 /* memory from PyObject_Malloc (freed under the GIL) */
  int64_t storage[];            /* shape, then strides */
} OwnTensor;

_Static_assert(offsetof(OwnTensor, dl) == sizeof(TVMFFIObject),
               "the DLTensor must follow the object header, as in the runtime's TensorObj");

/* Runs wherever the last reference goes away, maybe in a thread without the
 * GIL. A Tensor with a Python owner lives in Python's small-object allocator
 * (faster than malloc; releasing it needs the GIL for the owner anyway); one
 * without is plain malloc'ed, so the runtime can drop it anywhere for free.
 * After interpreter exit, Python-side state is leaked on purpose. */
/* Whether this thread holds the GIL, i.e. has a current thread state (one
 * that released it, or never ran Python, has none). Cheaper than
 * PyGILState_Check, which goes through thread-local storage. */
static inline int gil_held(void) {
#if PY_VERSION_HEX >= 0x030D0000
  return PyThreadState_GetUnchecked() != NULL;
#else
  return _PyThreadState_UncheckedGet() != NULL;
#endif
}

static void own_deleter(void* self, int flags) {
  OwnTensor* t = (OwnTensor*)self;
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    if (t->mv != NULL && t->mv->deleter != NULL) t->mv->deleter(t->mv);
    if (t->ml != NULL && t->ml->deleter != NULL) t->ml->deleter(t->ml);
  }
  int weak = (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) != 0;
  if (!t->py_alloc) {
    if (weak) PyMem_RawFree(t);
    return;
  }
  if (TVMFFI_PY_UNUSABLE()) return;
  int held = gil_held(); /* the common case: released right after a call */
  PyGILState_STATE gil = held ? PyGILState_UNLOCKED : PyGILState_Ensure();
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) Py_CLEAR(t->owner);
  if (weak) PyObject_Free(t);
  if (!held) PyGILState_Release(gil);
}

/* A Tensor object of `ndim` dimensions, shape/strides pointing at its own
 * storage, holding a new reference to `owner` (may be NULL). Data, device and
 * dtype are left for the caller. */
static OwnTensor* own_new(int ndim, PyObject* owner) {
  size_t size = sizeof(OwnTensor) + sizeof(int64_t) * 2 * (size_t)ndim;
  OwnTensor* t = owner != NULL ? PyObject_Malloc(size) : PyMem_RawMalloc(size);
  if (t == NULL) {
    PyErr_NoMemory();
    return NULL;
  }
  t->header.combined_ref_count = ((uint64_t)1 << 32) | 1; /* one strong, one weak */
  t->header.type_index = kTVMFFITensor;
  t->header.__padding = 0;
  t->header.deleter = own_deleter;
  t->dl.ndim = ndim;
  t->dl.shape = t->storage;
  t->dl.strides = t->storage + ndim;
  t->dl.byte_offset = 0;
  t->owner = Py_XNewRef(owner);
  t->mv = NULL;
  t->ml = NULL;
  t->flags = 0;
  t->py_alloc = owner != NULL;
  return t;
}

/* A Tensor object describing `src` (shape/strides copied, compact strides
 * filled in) that keeps `owner` alive. */
static OwnTensor* own_from_dl(const DLTensor* src, PyObject* owner, uint64_t flags) {
  OwnTensor* t = own_new(src->ndim, owner);
  if (t == NULL) return NULL;
  t->dl.data = src->data;
  t->dl.device = src->device;
  t->dl.dtype = src->dtype;
  t->dl.byte_offset = src->byte_offset;
  t->flags = flags;
  copy_shape_strides(src, t->storage);
  return t;
}

/* A Tensor object owning a consumed producer tensor (exactly one of mv, ml);
 * on failure the producer tensor is released. */
static OwnTensor* own_from_managed(DLManagedTensorVersioned* mv, DLManagedTensor* ml,
                                   Py_ssize_t argpos) {
  if (mv != NULL && (mv->flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED)) {
    arg_error(PyExc_ValueError, argpos,
              "DLPack tensors with padded sub-byte elements are not supported");
    if (mv->deleter != NULL) mv->deleter(mv);
    return NULL;
  }
  OwnTensor* t = own_from_dl(mv != NULL ? &mv->dl_tensor : &ml->dl_tensor, NULL,
                             mv != NULL ? mv->flags : 0);
  if (t == NULL) {
    if (mv != NULL && mv->deleter != NULL) mv->deleter(mv);
    if (ml != NULL && ml->deleter != NULL) ml->deleter(ml);
    return NULL;
  }
  t->mv = mv;
  t->ml = ml;
  return t;
}

/* DLPack flags of a tensor handle: known for the tensors built here, none
 * (writable) for the runtime's own. */
static uint64_t tensor_flags(TVMFFIObjectHandle h) {
  return ((const TVMFFIObject*)h)->deleter == own_deleter ? ((const OwnTensor*)h)->flags : 0;
}

/* The checks TVMFFITensorFromDLPack makes on request, with the same meaning:
 * alignment of data + byte_offset (of byte_offset alone where addresses are
 * not plain pointers), and row-major contiguity ignoring unit dimensions. */
static int is_direct_address(DLDevice d) {
  return d.device_type <= kDLCUDAHost || d.device_type == kDLCUDAManaged ||
         d.device_type == kDLROCM || d.device_type == kDLROCMHost;
}

static int dl_is_contiguous(const DLTensor* dl) {
  if (dl->strides == NULL) return 1;
  for (int i = 0; i < dl->ndim; ++i) {
    if (dl->shape[i] == 0) return 1;
  }
  int64_t expected = 1;
  for (int i = dl->ndim - 1; i >= 0; --i) {
    if (dl->shape[i] == 1) continue;
    if (dl->strides[i] != expected) return 0;
    expected *= dl->shape[i];
  }
  return 1;
}

static int check_requirements(const DLTensor* dl, int align, int contiguous) {
  if (align > 0) {
    uintptr_t addr = is_direct_address(dl->device) ? (uintptr_t)dl->data : 0;
    if ((addr + dl->byte_offset) % (uint64_t)align != 0) {
      PyErr_Format(PyExc_RuntimeError, "from_dlpack: data is not aligned to %d bytes", align);
      return -1;
    }
  }
  if (contiguous && !dl_is_contiguous(dl)) {
    PyErr_SetString(PyExc_RuntimeError, "from_dlpack: the tensor is not contiguous");
    return -1;
  }
  return 0;
}

/* Hand out `t` as an owned handle after the requested checks. */
static int own_finish(OwnTensor* t, int align, int contiguous, TVMFFIObjectHandle* out) {
  if (t == NULL) return -1;
  if (check_requirements(&t->dl, align, contiguous) != 0) {
    own_deleter(t, kTVMFFIObjectDeleterFlagBitMaskBoth);
    return -1;
  }
  *out = t;
  return 0;
}

/* ---- NumPy --------------------------------------------------------------------- */
/* An ndarray is read either through the buffer protocol or, when the check
 * below confirms it, directly from the leading fields of NumPy's array
 * struct. Those fields (PyArrayObject_fields: data, nd, dimensions, strides,
 * base, descr, flags) are what NumPy's own PyArray_DATA/NDIM/DIMS/STRIDES/
 * DESCR/FLAGS accessors read in every compiled extension, unchanged from
 * NumPy 1.x to 2.x. Reading them costs nothing, where a buffer export costs
 * an allocation and a dtype attribute lookup; this is the hot path of every
 * call with NumPy arguments. */
typedef struct {
  PyObject_HEAD
  char* data;
  int nd;
  Py_ssize_t* dimensions;
  Py_ssize_t* strides;
  PyObject* base;
  PyObject* descr;
  int flags;
} NumpyArrayFields;
#define NUMPY_WRITEABLE 0x0400 /* NPY_ARRAY_WRITEABLE */

static int g_numpy_fields_ok = -1; /* -1: not checked yet, 0: use buffers, 1: fields */

/* Everything needed from an ndarray. */
typedef struct {
  void* data;
  int ndim;
  const Py_ssize_t* shape;
  const Py_ssize_t* strides; /* bytes */
  Py_ssize_t itemsize;
  int readonly;
  DLDataType dtype;
  int has_view;
  Py_buffer view;
} NumpyDesc;

/* numpy dtype (descr) -> DLDataType, cached per descr object (the builtin
 * descrs are singletons). Entries own a reference to their descr. */
#define DESCR_CACHE_SIZE 32
static struct {
  PyObject* descr;
  DLDataType dtype;
  Py_ssize_t itemsize;
} g_descr_cache[DESCR_CACHE_SIZE];

static int descr_lookup(PyObject* arr, PyObject* descr, Py_ssize_t argpos, DLDataType* dtype,
                        Py_ssize_t* itemsize) {
  size_t slot = ((uintptr_t)descr >> 4) % DESCR_CACHE_SIZE;
  if (g_descr_cache[slot].descr == descr) {
    *dtype = g_descr_cache[slot].dtype;
    *itemsize = g_descr_cache[slot].itemsize;
    return 0;
  }
  /* DataType(descr) maps NumPy and ml_dtypes dtypes through the dtype hook. */
  PyObject* dt = PyObject_CallOneArg((PyObject*)&TVMFFIDataTypeType, descr);
  if (dt == NULL) return wrap_error(argpos, arr, "DataType(array.dtype)");
  DLDataType d = ((TVMFFIPyDataType*)dt)->dtype;
  Py_DECREF(dt);
  PyObject* native = PyObject_GetAttr(descr, g_str_isnative);
  int is_native = native == NULL ? -1 : PyObject_IsTrue(native);
  Py_XDECREF(native);
  if (is_native == 0) {
    return arg_error(PyExc_ValueError, argpos,
                     "NumPy array of dtype %R has non-native byte order, which DLPack cannot "
                     "express; convert it first, e.g. arr.astype(arr.dtype.newbyteorder('='))",
                     descr);
  }
  PyObject* size_obj = is_native < 0 ? NULL : PyObject_GetAttrString(descr, "itemsize");
  Py_ssize_t size = size_obj == NULL ? -1 : PyLong_AsSsize_t(size_obj);
  Py_XDECREF(size_obj);
  if (size < 0) return -1;
  if ((int64_t)d.bits * d.lanes != (int64_t)size * 8) {
    return arg_error(PyExc_ValueError, argpos,
                     "NumPy dtype %R stores %zd byte(s) per element but DLPack dtype %d:%d:%d "
                     "has %d bits (sub-byte dtypes padded to a byte are not supported)",
                     descr, size, d.code, d.bits, d.lanes, d.bits * d.lanes);
  }
  Py_XSETREF(g_descr_cache[slot].descr, Py_NewRef(descr));
  g_descr_cache[slot].dtype = d;
  g_descr_cache[slot].itemsize = size;
  *dtype = d;
  *itemsize = size;
  return 0;
}

/* Check the struct layout against the buffer protocol on a probe array with
 * non-trivial strides: numpy.empty((3, 4), "int16")[:, 1::2]. */
static int numpy_fields_match(void) {
  PyObject* np = PyDict_GetItemString(PyImport_GetModuleDict(), "numpy");
  if (np == NULL) return 0;
  PyObject* base = PyObject_CallMethod(np, "empty", "((ii)s)", 3, 4, "int16");
  PyObject* all = PySlice_New(NULL, NULL, NULL);
  PyObject* one = PyLong_FromLong(1);
  PyObject* two = PyLong_FromLong(2);
  PyObject* odd = one && two ? PySlice_New(one, NULL, two) : NULL;
  PyObject* key = all && odd ? PyTuple_Pack(2, all, odd) : NULL;
  PyObject* probe = base && key ? PyObject_GetItem(base, key) : NULL;
  PyObject* dtype = probe ? PyObject_GetAttr(probe, g_str_dtype) : NULL;
  int ok = 0;
  Py_buffer view;
  if (dtype != NULL && Py_TYPE(probe) == tvmffi_numpy_ndarray_type &&
      PyObject_GetBuffer(probe, &view, PyBUF_STRIDES) == 0) {
    const NumpyArrayFields* f = (const NumpyArrayFields*)probe;
    ok = f->data == view.buf && f->nd == 2 && view.ndim == 2 && f->descr == dtype &&
         f->dimensions[0] == 3 && f->dimensions[1] == 2 && view.shape[0] == 3 &&
         view.shape[1] == 2 && f->strides[0] == view.strides[0] &&
         f->strides[1] == view.strides[1] && f->strides[1] == 4 &&
         (f->flags & NUMPY_WRITEABLE) != 0 && !view.readonly;
    PyBuffer_Release(&view);
  }
  PyErr_Clear();
  Py_XDECREF(base);
  Py_XDECREF(all);
  Py_XDECREF(one);
  Py_XDECREF(two);
  Py_XDECREF(odd);
  Py_XDECREF(key);
  Py_XDECREF(probe);
  Py_XDECREF(dtype);
  return ok;
}

static int numpy_describe(PyObject* arr, Py_ssize_t argpos, NumpyDesc* d) {
  if (g_numpy_fields_ok < 0) g_numpy_fields_ok = numpy_fields_match();
  Py_ssize_t itemsize;
  if (g_numpy_fields_ok) {
    const NumpyArrayFields* f = (const NumpyArrayFields*)arr;
    if (descr_lookup(arr, f->descr, argpos, &d->dtype, &itemsize) != 0) return -1;
    d->data = f->data;
    d->ndim = f->nd;
    d->shape = f->dimensions;
    d->strides = f->strides;
    d->itemsize = itemsize;
    d->readonly = (f->flags & NUMPY_WRITEABLE) == 0;
    d->has_view = 0;
    return 0;
  }
  /* No PyBUF_FORMAT: NumPy then skips building a format string, and dtypes
   * the buffer protocol cannot name (ml_dtypes' bfloat16, float8) work. */
  if (PyObject_GetBuffer(arr, &d->view, PyBUF_STRIDES) != 0) {
    return wrap_error(argpos, arr, "the buffer protocol");
  }
  PyObject* descr = PyObject_GetAttr(arr, g_str_dtype);
  int rc = descr == NULL ? -1 : descr_lookup(arr, descr, argpos, &d->dtype, &itemsize);
  Py_XDECREF(descr);
  if (rc != 0 || itemsize != d->view.itemsize) {
    if (rc == 0) PyErr_SetString(PyExc_RuntimeError, "inconsistent NumPy itemsize");
    PyBuffer_Release(&d->view);
    return -1;
  }
  d->data = d->view.buf;
  d->ndim = d->view.ndim;
  d->shape = d->view.shape;
  d->strides = d->view.strides;
  d->itemsize = itemsize;
  d->readonly = d->view.readonly;
  d->has_view = 1;
  return 0;
}

static void numpy_release(NumpyDesc* d) {
  if (d->has_view) PyBuffer_Release(&d->view);
}

/* Fill a DLTensor whose shape/strides live in storage[0, 2*ndim). */
static int numpy_fill(PyObject* arr, const NumpyDesc* d, DLTensor* dl, int64_t* storage,
                      Py_ssize_t argpos) {
  int n = d->ndim;
  Py_ssize_t itemsize = d->itemsize;
  dl->data = d->data;
  dl->device.device_type = kDLCPU;
  dl->device.device_id = 0;
  dl->ndim = n;
  dl->dtype = d->dtype;
  dl->shape = storage;
  dl->strides = storage + n;
  dl->byte_offset = 0;
  for (int i = 0; i < n; ++i) {
    Py_ssize_t extent = d->shape[i], bs = d->strides[i];
    storage[i] = extent;
    if (bs % itemsize == 0) {
      storage[n + i] = bs / itemsize;
    } else if (extent <= 1) {
      storage[n + i] = 0; /* never stepped over: any value describes it */
    } else {
      PyObject* strides = PyObject_GetAttrString(arr, "strides");
      arg_error(PyExc_ValueError, argpos,
                "NumPy array strides %R (bytes) are not multiples of its itemsize %zd; DLPack "
                "counts strides in elements and cannot express them (copy the array first)",
                strides ? strides : Py_None, itemsize);
      Py_XDECREF(strides);
      return -1;
    }
  }
  return 0;
}

/* ndarray -> Tensor object that holds a reference to the array. */
static OwnTensor* numpy_tensor(PyObject* arr, Py_ssize_t argpos) {
  NumpyDesc d;
  if (numpy_describe(arr, argpos, &d) != 0) return NULL;
  OwnTensor* t = own_new(d.ndim, arr);
  int rc = t == NULL ? -1 : numpy_fill(arr, &d, &t->dl, t->storage, argpos);
  numpy_release(&d);
  if (rc != 0) {
    if (t != NULL) own_deleter(t, kTVMFFIObjectDeleterFlagBitMaskBoth);
    return NULL;
  }
  if (d.readonly) t->flags |= DLPACK_FLAG_BITMASK_READ_ONLY;
  return t;
}

/* ---- DLPack C exchange API (__dlpack_c_exchange_api__ on the type) ---------- */
static const DLPackExchangeAPI* lookup_exchange_api(PyTypeObject* tp) {
  PyObject* attr = PyObject_GetAttrString((PyObject*)tp, "__dlpack_c_exchange_api__");
  if (attr == NULL) {
    PyErr_Clear();
    return NULL;
  }
  const DLPackExchangeAPI* api = NULL;
  if (PyCapsule_IsValid(attr, "dlpack_exchange_api")) {
    api = PyCapsule_GetPointer(attr, "dlpack_exchange_api");
  } else if (PyLong_Check(attr)) {
    api = PyLong_AsVoidPtr(attr);
  }
  PyErr_Clear();
  Py_DECREF(attr);
  if (api == NULL || api->header.version.major != DLPACK_MAJOR_VERSION ||
      api->managed_tensor_from_py_object_no_sync == NULL) {
    return NULL;
  }
  return api;
}

/* An ndarray subclass that overrides __dlpack__ gets the protocol route. */
static int same_dlpack_as_ndarray(PyTypeObject* tp) {
  if (tp == tvmffi_numpy_ndarray_type) return 1;
  PyObject* mine = PyObject_GetAttr((PyObject*)tp, g_str_dlpack);
  PyObject* base = PyObject_GetAttr((PyObject*)tvmffi_numpy_ndarray_type, g_str_dlpack);
  int same = mine != NULL && mine == base;
  Py_XDECREF(mine);
  Py_XDECREF(base);
  PyErr_Clear();
  return same;
}

/* How values of a Python type become tensors, decided once per type. */
typedef enum {
  TK_NDARRAY = 1, /* numpy.ndarray and subclasses */
  TK_VIEW,        /* tvmffi.TensorView */
  TK_OBJECT,      /* tvmffi.Object (a Tensor when its handle is one) */
  TK_EXCHANGE,    /* DLPack C exchange API on the type */
  TK_PROTOCOL,    /* Python __dlpack__ / __dlpack_device__ */
} TensorKind;

#define TYPE_CACHE_SIZE 32
typedef struct {
  PyTypeObject* type; /* owned, so a reused address never aliases */
  TensorKind kind;
  const DLPackExchangeAPI* api;
  int is_torch;
} TypeEntry;
static TypeEntry g_type_cache[TYPE_CACHE_SIZE];

static const TypeEntry* type_entry(PyTypeObject* tp) {
  TypeEntry* e = &g_type_cache[((uintptr_t)tp >> 4) % TYPE_CACHE_SIZE];
  if (e->type == tp) return e;
  TypeEntry fresh = {tp, TK_PROTOCOL, NULL, 0};
  if (is_ndarray_type(tp) && same_dlpack_as_ndarray(tp)) {
    fresh.kind = TK_NDARRAY;
  } else if (PyType_IsSubtype(tp, &TVMFFITensorViewType)) {
    fresh.kind = TK_VIEW;
  } else if (PyType_IsSubtype(tp, &TVMFFIObjectType)) {
    fresh.kind = TK_OBJECT;
  } else if ((fresh.api = lookup_exchange_api(tp)) != NULL) {
    fresh.kind = TK_EXCHANGE;
    fresh.is_torch = is_torch_type(tp);
  }
  Py_INCREF(tp);
  PyTypeObject* old = e->type;
  *e = fresh;
  Py_XDECREF(old);
  return e;
}

/* Tensor object from a producer's DLPack C exchange API. For torch, whose
 * Python tensor owns its TensorImpl and storage, the non-owning DLTensor fill
 * plus a reference to the Python tensor keeps the data alive exactly as long
 * as the managed export would (which holds the same TensorImpl), with ~30%
 * fewer instructions and no allocation inside torch (measured: echo(torch)
 * ~10% and nop() of three distinct torch tensors ~15% faster, the same tensor
 * three times even). Other producers only promise the fill until control
 * returns, so they go through their managed export. */
static OwnTensor* exchange_tensor(PyObject* obj, const TypeEntry* e, Py_ssize_t argpos) {
  if (e->is_torch && e->api->dltensor_from_py_object_no_sync != NULL) {
    DLTensor dl;
    if (e->api->dltensor_from_py_object_no_sync(obj, &dl) != 0) {
      return wrap_error(argpos, obj, "DLPack export"), NULL;
    }
    return own_from_dl(&dl, obj, 0);
  }
  DLManagedTensorVersioned* mv;
  if (e->api->managed_tensor_from_py_object_no_sync(obj, &mv) != 0) {
    return wrap_error(argpos, obj, "DLPack export"), NULL;
  }
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
    arg_error(PyExc_TypeError, argpos,
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
      arg_error(PyExc_ValueError, argpos,
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
      arg_error(PyExc_ValueError, argpos, "'%.200s' produced DLPack version %u.%u; %d.x is needed",
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
    arg_error(PyExc_ValueError, argpos,
              "'%.200s' gave a PyCapsule named '%s'; expected an unconsumed 'dltensor' or "
              "'dltensor_versioned' capsule",
              Py_TYPE(obj)->tp_name, name ? name : "(null)");
  } else {
    arg_error(PyExc_TypeError, argpos,
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
  if (has_dev && (dl->device.device_type != dev.device_type ||
                  dl->device.device_id != dev.device_id)) {
    arg_error(PyExc_ValueError, argpos,
              "'%.200s'.__dlpack_device__() reports (%d, %d) but its DLPack tensor is on "
              "(%d, %d)",
              Py_TYPE(obj)->tp_name, (int)dev.device_type, (int)dev.device_id,
              (int)dl->device.device_type, (int)dl->device.device_id);
    Py_DECREF(cap);
    return NULL;
  }
  return cap;
}

/* Tensor object owning the tensor of a capsule from obj.__dlpack__() (or of
 * the capsule `obj` itself), which is marked consumed. */
static OwnTensor* protocol_tensor(PyObject* obj, Py_ssize_t argpos) {
  int versioned;
  PyObject* cap = protocol_checked_capsule(obj, argpos, &versioned);
  if (cap == NULL) return NULL;
  DLManagedTensorVersioned* mv = versioned ? PyCapsule_GetPointer(cap, kCapsuleVersioned) : NULL;
  DLManagedTensor* ml = versioned ? NULL : PyCapsule_GetPointer(cap, kCapsule);
  capsule_consume(cap, versioned); /* ownership passes to the tensor object */
  Py_DECREF(cap);
  return own_from_managed(mv, ml, argpos);
}

/* ---- Python object -> Tensor handle ------------------------------------------ */
typedef struct TVMFFIPyTensorView TVMFFIPyTensorView;
static DLTensor* view_dl(PyObject* view);
static uint64_t view_flags(PyObject* view);

static int is_tensor_object(PyObject* obj) {
  return tvmffi_is_object(obj) && ((TVMFFIPyObject*)obj)->handle != NULL &&
         tvmffi_type_index_of(((TVMFFIPyObject*)obj)->handle) == kTVMFFITensor;
}

/* For a tensor on a device with streams, the producer's current stream
 * becomes the environment stream of the call owning `temps` (unless a
 * use_stream() is active). On failure the tensor `h` is released. */
static int adopt_producer_stream(PyObject* obj, const TypeEntry* e, TVMFFIObjectHandle h,
                                 Py_ssize_t argpos, TempList* temps) {
  DLDevice dev = ((const DLTensor*)tvmffi_cell(h))->device;
  if (dev.device_type == kDLCPU || e->api->current_work_stream == NULL) return 0;
  void* stream = NULL;
  if (e->api->current_work_stream(dev.device_type, dev.device_id, &stream) != 0) {
    TVMFFIObjectDecRef(h);
    return wrap_error(argpos, obj, "current_work_stream()");
  }
  if (tvmffi_stream_adopt(dev.device_type, dev.device_id, stream, temps) != 0) {
    TVMFFIObjectDecRef(h);
    return -1;
  }
  return 0;
}

/* Owned Tensor handle for any tensor-like Python object. With `temps`, a
 * framework's current stream for the tensor's device is adopted for the call. */
static int tensor_handle_from_py(PyObject* obj, Py_ssize_t argpos, int align, int contiguous,
                                 TempList* temps, TVMFFIObjectHandle* out) {
  const TypeEntry* e = type_entry(Py_TYPE(obj));
  switch (e->kind) {
    case TK_NDARRAY:
      return own_finish(numpy_tensor(obj, argpos), align, contiguous, out);
    case TK_VIEW:
      return own_finish(own_from_dl(view_dl(obj), obj, view_flags(obj)), align, contiguous, out);
    case TK_OBJECT: {
      if (!is_tensor_object(obj)) {
        return arg_error(PyExc_TypeError, argpos, "expected a tensor, got '%.200s'",
                         Py_TYPE(obj)->tp_name);
      }
      TVMFFIObjectHandle h = ((TVMFFIPyObject*)obj)->handle;
      if (check_requirements((const DLTensor*)tvmffi_cell(h), align, contiguous) != 0) return -1;
      TVMFFIObjectIncRef(h);
      *out = h;
      return 0;
    }
    case TK_EXCHANGE:
      if (own_finish(exchange_tensor(obj, e, argpos), align, contiguous, out) != 0) return -1;
      return temps == NULL ? 0 : adopt_producer_stream(obj, e, *out, argpos, temps);
    default:
      return own_finish(protocol_tensor(obj, argpos), align, contiguous, out);
  }
}

static void set_tensor_any(TVMFFIAny* out, TVMFFIObjectHandle h) {
  out->type_index = kTVMFFITensor;
  out->zero_padding = 0;
  out->v_obj = (TVMFFIObject*)h;
}

static int push_tensor(TVMFFIObjectHandle h, TVMFFIAny* out, TempList* temps) {
  if (temps_push(temps, h) != 0) {
    TVMFFIObjectDecRef(h);
    return -1;
  }
  set_tensor_any(out, h);
  return 0;
}

int tvmffi_ndarray_to_any(PyObject* arr, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos) {
  OwnTensor* t = numpy_tensor(arr, argpos);
  return t == NULL ? -1 : push_tensor(t, out, temps);
}

int tvmffi_tensor_to_any(PyObject* obj, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos) {
  /* A view is a DLTensor* only as a call argument. Without a position the
   * value is kept (a callback's result, a field, an owned Any), and a raw
   * pointer would dangle: it becomes a Tensor that keeps the view alive. */
  if (Py_TYPE(obj) == &TVMFFITensorViewType && argpos >= 0) {
    out->type_index = kTVMFFIDLTensorPtr;
    out->zero_padding = 0;
    out->v_ptr = view_dl(obj);
    return 0;
  }
  return tvmffi_tensor_to_kept_any(obj, out, temps, argpos);
}

int tvmffi_tensor_to_kept_any(PyObject* obj, TVMFFIAny* out, TempList* temps,
                              Py_ssize_t argpos) {
  TVMFFIObjectHandle h;
  if (tensor_handle_from_py(obj, argpos, 0, 0, temps, &h) != 0) return -1;
  return push_tensor(h, out, temps);
}

/* ---- shared DLTensor accessors -------------------------------------------------- */
static PyObject* dl_shape(const DLTensor* dl) {
  PyObject* t = PyTuple_New(dl->ndim);
  if (t == NULL) return NULL;
  for (int i = 0; i < dl->ndim; ++i) {
    PyObject* v = PyLong_FromLongLong(dl->shape[i]);
    if (v == NULL) return Py_DECREF(t), NULL;
    PyTuple_SET_ITEM(t, i, v);
  }
  return t;
}

static PyObject* dl_strides(const DLTensor* dl) {
  PyObject* t = PyTuple_New(dl->ndim);
  if (t == NULL) return NULL;
  int64_t compact = 1;
  for (int i = dl->ndim - 1; i >= 0; --i) {
    int64_t s = dl->strides != NULL ? dl->strides[i] : compact;
    compact *= dl->shape[i];
    PyObject* v = PyLong_FromLongLong(s);
    if (v == NULL) return Py_DECREF(t), NULL;
    PyTuple_SET_ITEM(t, i, v);
  }
  return t;
}

static PyObject* dl_dlpack_device(const DLTensor* dl) {
  return Py_BuildValue("(ii)", (int)dl->device.device_type, (int)dl->device.device_id);
}

static PyObject* dl_data_ptr(const DLTensor* dl) {
  return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)dl->data + dl->byte_offset);
}

static PyObject* dl_repr(const char* cls, const DLTensor* dl) {
  PyObject* shape = dl_shape(dl);
  PyObject* dtype = tvmffi_dtype_from_dl(dl->dtype);
  PyObject* dtype_s = dtype ? PyObject_Str(dtype) : NULL;
  PyObject* device = tvmffi_device_from_dl(dl->device);
  PyObject* res = NULL;
  if (shape && dtype_s && device) {
    res = PyUnicode_FromFormat("%s(shape=%S, dtype=%U, device=%S)", cls, shape, dtype_s, device);
  }
  Py_XDECREF(shape);
  Py_XDECREF(dtype);
  Py_XDECREF(dtype_s);
  Py_XDECREF(device);
  return res;
}

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
static PyObject* dlpack_export(TVMFFIObjectHandle h, PyObject* args, PyObject* kwargs) {
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

/* ---- tvmffi.Tensor -------------------------------------------------------------- */
static const DLTensor* tensor_dl(PyObject* self) {
  TVMFFIObjectHandle h = ((TVMFFIPyObject*)self)->handle;
  if (h == NULL) {
    PyErr_SetString(PyExc_ValueError, "tvmffi.Tensor object holds no FFI handle");
    return NULL;
  }
  return (const DLTensor*)tvmffi_cell(h);
}

/* Properties and DLPack methods shared by Tensor and TensorView. */
static const DLTensor* self_dl(PyObject* self) {
  return Py_TYPE(self) == &TVMFFITensorViewType ? view_dl(self) : tensor_dl(self);
}

#define DL_GETTER(name, expr)                                 \
  static PyObject* dl_get_##name(PyObject* self, void* c) { \
    (void)c;                                                 \
    const DLTensor* dl = self_dl(self);                      \
    if (dl == NULL) return NULL;                             \
    return expr;                                             \
  }

DL_GETTER(shape, dl_shape(dl))
DL_GETTER(strides, dl_strides(dl))
DL_GETTER(dtype, tvmffi_dtype_from_dl(dl->dtype))
DL_GETTER(device, tvmffi_device_from_dl(dl->device))
DL_GETTER(ndim, PyLong_FromLong(dl->ndim))
DL_GETTER(data_ptr, dl_data_ptr(dl))
DL_GETTER(dlpack_device, dl_dlpack_device(dl))

static PyObject* dl_dlpack_device_method(PyObject* self, PyObject* unused) {
  (void)unused;
  return dl_get_dlpack_device(self, NULL);
}

/* A view exports through a Tensor that keeps the view alive. */
static PyObject* dl_dlpack_method(PyObject* self, PyObject* args, PyObject* kwargs) {
  if (Py_TYPE(self) != &TVMFFITensorViewType) {
    return tensor_dl(self) == NULL ? NULL
                                   : dlpack_export(((TVMFFIPyObject*)self)->handle, args, kwargs);
  }
  OwnTensor* h = own_from_dl(view_dl(self), self, view_flags(self));
  if (h == NULL) return NULL;
  PyObject* cap = dlpack_export(h, args, kwargs);
  TVMFFIObjectDecRef(h);
  return cap;
}

static PyGetSetDef dl_getset[] = {
    {"shape", dl_get_shape, NULL, "Shape as a tuple of ints.", NULL},
    {"strides", dl_get_strides, NULL, "Strides in elements (compact when not stored).", NULL},
    {"dtype", dl_get_dtype, NULL, "Element type as a DataType.", NULL},
    {"device", dl_get_device, NULL, "Device holding the data.", NULL},
    {"ndim", dl_get_ndim, NULL, "Number of dimensions.", NULL},
    {"data_ptr", dl_get_data_ptr, NULL, "Address of the first element (data + byte_offset).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef dl_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))dl_dlpack_method, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(stream=None, max_version=None, dl_device=None, copy=None): a DLPack capsule "
     "sharing this memory (a view's is valid while the viewed array is)."},
    {"__dlpack_device__", dl_dlpack_device_method, METH_NOARGS,
     "(device_type, device_id) of the data."},
    {NULL, NULL, 0, NULL},
};

static PyObject* tensor_repr(PyObject* self) {
  if (((TVMFFIPyObject*)self)->handle == NULL) return PyUnicode_FromString("tvmffi.Tensor(empty)");
  return dl_repr("tvmffi.Tensor", tensor_dl(self));
}

static PyObject* from_dlpack_impl(PyObject* obj, int align, int contiguous) {
  if (is_tensor_object(obj) && align == 0 && !contiguous && Py_TYPE(obj) == &TVMFFITensorType) {
    return Py_NewRef(obj);
  }
  TVMFFIObjectHandle h;
  if (tensor_handle_from_py(obj, -1, align, contiguous, NULL, &h) != 0) return NULL;
  return tvmffi_object_wrap_owned(h);
}

static PyObject* py_from_dlpack(PyObject* self, PyObject* args, PyObject* kwargs) {
  (void)self;
  static char* kwlist[] = {"obj", "require_alignment", "require_contiguous", NULL};
  PyObject* obj;
  int align = 0, contiguous = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$ip:from_dlpack", kwlist, &obj, &align,
                                   &contiguous)) {
    return NULL;
  }
  if (align < 0) {
    PyErr_SetString(PyExc_ValueError, "require_alignment must be >= 0");
    return NULL;
  }
  refresh_known_types();
  if (!PyCapsule_CheckExact(obj) && !tvmffi_is_object(obj) &&
      !tvmffi_is_tensor_type(Py_TYPE(obj))) {
    PyErr_Format(PyExc_TypeError,
                 "from_dlpack expects a DLPack producer (an object with __dlpack__) or a DLPack "
                 "capsule, got '%.200s'",
                 Py_TYPE(obj)->tp_name);
    return NULL;
  }
  if (tvmffi_is_object(obj) && !is_tensor_object(obj)) {
    PyErr_Format(PyExc_TypeError, "from_dlpack expects a tensor, got '%.200s'",
                 Py_TYPE(obj)->tp_name);
    return NULL;
  }
  return from_dlpack_impl(obj, align, contiguous);
}

static PyObject* tensor_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  (void)type;
  return py_from_dlpack(NULL, args, kwargs);
}

PyTypeObject TVMFFITensorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.Tensor",
    .tp_basicsize = sizeof(TVMFFIPyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Tensor(obj): the runtime's reference-counted tensor, zero-copy from any DLPack "
              "producer (same as tvmffi.from_dlpack(obj)).",
    .tp_base = &TVMFFIObjectType,
    .tp_new = tensor_new,
    .tp_repr = tensor_repr,
    .tp_methods = dl_methods,
    .tp_getset = dl_getset,
};

/* ---- tvmffi.TensorView ----------------------------------------------------------- */
struct TVMFFIPyTensorView {
  PyObject_VAR_HEAD
  DLTensor dl;
  PyObject* owner;                     /* keeps the data alive (array, Tensor, view), or NULL */
  DLManagedTensorVersioned* managed_v; /* consumed producer tensor, released with the view */
  DLManagedTensor* managed;            /* same, legacy DLPack */
  uint64_t flags;                      /* DLPACK_FLAG_BITMASK_* (read-only) of the source */
  int64_t storage[];                   /* shape and strides when stored inline */
};

static DLTensor* view_dl(PyObject* view) { return &((TVMFFIPyTensorView*)view)->dl; }
static uint64_t view_flags(PyObject* view) { return ((TVMFFIPyTensorView*)view)->flags; }

static TVMFFIPyTensorView* view_alloc(Py_ssize_t nstorage) {
  TVMFFIPyTensorView* v = PyObject_NewVar(TVMFFIPyTensorView, &TVMFFITensorViewType, nstorage);
  if (v == NULL) return NULL;
  memset(&v->dl, 0, sizeof(DLTensor));
  v->owner = NULL;
  v->managed_v = NULL;
  v->managed = NULL;
  v->flags = 0;
  return v;
}

/* A view that keeps `owner` alive and copies `src`'s shape and strides. */
static PyObject* view_copying(const DLTensor* src, PyObject* owner, uint64_t flags) {
  TVMFFIPyTensorView* v = view_alloc(2 * (Py_ssize_t)src->ndim);
  if (v == NULL) return NULL;
  v->dl = *src;
  v->dl.shape = v->storage;
  v->dl.strides = v->storage + src->ndim;
  copy_shape_strides(src, v->storage);
  v->owner = Py_XNewRef(owner);
  v->flags = flags;
  return (PyObject*)v;
}

PyObject* tvmffi_tensor_view_borrowed(const DLTensor* dl) {
  if (dl == NULL) Py_RETURN_NONE;
  return view_copying(dl, NULL, 0);
}

static PyObject* view_from_numpy(PyObject* arr) {
  NumpyDesc d;
  if (numpy_describe(arr, -1, &d) != 0) return NULL;
  TVMFFIPyTensorView* v = view_alloc(2 * (Py_ssize_t)d.ndim);
  int rc = v == NULL ? -1 : numpy_fill(arr, &d, &v->dl, v->storage, -1);
  numpy_release(&d);
  if (rc != 0) {
    Py_XDECREF(v);
    return NULL;
  }
  v->owner = Py_NewRef(arr);
  if (d.readonly) v->flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  return (PyObject*)v;
}

static PyObject* view_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  (void)type;
  static char* kwlist[] = {"array", NULL};
  PyObject* obj;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:TensorView", kwlist, &obj)) return NULL;
  refresh_known_types();
  PyTypeObject* tp = Py_TYPE(obj);
  if (PyType_IsSubtype(tp, &TVMFFITensorViewType)) return view_copying(view_dl(obj), obj, view_flags(obj));
  if (is_tensor_object(obj)) {
    /* The Tensor object owns the handle, which owns shape and data. */
    TVMFFIPyTensorView* v = view_alloc(0);
    if (v == NULL) return NULL;
    v->dl = *(const DLTensor*)tvmffi_cell(((TVMFFIPyObject*)obj)->handle);
    v->flags = tensor_flags(((TVMFFIPyObject*)obj)->handle);
    v->owner = Py_NewRef(obj);
    return (PyObject*)v;
  }
  if (is_ndarray_type(tp)) return view_from_numpy(obj);
  if (!PyCapsule_CheckExact(obj) && !tvmffi_is_tensor_type(tp)) {
    PyErr_Format(PyExc_TypeError,
                 "TensorView expects a DLPack producer (an object with __dlpack__), got '%.200s'",
                 tp->tp_name);
    return NULL;
  }
  const TypeEntry* e = PyCapsule_CheckExact(obj) ? NULL : type_entry(tp);
  const DLPackExchangeAPI* api = e != NULL && e->kind == TK_EXCHANGE ? e->api : NULL;
  int is_torch = e != NULL && e->is_torch;
  if (api != NULL && is_torch && api->dltensor_from_py_object_no_sync != NULL) {
    DLTensor dl;
    if (api->dltensor_from_py_object_no_sync(obj, &dl) != 0) {
      return wrap_error(-1, obj, "DLPack export"), NULL;
    }
    return view_copying(&dl, obj, 0);
  }
  TVMFFIPyTensorView* v = view_alloc(0);
  if (v == NULL) return NULL;
  if (api != NULL) {
    if (api->managed_tensor_from_py_object_no_sync(obj, &v->managed_v) != 0) {
      Py_DECREF(v);
      return wrap_error(-1, obj, "DLPack export"), NULL;
    }
    v->dl = v->managed_v->dl_tensor;
    v->flags = v->managed_v->flags;
    return (PyObject*)v;
  }
  int versioned;
  PyObject* cap = protocol_checked_capsule(obj, -1, &versioned);
  if (cap == NULL) {
    Py_DECREF(v);
    return NULL;
  }
  if (versioned) {
    v->managed_v = PyCapsule_GetPointer(cap, kCapsuleVersioned);
    v->dl = v->managed_v->dl_tensor;
    v->flags = v->managed_v->flags;
  } else {
    v->managed = PyCapsule_GetPointer(cap, kCapsule);
    v->dl = v->managed->dl_tensor;
  }
  capsule_consume(cap, versioned);
  Py_DECREF(cap);
  return (PyObject*)v;
}

static void view_dealloc(PyObject* op) {
  TVMFFIPyTensorView* v = (TVMFFIPyTensorView*)op;
  if (v->managed_v != NULL && v->managed_v->deleter != NULL) v->managed_v->deleter(v->managed_v);
  if (v->managed != NULL && v->managed->deleter != NULL) v->managed->deleter(v->managed);
  Py_XDECREF(v->owner);
  PyObject_Free(op);
}

static PyObject* view_repr(PyObject* self) { return dl_repr("tvmffi.TensorView", view_dl(self)); }

PyTypeObject TVMFFITensorViewType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.TensorView",
    .tp_basicsize = offsetof(TVMFFIPyTensorView, storage),
    .tp_itemsize = sizeof(int64_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "TensorView(array): a borrowed, zero-copy view passed to functions as DLTensor*. "
              "The array must stay alive and unchanged while the view is used.",
    .tp_new = view_new,
    .tp_dealloc = view_dealloc,
    .tp_repr = view_repr,
    .tp_methods = dl_methods,
    .tp_getset = dl_getset,
};

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

/* ---- module ------------------------------------------------------------------------ */
static PyMethodDef tensor_module_methods[] = {
    {"from_dlpack", (PyCFunction)(void (*)(void))py_from_dlpack, METH_VARARGS | METH_KEYWORDS,
     "from_dlpack(obj, *, require_alignment=0, require_contiguous=False) -> Tensor"},
    {NULL, NULL, 0, NULL},
};

int tvmffi_tensor_init_types(PyObject* module) {
  g_str_dtype = PyUnicode_InternFromString("dtype");
  g_str_isnative = PyUnicode_InternFromString("isnative");
  g_str_dlpack = PyUnicode_InternFromString("__dlpack__");
  g_str_dlpack_device = PyUnicode_InternFromString("__dlpack_device__");
  g_max_version_kwargs = Py_BuildValue("{s(ii)}", "max_version", 1, 0);
  g_empty_tuple = PyTuple_New(0);
  if (g_str_dtype == NULL || g_str_isnative == NULL || g_str_dlpack == NULL ||
      g_str_dlpack_device == NULL || g_max_version_kwargs == NULL || g_empty_tuple == NULL) {
    return -1;
  }
  if (PyType_Ready(&TVMFFITensorType) < 0 || PyType_Ready(&TVMFFITensorViewType) < 0) return -1;
  PyObject* api = PyCapsule_New(&g_tensor_api, "dlpack_exchange_api", NULL);
  if (api == NULL) return -1;
  int rc = PyDict_SetItemString(TVMFFITensorType.tp_dict, "__dlpack_c_exchange_api__", api);
  Py_DECREF(api);
  if (rc != 0) return -1;
  PyType_Modified(&TVMFFITensorType);
  Py_INCREF(&TVMFFITensorType);
  if (PyModule_AddObject(module, "Tensor", (PyObject*)&TVMFFITensorType) < 0) return -1;
  Py_INCREF(&TVMFFITensorViewType);
  if (PyModule_AddObject(module, "TensorView", (PyObject*)&TVMFFITensorViewType) < 0) return -1;
  /* Tensors coming back from the FFI are wrapped in tvmffi.Tensor. */
  PyObject* reg_args = Py_BuildValue("(iO)", (int)kTVMFFITensor, (PyObject*)&TVMFFITensorType);
  if (reg_args == NULL) return -1;
  PyObject* r = tvmffi_register_object_class(NULL, reg_args);
  Py_DECREF(reg_args);
  if (r == NULL) return -1;
  Py_DECREF(r);
  refresh_known_types();
  PyErr_Clear();
  return PyModule_AddFunctions(module, tensor_module_methods);
}
