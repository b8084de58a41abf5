/*
 * str, bytes and arbitrary-precision ints: the payloads whose FFI form is
 * either inline in the 16-byte Any (small str/bytes, int64) or a heap object.
 */
#include "core.h"

#include <string.h>

/* Inline form: up to 7 bytes live in v_bytes, the rest zero-filled so the
 * content stays NUL-terminated for C consumers. */
static void small_fill(TVMFFIAny* out, int32_t type_index, const char* data, size_t size) {
  out->type_index = type_index;
  out->small_str_len = (uint32_t)size;
  out->v_int64 = 0;
  memcpy(out->v_bytes, data, size);
}

static int heap_from(int (*make)(const TVMFFIByteArray*, TVMFFIAny*), const char* data,
                     size_t size, TVMFFIAny* out, TempList* temps) {
  TVMFFIByteArray ba = {data, size};
  out->type_index = kTVMFFINone;
  out->zero_padding = 0;
  out->v_int64 = 0;
  if (make(&ba, out) != 0) {
    tvmffi_raise_ffi_error();
    return -1;
  }
  if (out->type_index >= kTVMFFIStaticObjectBegin && temps_push(temps, out->v_obj) != 0) {
    TVMFFIObjectDecRef(out->v_obj);
    return -1;
  }
  return 0;
}

int tvmffi_str_to_any(PyObject* s, TVMFFIAny* out, TempList* temps) {
  Py_ssize_t size;
  /* For ASCII strings this is the object's own buffer; otherwise CPython
   * caches one UTF-8 copy inside the str object. */
  const char* data = PyUnicode_AsUTF8AndSize(s, &size);
  if (data == NULL) return -1;
  if (size <= 7) {
    small_fill(out, kTVMFFISmallStr, data, (size_t)size);
    return 0;
  }
  return heap_from(TVMFFIStringFromByteArray, data, (size_t)size, out, temps);
}

int tvmffi_bytes_to_any(const char* data, Py_ssize_t size, TVMFFIAny* out, TempList* temps) {
  if (size <= 7) {
    small_fill(out, kTVMFFISmallBytes, data, (size_t)size);
    return 0;
  }
  return heap_from(TVMFFIBytesFromByteArray, data, (size_t)size, out, temps);
}

/* Ints beyond int64 travel as BigInt objects holding two's-complement 64-bit
 * words, least significant first. Rare, so the portable int.to_bytes path is
 * used instead of private CPython helpers. (Words are little-endian here; the
 * extension refuses to build for big-endian targets below.) */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tvmffi currently supports little-endian targets only"
#endif

/* Call `callable(*args, signed=True)`: both int.to_bytes and int.from_bytes
 * need two's complement. */
static PyObject* call_signed(PyObject* callable, PyObject* args) {
  PyObject* kw = Py_BuildValue("{s:O}", "signed", Py_True);
  PyObject* res = (callable && args && kw) ? PyObject_Call(callable, args, kw) : NULL;
  Py_XDECREF(kw);
  Py_XDECREF(callable);
  Py_XDECREF(args);
  return res;
}

int tvmffi_bigint_to_any(PyObject* v, TVMFFIAny* out, TempList* temps) {
  PyObject* bits_obj = PyObject_CallMethod(v, "bit_length", NULL);
  if (bits_obj == NULL) return -1;
  Py_ssize_t bits = PyLong_AsSsize_t(bits_obj);
  Py_DECREF(bits_obj);
  if (bits < 0) return -1;
  Py_ssize_t nbytes = ((bits + 1 + 63) / 64) * 8; /* +1 for the sign bit */
  PyObject* raw = call_signed(PyObject_GetAttrString(v, "to_bytes"),
                              Py_BuildValue("(ns)", nbytes, "little"));
  if (raw == NULL) return -1;
  TVMFFIByteArray ba = {PyBytes_AS_STRING(raw), (size_t)PyBytes_GET_SIZE(raw)};
  out->type_index = kTVMFFINone;
  out->zero_padding = 0;
  out->v_int64 = 0;
  int rc = TVMFFIBigIntFromByteArray(&ba, out);
  Py_DECREF(raw);
  if (rc != 0) {
    PyObject* err = tvmffi_raise_ffi_error();
    (void)err;
    PyErr_Clear();
    PyErr_Format(PyExc_OverflowError, "int of %zd bits is too large for the TVM FFI runtime", bits);
    return -1;
  }
  if (out->type_index >= kTVMFFIStaticObjectBegin && temps_push(temps, out->v_obj) != 0) {
    TVMFFIObjectDecRef(out->v_obj);
    return -1;
  }
  return 0;
}

PyObject* tvmffi_bigint_to_py(const TVMFFIAny* v) {
  TVMFFIByteArray words = TVMFFIBigIntGetContentByteArray(v);
  PyObject* raw = PyBytes_FromStringAndSize(words.data, (Py_ssize_t)words.size);
  if (raw == NULL) return NULL;
  return call_signed(PyObject_GetAttrString((PyObject*)&PyLong_Type, "from_bytes"),
                     Py_BuildValue("(Ns)", raw, "little"));
}

PyObject* tvmffi_small_str_to_py(const TVMFFIAny* v) {
  return PyUnicode_DecodeUTF8(v->v_bytes, (Py_ssize_t)v->small_str_len, NULL);
}

PyObject* tvmffi_small_bytes_to_py(const TVMFFIAny* v) {
  return PyBytes_FromStringAndSize(v->v_bytes, (Py_ssize_t)v->small_str_len);
}

PyObject* tvmffi_bytearray_to_str(const TVMFFIByteArray* b) {
  return PyUnicode_DecodeUTF8(b->data, (Py_ssize_t)b->size, NULL);
}

PyObject* tvmffi_bytearray_to_bytes(const TVMFFIByteArray* b) {
  return PyBytes_FromStringAndSize(b->data, (Py_ssize_t)b->size);
}
