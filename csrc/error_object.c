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

/* ---- a Python exception passed as an argument -----------------------------------
 * It becomes the error object tvmffi.error._convert_to_ffi_error makes of it.
 * An exception that was never raised (no traceback) and carries no FFI error of
 * its own takes a fast path to the same result: an error of its class's kind
 * and its message, with an empty backtrace, without a Python frame. The kind
 * comes from that module's per-class table (_CLASS_FACTS: class, or
 * weakref.ref(class) for a heap type -> (kind, is a KeyError, ...)), which the Python path fills for classes with no __tvm_ffi_error__
 * of their own; a class not in it yet takes the Python path. */
static struct {
  PyObject* class_facts; /* the dict itself: cleared in place, never rebound */
  PyObject* convert;     /* _convert_to_ffi_error */
  PyObject* ffi_error;   /* "__tvm_ffi_error__" */
  PyObject* empty;       /* "" */
} g_exc;

/* tvmffi.error's table and hook, looked up once. */
static int exception_hooks_ready(void) {
  if (g_exc.convert != NULL) return 0;
  PyObject* mod = PyImport_ImportModule("tvmffi.error");
  if (mod == NULL) return -1;
  PyObject* facts = PyObject_GetAttrString(mod, "_CLASS_FACTS");
  PyObject* convert = facts != NULL ? PyObject_GetAttrString(mod, "_convert_to_ffi_error") : NULL;
  Py_DECREF(mod);
  PyObject* name = PyUnicode_InternFromString("__tvm_ffi_error__");
  PyObject* empty = PyUnicode_FromString("");
  if (convert == NULL || !PyDict_CheckExact(facts) || name == NULL || empty == NULL) {
    if (convert != NULL && !PyDict_CheckExact(facts)) {
      PyErr_SetString(PyExc_TypeError, "tvmffi.error._CLASS_FACTS must be a dict");
    }
    Py_XDECREF(facts);
    Py_XDECREF(convert);
    Py_XDECREF(name);
    Py_XDECREF(empty);
    return -1;
  }
  g_exc.class_facts = facts;
  g_exc.convert = convert;
  g_exc.ffi_error = name;
  g_exc.empty = empty;
  return 0;
}

/* The message: KeyError's is its one argument's text (its str() is a repr). */
static PyObject* exception_message(PyBaseExceptionObject* b, PyObject* keyerror) {
  if (keyerror == Py_True && b->args != NULL && PyTuple_GET_SIZE(b->args) == 1) {
    return PyObject_Str(PyTuple_GET_ITEM(b->args, 0));
  }
  return PyObject_Str((PyObject*)b);
}

/* The fast path: 1 with *h set, 0 when the Python path must decide, -1 on error. */
static int fresh_exception_error(PyObject* exc, TVMFFIObjectHandle* h) {
  PyBaseExceptionObject* b = (PyBaseExceptionObject*)exc;
  if (b->traceback != NULL && b->traceback != Py_None) return 0;
  if (b->dict != NULL) {
    PyObject* known; /* strong references: another thread may change either dict */
    int found = tvmffi_dict_get_ref(b->dict, g_exc.ffi_error, &known);
    Py_XDECREF(known);
    if (found != 0) return found > 0 ? 0 : -1;
  }
  /* A class made at run time is keyed by its canonical weak reference, which
   * this returns without allocating while the table holds it; a built-in
   * class (immortal in effect) by itself. */
  PyTypeObject* tp = Py_TYPE(exc);
  PyObject* key = tp->tp_flags & Py_TPFLAGS_HEAPTYPE ? PyWeakref_NewRef((PyObject*)tp, NULL)
                                                      : Py_NewRef((PyObject*)tp);
  if (key == NULL) return -1;
  PyObject* facts;
  int found = tvmffi_dict_get_ref(g_exc.class_facts, key, &facts);
  Py_DECREF(key);
  if (found < 0) return -1;
  if (facts == NULL || !PyTuple_CheckExact(facts) || PyTuple_GET_SIZE(facts) < 2) {
    Py_XDECREF(facts);
    return 0;
  }
  /* (held: str() below may run Python code that clears the table) */
  PyObject* message = exception_message(b, PyTuple_GET_ITEM(facts, 1));
  PyObject* parts[3] = {PyTuple_GET_ITEM(facts, 0), message, g_exc.empty};
  int rc = message != NULL && error_create(parts, h) == 0 ? 1 : -1;
  Py_XDECREF(message);
  Py_DECREF(facts);
  return rc;
}

int tvmffi_exception_error(PyObject* exc, TVMFFIObjectHandle* h) {
  if (exception_hooks_ready() != 0) return -1;
  int fast = fresh_exception_error(exc, h);
  if (fast != 0) return fast < 0 ? -1 : 0;
  PyObject* err = PyObject_CallOneArg(g_exc.convert, exc);
  if (err == NULL) return -1;
  *h = tvmffi_is_object(err) ? tvmffi_object_handle(err) : NULL;
  if (*h != NULL) {
    TVMFFIObjectIncRef(*h); /* the caller's reference; the wrapper keeps its own */
  } else if (!PyErr_Occurred()) {
    PyErr_SetString(PyExc_TypeError, "_convert_to_ffi_error did not return an FFI object");
  }
  Py_DECREF(err);
  return *h != NULL ? 0 : -1;
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
