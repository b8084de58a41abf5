/*
 * Object: the Python face of every FFI object. It owns exactly one strong
 * reference to its handle and releases it exactly once, in dealloc.
 *
 * The type-index -> Python class table lives here too: results are wrapped in
 * the class registered for their type, else for the nearest registered
 * ancestor, else in Object itself.
 */
#include "core.h"

#include <string.h>
#include <structmember.h>

/* ---- temporaries ---------------------------------------------------------- */
int temps_push(TempList* t, TVMFFIObjectHandle h) {
  if (t->size == t->capacity) {
    int cap = t->capacity * 2;
    TVMFFIObjectHandle* items = PyMem_Malloc(sizeof(TVMFFIObjectHandle) * (size_t)cap);
    if (items == NULL) {
      PyErr_NoMemory();
      return -1;
    }
    memcpy(items, t->items, sizeof(TVMFFIObjectHandle) * (size_t)t->size);
    if (t->items != t->inline_items) PyMem_Free(t->items);
    t->items = items;
    t->capacity = cap;
  }
  t->items[t->size++] = h;
  return 0;
}

int temps_hold_object(TempList* t, PyObject* obj) {
  if (t->kept == NULL) {
    t->kept = obj;
    return 0;
  }
  TVMFFIObjectHandle h = ((TVMFFIPyObject*)obj)->handle;
  TVMFFIObjectIncRef(h);
  int rc = temps_push(t, h);
  if (rc != 0) TVMFFIObjectDecRef(h);
  Py_DECREF(obj);
  return rc;
}

void temps_release_items(TempList* t) {
  for (int i = 0; i < t->size; ++i) {
    if (!tvmffi_own_release_unshared(t->items[i])) TVMFFIObjectDecRef(t->items[i]);
  }
  if (t->items != t->inline_items) PyMem_Free(t->items);
  temps_init(t); /* `kept` is temps_release's to drop */
}

/* ---- class table ------------------------------------------------------------ */
static PyObject* g_registered; /* dict: type_index -> class (owns the refs) */

/* How instances of a class are made around a handle. Decided once per class
 * (creation_kind) and cached beside it, so wrapping a result needs no checks. */
typedef enum {
  CREATE_ALLOC = 0, /* tp_alloc, then set the handle */
  CREATE_PLAIN,     /* bare TVMFFIPyObject blocks (see is_plain_class) */
  CREATE_FUNCTION,  /* a Function, whose call slots are filled from the cell */
} CreationKind;

/* Cache: type_index -> class (borrowed) and its creation kind. A zeroed
 * entry (cls NULL) is unresolved. */
typedef struct {
  PyTypeObject* cls;
  CreationKind kind;
} ResolvedClass;
#ifndef Py_GIL_DISABLED
static ResolvedClass* g_resolved;
#endif
static int32_t g_resolved_cap;

/* Classes replaced in or dropped from g_registered. Without a GIL another
 * thread may still be wrapping a result in one it read from g_resolved a
 * moment before, so they are kept for the life of the process (only classes
 * registered again or replaced; NULL with a GIL). */
static PyObject* g_retired;

/* The registered class of a type index, borrowed: g_registered (or, without a
 * GIL, g_retired once it is replaced) keeps it alive. */
static PyTypeObject* registered_class(int32_t type_index) {
  PyObject* key = PyLong_FromLong(type_index);
  if (key == NULL) return NULL;
  PyObject* cls;
  int found = tvmffi_dict_get_ref(g_registered, key, &cls);
  Py_DECREF(key);
  Py_XDECREF(cls); /* still held by g_registered / g_retired */
  return found > 0 ? (PyTypeObject*)cls : NULL;
}

/* Before g_registered[key] is replaced or deleted: without a GIL its class
 * joins g_retired. 0, or -1 with an error. */
static int retire_registered(PyObject* key) {
  if (!TVMFFI_FREE_THREADED) return 0;
  PyObject* old;
  int found = tvmffi_dict_get_ref(g_registered, key, &old);
  if (found <= 0) return found;
  int rc = g_retired != NULL || (g_retired = PyList_New(0)) != NULL ? PyList_Append(g_retired, old)
                                                                    : -1;
  Py_DECREF(old);
  return rc;
}

