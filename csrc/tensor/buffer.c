/*
 * A CPU Tensor over a Python buffer: how pickle rebuilds a tensor
 * (tvmffi/_pickle.py) from the bytes it was sent, without copying them.
 *
 * The payload is untrusted: every number is checked here, in C, before a
 * DLTensor is described, so that no element the tensor can address lies
 * outside the buffer (a malformed payload raises ValueError, it never makes a
 * tensor that reads or writes past the memory it owns).
 */
#include "internal.h"

#include <limits.h>

/* Read a sequence of at most DL_MAX_NDIM ints into out; its length, or -1. */
static int read_dims(PyObject* seq, const char* what, int64_t* out) {
  PyObject* fast = PySequence_Fast(seq, "shape and strides must be sequences of ints");
  if (fast == NULL) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  if (n > DL_MAX_NDIM) {
    Py_DECREF(fast);
    PyErr_Format(PyExc_ValueError, "a tensor's %s has at most %d items, got %zd", what,
                 DL_MAX_NDIM, n);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(fast, i);
    if (!PyLong_CheckExact(item)) {
      Py_DECREF(fast);
      PyErr_Format(PyExc_ValueError, "a tensor's %s holds ints, got '%.100s'", what,
                   Py_TYPE(item)->tp_name);
      return -1;
    }
    long long v = PyLong_AsLongLong(item);
    if (v == -1 && PyErr_Occurred()) {
      Py_DECREF(fast);
      PyErr_Format(PyExc_ValueError, "a tensor's %s item does not fit in int64", what);
      return -1;
    }
    out[i] = (int64_t)v;
  }
  Py_DECREF(fast);
  return (int)n;
}

/* The lowest and one past the highest byte any element addresses, relative to
 * the data pointer plus byte_offset; 0 when in range of int64, else -1. */
static int byte_span(const int64_t* shape, const int64_t* strides, int ndim, int64_t itemsize,
                     int64_t* lo, int64_t* hi) {
  int64_t min_el = 0, max_el = 0;
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] == 0) {
      *lo = *hi = 0;
      return 0;
    }
  }
  for (int i = 0; i < ndim; ++i) {
    int64_t reach;
    if (__builtin_mul_overflow(shape[i] - 1, strides[i], &reach)) return -1;
    if (reach < 0 ? __builtin_add_overflow(min_el, reach, &min_el)
                  : __builtin_add_overflow(max_el, reach, &max_el)) {
      return -1;
    }
  }
  if (__builtin_mul_overflow(min_el, itemsize, lo)) return -1;
  if (__builtin_add_overflow(max_el, 1, &max_el)) return -1;
  if (__builtin_mul_overflow(max_el, itemsize, hi)) return -1;
  return 0;
}

/* 0 when the dims describe a tensor whose every element lies in [0, size). */
static int check_fits(const int64_t* shape, const int64_t* strides, int ndim, DLDataType dt,
                      int64_t byte_offset, Py_ssize_t size) {
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] < 0) {
      PyErr_Format(PyExc_ValueError, "a tensor's shape[%d] is negative (%lld)", i,
                   (long long)shape[i]);
      return -1;
    }
  }
  int64_t itemsize = ((int64_t)dt.bits * dt.lanes + 7) / 8;
  int64_t lo, hi;
  if (byte_offset < 0 || byte_span(shape, strides, ndim, itemsize, &lo, &hi) != 0 ||
      (lo != hi && (byte_offset + lo < 0 || hi > (int64_t)size - byte_offset))) {
    PyErr_Format(PyExc_ValueError,
                 "a tensor's shape, strides and byte offset (%lld) reach outside its "
                 "buffer of %zd bytes",
                 (long long)byte_offset, size);
    return -1;
  }
  return 0;
}

/* _tensor_from_buffer(buffer, (code, bits, lanes), shape, strides, byte_offset):
 * a CPU Tensor over the writable, contiguous buffer, keeping it alive. */
