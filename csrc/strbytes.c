/*
 * str, bytes and arbitrary-precision ints: the payloads whose FFI form is
 * either inline in the 16-byte Any (small str/bytes, int64) or a heap object.
 */
#include "core.h"

#include <stdint.h>
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
 * words, least significant first, copied straight out of and into CPython's
 * int through its C API (PyLong_AsNativeBytes and PyLong_FromNativeBytes from
 * 3.13, the _PyLong_*ByteArray helpers they replace before). Words are
 * little-endian here; the extension refuses to build for big-endian targets. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tvmffi currently supports little-endian targets only"
#endif

/* Bytes of two's complement that hold `v`, sign bit included, rounded up to
 * whole 64-bit words; -1 with an error set. */
static Py_ssize_t bigint_word_bytes(PyObject* v) {
#if PY_VERSION_HEX >= 0x030D0000
  Py_ssize_t need = PyLong_AsNativeBytes(v, NULL, 0, Py_ASNATIVEBYTES_LITTLE_ENDIAN);
  if (need < 0) return -1;
#else
  size_t bits = _PyLong_NumBits(v); /* of |v| */
  if (bits == (size_t)-1 && PyErr_Occurred()) return -1;
  Py_ssize_t need = (Py_ssize_t)(bits / 8 + 1); /* + the sign bit */
#endif
  return (need + 7) / 8 * 8;
}

/* Fill `buf` (`n` bytes, enough by bigint_word_bytes) with `v` in two's complement. */
static int bigint_fill(PyObject* v, unsigned char* buf, Py_ssize_t n) {
#if PY_VERSION_HEX >= 0x030D0000
  return PyLong_AsNativeBytes(v, buf, n, Py_ASNATIVEBYTES_LITTLE_ENDIAN) < 0 ? -1 : 0;
#else
  return _PyLong_AsByteArray((PyLongObject*)v, buf, (size_t)n, 1, 1);
#endif
}

/* Room for ints of up to 1024 bits without a heap buffer. */
#define BIGINT_STACK_BYTES 128

int tvmffi_bigint_to_any(PyObject* v, TVMFFIAny* out, TempList* temps) {
  Py_ssize_t nbytes = bigint_word_bytes(v);
  if (nbytes < 0) return -1;
  unsigned char stack[BIGINT_STACK_BYTES];
  unsigned char* buf = nbytes <= BIGINT_STACK_BYTES ? stack : PyMem_Malloc((size_t)nbytes);
  if (buf == NULL) {
    PyErr_NoMemory();
    return -1;
  }
  int rc = bigint_fill(v, buf, nbytes);
  if (rc == 0) {
    TVMFFIByteArray ba = {(const char*)buf, (size_t)nbytes};
    out->type_index = kTVMFFINone;
    out->zero_padding = 0;
    out->v_int64 = 0;
    if (TVMFFIBigIntFromByteArray(&ba, out) != 0) {
      tvmffi_discard_ffi_error();
      PyErr_Format(PyExc_OverflowError, "int of %zd bytes is too large for the TVM FFI runtime",
                   nbytes);
      rc = -1;
    }
  }
  if (buf != stack) PyMem_Free(buf);
  if (rc != 0) return -1;
  if (out->type_index >= kTVMFFIStaticObjectBegin && temps_push(temps, out->v_obj) != 0) {
    TVMFFIObjectDecRef(out->v_obj);
    return -1;
  }
  return 0;
}

PyObject* tvmffi_bigint_to_py(const TVMFFIAny* v) {
  TVMFFIByteArray words = TVMFFIBigIntGetContentByteArray(v);
#if PY_VERSION_HEX >= 0x030D0000
  return PyLong_FromNativeBytes(words.data, words.size, Py_ASNATIVEBYTES_LITTLE_ENDIAN);
#else
  return _PyLong_FromByteArray((const unsigned char*)words.data, words.size, 1, 1);
#endif
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

/* ---- String: a str that remembers the FFI String it came from ---------------- */
/* Heap strings returned by the runtime come back as String, a str subclass
 * (as in the official binding) holding the FFI object, so passing one back
 * is zero-copy: the handle travels instead of a new String built from the
 * characters. Instances are made by str's own constructor (a str subclass's
 * character storage is CPython's business); the handle is owned. */
typedef struct {
  PyUnicodeObject base;
  TVMFFIObjectHandle handle; /* owned FFI String, NULL for String("...") made in Python */
} TVMFFIPyString;

static PyObject* string_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  return PyUnicode_Type.tp_new(type, args, kwargs); /* handle zeroed by tp_alloc */
}

