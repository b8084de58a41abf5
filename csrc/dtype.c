/*
 * tvmffi.dtype: the official binding's data type, a `str` subclass that also
 * carries its DLDataType (code, bits, lanes).
 *
 * The text is what the user wrote ("f32" stays "f32", as in the official
 * binding, so equality and hashing are the str's); dtypes made from a
 * DLDataType (results of calls, Tensor.dtype) carry the runtime's canonical
 * string. Strings are parsed and printed by the runtime so spellings match
 * every other FFI binding; NumPy, torch and ml_dtypes objects are mapped to
 * strings by a Python hook (dtype.py).
 */
#include "core.h"

#include <string.h>

static PyObject* g_dtype_hook; /* object -> dtype string, or raises */

PyObject* tvmffi_set_dtype_hook(PyObject* self, PyObject* hook) {
  (void)self;
  Py_XSETREF(g_dtype_hook, Py_NewRef(hook));
  Py_RETURN_NONE;
}

/* ---- parsing ------------------------------------------------------------------ */

/* Decimal digits spanning exactly [s, end); -1 when none or not all digits. */
static long parse_decimal(const char* s, const char* end) {
  if (s == end || end - s > 9) return -1;
  long v = 0;
  for (; s < end; ++s) {
    if (*s < '0' || *s > '9') return -1;
    v = v * 10 + (*s - '0');
  }
  return v;
}

/* DLPack has complex types (kDLComplex) that the runtime's dtype strings do
 * not cover: "complex64", "complex128", with optional "xLANES". The whole
 * [s, s+len) must match, so text after an embedded NUL is never ignored. */
static int parse_complex(const char* s, Py_ssize_t len, DLDataType* out) {
  const char* end = s + len;
  if (len < 8 || strncmp(s, "complex", 7) != 0) return 0;
  const char* p = s + 7;
  const char* x = memchr(p, 'x', (size_t)(end - p));
  long bits = parse_decimal(p, x != NULL ? x : end), lanes = 1;
  if (bits <= 0 || bits > 255) return 0;
  if (x != NULL) {
    lanes = parse_decimal(x + 1, end);
    if (lanes <= 0 || lanes > 32767) return 0;
  }
  out->code = kDLComplex;
  out->bits = (uint8_t)bits;
  out->lanes = (uint16_t)lanes;
  return 1;
}

/* Parse with the runtime; a bad string is a ValueError naming it. */
static int parse_dtype(PyObject* str, DLDataType* out) {
  Py_ssize_t len;
  const char* s = PyUnicode_AsUTF8AndSize(str, &len);
  if (s == NULL) return -1;
  if (parse_complex(s, len, out)) return 0;
  TVMFFIByteArray ba = {s, (size_t)len};
  if (TVMFFIDataTypeFromString(&ba, out) == 0) return 0;
  tvmffi_discard_ffi_error();
  PyErr_Format(PyExc_ValueError, "invalid dtype string %R", str);
  return -1;
}

/* The runtime's canonical string of `dt`. */
static PyObject* canonical_text(DLDataType dt) {
  if (dt.code == kDLComplex) {
    if (dt.lanes == 1) return PyUnicode_FromFormat("complex%d", (int)dt.bits);
    return PyUnicode_FromFormat("complex%dx%d", (int)dt.bits, (int)dt.lanes);
  }
  TVMFFIAny out = {.type_index = kTVMFFINone};
  if (TVMFFIDataTypeToString(&dt, &out) != 0) return tvmffi_raise_ffi_error();
  PyObject* s = tvmffi_any_to_py_owned(&out);
  if (s != NULL && !PyUnicode_Check(s)) {
    Py_DECREF(s);
    PyErr_SetString(PyExc_RuntimeError, "TVMFFIDataTypeToString returned a non-string");
    return NULL;
  }
  /* A heap result comes back as a String (a str subclass): keep a plain str. */
  if (s != NULL && !PyUnicode_CheckExact(s)) Py_SETREF(s, PyUnicode_FromObject(s));
  return s;
}

