/*
 * Function: an FFI function object callable from Python through vectorcall.
 *
 * The call path packs arguments into TVMFFIAny on the stack (heap only past
 * eight arguments), calls the function cell's safe_call directly, optionally
 * with the GIL released, and converts the owned result back.
 */
#include "core.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define STACK_ARGS 8

static int g_release_gil_default = 1;

/* Whether the argument `arg`, packed as `packed`, is the result's source: a
 * framework tensor whose view made for this call came back. */
static int is_result_source(PyObject* arg, const TVMFFIAny* packed, const TVMFFIAny* result) {
  return packed->type_index == kTVMFFITensor && packed->v_obj == result->v_obj &&
         tvmffi_tensor_is_fill_of(result->v_obj, arg);
}

/* A torch tensor handed back as the callee got it (echo(y)) is that torch
 * tensor: the official binding makes a new alias of it through DLPack (same
 * type and data, ~1 us more); the extra reference the result carries is
 * dropped. FFI objects are not returned this way: a result is a new wrapper
 * of its handle, as officially, so that `y = f(x); x._move()` leaves y its
 * own reference. */
static PyObject* same_object_arg(PyObject* const* args, const TVMFFIAny* packed,
                                 Py_ssize_t nargs, TVMFFIAny* result) {
  if (result->type_index != kTVMFFITensor) return NULL;
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    if (is_result_source(args[i], &packed[i], result)) {
      TVMFFIObjectDecRef(result->v_obj);
      Py_INCREF(args[i]);
      return args[i];
    }
  }
  return NULL;
}

/* An object passed by move (obj._move()) that is also passed as a plain
 * argument: the callee may take and drop the moved reference while the plain
 * view still points at the object, so the call keeps one more reference. */
static int keep_moved(const TVMFFIAny* packed, Py_ssize_t nargs, Py_ssize_t moved,
                      TempList* temps) {
  TVMFFIObjectHandle h = *(TVMFFIObjectHandle*)packed[moved].v_ptr;
  for (Py_ssize_t j = 0; j < nargs; ++j) {
    if (j != moved && packed[j].type_index >= kTVMFFIStaticObjectBegin && packed[j].v_obj == h) {
      TVMFFIObjectIncRef(h);
      if (temps_push(temps, h) != 0) {
        TVMFFIObjectDecRef(h);
        return -1;
      }
      return 0;
    }
  }
  return 0;
}

/* The callee itself, with the GIL released around it when asked. */
static inline int invoke(TVMFFIObjectHandle func, TVMFFISafeCallType safe_call,
                         const TVMFFIAny* args, int32_t nargs, TVMFFIAny* result,
                         int release_gil) {
  if (!release_gil) return safe_call(func, args, nargs, result);
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = safe_call(func, args, nargs, result);
  Py_END_ALLOW_THREADS
  return rc;
}

/* The call once its arguments are packed (call_safe here, graph_entry.c): an
 * object passed by move and plainly keeps a reference (keep_moved), a
 * framework's allocator is the environment's while the callee runs, then the
 * callee. 0 with *result owned, or -1 with the Python error set. */
static inline int call_packed(TVMFFIObjectHandle func, TVMFFISafeCallType safe_call,
                              TVMFFIAny* packed, Py_ssize_t nargs, int moves, TempList* temps,
                              int release_gil, TVMFFIAny* result) {
  for (Py_ssize_t i = 0; moves && i < nargs; ++i) {
    if (packed[i].type_index == kTVMFFIObjectRValueRef && keep_moved(packed, nargs, i, temps)) {
      return -1;
    }
  }
  result->type_index = kTVMFFINone;
  result->zero_padding = 0;
  result->v_int64 = 0;
  /* Tensors of a framework in the arguments: its allocator for the call. */
  const DLPackExchangeAPI* api = temps->dlpack_api;
  DLPackManagedTensorAllocator prev_alloc = NULL;
  int restore_alloc = 0;
  if (api != NULL && tvmffi_framework_enter(api, &prev_alloc, &restore_alloc) != 0) return -1;
  int rc = invoke(func, safe_call, packed, (int32_t)nargs, result, release_gil);
  if (restore_alloc && tvmffi_framework_leave(prev_alloc) != 0) {
    if (rc == 0) tvmffi_any_release(result);
    else tvmffi_discard_ffi_error();
    return -1;
  }
  if (rc != 0) {
    tvmffi_raise_ffi_error();
    return -1;
  }
  return 0;
}

int tvmffi_call_packed(TVMFFIObjectHandle func, TVMFFIAny* packed, Py_ssize_t nargs,
                       TempList* temps, int release_gil, TVMFFIAny* result) {
  int moves = 0;
  for (Py_ssize_t i = 0; i < nargs; ++i) moves |= packed[i].type_index == kTVMFFIObjectRValueRef;
  TVMFFISafeCallType safe_call = ((TVMFFIFunctionCell*)tvmffi_cell(func))->safe_call;
  return call_packed(func, safe_call, packed, nargs, moves, temps, release_gil, result);
}

