/*
 * Python callables as FFI functions.
 *
 * The FFI may call them from any thread, including threads Python never saw,
 * so every entry takes the GIL with PyGILState_Ensure. Arguments are borrowed
 * views owned by the caller; the result is an owned Any handed to the caller.
 * A Python exception becomes the FFI's raised error.
 */
#include "core.h"

#define STACK_ARGS 8

static int invoke(PyObject* callable, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* result) {
  PyObject* stack[STACK_ARGS];
  PyObject** pyargs = stack;
  if (nargs > STACK_ARGS) {
    pyargs = PyMem_Malloc(sizeof(PyObject*) * (size_t)nargs);
    if (pyargs == NULL) {
      PyErr_NoMemory();
      return tvmffi_set_ffi_error_from_py();
    }
  }
  int32_t converted = 0;
  PyObject* ret = NULL;
  for (; converted < nargs; ++converted) {
    pyargs[converted] = tvmffi_any_to_py_borrowed(&args[converted]);
    if (pyargs[converted] == NULL) break;
  }
  if (converted == nargs) ret = PyObject_Vectorcall(callable, pyargs, (size_t)nargs, NULL);
  for (int32_t i = 0; i < converted; ++i) Py_DECREF(pyargs[i]);
  if (pyargs != stack) PyMem_Free(pyargs);
  if (ret == NULL) return tvmffi_set_ffi_error_from_py();
  int rc = tvmffi_py_to_owned_any(ret, result);
  Py_DECREF(ret);
  return rc == 0 ? 0 : tvmffi_set_ffi_error_from_py();
}

static int callback_safe_call(void* self, const TVMFFIAny* args, int32_t nargs,
                              TVMFFIAny* result) {
  if (TVMFFI_PY_UNUSABLE()) {
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", "Python callback called after interpreter exit");
    return -1;
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  int rc = invoke((PyObject*)self, args, nargs, result);
  PyGILState_Release(gil);
  return rc;
}

/* Releases the reference the FFI object holds on a Python object. Called by
 * the runtime from any thread; after interpreter exit the object is leaked on
 * purpose, since Python can no longer free it. */
void tvmffi_release_py_object(void* self) {
  if (TVMFFI_PY_UNUSABLE()) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_DECREF((PyObject*)self);
  PyGILState_Release(gil);
}

int tvmffi_callback_create(PyObject* callable, TVMFFIObjectHandle* out) {
  Py_INCREF(callable);
  if (TVMFFIFunctionCreate(callable, callback_safe_call, tvmffi_release_py_object, out) != 0) {
    Py_DECREF(callable);
    tvmffi_raise_ffi_error();
    return -1;
  }
  return 0;
}

int tvmffi_opaque_py_create(PyObject* obj, TVMFFIObjectHandle* out) {
  Py_INCREF(obj);
  if (TVMFFIObjectCreateOpaque(obj, kTVMFFIOpaquePyObject, tvmffi_release_py_object, out) !=
      0) {
    Py_DECREF(obj);
    tvmffi_raise_ffi_error();
    return -1;
  }
  return 0;
}
