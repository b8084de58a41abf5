/*
 * Device: an immutable (DLPack device type, index) pair.
 */
#include "core.h"

#include <string.h>

/* DLPack device type codes and their names; gaps are unassigned codes. */
static const char* const kDeviceNames[] = {
    NULL,          "cpu",    "cuda",      "cuda_host", "opencl",       NULL,     NULL,
    "vulkan",      "metal",  "vpi",       "rocm",      "rocm_host",    "ext_dev", "cuda_managed",
    "oneapi",      "webgpu", "hexagon",   "maia",      "trn",
};
#define NUM_DEVICE_CODES ((int)(sizeof(kDeviceNames) / sizeof(kDeviceNames[0])))

static const char* device_name(int code) {
  return code > 0 && code < NUM_DEVICE_CODES ? kDeviceNames[code] : NULL;
}

/* Names accepted besides the canonical ones (as the official binding does). */
static const struct {
  const char* name;
  int code;
} kDeviceAliases[] = {{"mps", 8}, {"wgpu", 15}};

static int device_code(const char* name, Py_ssize_t len) {
  for (int code = 0; code < NUM_DEVICE_CODES; ++code) {
    const char* n = kDeviceNames[code];
    if (n != NULL && (Py_ssize_t)strlen(n) == len && memcmp(n, name, (size_t)len) == 0) return code;
  }
  for (size_t i = 0; i < sizeof(kDeviceAliases) / sizeof(kDeviceAliases[0]); ++i) {
    const char* n = kDeviceAliases[i].name;
    if ((Py_ssize_t)strlen(n) == len && memcmp(n, name, (size_t)len) == 0) {
      return kDeviceAliases[i].code;
    }
  }
  return -1;
}

static PyObject* device_alloc(PyTypeObject* cls, DLDevice dev);

/* The class of the devices the binding hands out (call results, fields,
 * container items, tensor.device, tvmffi.device()): tvmffi.Device unless a
 * client registered its subclass (the official core._set_class_device, as
 * TVM does with tvm.runtime.Device). Holds a reference (taken at init). */
static PyTypeObject* g_device_class = &TVMFFIDeviceType;

PyObject* tvmffi_device_from_dl(DLDevice dev) {
  if (g_device_class != &TVMFFIDeviceType) return device_alloc(g_device_class, dev);
  TVMFFIPyDevice* self = PyObject_New(TVMFFIPyDevice, &TVMFFIDeviceType);
  if (self != NULL) self->device = dev;
  return (PyObject*)self;
}

static PyObject* set_class_device(PyObject* self, PyObject* cls) {
  (void)self;
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject*)cls, &TVMFFIDeviceType)) {
    PyErr_Format(PyExc_TypeError, "_set_class_device: %R is not a subclass of tvmffi.Device",
                 cls);
    return NULL;
  }
  Py_SETREF(g_device_class, (PyTypeObject*)Py_NewRef(cls));
  Py_RETURN_NONE;
}

static PyObject* device_class(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  return Py_NewRef((PyObject*)g_device_class);
}

static int parse_index(PyObject* obj, int32_t* out) {
  if (!PyIndex_Check(obj)) {
    PyErr_Format(PyExc_TypeError, "device index must be an int, not '%.200s'",
                 Py_TYPE(obj)->tp_name);
    return -1;
  }
  int overflow;
  long v = PyLong_AsLongAndOverflow(obj, &overflow);
  if (v == -1 && PyErr_Occurred()) return -1;
  if (overflow || v < 0 || v > INT32_MAX) {
    PyErr_Format(PyExc_ValueError, "device index must be in [0, 2**31), got %S", obj);
    return -1;
  }
  *out = (int32_t)v;
  return 0;
}

