/*
 * Freeing deep values without deep C recursion.
 *
 * The runtime's deleters free an object's children from inside the parent's
 * deleter: dropping the last reference to a chain of N nested containers or
 * py_class objects nests N deleters on the C stack, and about 100 000 levels
 * overflow an 8 MiB stack (a segfault, in both bindings). CPython avoids the
 * same with its "trashcan"; the runtime has none.
 *
 * Where tvmffi itself drops a reference (a wrapper's dealloc, an owned Any
 * released, a py_class Any field overwritten), tvmffi_object_release hands a
 * container or py_class object whose count says "last reference" to
 * tvmffi_release_deep, which frees it from an explicit work list (a stack):
 * before the object's own DecRef, every child slot holding an object
 * that is itself an openable kind (Array, List, Map, Dict, py_class) and is
 * referenced only by that slot is moved into the work list and the slot set
 * to None. Each runtime deleter then only meets leaves and shared children,
 * whose release does not recurse into anything deep. Where the runtime drops
 * the value instead (a List or Dict mutation, a field setter), the caller
 * holds it across the call (tvmffi_hold_dropped around the runtime's List
 * and Dict mutation builtins, however they are called; reflection.c's
 * field_hold_old), so the last reference is still ours.
 *
 * Why moving a child is safe: an object whose combined count is exactly "one
 * strong, no weak" while we hold a strong reference is reachable by nobody
 * else, and cannot become reachable (no weak reference can be locked); a
 * child referenced once, from a slot of such an object, is just as private.
 * The objects are about to be destroyed, so the None left in a slot is never
 * observed. Anything else (a shared child, an object with weak references, a
 * kind whose layout is not known) is left to the runtime as before.
 *
 * Layouts are read from memory: TVMFFISeqCell (c_api.h) for Array and List;
 * the runtime's map layout (read by graph_guard.c's tvmffi_map_layout_each)
 * for Map and Dict; the reflected fields, stored the way the runtime's
 * py_class deleter destroys them, for objects whose deleter is that deleter.
 * The container layouts are checked at import on values the runtime builds
 * (tvmffi_teardown_init); a kind that does not read back as expected is
 * never opened, and its values are freed by plain DecRef.
 */
#include "core.h"

#include <stdlib.h>
#include <string.h>

/* One strong reference and the weak one that all strong references share. */
#define COUNT_SOLE ((UINT64_C(1) << 32) | UINT64_C(1))

/* Set once at import (GIL held), read from any thread afterwards. */
static int g_seq_ok;
static int g_map_ok;
/* The runtime's py_class deleter, learned from an instance (py_learn_deleter). */
static uintptr_t g_py_class_deleter;

static inline int sole_owner(TVMFFIObject* o) {
  return __atomic_load_n(&o->combined_ref_count, __ATOMIC_ACQUIRE) == COUNT_SOLE;
}

static inline int is_py_class(TVMFFIObject* o) {
  uintptr_t d = __atomic_load_n(&g_py_class_deleter, __ATOMIC_RELAXED);
  return d != 0 && (uintptr_t)o->deleter == d;
}

/* Whether we know where `o` keeps its children. */
static int openable(TVMFFIObject* o) {
  switch (o->type_index) {
    case kTVMFFIArray:
    case kTVMFFIList:
      return g_seq_ok;
    case kTVMFFIMap:
    case kTVMFFIDict:
      return g_map_ok;
    default:
      return o->type_index >= kTVMFFIDynObjectBegin && is_py_class(o);
  }
}

/* ---- the work list ---------------------------------------------------------- */
/* malloc, not PyMem: releases also happen on threads without the GIL (a
 * py_class field set from another language's thread). */
#define WORK_INLINE 32
typedef struct {
  size_t size;
  size_t capacity;
  TVMFFIObject** items;
  TVMFFIObject* inline_items[WORK_INLINE];
} Work;

static int work_push(Work* w, TVMFFIObject* o) {
  if (w->size == w->capacity) {
    size_t cap = w->capacity * 2;
    TVMFFIObject** grown = w->items == w->inline_items ? malloc(cap * sizeof(*grown))
                                                        : realloc(w->items, cap * sizeof(*grown));
    if (grown == NULL) return -1; /* the child stays in its slot: freed the runtime's way */
    if (w->items == w->inline_items) memcpy(grown, w->inline_items, sizeof(w->inline_items));
    w->items = grown;
    w->capacity = cap;
  }
  w->items[w->size++] = o;
  return 0;
}

/* Move a privately held, openable child out of an Any slot. */
static void detach_any(TVMFFIAny* slot, Work* w) {
  if (slot->type_index < kTVMFFIStaticObjectBegin) return;
  TVMFFIObject* c = slot->v_obj;
  if (!sole_owner(c) || !openable(c) || work_push(w, c) != 0) return;
  slot->type_index = kTVMFFINone;
  slot->zero_padding = 0;
  slot->v_int64 = 0;
}

