/*
 * The NumPy fast path: an ndarray becomes a Tensor object (or a TensorView)
 * that holds a reference to the array, with data/shape/strides/descr read
 * from the array itself (the buffer protocol is the fallback), the dtype
 * cached per descr, and no capsule.
 */
#include "internal.h"

#include <string.h>

static PyObject* g_str_dtype;
static PyObject* g_str_isnative;

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

/* numpy dtype (descr) -> DLDataType, cached per descr object (the builtin
 * descrs are singletons). Entries own a reference to their descr, so its
 * address names it while cached; the DLDataType is kept as its 4 bytes. */
#define DESCR_CACHE_SIZE 32
typedef struct {
  PyObject* descr;
  uint32_t dtype;
  Py_ssize_t itemsize;
} DescrEntry;
static DescrEntry g_descr_cache[DESCR_CACHE_SIZE];
_Static_assert(sizeof(DLDataType) == sizeof(uint32_t), "a DLDataType is 4 bytes");

#ifdef Py_GIL_DISABLED
/* Without a GIL: one writer at a time, readers through the slot's seqlock. */
static unsigned int g_descr_seq[DESCR_CACHE_SIZE];
static PyMutex g_descr_lock;

static int descr_cached(size_t slot, PyObject* descr, uint32_t* dtype, Py_ssize_t* itemsize) {
  const DescrEntry* e = &g_descr_cache[slot];
  unsigned int seq = tvmffi_seq_read_begin(&g_descr_seq[slot]);
  PyObject* cached = __atomic_load_n(&e->descr, __ATOMIC_ACQUIRE);
  *dtype = __atomic_load_n(&e->dtype, __ATOMIC_ACQUIRE);
  *itemsize = __atomic_load_n(&e->itemsize, __ATOMIC_ACQUIRE);
  return cached == descr && tvmffi_seq_read_whole(&g_descr_seq[slot], seq);
}

/* Fills the slot; returns the reference its old descr held, for the caller. */
static PyObject* descr_store(size_t slot, PyObject* descr, uint32_t dtype, Py_ssize_t itemsize) {
  DescrEntry* e = &g_descr_cache[slot];
  PyMutex_Lock(&g_descr_lock);
  PyObject* old = e->descr;
  tvmffi_seq_write_begin(&g_descr_seq[slot]);
  __atomic_store_n(&e->descr, descr, __ATOMIC_RELEASE);
  __atomic_store_n(&e->dtype, dtype, __ATOMIC_RELEASE);
  __atomic_store_n(&e->itemsize, itemsize, __ATOMIC_RELEASE);
  tvmffi_seq_write_end(&g_descr_seq[slot]);
  PyMutex_Unlock(&g_descr_lock);
  return old;
}
#else
static int descr_cached(size_t slot, PyObject* descr, uint32_t* dtype, Py_ssize_t* itemsize) {
  const DescrEntry* e = &g_descr_cache[slot];
  *dtype = e->dtype;
  *itemsize = e->itemsize;
  return e->descr == descr;
}

static PyObject* descr_store(size_t slot, PyObject* descr, uint32_t dtype, Py_ssize_t itemsize) {
  PyObject* old = g_descr_cache[slot].descr;
  g_descr_cache[slot] = (DescrEntry){descr, dtype, itemsize};
  return old;
}
#endif

