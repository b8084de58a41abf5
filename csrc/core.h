/*
 * Internal declarations shared by the files of the tvmffi._core extension.
 *
 * One file per concept:
 *   module.c        module init, runtime hooks, method table
 *   threads.c       locks for shared state without the GIL (free-threaded builds)
 *   any.c           the single place where Python values and TVMFFIAny convert
 *   strbytes.c      str / bytes / big-int payloads (small and heap forms)
 *   numpy_scalar.c  NumPy scalars (float32, int8 ... uint64) read in place
 *   object.c        Object base type, handle ownership, type-index -> class table
 *   rvalue.c        obj._move() and the ObjectRValueRef it returns
 *   cany.c          CAny: one owned FFI value held by Python (TypeSchema.convert)
 *   reflection.c    reflected fields, methods, constructors, container cells
 *   py_class.c      FFI types defined in Python (@py_class): type and field registration
 *   field_table.c   one read-only field table per dataclass; its C __init__, __repr__,
 *                   __eq__/ordering, __hash__, __copy__/__deepcopy__/__replace__
 *   function.c      Function type and its vectorcall call path; the global registry
 *   call_guard.c    a packing's borrowed handles and callee held once Python code may run
 *   function_doc.c  a Function's __name__/__qualname__/__doc__/__signature__, lazily
 *   type_docs.c     the public types' docstrings
 *   cfunction.c     Functions from raw C symbols (extern "C" safe calls, MLIR packed)
 *   callback.c      Python callables exposed as FFI functions; opaque Python objects
 *   error.c         FFI errors <-> Python exceptions
 *   error_object.c  the runtime's error object (ffi.Error) seen from Python
 *   device.c        Device value type
 *   dtype.c         dtype value type (a str subclass)
 *   tensor/         Tensor / TensorView, NumPy and DLPack in both directions
 *                   (tensor/internal.h maps its files; tensor/import.c is the entry)
 *   stream.c        the runtime's per-device environment stream
 *   interop.c       one object world with the official binding (tvm_ffi)
 *   framework.c     a call's DLPack C exchange API: the framework's allocator
 *                   during the call, its tensors in the result
 *   graph_guard.c   depth/cycle check before the runtime's recursive graph
 *                   traversals (structural equal/hash/walk/map, JSON graph)
 *   graph_entry.c   structural_equal / structural_hash: bind, check and call in one step
 *   type_plan.c     TypeSchema -> a converter plan (TypeConverter); type_apply.c runs it
 *   teardown.c      freeing deep containers / py_class chains without deep recursion
 *   library_probe.c a library's embedded module tree validated before the runtime loads it
 *   library_pin.c   a library whose loading registered globals is never unloaded
 *   stack.c         the C stack left to the calling thread (graph guard, callbacks)
 *   kwargs_binder.c keyword binding in C: kwargs_wrapper's wrappers, keyword calls
 *                   of FFI functions whose metadata names their parameters
 *   dataclass_unpack.c dataclass values to tuples, by a plan per type
 */
#ifndef TVMFFI_CORE_H_
#define TVMFFI_CORE_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifndef Py_NO_INLINE /* CPython < 3.11 */
#define Py_NO_INLINE __attribute__((noinline))
#endif
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

/* ---- threads.c: shared state without the GIL --------------------------------- */
/* Free-threaded CPython (3.13t+, Py_GIL_DISABLED) runs this extension with no
 * GIL: every state shared between threads is guarded by one of these. On the
 * default build they cost nothing (the GIL serializes the same code). */
#if PY_VERSION_HEX < 0x030D0000 /* critical sections: 3.13+ (no-ops with a GIL) */
#define Py_BEGIN_CRITICAL_SECTION(op) {
#define Py_END_CRITICAL_SECTION() }
#endif
#ifdef Py_GIL_DISABLED
/* A lock around a small shared cache, never held while Python code runs
 * (lookups and stores only), so it cannot be re-entered. */
typedef PyMutex TVMFFIMutex;
#define TVMFFI_LOCK(m) PyMutex_Lock(m)
#define TVMFFI_UNLOCK(m) PyMutex_Unlock(m)
#define TVMFFI_LOAD_PTR(p) __atomic_load_n(&(p), __ATOMIC_ACQUIRE)
#define TVMFFI_STORE_PTR(p, v) __atomic_store_n(&(p), (v), __ATOMIC_RELEASE)
/* The stand-in Python object whose critical section guards the runtime
 * object `h` (a List, Dict or Map, or a functor over one) or, for NULL, the
 * runtime's global registries: one of a fixed set, chosen by address, so
 * threads on different containers rarely meet. A critical section, unlike a
 * plain mutex, is released while its thread waits or runs a nested one, so a
 * callback that touches the same container cannot deadlock. */
PyObject* tvmffi_runtime_lock(const void* h);
#define TVMFFI_BEGIN_RUNTIME(h) Py_BEGIN_CRITICAL_SECTION(tvmffi_runtime_lock(h))
#define TVMFFI_END_RUNTIME() Py_END_CRITICAL_SECTION()
/* A change that may add or drop an edge of a value graph (a List or Dict
 * element, an object's field): the object's stripe and the registries' one,
 * which a graph check holds while the runtime walks (graph_guard.c). */
#define TVMFFI_BEGIN_RUNTIME_CHANGE(h) \
  Py_BEGIN_CRITICAL_SECTION2(tvmffi_runtime_lock(h), tvmffi_runtime_lock(NULL))
#define TVMFFI_END_RUNTIME_CHANGE() Py_END_CRITICAL_SECTION2()
#else
typedef struct { char unused; } TVMFFIMutex;
#define TVMFFI_LOCK(m) ((void)(m))
#define TVMFFI_UNLOCK(m) ((void)(m))
#define TVMFFI_LOAD_PTR(p) (p)
#define TVMFFI_STORE_PTR(p, v) ((p) = (v))
#define TVMFFI_BEGIN_RUNTIME(h) { (void)(h);
#define TVMFFI_END_RUNTIME() }
#define TVMFFI_BEGIN_RUNTIME_CHANGE(h) { (void)(h);
#define TVMFFI_END_RUNTIME_CHANGE() }
#endif
int tvmffi_threads_init(PyObject* module);
/* Words another thread may write meanwhile (without a GIL): read and written
 * whole, never torn (relaxed atomics; plain accesses with a GIL). */
