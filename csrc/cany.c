/*
 * CAny: one owned FFI value (a TVMFFIAny) held by Python.
 *
 * The official binding's tvm_ffi.core.CAny: what TypeSchema.convert returns.
 * CAny(value) packs value exactly as a call argument is packed (any.c's
 * conversion, the only one), then owns it: an object gets one reference of
 * its own. _to_py_class_value(cany) turns it back into Python as a call
 * result would be, leaving the CAny unchanged.
 */
#include "core.h"
#include "type_plan.h"

typedef struct {
  PyObject_HEAD
  TVMFFIAny value; /* owned: an object value holds one reference */
  PyObject* keep;  /* what a borrowed pointer value points into (a TensorView), else NULL */
} CAnyObject;

static PyTypeObject CAnyType;

static void cany_dealloc(PyObject* op) {
  CAnyObject* self = (CAnyObject*)op;
  tvmffi_any_release(&self->value);
  Py_XDECREF(self->keep);
  Py_TYPE(op)->tp_free(op);
}

static PyObject* cany_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static char* kwlist[] = {"value", NULL};
  PyObject* value = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:CAny", kwlist, &value)) return NULL;
  CAnyObject* self = (CAnyObject*)type->tp_alloc(type, 0);
  if (self == NULL) return NULL;
  self->value.type_index = kTVMFFINone;
  self->value.zero_padding = 0;
  self->value.v_int64 = 0;
  if (tvmffi_py_to_owned_any(value, &self->value) != 0) {
    self->value.type_index = kTVMFFINone; /* nothing owned on failure */
    Py_DECREF(self);
    return NULL;
  }
  /* A DLTensor* (from a TensorView) is not owned: keep its array alive with it. */
  if (self->value.type_index == kTVMFFIDLTensorPtr) self->keep = Py_NewRef(value);
  return (PyObject*)self;
}

static PyObject* cany_type_index(PyObject* op, void* closure) {
  (void)closure;
  return PyLong_FromLong(((CAnyObject*)op)->value.type_index);
}

static PyObject* cany_repr(PyObject* op) {
  const TVMFFIAny* v = &((CAnyObject*)op)->value;
  int ti = (int)v->type_index;
  switch (ti) {
    case kTVMFFINone:
      return PyUnicode_FromString("CAny(None)");
    case kTVMFFIInt:
      return PyUnicode_FromFormat("CAny(int=%lld)", (long long)v->v_int64);
    case kTVMFFIBool:
      return PyUnicode_FromString(v->v_int64 ? "CAny(bool=True)" : "CAny(bool=False)");
    case kTVMFFIFloat: {
      PyObject* f = PyFloat_FromDouble(v->v_float64);
      PyObject* r = f == NULL ? NULL : PyUnicode_FromFormat("CAny(float=%R)", f);
      Py_XDECREF(f);
      return r;
    }
    default:
      if (ti >= kTVMFFIStaticObjectBegin) {
        return PyUnicode_FromFormat("CAny(object, type_index=%d)", ti);
      }
      return PyUnicode_FromFormat("CAny(type_index=%d)", ti);
  }
}

static PyGetSetDef cany_getset[] = {
    {"type_index", cany_type_index, NULL, "The FFI type index of the held value.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CAnyType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.core.CAny",
    .tp_basicsize = sizeof(CAnyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "CAny(value=None): an owned FFI value, packed as a call argument is.",
    .tp_new = cany_new,
    .tp_dealloc = cany_dealloc,
    .tp_repr = cany_repr,
    .tp_getset = cany_getset,
};

/* An owned value in a new CAny, which takes its reference (type_plan.c's results). */
PyObject* tvmffi_cany_from_owned(TVMFFIAny* value) {
  CAnyObject* self = (CAnyObject*)CAnyType.tp_alloc(&CAnyType, 0);
  if (self == NULL) {
    tvmffi_any_release(value);
    return NULL;
  }
  self->value = *value;
  return (PyObject*)self;
}

/* A value as Python, as a call result would be, except that inline (small)
 * strings and bytes come back as String / Bytes too, as the official
 * _to_py_class_value gives them: a converted str is always a String. */
PyObject* tvmffi_any_to_py_class(const TVMFFIAny* v) {
  PyObject* res = tvmffi_any_to_py_borrowed(v);
  PyObject* cls = NULL;
  if (v->type_index == kTVMFFISmallStr) cls = (PyObject*)&TVMFFIStringType;
  if (v->type_index == kTVMFFISmallBytes) cls = tvmffi_bytes_class();
  if (res == NULL || cls == NULL) return res;
  Py_SETREF(res, PyObject_CallOneArg(cls, res));
  return res;
}

/* _to_py_class_value(cany): the held value as Python (tvmffi_any_to_py_class). */
static PyObject* to_py_class_value(PyObject* self, PyObject* arg) {
  (void)self;
  if (!PyObject_TypeCheck(arg, &CAnyType)) {
    return PyErr_Format(PyExc_TypeError, "_to_py_class_value expects a CAny, got %.200s",
                        Py_TYPE(arg)->tp_name);
  }
  return tvmffi_any_to_py_class(&((CAnyObject*)arg)->value);
}

static PyMethodDef cany_methods[] = {
    {"_to_py_class_value", to_py_class_value, METH_O,
     "The value a CAny holds, converted to Python as a call result is."},
    {NULL, NULL, 0, NULL},
};

int tvmffi_cany_init(PyObject* module) {
  if (PyType_Ready(&CAnyType) < 0) return -1;
  if (PyModule_AddObjectRef(module, "CAny", (PyObject*)&CAnyType) < 0) return -1;
  return PyModule_AddFunctions(module, cany_methods);
}