/* Type index of the nearest class in cls's MRO that is registered for a
 * type: 0 and *out = -1 when none is (cls derives from Object alone), -1 on
 * error. Not on a call path (__move_handle_from__): a scan of the table. */
int tvmffi_class_type_index(PyTypeObject* cls, int32_t* out) {
  PyObject* mro = cls->tp_mro;
  *out = -1;
  for (Py_ssize_t i = 0; mro != NULL && i < PyTuple_GET_SIZE(mro); ++i) {
    PyObject* base = PyTuple_GET_ITEM(mro, i);
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(g_registered, &pos, &key, &value)) {
      if (value != base) continue;
      long index = PyLong_AsLong(key);
      if (index == -1 && PyErr_Occurred()) return -1;
      *out = (int32_t)index;
      return 0;
    }
  }
  return 0;
}

static PyObject* g_subclass_hook; /* Python: (type_index, ancestor class) -> class */
static PyObject* object_getattro(PyObject* op, PyObject* name);

/* A registered class on the generic attribute path has every reflected name
 * of its own type as a descriptor, but none of a subtype's. Objects of an
 * unregistered subtype get a class of their own, derived from the ancestor's
 * (the hook builds and registers it), instead of an attribute fallback that
 * would slow every lookup on the ancestor class. */
static PyTypeObject* subclass_for(int32_t type_index, PyTypeObject* ancestor) {
  if (g_subclass_hook == NULL ||
      (ancestor != &TVMFFIObjectType && ancestor->tp_getattro != PyObject_GenericGetAttr)) {
    return ancestor;
  }
  PyObject* cls = PyObject_CallFunction(g_subclass_hook, "iO", (int)type_index, ancestor);
  if (cls == NULL) return NULL;
  Py_DECREF(cls); /* the hook registered it: g_registered holds the reference */
  PyTypeObject* made = registered_class(type_index);
  return made != NULL || PyErr_Occurred() ? made : ancestor;
}

/* Registered class of the type or of its nearest ancestor. */
static PyTypeObject* resolve_class(int32_t type_index) {
  PyTypeObject* cls = registered_class(type_index);
  if (cls != NULL || PyErr_Occurred()) return cls;
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(type_index);
  if (info == NULL) return &TVMFFIObjectType;
  for (int32_t d = info->type_depth - 1; d >= 0; --d) {
    cls = registered_class(info->type_ancestors[d]->type_index);
    if (cls != NULL) return subclass_for(type_index, cls);
    if (PyErr_Occurred()) return NULL;
  }
  /* No registered ancestor: a generated class derived from Object itself, as the
   * official binding's fallback classes (the type's fields and methods on it). */
  return type_index == kTVMFFIObject ? &TVMFFIObjectType
                                     : subclass_for(type_index, &TVMFFIObjectType);
}

static CreationKind creation_kind(PyTypeObject* cls);

#ifdef Py_GIL_DISABLED
/* Without a GIL the table is read by threads while another grows or clears
 * it: each entry is one word (the class, its kind in the low bits: type
 * objects are aligned), a grown table is published whole (entries, then the
 * capacity) and the old one is never freed (the tables, doubling, add up to
 * less than the last one), and writers take g_resolved_lock. */
static uintptr_t* g_resolved_words;
static PyMutex g_resolved_lock;

static int resolved_get(int32_t type_index, ResolvedClass* out) {
  int32_t cap = __atomic_load_n(&g_resolved_cap, __ATOMIC_ACQUIRE);
  if ((uint32_t)type_index >= (uint32_t)cap) return 0;
  uintptr_t* words = __atomic_load_n(&g_resolved_words, __ATOMIC_ACQUIRE);
  uintptr_t w = __atomic_load_n(&words[type_index], __ATOMIC_RELAXED);
  out->cls = (PyTypeObject*)(w & ~(uintptr_t)3);
  out->kind = (CreationKind)(w & 3);
  return w != 0;
}