/* Same for an ObjectRef slot (a pointer, NULL for None). */
static void detach_ref(TVMFFIObject** slot, Work* w) {
  TVMFFIObject* c = *slot;
  if (c == NULL || !sole_owner(c) || !openable(c) || work_push(w, c) != 0) return;
  *slot = NULL;
}

static void open_seq(TVMFFIObject* o, Work* w) {
  TVMFFISeqCell* cell = tvmffi_cell(o);
  TVMFFIAny* items = cell->data;
  for (int64_t i = 0; i < cell->size; ++i) detach_any(&items[i], w);
}

/* The map's storage is ours to change: the const of the entry callback's
 * pointers (graph_guard.c only reads) is cast away. */
static int detach_entry(void* w, const TVMFFIAny* key, const TVMFFIAny* value) {
  detach_any((TVMFFIAny*)key, w);
  detach_any((TVMFFIAny*)value, w);
  return 0;
}

static void open_map(TVMFFIObject* o, Work* w) { tvmffi_map_layout_each(o, detach_entry, w); }

/* A py_class object's fields, as the runtime's py_class deleter destroys them:
 * an Any-typed field of 16 bytes is an Any; an object-typed field, or an
 * Any-typed one of 8 bytes, is an ObjectRef; anything else holds no object. */
static void open_fields(const TVMFFITypeInfo* info, TVMFFIObject* o, Work* w) {
  for (int32_t i = 0; i < info->num_fields; ++i) {
    const TVMFFIFieldInfo* f = &info->fields[i];
    char* addr = (char*)o + f->offset;
    int32_t ti = f->field_static_type_index;
    if (ti == kTVMFFIAny && f->size == (int64_t)sizeof(TVMFFIAny)) {
      detach_any((TVMFFIAny*)addr, w);
    } else if ((ti == kTVMFFIAny || ti >= kTVMFFIStaticObjectBegin) &&
               f->size == (int64_t)sizeof(void*)) {
      detach_ref((TVMFFIObject**)addr, w);
    }
  }
}

static void open_py_class(TVMFFIObject* o, Work* w) {
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(o->type_index);
  if (info == NULL) return;
  /* ancestors first, skipping the root Object (as the deleter walks them) */
  for (int32_t d = 1; d < info->type_depth; ++d) open_fields(info->type_ancestors[d], o, w);
  open_fields(info, o, w);
}

static void open_object(TVMFFIObject* o, Work* w) {
  switch (o->type_index) {
    case kTVMFFIArray:
    case kTVMFFIList:
      open_seq(o, w);
      break;
    case kTVMFFIMap:
    case kTVMFFIDict:
      open_map(o, w);
      break;
    default:
      open_py_class(o, w);
  }
}

void tvmffi_release_deep(TVMFFIObjectHandle h) {
  TVMFFIObject* o = h;
  if (!sole_owner(o) || !openable(o)) {
    TVMFFIObjectDecRef(h);
    return;
  }
  Work w; /* inline_items left uninitialized: only pushed entries are read */
  w.size = 0;
  w.capacity = WORK_INLINE;
  w.items = w.inline_items;
  for (;;) {
    open_object(o, &w);
    TVMFFIObjectDecRef(o); /* its deleter meets no private openable child */
    if (w.size == 0) break;
    o = w.items[--w.size];
  }
  if (w.items != w.inline_items) free(w.items);
}

/* ---- holding what a runtime mutation is about to drop ------------------------- */
/* Take a reference to the slot's object when the slot is its only reference
 * and it is openable: the mutation then leaves the last reference with us. */
static int hold_slot(const TVMFFIAny* slot, Work* held) {
  if (slot->type_index < kTVMFFIStaticObjectBegin) return 0;
  TVMFFIObject* c = slot->v_obj;
  if (!sole_owner(c) || !openable(c)) return 0;
  if (work_push(held, c) != 0) return -1;
  TVMFFIObjectIncRef(c);
  return 0;
}

static int hold_entry(void* held, const TVMFFIAny* key, const TVMFFIAny* value) {
  return hold_slot(key, held) != 0 || hold_slot(value, held) != 0 ? -1 : 0;
}

/* The held references live in a heap copy of the work list, owned by a
 * capsule: dropping it releases each through tvmffi_object_release. */
typedef struct {
  size_t size;
  TVMFFIObject* items[];
} Held;

static void held_free(PyObject* capsule) {
  Held* h = PyCapsule_GetPointer(capsule, "tvmffi.Held");
  if (h == NULL) return;
  for (size_t i = 0; i < h->size; ++i) tvmffi_object_release(h->items[i]);
  free(h);
}

static void held_drop(Work* w) {
  for (size_t i = 0; i < w->size; ++i) TVMFFIObjectDecRef(w->items[i]); /* still shared */
}