/* Packs and calls. `keep_views`: the callee stores its arguments (a container
 * builtin, BUILTIN_KEEPS_ARGS), so a view among them becomes a Tensor that
 * holds it (TempList.keep_views). The guard holds the callee and what the
 * arguments borrow once a conversion may run Python code (call_guard.c). */
static PyObject* call_safe(TVMFFIObjectHandle func, TVMFFISafeCallType safe_call,
                           PyObject* const* args, Py_ssize_t nargs, int release_gil,
                           int keep_views) {
  TVMFFIAny stack[STACK_ARGS];
  TVMFFIAny* packed = stack;
  if (nargs > STACK_ARGS) {
    packed = PyMem_Malloc(sizeof(TVMFFIAny) * (size_t)nargs);
    if (packed == NULL) return PyErr_NoMemory();
  }
  TempList temps;
  temps_init(&temps);
  temps.keep_views = keep_views;
  CallGuard guard = {.callee = func, .packed = packed};
  temps.guard = &guard;
  PyObject* res = NULL;
  int moves = 0; /* obj._move() arguments: rare, handled after packing */
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    guard.npacked = i;
    if (tvmffi_arg_to_any(args[i], &packed[i], &temps, i) != 0) goto done;
    if (guard.holding && tvmffi_guard_hold_value(&temps, &packed[i]) != 0) goto done;
    moves |= packed[i].type_index == kTVMFFIObjectRValueRef;
  }
  temps.guard = NULL;
  TVMFFIAny result;
  if (call_packed(func, safe_call, packed, nargs, moves, &temps, release_gil, &result) == 0 &&
      (res = same_object_arg(args, packed, nargs, &result)) == NULL) {
    res = tvmffi_any_to_py_result(&result, temps.dlpack_api);
  }
done:
  temps_release(&temps);
  if (packed != stack) PyMem_Free(packed);
  return res;
}

/* An argument that packs by value alone (an int of one digit, a float, None,
 * a bool): 1 with *out filled, else 0. Such arguments make no temporaries,
 * moves or framework tensors, so a call of only these needs none of
 * call_safe's bookkeeping. */
static inline int pack_scalar(PyObject* obj, TVMFFIAny* out) {
  PyTypeObject* tp = Py_TYPE(obj);
  out->zero_padding = 0;
  if (tp == &PyLong_Type) {
    long long v;
    if (!tvmffi_compact_int(obj, &v)) return 0;
    out->type_index = kTVMFFIInt;
    out->v_int64 = v;
    return 1;
  }
  if (tp == &PyFloat_Type) {
    out->type_index = kTVMFFIFloat;
    out->v_float64 = PyFloat_AS_DOUBLE(obj);
    return 1;
  }
  if (obj == Py_None || tp == &PyBool_Type) {
    out->type_index = obj == Py_None ? kTVMFFINone : kTVMFFIBool;
    out->v_int64 = obj == Py_True;
    return 1;
  }
  return 0;
}

/* f(1, 2.0): every argument a scalar (pack_scalar); otherwise call_safe. */
static PyObject* call_scalars(TVMFFIObjectHandle func, TVMFFISafeCallType safe_call,
                              PyObject* const* args, Py_ssize_t nargs, int release_gil) {
  TVMFFIAny packed[STACK_ARGS];
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    if (!pack_scalar(args[i], &packed[i])) {
      return call_safe(func, safe_call, args, nargs, release_gil, 0);
    }
  }
  TVMFFIAny result = {.type_index = kTVMFFINone};
  if (invoke(func, safe_call, packed, (int32_t)nargs, &result, release_gil) != 0) {
    return tvmffi_raise_ffi_error();
  }
  if (result.type_index == kTVMFFIInt) return PyLong_FromLongLong(result.v_int64);
  return tvmffi_any_to_py_result(&result, NULL);
}

/* f(): nothing to pack, no temporaries, no framework; the most common
 * result, None, needs no conversion (call_safe's bookkeeping is ~40% of the
 * binding's own cost of such a call). */
static PyObject* call_no_args(TVMFFIObjectHandle func, TVMFFISafeCallType safe_call,
                              int release_gil) {
  TVMFFIAny result = {.type_index = kTVMFFINone};
  TVMFFIAny no_args[1] = {{.type_index = kTVMFFINone}}; /* a valid pointer, never read */
  int rc = invoke(func, safe_call, no_args, 0, &result, release_gil);
  if (rc != 0) return tvmffi_raise_ffi_error();
  if (result.type_index == kTVMFFINone) Py_RETURN_NONE;
  return tvmffi_any_to_py_owned(&result);
}

PyObject* tvmffi_call_handle(TVMFFIObjectHandle func, PyObject* const* args, Py_ssize_t nargs,
                             int release_gil, int keep_views) {
  TVMFFISafeCallType safe_call = ((TVMFFIFunctionCell*)tvmffi_cell(func))->safe_call;
  return call_safe(func, safe_call, args, nargs, release_gil, keep_views);
}