static void forget_resolved(void) {
  PyMutex_Lock(&g_resolved_lock);
  for (int32_t i = 0; i < g_resolved_cap; ++i) {
    __atomic_store_n(&g_resolved_words[i], 0, __ATOMIC_RELAXED);
  }
  PyMutex_Unlock(&g_resolved_lock);
}

static int cache_class(int32_t type_index, ResolvedClass resolved) {
  int rc = 0;
  PyMutex_Lock(&g_resolved_lock);
  if (type_index >= g_resolved_cap) {
    int32_t cap = g_resolved_cap ? g_resolved_cap : 256;
    while (cap <= type_index) cap *= 2;
    uintptr_t* table = PyMem_RawCalloc((size_t)cap, sizeof(uintptr_t));
    if (table == NULL) {
      rc = -1;
    } else {
      if (g_resolved_cap) memcpy(table, g_resolved_words, sizeof(uintptr_t) * (size_t)g_resolved_cap);
      __atomic_store_n(&g_resolved_words, table, __ATOMIC_RELEASE);
      __atomic_store_n(&g_resolved_cap, cap, __ATOMIC_RELEASE);
    }
  }
  if (rc == 0) {
    __atomic_store_n(&g_resolved_words[type_index], (uintptr_t)resolved.cls | resolved.kind,
                     __ATOMIC_RELAXED);
  }
  PyMutex_Unlock(&g_resolved_lock);
  return rc;
}
#else
static int resolved_get(int32_t type_index, ResolvedClass* out) {
  if (type_index < 0 || type_index >= g_resolved_cap || g_resolved[type_index].cls == NULL) {
    return 0;
  }
  *out = g_resolved[type_index];
  return 1;
}

/* Registering or dropping a class can change how any type resolves. */
static void forget_resolved(void) {
  if (g_resolved) memset(g_resolved, 0, sizeof(ResolvedClass) * (size_t)g_resolved_cap);
}

static int cache_class(int32_t type_index, ResolvedClass resolved) {
  if (type_index >= g_resolved_cap) {
    int32_t cap = g_resolved_cap ? g_resolved_cap : 256;
    while (cap <= type_index) cap *= 2;
    ResolvedClass* table = PyMem_Realloc(g_resolved, sizeof(ResolvedClass) * (size_t)cap);
    if (table == NULL) return -1;
    memset(table + g_resolved_cap, 0, sizeof(ResolvedClass) * (size_t)(cap - g_resolved_cap));
    g_resolved = table;
    g_resolved_cap = cap;
  }
  g_resolved[type_index] = resolved;
  return 0;
}
#endif

/* Class of a type index and its creation kind; cls is NULL on error. */
static ResolvedClass class_for(int32_t type_index) {
  ResolvedClass known;
  if (resolved_get(type_index, &known)) return known;
  ResolvedClass resolved = {resolve_class(type_index), CREATE_ALLOC};
  if (resolved.cls != NULL) {
    resolved.kind = creation_kind(resolved.cls);
    /* Not cached when the table cannot grow: the next result resolves again. */
    if (type_index >= 0) cache_class(type_index, resolved);
  }
  return resolved;
}

PyObject* tvmffi_register_object_class(PyObject* self, PyObject* args) {
  (void)self;
  int type_index;
  PyObject* cls;
  if (!PyArg_ParseTuple(args, "iO!", &type_index, &PyType_Type, &cls)) return NULL;
  if (!PyType_IsSubtype((PyTypeObject*)cls, &TVMFFIObjectType)) {
    PyErr_Format(PyExc_TypeError, "%R is not a subclass of tvmffi.Object", cls);
    return NULL;
  }
  /* Reflected names are installed on registered classes, so they can take the
   * generic attribute path, which CPython specializes (LOAD_METHOD calls a
   * method descriptor without binding it). A class resolving names itself
   * (__tvm_ffi_getattr__) keeps the reflection fallback. Changed before the
   * class is published in g_registered: a thread that finds it there (under
   * the dict's lock without a GIL) sees the change. */
  PyTypeObject* tp = (PyTypeObject*)cls;
  if (tp->tp_getattro == object_getattro && !PyObject_HasAttrString(cls, "__tvm_ffi_getattr__")) {
    tp->tp_getattro = PyObject_GenericGetAttr;
    PyType_Modified(tp);
  }
  PyObject* key = PyLong_FromLong(type_index);
  if (key == NULL || retire_registered(key) != 0 || PyDict_SetItem(g_registered, key, cls) != 0) {
    Py_XDECREF(key);
    return NULL;
  }
  Py_DECREF(key);
  forget_resolved();
  Py_RETURN_NONE;
}