/* The dtype string of a non-string dtype-like (NumPy, torch, ml_dtypes). */
static PyObject* hook_text(PyObject* value) {
  if (g_dtype_hook == NULL) return PyObject_Str(value);
  PyObject* str = PyObject_CallOneArg(g_dtype_hook, value);
  if (str != NULL && !PyUnicode_Check(str)) {
    PyErr_Format(PyExc_TypeError, "dtype hook returned '%.200s'", Py_TYPE(str)->tp_name);
    Py_CLEAR(str);
  }
  return str;
}

/* ---- objects -------------------------------------------------------------------- */

/* A new `cls` instance with text `text` and value `dt`. */
static PyObject* dtype_make(PyTypeObject* cls, PyObject* text, DLDataType dt) {
  PyObject* args = PyTuple_Pack(1, text);
  if (args == NULL) return NULL;
  PyObject* self = PyUnicode_Type.tp_new(cls, args, NULL);
  Py_DECREF(args);
  if (self != NULL) ((TVMFFIPyDataType*)self)->dtype = dt;
  return self;
}

/* Results of calls and Tensor.dtype: dtypes are immutable, so one shared
 * instance per (code, bits, lanes) serves every result (direct-mapped). */
#define DTYPE_CACHE_SIZE 128
static struct {
  uint32_t key;
  PyObject* value; /* owned; NULL when empty */
} g_dtype_cache[DTYPE_CACHE_SIZE];

static uint32_t dtype_key(DLDataType dt) {
  return (uint32_t)dt.code | ((uint32_t)dt.bits << 8) | ((uint32_t)dt.lanes << 16);
}

/* g_dtype_cache and g_like_cache without a GIL: held for a lookup or a store
 * (no Python code), so an entry is never read half written or freed while
 * its reference is taken. */
static TVMFFIMutex g_cache_lock;

PyObject* tvmffi_dtype_from_dl(DLDataType dt) {
  uint32_t key = dtype_key(dt);
  size_t slot = (key * 2654435761u) >> 25; /* top 7 bits: 0..127 */
  PyObject* hit = NULL;
  TVMFFI_LOCK(&g_cache_lock);
  if (g_dtype_cache[slot].value != NULL && g_dtype_cache[slot].key == key) {
    hit = Py_NewRef(g_dtype_cache[slot].value);
  }
  TVMFFI_UNLOCK(&g_cache_lock);
  if (hit != NULL) return hit;
  PyObject* text = canonical_text(dt);
  if (text == NULL) return NULL;
  PyObject* self = dtype_make(&TVMFFIDataTypeType, text, dt);
  Py_DECREF(text);
  if (self == NULL) return NULL;
  TVMFFI_LOCK(&g_cache_lock);
  PyObject* old = g_dtype_cache[slot].value;
  g_dtype_cache[slot].value = Py_NewRef(self);
  g_dtype_cache[slot].key = key;
  TVMFFI_UNLOCK(&g_cache_lock);
  Py_XDECREF(old);
  return self;
}

/* The value of any dtype-like: a dtype, a string, or what the hook maps. */
int tvmffi_dtype_value(PyObject* value, DLDataType* out) {
  if (PyObject_TypeCheck(value, &TVMFFIDataTypeType)) {
    *out = ((TVMFFIPyDataType*)value)->dtype;
    return 0;
  }
  if (PyUnicode_Check(value)) return parse_dtype(value, out);
  PyObject* text = hook_text(value);
  if (text == NULL) return -1;
  int rc = parse_dtype(text, out);
  Py_DECREF(text);
  return rc;
}

/* `module.attr` as a type once `module` is imported, else NULL (no error):
 * until then no instance of it can exist. Found types are kept for the life
 * of the process in `*cache`. */
