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

static int device_code(const char* name, Py_ssize_t len) {
  for (int code = 0; code < NUM_DEVICE_CODES; ++code) {
    const char* n = kDeviceNames[code];
    if (n != NULL && (Py_ssize_t)strlen(n) == len && memcmp(n, name, (size_t)len) == 0) return code;
  }
  return -1;
}

PyObject* tvmffi_device_from_dl(DLDevice dev) {
  TVMFFIPyDevice* self = PyObject_New(TVMFFIPyDevice, &TVMFFIDeviceType);
  if (self != NULL) self->device = dev;
  return (PyObject*)self;
}

static int parse_index(PyObject* obj, int32_t* out) {
  if (!PyIndex_Check(obj)) {
    PyErr_Format(PyExc_TypeError, "device index must be an int, not '%.200s'",
                 Py_TYPE(obj)->tp_name);
    return -1;
  }
  long v = PyLong_AsLong(obj);
  if (v == -1 && PyErr_Occurred()) return -1;
  if (v < 0 || v > INT32_MAX) {
    PyErr_Format(PyExc_ValueError, "device index must be in [0, 2**31), got %ld", v);
    return -1;
  }
  *out = (int32_t)v;
  return 0;
}

/* "cuda", "cuda:1" -> code and (optionally) index. */
static int parse_name(PyObject* str, int* code, int32_t* index, int* has_index) {
  Py_ssize_t len;
  const char* s = PyUnicode_AsUTF8AndSize(str, &len);
  if (s == NULL) return -1;
  const char* colon = memchr(s, ':', (size_t)len);
  Py_ssize_t name_len = colon ? colon - s : len;
  *code = device_code(s, name_len);
  if (*code < 0) {
    PyErr_Format(PyExc_ValueError, "unknown device type %R", str);
    return -1;
  }
  *has_index = colon != NULL;
  if (!colon) return 0;
  char* end = NULL;
  long v = strtol(colon + 1, &end, 10);
  if (end == colon + 1 || *end != '\0' || v < 0 || v > INT32_MAX) {
    PyErr_Format(PyExc_ValueError, "invalid device index in %R", str);
    return -1;
  }
  *index = (int32_t)v;
  return 0;
}

static int parse_type(PyObject* type, int* code, int32_t* index, int* has_index) {
  *has_index = 0;
  if (PyUnicode_Check(type)) return parse_name(type, code, index, has_index);
  if (PyLong_Check(type) && !PyBool_Check(type)) {
    long v = PyLong_AsLong(type);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (device_name((int)v) == NULL || v >= NUM_DEVICE_CODES) {
      PyErr_Format(PyExc_ValueError, "unknown DLPack device type code %ld", v);
      return -1;
    }
    *code = (int)v;
    return 0;
  }
  PyErr_Format(PyExc_TypeError, "device type must be a str or an int, not '%.200s'",
               Py_TYPE(type)->tp_name);
  return -1;
}

static PyObject* device_new(PyTypeObject* cls, PyObject* args, PyObject* kwargs) {
  static char* kwlist[] = {"type", "index", NULL};
  PyObject *type, *index_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:Device", kwlist, &type, &index_obj)) {
    return NULL;
  }
  if (PyObject_TypeCheck(type, &TVMFFIDeviceType) && index_obj == Py_None) {
    return tvmffi_device_from_dl(((TVMFFIPyDevice*)type)->device);
  }
  int code, has_index;
  int32_t index = 0;
  if (parse_type(type, &code, &index, &has_index) != 0) return NULL;
  if (index_obj != Py_None) {
    if (has_index) {
      PyErr_Format(PyExc_ValueError, "device %R already names an index", type);
      return NULL;
    }
    if (parse_index(index_obj, &index) != 0) return NULL;
  }
  TVMFFIPyDevice* self = (TVMFFIPyDevice*)cls->tp_alloc(cls, 0);
  if (self == NULL) return NULL;
  self->device.device_type = (DLDeviceType)code;
  self->device.device_id = index;
  return (PyObject*)self;
}

static PyObject* device_str(PyObject* op) {
  DLDevice d = ((TVMFFIPyDevice*)op)->device;
  const char* name = device_name((int)d.device_type);
  if (name == NULL) return PyUnicode_FromFormat("device%d:%d", (int)d.device_type, d.device_id);
  return PyUnicode_FromFormat("%s:%d", name, d.device_id);
}

static PyObject* device_repr(PyObject* op) {
  PyObject* s = device_str(op);
  if (s == NULL) return NULL;
  PyObject* r = PyUnicode_FromFormat("Device(%R)", s);
  Py_DECREF(s);
  return r;
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

static PyObject* device_get_index(PyObject* op, void* c) {
  (void)c;
  return PyLong_FromLong(((TVMFFIPyDevice*)op)->device.device_id);
}

static PyObject* device_get_code(PyObject* op, void* c) {
  (void)c;
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
    {"dlpack_device_type", device_get_code, NULL, "DLPack device type code.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef device_methods[] = {
    {"__reduce__", device_reduce, METH_NOARGS, NULL},
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
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Device(type, index=None): Device('cuda', 1), Device('cuda:1'), Device(2, 1).",
    .tp_new = device_new,
    .tp_str = device_str,
    .tp_repr = device_repr,
    .tp_hash = device_hash,
    .tp_richcompare = device_richcompare,
    .tp_getset = device_getset,
    .tp_methods = device_methods,
};

int tvmffi_device_init_types(PyObject* module) {
  if (PyType_Ready(&TVMFFIDeviceType) < 0) return -1;
  Py_INCREF(&TVMFFIDeviceType);
  return PyModule_AddObject(module, "Device", (PyObject*)&TVMFFIDeviceType);
}