static void string_dealloc(PyObject* op) {
  TVMFFIObjectHandle h = ((TVMFFIPyString*)op)->handle;
  ((TVMFFIPyString*)op)->handle = NULL;
  if (h != NULL) TVMFFIObjectDecRef(h);
  PyUnicode_Type.tp_dealloc(op);
}

static PyObject* string_get_cached(PyObject* op, void* closure) {
  (void)closure;
  TVMFFIObjectHandle h = ((TVMFFIPyString*)op)->handle;
  if (h == NULL) Py_RETURN_NONE;
  TVMFFIObjectIncRef(h);
  return tvmffi_object_wrap_owned(h);
}

/* Pickles (and copies) as a plain str, like the official String. */
static PyObject* string_reduce_ex(PyObject* op, PyObject* protocol) {
  (void)protocol;
  PyObject* plain = PyUnicode_FromObject(op); /* an exact str copy */
  if (plain == NULL) return NULL;
  return Py_BuildValue("(O(N))", (PyObject*)&PyUnicode_Type, plain);
}

static PyMethodDef string_methods[] = {
    {"__reduce_ex__", string_reduce_ex, METH_O, "Pickles as a plain str."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef string_getset[] = {
    {"_tvm_ffi_cached_object", string_get_cached, NULL,
     "The FFI String object this str came from, or None.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject TVMFFIStringType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.core.String",
    .tp_basicsize = sizeof(TVMFFIPyString),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_UNICODE_SUBCLASS,
    .tp_doc = "UTF-8 string (a str) that keeps the FFI String it came from, for zero-copy "
              "passing back.",
    .tp_dealloc = string_dealloc,
    .tp_new = string_new,
    .tp_methods = string_methods,
    .tp_getset = string_getset,
};

#if PY_VERSION_HEX < 0x030E0000 /* ascii_string_new and its test: 3.10-3.13 str layout */
/* Whether all `n` bytes are ASCII, a word at a time. */
static int all_ascii(const char* p, size_t n) {
  uint64_t acc = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    acc |= w;
  }
  for (; i < n; ++i) acc |= (unsigned char)p[i];
  return (acc & 0x8080808080808080ULL) == 0;
}

/* An ASCII String built directly in the layout str.__new__ gives instances
 * of str subclasses (CPython 3.10-3.13 "non-compact" str: the header, then a
 * separately allocated character buffer that is also the UTF-8 form, freed by
 * str's own dealloc). str.__new__(String, s) would first need a plain str and
 * an argument tuple, then copy: two allocations and two passes more, about a
 * third of echo(<100-char str>). The fields set are the public struct fields
 * of cpython/unicodeobject.h; tp_alloc zero-fills the rest. The buffer comes
 * from the allocator str's dealloc frees it with (PYTHONMALLOC=debug checks:
 * PyObject_Free up to 3.12, PyMem_Free from 3.13). */
#if PY_VERSION_HEX >= 0x030D0000 /* the allocator str's dealloc frees the buffer with */
#define STR_BUF_MALLOC PyMem_Malloc
#define STR_BUF_FREE PyMem_Free
#else
#define STR_BUF_MALLOC PyObject_Malloc
#define STR_BUF_FREE PyObject_Free
#endif
static PyObject* ascii_string_new(const char* data, size_t n) {
  char* buf = STR_BUF_MALLOC(n + 1);
  if (buf == NULL) return PyErr_NoMemory();
  PyObject* s = TVMFFIStringType.tp_alloc(&TVMFFIStringType, 0);
  if (s == NULL) {
    STR_BUF_FREE(buf);
    return NULL;
  }
  memcpy(buf, data, n);
  buf[n] = '\0';
  PyASCIIObject* a = (PyASCIIObject*)s;
  a->length = (Py_ssize_t)n;
  a->hash = -1;
  a->state.kind = PyUnicode_1BYTE_KIND;
  a->state.compact = 0;
  a->state.ascii = 1;
#if PY_VERSION_HEX < 0x030C0000
  a->state.ready = 1;
#endif
  ((PyCompactUnicodeObject*)s)->utf8_length = (Py_ssize_t)n;
  ((PyCompactUnicodeObject*)s)->utf8 = buf;
  ((PyUnicodeObject*)s)->data.any = buf;
  return s;
}
#endif

PyObject* tvmffi_string_from_owned(TVMFFIObjectHandle h) {
  const TVMFFIByteArray* chars = (const TVMFFIByteArray*)tvmffi_cell(h);
#if PY_VERSION_HEX < 0x030E0000
  if (all_ascii(chars->data, chars->size)) {
    PyObject* fast = ascii_string_new(chars->data, chars->size);
    if (fast == NULL) {
      TVMFFIObjectDecRef(h);
      return NULL;
    }
    ((TVMFFIPyString*)fast)->handle = h;
    return fast;
  }
#endif
  PyObject* plain = tvmffi_bytearray_to_str(chars);
  PyObject* args = plain == NULL ? NULL : PyTuple_Pack(1, plain);
  Py_XDECREF(plain);
  PyObject* s = args == NULL ? NULL : string_new(&TVMFFIStringType, args, NULL);
  Py_XDECREF(args);
  if (s == NULL) {
    TVMFFIObjectDecRef(h);
    return NULL;
  }
  ((TVMFFIPyString*)s)->handle = h;
  return s;
}

int tvmffi_string_to_any(PyObject* s, TVMFFIAny* out, TempList* temps) {
  TVMFFIObjectHandle h = ((TVMFFIPyString*)s)->handle;
  if (h == NULL) return tvmffi_str_to_any(s, out, temps);
  /* A view of the handle `s` owns; the caller keeps `s` alive for the call. */
  out->type_index = kTVMFFIStr;
  out->zero_padding = 0;
  out->v_obj = (TVMFFIObject*)h;
  return 0;
}

/* ---- Bytes: the bytes counterpart, a Python class (see tvmffi/_strings.py) ------ */
/* bytes keeps its characters inline, so a C subclass cannot add a field; the
 * Python class keeps the object in its __dict__ instead. Rarer than strings. */
static PyObject* g_bytes_class;

PyObject* tvmffi_set_bytes_class(PyObject* self, PyObject* cls) {
  (void)self;
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject*)cls, &PyBytes_Type)) {
    PyErr_SetString(PyExc_TypeError, "_set_bytes_class expects a bytes subclass");
    return NULL;
  }
  Py_XSETREF(g_bytes_class, Py_NewRef(cls));
  Py_RETURN_NONE;
}