PyObject* tvmffi_unregister_object_class(PyObject* self, PyObject* arg) {
  (void)self;
  if (!PyLong_Check(arg)) {
    PyErr_SetString(PyExc_TypeError, "unregister_object_class expects a type index");
    return NULL;
  }
  if (retire_registered(arg) != 0 || PyDict_DelItem(g_registered, arg) != 0) return NULL;
  forget_resolved();
  Py_RETURN_NONE;
}

/* Result objects are created and dropped at call rate. Like CPython's own
 * float and tuple free lists, plain-sized blocks are recycled (all came from
 * PyObject_Malloc, and the GIL serializes access) to skip pymalloc's work. */
#define FREE_BLOCKS_MAX 64
static PyObject* g_free_blocks[FREE_BLOCKS_MAX];
static int g_free_count;

static int is_function_class(PyTypeObject* cls) {
  /* Direct subclasses of Object other than Function are the common case. */
  if (cls == &TVMFFIObjectType) return 0;
  if (cls->tp_base == &TVMFFIObjectType && cls != &TVMFFIFunctionType) return 0;
  return PyType_IsSubtype(cls, &TVMFFIFunctionType);
}

/* A class whose instances are exactly a TVMFFIPyObject from the default
 * allocator: no GC header, no managed dict or weakref pre-header, no extra
 * slots. Its instances can be made by filling a raw block. Function (whose
 * instances are larger) is told apart first, by creation_kind. */
static int is_plain_class(PyTypeObject* cls) {
  unsigned long special = Py_TPFLAGS_HAVE_GC;
#ifdef Py_TPFLAGS_MANAGED_DICT
  special |= Py_TPFLAGS_MANAGED_DICT;
#endif
#ifdef Py_TPFLAGS_MANAGED_WEAKREF
  special |= Py_TPFLAGS_MANAGED_WEAKREF;
#endif
  return cls->tp_alloc == PyType_GenericAlloc && !(cls->tp_flags & special) &&
         cls->tp_itemsize == 0 && cls->tp_basicsize == (Py_ssize_t)sizeof(TVMFFIPyObject);
}

static CreationKind creation_kind(PyTypeObject* cls) {
  if (is_function_class(cls)) return CREATE_FUNCTION;
  return is_plain_class(cls) ? CREATE_PLAIN : CREATE_ALLOC;
}

/* An instance of a plain class owning `handle`. */
static PyObject* new_plain(PyTypeObject* cls, TVMFFIObjectHandle handle) {
  PyObject* obj;
  if (TVMFFI_FREE_LISTS && g_free_count > 0) {
    obj = g_free_blocks[--g_free_count];
  } else {
    obj = PyObject_Malloc(sizeof(TVMFFIPyObject));
    if (obj == NULL) {
      TVMFFIObjectDecRef(handle);
      return PyErr_NoMemory();
    }
  }
  ((TVMFFIPyObject*)obj)->handle = handle;
  ((TVMFFIPyObject*)obj)->weakreflist = NULL;
  ((TVMFFIPyObject*)obj)->dlpack_api = NULL;
  ((TVMFFIPyObject*)obj)->graph_height = 0;
  return PyObject_Init(obj, cls); /* takes the reference a heap type's instance holds */
}

/* The counterpart of new_plain for types whose tp_free is PyObject_Free. */
static void free_instance(PyObject* op) {
  if (TVMFFI_FREE_LISTS && Py_TYPE(op)->tp_basicsize == (Py_ssize_t)sizeof(TVMFFIPyObject) &&
      g_free_count < FREE_BLOCKS_MAX) {
    g_free_blocks[g_free_count++] = op;
    return;
  }
  PyObject_Free(op);
}