/* Builtins whose input the runtime trusts: their names (a frozenset) and the
 * hook that vets their arguments, hook(function, args) -> the arguments to
 * pass (a tuple), set by _set_builtin_vetting. */
static PyObject* g_vetted_names;
static PyObject* g_vet_hook;

static PyObject* vetted_args(TVMFFIPyFunction* self, PyObject* const* args, Py_ssize_t nargs) {
  if (g_vet_hook == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "tvmffi: the builtin vetting hook is not set");
    return NULL;
  }
  PyObject* given = PyTuple_New(nargs);
  if (given == NULL) return NULL;
  for (Py_ssize_t i = 0; i < nargs; ++i) PyTuple_SET_ITEM(given, i, Py_NewRef(args[i]));
  PyObject* vetted = PyObject_CallFunctionObjArgs(g_vet_hook, (PyObject*)self, given, NULL);
  Py_DECREF(given);
  if (vetted != NULL && !PyTuple_Check(vetted)) {
    Py_DECREF(vetted);
    PyErr_SetString(PyExc_TypeError, "tvmffi: the builtin vetting hook must return a tuple");
    return NULL;
  }
  return vetted;
}

static Py_NO_INLINE PyObject* no_function_error(PyObject* self) {
  PyErr_Format(PyExc_ValueError, "%.200s object holds no FFI function (moved from, or never "
               "given one)", Py_TYPE(self)->tp_name);
  return NULL;
}

static PyObject* builtin_call_unlocked(TVMFFIPyFunction* self, PyObject* const* args,
                                       Py_ssize_t nargs);
static PyObject* function_vectorcall(PyObject* callable, PyObject* const* args, size_t nargsf,
                                     PyObject* kwnames);

#ifdef Py_GIL_DISABLED
/* The object a locked builtin's call works on: the functor's container, or
 * a container builtin's first argument (the List of ffi.ListAppend), else
 * NULL (the registries and graph traversals: BUILTIN_CONTAINER). */
static const void* lock_key_of(TVMFFIPyFunction* self, PyObject* const* args, Py_ssize_t nargs) {
  if (self->lock_key != NULL) return self->lock_key;
  if ((self->builtin_flags & BUILTIN_CONTAINER) && nargs > 0 && tvmffi_is_object(args[0])) {
    return ((TVMFFIPyObject*)args[0])->handle;
  }
  return NULL;
}

static int is_container_builtin(const char* name) {
  return strncmp(name, "ffi.List", 8) == 0 || strncmp(name, "ffi.Dict", 8) == 0 ||
         strncmp(name, "ffi.Map", 7) == 0 || strncmp(name, "ffi.Array", 9) == 0;
}

/* Without a GIL, a builtin's call holds the runtime lock of what it works on
 * (threads.c); a functor it returns takes the same lock on every call. */
static PyObject* builtin_call_locked(TVMFFIPyFunction* self, PyObject* const* args,
                                     Py_ssize_t nargs) {
  const void* key = lock_key_of(self, args, nargs);
  PyObject* res;
  if (self->builtin_flags & BUILTIN_CHANGES) {
    TVMFFI_BEGIN_RUNTIME_CHANGE(key);
    res = builtin_call_unlocked(self, args, nargs);
    TVMFFI_END_RUNTIME_CHANGE();
  } else {
    TVMFFI_BEGIN_RUNTIME(key);
    res = builtin_call_unlocked(self, args, nargs);
    TVMFFI_END_RUNTIME();
  }
  if ((self->builtin_flags & BUILTIN_FUNCTOR_KEEPS_GIL) && res != NULL &&
      Py_TYPE(res) == &TVMFFIFunctionType) {
    TVMFFIPyFunction* f = (TVMFFIPyFunction*)res;
    f->lock_key = key;
    f->builtin_flags |= BUILTIN_LOCKED;
    f->vectorcall = function_vectorcall; /* it checks the flags */
  }
  return res;
}
#endif

/* A call of a runtime builtin with BUILTIN_* flags (function_vectorcall). */
static Py_NO_INLINE PyObject* builtin_call(TVMFFIPyFunction* self, PyObject* const* args,
                                           Py_ssize_t nargs) {
#ifdef Py_GIL_DISABLED
  if (self->builtin_flags & BUILTIN_LOCKED) return builtin_call_locked(self, args, nargs);
#endif
  return builtin_call_unlocked(self, args, nargs);
}