PyObject* tvmffi_bytes_class(void) { return g_bytes_class; }

int tvmffi_is_bytes_class(PyTypeObject* tp) {
  return g_bytes_class != NULL && PyType_IsSubtype(tp, (PyTypeObject*)g_bytes_class);
}

/* The instance of the Bytes class (bytes.__new__ itself, not the class's
 * Python __new__) with the object in its __dict__. */
static PyObject* bytes_instance(PyObject* plain, PyObject* obj) {
  PyObject* args = PyTuple_Pack(1, plain);
  if (args == NULL) return NULL;
  PyObject* b = PyBytes_Type.tp_new((PyTypeObject*)g_bytes_class, args, NULL);
  Py_DECREF(args);
  if (b != NULL && PyObject_GenericSetAttr(b, tvmffi_str_cached_object, obj) != 0) Py_CLEAR(b);
  return b;
}

PyObject* tvmffi_bytes_from_owned(TVMFFIObjectHandle h) {
  PyObject* plain = tvmffi_bytearray_to_bytes((TVMFFIByteArray*)tvmffi_cell(h));
  if (plain == NULL || g_bytes_class == NULL) {
    TVMFFIObjectDecRef(h);
    return plain;
  }
  PyObject* obj = tvmffi_object_wrap_owned(h); /* takes h */
  PyObject* b = obj == NULL ? NULL : bytes_instance(plain, obj);
  Py_XDECREF(obj);
  Py_DECREF(plain);
  return b;
}

/* The FFI object a Bytes or Shape carries as `_tvm_ffi_cached_object`, held
 * by `temps` for the call (temps_hold_object): the attribute may be a property returning a fresh
 * object, or be replaced while the call runs (a callback), so the reference
 * GetAttr gave is not enough once dropped. 1 when passed, 0 when the value
 * is no FFI object, -1 with an exception set when the read failed. */
