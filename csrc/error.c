/*
 * Errors across the boundary.
 *
 * FFI -> Python: the raised error object is moved out of the runtime and
 * turned into an exception by a Python hook (tvmffi.error), which picks the
 * class by the error's kind and keeps the FFI backtrace in __notes__.
 *
 * Python -> FFI: a pending exception becomes an FFI error of the same kind,
 * message and backtrace. The exception object itself rides along as the
 * error's extra_context (an opaque Python object), so when the error comes
 * back to Python through any number of FFI frames the very same exception,
 * with its Python traceback, is raised again.
 */
#include "core.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static PyObject* g_from_ffi; /* (kind, message, backtrace) -> exception */
static PyObject* g_to_ffi;   /* exception -> (kind, message, backtrace) */

PyObject* tvmffi_set_error_hooks(PyObject* self, PyObject* args) {
  (void)self;
  PyObject *from_ffi, *to_ffi;
  if (!PyArg_ParseTuple(args, "OO", &from_ffi, &to_ffi)) return NULL;
  Py_XSETREF(g_from_ffi, Py_NewRef(from_ffi));
  Py_XSETREF(g_to_ffi, Py_NewRef(to_ffi));
  Py_RETURN_NONE;
}

static PyObject* text(const TVMFFIByteArray* b) {
  /* Messages may come from C++ code with arbitrary bytes: never fail here. */
  return PyUnicode_DecodeUTF8(b->data, (Py_ssize_t)b->size, "replace");
}

static int kind_is(const TVMFFIErrorCell* cell, const char* kind) {
  size_t n = strlen(kind);
  return cell->kind.size == n && memcmp(cell->kind.data, kind, n) == 0;
}

/* The Python exception a callback raised, if this error carries one. */
static PyObject* carried_exception(const TVMFFIErrorCell* cell) {
  TVMFFIObjectHandle ctx = cell->extra_context;
  if (ctx == NULL || tvmffi_type_index_of(ctx) != kTVMFFIOpaquePyObject) return NULL;
  PyObject* exc = (PyObject*)((TVMFFIOpaqueObjectCell*)tvmffi_cell(ctx))->handle;
  return PyExceptionInstance_Check(exc) ? exc : NULL;
}

static void raise_instance(PyObject* exc) {
  PyObject* tb = PyException_GetTraceback(exc);
  PyErr_Restore(Py_NewRef(PyExceptionInstance_Class(exc)), Py_NewRef(exc), tb);
}

/* The hook gets the error object (wrapped; it becomes the exception's
 * __tvm_ffi_error__) and the exception a callback raised, if the error carries
 * one, and returns the exception to raise. */
static void raise_from_error(TVMFFIObjectHandle err) {
  const TVMFFIErrorCell* cell = tvmffi_cell(err);
  if (g_from_ffi == NULL) {
    PyObject* kind = text(&cell->kind);
    PyObject* msg = text(&cell->message);
    if (kind && msg) PyErr_Format(PyExc_RuntimeError, "%U: %U", kind, msg);
    Py_XDECREF(kind);
    Py_XDECREF(msg);
    return;
  }
  PyObject* carried = carried_exception(cell);
  TVMFFIObjectIncRef(err);
  PyObject* wrapped = tvmffi_object_wrap_owned(err);
  if (wrapped == NULL) return;
  PyObject* made =
      PyObject_CallFunctionObjArgs(g_from_ffi, wrapped, carried ? carried : Py_None, NULL);
  Py_DECREF(wrapped);
  if (made == NULL) return;
  if (PyExceptionInstance_Check(made)) {
    raise_instance(made);
  } else {
    PyErr_Format(PyExc_TypeError, "error hook returned a non-exception %R", made);
  }
  Py_DECREF(made);
}

void tvmffi_discard_ffi_error(void) {
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  if (err != NULL) TVMFFIObjectDecRef(err);
}

