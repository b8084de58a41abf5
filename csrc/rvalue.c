/*
 * Moves: Object._move() and the ObjectRValueRef it returns (official names).
 *
 * obj._move() passed as an argument travels as kTVMFFIObjectRValueRef, a
 * pointer to the wrapper's handle slot: the callee may take the reference
 * (the slot becomes NULL, the wrapper empty) instead of adding one. A Python
 * callback receiving one takes it; a callback returning one hands its
 * reference over. Nothing else changes a live wrapper's handle.
 */
#include "core.h"

#include <stddef.h>

typedef struct {
  PyObject_HEAD
  PyObject* obj; /* the Object moved from (owned) */
} RValueRef;

static void rvalue_dealloc(PyObject* op) {
  Py_XDECREF(((RValueRef*)op)->obj);
  PyObject_Free(op);
}

static PyObject* rvalue_get_obj(PyObject* op, void* closure) {
  (void)closure;
  return Py_NewRef(((RValueRef*)op)->obj);
}

static PyGetSetDef rvalue_getset[] = {
    {"obj", rvalue_get_obj, NULL, "The object whose reference moves.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject TVMFFIRValueRefType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.core.ObjectRValueRef",
    .tp_basicsize = sizeof(RValueRef),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An object passed by move (obj._move()): the callee may take its reference.",
    .tp_dealloc = rvalue_dealloc,
    .tp_getset = rvalue_getset,
};

PyObject* tvmffi_object_move(PyObject* self, PyObject* unused) {
  (void)unused;
  RValueRef* ref = PyObject_New(RValueRef, &TVMFFIRValueRefType);
  if (ref == NULL) return NULL;
  ref->obj = Py_NewRef(self);
  return (PyObject*)ref;
}

PyObject* tvmffi_object_ctypes_handle(PyObject* self, PyObject* unused) {
  (void)unused;
  PyObject* void_p = tvmffi_ctypes_void_p();
  if (void_p == NULL) return NULL;
  TVMFFIObjectHandle h = ((TVMFFIPyObject*)self)->handle;
  if (h == NULL) return PyObject_CallNoArgs(void_p);
  PyObject* addr = PyLong_FromVoidPtr(h);
  if (addr == NULL) return NULL;
  PyObject* res = PyObject_CallOneArg(void_p, addr);
  Py_DECREF(addr);
  return res;
}

int tvmffi_rvalue_to_any(PyObject* ref, TVMFFIAny* out, Py_ssize_t argpos) {
  TVMFFIPyObject* obj = (TVMFFIPyObject*)((RValueRef*)ref)->obj;
  if (obj->handle == NULL) {
    return tvmffi_arg_error(PyExc_ValueError, argpos, "moved-from %.200s holds no FFI handle",
                            Py_TYPE(obj)->tp_name);
  }
  out->type_index = kTVMFFIObjectRValueRef;
  out->zero_padding = 0;
  out->v_ptr = &obj->handle;
  return 0;
}

int tvmffi_take_rvalue(const TVMFFIAny* value, TVMFFIAny* out) {
  TVMFFIObjectHandle* slot = (TVMFFIObjectHandle*)value->v_ptr;
  TVMFFIObjectHandle h = *slot;
  if (h == NULL) {
    PyErr_SetString(PyExc_ValueError, "object passed by move was already moved from");
    return -1;
  }
  *slot = NULL;
  out->type_index = tvmffi_type_index_of(h);
  out->zero_padding = 0;
  out->v_obj = (TVMFFIObject*)h;
  return 0;
}

int tvmffi_rvalue_init(PyObject* module) {
  if (PyType_Ready(&TVMFFIRValueRefType) < 0) return -1;
  return PyModule_AddObjectRef(module, "ObjectRValueRef", (PyObject*)&TVMFFIRValueRefType);
}