static PyObject* new_of_kind(PyTypeObject* cls, CreationKind kind, TVMFFIObjectHandle handle) {
  switch (kind) {
    case CREATE_PLAIN:
      return new_plain(cls, handle);
    case CREATE_FUNCTION:
      return tvmffi_function_wrap_owned(handle);
    case CREATE_ALLOC:
      break;
  }
  PyObject* obj = cls->tp_alloc(cls, 0);
  if (obj == NULL) {
    TVMFFIObjectDecRef(handle);
    return NULL;
  }
  ((TVMFFIPyObject*)obj)->handle = handle;
  return obj;
}

/* For callers holding a class rather than a type index. */
PyObject* tvmffi_object_new_of(PyTypeObject* cls, TVMFFIObjectHandle handle) {
  return new_of_kind(cls, creation_kind(cls), handle);
}

/* wrap_typed's other cases, out of line so that its plain-class path saves
 * no registers. */
static Py_NO_INLINE PyObject* wrap_resolving(TVMFFIObjectHandle handle, int32_t type_index) {
  ResolvedClass resolved = class_for(type_index);
  if (resolved.cls == NULL) {
    TVMFFIObjectDecRef(handle);
    return NULL;
  }
  return new_of_kind(resolved.cls, resolved.kind, handle);
}

PyObject* tvmffi_object_wrap_typed(TVMFFIObjectHandle handle, int32_t type_index) {
  /* The call-rate path: a result of an already resolved, plain class (a
   * zeroed, unresolved entry is never CREATE_PLAIN). */
#ifdef Py_GIL_DISABLED
  ResolvedClass known;
  if (resolved_get(type_index, &known) && known.kind == CREATE_PLAIN) {
    return new_plain(known.cls, handle);
  }
#else
  if ((uint32_t)type_index < (uint32_t)g_resolved_cap &&
      g_resolved[type_index].kind == CREATE_PLAIN) {
    return new_plain(g_resolved[type_index].cls, handle);
  }
#endif
  return wrap_resolving(handle, type_index);
}

PyObject* tvmffi_object_wrap_owned(TVMFFIObjectHandle handle) {
  return tvmffi_object_wrap_typed(handle, tvmffi_type_index_of(handle));
}

/* Objects of the official tvm_ffi binding expose their handle via
 * __chandle__(); the caller has checked the class comes from that binding. */
/* ---- the Object type ---------------------------------------------------------- */
TVMFFIObjectHandle tvmffi_object_handle(PyObject* obj) {
  TVMFFIObjectHandle h = ((TVMFFIPyObject*)obj)->handle;
  if (h == NULL) {
    PyErr_Format(PyExc_ValueError, "%s object holds no FFI handle", Py_TYPE(obj)->tp_name);
  }
  return h;
}

static void release_handle(TVMFFIPyObject* self) {
  if (self->weakreflist != NULL) PyObject_ClearWeakRefs((PyObject*)self);
  if (self->handle != NULL) {
    TVMFFIObjectHandle h = self->handle;
    self->handle = NULL;
    tvmffi_object_release(h); /* a deep container chain is freed iteratively */
  }
}

static void object_dealloc(PyObject* op) {
  release_handle((TVMFFIPyObject*)op);
  Py_TYPE(op)->tp_free(op);
}

/* Dealloc of stateless Python subclasses (see object_init_subclass): what
 * subtype_dealloc would do for them, minus its generic slot and dict handling.
 * Python subclasses of such a class that do add state keep subtype_dealloc,
 * which clears their state and then calls this as their base dealloc. */
static void object_dealloc_heap(PyObject* op) {
  PyTypeObject* tp = Py_TYPE(op);
  if (tp->tp_finalize != NULL && PyObject_CallFinalizerFromDealloc(op) < 0) {
    return; /* resurrected by __del__ */
  }
  release_handle((TVMFFIPyObject*)op);
  if (tp->tp_free == PyObject_Free) {
    free_instance(op);
  } else {
    tp->tp_free(op); /* a subclass that added state (GC) */
  }
  Py_DECREF(tp); /* instances of heap types own a reference to their type */
}

static PyObject* object_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  (void)args;
  (void)kwargs;
  return type->tp_alloc(type, 0); /* empty; subclasses fill the handle in __init__ */
}