static PyTypeObject* imported_type(const char* module, const char* attr, PyTypeObject** cache) {
  PyTypeObject* known = TVMFFI_LOAD_PTR(*cache);
  if (known != NULL) return known;
  PyObject* name = PyUnicode_FromString(module);
  PyObject* mod = name == NULL ? NULL : PyImport_GetModule(name);
  Py_XDECREF(name);
  PyObject* t = mod == NULL ? NULL : PyObject_GetAttrString(mod, attr);
  Py_XDECREF(mod);
  if (t == NULL || !PyType_Check(t)) {
    Py_XDECREF(t);
    PyErr_Clear();
    return NULL;
  }
  return (PyTypeObject*)tvmffi_publish_once((PyObject**)cache, t);
}

/* torch.dtype and numpy.dtype instances (NumPy's and ml_dtypes'), which the
 * official binding converts to DLDataType arguments, and the official
 * binding's own dtype (a str subclass that would otherwise pass as a str). */
int tvmffi_is_dtype_like_type(PyTypeObject* tp) {
  static PyTypeObject *np_dtype, *official_dtype;
  if (strcmp(tp->tp_name, "torch.dtype") == 0) return 1;
  PyTypeObject* t = imported_type("numpy", "dtype", &np_dtype);
  if (t != NULL && PyType_IsSubtype(tp, t)) return 1;
  t = imported_type("tvm_ffi._dtype", "dtype", &official_dtype);
  return t != NULL && PyType_IsSubtype(tp, t);
}

/* Argument conversion of a dtype-like object; torch and NumPy dtypes are
 * long-lived singletons, so their values are cached by identity (entries
 * own a reference, so an address is never reused while cached). */
#define LIKE_CACHE_SIZE 32
static struct {
  PyObject* obj;
  DLDataType dtype;
} g_like_cache[LIKE_CACHE_SIZE];

int tvmffi_dtype_like_to_dl(PyObject* obj, DLDataType* out) {
  size_t slot = ((uintptr_t)obj >> 4) % LIKE_CACHE_SIZE;
  TVMFFI_LOCK(&g_cache_lock);
  int hit = g_like_cache[slot].obj == obj;
  if (hit) *out = g_like_cache[slot].dtype;
  TVMFFI_UNLOCK(&g_cache_lock);
  if (hit) return 0;
  if (tvmffi_dtype_value(obj, out) != 0) return -1;
  TVMFFI_LOCK(&g_cache_lock);
  PyObject* old = g_like_cache[slot].obj;
  g_like_cache[slot].obj = Py_NewRef(obj);
  g_like_cache[slot].dtype = *out;
  TVMFFI_UNLOCK(&g_cache_lock);
  Py_XDECREF(old);
  return 0;
}

/* dtype(content): from a string (kept as written), a dtype, or a NumPy,
 * torch or ml_dtypes dtype (given the runtime's canonical string). */
static PyObject* dtype_new(PyTypeObject* cls, PyObject* args, PyObject* kwargs) {
  static char* kwlist[] = {"content", NULL};
  PyObject* value;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:dtype", kwlist, &value)) return NULL;
  if (Py_IS_TYPE(value, &TVMFFIDataTypeType) && cls == &TVMFFIDataTypeType) {
    return Py_NewRef(value);
  }
  DLDataType dt;
  if (tvmffi_dtype_value(value, &dt) != 0) return NULL;
  PyObject* text = PyUnicode_Check(value) ? PyUnicode_FromObject(value) : canonical_text(dt);
  if (text == NULL) return NULL;
  PyObject* self = dtype_make(cls, text, dt);
  Py_DECREF(text);
  return self;
}

static DLDataType dtype_of(PyObject* op) { return ((TVMFFIPyDataType*)op)->dtype; }

/* Lanes as the runtime reads them: negative for scalable vectors
 * ("int32xvscalex4" has -4), as the official binding reports. */
static int dtype_lanes(DLDataType d) { return (int)(int16_t)d.lanes; }

static PyObject* dtype_repr(PyObject* op) { return PyUnicode_FromFormat("dtype('%U')", op); }