static PyObject* held_capsule(Work* w) {
  Held* h = w->size ? malloc(sizeof(Held) + w->size * sizeof(TVMFFIObject*)) : NULL;
  PyObject* capsule = h != NULL ? PyCapsule_New(h, "tvmffi.Held", held_free) : NULL;
  if (capsule == NULL) {
    free(h);
    held_drop(w);
    return w->size ? PyErr_NoMemory() : Py_NewRef(Py_None);
  }
  h->size = w->size;
  memcpy(h->items, w->items, w->size * sizeof(TVMFFIObject*));
  return capsule;
}

/* A holder of references to the openable values only the container `o`
 * references (elements start..stop of a List or Array; every key and value
 * of a Map or Dict), for a mutation that is about to drop them (clear, erase,
 * overwrite) to leave their last reference with us: dropping the holder frees
 * them. None when there are none (or the layout is unchecked). Needs the GIL,
 * as every container mutation here has it. */
static PyObject* hold_items(TVMFFIObject* o, Py_ssize_t start, Py_ssize_t stop) {
  Work held;
  held.size = 0;
  held.capacity = WORK_INLINE;
  held.items = held.inline_items;
  int rc = 0;
  if (o == NULL) {
    /* nothing held */
  } else if ((o->type_index == kTVMFFIArray || o->type_index == kTVMFFIList) && g_seq_ok) {
    TVMFFISeqCell* cell = tvmffi_cell(o);
    TVMFFIAny* items = cell->data;
    if (start < 0) start = 0;
    if (stop > cell->size) stop = (Py_ssize_t)cell->size;
    for (Py_ssize_t i = start; rc == 0 && i < stop; ++i) rc = hold_slot(&items[i], &held);
  } else if ((o->type_index == kTVMFFIMap || o->type_index == kTVMFFIDict) && g_map_ok) {
    rc = tvmffi_map_layout_each(o, hold_entry, &held) < 0 ? -1 : 0;
  }
  PyObject* result = rc == 0 ? held_capsule(&held) : NULL;
  if (rc != 0) {
    held_drop(&held);
    PyErr_NoMemory();
  }
  if (held.items != held.inline_items) free(held.items);
  return result;
}

/* The Dict `d`'s current value for `key` when it is an openable object (held,
 * for a set or erase about to drop it), else None: missing key, other values,
 * or a key that does not convert (the mutation then raises its own error).
 * One runtime lookup, no Python value made for anything but such a value. */
static PyObject* dict_hold_value(TVMFFIObject* d, PyObject* key) {
  static TVMFFIObjectHandle get_fn;
  if (d == NULL || d->type_index != kTVMFFIDict) Py_RETURN_NONE;
  TempList temps;
  temps_init(&temps);
  TVMFFIAny call_args[2] = {{.type_index = kTVMFFIDict, .v_obj = d}};
  TVMFFIAny r = {.type_index = kTVMFFINone};
  int rc = tvmffi_py_to_any(key, &call_args[1], &temps, -1) == 0
               ? tvmffi_call_global_any("ffi.DictGetItemOrMissing", &get_fn, call_args, 2, &r)
               : -1;
  temps_release(&temps);
  if (rc != 0) {
    PyErr_Clear();
    Py_RETURN_NONE;
  }
  if (r.type_index < kTVMFFIStaticObjectBegin || !openable(r.v_obj)) {
    tvmffi_any_release(&r);
    Py_RETURN_NONE;
  }
  return tvmffi_object_wrap_typed(r.v_obj, r.type_index);
}

/* args[i] as an index, or 0 when it is not an int that fits. */
static int index_arg(PyObject* const* args, Py_ssize_t nargs, Py_ssize_t i, Py_ssize_t* out) {
  if (i >= nargs || !PyLong_Check(args[i])) return 0;
  *out = PyLong_AsSsize_t(args[i]);
  if (*out == -1 && PyErr_Occurred()) {
    PyErr_Clear(); /* out of range: the builtin reports it */
    return 0;
  }
  return 1;
}

PyObject* tvmffi_hold_dropped(HoldKind kind, PyObject* const* args, Py_ssize_t nargs) {
  /* Only tvmffi's own objects: another binding's object holds its handle elsewhere. */
  if (nargs < 1 || !PyObject_TypeCheck(args[0], &TVMFFIObjectType)) Py_RETURN_NONE;
  TVMFFIObject* o = ((TVMFFIPyObject*)args[0])->handle;
  if (o == NULL) Py_RETURN_NONE;
  Py_ssize_t start, stop;
  switch (kind) {
    case HOLD_INDEX:
      if (!index_arg(args, nargs, 1, &start) || o->type_index != kTVMFFIList) Py_RETURN_NONE;
      if (start < 0) start += (Py_ssize_t)((TVMFFISeqCell*)tvmffi_cell(o))->size;
      return start < 0 ? Py_NewRef(Py_None) : hold_items(o, start, start + 1);
    case HOLD_RANGE:
      if (!index_arg(args, nargs, 1, &start) || !index_arg(args, nargs, 2, &stop)) Py_RETURN_NONE;
      return hold_items(o, start, stop);
    case HOLD_ALL:
      return hold_items(o, 0, PY_SSIZE_T_MAX);
    case HOLD_KEY:
      return nargs < 2 ? Py_NewRef(Py_None) : dict_hold_value(o, args[1]);
  }
  Py_RETURN_NONE;
}

