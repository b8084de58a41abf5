/*
 * Python callables as FFI functions.
 *
 * A callback is an FFI function object built here, by the C ABI's object
 * layout (header, function cell, then the callable): its cell's safe_call is
 * callback_safe_call itself, so a call from C++ reaches Python with no
 * trampoline, and making one costs no call into the runtime. Blocks are
 * recycled through a small free list (touched only with the GIL held).
 *
 * The FFI may call a callback from any thread, including threads Python never
 * saw. A thread that already holds the GIL (a caller with release_gil=False,
 * or C++ called from Python code) goes straight in; any other takes it with
 * PyGILState_Ensure. Arguments are borrowed views owned by the caller; the
 * result is an owned Any handed to the caller. A Python exception becomes the
 * FFI's raised error.
 */
#include "core.h"

#define STACK_ARGS 8
#define FREE_BLOCKS_MAX 32

typedef struct {
  TVMFFIObject header;
  TVMFFIFunctionCell cell;
  PyObject* callable; /* owned while the strong count is non-zero */
} PyCallback;

static PyCallback* g_free_blocks[FREE_BLOCKS_MAX];
static int g_free_count;

static int invoke(PyObject* callable, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* result) {
  /* Python -> FFI -> Python recursion passes here once per level: it ends in a
   * RecursionError while the stack still has room (stack.c), not in a crash. */
  if (tvmffi_stack_low("in a Python callback called from FFI code")) {
    return tvmffi_set_ffi_error_from_py();
  }
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
  TempList lent; /* the Tensors lent to this callback (made on first use) */
  int lends = 0;
  for (; converted < nargs; ++converted) {
    const TVMFFIAny* a = &args[converted];
    if (a->type_index == kTVMFFIObjectRValueRef) {
      /* Passed by move: the callback takes the reference. */
      TVMFFIAny taken;
      pyargs[converted] = tvmffi_take_rvalue(a, &taken) == 0 ? tvmffi_any_to_py_owned(&taken) : NULL;
    } else if (a->type_index == kTVMFFIDLTensorPtr) {
      /* Lent for this callback only (tvmffi_dltensor_to_py's rule). */
      PyObject* arg = tvmffi_dltensor_to_py((const DLTensor*)a->v_ptr, 1);
      if (arg != NULL && !lends) {
        temps_init(&lent);
        lends = 1;
      }
      if (arg != NULL && tvmffi_dltensor_lend(arg, &lent) != 0) Py_CLEAR(arg);
      pyargs[converted] = arg;
    } else {
      pyargs[converted] = tvmffi_any_to_py_borrowed(a);
    }
    if (pyargs[converted] == NULL) break;
  }
  if (converted == nargs) ret = PyObject_Vectorcall(callable, pyargs, (size_t)nargs, NULL);
  if (lends) tvmffi_dltensor_lent_end(&lent);
  for (int32_t i = 0; i < converted; ++i) Py_DECREF(pyargs[i]);
  if (pyargs != stack) PyMem_Free(pyargs);
  if (ret == NULL) return tvmffi_set_ffi_error_from_py();
  int rc = tvmffi_py_to_owned_any(ret, result);
  Py_DECREF(ret);
  return rc == 0 ? 0 : tvmffi_set_ffi_error_from_py();
}

static int callback_safe_call(void* self, const TVMFFIAny* args, int32_t nargs,
                              TVMFFIAny* result) {
  PyObject* callable = ((PyCallback*)self)->callable;
  if (tvmffi_holds_gil()) return invoke(callable, args, nargs, result);
  if (TVMFFI_PY_UNUSABLE()) {
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", "Python callback called after interpreter exit");
    return -1;
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  int rc = invoke(callable, args, nargs, result);
  PyGILState_Release(gil);
  return rc;
}

/* Drops the callable (strong count reached zero) and/or frees the block (weak
 * count too), as the flags say. Called by the runtime from any thread; after
 * interpreter exit the callable is leaked on purpose, since Python can no
 * longer free it. */
static void callback_deleter(void* self, int flags) {
  PyCallback* cb = self;
  int held = tvmffi_holds_gil();
  PyGILState_STATE gil = PyGILState_UNLOCKED;
  if (!held) {
    if (TVMFFI_PY_UNUSABLE()) {
      if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) PyMem_RawFree(cb);
      return;
    }
    gil = PyGILState_Ensure();
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) Py_CLEAR(cb->callable);
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) {
    if (TVMFFI_FREE_LISTS && g_free_count < FREE_BLOCKS_MAX) {
      g_free_blocks[g_free_count++] = cb;
    } else {
      PyMem_RawFree(cb);
    }
  }
  if (!held) PyGILState_Release(gil);
}

