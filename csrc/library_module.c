/*
 * The class of a module loaded from a library file (tvmffi.module).
 *
 * `mod.add_int` is an instance-dict hit once resolved. CPython 3.11 only
 * specializes that load (LOAD_ATTR_WITH_HINT) for classes on
 * PyObject_GenericGetAttr: a miss hook (the official binding's __getattr__,
 * Module.__tvm_ffi_getattr__ on the Object attribute path) leaves every hit on
 * the generic path, ~15 ns more. A library's functions are known when it is
 * loaded (its __tvm_ffi_<name> exports), so tvmffi.module resolves them into a
 * fresh wrapper of a Module subclass that has no hook. Class descriptors for
 * lazily resolved names would not do: 3.11 does not specialize an
 * instance-dict hit that shadows one when the instance has a dict object.
 */
#include "core.h"

/* _core._without_attribute_hook(cls): cls (a Python subclass of Object whose
 * instances need no attribute fallback) takes the generic attribute path, not
 * the Object hook it inherits. */
static PyObject* without_attribute_hook(PyObject* self, PyObject* cls) {
  (void)self;
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject*)cls, &TVMFFIObjectType) ||
      !(((PyTypeObject*)cls)->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
    PyErr_Format(PyExc_TypeError, "expected a Python subclass of tvmffi.Object, not %R", cls);
    return NULL;
  }
  PyTypeObject* tp = (PyTypeObject*)cls;
  tp->tp_getattro = PyObject_GenericGetAttr;
  PyType_Modified(tp); /* specializations made for the old slot are dropped */
  Py_RETURN_NONE;
}

/* _core._rewrap(obj, cls): a new wrapper of obj's handle, of class cls, a
 * subclass of obj's class with the same instance layout. A new object rather
 * than a __class__ assignment: its __dict__ starts out as a plain dict, which
 * 3.11 specializes, where an assigned class would share keys with the old. */
static PyObject* rewrap(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 2 || !tvmffi_is_object(args[0]) || !PyType_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "_rewrap(obj, cls) expects an Object and a class");
    return NULL;
  }
  PyTypeObject* cls = (PyTypeObject*)args[1];
  PyTypeObject* from = Py_TYPE(args[0]);
  if (!PyType_IsSubtype(cls, from) || cls->tp_basicsize != from->tp_basicsize) {
    PyErr_Format(PyExc_TypeError, "%s is not a layout-compatible subclass of %s", cls->tp_name,
                 from->tp_name);
    return NULL;
  }
  TVMFFIObjectHandle h = tvmffi_object_handle(args[0]);
  if (h == NULL) return NULL;
  TVMFFIObjectIncRef(h);
  return tvmffi_object_new_of(cls, h); /* takes the reference */
}

static PyMethodDef library_module_methods[] = {
    {"_without_attribute_hook", without_attribute_hook, METH_O,
     "_without_attribute_hook(cls): cls takes CPython's generic attribute path."},
    {"_rewrap", (PyCFunction)(void (*)(void))rewrap, METH_FASTCALL,
     "_rewrap(obj, cls): a new wrapper of obj's handle, of the subclass cls."},
    {NULL, NULL, 0, NULL},
};

int tvmffi_library_module_init(PyObject* module) {
  return PyModule_AddFunctions(module, library_module_methods);
}