static Py_hash_t object_hash(PyObject* op) {
  /* Objects are 8-byte aligned: drop the always-zero low bits. */
  Py_hash_t h = (Py_hash_t)((uintptr_t)((TVMFFIPyObject*)op)->handle >> 3);
  return h == -1 ? -2 : h;
}

static PyObject* object_richcompare(PyObject* a, PyObject* b, int op) {
  if ((op != Py_EQ && op != Py_NE) || !tvmffi_is_object(b)) Py_RETURN_NOTIMPLEMENTED;
  int same = ((TVMFFIPyObject*)a)->handle == ((TVMFFIPyObject*)b)->handle;
  return PyBool_FromLong(op == Py_EQ ? same : !same);
}

static PyObject* object_same_as(PyObject* op, PyObject* other) {
  if (!tvmffi_is_object(other)) Py_RETURN_FALSE;
  return PyBool_FromLong(((TVMFFIPyObject*)op)->handle == ((TVMFFIPyObject*)other)->handle);
}

static PyObject* object_chandle(PyObject* op, PyObject* unused) {
  (void)unused;
  return PyLong_FromVoidPtr(((TVMFFIPyObject*)op)->handle);
}

static PyObject* object_get_id(PyObject* op, void* closure) {
  (void)closure;
  return PyLong_FromVoidPtr(((TVMFFIPyObject*)op)->handle);
}

/* obj.__init_handle_by_constructor__(f, *args): obj takes the object f(*args) returns. */
static PyObject* object_init_by_constructor(PyObject* op, PyObject* const* args,
                                            Py_ssize_t nargs) {
  PyObject* stack[9];
  PyObject** all = nargs < 9 ? stack : PyMem_Malloc(sizeof(PyObject*) * (size_t)(nargs + 1));
  if (all == NULL) return PyErr_NoMemory();
  all[0] = op;
  memcpy(all + 1, args, sizeof(PyObject*) * (size_t)nargs);
  PyObject* res = tvmffi_init_handle(NULL, all, nargs + 1);
  if (all != stack) PyMem_Free(all);
  return res;
}

/* Pickling goes through the runtime's JSON graph, in Python (tvmffi/_pickle_hooks.py). */
static PyObject* g_reduce_hook;
static PyObject* g_setstate_hook;

static PyObject* object_reduce(PyObject* op, PyObject* unused) {
  (void)unused;
  if (g_reduce_hook == NULL) {
    PyErr_Format(PyExc_TypeError, "cannot pickle '%s' object", Py_TYPE(op)->tp_name);
    return NULL;
  }
  return PyObject_CallOneArg(g_reduce_hook, op);
}

static PyObject* object_setstate(PyObject* op, PyObject* state) {
  if (g_setstate_hook == NULL) {
    PyErr_Format(PyExc_TypeError, "cannot unpickle '%s' object", Py_TYPE(op)->tp_name);
    return NULL;
  }
  return PyObject_CallFunctionObjArgs(g_setstate_hook, op, state, NULL);
}

PyObject* tvmffi_set_pickle_hooks(PyObject* self, PyObject* args) {
  (void)self;
  PyObject *r, *s;
  if (!PyArg_ParseTuple(args, "OO", &r, &s)) return NULL;
  Py_XSETREF(g_reduce_hook, r == Py_None ? NULL : Py_NewRef(r));
  Py_XSETREF(g_setstate_hook, s == Py_None ? NULL : Py_NewRef(s));
  Py_RETURN_NONE;
}

static PyObject* object_get_type_index(PyObject* op, void* closure) {
  (void)closure;
  TVMFFIObjectHandle h = tvmffi_object_handle(op);
  if (h == NULL) return NULL;
  return PyLong_FromLong(tvmffi_type_index_of(h));
}

static PyObject* object_get_type_key(PyObject* op, void* closure) {
  (void)closure;
  TVMFFIObjectHandle h = tvmffi_object_handle(op);
  if (h == NULL) return NULL;
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(tvmffi_type_index_of(h));
  return tvmffi_bytearray_to_str(&info->type_key);
}

/* Python-level hooks installed by tvmffi/object.py: repr, attribute
 * fallback (reflection) and dir. */
