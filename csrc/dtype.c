/*
 * DataType: an immutable DLDataType (code, bits, lanes). Strings are parsed and
 * printed by the runtime so spellings match every other FFI binding; NumPy,
 * torch and ml_dtypes objects are mapped to strings by a Python hook.
 */
#include "core.h"

#include <stdlib.h>
#include <string.h>

static PyObject* g_dtype_hook; /* object -> dtype string, or raises */

PyObject* tvmffi_set_dtype_hook(PyObject* self, PyObject* hook) {
  (void)self;
  Py_XSETREF(g_dtype_hook, Py_NewRef(hook));
  Py_RETURN_NONE;
}

PyObject* tvmffi_dtype_from_dl(DLDataType dtype) {
  TVMFFIPyDataType* self = PyObject_New(TVMFFIPyDataType, &TVMFFIDataTypeType);
  if (self != NULL) self->dtype = dtype;
  return (PyObject*)self;
}

/* DLPack has complex types (kDLComplex) that the runtime's dtype strings do
 * not cover: "complex64", "complex128", with optional "xLANES". */
static int parse_complex(const char* s, DLDataType* out) {
  if (strncmp(s, "complex", 7) != 0) return 0;
  char* end;
  long bits = strtol(s + 7, &end, 10), lanes = 1;
  if (end == s + 7 || bits <= 0 || bits > 255) return 0;
  if (*end == 'x') {
    const char* p = end + 1;
    lanes = strtol(p, &end, 10);
    if (end == p || lanes <= 0 || lanes > 65535) return 0;
  }
  if (*end != 0) return 0;
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
  TVMFFIByteArray ba = {s, (size_t)len};
  if (parse_complex(s, out)) return 0;
  if (TVMFFIDataTypeFromString(&ba, out) == 0) return 0;
  tvmffi_discard_ffi_error();
  PyErr_Format(PyExc_ValueError, "invalid dtype string %R", str);
  return -1;
}

static int dtype_from_object(PyObject* value, DLDataType* out) {
  if (PyObject_TypeCheck(value, &TVMFFIDataTypeType)) {
    *out = ((TVMFFIPyDataType*)value)->dtype;
    return 0;
  }
  if (PyUnicode_Check(value)) return parse_dtype(value, out);
  if (g_dtype_hook == NULL) {
    PyErr_Format(PyExc_TypeError, "cannot interpret '%.200s' as a DataType",
                 Py_TYPE(value)->tp_name);
    return -1;
  }
  PyObject* str = PyObject_CallOneArg(g_dtype_hook, value);
  if (str == NULL) return -1;
  int rc = PyUnicode_Check(str) ? parse_dtype(str, out) : -1;
  if (rc != 0 && !PyErr_Occurred()) {
    PyErr_Format(PyExc_TypeError, "dtype hook returned '%.200s'", Py_TYPE(str)->tp_name);
  }
  Py_DECREF(str);
  return rc;
}

static PyObject* dtype_new(PyTypeObject* cls, PyObject* args, PyObject* kwargs) {
  static char* kwlist[] = {"value", NULL};
  PyObject* value;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:DataType", kwlist, &value)) return NULL;
  DLDataType dt;
  if (dtype_from_object(value, &dt) != 0) return NULL;
  TVMFFIPyDataType* self = (TVMFFIPyDataType*)cls->tp_alloc(cls, 0);
  if (self != NULL) self->dtype = dt;
  return (PyObject*)self;
}

static PyObject* dtype_str(PyObject* op) {
  DLDataType d = ((TVMFFIPyDataType*)op)->dtype;
  if (d.code == kDLComplex) {
    if (d.lanes == 1) return PyUnicode_FromFormat("complex%d", (int)d.bits);
    return PyUnicode_FromFormat("complex%dx%d", (int)d.bits, (int)d.lanes);
  }
  TVMFFIAny out = {.type_index = kTVMFFINone};
  if (TVMFFIDataTypeToString(&((TVMFFIPyDataType*)op)->dtype, &out) != 0) {
    return tvmffi_raise_ffi_error();
  }
  return tvmffi_any_to_py_owned(&out);
}

static PyObject* dtype_repr(PyObject* op) {
  PyObject* s = dtype_str(op);
  if (s == NULL) return NULL;
  PyObject* r = PyUnicode_FromFormat("DataType(%R)", s);
  Py_DECREF(s);
  return r;
}

static Py_hash_t dtype_hash(PyObject* op) {
  /* Equal to the hash of the canonical string, since DataType == str holds. */
  PyObject* s = dtype_str(op);
  if (s == NULL) return -1;
  Py_hash_t h = PyObject_Hash(s);
  Py_DECREF(s);
  return h;
}