/* ---- layout check at import ------------------------------------------------- */
/* An Array and a List of three ints built by the runtime read back through
 * TVMFFISeqCell; 1 when everything is where it should be. (Maps:
 * tvmffi_map_layout_ok.) */
#define CHECK_BASE 7001

static int check_seq(const char* name, int32_t type_index) {
  static TVMFFIObjectHandle caches[2];
  TVMFFIAny args[3];
  for (int i = 0; i < 3; ++i) {
    args[i].type_index = kTVMFFIInt;
    args[i].zero_padding = 0;
    args[i].v_int64 = CHECK_BASE + i;
  }
  TVMFFIAny r;
  if (tvmffi_call_global_any(name, &caches[type_index == kTVMFFIList], args, 3, &r) != 0) {
    PyErr_Clear();
    return 0;
  }
  int ok = r.type_index == type_index;
  if (ok) {
    const TVMFFISeqCell* cell = tvmffi_cell(r.v_obj);
    const TVMFFIAny* items = cell->data;
    ok = cell->size == 3 && cell->capacity >= 3 && items != NULL;
    for (int i = 0; ok && i < 3; ++i) {
      ok = items[i].type_index == kTVMFFIInt && items[i].v_int64 == CHECK_BASE + i;
    }
  }
  tvmffi_any_release(&r);
  return ok;
}

/* _py_class_learn_deleter(type_index): make one instance of a py_class type
 * through its __ffi_new__ and remember the deleter the runtime gave it (the
 * same function for every py_class type), so that deep chains of such objects
 * are freed iteratively. Does nothing when the type has no __ffi_new__ or
 * the call fails. */
static PyObject* py_learn_deleter(PyObject* m, PyObject* arg) {
  (void)m;
  long type_index = PyLong_AsLong(arg);
  if (type_index == -1 && PyErr_Occurred()) return NULL;
  if (type_index < kTVMFFIDynObjectBegin || type_index > INT32_MAX) Py_RETURN_NONE;
  if (__atomic_load_n(&g_py_class_deleter, __ATOMIC_RELAXED) != 0) Py_RETURN_NONE; /* known */
  TVMFFIByteArray name = {"__ffi_new__", 11};
  const TVMFFITypeAttrColumn* col = TVMFFIGetTypeAttrColumn(&name);
  int64_t off = col != NULL ? type_index - col->begin_index : -1;
  if (off < 0 || off >= col->size || col->data[off].type_index != kTVMFFIFunction) Py_RETURN_NONE;
  TVMFFIAny r = {.type_index = kTVMFFINone};
  if (TVMFFIFunctionCall(col->data[off].v_obj, NULL, 0, &r) != 0) {
    tvmffi_discard_ffi_error();
    Py_RETURN_NONE;
  }
  if (r.type_index == type_index) {
    void (*d)(void*, int) = r.v_obj->deleter;
    if (d != NULL) __atomic_store_n(&g_py_class_deleter, (uintptr_t)d, __ATOMIC_RELAXED);
  }
  tvmffi_any_release(&r);
  Py_RETURN_NONE;
}

/* _teardown_layouts() -> (seq, map, py_class): which kinds
 * deep frees open (for tests). */
static PyObject* py_teardown_layouts(PyObject* m, PyObject* unused) {
  (void)m;
  (void)unused;
  return Py_BuildValue("(iii)", g_seq_ok, g_map_ok,
                       __atomic_load_n(&g_py_class_deleter, __ATOMIC_RELAXED) != 0);
}

static PyMethodDef teardown_methods[] = {
    {"_py_class_learn_deleter", py_learn_deleter, METH_O, "(type_index) -> None"},
    {"_teardown_layouts", py_teardown_layouts, METH_NOARGS,
     "() -> (seq, map, py_class) layouts in use"},
    {NULL, NULL, 0, NULL},
};

int tvmffi_teardown_init(PyObject* module) {
  g_seq_ok = check_seq("ffi.Array", kTVMFFIArray) && check_seq("ffi.List", kTVMFFIList);
  g_map_ok = tvmffi_map_layout_ok();
  return PyModule_AddFunctions(module, teardown_methods);
}