static PyObject* dtype_get_code(PyObject* op, void* c) {
  (void)c;
  return PyLong_FromLong(dtype_of(op).code);
}

static PyObject* dtype_get_bits(PyObject* op, void* c) {
  (void)c;
  return PyLong_FromLong(dtype_of(op).bits);
}

static PyObject* dtype_get_lanes(PyObject* op, void* c) {
  (void)c;
  return PyLong_FromLong(dtype_lanes(dtype_of(op)));
}

static PyObject* dtype_get_itemsize(PyObject* op, void* c) {
  (void)c;
  DLDataType d = dtype_of(op);
  int lanes = dtype_lanes(d);
  if (lanes < 0) {
    PyErr_Format(PyExc_ValueError, "cannot determine the itemsize of scalable vector dtype %R",
                 op);
    return NULL;
  }
  return PyLong_FromLong(((long)d.bits * lanes + 7) / 8);
}

static int is_float_code(int code) {
  return code == kDLFloat || code == kDLBfloat || (code >= 7 && code <= 17);
}

static PyObject* dtype_get_is_bool(PyObject* op, void* c) {
  (void)c;
  return PyBool_FromLong(dtype_of(op).code == kDLBool);
}

static PyObject* dtype_get_is_integer(PyObject* op, void* c) {
  (void)c;
  int code = dtype_of(op).code;
  return PyBool_FromLong(code == kDLInt || code == kDLUInt);
}

static PyObject* dtype_get_is_float(PyObject* op, void* c) {
  (void)c;
  return PyBool_FromLong(is_float_code(dtype_of(op).code));
}

static PyObject* dtype_get_is_handle(PyObject* op, void* c) {
  (void)c;
  return PyBool_FromLong(dtype_of(op).code == kDLOpaqueHandle);
}

/* A dtype from DLPack fields, checked to fit DLDataType (lanes as int16, as
 * the runtime reads them). */
static PyObject* dtype_from_fields(long code, long bits, long lanes) {
  if (code < 0 || code > 255 || bits < 0 || bits > 255 || lanes < INT16_MIN || lanes > INT16_MAX) {
    PyErr_Format(PyExc_ValueError,
                 "invalid DLPack data type (code=%ld, bits=%ld, lanes=%ld): code and bits must "
                 "be in [0, 255] and lanes in [-32768, 32767]",
                 code, bits, lanes);
    return NULL;
  }
  DLDataType dt = {(uint8_t)code, (uint8_t)bits, (uint16_t)(int16_t)lanes};
  return tvmffi_dtype_from_dl(dt);
}

static PyObject* dtype_with_lanes(PyObject* op, PyObject* arg) {
  long lanes = PyLong_AsLong(arg);
  if (lanes == -1 && PyErr_Occurred()) return NULL;
  DLDataType d = dtype_of(op);
  return dtype_from_fields(d.code, d.bits, lanes);
}

static PyObject* dtype_from_dlpack_data_type(PyObject* unused, PyObject* arg) {
  (void)unused;
  PyObject* t = PySequence_Tuple(arg);
  if (t == NULL) return NULL;
  long code, bits, lanes;
  int ok = PyArg_ParseTuple(t, "lll:from_dlpack_data_type", &code, &bits, &lanes);
  Py_DECREF(t);
  return ok ? dtype_from_fields(code, bits, lanes) : NULL;
}

static PyObject* dtype_is_dtype(PyObject* unused, PyObject* arg) {
  (void)unused;
  if (PyObject_TypeCheck(arg, &TVMFFIDataTypeType)) Py_RETURN_TRUE;
  PyObject* text = PyObject_Str(arg);
  if (text == NULL) return NULL;
  DLDataType dt;
  int rc = parse_dtype(text, &dt);
  Py_DECREF(text);
  if (rc == 0) Py_RETURN_TRUE;
  if (!PyErr_ExceptionMatches(PyExc_ValueError)) return NULL;
  PyErr_Clear();
  Py_RETURN_FALSE;
}