#ifdef Py_GIL_DISABLED
#define TVMFFI_RELAXED_LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define TVMFFI_RELAXED_STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#else
#define TVMFFI_RELAXED_LOAD(x) (x)
#define TVMFFI_RELAXED_STORE(x, v) ((x) = (v))
#endif
#ifdef Py_GIL_DISABLED
/* A seqlock: a sequence number, odd while its writer (holding a lock of its
 * own) rewrites the words it guards. A reader copies those words with acquire
 * loads (plain moves on x86, and ones ThreadSanitizer follows, unlike fences)
 * between two readings of the number: equal and even, the copy is whole. The
 * writer's stores are release stores, so a word it wrote shows the odd
 * number too. Readers never write: threads reading one entry share its line. */
static inline unsigned int tvmffi_seq_read_begin(const unsigned int* seq) {
  return __atomic_load_n(seq, __ATOMIC_ACQUIRE);
}
static inline int tvmffi_seq_read_whole(const unsigned int* seq, unsigned int begin) {
  return (begin & 1) == 0 && __atomic_load_n(seq, __ATOMIC_RELAXED) == begin;
}
static inline void tvmffi_seq_write_begin(unsigned int* seq) { /* the writer's lock held */
  __atomic_store_n(seq, *seq + 1, __ATOMIC_RELAXED);
}
static inline void tvmffi_seq_write_end(unsigned int* seq) {
  __atomic_store_n(seq, *seq + 1, __ATOMIC_RELEASE);
}
#endif
/* An object every thread is expected to load (a class's descriptor, a
 * function looked up by name): without a GIL, deferred reference counting
 * (3.14+) lets the interpreter load it from a dict or a variable without
 * writing its count, which threads sharing it would otherwise all write. The
 * garbage collector frees such an object, so it must be of a GC type (one
 * that starts untracked is tracked here, fully built). Returns obj. */
static inline PyObject* tvmffi_defer_refcount(PyObject* obj) {
#if defined(Py_GIL_DISABLED) && PY_VERSION_HEX >= 0x030E0000
  if (obj != NULL && PyType_IS_GC(Py_TYPE(obj))) {
    if (!PyObject_GC_IsTracked(obj)) PyObject_GC_Track(obj);
    (void)PyUnstable_Object_EnableDeferredRefcount(obj);
  }
#endif
  return obj;
}
/* A lazily made global: publishes `value` (a new reference, not NULL) in
 * *slot unless another thread already did; returns what *slot holds then
 * (borrowed: the slot keeps it for the life of the process). */