static PyObject* g_repr_hook;
static PyObject* g_getattr_hook;
static PyObject* g_dir_hook;

static PyObject* object_repr(PyObject* op) {
  TVMFFIPyObject* self = (TVMFFIPyObject*)op;
  if (self->handle == NULL) return PyUnicode_FromFormat("<%s (empty)>", Py_TYPE(op)->tp_name);
  if (g_repr_hook != NULL) return PyObject_CallOneArg(g_repr_hook, op);
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(tvmffi_type_index_of(self->handle));
  PyObject* key = tvmffi_bytearray_to_str(&info->type_key);
  if (key == NULL) return NULL;
  PyObject* res = PyUnicode_FromFormat("<%s %U at %p>", Py_TYPE(op)->tp_name, key, self->handle);
  Py_DECREF(key);
  return res;
}

static PyObject* object_getattro(PyObject* op, PyObject* name) {
  PyObject* res = PyObject_GenericGetAttr(op, name);
  if (res != NULL || g_getattr_hook == NULL || !PyErr_ExceptionMatches(PyExc_AttributeError)) {
    return res;
  }
  if (((TVMFFIPyObject*)op)->handle == NULL) return NULL;
  if (PyUnicode_Check(name) && PyUnicode_READ_CHAR(name, 0) == '_' &&
      PyUnicode_GET_LENGTH(name) > 1 && PyUnicode_READ_CHAR(name, 1) == '_') {
    return NULL; /* dunder lookups never go through reflection */
  }
  PyErr_Clear();
  return PyObject_CallFunctionObjArgs(g_getattr_hook, op, name, NULL);
}

static PyObject* object_dir(PyObject* op, PyObject* unused) {
  (void)unused;
  if (g_dir_hook != NULL) return PyObject_CallOneArg(g_dir_hook, op);
  return PyObject_CallMethod((PyObject*)&PyBaseObject_Type, "__dir__", "O", op);
}

PyObject* tvmffi_set_object_hooks(PyObject* self, PyObject* args) {
  (void)self;
  PyObject *r, *g, *d, *sub;
  if (!PyArg_ParseTuple(args, "OOOO", &r, &g, &d, &sub)) return NULL;
  Py_XSETREF(g_repr_hook, r == Py_None ? NULL : Py_NewRef(r));
  Py_XSETREF(g_getattr_hook, g == Py_None ? NULL : Py_NewRef(g));
  Py_XSETREF(g_dir_hook, d == Py_None ? NULL : Py_NewRef(d));
  Py_XSETREF(g_subclass_hook, sub == Py_None ? NULL : Py_NewRef(sub));
  Py_RETURN_NONE;
}

/* CPython 3.11+ makes every class statement's type garbage-collected, even a
 * subclass with `__slots__ = ()` that adds no state. Our objects hold only a
 * handle, so GC tracking buys nothing and costs on every wrapped result (the
 * GC header, link/unlink, and gen-0 collections triggered by the allocation
 * count). A subclass that adds no instance layout over a non-GC base drops
 * the flag here, while no instance can exist yet. One with a __dict__ or new
 * slots keeps it, since those can hold cycles. */
static PyObject* object_init_subclass(PyObject* cls, PyObject* unused) {
  (void)unused;
  PyTypeObject* tp = (PyTypeObject*)cls;
  PyTypeObject* base = tp->tp_base;
  if ((tp->tp_flags & Py_TPFLAGS_HEAPTYPE) && (tp->tp_flags & Py_TPFLAGS_HAVE_GC) &&
      base != NULL && !(base->tp_flags & Py_TPFLAGS_HAVE_GC) &&
      tp->tp_basicsize == base->tp_basicsize && tp->tp_itemsize == 0 && tp->tp_dictoffset == 0 &&
      tp->tp_free == PyObject_GC_Del) {
    tp->tp_flags &= ~Py_TPFLAGS_HAVE_GC;
    tp->tp_free = PyObject_Free;
    tp->tp_traverse = NULL;
    tp->tp_clear = NULL;
    /* Without a GIL CPython's own subtype_dealloc stays: it drops the
     * instance's reference to its class from the thread's own count, as
     * allocation took it, where a Py_DECREF here would make every thread's
     * results write one shared word of the class. */
    if (!TVMFFI_FREE_THREADED && tp->tp_del == NULL &&
        (base->tp_dealloc == object_dealloc || base->tp_dealloc == object_dealloc_heap)) {
      tp->tp_dealloc = object_dealloc_heap;
    }
  }
  Py_RETURN_NONE;
}

