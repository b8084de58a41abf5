/*
 * Functions made from raw C function pointers, as JIT compilers hand them
 * over (CuTe DSL, MLIR-based DSLs): the official binding's
 * Function.__from_extern_c__ and Function.__from_mlir_packed_safe_call__.
 *
 * Either way the new Function may keep a Python object alive (usually the
 * execution engine that owns the code) until the Function is freed.
 */
#include "core.h"

#include <stdlib.h>

/* The address in `symbol` (an int); NULL with an exception set when it is not
 * an int or is 0 (calling it would crash). */
static void* symbol_address(PyObject* symbol, const char* what) {
  if (!PyIndex_Check(symbol)) {
    PyErr_Format(PyExc_TypeError, "%s must be an int address, not '%.200s'", what,
                 Py_TYPE(symbol)->tp_name);
    return NULL;
  }
  PyObject* index = PyNumber_Index(symbol);
  if (index == NULL) return NULL;
  void* addr = PyLong_AsVoidPtr(index);
  Py_DECREF(index);
  if (addr == NULL && !PyErr_Occurred()) {
    PyErr_Format(PyExc_ValueError, "%s is a NULL address", what);
  }
  return addr;
}

static int parse_symbol_args(PyObject* args, PyObject* kwargs, const char* fname,
                             const char* what, void** addr, PyObject** keep_alive) {
  static char* kwlist_extern[] = {"c_symbol", "keep_alive_object", NULL};
  static char* kwlist_mlir[] = {"mlir_packed_symbol", "keep_alive_object", NULL};
  char fmt[64];
  PyOS_snprintf(fmt, sizeof(fmt), "O|$O:%s", fname);
  PyObject* symbol;
  *keep_alive = Py_None;
  char** kwlist = what[0] == 'c' ? kwlist_extern : kwlist_mlir;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, kwlist, &symbol, keep_alive)) return -1;
  *addr = symbol_address(symbol, what);
  return *addr == NULL ? -1 : 0;
}

/* A Function over `safe_call` with its `self` and the deleter of `self`. */
static PyObject* make_function(void* self, TVMFFISafeCallType safe_call,
                               void (*deleter)(void*)) {
  TVMFFIObjectHandle h;
  if (TVMFFIFunctionCreate(self, safe_call, deleter, &h) != 0) return tvmffi_raise_ffi_error();
  return tvmffi_function_wrap_owned(h);
}

PyObject* tvmffi_function_from_extern_c(PyObject* cls, PyObject* args, PyObject* kwargs) {
  (void)cls;
  void* addr;
  PyObject* keep_alive;
  if (parse_symbol_args(args, kwargs, "__from_extern_c__", "c_symbol", &addr, &keep_alive) != 0) {
    return NULL;
  }
  /* The safe call ignores its first argument, which carries the kept object. */
  TVMFFISafeCallType safe_call = (TVMFFISafeCallType)(uintptr_t)addr;
  if (keep_alive == Py_None) return make_function(NULL, safe_call, NULL);
  Py_INCREF(keep_alive);
  PyObject* f = make_function(keep_alive, safe_call, tvmffi_release_py_object);
  if (f == NULL) Py_DECREF(keep_alive);
  return f;
}

/* ---- MLIR packed calls ----------------------------------------------------------- */
/* An MLIR packed function takes one array of pointers to its arguments:
 * (handle, args, num_args, result, return code). */
typedef void (*MLIRPackedCall)(void**);

typedef struct {
  MLIRPackedCall call;
  PyObject* keep_alive; /* owned, or NULL */
} MLIRPacked;

static int mlir_packed_safe_call(void* self, const TVMFFIAny* args, int32_t nargs,
                                 TVMFFIAny* result) {
  MLIRPacked* p = (MLIRPacked*)self;
  void* handle = NULL;
  int rc = 0;
  void* packed[] = {&handle, (void*)&args, &nargs, &result, &rc};
  p->call(packed);
  return rc;
}

static void mlir_packed_delete(void* self) {
  MLIRPacked* p = (MLIRPacked*)self;
  if (p->keep_alive != NULL) tvmffi_release_py_object(p->keep_alive);
  free(p);
}

PyObject* tvmffi_function_from_mlir_packed(PyObject* cls, PyObject* args, PyObject* kwargs) {
  (void)cls;
  void* addr;
  PyObject* keep_alive;
  if (parse_symbol_args(args, kwargs, "__from_mlir_packed_safe_call__", "mlir_packed_symbol",
                        &addr, &keep_alive) != 0) {
    return NULL;
  }
  MLIRPacked* p = malloc(sizeof(MLIRPacked));
  if (p == NULL) return PyErr_NoMemory();
  p->call = (MLIRPackedCall)(uintptr_t)addr;
  p->keep_alive = keep_alive == Py_None ? NULL : Py_NewRef(keep_alive);
  PyObject* f = make_function(p, mlir_packed_safe_call, mlir_packed_delete);
  if (f == NULL) {
    Py_XDECREF(p->keep_alive);
    free(p);
  }
  return f;
}