static PyObject* dtype_reduce(PyObject* op, PyObject* unused) {
  (void)unused;
  PyObject* text = PyUnicode_FromObject(op); /* the plain str */
  if (text == NULL) return NULL;
  return Py_BuildValue("(O(N))", Py_TYPE(op), text);
}

static PyObject* dtype_dlpack_data_type(PyObject* op, PyObject* unused) {
  (void)unused;
  DLDataType t = ((TVMFFIPyDataType*)op)->dtype;
  return Py_BuildValue("(iii)", (int)t.code, (int)t.bits, (int)t.lanes);
}

static PyGetSetDef dtype_getset[] = {
    {"type_code", dtype_get_code, NULL,
     "DLPack type code of the scalar type (kDLInt=0, kDLUInt=1, kDLFloat=2, ...).", NULL},
    {"code", dtype_get_code, NULL, "Alias of type_code (tvmffi's earlier name).", NULL},
    {"bits", dtype_get_bits, NULL, "Bits per lane.", NULL},
    {"lanes", dtype_get_lanes, NULL,
     "Number of vector lanes (1 for scalars; negative for scalable vectors).", NULL},
    {"itemsize", dtype_get_itemsize, NULL,
     "Bytes per element, (bits * lanes + 7) // 8; ValueError for scalable vectors.", NULL},
    {"is_bool", dtype_get_is_bool, NULL, "Whether this dtype stores booleans.", NULL},
    {"is_integer", dtype_get_is_integer, NULL, "Whether this dtype stores (u)ints.", NULL},
    {"is_float", dtype_get_is_float, NULL,
     "Whether this dtype stores floating point values (float, bfloat, float8/6/4).", NULL},
    {"is_handle", dtype_get_is_handle, NULL, "Whether this dtype stores opaque handles.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef dtype_methods[] = {
    {"__reduce__", dtype_reduce, METH_NOARGS, NULL},
    {"__dlpack_data_type__", dtype_dlpack_data_type, METH_NOARGS,
     "(type code, bits, lanes): the DLPack data type protocol, as the official binding reads "
     "it."},
    {"with_lanes", dtype_with_lanes, METH_O,
     "with_lanes(lanes) -> dtype: the same scalar type with `lanes` lanes."},
    {"from_dlpack_data_type", dtype_from_dlpack_data_type, METH_O | METH_STATIC,
     "from_dlpack_data_type((type_code, bits, lanes)) -> dtype"},
    {"is_dtype", dtype_is_dtype, METH_O | METH_STATIC,
     "is_dtype(arg) -> bool: whether `arg` is a dtype or a valid dtype string."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject TVMFFIDataTypeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.dtype",
    .tp_basicsize = sizeof(TVMFFIPyDataType),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    /* .tp_doc: set by type_docs.c */
    .tp_base = &PyUnicode_Type,
    .tp_new = dtype_new,
    .tp_repr = dtype_repr,
    .tp_getset = dtype_getset,
    .tp_methods = dtype_methods,
};

int tvmffi_dtype_init_types(PyObject* module) {
  if (PyType_Ready(&TVMFFIDataTypeType) < 0) return -1;
  /* The official dtype is a Python class its clients extend with class
   * attributes (TVM reads and fills dtype._NUMPY_DTYPE_TO_STR): ours stays
   * open to that too. PyType_Ready marks static types immutable; setattr on
   * the type then updates tp_dict and invalidates the method cache as on any
   * heap type. */
  TVMFFIDataTypeType.tp_flags &= ~Py_TPFLAGS_IMMUTABLETYPE;
  if (tvmffi_make_new_replaceable(&TVMFFIDataTypeType) < 0) return -1;
  Py_INCREF(&TVMFFIDataTypeType);
  if (PyModule_AddObject(module, "dtype", (PyObject*)&TVMFFIDataTypeType) < 0) return -1;
  Py_INCREF(&TVMFFIDataTypeType);
  return PyModule_AddObject(module, "DataType", (PyObject*)&TVMFFIDataTypeType);
}