static PyObject* builtin_call_unlocked(TVMFFIPyFunction* self, PyObject* const* args,
                                       Py_ssize_t nargs) {
  int builtin = self->builtin_flags;
  if (builtin & BUILTIN_VETS_ARGS) {
    PyObject* vetted = vetted_args(self, args, nargs);
    if (vetted == NULL) return NULL;
    /* The hook ran Python code, which may have moved the function. */
    PyObject* res = self->base.handle == NULL
                        ? no_function_error((PyObject*)self)
                        : call_safe(self->base.handle, self->safe_call, &PyTuple_GET_ITEM(vetted, 0),
                                    PyTuple_GET_SIZE(vetted), self->release_gil, 0);
    Py_DECREF(vetted);
    return res;
  }
  if (builtin & BUILTIN_MUTATES_GRAPH) tvmffi_graph_mutated();
  PyObject* held = NULL;
  if (builtin & BUILTIN_HOLD_MASK) {
    held = tvmffi_hold_dropped((HoldKind)((builtin & BUILTIN_HOLD_MASK) >> BUILTIN_HOLD_SHIFT),
                               args, nargs);
    if (held == NULL) return NULL;
  }
  PyObject* res;
  if (self->base.handle == NULL) { /* the hold ran Python code (__eq__ of a key) */
    res = no_function_error((PyObject*)self);
  } else {
    res = nargs == 0
              ? call_no_args(self->base.handle, self->safe_call, self->release_gil)
              : call_safe(self->base.handle, self->safe_call, args, nargs, self->release_gil,
                          (builtin & BUILTIN_KEEPS_ARGS) != 0);
  }
  Py_XDECREF(held); /* a dropped deep value is freed here, iteratively */
  if ((builtin & BUILTIN_FUNCTOR_KEEPS_GIL) && res != NULL && Py_TYPE(res) == &TVMFFIFunctionType) {
    ((TVMFFIPyFunction*)res)->release_gil = 0;
  }
  return res;
}

/* The call by its arity, once the function is known to be plain. Tail calls:
 * the vectorcall's frame costs nothing on the common path. The handle is
 * checked here, where the call loads it: a move (f._move() taken by a callee,
 * __move_handle_from__) empties it but leaves the cached safe_call. */
static inline PyObject* call_by_arity(TVMFFIPyFunction* self, PyObject* const* args,
                                      Py_ssize_t nargs) {
  if (__builtin_expect(self->base.handle == NULL, 0)) return no_function_error((PyObject*)self);
  if (nargs == 0) return call_no_args(self->base.handle, self->safe_call, self->release_gil);
  if (nargs <= STACK_ARGS) {
    return call_scalars(self->base.handle, self->safe_call, args, nargs, self->release_gil);
  }
  return call_safe(self->base.handle, self->safe_call, args, nargs, self->release_gil, 0);
}

static PyObject* function_vectorcall(PyObject* callable, PyObject* const* args, size_t nargsf,
                                     PyObject* kwnames) {
  TVMFFIPyFunction* self = (TVMFFIPyFunction*)callable;
  if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0) { /* bound by name (kwargs_binder.c) */
    return tvmffi_function_call_kw(callable, args, nargsf, kwnames);
  }
  if (self->safe_call == NULL || self->base.handle == NULL) return no_function_error(callable);
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (self->builtin_flags != 0) return builtin_call(self, args, nargs);
  return call_by_arity(self, args, nargs);
}

/* The vectorcall of a plain function (a callee, no builtin flags): what
 * function_vectorcall checks for the rare kinds was decided when the wrapper
 * was made (tvmffi_function_wrap_owned; py_get_global_func puts the general
 * one back on a builtin), so a call goes straight to its arity's path. */
static PyObject* plain_vectorcall(PyObject* callable, PyObject* const* args, size_t nargsf,
                                  PyObject* kwnames) {
  if (kwnames != NULL) return function_vectorcall(callable, args, nargsf, kwnames);
  return call_by_arity((TVMFFIPyFunction*)callable, args, PyVectorcall_NARGS(nargsf));
}

static int guarded_flags(TVMFFIObjectHandle handle);

/* Function objects are garbage-collected types (their __dict__ may hold a
 * cycle) but start untracked: one is tracked only once it has a dict, so the
 * common wrapper costs the collector nothing. */
PyObject* tvmffi_function_wrap_owned(TVMFFIObjectHandle handle) {
  TVMFFIPyFunction* f = PyObject_GC_New(TVMFFIPyFunction, &TVMFFIFunctionType);
  if (f == NULL) {
    TVMFFIObjectDecRef(handle);
    return NULL;
  }
  f->base.handle = handle;
  f->base.weakreflist = NULL;
  f->base.dlpack_api = NULL;
  f->base.graph_height = 0;
  f->safe_call = ((TVMFFIFunctionCell*)tvmffi_cell(handle))->safe_call;
  f->builtin_flags = guarded_flags(handle);
  f->vectorcall =
      f->safe_call != NULL && f->builtin_flags == 0 ? plain_vectorcall : function_vectorcall;
  /* A guarded builtin touches shared containers: it keeps the GIL, as by name. */
  f->release_gil = f->builtin_flags != 0 ? 0 : TVMFFI_RELAXED_LOAD(g_release_gil_default);
  f->dict = NULL;
#ifdef Py_GIL_DISABLED
  f->lock_key = NULL;
#endif
  return (PyObject*)f;
}

/* A handle moved in or out (__move_handle_from__): the general vectorcall,
 * which checks for an empty wrapper, serves both directions; the cached
 * call slots follow the handle. */