/* Decimal digits only, all of [s, s+len): no sign, spaces or NULs. */
static int parse_digits(const char* s, Py_ssize_t len, int32_t* out) {
  if (len <= 0 || len > 10) return -1;
  int64_t v = 0;
  for (Py_ssize_t i = 0; i < len; ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  if (v > INT32_MAX) return -1;
  *out = (int32_t)v;
  return 0;
}

/* ValueError with `fmt` applied to the UTF-8 text [s, s+len); returns -1. */
static int value_error_text(const char* fmt, const char* s, Py_ssize_t len) {
  PyObject* text = PyUnicode_DecodeUTF8(s, len, "replace");
  if (text != NULL) PyErr_Format(PyExc_ValueError, fmt, text);
  Py_XDECREF(text);
  return -1;
}

/* "cuda", "cuda:1" -> code and (optionally) index. As in the official
 * binding, text after the first space is an annotation and is ignored
 * ("cuda:0 (note)"); the rest is "name" or "name:index". */
static int parse_name(PyObject* str, int* code, int32_t* index, int* has_index) {
  Py_ssize_t len;
  const char* s = PyUnicode_AsUTF8AndSize(str, &len);
  if (s == NULL) return -1;
  const char* space = memchr(s, ' ', (size_t)len);
  if (space != NULL) len = space - s;
  const char* colon = memchr(s, ':', (size_t)len);
  Py_ssize_t name_len = colon ? colon - s : len;
  if (colon != NULL && memchr(colon + 1, ':', (size_t)(len - name_len - 1)) != NULL) {
    return value_error_text("Invalid device: %U", s, len);
  }
  *code = device_code(s, name_len);
  if (*code < 0) return value_error_text("Unknown device: %U", s, name_len);
  *has_index = colon != NULL;
  if (!colon) return 0;
  if (parse_digits(colon + 1, len - name_len - 1, index) != 0) {
    return value_error_text("Invalid device index: %R", colon + 1, len - name_len - 1);
  }
  return 0;
}

static int parse_type(PyObject* type, int* code, int32_t* index, int* has_index) {
  *has_index = 0;
  if (PyUnicode_Check(type)) return parse_name(type, code, index, has_index);
  if (PyLong_Check(type) && !PyBool_Check(type)) {
    int overflow;
    long v = PyLong_AsLongAndOverflow(type, &overflow);
    if (v == -1 && PyErr_Occurred()) return -1;
    /* Range first: a long outside int must not wrap onto a known code. */
    if (overflow || v <= 0 || v >= NUM_DEVICE_CODES || device_name((int)v) == NULL) {
      PyErr_Format(PyExc_ValueError, "unknown DLPack device type code %S", type);
      return -1;
    }
    *code = (int)v;
    return 0;
  }
  PyErr_Format(PyExc_TypeError, "device type must be a str or an int, not '%.200s'",
               Py_TYPE(type)->tp_name);
  return -1;
}

static PyObject* device_alloc(PyTypeObject* cls, DLDevice dev) {
  TVMFFIPyDevice* self = (TVMFFIPyDevice*)cls->tp_alloc(cls, 0);
  if (self != NULL) self->device = dev;
  return (PyObject*)self;
}

/* Device(type, index=None). As in the official binding, an index written in
 * the string ("cuda:1") wins over `index`, and a missing one is 0. */
static PyObject* device_new(PyTypeObject* cls, PyObject* args, PyObject* kwargs) {
  static char* kwlist[] = {"device_type", "index", NULL};
  PyObject *type, *index_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:Device", kwlist, &type, &index_obj)) {
    return NULL;
  }
  if (PyObject_TypeCheck(type, &TVMFFIDeviceType) && index_obj == Py_None) {
    return device_alloc(cls, ((TVMFFIPyDevice*)type)->device);
  }
  int code, has_index;
  int32_t index = 0;
  if (parse_type(type, &code, &index, &has_index) != 0) return NULL;
  if (index_obj != Py_None && !has_index && parse_index(index_obj, &index) != 0) return NULL;
  DLDevice dev = {(DLDeviceType)code, index};
  return device_alloc(cls, dev);
}

/* A subclass may name its device types itself (TVM's RPC devices,
 * "remote[0]:cpu"), as the official binding asks __device_type_name__. */
static int is_subclass_instance(PyObject* op) { return !Py_IS_TYPE(op, &TVMFFIDeviceType); }

/* `fmt` ("%S" the name, "%d" the index) with the name the instance gives itself. */
static PyObject* format_own_name(PyObject* op, const char* fmt) {
  PyObject* name = PyObject_CallMethod(op, "__device_type_name__", NULL);
  if (name == NULL) return NULL;
  PyObject* r = PyUnicode_FromFormat(fmt, name, ((TVMFFIPyDevice*)op)->device.device_id);
  Py_DECREF(name);
  return r;
}

static PyObject* device_str(PyObject* op) {
  DLDevice d = ((TVMFFIPyDevice*)op)->device;
  if (is_subclass_instance(op)) return format_own_name(op, "%S:%d");
  const char* name = device_name((int)d.device_type);
  if (name == NULL) return PyUnicode_FromFormat("device%d:%d", (int)d.device_type, d.device_id);
  return PyUnicode_FromFormat("%s:%d", name, d.device_id);
}

static PyObject* device_repr(PyObject* op) {
  DLDevice d = ((TVMFFIPyDevice*)op)->device;
  if (is_subclass_instance(op)) return format_own_name(op, "device(type='%S', index=%d)");
  const char* name = device_name((int)d.device_type);
  if (name == NULL) return PyUnicode_FromFormat("device(type=%d, index=%d)", (int)d.device_type,
                                                d.device_id);
  return PyUnicode_FromFormat("device(type='%s', index=%d)", name, d.device_id);
}

static Py_hash_t device_hash(PyObject* op) {
  DLDevice d = ((TVMFFIPyDevice*)op)->device;
  Py_hash_t h = (Py_hash_t)(((uint64_t)d.device_type << 32) ^ (uint32_t)d.device_id);
  return h == -1 ? -2 : h;
}