static PyMethodDef object_methods[] = {
    {"__init_subclass__", object_init_subclass, METH_NOARGS | METH_CLASS,
     "Drops GC tracking from subclasses that add no instance state."},
    {"same_as", object_same_as, METH_O, "True if both refer to the same FFI object."},
    {"is_", object_same_as, METH_O, "True if both refer to the same FFI object (same_as)."},
    {"__init_handle_by_constructor__", (PyCFunction)(void (*)(void))object_init_by_constructor,
     METH_FASTCALL, "__init_handle_by_constructor__(f, *args): take the object f(*args) returns."},
    {"__reduce__", object_reduce, METH_NOARGS, "Pickles through the runtime's JSON graph."},
    {"__setstate__", object_setstate, METH_O, "Restores the handle from the JSON graph."},
    {"__chandle__", object_chandle, METH_NOARGS, "The raw object handle as an int."},
    {"__ctypes_handle__", tvmffi_object_ctypes_handle, METH_NOARGS,
     "The raw object handle as a ctypes.c_void_p (None when empty)."},
    {"__move_handle_from__", tvmffi_object_move_handle_from, METH_O,
     "__move_handle_from__(other): take other's FFI object; other is left empty."},
    {"_move", tvmffi_object_move, METH_NOARGS,
     "This object passed by move: the callee may take its reference (official name)."},
    {"__tvm_ffi_object__", tvmffi_object_to_official, METH_NOARGS,
     "The official binding's (tvm_ffi) object for the same handle."},
    {"__dir__", object_dir, METH_NOARGS, "Attributes, including reflected fields and methods."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef object_getset[] = {
    {"id_", object_get_id, NULL, "The handle's address as an int (0 when empty).", NULL},
    {"type_index", object_get_type_index, NULL, "Runtime type index of the object.", NULL},
    {"type_key", object_get_type_key, NULL, "Type key of the object, e.g. 'ffi.Array'.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject TVMFFIObjectType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.Object",
    .tp_basicsize = sizeof(TVMFFIPyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    /* .tp_doc: set by type_docs.c */
    .tp_dealloc = object_dealloc,
    .tp_new = object_new,
    .tp_hash = object_hash,
    .tp_richcompare = object_richcompare,
    .tp_repr = object_repr,
    .tp_getattro = object_getattro,
    .tp_methods = object_methods,
    .tp_getset = object_getset,
    .tp_weaklistoffset = offsetof(TVMFFIPyObject, weakreflist),
};

int tvmffi_object_init_types(PyObject* module) {
  g_registered = PyDict_New();
  if (g_registered == NULL || PyType_Ready(&TVMFFIObjectType) < 0 ||
      tvmffi_make_new_replaceable(&TVMFFIObjectType) < 0) {
    return -1;
  }
  Py_INCREF(&TVMFFIObjectType);
  return PyModule_AddObject(module, "Object", (PyObject*)&TVMFFIObjectType);
}

/* The version tag of `tp`, assigned now when it has none yet (0 when it
 * cannot be): per-type caches (any.c, tensor/import.c) key on it. */
unsigned int tvmffi_type_version_tag(PyTypeObject* tp) {
  if (tvmffi_tag_of(tp) == 0) {
#if PY_VERSION_HEX >= 0x030C0000
    PyUnstable_Type_AssignVersionTag(tp);
#else
    static PyObject* name; /* any name: a type lookup assigns a tag */
    if (name == NULL) name = PyUnicode_InternFromString("__tvm_ffi_object__");
    if (name != NULL) {
      (void)_PyType_Lookup(tp, name);
    } else {
      PyErr_Clear(); /* no tag: the decision is simply not cached */
    }
#endif
  }
  return tvmffi_tag_of(tp);
}