int tvmffi_callback_create(PyObject* callable, TVMFFIObjectHandle* out) {
  PyCallback* cb =
      TVMFFI_FREE_LISTS && g_free_count > 0 ? g_free_blocks[--g_free_count]
                                           : PyMem_RawMalloc(sizeof(PyCallback));
  if (cb == NULL) {
    PyErr_NoMemory();
    return -1;
  }
  /* One strong and one weak reference, as the runtime's own objects start. */
  cb->header.combined_ref_count = ((uint64_t)1 << 32) | 1u;
  cb->header.type_index = kTVMFFIFunction;
  cb->header.__padding = 0;
  cb->header.deleter = callback_deleter;
  cb->cell.safe_call = callback_safe_call;
  cb->cell.cpp_call = NULL; /* not a C++ function: callers go through safe_call */
  cb->callable = Py_NewRef(callable);
  *out = cb;
  return 0;
}

/* _callback_callable(f): the Python callable of a callback made here, or None
 * for any other function (pickle sends a callback as its callable). */
PyObject* tvmffi_callback_callable(PyObject* self, PyObject* f) {
  (void)self;
  if (!tvmffi_is_object(f)) {
    PyErr_SetString(PyExc_TypeError, "_callback_callable expects a Function");
    return NULL;
  }
  TVMFFIObjectHandle h = tvmffi_object_handle(f);
  if (h == NULL) return NULL;
  if (tvmffi_type_index_of(h) != kTVMFFIFunction) {
    PyErr_SetString(PyExc_TypeError, "_callback_callable expects a Function");
    return NULL;
  }
  PyCallback* cb = h;
  /* Our cell layout holds only when the safe_call is ours; a live callback
   * (f holds a strong reference) always has its callable. */
  if (cb->cell.safe_call != callback_safe_call || cb->callable == NULL) Py_RETURN_NONE;
  return Py_NewRef(cb->callable);
}

/* Releases the reference an FFI object (an opaque object, a kept-alive
 * object) holds on a Python object; the same thread rules as callback_deleter. */
void tvmffi_release_py_object(void* self) {
  if (tvmffi_holds_gil()) {
    Py_DECREF((PyObject*)self);
    return;
  }
  if (TVMFFI_PY_UNUSABLE()) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_DECREF((PyObject*)self);
  PyGILState_Release(gil);
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

/* _to_opaque(obj): obj wrapped in a new ffi.OpaquePyObject (what tvmffi.convert
 * returns for a value with no FFI form, as the official binding). */
PyObject* tvmffi_py_to_opaque(PyObject* self, PyObject* obj) {
  (void)self;
  TVMFFIObjectHandle h;
  if (tvmffi_opaque_py_create(obj, &h) != 0) return NULL;
  return tvmffi_object_wrap_owned(h);
}

/* _opaque_pyobject(o): the Python object an ffi.OpaquePyObject holds. */
PyObject* tvmffi_opaque_pyobject(PyObject* self, PyObject* o) {
  (void)self;
  if (!tvmffi_is_object(o)) {
    PyErr_SetString(PyExc_TypeError, "_opaque_pyobject expects an OpaquePyObject");
    return NULL;
  }
  TVMFFIObjectHandle h = tvmffi_object_handle(o);
  if (h == NULL) return NULL;
  if (tvmffi_type_index_of(h) != kTVMFFIOpaquePyObject) {
    PyErr_SetString(PyExc_TypeError, "_opaque_pyobject expects an OpaquePyObject");
    return NULL;
  }
  return Py_NewRef((PyObject*)((TVMFFIOpaqueObjectCell*)tvmffi_cell(h))->handle);
}
