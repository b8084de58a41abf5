/*
 * The runtime's error object (ffi.Error) seen from Python: tvmffi.core.Error.
 *
 * An exception coming from the FFI carries its error object as
 * __tvm_ffi_error__ (official name); these accessors read the error cell
 * (kind, message, backtrace, extra context), build one from three strings,
 * and replace its backtrace, which is how a Python traceback is added to it
 * when it crosses back into the FFI.
 */
#include "core.h"

#include <string.h>

static TVMFFIObjectHandle error_handle(PyObject* obj) {
  if (!tvmffi_is_object(obj)) {
    PyErr_Format(PyExc_TypeError, "expected an ffi.Error object, got '%.200s'",
                 Py_TYPE(obj)->tp_name);
    return NULL;
  }
  TVMFFIObjectHandle h = tvmffi_object_handle(obj);
  if (h != NULL && tvmffi_type_index_of(h) != kTVMFFIError) {
    PyErr_SetString(PyExc_TypeError, "expected an ffi.Error object");
    return NULL;
  }
  return h;
}

static int utf8_arg(PyObject* s, const char* what, TVMFFIByteArray* out) {
  Py_ssize_t n;
  const char* p = PyUnicode_Check(s) ? PyUnicode_AsUTF8AndSize(s, &n) : NULL;
  if (p == NULL) {
    if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "error %s must be a str", what);
    return -1;
  }
  out->data = p;
  out->size = (size_t)n;
  return 0;
}

/* A new error handle of the three strings args[0..2] (kind, message,
 * backtrace); -1 with the Python error set. */
static int error_create(PyObject* const* args, TVMFFIObjectHandle* h) {
  TVMFFIByteArray kind, msg, bt;
  if (utf8_arg(args[0], "kind", &kind) || utf8_arg(args[1], "message", &msg) ||
      utf8_arg(args[2], "backtrace", &bt)) {
    return -1;
  }
  *h = NULL;
  if (TVMFFIErrorCreate(&kind, &msg, &bt, h) != 0) {
    tvmffi_raise_ffi_error();
    return -1;
  }
  return 0;
}

/* _error_init(self, kind, message, backtrace): give an empty Error object a
 * new error handle. */
static PyObject* py_error_init(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 4 || !tvmffi_is_object(args[0])) {
    PyErr_SetString(PyExc_TypeError, "_error_init(self, kind, message, backtrace)");
    return NULL;
  }
  TVMFFIPyObject* obj = (TVMFFIPyObject*)args[0];
  if (obj->handle != NULL) {
    /* A handle is never replaced while its object lives (see _init_handle). */
    PyErr_Format(PyExc_RuntimeError, "%.200s object is already initialized",
                 Py_TYPE(obj)->tp_name);
    return NULL;
  }
  TVMFFIObjectHandle h;
  if (error_create(args + 1, &h) != 0) return NULL;
  obj->handle = h;
  obj->graph_height = 0;
  Py_RETURN_NONE;
}

/* _error_new(kind, message, backtrace): a new error object, of the class
 * registered for ffi.Error, without a Python constructor in between (an
 * exception passed as an argument becomes one). */
static PyObject* py_error_new(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 3) {
    PyErr_SetString(PyExc_TypeError, "_error_new(kind, message, backtrace)");
    return NULL;
  }
  TVMFFIObjectHandle h;
  if (error_create(args, &h) != 0) return NULL;
  return tvmffi_object_wrap_owned(h); /* takes h */
}

/* _error_fields(err) -> (kind, message, backtrace) */
static PyObject* py_error_fields(PyObject* self, PyObject* obj) {
  (void)self;
  TVMFFIObjectHandle h = error_handle(obj);
  if (h == NULL) return NULL;
  const TVMFFIErrorCell* cell = tvmffi_cell(h);
  return Py_BuildValue("(NNN)", tvmffi_bytearray_to_str(&cell->kind),
                       tvmffi_bytearray_to_str(&cell->message),
                       tvmffi_bytearray_to_str(&cell->backtrace));
}

/* _error_extra_context(err) -> the attached payload or None */
static PyObject* py_error_extra_context(PyObject* self, PyObject* obj) {
  (void)self;
  TVMFFIObjectHandle h = error_handle(obj);
  if (h == NULL) return NULL;
  TVMFFIObjectHandle ctx = ((const TVMFFIErrorCell*)tvmffi_cell(h))->extra_context;
  if (ctx == NULL) Py_RETURN_NONE;
  TVMFFIAny any = {.type_index = tvmffi_type_index_of(ctx), .v_obj = (TVMFFIObject*)ctx};
  return tvmffi_any_to_py_borrowed(&any);
}

/* _error_update_backtrace(err, backtrace): replace the stored backtrace. */
static PyObject* py_error_update_backtrace(PyObject* self, PyObject* args) {
  (void)self;
  PyObject *obj, *text;
  if (!PyArg_ParseTuple(args, "OU", &obj, &text)) return NULL;
  TVMFFIObjectHandle h = error_handle(obj);
  TVMFFIByteArray bt;
  if (h == NULL || utf8_arg(text, "backtrace", &bt) != 0) return NULL;
  ((TVMFFIErrorCell*)tvmffi_cell(h))
      ->update_backtrace(h, &bt, kTVMFFIBacktraceUpdateModeReplace);
  Py_RETURN_NONE;
}

static PyMethodDef error_object_methods[] = {
    {"_error_init", (PyCFunction)(void (*)(void))py_error_init, METH_FASTCALL,
     "_error_init(self, kind, message, backtrace)"},
    {"_error_new", (PyCFunction)(void (*)(void))py_error_new, METH_FASTCALL,
     "_error_new(kind, message, backtrace) -> a new ffi.Error object"},
    {"_error_fields", py_error_fields, METH_O, "(kind, message, backtrace) of an ffi.Error"},
    {"_error_extra_context", py_error_extra_context, METH_O, "extra_context of an ffi.Error"},
    {"_error_update_backtrace", py_error_update_backtrace, METH_VARARGS,
     "_error_update_backtrace(err, backtrace)"},
    {NULL, NULL, 0, NULL},
};

int tvmffi_error_object_init(PyObject* module) {
  return PyModule_AddFunctions(module, error_object_methods);
}