static PyObject* device_richcompare(PyObject* a, PyObject* b, int op) {
  if ((op != Py_EQ && op != Py_NE) || !PyObject_TypeCheck(b, &TVMFFIDeviceType)) {
    Py_RETURN_NOTIMPLEMENTED;
  }
  DLDevice x = ((TVMFFIPyDevice*)a)->device, y = ((TVMFFIPyDevice*)b)->device;
  int eq = x.device_type == y.device_type && x.device_id == y.device_id;
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static PyObject* device_get_type(PyObject* op, void* c) {
  (void)c;
  const char* name = device_name((int)((TVMFFIPyDevice*)op)->device.device_type);
  return name ? PyUnicode_FromString(name) : PyUnicode_FromString("unknown");
}

static PyObject* device_type_name_method(PyObject* op, PyObject* unused) {
  (void)unused;
  return device_get_type(op, NULL);
}

static PyObject* device_get_index(PyObject* op, void* c) {
  (void)c;
  return PyLong_FromLong(((TVMFFIPyDevice*)op)->device.device_id);
}

static PyObject* device_code_method(PyObject* op, PyObject* unused) {
  (void)unused;
  return PyLong_FromLong((long)((TVMFFIPyDevice*)op)->device.device_type);
}

static PyObject* device_reduce(PyObject* op, PyObject* unused) {
  (void)unused;
  DLDevice d = ((TVMFFIPyDevice*)op)->device;
  return Py_BuildValue("(O(ii))", Py_TYPE(op), (int)d.device_type, d.device_id);
}

static PyObject* device_dlpack_device(PyObject* op, PyObject* unused) {
  (void)unused;
  DLDevice d = ((TVMFFIPyDevice*)op)->device;
  return Py_BuildValue("(ii)", (int)d.device_type, d.device_id);
}

static PyGetSetDef device_getset[] = {
    {"type", device_get_type, NULL, "Device type name, e.g. 'cuda'.", NULL},
    {"index", device_get_index, NULL, "Device index (ordinal).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef device_methods[] = {
    {"__reduce__", device_reduce, METH_NOARGS, NULL},
    {"dlpack_device_type", device_code_method, METH_NOARGS,
     "dlpack_device_type() -> int: the DLPack device type code (a DLDeviceType value)."},
    {"__device_type_name__", device_type_name_method, METH_NOARGS,
     "__device_type_name__() -> str: the canonical device type name, e.g. 'cuda'."},
    {"_dlpack_pair", device_dlpack_device, METH_NOARGS,
     "(DLPack device type code, index) as in __dlpack_device__."},
    {"__dlpack_device__", device_dlpack_device, METH_NOARGS,
     "(DLPack device type code, index): the DLPack device protocol, as the official binding "
     "reads it."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject TVMFFIDeviceType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.Device",
    .tp_basicsize = sizeof(TVMFFIPyDevice),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    /* .tp_doc: set by type_docs.c */
    .tp_new = device_new,
    .tp_str = device_str,
    .tp_repr = device_repr,
    .tp_hash = device_hash,
    .tp_richcompare = device_richcompare,
    .tp_getset = device_getset,
    .tp_methods = device_methods,
};

static PyMethodDef device_module_methods[] = {
    {"_set_class_device", set_class_device, METH_O,
     "_set_class_device(cls): devices the binding hands out are instances of `cls`, a "
     "subclass of Device (the official core._set_class_device)."},
    {"_device_class", device_class, METH_NOARGS,
     "_device_class() -> type: the class of the devices the binding hands out."},
    {NULL, NULL, 0, NULL},
};

/* Device._DEVICE_TYPE_TO_NAME {code: name}, from kDeviceNames: subclasses
 * (TVM's) look names up there, as on the official class. */
static int add_name_table(void) {
  PyObject* table = PyDict_New();
  if (table == NULL) return -1;
  for (int code = 0; code < NUM_DEVICE_CODES; ++code) {
    if (kDeviceNames[code] == NULL) continue;
    PyObject* key = PyLong_FromLong(code);
    PyObject* name = PyUnicode_FromString(kDeviceNames[code]);
    int rc = key && name ? PyDict_SetItem(table, key, name) : -1;
    Py_XDECREF(key);
    Py_XDECREF(name);
    if (rc != 0) {
      Py_DECREF(table);
      return -1;
    }
  }
  int rc = PyDict_SetItemString(TVMFFIDeviceType.tp_dict, "_DEVICE_TYPE_TO_NAME", table);
  Py_DECREF(table);
  PyType_Modified(&TVMFFIDeviceType);
  return rc;
}

int tvmffi_device_init_types(PyObject* module) {
  if (PyType_Ready(&TVMFFIDeviceType) < 0 || add_name_table() != 0 ||
      tvmffi_make_new_replaceable(&TVMFFIDeviceType) < 0) {
    return -1;
  }
  Py_INCREF(g_device_class); /* the reference g_device_class holds */
  Py_INCREF(&TVMFFIDeviceType);
  if (PyModule_AddObject(module, "Device", (PyObject*)&TVMFFIDeviceType) < 0) return -1;
  return PyModule_AddFunctions(module, device_module_methods);
}