static int descr_lookup(PyObject* arr, PyObject* descr, Py_ssize_t argpos, DLDataType* dtype,
                        Py_ssize_t* itemsize) {
  size_t slot = ((uintptr_t)descr >> 4) % DESCR_CACHE_SIZE;
  uint32_t packed;
  if (descr_cached(slot, descr, &packed, itemsize)) {
    memcpy(dtype, &packed, sizeof(packed));
    return 0;
  }
  /* NumPy and ml_dtypes dtypes map through the dtype hook (dtype.c). */
  DLDataType d;
  if (tvmffi_dtype_value(descr, &d) != 0) return wrap_error(argpos, arr, "dtype(array.dtype)");
  PyObject* native = PyObject_GetAttr(descr, g_str_isnative);
  int is_native = native == NULL ? -1 : PyObject_IsTrue(native);
  Py_XDECREF(native);
  if (is_native == 0) {
    return tvmffi_arg_error(PyExc_ValueError, argpos,
                     "NumPy array of dtype %R has non-native byte order, which DLPack cannot "
                     "express; convert it first, e.g. arr.astype(arr.dtype.newbyteorder('='))",
                     descr);
  }
  PyObject* size_obj = is_native < 0 ? NULL : PyObject_GetAttrString(descr, "itemsize");
  Py_ssize_t size = size_obj == NULL ? -1 : PyLong_AsSsize_t(size_obj);
  Py_XDECREF(size_obj);
  if (size < 0) return -1;
  if ((int64_t)d.bits * d.lanes != (int64_t)size * 8) {
    return tvmffi_arg_error(PyExc_ValueError, argpos,
                     "NumPy dtype %R stores %zd byte(s) per element but DLPack dtype %d:%d:%d "
                     "has %d bits (sub-byte dtypes padded to a byte are not supported)",
                     descr, size, d.code, d.bits, d.lanes, d.bits * d.lanes);
  }
  memcpy(&packed, &d, sizeof(packed));
  Py_XDECREF(descr_store(slot, Py_NewRef(descr), packed, size));
  *dtype = d;
  *itemsize = size;
  return 0;
}

/* Check the struct layout against the buffer protocol on a probe array with
 * non-trivial strides: numpy.empty((3, 4), "int16")[:, 1::2]. */
static int numpy_fields_match(void) {
  PyObject* name = PyUnicode_FromString("numpy");
  PyObject* np = name == NULL ? NULL : PyImport_GetModule(name); /* strong: no GIL keeps it */
  Py_XDECREF(name);
  if (np == NULL) {
    PyErr_Clear();
    return 0;
  }
  PyObject* base = PyObject_CallMethod(np, "empty", "((ii)s)", 3, 4, "int16");
  Py_DECREF(np);
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

int numpy_describe(PyObject* arr, Py_ssize_t argpos, NumpyDesc* d) {
  /* Read and written whole: threads checking at once reach the same verdict. */
  int fields_ok = TVMFFI_RELAXED_LOAD(g_numpy_fields_ok);
  if (fields_ok < 0) {
    fields_ok = numpy_fields_match();
    TVMFFI_RELAXED_STORE(g_numpy_fields_ok, fields_ok);
  }
  Py_ssize_t itemsize;
  if (fields_ok) {
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

void numpy_release(NumpyDesc* d) {
  if (d->has_view) PyBuffer_Release(&d->view);
}

/* Fill a DLTensor whose shape/strides live in storage[0, 2*ndim). */
int numpy_fill(PyObject* arr, const NumpyDesc* d, DLTensor* dl, int64_t* storage,
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
      tvmffi_arg_error(PyExc_ValueError, argpos,
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
OwnTensor* numpy_tensor(PyObject* arr, Py_ssize_t argpos, int lend) {
  NumpyDesc d;
  if (numpy_describe(arr, argpos, &d) != 0) return NULL;
  OwnTensor* t = lend ? own_new_lent(d.ndim, arr) : own_new(d.ndim, arr);
  int rc = t == NULL ? -1 : numpy_fill(arr, &d, &t->dl, t->storage, argpos);
  numpy_release(&d);
  if (rc != 0) {
    if (t != NULL) own_deleter(t, kTVMFFIObjectDeleterFlagBitMaskBoth);
    return NULL;
  }
  if (d.readonly) t->flags |= DLPACK_FLAG_BITMASK_READ_ONLY;
  return t;
}

int ndarray_init(void) {
  g_str_dtype = PyUnicode_InternFromString("dtype");
  g_str_isnative = PyUnicode_InternFromString("isnative");
  return g_str_dtype == NULL || g_str_isnative == NULL ? -1 : 0;
}
