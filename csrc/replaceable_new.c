/*
 * A replaceable __new__ for the C classes that clients wrap (dtype, Device,
 * Object).
 *
 * Clients save a class's constructor, install their own and call the saved
 * one from it (tilelang: `o = dtype.__new__; dtype.__new__ = lambda c, v:
 * o(c, v)`). The official dtype is a Python class whose __new__ is a
 * staticmethod, so that works. CPython's own __new__ of a C type refuses it:
 * once the class's slot is the Python one, the saved wrapper sees a class
 * whose constructor is no longer its own and raises "is not safe". Here the
 * class's `__new__` is a staticmethod around a function that calls the C
 * constructor itself for any subclass of the class; the class is left
 * mutable so that the assignment is accepted. The tp_new slot is untouched
 * until a client assigns, so construction keeps its C path.
 */
#include "core.h"

typedef struct {
  PyTypeObject* type; /* the class (static: never freed) */
  newfunc make;       /* its C constructor, kept when a client replaces __new__ */
} NewSlot;

enum { MAX_SLOTS = 4 };
static NewSlot g_slots[MAX_SLOTS];
static int g_count;

/* new(cls, *args, **kwargs): the C constructor of the class, for cls. */
static PyObject* call_new(PyObject* capsule, PyObject* args, PyObject* kwargs) {
  NewSlot* slot = PyCapsule_GetPointer(capsule, NULL);
  if (slot == NULL) return NULL;
  if (PyTuple_GET_SIZE(args) < 1) {
    PyErr_Format(PyExc_TypeError, "%s.__new__(): not enough arguments", slot->type->tp_name);
    return NULL;
  }
  PyObject* cls = PyTuple_GET_ITEM(args, 0);
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject*)cls, slot->type)) {
    PyErr_Format(PyExc_TypeError, "%s.__new__(X): X must be a subclass of %s, not %R",
                 slot->type->tp_name, slot->type->tp_name, cls);
    return NULL;
  }
  PyObject* rest = PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args));
  if (rest == NULL) return NULL;
  PyObject* res = slot->make((PyTypeObject*)cls, rest, kwargs);
  Py_DECREF(rest);
  return res;
}

static PyMethodDef g_new_def = {"__new__", (PyCFunction)(void (*)(void))call_new,
                                METH_VARARGS | METH_KEYWORDS,
                                "__new__(cls, *args, **kwargs): create an instance of cls."};

int tvmffi_make_new_replaceable(PyTypeObject* type) {
  if (g_count == MAX_SLOTS) {
    PyErr_SetString(PyExc_SystemError, "tvmffi_make_new_replaceable: no slot left");
    return -1;
  }
  NewSlot* slot = &g_slots[g_count];
  slot->type = type;
  slot->make = type->tp_new;
  PyObject* capsule = PyCapsule_New(slot, NULL, NULL);
  if (capsule == NULL) return -1;
  PyObject* func = PyCFunction_NewEx(&g_new_def, capsule, NULL);
  Py_DECREF(capsule);
  if (func == NULL) return -1;
  PyObject* method = PyStaticMethod_New(func);
  Py_DECREF(func);
  if (method == NULL) return -1;
  /* Written into the dict directly: through setattr, CPython would point
   * tp_new at its Python-level slot. */
  int rc = PyDict_SetItemString(type->tp_dict, "__new__", method);
  Py_DECREF(method);
  if (rc != 0) return -1;
  ++g_count;
  type->tp_flags &= ~Py_TPFLAGS_IMMUTABLETYPE;
  PyType_Modified(type);
  return 0;
}