static inline __attribute__((always_inline)) int cached_object_to_any(PyObject* owner,
                                                                      TVMFFIAny* out,
                                                                      TempList* temps) {
  PyObject* cached = PyObject_GetAttr(owner, tvmffi_str_cached_object);
  if (cached == NULL) return -1;
  TVMFFIObjectHandle h = tvmffi_is_object(cached) ? ((TVMFFIPyObject*)cached)->handle : NULL;
  if (h == NULL) {
    Py_DECREF(cached);
    return 0;
  }
  int rc = temps_hold_object(temps, cached) == 0 ? 1 : -1; /* takes `cached` */
  if (rc > 0) {
    out->type_index = tvmffi_type_index_of(h);
    out->zero_padding = 0;
    out->v_obj = (TVMFFIObject*)h;
  }
  return rc;
}

int tvmffi_bytes_obj_to_any(PyObject* b, TVMFFIAny* out, TempList* temps) {
  int found = cached_object_to_any(b, out, temps);
  if (found > 0) return 0;
  if (found < 0) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
    PyErr_Clear(); /* a Bytes made in Python before its object was set */
  }
  return tvmffi_bytes_to_any(PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), out, temps);
}

/* ---- Shape: a tuple keeping its ffi.Shape (tvmffi/container.py), as officially ---- */
static PyObject* g_shape_class;

PyObject* tvmffi_set_shape_class(PyObject* self, PyObject* cls) {
  (void)self;
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject*)cls, &PyTuple_Type)) {
    PyErr_SetString(PyExc_TypeError, "_set_shape_class expects a tuple subclass");
    return NULL;
  }
  Py_XSETREF(g_shape_class, Py_NewRef(cls));
  Py_RETURN_NONE;
}

int tvmffi_is_shape_class(PyTypeObject* tp) {
  return g_shape_class != NULL && PyType_IsSubtype(tp, (PyTypeObject*)g_shape_class);
}

/* The Shape's dims as a tuple, its class built around it, and the handle kept
 * as a plain Object (not the Shape class: that would recurse) in its __dict__. */
PyObject* tvmffi_shape_from_owned(TVMFFIObjectHandle h) {
  if (g_shape_class == NULL) return tvmffi_object_new_of(&TVMFFIObjectType, h);
  const TVMFFIShapeCell* c = (const TVMFFIShapeCell*)tvmffi_cell(h);
  PyObject* dims = PyTuple_New((Py_ssize_t)c->size);
  for (size_t i = 0; dims != NULL && i < c->size; ++i) {
    PyObject* v = PyLong_FromLongLong(c->data[i]);
    if (v == NULL) Py_CLEAR(dims);
    else PyTuple_SET_ITEM(dims, (Py_ssize_t)i, v);
  }
  /* tuple.__new__(cls, dims): Shape.__new__ itself calls ffi.Shape, which comes here. */
  PyObject* args = dims == NULL ? NULL : PyTuple_Pack(1, dims);
  Py_XDECREF(dims);
  PyObject* shape = args == NULL ? NULL : PyTuple_Type.tp_new((PyTypeObject*)g_shape_class, args, NULL);
  Py_XDECREF(args);
  if (shape == NULL) {
    TVMFFIObjectDecRef(h);
    return NULL;
  }
  PyObject* obj = tvmffi_object_new_of(&TVMFFIObjectType, h); /* takes h */
  if (obj == NULL || PyObject_SetAttr(shape, tvmffi_str_cached_object, obj) != 0) {
    Py_XDECREF(obj);
    Py_DECREF(shape);
    return NULL;
  }
  Py_DECREF(obj);
  return shape;
}

int tvmffi_shape_obj_to_any(PyObject* shape, TVMFFIAny* out, TempList* temps) {
  int found = cached_object_to_any(shape, out, temps);
  if (found == 0) PyErr_SetString(PyExc_TypeError, "Shape holds no ffi.Shape object");
  return found > 0 ? 0 : -1;
}

/* Interned once: the type's attribute cache is keyed by the name's address,
 * so a name made afresh for each lookup (PyObject_GetAttrString) missed it
 * and walked the whole MRO (~1,300 instructions a Shape argument). */
PyObject* tvmffi_str_cached_object;

int tvmffi_strbytes_init_types(PyObject* module) {
  tvmffi_str_cached_object = PyUnicode_InternFromString("_tvm_ffi_cached_object");
  if (tvmffi_str_cached_object == NULL) return -1;
  TVMFFIStringType.tp_base = &PyUnicode_Type;
  if (PyType_Ready(&TVMFFIStringType) < 0) return -1;
  Py_INCREF(&TVMFFIStringType);
  return PyModule_AddObject(module, "String", (PyObject*)&TVMFFIStringType);
}