PyObject* tvmffi_fetch_exception(void) {
#if PY_VERSION_HEX >= 0x030C0000
  return PyErr_GetRaisedException();
#else
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (value != NULL && tb != NULL) PyException_SetTraceback(value, tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  return value;
#endif
}

PyObject* tvmffi_raise_ffi_error(void) {
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  if (err == NULL) {
    if (!PyErr_Occurred()) {
      PyErr_SetString(PyExc_RuntimeError, "TVM FFI call failed without raising an error");
    }
    return NULL;
  }
  const TVMFFIErrorCell* cell = tvmffi_cell(err);
  if (kind_is(cell, "EnvErrorAlreadySet")) {
    /* e.g. KeyboardInterrupt set by PyErr_CheckSignals inside the call. */
    if (!PyErr_Occurred()) {
      PyErr_SetString(PyExc_RuntimeError, "TVM FFI reported an already-set Python error");
    }
  } else {
    raise_from_error(err);
  }
  TVMFFIObjectDecRef(err);
  return NULL;
}

/* (kind, message, backtrace) for the exception; falls back to a generic
 * description if the hook itself fails. */
/* The native stack where the exception enters the FFI (the C++ callers of a
 * callback), taken here in C: from inside the Python hook the runtime's
 * backtrace would stop at the interpreter's frames. */
static PyObject* native_backtrace(void) {
  const TVMFFIByteArray* bt = TVMFFIBacktrace(NULL, 0, NULL, 0);
  return bt != NULL ? text(bt) : PyUnicode_FromString("");
}

static PyObject* describe(PyObject* exc) {
  PyObject* native = g_to_ffi ? native_backtrace() : NULL;
  PyObject* parts =
      native != NULL ? PyObject_CallFunctionObjArgs(g_to_ffi, exc, native, NULL) : NULL;
  Py_XDECREF(native);
  if (parts != NULL && PyTuple_Check(parts) && PyTuple_GET_SIZE(parts) == 3) return parts;
  Py_XDECREF(parts);
  PyErr_Clear();
  return Py_BuildValue("(ssN)", Py_TYPE(exc)->tp_name, "<exception could not be described>",
                       PyUnicode_FromString(""));
}

static int create_error(PyObject* parts, PyObject* exc, TVMFFIObjectHandle* out) {
  Py_ssize_t n[3];
  const char* s[3];
  for (int i = 0; i < 3; ++i) {
    PyObject* item = PyTuple_GET_ITEM(parts, i);
    s[i] = PyUnicode_Check(item) ? PyUnicode_AsUTF8AndSize(item, &n[i]) : NULL;
    if (s[i] == NULL) {
      PyErr_Clear();
      s[i] = "";
      n[i] = 0;
    }
  }
  TVMFFIByteArray kind = {s[0], (size_t)n[0]}, msg = {s[1], (size_t)n[1]},
                  bt = {s[2], (size_t)n[2]};
  TVMFFIObjectHandle ctx = NULL;
  if (tvmffi_opaque_py_create(exc, &ctx) != 0) PyErr_Clear();
  /* The error takes its own reference to the context; drop ours. */
  int rc = TVMFFIErrorCreateWithCauseAndExtraContext(&kind, &msg, &bt, NULL, ctx, out);
  if (ctx != NULL) TVMFFIObjectDecRef(ctx);
  return rc;
}

int tvmffi_set_ffi_error_from_py(void) {
  PyObject* value = tvmffi_fetch_exception();
  if (value == NULL) {
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", "unknown Python error");
    return -1;
  }
  PyObject* parts = describe(value);
  TVMFFIObjectHandle err = NULL;
  if (parts == NULL || create_error(parts, value, &err) != 0) {
    PyErr_Clear();
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", "failed to convert a Python exception");
  } else {
    TVMFFIErrorSetRaised(err);
    TVMFFIObjectDecRef(err);
  }
  Py_XDECREF(parts);
  Py_XDECREF(value);
  return -1;
}

/* Whether a PyUnicode_FromFormat format uses a conversion C's printf lacks
 * (%U %V %S %R %A %T %N take Python objects). */
static int needs_python_format(const char* fmt) {
  for (const char* p = strchr(fmt, '%'); p != NULL; p = strchr(p, '%')) {
    ++p;
    if (*p == '%') {
      ++p;
      continue;
    }
    p += strspn(p, "-0123456789.lzh");
    if (*p != '\0' && strchr("UVSRATN", *p) != NULL) return 1;
  }
  return 0;
}

/* The message of tvmffi_arg_error: "argument N: " and the formatted text.
 * Plain C conversions are formatted by vsnprintf in a stack buffer, ~5x
 * fewer instructions than PyUnicode_FromFormatV, which walks the format a
 * character at a time (a refused argument inside a try/except loop pays this
 * on every call); a message that would not fit, or that formats Python
 * objects, takes PyUnicode_FromFormatV. */
static PyObject* arg_error_message(Py_ssize_t argpos, const char* fmt, va_list va) {
  char buf[768];
  size_t off = 0;
  if (argpos >= 0) off = (size_t)snprintf(buf, sizeof(buf), "argument %zd: ", argpos);
  if (!needs_python_format(fmt)) {
    va_list copy;
    va_copy(copy, va);
    int n = vsnprintf(buf + off, sizeof(buf) - off, fmt, copy);
    va_end(copy);
    if (n >= 0 && (size_t)n < sizeof(buf) - off) {
      /* "replace": a %.200s may have cut a UTF-8 sequence in two. */
      return PyUnicode_DecodeUTF8(buf, (Py_ssize_t)(off + (size_t)n), "replace");
    }
  }
  PyObject* text = PyUnicode_FromFormatV(fmt, va);
  if (text == NULL || argpos < 0) return text;
  PyObject* msg = PyUnicode_FromFormat("argument %zd: %U", argpos, text);
  Py_DECREF(text);
  return msg;
}

/* An exception of class `cls` whose message names the argument (argpos >= 0)
 * being converted; returns -1. */
int tvmffi_arg_error(PyObject* cls, Py_ssize_t argpos, const char* fmt, ...) {
  va_list va;
  va_start(va, fmt);
  PyObject* msg = arg_error_message(argpos, fmt, va);
  va_end(va);
  if (msg == NULL) return -1;
  PyErr_SetObject(cls, msg);
  Py_DECREF(msg);
  return -1;
}
