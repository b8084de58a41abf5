/*
 * NumPy scalars (numpy.float32, numpy.int8 ... numpy.uint64) read in place.
 *
 * Through the generic route a NumPy scalar argument calls its type's
 * __index__ / __float__, which makes a Python int or float first (~25 ns of
 * a 65 ns call). NumPy's scalar objects hold their value right after the
 * object header (numpy/arrayscalars.h: `PyObject_HEAD; <ctype> obval;`, a
 * layout NumPy has kept since its first release), so the value is read
 * there. A type qualifies only if it is NumPy's own: the object the loaded
 * numpy module names so (a class merely named "numpy.int64" is not read),
 * with room for the value; the first value of each type is also converted
 * the generic way and compared, and a type whose values do not match keeps
 * the generic route. Types are classified once (any.c caches the kind).
 */
#include "core.h"

#include <string.h>

typedef struct {
  const char* name; /* tp_name of the exact type */
  NumpyScalarKind kind;
  size_t width;     /* bytes of obval */
} ScalarType;

static const ScalarType kTypes[] = {
    {"numpy.float32", NPS_F32, 4}, {"numpy.int8", NPS_I8, 1},     {"numpy.int16", NPS_I16, 2},
    {"numpy.int32", NPS_I32, 4},   {"numpy.int64", NPS_I64, 8},   {"numpy.longlong", NPS_I64, 8},
    {"numpy.uint8", NPS_U8, 1},    {"numpy.uint16", NPS_U16, 2},  {"numpy.uint32", NPS_U32, 4},
    {"numpy.uint64", NPS_U64, 8},  {"numpy.ulonglong", NPS_U64, 8},
};

/* Whether `tp` is the type the imported numpy module calls `name`
 * ("numpy.int64" -> numpy.int64). Without numpy imported no value of its
 * types can exist, so nothing is imported here. */
static int is_numpy_type(PyTypeObject* tp, const char* name) {
  PyObject* np = PyDict_GetItemString(PyImport_GetModuleDict(), "numpy"); /* borrowed */
  if (np == NULL) return 0;
  PyObject* attr = PyObject_GetAttrString(np, name + 6);
  if (attr == NULL) PyErr_Clear();
  int same = attr == (PyObject*)tp;
  Py_XDECREF(attr);
  return same;
}

NumpyScalarKind tvmffi_numpy_scalar_kind(PyTypeObject* tp) {
  if (strncmp(tp->tp_name, "numpy.", 6) != 0) return NPS_NONE;
  for (size_t i = 0; i < sizeof(kTypes) / sizeof(kTypes[0]); ++i) {
    if (strcmp(tp->tp_name, kTypes[i].name) == 0 &&
        (size_t)tp->tp_basicsize >= sizeof(PyObject) + kTypes[i].width && tp->tp_itemsize == 0 &&
        is_numpy_type(tp, kTypes[i].name)) {
      return kTypes[i].kind;
    }
  }
  return NPS_NONE;
}

/* The value at obval as an int64 (*out), or 0 when it does not fit one. */
static int read_int(PyObject* obj, NumpyScalarKind kind, int64_t* out) {
  const char* p = (const char*)obj + sizeof(PyObject);
  switch (kind) {
    case NPS_I8: { int8_t v; memcpy(&v, p, 1); *out = v; return 1; }
    case NPS_I16: { int16_t v; memcpy(&v, p, 2); *out = v; return 1; }
    case NPS_I32: { int32_t v; memcpy(&v, p, 4); *out = v; return 1; }
    case NPS_I64: { int64_t v; memcpy(&v, p, 8); *out = v; return 1; }
    case NPS_U8: { uint8_t v; memcpy(&v, p, 1); *out = v; return 1; }
    case NPS_U16: { uint16_t v; memcpy(&v, p, 2); *out = v; return 1; }
    case NPS_U32: { uint32_t v; memcpy(&v, p, 4); *out = v; return 1; }
    case NPS_U64: {
      uint64_t v;
      memcpy(&v, p, 8);
      if (v > (uint64_t)INT64_MAX) return 0; /* a BigInt: the generic route */
      *out = (int64_t)v;
      return 1;
    }
    default:
      return 0;
  }
}

/* 1 with *out filled, 0 when the generic route must convert it (no error). */
static int scalar_read(PyObject* obj, NumpyScalarKind kind, TVMFFIAny* out) {
  out->zero_padding = 0;
  if (kind == NPS_F32) {
    float v;
    memcpy(&v, (const char*)obj + sizeof(PyObject), sizeof(v));
    out->type_index = kTVMFFIFloat;
    out->v_float64 = v;
    return 1;
  }
  int64_t v;
  if (!read_int(obj, kind, &v)) return 0;
  out->type_index = kTVMFFIInt;
  out->v_int64 = v;
  return 1;
}

/* Whether the in-place read of `obj` gives what the generic route gives
 * (float(obj) or operator.index(obj)): 1, 0, or -1 with an error set. */
static int scalar_agrees(PyObject* obj, NumpyScalarKind kind) {
  TVMFFIAny read;
  if (!scalar_read(obj, kind, &read)) return 1; /* nothing read to check */
  if (kind == NPS_F32) {
    double d = PyFloat_AsDouble(obj);
    if (d == -1.0 && PyErr_Occurred()) return -1;
    return d == read.v_float64 || (d != d && read.v_float64 != read.v_float64);
  }
  PyObject* i = PyNumber_Index(obj);
  if (i == NULL) return -1;
  int overflow;
  long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
  Py_DECREF(i);
  if (v == -1 && PyErr_Occurred()) return -1;
  return !overflow && v == read.v_int64;
}

/* Per kind: 0 not checked yet, 1 read in place, -1 the generic route. */
static int g_state[NPS_COUNT];

int tvmffi_numpy_scalar_to_any(PyObject* obj, NumpyScalarKind kind, TVMFFIAny* out) {
  int state = TVMFFI_RELAXED_LOAD(g_state[kind]); /* threads checking at once agree */
  if (state == 0) {
    int agrees = scalar_agrees(obj, kind);
    if (agrees < 0) return -1;
    state = agrees ? 1 : -1;
    TVMFFI_RELAXED_STORE(g_state[kind], state);
  }
  return state > 0 && scalar_read(obj, kind, out);
}