static PyObject* dtype_richcompare(PyObject* a, PyObject* b, int op) {
  if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
  DLDataType other;
  if (PyObject_TypeCheck(b, &TVMFFIDataTypeType)) {
    other = ((TVMFFIPyDataType*)b)->dtype;
  } else if (PyUnicode_Check(b)) {
    if (parse_dtype(b, &other) != 0) {
      PyErr_Clear();
      return PyBool_FromLong(op == Py_NE);
    }
  } else {
    Py_RETURN_NOTIMPLEMENTED;
  }
  DLDataType x = ((TVMFFIPyDataType*)a)->dtype;
  int eq = x.code == other.code && x.bits == other.bits && x.lanes == other.lanes;
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static PyObject* dtype_get_code(PyObject* op, void* c) {
  (void)c;
  return PyLong_FromLong(((TVMFFIPyDataType*)op)->dtype.code);
}

static PyObject* dtype_get_bits(PyObject* op, void* c) {
  (void)c;
  return PyLong_FromLong(((TVMFFIPyDataType*)op)->dtype.bits);
}

static PyObject* dtype_get_lanes(PyObject* op, void* c) {
  (void)c;
  return PyLong_FromLong(((TVMFFIPyDataType*)op)->dtype.lanes);
}

static PyObject* dtype_get_itemsize(PyObject* op, void* c) {
  (void)c;
  DLDataType d = ((TVMFFIPyDataType*)op)->dtype;
  return PyLong_FromLong(((long)d.bits * (long)d.lanes + 7) / 8);
}

static PyObject* dtype_reduce(PyObject* op, PyObject* unused) {
  (void)unused;
  PyObject* s = dtype_str(op);
  if (s == NULL) return NULL;
  return Py_BuildValue("(O(N))", Py_TYPE(op), s);
}

static PyObject* dtype_dlpack_data_type(PyObject* op, PyObject* unused) {
  (void)unused;
  DLDataType t = ((TVMFFIPyDataType*)op)->dtype;
  return Py_BuildValue("(iii)", (int)t.code, (int)t.bits, (int)t.lanes);
}

static PyGetSetDef dtype_getset[] = {
    {"code", dtype_get_code, NULL, "DLPack type code (kDLInt=0, kDLUInt=1, kDLFloat=2, ...).",
     NULL},
    {"bits", dtype_get_bits, NULL, "Bits per lane.", NULL},
    {"lanes", dtype_get_lanes, NULL, "Number of vector lanes.", NULL},
    {"itemsize", dtype_get_itemsize, NULL, "Bytes per element, rounded up.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef dtype_methods[] = {
    {"__reduce__", dtype_reduce, METH_NOARGS, NULL},
    {"__dlpack_data_type__", dtype_dlpack_data_type, METH_NOARGS,
     "(type code, bits, lanes): the DLPack data type protocol, as the official binding reads "
     "it."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject TVMFFIDataTypeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.DataType",
    .tp_basicsize = sizeof(TVMFFIPyDataType),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "DataType(value): from a string ('float32', 'int8x4', 'bfloat16'), a NumPy or "
              "torch dtype, or a DataType.",
    .tp_new = dtype_new,
    .tp_str = dtype_str,
    .tp_repr = dtype_repr,
    .tp_hash = dtype_hash,
    .tp_richcompare = dtype_richcompare,
    .tp_getset = dtype_getset,
    .tp_methods = dtype_methods,
};

static PyObject* py_dtype_from_parts(PyObject* self, PyObject* args) {
  (void)self;
  int code, bits, lanes;
  if (!PyArg_ParseTuple(args, "iii", &code, &bits, &lanes)) return NULL;
  if (code < 0 || code > 255 || bits < 0 || bits > 255 || lanes < 0 || lanes > 65535) {
    PyErr_Format(PyExc_ValueError, "invalid dtype fields code=%d bits=%d lanes=%d", code, bits,
                 lanes);
    return NULL;
  }
  DLDataType dt = {(uint8_t)code, (uint8_t)bits, (uint16_t)lanes};
  return tvmffi_dtype_from_dl(dt);
}

static PyMethodDef dtype_module_methods[] = {
    {"dtype_from_parts", py_dtype_from_parts, METH_VARARGS,
     "dtype_from_parts(code, bits, lanes) -> DataType"},
    {NULL, NULL, 0, NULL},
};

int tvmffi_dtype_init_types(PyObject* module) {
  if (PyType_Ready(&TVMFFIDataTypeType) < 0) return -1;
  Py_INCREF(&TVMFFIDataTypeType);
  if (PyModule_AddObject(module, "DataType", (PyObject*)&TVMFFIDataTypeType) < 0) return -1;
  return PyModule_AddFunctions(module, dtype_module_methods);
}