static inline PyObject* tvmffi_publish_once(PyObject** slot, PyObject* value) {
#ifdef Py_GIL_DISABLED
  PyObject* expected = NULL;
  if (__atomic_compare_exchange_n(slot, &expected, value, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    return value;
  }
  Py_DECREF(value);
  return expected;
#else
  *slot = value;
  return value;
#endif
}
/* `module.attr`, imported on first use and kept in *slot for the life of the
 * process (borrowed), or NULL with the import's error. */
static inline PyObject* tvmffi_import_once(PyObject** slot, const char* module, const char* attr) {
  PyObject* known = TVMFFI_LOAD_PTR(*slot);
  if (known != NULL) return known;
  PyObject* mod = PyImport_ImportModule(module);
  if (mod == NULL) return NULL;
  PyObject* value = PyObject_GetAttrString(mod, attr);
  Py_DECREF(mod);
  return value == NULL ? NULL : tvmffi_publish_once(slot, value);
}
/* A type's current version tag (CPython changes it under its own lock). */
static inline unsigned int tvmffi_tag_of(PyTypeObject* tp) {
  return TVMFFI_RELAXED_LOAD(tp->tp_version_tag);
}
#ifdef Py_GIL_DISABLED
#define TVMFFI_FREE_THREADED 1
#else
#define TVMFFI_FREE_THREADED 0
#endif
/* PyDict_GetItemRef (3.13+): a strong reference, so another thread replacing
 * the entry cannot free the value under the caller. 1 found, 0 not, -1 error. */
#if PY_VERSION_HEX < 0x030D0000
static inline int tvmffi_dict_get_ref(PyObject* d, PyObject* key, PyObject** out) {
  *out = Py_XNewRef(PyDict_GetItemWithError(d, key));
  return *out != NULL ? 1 : (PyErr_Occurred() ? -1 : 0);
}
#else
#define tvmffi_dict_get_ref PyDict_GetItemRef
#endif

/* ---- layout accessors (c_api.h defines these only for C++) ---------------- */
static inline void* tvmffi_cell(TVMFFIObjectHandle obj) {
  return (char*)obj + sizeof(TVMFFIObject);
}
static inline int32_t tvmffi_type_index_of(TVMFFIObjectHandle obj) {
  return ((TVMFFIObject*)obj)->type_index;
}

/* ---- teardown.c: releasing a reference ------------------------------------ */
/* Release an owned reference where dropping it may free a deep value: a
 * container or py_class object we hold the last reference to is freed from a
 * work list instead of by nested runtime deleters (see teardown.c). Other
 * objects cost one type-index test more than a plain DecRef. */
void tvmffi_release_deep(TVMFFIObjectHandle h);
static inline void tvmffi_object_release(TVMFFIObjectHandle h) {
  int32_t ti = ((TVMFFIObject*)h)->type_index;
  if (ti == kTVMFFIArray || ti == kTVMFFIList || ti == kTVMFFIMap || ti == kTVMFFIDict ||
      ti >= kTVMFFIDynObjectBegin) {
    tvmffi_release_deep(h);
  } else {
    TVMFFIObjectDecRef(h);
  }
}
int tvmffi_teardown_init(PyObject* module);

/* ---- free lists ------------------------------------------------------------- */
/* Blocks made and dropped at call rate (result objects, callbacks, Tensor
 * objects of arguments) are recycled through small free lists touched only
 * with the GIL held. Off without a GIL to serialize them, and in sanitizer
 * builds, so that ASan sees every free. */
#if defined(Py_GIL_DISABLED) || defined(TVMFFI_SANITIZE)
#define TVMFFI_FREE_LISTS 0
#else
#define TVMFFI_FREE_LISTS 1
#endif

/* ---- temporaries created while packing arguments -------------------------- */
/* Objects created only to carry an argument (heap strings, wrapped callables,
 * containers built from lists) are owned here and released after the call. */
#define TVMFFI_TEMPS_INLINE 8
/* Values being packed for a call (function.c, the arguments and the callee)
 * or for a container (any.c, its elements) that borrow their handles from
 * Python objects. Python code run by a later value's conversion (a protocol
 * method, a property, __dlpack__) may move such a handle out
 * (__move_handle_from__, obj._move() taken by a call) and free it: from the
 * first conversion that may run Python code on, every packed handle and the
 * callee are held by the temporaries (tvmffi_guard_hold). */
typedef struct CallGuard {
  struct CallGuard* parent; /* the call or container this one packs for */
  TVMFFIObjectHandle callee; /* or NULL */
  const TVMFFIAny* packed;   /* packed[0, npacked) are done */
  Py_ssize_t npacked;
  int holding; /* set once held; then every later value is held as packed */
} CallGuard;
typedef struct {
  int size;
  int capacity;
  TVMFFIObjectHandle* items;
  /* The DLPack C exchange API of a framework whose tensors (or a container
   * returned by such a call) are among the arguments, or NULL: the one flag a
   * call checks to give that framework its tensors back (framework.c). */
  const DLPackExchangeAPI* dlpack_api;
  /* One bit per Python object whose Tensor object is among the items (bit
   * (address >> 4) % 64): a tensor not seen before in this call, the common
   * case, is told apart without scanning the items (tensor_from_py.c). */
  uint64_t tensor_owners;
  /* One Python object held for the call, or NULL: a Shape's or Bytes'
   * _tvm_ffi_cached_object, whose handle is passed (strbytes.c); holding the
   * object costs less than a reference to its handle. */
  PyObject* kept;
  /* Nonzero while converting values the callee keeps beyond the call (a
   * container's elements, the arguments of a container builtin that stores
   * them): a TensorView or a handle-less official view then becomes a Tensor
   * that holds the view, never a DLTensor* that dangles after the call. */
  int keep_views;
  CallGuard* guard; /* the innermost packing under way, or NULL */
  TVMFFIObjectHandle inline_items[TVMFFI_TEMPS_INLINE];
} TempList;

static inline void temps_init(TempList* t) {
  t->size = 0;
  t->capacity = TVMFFI_TEMPS_INLINE;
  t->items = t->inline_items;
  t->dlpack_api = NULL;
  t->tensor_owners = 0;
  t->kept = NULL;
  t->keep_views = 0;
  t->guard = NULL;
}
int temps_push(TempList* t, TVMFFIObjectHandle h);
/* Holds `obj`'s FFI handle for the call (the object itself where the one slot
 * is free, else a reference to the handle). `obj` is a live tvmffi Object
 * with a handle; the caller's reference to it is taken over (also on
 * failure). 0, or -1 with an error set. */
int temps_hold_object(TempList* t, PyObject* obj);
/* Python code may run next: hold what t->guard's packings borrow (see
 * CallGuard). 0, or -1 with an error set. */
int tvmffi_guard_hold(TempList* t);
/* A value just packed under a holding guard: its handle held unless the
 * temporaries own it already. 0, or -1 with an error set. */
int tvmffi_guard_hold_value(TempList* t, const TVMFFIAny* value);
void temps_release_items(TempList* t);
/* Releases the temporaries and makes the list empty again. Most calls have
 * none: that case is a test, inline; so is a kept object alone (a Shape). */
static inline void temps_release(TempList* t) {
  PyObject* kept = t->kept;
  if (t->size != 0 || t->items != t->inline_items) {
    temps_release_items(t); /* empties `kept` too */
  } else {
    t->dlpack_api = NULL;
    t->kept = NULL;
  }
  Py_XDECREF(kept); /* last: its release may run Python code */
}
/* Frees a call's own temporary Tensor object (own_tensor.c) when nobody else
 * holds it: 1, or 0 when the reference must be dropped as usual. GIL held. */
int tvmffi_own_release_unshared(TVMFFIObjectHandle h);

/* ---- any.c: conversions ---------------------------------------------------- */
/* An int of at most one digit (|v| < 2**30), read without a call: most ints
 * passed are. `obj` is an int or an int subclass (same layout). */
static inline int tvmffi_compact_int(PyObject* obj, long long* v) {
#if PY_VERSION_HEX >= 0x030C0000
  if (!PyUnstable_Long_IsCompact((PyLongObject*)obj)) return 0;
  *v = (long long)PyUnstable_Long_CompactValue((PyLongObject*)obj);
  return 1;
#else
  Py_ssize_t size = Py_SIZE(obj);
  if (size < -1 || size > 1) return 0;
  *v = size * (long long)((PyLongObject*)obj)->ob_digit[0];
  return 1;
#endif
}
/* Python -> AnyView. The view borrows from `obj` (which the caller keeps alive)
 * and from objects pushed to `temps`. `argpos` names the argument in errors.
 * Returns 0 on success, -1 with a Python exception set. */
int tvmffi_py_to_any(PyObject* obj, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos);
/* The same for a call's positional argument, which the caller holds until
 * the call returns: a NumPy array's Tensor takes no reference to it unless
 * the callee keeps the Tensor (own_new_lent). */
int tvmffi_arg_to_any(PyObject* obj, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos);
/* Raise `cls` with a message prefixed by "argument N: " when argpos >= 0. Returns -1. */
int tvmffi_arg_error(PyObject* cls, Py_ssize_t argpos, const char* fmt, ...);
/* A type's version tag, assigned when it has none yet; 0 only when CPython
 * ran out of tags. It changes whenever the type or a base is modified and is
 * never reused: per-type decisions cached under it cannot go stale. */
unsigned int tvmffi_type_version_tag(PyTypeObject* tp);
/* Python -> owned Any (for callback results and container construction). */
int tvmffi_py_to_owned_any(PyObject* obj, TVMFFIAny* out);
/* Owned Any -> Python. Consumes the reference held by `value` in all cases. */
PyObject* tvmffi_any_to_py_owned(TVMFFIAny* value);
/* Borrowed AnyView -> Python. Never releases anything held by `value`. */
PyObject* tvmffi_any_to_py_borrowed(const TVMFFIAny* value);
/* Release whatever an owned Any holds. */
void tvmffi_any_release(TVMFFIAny* value);
/* _convert(value): the FFI value a call would receive, back as Python. An
 * Array/Map built here from Python lists, tuples and dicts comes back with
 * the height of its graph recorded (graph_height) when every node is
 * immutable, so graph_guard.c need not walk it. New reference or NULL. */
PyObject* tvmffi_convert(PyObject* value);
/* The graph height of the container ffi.Array / ffi.Map would build from
 * args (Array(...) / Map(...)), when func is that builtin and every argument
 * is a plain scalar or an object of known height; else 0 (not known). */
int64_t tvmffi_ctor_graph_height(TVMFFIObjectHandle func, PyObject* const* args, Py_ssize_t n);
/* _convert and _OPAQUE_PTR_HANDLERS on the module. */
int tvmffi_any_init(PyObject* module);

/* ---- strbytes.c ------------------------------------------------------------ */
int tvmffi_str_to_any(PyObject* s, TVMFFIAny* out, TempList* temps);
int tvmffi_bytes_to_any(const char* data, Py_ssize_t size, TVMFFIAny* out, TempList* temps);
int tvmffi_bigint_to_any(PyObject* v, TVMFFIAny* out, TempList* temps);
PyObject* tvmffi_small_str_to_py(const TVMFFIAny* v);
PyObject* tvmffi_small_bytes_to_py(const TVMFFIAny* v);
PyObject* tvmffi_bytearray_to_str(const TVMFFIByteArray* b);
PyObject* tvmffi_bytearray_to_bytes(const TVMFFIByteArray* b);
PyObject* tvmffi_bigint_to_py(const TVMFFIAny* v);
/* String (a str subclass keeping its FFI String) and Bytes (a Python bytes
 * subclass set by _set_bytes_class): heap strings and bytes come back as these. */
extern PyTypeObject TVMFFIStringType;
int tvmffi_strbytes_init_types(PyObject* module);
/* "_tvm_ffi_cached_object" (the FFI object a Bytes or Shape carries), interned
 * by tvmffi_strbytes_init_types: read and set with PyObject_GetAttr/SetAttr. */
extern PyObject* tvmffi_str_cached_object;
/* Owned ffi.String / ffi.Bytes handle -> String / Bytes. Steals the handle. */
PyObject* tvmffi_string_from_owned(TVMFFIObjectHandle h);
PyObject* tvmffi_bytes_from_owned(TVMFFIObjectHandle h);
/* A String / Bytes argument: its own FFI object when it has one (zero-copy). */
int tvmffi_string_to_any(PyObject* s, TVMFFIAny* out, TempList* temps);
int tvmffi_bytes_obj_to_any(PyObject* b, TVMFFIAny* out, TempList* temps);
int tvmffi_is_bytes_class(PyTypeObject* tp);
PyObject* tvmffi_bytes_class(void); /* borrowed; NULL before _strings.py set it */
PyObject* tvmffi_set_bytes_class(PyObject* self, PyObject* cls);
/* Shape (a tuple subclass set by _set_shape_class) keeping its ffi.Shape. */
PyObject* tvmffi_set_shape_class(PyObject* self, PyObject* cls);
int tvmffi_is_shape_class(PyTypeObject* tp);
/* ---- numpy_scalar.c: NumPy scalars read in place --------------------------- */
typedef enum {
  NPS_NONE = 0, NPS_F32, NPS_I8, NPS_I16, NPS_I32, NPS_I64, NPS_U8, NPS_U16, NPS_U32, NPS_U64,
  NPS_COUNT
} NumpyScalarKind;
/* The kind of an exact NumPy scalar type read in place, or NPS_NONE. */
NumpyScalarKind tvmffi_numpy_scalar_kind(PyTypeObject* tp);
/* 1 with *out filled (an Int or Float), 0 when the generic route (__index__ /
 * __float__) must convert it, -1 with an error set. */
int tvmffi_numpy_scalar_to_any(PyObject* obj, NumpyScalarKind kind, TVMFFIAny* out);
PyObject* tvmffi_shape_from_owned(TVMFFIObjectHandle h);
int tvmffi_shape_obj_to_any(PyObject* shape, TVMFFIAny* out, TempList* temps);

/* ---- object.c -------------------------------------------------------------- */
typedef struct {
  PyObject_HEAD
  TVMFFIObjectHandle handle; /* owned strong reference, NULL when empty */
  PyObject* weakreflist;
  /* A container returned by a call whose tensors came through a framework's
   * DLPack C exchange API: that API (process-lifetime per the DLPack spec),
   * so its tensor elements come back as the framework's tensors. Else NULL. */
  const DLPackExchangeAPI* dlpack_api;
  /* Height of this value's graph once graph_guard.c has walked it, or any.c
   * built it from Python, and found only immutable nodes
   * (tvmffi_graph_immutable): such a graph cannot change, so later checks
   * compare the height with the stack room. 0: not known. Set wherever a
   * handle is installed in an existing object. */
  int64_t graph_height;
} TVMFFIPyObject;

extern PyTypeObject TVMFFIObjectType;
int tvmffi_object_init_types(PyObject* module);
/* Wrap an owned handle in the Python class registered for its type. Steals. */
PyObject* tvmffi_object_wrap_owned(TVMFFIObjectHandle handle);
/* Same, when the caller already knows the handle's type index (an Any's). */
PyObject* tvmffi_object_wrap_typed(TVMFFIObjectHandle handle, int32_t type_index);
/* Create an instance of `cls` (a subclass of Object) around an owned handle. */
PyObject* tvmffi_object_new_of(PyTypeObject* cls, TVMFFIObjectHandle handle);
PyObject* tvmffi_register_object_class(PyObject* self, PyObject* args);
/* unregister_object_class(type_index): forget a class (a replaced synthetic one). */
PyObject* tvmffi_unregister_object_class(PyObject* self, PyObject* arg);
/* _set_object_hooks(repr, getattr, dir, subclass): Python fallbacks of Object. */
PyObject* tvmffi_set_object_hooks(PyObject* self, PyObject* args);
/* _set_pickle_hooks(reduce, setstate): Object.__reduce__ / __setstate__. */
PyObject* tvmffi_set_pickle_hooks(PyObject* self, PyObject* args);
/* Gives a C class (after PyType_Ready) a __new__ that clients can save and
 * replace, as on a Python class (replaceable_new.c); leaves it mutable. */
int tvmffi_make_new_replaceable(PyTypeObject* type);
/* Type index of the nearest registered class in cls's MRO (-1: none); 0, or
 * -1 with an exception. */
int tvmffi_class_type_index(PyTypeObject* cls, int32_t* out);
/* obj.__move_handle_from__(other) (move_handle.c). */
PyObject* tvmffi_object_move_handle_from(PyObject* self, PyObject* other);
/* Installs `handle` (owned, or NULL to empty it) in a Function wrapper with
 * the builtin flags of the wrapper it came from, and sets the call slots to
 * match: an emptied one raises when called. */
void tvmffi_function_set_handle(PyObject* func, TVMFFIObjectHandle handle, int builtin_flags);
/* Handle of `obj`, known to be an Object; NULL with ValueError "<type> object
 * holds no FFI handle" when it is empty (e.g. a bare tvmffi.Object()). */
TVMFFIObjectHandle tvmffi_object_handle(PyObject* obj);
/* Object.__tvm_ffi_object__(): the official binding's object for the same
 * handle (interop.c). */
PyObject* tvmffi_object_to_official(PyObject* self, PyObject* unused);

static inline int tvmffi_is_object(PyObject* o) {
  /* Registered classes mostly derive from Object directly: skip the MRO walk. */
  PyTypeObject* tp = Py_TYPE(o);
  return tp == &TVMFFIObjectType || tp->tp_base == &TVMFFIObjectType ||
         PyType_IsSubtype(tp, &TVMFFIObjectType);
}

/* ---- py_class.c: FFI types defined in Python ---------------------------------- */
int tvmffi_py_class_init(PyObject* module);
/* field_table.c: the read-only field table of a dataclass and its C dunders */
int tvmffi_field_table_init(PyObject* module);

/* ---- rvalue.c: obj._move() ---------------------------------------------------- */
extern PyTypeObject TVMFFIRValueRefType;
int tvmffi_rvalue_init(PyObject* module);

/* ---- CAny (cany.c): an owned FFI value held by Python (TypeSchema.convert) -- */
int tvmffi_cany_init(PyObject* module);
/* type_plan.c: TypeSchema compiled once (TypeConverter), applied by type_apply.c. */
int tvmffi_type_plan_init(PyObject* module);
/* `value` converted by TypeConverter `conv` into *out (owned); -1 with a
 * TypeError naming only the reason (a field setter's message). */
int tvmffi_converter_to_any(PyObject* conv, PyObject* value, TVMFFIAny* out);
PyObject* tvmffi_object_move(PyObject* self, PyObject* unused);
PyObject* tvmffi_object_ctypes_handle(PyObject* self, PyObject* unused);
/* An ObjectRValueRef argument: a view of kTVMFFIObjectRValueRef pointing at the
 * wrapper's handle slot. */
int tvmffi_rvalue_to_any(PyObject* ref, TVMFFIAny* out, Py_ssize_t argpos);
/* Take the reference out of a kTVMFFIObjectRValueRef (its slot becomes NULL):
 * *out is an owned object Any. */
int tvmffi_take_rvalue(const TVMFFIAny* value, TVMFFIAny* out);

/* ---- reflection.c: fields, methods, constructors, container cells ---------- */
int tvmffi_reflection_init(PyObject* module);

/* ---- graph_guard.c: depth/cycle check before the runtime's recursive traversals ---- */
int tvmffi_graph_guard_init(PyObject* module);
/* Objects that never change once built and hold no other object: a graph's
 * leaves, one level high. */
static inline int tvmffi_graph_leaf(int32_t type_index) {
  return type_index == kTVMFFIStr || type_index == kTVMFFIBytes || type_index == kTVMFFIShape ||
         type_index == kTVMFFIBigInt;
}
/* Nodes that never change once built (the immutable containers and the
 * leaves): a graph of only these keeps its shape, and so its height. */
static inline int tvmffi_graph_immutable(int32_t type_index) {
  return type_index == kTVMFFIArray || type_index == kTVMFFIMap || tvmffi_graph_leaf(type_index);
}
/* Map/Dict entries read in place, in the runtime's layout (graph_guard.c has
 * it): whether that layout reads back right on maps the runtime builds
 * (checked once, with the GIL; an error reads as no and is asked again), and
 * fn on each entry (pointers into the map's own storage), returning the count
 * seen or -1 when fn failed. */
typedef int (*TVMFFIMapEntryFn)(void* ctx, const TVMFFIAny* key, const TVMFFIAny* value);
int tvmffi_map_layout_ok(void);
int64_t tvmffi_map_layout_each(const TVMFFIObject* obj, TVMFFIMapEntryFn fn, void* ctx);
/* The value to pass on in value's place (objects as they are, lists, dicts and
 * other convertible values converted once; may run Python code), new reference. */
PyObject* tvmffi_graph_converted(PyObject* value);
/* The most levels of nesting a traversal taking bytes_per_level may reach on
 * the calling thread's stack, from here. */
int64_t tvmffi_graph_limit(long long bytes_per_level);
/* Checks a converted value's graph for cycles and for depth against limit
 * (runs no Python code): 0, or -1 with ValueError/RecursionError. */
int tvmffi_graph_check(PyObject* value, int64_t limit, int skip_seq_ignored);
/* The same for an FFI object (tvmffi_is_object). */
int tvmffi_graph_check_object(PyObject* obj, int64_t limit, int skip_seq_ignored);

/* Bumped (with the GIL held) by every Python-side change that can add an edge
 * to a value graph: a reflected field write, a List/Dict insertion through the
 * runtime's builtins. A traversal whose callbacks run Python code checks its
 * root again when this moved (structural.py). */
extern uint64_t tvmffi_graph_epoch;
static inline void tvmffi_graph_mutated(void) {
#ifdef Py_GIL_DISABLED
  __atomic_fetch_add(&tvmffi_graph_epoch, 1, __ATOMIC_RELAXED);
#else
  ++tvmffi_graph_epoch;
#endif
}

/* ---- stack.c: the calling thread's C stack ---------------------------------- */
/* Bytes of this thread's stack left below the caller, less the reserve kept
 * for the frames around a checked call (may be <= 0). */
int64_t tvmffi_stack_usable(void);
/* The lowest address a Python callback may start at on this thread (NULL until
 * the thread's first callback asks tvmffi_callback_floor_init). */
extern __attribute__((tls_model("initial-exec"))) _Thread_local const char* tvmffi_t_callback_floor;
const char* tvmffi_callback_floor_init(void);
int tvmffi_callback_stack_low_slow(const char* here, const char* what);
/* 1, with RecursionError set (GIL held) naming `what`, when recursion that
 * passes here (a Python callback entered from FFI code, a nested container
 * converted) would leave less than one more level of callback recursion on
 * the stack: the same floor for both, so neither overflows a small thread
 * stack before Python's recursion limit is reached. */
static inline int tvmffi_stack_low(const char* what) {
  char here;
  const char* floor = tvmffi_t_callback_floor;
  if (__builtin_expect(floor == NULL, 0)) floor = tvmffi_callback_floor_init();
  return __builtin_expect((uintptr_t)&here < (uintptr_t)floor, 0) &&
         tvmffi_callback_stack_low_slow(&here, what);
}

/* ---- graph_entry.c: native entry points that check and call in one step ------ */
int tvmffi_graph_entry_init(PyObject* module);
/* _init_handle(self, func, *args): self takes the object func(*args) returns. */
PyObject* tvmffi_init_handle(PyObject* m, PyObject* const* args, Py_ssize_t nargs);

/* ---- function.c ------------------------------------------------------------ */
typedef struct {
  TVMFFIPyObject base;
  vectorcallfunc vectorcall;
  TVMFFISafeCallType safe_call; /* cached from the function cell; NULL when empty */
  int release_gil;
  int builtin_flags; /* BUILTIN_*: what a runtime builtin's calls need beyond a call */
  PyObject* dict; /* instance attributes (official Function has __dict__); NULL until used */
#ifdef Py_GIL_DISABLED
  /* A functor over a container (BUILTIN_LOCKED): the container whose runtime
   * lock its calls take (threads.c); NULL for a builtin, which takes its
   * first argument's. */
  const void* lock_key;
#endif
} TVMFFIPyFunction;
/* type_docs.c: the public types' full docstrings, set before they are readied. */
void tvmffi_type_docs_apply(void);
/* function_doc.c: installs __name__, __qualname__, __doc__ and __signature__
 * on the Function type, computed on first read from a function's schema. */
int tvmffi_function_doc_init(PyObject* module);
/* A runtime builtin that makes functors over shared state (an iterator, the
 * registry's name list): the Functions it returns keep the GIL too. */
#define BUILTIN_FUNCTOR_KEEPS_GIL 1
/* A runtime builtin that adds to a List or Dict (ffi.ListAppend, ...): calls
 * bump tvmffi_graph_epoch. */
#define BUILTIN_MUTATES_GRAPH 2
/* A runtime builtin that trusts its input (ffi.FromJSONGraphString): its
 * arguments pass through the vetting hook first (_set_builtin_vetting). */
#define BUILTIN_VETS_ARGS 32
/* Free-threaded builds: a runtime builtin (or a functor one made), whose
 * calls hold the runtime lock of the object they work on (threads.c). */
#define BUILTIN_LOCKED 64
/* A runtime builtin that changes a List or Dict (ffi.ListPop as well as the
 * HOLD_* and MUTATES_GRAPH ones): without a GIL its calls also hold the
 * registries' lock, which a graph check and the call after it hold
 * throughout, so no graph changes while the runtime walks it. */
#define BUILTIN_CHANGES 128
/* Free-threaded builds: a builtin of one container (ffi.List*, ffi.Dict*,
 * ffi.Map*, ffi.Array*), which locks that container's stripe; every other
 * builtin (registries, structural and JSON traversals) locks the registries'
 * stripe, the one a graph check holds: a call made inside that check (the
 * traversal itself) then never waits on another lock, which would suspend
 * the check's critical section while another thread changes the graph. */
#define BUILTIN_CONTAINER 256
/* A runtime builtin that stores its arguments (the container constructors,
 * ffi.ListAppend, ffi.DictSetItem, ...): a view argument becomes a Tensor
 * holding it (TempList.keep_views), not a DLTensor* kept past the call. */
#define BUILTIN_KEEPS_ARGS 512
/* A runtime builtin that drops List or Dict values (set, erase, clear): what
 * it drops is held across the call (teardown.c's tvmffi_hold_dropped), so a
 * deep value's last reference is released by us, iteratively. Which values,
 * from its arguments: one of the HOLD_* kinds, in these bits. */
#define BUILTIN_HOLD_SHIFT 2
#define BUILTIN_HOLD_MASK (7 << BUILTIN_HOLD_SHIFT)
#define BUILTIN_HOLD(kind) ((kind) << BUILTIN_HOLD_SHIFT)
typedef enum {
  HOLD_INDEX = 1, /* (list, i, ...): element i (a negative i counted from the end) */
  HOLD_RANGE,     /* (list, start, stop, ...): elements start..stop */
  HOLD_ALL,       /* (container): every element, key and value */
  HOLD_KEY,       /* (dict, key, ...): the key's value */
} HoldKind;
/* A holder (dropped when the call is over) of the private openable values a
 * HOLD_* builtin called with `args` would drop; None when there are none or
 * the arguments are not what the builtin takes (it then raises its own
 * error); NULL with an exception only when memory runs out. */
PyObject* tvmffi_hold_dropped(HoldKind kind, PyObject* const* args, Py_ssize_t nargs);

extern PyTypeObject TVMFFIFunctionType;
int tvmffi_function_init_types(PyObject* module);
PyObject* tvmffi_function_wrap_owned(TVMFFIObjectHandle handle);
/* A call whose arguments are packed (function.c's own tail: a moved argument
 * also passed plainly kept alive, the framework allocator of temps->dlpack_api
 * installed around the callee). 0 with *result owned, or -1 with the error set. */
int tvmffi_call_packed(TVMFFIObjectHandle func, TVMFFIAny* packed, Py_ssize_t nargs,
                       TempList* temps, int release_gil, TVMFFIAny* result);
/* Call an FFI function handle with Python arguments; returns a new reference.
 * `keep_views`: the function stores its arguments (BUILTIN_KEEPS_ARGS). */
PyObject* tvmffi_call_handle(TVMFFIObjectHandle func, PyObject* const* args, Py_ssize_t nargs,
                             int release_gil, int keep_views);
/* Look up a global function; *out is NULL when missing. */
int tvmffi_get_global(const char* name, TVMFFIObjectHandle* out);
/* Call a cached runtime global function (e.g. "ffi.Array") with AnyView args. */
int tvmffi_call_global_any(const char* name, TVMFFIObjectHandle* cache, TVMFFIAny* args,
                           int32_t nargs, TVMFFIAny* result);

/* ---- kwargs_binder.c: keyword binding --------------------------------------- */
int tvmffi_kwargs_binder_init(PyObject* module);
/* A Function called with keywords (function.c): bound by the names its
 * metadata gives, else refused as the official binding refuses it. */
PyObject* tvmffi_function_call_kw(PyObject* func, PyObject* const* args, size_t nargsf,
                                  PyObject* kwnames);
/* ---- dataclass_unpack.c: dataclass values to tuples -------------------------- */
int tvmffi_dataclass_unpack_init(PyObject* module);
/* unpack_dataclass_to_tuple(v): new reference, or NULL with an error. */
PyObject* tvmffi_unpack_dataclass(PyObject* v);

/* ---- cfunction.c: Function.__from_extern_c__ / __from_mlir_packed_safe_call__ ---- */
PyObject* tvmffi_function_from_extern_c(PyObject* cls, PyObject* args, PyObject* kwargs);
PyObject* tvmffi_function_from_mlir_packed(PyObject* cls, PyObject* args, PyObject* kwargs);

/* ---- callback.c ------------------------------------------------------------ */
/* Wrap a Python callable as a new FFI function (owned handle). */
int tvmffi_callback_create(PyObject* callable, TVMFFIObjectHandle* out);
/* Drop the reference an FFI object's `self` holds on a Python object (a
 * deleter the runtime may call from any thread, or after interpreter exit). */
void tvmffi_release_py_object(void* self);
/* Opaque Python object holder (type index kTVMFFIOpaquePyObject). */
int tvmffi_opaque_py_create(PyObject* obj, TVMFFIObjectHandle* out);
/* _to_opaque(obj) / _opaque_pyobject(o): wrap and unwrap an opaque Python object. */
PyObject* tvmffi_py_to_opaque(PyObject* self, PyObject* obj);
PyObject* tvmffi_opaque_pyobject(PyObject* self, PyObject* o);
/* _callback_callable(f): the Python callable of a callback Function, else None. */
PyObject* tvmffi_callback_callable(PyObject* self, PyObject* f);

/* ---- error.c --------------------------------------------------------------- */
/* After an FFI API returned non-zero: move the raised error into a Python
 * exception. Always returns NULL so callers can `return tvmffi_raise_ffi_error();` */
PyObject* tvmffi_raise_ffi_error(void);
/* Convert the pending Python exception into the FFI's raised error. Returns -1. */
int tvmffi_set_ffi_error_from_py(void);
/* After an FFI API returned non-zero where the error is not reported: drop it. */
void tvmffi_discard_ffi_error(void);
/* Take the pending Python exception (normalized, traceback attached); NULL if none. */
PyObject* tvmffi_fetch_exception(void);
int tvmffi_error_init(PyObject* module);
/* error_object.c: accessors of ffi.Error objects (tvmffi.core.Error). */
int tvmffi_error_object_init(PyObject* module);
/* A Python exception as the FFI error object tvmffi.error makes of it: 0 with a
 * new reference in *h, or -1 with a Python error. */
int tvmffi_exception_error(PyObject* exc, TVMFFIObjectHandle* h);
PyObject* tvmffi_set_error_hooks(PyObject* self, PyObject* args);

/* ---- device.c / dtype.c ---------------------------------------------------- */
typedef struct {
  PyObject_HEAD
  DLDevice device;
} TVMFFIPyDevice;

/* tvmffi.dtype: a str subclass (the text) carrying its DLDataType. */
typedef struct {
  PyUnicodeObject text;
  DLDataType dtype;
} TVMFFIPyDataType;

extern PyTypeObject TVMFFIDeviceType;
extern PyTypeObject TVMFFIDataTypeType;
int tvmffi_device_init_types(PyObject* module);
int tvmffi_dtype_init_types(PyObject* module);
PyObject* tvmffi_device_from_dl(DLDevice dev);
PyObject* tvmffi_dtype_from_dl(DLDataType dtype);
PyObject* tvmffi_set_dtype_hook(PyObject* self, PyObject* hook);
/* The DLDataType of a dtype, a dtype string or a NumPy/ml_dtypes/torch dtype. */
int tvmffi_dtype_value(PyObject* value, DLDataType* out);
/* torch.dtype / numpy.dtype instances, converted to DLDataType arguments. */
int tvmffi_is_dtype_like_type(PyTypeObject* tp);
int tvmffi_dtype_like_to_dl(PyObject* obj, DLDataType* out);

/* ---- csrc/tensor/: the tensor route (import.c is its entry) ------------------- */
extern PyTypeObject TVMFFITensorType;     /* tvmffi.Tensor, type index kTVMFFITensor */
extern PyTypeObject TVMFFITensorViewType; /* tvmffi.TensorView, passed as DLTensor* */
/* numpy.ndarray once numpy is imported (exact-type fast path), else NULL. */
extern PyTypeObject* tvmffi_numpy_ndarray_type;
int tvmffi_tensor_init_types(PyObject* module);
/* 1 when values of `tp` convert as tensors (TensorView, __dlpack__ producers). */
int tvmffi_is_tensor_type(PyTypeObject* tp);
/* A tensor argument: a TensorView travels as DLTensor* (when argpos >= 0; a
 * value converted without a position may be kept, so it becomes a Tensor),
 * anything else as a Tensor object (owned by `temps`) that keeps its source
 * alive. */
int tvmffi_tensor_to_any(PyObject* obj, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos);
/* Same, but the value is kept beyond the call (an element of a container
 * built from a list or dict): a TensorView becomes a Tensor too. */
int tvmffi_tensor_to_kept_any(PyObject* obj, TVMFFIAny* out, TempList* temps,
                              Py_ssize_t argpos);
/* Same, for an object known to be a numpy.ndarray (or subclass). */
int tvmffi_ndarray_to_any(PyObject* arr, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos,
                          int lent);
/* Whether the Tensor `h`, packed for the argument `arg`, is the framework
 * tensor `arg` itself seen through its exchange API's non-owning fill (torch):
 * a call returning `h` then returns `arg`. */
int tvmffi_tensor_is_fill_of(TVMFFIObjectHandle h, PyObject* arg);
/* The official binding's Tensor (or subclass): its handle, borrowed for the
 * call; a handle-less view's DLTensor* (a Tensor keeping the view alive when
 * argpos < 0). */
int tvmffi_official_tensor_to_any(PyObject* obj, TVMFFIAny* out, TempList* temps,
                                  Py_ssize_t argpos);
/* A DLTensor* result (lent = 0) or callback argument (lent = 1) as a
 * tvmffi.Tensor, under the lifetime rule of types.c. */
PyObject* tvmffi_dltensor_to_py(const DLTensor* dl, int lent);
/* `arg`, from tvmffi_dltensor_to_py(dl, 1) for a callback: its Tensor, when
 * lent, joins `lent` (a reference to the handle, so that it expires wherever
 * the callback moved it). 0, or -1 with an error set. */
int tvmffi_dltensor_lend(PyObject* arg, TempList* lent);
/* After the callback returned: the Tensors in `lent` expire (see types.c),
 * and the list is released. */
void tvmffi_dltensor_lent_end(TempList* lent);

/* ---- interop.c: the official binding's objects ------------------------------- */
enum { OFFICIAL_NONE = 0, OFFICIAL_OBJECT, OFFICIAL_TENSOR, OFFICIAL_NATIVE };
/* tvm_ffi.core.Tensor once resolved and its layout known: its handle right
 * after the object header (the fast path of argument conversion reads it
 * there), else NULL. */
extern PyTypeObject* tvmffi_official_tensor_type;
/* Which official-binding class `tp` derives from (OFFICIAL_*). */
int tvmffi_official_kind(PyTypeObject* tp);
/* An instance of such a class (kind OFFICIAL_OBJECT or OFFICIAL_NATIVE; a
 * Tensor goes to tvmffi_official_tensor_to_any): its handle, borrowed from
 * `obj` for the call. */
int tvmffi_official_to_any(PyObject* obj, int kind, TVMFFIAny* out, TempList* temps,
                           Py_ssize_t argpos);
/* The handle of an official object (NULL for an empty one or a view). */
int tvmffi_official_handle(PyObject* obj, TVMFFIObjectHandle* out);
/* Where the official Tensor keeps its DLTensor* (0: layout unknown). */
Py_ssize_t tvmffi_official_dltensor_offset(void);
/* Register the global function __tvm_ffi_object__ hands objects over with. */
int tvmffi_interop_init(void);
/* ---- framework.c: a call's DLPack C exchange API -------------------------------- */
/* Install the framework's tensor allocator as the environment allocator for a
 * call; *restore says whether framework_leave must put *prev back. */
int tvmffi_framework_enter(const DLPackExchangeAPI* api, DLPackManagedTensorAllocator* prev,
                           int* restore);
int tvmffi_framework_leave(DLPackManagedTensorAllocator prev);
/* Owned Any -> Python for a call made with `api`: a Tensor becomes the
 * framework's tensor, a container remembers `api`. Consumes `value`. */
PyObject* tvmffi_any_to_py_framework(TVMFFIAny* value, const DLPackExchangeAPI* api);
/* A call's result as Python: a framework's tensors (api, from the arguments)
 * come back as that framework's. Steals *result. */
static inline PyObject* tvmffi_any_to_py_result(TVMFFIAny* result, const DLPackExchangeAPI* api) {
  return api == NULL ? tvmffi_any_to_py_owned(result) : tvmffi_any_to_py_framework(result, api);
}
/* The API a call records for torch tensors that came through the Python
 * protocol (a torch without its own exchange API): results go back to torch
 * through torch.from_dlpack; no allocator. */
const DLPackExchangeAPI* tvmffi_torch_fallback_api(void);

/* ---- stream.c ------------------------------------------------------------------ */
int tvmffi_stream_init(PyObject* module);
/* Make `stream` the environment stream of the device for the duration of the
 * call owning `temps` (restored when the temporaries are released). */
int tvmffi_stream_adopt(int32_t device_type, int32_t device_id, void* stream, TempList* temps);

/* ---- library_probe.c: the dynamic loader asked before the runtime loads ------- */
int tvmffi_library_probe_init(PyObject* module);
/* ---- library_pin.c: libraries that registered globals stay loaded ------------ */
int tvmffi_library_pin_init(void); /* 0, or -1 with an error */
/* Global functions plus types registered (-1 if unknown); no Python, no GIL needed. */
int64_t tvmffi_registrations(void);
/* What tvmffi_pin_if_registered needs to know before `path` is loaded. */
int64_t tvmffi_registrations_before_load(const char* path);
/* Marks the loaded library `path` never to unload (RTLD_NODELETE) if loading
 * it grew the registry from `before`. */
void tvmffi_pin_if_registered(const char* path, int64_t before);

/* Python may be finalizing when the runtime releases our last objects (static
 * destructors at exit); Python state must not be touched then. */
#if PY_VERSION_HEX >= 0x030D0000
#define TVMFFI_PY_UNUSABLE() (!Py_IsInitialized() || Py_IsFinalizing())
#else
#define TVMFFI_PY_UNUSABLE() (!Py_IsInitialized() || _Py_IsFinalizing())
#endif

/* Whether the calling thread holds the GIL, without the thread-specific-storage
 * lookups of PyGILState_Check: the thread state Python runs (3.11: the GIL
 * holder; 3.12+: this thread's attached state) must be this thread's. */
static inline int tvmffi_holds_gil(void) {
#if PY_VERSION_HEX >= 0x030D0000
  PyThreadState* ts = PyThreadState_GetUnchecked();
#else
  PyThreadState* ts = _PyThreadState_UncheckedGet();
#endif
  return ts != NULL && ts->thread_id == PyThread_get_thread_ident();
}

/* ---- module.c: lazily resolved Python helpers ------------------------------- */
/* ctypes.c_void_p, resolved on first use. */
PyObject* tvmffi_ctypes_void_p(void);

#endif  /* TVMFFI_CORE_H_ */
