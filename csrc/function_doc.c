/*
 * Lazy documentation of FFI functions: __name__, __qualname__, __doc__ and
 * __signature__.
 *
 * What a Function is called and what it takes is known only from where it
 * came from (the global registry, a module's metadata symbols, a reflected
 * type's method table), which Python code finds more simply than C. These
 * attributes are therefore data descriptors on the Function type that, when
 * read, look in the instance dict first and otherwise ask
 * tvmffi._function_doc.describe(func, name), which computes the value and
 * caches it in the instance dict. Nothing happens on the call path or when a
 * function is looked up: the cost is paid by the first help()/inspect read.
 * Assignments (init_ffi_api sets __name__) go to the instance dict too.
 */
#include "core.h"

/* The Python helper, imported on first use and kept for the process. */
static PyObject* g_describe = NULL;

static PyObject* describe_helper(void) {
  if (g_describe == NULL) {
    PyObject* mod = PyImport_ImportModule("tvmffi._function_doc");
    if (mod == NULL) return NULL;
    g_describe = PyObject_GetAttrString(mod, "describe");
    Py_DECREF(mod);
  }
  return g_describe;
}

PyObject* tvmffi_function_doc_get(PyObject* op, void* closure) {
  PyObject* key = PyUnicode_InternFromString((const char*)closure);
  if (key == NULL) return NULL;
  PyObject* dict = ((TVMFFIPyFunction*)op)->dict;
  if (dict != NULL) {
    PyObject* cached = PyDict_GetItemWithError(dict, key);
    if (cached != NULL) {
      Py_DECREF(key);
      return Py_NewRef(cached);
    }
    if (PyErr_Occurred()) {
      Py_DECREF(key);
      return NULL;
    }
  }
  PyObject* describe = describe_helper();
  PyObject* result = describe == NULL ? NULL : PyObject_CallFunctionObjArgs(describe, op, key, NULL);
  Py_DECREF(key);
  return result;
}

int tvmffi_function_doc_set(PyObject* op, PyObject* value, void* closure) {
  /* Through the __dict__ descriptor, which also starts GC tracking. */
  PyObject* dict = PyObject_GetAttrString(op, "__dict__");
  if (dict == NULL) return -1;
  const char* name = (const char*)closure;
  int rc;
  if (value != NULL) {
    rc = PyDict_SetItemString(dict, name, value);
  } else {
    rc = PyDict_DelItemString(dict, name);
    if (rc < 0 && PyErr_ExceptionMatches(PyExc_KeyError)) {
      PyErr_Clear();
      PyErr_Format(PyExc_AttributeError, "%s", name);
    }
  }
  Py_DECREF(dict);
  return rc;
}