void tvmffi_function_set_handle(PyObject* func, TVMFFIObjectHandle handle, int builtin_flags) {
  TVMFFIPyFunction* f = (TVMFFIPyFunction*)func;
  f->base.handle = handle;
  f->safe_call = handle != NULL ? ((TVMFFIFunctionCell*)tvmffi_cell(handle))->safe_call : NULL;
  f->vectorcall = function_vectorcall;
  f->builtin_flags = handle != NULL ? builtin_flags : 0;
}

/* Python subclasses (class MyFunction(tvmffi.Function)) start empty and get
 * a handle later (__move_handle_from__, __init_handle_by_constructor__);
 * Function itself is only made from a handle. */
static PyObject* function_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  (void)args;
  (void)kwargs;
  if (type == &TVMFFIFunctionType) {
    PyErr_SetString(PyExc_TypeError,
                    "Function cannot be instantiated directly; use tvmffi.convert_func(callable) "
                    "or tvmffi.get_global_func(name)");
    return NULL;
  }
  TVMFFIPyFunction* f = (TVMFFIPyFunction*)type->tp_alloc(type, 0);
  if (f == NULL) return NULL;
  f->vectorcall = function_vectorcall;
  f->release_gil = TVMFFI_RELAXED_LOAD(g_release_gil_default);
  return (PyObject*)f;
}

static void function_dealloc(PyObject* op) {
  TVMFFIPyFunction* f = (TVMFFIPyFunction*)op;
  PyObject_GC_UnTrack(op);
  if (f->base.weakreflist != NULL) PyObject_ClearWeakRefs(op);
  Py_CLEAR(f->dict);
  TVMFFIObjectHandle h = f->base.handle;
  f->base.handle = NULL;
  if (h != NULL) TVMFFIObjectDecRef(h);
  Py_TYPE(op)->tp_free(op);
}

static int function_traverse(PyObject* op, visitproc visit, void* arg) {
  Py_VISIT(((TVMFFIPyFunction*)op)->dict);
  return 0;
}

static int function_clear(PyObject* op) {
  Py_CLEAR(((TVMFFIPyFunction*)op)->dict);
  return 0;
}

static void track_if_dict(PyObject* op) {
  if (((TVMFFIPyFunction*)op)->dict != NULL && !PyObject_GC_IsTracked(op)) PyObject_GC_Track(op);
}

static int function_setattro(PyObject* op, PyObject* name, PyObject* value) {
  int rc = PyObject_GenericSetAttr(op, name, value);
  track_if_dict(op);
  return rc;
}

static PyObject* function_get_dict(PyObject* op, void* closure) {
  PyObject* d = PyObject_GenericGetDict(op, closure);
  track_if_dict(op);
  return d;
}

static int function_set_dict(PyObject* op, PyObject* value, void* closure) {
  int rc = PyObject_GenericSetDict(op, value, closure);
  track_if_dict(op);
  return rc;
}

static PyObject* get_release_gil(PyObject* op, void* closure) {
  (void)closure;
  return PyBool_FromLong(((TVMFFIPyFunction*)op)->release_gil);
}

static int set_release_gil(PyObject* op, PyObject* value, void* closure) {
  (void)closure;
  if (value == NULL) {
    PyErr_SetString(PyExc_AttributeError, "release_gil cannot be deleted");
    return -1;
  }
  int flag = PyObject_IsTrue(value);
  if (flag < 0) return -1;
  ((TVMFFIPyFunction*)op)->release_gil = flag;
  return 0;
}