static PyObject* py_tensor_from_buffer(PyObject* self, PyObject* args) {
  (void)self;
  PyObject *buffer, *shape_seq, *strides_seq;
  unsigned int code, bits, lanes;
  long long byte_offset;
  if (!PyArg_ParseTuple(args, "O(III)OOL", &buffer, &code, &bits, &lanes, &shape_seq,
                        &strides_seq, &byte_offset)) {
    return NULL;
  }
  if (code > UINT8_MAX || bits == 0 || bits > UINT8_MAX || lanes == 0 || lanes > UINT16_MAX) {
    PyErr_Format(PyExc_ValueError, "invalid tensor dtype (code %u, bits %u, lanes %u)", code, bits,
                 lanes);
    return NULL;
  }
  int64_t shape[DL_MAX_NDIM], strides[DL_MAX_NDIM];
  int ndim = read_dims(shape_seq, "shape", shape);
  if (ndim < 0) return NULL;
  int nstrides = read_dims(strides_seq, "strides", strides);
  if (nstrides < 0) return NULL;
  if (nstrides != ndim) {
    PyErr_Format(PyExc_ValueError, "a tensor has %d dims but %d strides", ndim, nstrides);
    return NULL;
  }
  DLDataType dt = {(uint8_t)code, (uint8_t)bits, (uint16_t)lanes};
  /* The memoryview holds the buffer's export: it is what the Tensor keeps alive
   * (a bytearray cannot be resized while exported). */
  PyObject* view = PyMemoryView_FromObject(buffer);
  if (view == NULL) return NULL;
  Py_buffer* b = PyMemoryView_GET_BUFFER(view);
  if (b->readonly || !PyBuffer_IsContiguous(b, 'C')) {
    Py_DECREF(view);
    PyErr_SetString(PyExc_BufferError, "a tensor's buffer must be writable and contiguous");
    return NULL;
  }
  if (check_fits(shape, strides, ndim, dt, (int64_t)byte_offset, b->len) != 0) {
    Py_DECREF(view);
    return NULL;
  }
  DLTensor dl = {b->buf, {kDLCPU, 0}, ndim, dt, shape, strides, (uint64_t)byte_offset};
  OwnTensor* t = own_from_checked(&dl, view, -1);
  Py_DECREF(view); /* t holds its own reference */
  if (t == NULL) return NULL;
  return tvmffi_object_wrap_owned(t);
}

/* _tensor_read_only(t): whether the Tensor's memory is read-only (flagged
 * DLPACK_FLAG_BITMASK_READ_ONLY): pickle hands out read-only buffers of it. */
static PyObject* py_tensor_read_only(PyObject* self, PyObject* t) {
  (void)self;
  if (!PyObject_TypeCheck(t, &TVMFFITensorType)) {
    PyErr_Format(PyExc_TypeError, "_tensor_read_only expects a Tensor, not %.200s",
                 Py_TYPE(t)->tp_name);
    return NULL;
  }
  TVMFFIObjectHandle h = tvmffi_object_handle(t);
  if (h == NULL) return NULL;
  return PyBool_FromLong((tensor_flags(h) & DLPACK_FLAG_BITMASK_READ_ONLY) != 0);
}

static PyMethodDef buffer_methods[] = {
    {"_tensor_read_only", py_tensor_read_only, METH_O,
     "_tensor_read_only(t): whether the tensor's memory is read-only."},
    {"_tensor_from_buffer", py_tensor_from_buffer, METH_VARARGS,
     "_tensor_from_buffer(buffer, (code, bits, lanes), shape, strides, byte_offset): a CPU "
     "Tensor over a writable buffer (pickle's rebuild; every number checked)."},
    {NULL, NULL, 0, NULL},
};

int tvmffi_tensor_buffer_init(PyObject* module) {
  return PyModule_AddFunctions(module, buffer_methods);
}