static PyGetSetDef function_getset[] = {
    {"release_gil", get_release_gil, set_release_gil,
     "Whether calls release the GIL while the FFI function runs (default True).", NULL},
    {"__dict__", function_get_dict, function_set_dict, "Instance attributes.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef function_methods[] = {
    {"__from_extern_c__", (PyCFunction)(void (*)(void))tvmffi_function_from_extern_c,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "__from_extern_c__(c_symbol, *, keep_alive_object=None): a Function calling the safe-call "
     "function at address c_symbol (which ignores its first argument), keeping "
     "keep_alive_object alive while the Function lives."},
    {"__from_mlir_packed_safe_call__",
     (PyCFunction)(void (*)(void))tvmffi_function_from_mlir_packed,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "__from_mlir_packed_safe_call__(mlir_packed_symbol, *, keep_alive_object=None): a Function "
     "calling the MLIR packed function (void (*)(void**)) at that address, which implements a "
     "safe call; keep_alive_object lives as long as the Function."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject TVMFFIFunctionType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.Function",
    .tp_basicsize = sizeof(TVMFFIPyFunction),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_BASETYPE |
                Py_TPFLAGS_HAVE_GC,
    .tp_dealloc = function_dealloc,
    .tp_traverse = function_traverse,
    .tp_clear = function_clear,
    .tp_setattro = function_setattro,
    .tp_dictoffset = offsetof(TVMFFIPyFunction, dict),
    .tp_free = PyObject_GC_Del,
    /* .tp_doc: set by type_docs.c */
    .tp_base = &TVMFFIObjectType,
    .tp_new = function_new,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(TVMFFIPyFunction, vectorcall),
    .tp_getset = function_getset,
    .tp_methods = function_methods,
};

/* ---- global registry ----------------------------------------------------- */
int tvmffi_get_global(const char* name, TVMFFIObjectHandle* out) {
  TVMFFIByteArray ba = {name, strlen(name)};
  *out = NULL;
  int rc;
  TVMFFI_BEGIN_RUNTIME(NULL); /* the registry another thread may be changing */
  rc = TVMFFIFunctionGetGlobal(&ba, out);
  TVMFFI_END_RUNTIME();
  if (rc != 0) {
    tvmffi_raise_ffi_error();
    return -1;
  }
  return 0;
}

int tvmffi_call_global_any(const char* name, TVMFFIObjectHandle* cache, TVMFFIAny* args,
                           int32_t nargs, TVMFFIAny* result) {
  if (*cache == NULL) {
    /* Runtime builtins live for the whole process: keep the reference. */
    if (tvmffi_get_global(name, cache) != 0) return -1;
    if (*cache == NULL) {
      PyErr_Format(PyExc_RuntimeError, "runtime function '%s' is not available", name);
      return -1;
    }
  }
  result->type_index = kTVMFFINone;
  result->zero_padding = 0;
  result->v_int64 = 0;
  TVMFFISafeCallType safe_call = ((TVMFFIFunctionCell*)tvmffi_cell(*cache))->safe_call;
  if (safe_call(*cache, args, nargs, result) != 0) {
    tvmffi_raise_ffi_error();
    return -1;
  }
  return 0;
}

/* The runtime's own builtins ("ffi.*": container reads and mutations, the
 * global registry) touch state shared by every thread, which the runtime does
 * not lock: they keep the GIL, so Python threads sharing a List, Dict or the
 * registry are serialized as with Python's own list and dict (without a GIL,
 * by the runtime locks of threads.c: BUILTIN_LOCKED). They are cheap and
 * never block, so releasing the GIL would buy nothing. */
static int is_runtime_builtin(const char* name) { return strncmp(name, "ffi.", 4) == 0; }

/* "ffi.*Functor" builtins return functions over the same shared state
 * (ffi.MapForwardIterFunctor, ffi.FunctionListGlobalNamesFunctor). Other
 * builtins' function results (ffi.ModuleGetFunction's kernels) are ordinary
 * Functions and release the GIL by default, as in the official binding. */
static int makes_functor(const char* name) {
  size_t n = strlen(name);
  return n >= 7 && strcmp(name + n - 7, "Functor") == 0;
}

/* What calls of the builtins that change a shared List or Dict need: a graph
 * epoch bump when they can add an element (removing or reordering cannot make
 * a cycle or a deeper value), and the HOLD_* kind of what they drop (Pop
 * hands its value back to the caller, so it drops nothing). */
/* BUILTIN_CHANGES: only without a GIL (with one, ffi.ListPop stays a plain call). */
enum {
  DROPS = TVMFFI_FREE_THREADED ? BUILTIN_CHANGES : 0,
  ADDS = BUILTIN_MUTATES_GRAPH | DROPS,
  KEEPS = BUILTIN_KEEPS_ARGS
};
static const struct {
  const char* name;
  int flags;
} kChanging[] = {
    {"ffi.ListSetItem", ADDS | KEEPS | BUILTIN_HOLD(HOLD_INDEX)},
    {"ffi.ListReplaceSlice", ADDS | KEEPS | BUILTIN_HOLD(HOLD_RANGE)},
    {"ffi.DictSetItem", ADDS | KEEPS | BUILTIN_HOLD(HOLD_KEY)},
    {"ffi.ListAppend", ADDS | KEEPS},
    {"ffi.ListInsert", ADDS | KEEPS},
    {"ffi.ListErase", DROPS | BUILTIN_HOLD(HOLD_INDEX)},
    {"ffi.ListEraseRange", DROPS | BUILTIN_HOLD(HOLD_RANGE)},
    {"ffi.ListClear", DROPS | BUILTIN_HOLD(HOLD_ALL)},
    {"ffi.DictClear", DROPS | BUILTIN_HOLD(HOLD_ALL)},
    {"ffi.DictErase", DROPS | BUILTIN_HOLD(HOLD_KEY)},
    {"ffi.ListPop", DROPS},
    {"ffi.ListReverse", DROPS},
    {"ffi.ListReserve", DROPS},
};

/* The constructors store their arguments as elements (BUILTIN_KEEPS_ARGS
 * alone: they change no shared container). */
static const char* const kConstructors[] = {"ffi.Array", "ffi.List", "ffi.Map", "ffi.Dict"};

static int container_flags(const char* name) {
  for (size_t i = 0; i < sizeof kChanging / sizeof kChanging[0]; ++i) {
    if (strcmp(name, kChanging[i].name) == 0) return kChanging[i].flags;
  }
  for (size_t i = 0; i < sizeof kConstructors / sizeof kConstructors[0]; ++i) {
    if (strcmp(name, kConstructors[i]) == 0) return BUILTIN_KEEPS_ARGS;
  }
  return 0;
}

static int is_vetted(const char* name) {
  if (g_vetted_names == NULL) return 0;
  PyObject* key = PyUnicode_FromString(name);
  int found = key != NULL ? PySet_Contains(g_vetted_names, key) : -1;
  Py_XDECREF(key);
  if (found < 0) PyErr_Clear(); /* not a name in the set */
  return found > 0;
}

/* ---- guards that follow the function ---------------------------------------------
 * The builtins with BUILTIN_* guards (the List/Dict mutations, the vetted
 * decoders) are also known by handle: a wrapper made for one of those handles,
 * however the function was reached (get_global_func, an Array element, a
 * callback argument, a module, to_function), gets the guards. The table holds
 * a reference to each handle, so an address in it is never reused. Built on
 * first use, and again when the vetted names change. */
#define GUARDED_MAX 32
/* Without a GIL a guarded builtin also takes its runtime lock, whichever way
 * it was reached (as get_global_func's wrappers do, by name). */
#ifdef Py_GIL_DISABLED
#define GUARDED_LOCK_FLAGS(extra) (BUILTIN_LOCKED | (extra))
#else
#define GUARDED_LOCK_FLAGS(extra) 0
#endif
static TVMFFIMutex g_guarded_lock; /* the table without a GIL; held for no Python code */
static struct {
  TVMFFIObjectHandle handle;
  int flags;
} g_guarded[GUARDED_MAX];
static int g_guarded_count;
static int g_guarded_ready;

static void guarded_add(const char* name, int flags) {
  TVMFFIObjectHandle h;
  if (tvmffi_get_global(name, &h) != 0) {
    PyErr_Clear(); /* a runtime without it: nothing to guard */
    return;
  }
  if (h == NULL) return;
  for (int i = 0; i < g_guarded_count; ++i) {
    if (g_guarded[i].handle == h) {
      g_guarded[i].flags |= flags;
      TVMFFIObjectDecRef(h);
      return;
    }
  }
  if (g_guarded_count == GUARDED_MAX) {
    TVMFFIObjectDecRef(h);
    return;
  }
  g_guarded[g_guarded_count].handle = h; /* owned */
  g_guarded[g_guarded_count++].flags = flags;
}

static void guarded_build(void) {
  PyObject *type, *value, *tb; /* a wrapper may be made while an error is set */
  PyErr_Fetch(&type, &value, &tb);
  while (g_guarded_count > 0) TVMFFIObjectDecRef(g_guarded[--g_guarded_count].handle);
  g_guarded_ready = 1;
  for (size_t i = 0; i < sizeof kChanging / sizeof kChanging[0]; ++i) {
    guarded_add(kChanging[i].name, kChanging[i].flags | GUARDED_LOCK_FLAGS(BUILTIN_CONTAINER));
  }
  for (size_t i = 0; i < sizeof kConstructors / sizeof kConstructors[0]; ++i) {
    guarded_add(kConstructors[i], BUILTIN_KEEPS_ARGS);
  }
  PyObject* names = g_vetted_names != NULL ? PySequence_List(g_vetted_names) : NULL;
  for (Py_ssize_t i = 0; names != NULL && i < PyList_GET_SIZE(names); ++i) {
    const char* name = PyUnicode_Check(PyList_GET_ITEM(names, i))
                           ? PyUnicode_AsUTF8(PyList_GET_ITEM(names, i))
                           : NULL;
    if (name != NULL) guarded_add(name, BUILTIN_VETS_ARGS | GUARDED_LOCK_FLAGS(0));
  }
  Py_XDECREF(names);
  PyErr_Clear();
  PyErr_Restore(type, value, tb);
}

/* The BUILTIN_* flags of the builtin `handle` is, or 0. */
static int guarded_flags(TVMFFIObjectHandle handle) {
  int flags = 0;
  TVMFFI_LOCK(&g_guarded_lock);
  if (!g_guarded_ready) guarded_build();
  for (int i = 0; i < g_guarded_count; ++i) {
    if (g_guarded[i].handle == handle) {
      flags = g_guarded[i].flags;
      break;
    }
  }
  TVMFFI_UNLOCK(&g_guarded_lock);
  return flags;
}

/* _set_builtin_vetting(hook, names): calls of the builtins `names` (from now on
 * looked up) pass their arguments through hook(function, args) first. */
static PyObject* py_set_builtin_vetting(PyObject* self, PyObject* args) {
  (void)self;
  PyObject *hook, *names;
  if (!PyArg_ParseTuple(args, "OO!", &hook, &PyFrozenSet_Type, &names)) return NULL;
  if (!PyCallable_Check(hook)) {
    PyErr_SetString(PyExc_TypeError, "_set_builtin_vetting(hook: callable, names: frozenset)");
    return NULL;
  }
  Py_XSETREF(g_vet_hook, Py_NewRef(hook));
  Py_XSETREF(g_vetted_names, Py_NewRef(names));
  TVMFFI_LOCK(&g_guarded_lock);
  g_guarded_ready = 0; /* the guarded handles, with these names */
  TVMFFI_UNLOCK(&g_guarded_lock);
  Py_RETURN_NONE;
}

static PyObject* py_get_global_func(PyObject* self, PyObject* args) {
  (void)self;
  const char* name;
  int allow_missing = 0;
  if (!PyArg_ParseTuple(args, "s|p", &name, &allow_missing)) return NULL;
  TVMFFIObjectHandle h;
  if (tvmffi_get_global(name, &h) != 0) return NULL;
  if (h != NULL) {
    PyObject* f = tvmffi_function_wrap_owned(h);
    if (f != NULL && is_runtime_builtin(name)) {
      ((TVMFFIPyFunction*)f)->release_gil = 0;
      ((TVMFFIPyFunction*)f)->builtin_flags |=
          (makes_functor(name) ? BUILTIN_FUNCTOR_KEEPS_GIL : 0) | container_flags(name) |
          (is_vetted(name) ? BUILTIN_VETS_ARGS : 0);
#ifdef Py_GIL_DISABLED
      ((TVMFFIPyFunction*)f)->builtin_flags |=
          BUILTIN_LOCKED | (is_container_builtin(name) ? BUILTIN_CONTAINER : 0); /* no GIL */
#endif
      ((TVMFFIPyFunction*)f)->vectorcall = function_vectorcall; /* it checks the flags */
    }
    /* Looked up by name to be kept (a module global) and called from anywhere. */
    return tvmffi_defer_refcount(f);
  }
  if (allow_missing) Py_RETURN_NONE;
  PyErr_Format(PyExc_ValueError, "global function '%s' is not registered", name);
  return NULL;
}

/* Function handle for a Function or a callable; *owned says whether the
 * caller must release it. */
static int handle_for(PyObject* func, TVMFFIObjectHandle* out) {
  if (PyObject_TypeCheck(func, &TVMFFIFunctionType)) {
    *out = ((TVMFFIPyObject*)func)->handle;
    TVMFFIObjectIncRef(*out);
    return 0;
  }
  if (!PyCallable_Check(func)) {
    PyErr_Format(PyExc_TypeError, "expected a callable, got '%.200s'", Py_TYPE(func)->tp_name);
    return -1;
  }
  return tvmffi_callback_create(func, out);
}

static PyObject* py_to_function(PyObject* self, PyObject* func) {
  (void)self;
  TVMFFIObjectHandle h;
  if (handle_for(func, &h) != 0) return NULL;
  return tvmffi_function_wrap_owned(h);
}

static PyObject* py_register_global_func(PyObject* self, PyObject* args) {
  (void)self;
  const char* name;
  Py_ssize_t name_len;
  PyObject* func;
  int override = 0;
  if (!PyArg_ParseTuple(args, "s#O|p", &name, &name_len, &func, &override)) return NULL;
  TVMFFIObjectHandle h;
  if (handle_for(func, &h) != 0) return NULL;
  TVMFFIByteArray ba = {name, (size_t)name_len};
  int rc;
  TVMFFI_BEGIN_RUNTIME(NULL); /* the registry another thread may be reading */
  rc = TVMFFIFunctionSetGlobal(&ba, h, override);
  TVMFFI_END_RUNTIME();
  if (rc != 0) {
    TVMFFIObjectDecRef(h);
    return tvmffi_raise_ffi_error();
  }
  return tvmffi_function_wrap_owned(h);
}

static PyObject* py_set_release_gil_default(PyObject* self, PyObject* flag) {
  (void)self;
  int v = PyObject_IsTrue(flag);
  if (v < 0) return NULL;
  TVMFFI_RELAXED_STORE(g_release_gil_default, v);
  Py_RETURN_NONE;
}

static PyMethodDef function_module_methods[] = {
    {"get_global_func", py_get_global_func, METH_VARARGS,
     "get_global_func(name, allow_missing=False): look up a registered global function."},
    {"to_function", py_to_function, METH_O, "Wrap a Python callable as an FFI Function."},
    {"_set_builtin_vetting", py_set_builtin_vetting, METH_VARARGS,
     "_set_builtin_vetting(hook, names): builtins `names` looked up from now on pass their "
     "arguments through hook(function, args) -> args first."},
    {"register_global_func", py_register_global_func, METH_VARARGS,
     "register_global_func(name, func, override=False)"},
    {"set_release_gil_default", py_set_release_gil_default, METH_O,
     "Default release_gil for Functions created from now on."},
    {NULL, NULL, 0, NULL},
};

int tvmffi_function_init_types(PyObject* module) {
  /* Same switch as the official binding's TVM_FFI_RELEASE_GIL_BY_DEFAULT. */
  const char* env = getenv("TVMFFI_RELEASE_GIL_BY_DEFAULT");
  if (env != NULL && env[0] == '0' && env[1] == '\0') g_release_gil_default = 0;
  if (PyType_Ready(&TVMFFIFunctionType) < 0) return -1;
  Py_INCREF(&TVMFFIFunctionType);
  if (PyModule_AddObject(module, "Function", (PyObject*)&TVMFFIFunctionType) < 0) return -1;
  return PyModule_AddFunctions(module, function_module_methods);
}
