/*
 * Graph guard: the depth and cycle check that runs before the runtime's
 * recursive graph functions (structural equal/hash/walk/map, JSON graph).
 *
 * Those functions recurse on the C stack once per level of nesting and have
 * no cycle check, so a deep or self-containing value (a List appended to
 * itself) would overflow the stack and kill the process. This walks the same
 * edges iteratively first (sequence items, map keys and values, reflected
 * object fields), and raises ValueError for a cycle, or RecursionError when
 * the nesting would not fit in the stack this thread has left, given the
 * caller's estimate of stack bytes per level.
 *
 *   _graph_check(value, bytes_per_level, skip_seq_ignored) -> value to pass on
 *   _graph_call(fn, bytes_per_level, skip_seq_ignored, checked, *args)
 *                                  -> fn(*args), the arguments in bit mask `checked`
 *                                     checked in the same step (no other thread between)
 *   _depth_limit(bytes_per_level) -> levels of nesting the calling thread's
 *                                     stack has room for
 *
 * Heights are memoised per object, so a DAG costs one visit per node. The
 * walk holds the GIL and runs no Python code, so the graph cannot change
 * under it; children are kept as borrowed pointers (their parents own them).
 */
#include "core.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define IN_PROGRESS (-1)
/* Values of up to this many object visits are walked as trees, without a
 * table (a DAG counts a shared node once per path to it; past the budget, or
 * on a cycle, the memoised walk decides). */
#define TREE_BUDGET (1 << 16)

/* ---- pointer -> height table (open addressing, linear probing) ------------ */
typedef struct {
  TVMFFIObject* key;
  int64_t height; /* IN_PROGRESS while the object is on the DFS path */
} Slot;

typedef struct {
  Slot* slots;
  size_t cap; /* a power of two */
  size_t used;
  Slot inline_slots[64];
} Table;

static size_t ptr_hash(const TVMFFIObject* p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x;
}

static void table_init(Table* t) {
  memset(t->inline_slots, 0, sizeof t->inline_slots);
  t->slots = t->inline_slots;
  t->cap = 64;
  t->used = 0;
}

static void table_free(Table* t) {
  if (t->slots != t->inline_slots) PyMem_Free(t->slots);
}

static Slot* table_find(Table* t, const TVMFFIObject* key) {
  size_t mask = t->cap - 1;
  for (size_t i = ptr_hash(key) & mask;; i = (i + 1) & mask) {
    if (t->slots[i].key == key || t->slots[i].key == NULL) return &t->slots[i];
  }
}

static int table_grow(Table* t) {
  size_t cap = t->cap * 2;
  Slot* fresh = PyMem_Calloc(cap, sizeof(Slot));
  if (fresh == NULL) {
    PyErr_NoMemory();
    return -1;
  }
  Slot* old = t->slots;
  size_t old_cap = t->cap;
  t->slots = fresh;
  t->cap = cap;
  for (size_t i = 0; i < old_cap; ++i) {
    if (old[i].key != NULL) *table_find(t, old[i].key) = old[i];
  }
  if (old != t->inline_slots) PyMem_Free(old);
  return 0;
}

/* The slot of key, inserted (height IN_PROGRESS) if absent; NULL on no memory. */
static Slot* table_insert(Table* t, TVMFFIObject* key, int* inserted) {
  if ((t->used + 1) * 2 > t->cap && table_grow(t) != 0) return NULL;
  Slot* s = table_find(t, key);
  *inserted = s->key == NULL;
  if (*inserted) {
    s->key = key;
    s->height = IN_PROGRESS;
    ++t->used;
  }
  return s;
}

/* ---- growable arrays: children of the nodes on the path, and the path ----- */
typedef struct {
  TVMFFIObject* obj;
  size_t begin, next, end; /* its children are kids[begin, end), next the one to visit */
  int64_t height;          /* 1 + tallest child seen so far */
} Frame;

#define WALK_INLINE 32
typedef struct {
  TVMFFIObject** kids;
  size_t nkids, kids_cap;
  Frame* path;
  size_t depth, path_cap;
  int skip_seq_ignored;
  int all_immutable; /* every node pushed so far is an immutable container or leaf */
  int64_t tallest;   /* the deepest path pushed so far, in nodes */
  /* Small values fit these: no allocation on the common path. */
  TVMFFIObject* kids_inline[WALK_INLINE];
  Frame path_inline[WALK_INLINE];
} Walk;

static void walk_init(Walk* w, int skip_ignored) {
  w->kids = w->kids_inline;
  w->path = w->path_inline;
  w->kids_cap = w->path_cap = WALK_INLINE;
  w->nkids = w->depth = 0;
  w->skip_seq_ignored = skip_ignored;
  w->all_immutable = 1;
  w->tallest = 0;
}

static void walk_free(Walk* w) {
  if (w->kids != w->kids_inline) PyMem_Free(w->kids);
  if (w->path != w->path_inline) PyMem_Free(w->path);
}

/* Room for need elements in *buf (inline_buf, or the heap once it outgrows it). */
static int grow(void** buf, void* inline_buf, size_t* cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t cap2 = *cap * 2;
  while (cap2 < need) cap2 *= 2;
  void* fresh = PyMem_Malloc(cap2 * elem);
  if (fresh == NULL) {
    PyErr_NoMemory();
    return -1;
  }
  memcpy(fresh, *buf, *cap * elem);
  if (*buf != inline_buf) PyMem_Free(*buf);
  *buf = fresh;
  *cap = cap2;
  return 0;
}

/* Records an object child. */
static int add_object_child(Walk* w, TVMFFIObject* child) {
  if (grow((void**)&w->kids, w->kids_inline, &w->kids_cap, w->nkids + 1, sizeof(TVMFFIObject*))) {
    return -1;
  }
  w->kids[w->nkids++] = child;
  return 0;
}

/* Records a value's object (other values have no children to recurse into). */
static int add_child(Walk* w, const TVMFFIAny* v) {
  if (v->type_index < kTVMFFIStaticObjectBegin || v->v_obj == NULL) return 0;
  return add_object_child(w, v->v_obj);
}

static int add_seq_children(Walk* w, TVMFFIObject* obj) {
  TVMFFISeqCell* c = (TVMFFISeqCell*)tvmffi_cell(obj);
  const TVMFFIAny* items = (const TVMFFIAny*)c->data;
  for (int64_t i = 0; i < c->size; ++i) {
    if (add_child(w, &items[i]) != 0) return -1;
  }
  return 0;
}

static int call_step(TVMFFIObjectHandle functor, int64_t cmd, TVMFFIAny* out) {
  TVMFFIAny arg = {.type_index = kTVMFFIInt, .v_int64 = cmd};
  out->type_index = kTVMFFINone;
  out->zero_padding = 0;
  out->v_int64 = 0;
  if (TVMFFIFunctionCall(functor, &arg, 1, out) != 0) {
    tvmffi_raise_ffi_error();
    return -1;
  }
  return 0;
}

/* Keys and values of a Map/Dict, through the runtime's iterator functor
 * (functor(0) key, functor(1) value, functor(2) advance; the first call of
 * the size function tells whether there is anything to iterate). Three FFI
 * calls per entry: the fallback when the layout below cannot be read. */
static int add_map_children_by_functor(Walk* w, TVMFFIObject* obj, int is_dict) {
  TVMFFIAny arg = {.type_index = obj->type_index, .v_obj = obj};
  TVMFFIAny size, functor;
  const char* size_name = is_dict ? "ffi.DictSize" : "ffi.MapSize";
  const char* iter_name = is_dict ? "ffi.DictForwardIterFunctor" : "ffi.MapForwardIterFunctor";
  /* Runtime builtins: looked up once, kept for the process (as function.c does). */
  static TVMFFIObjectHandle map_size, dict_size, map_iter, dict_iter;
  if (tvmffi_call_global_any(size_name, is_dict ? &dict_size : &map_size, &arg, 1, &size) != 0) {
    return -1;
  }
  int64_t n = size.type_index == kTVMFFIInt ? size.v_int64 : 0;
  tvmffi_any_release(&size);
  if (n <= 0) return 0;
  TVMFFIObjectHandle* cache = is_dict ? &dict_iter : &map_iter;
  if (tvmffi_call_global_any(iter_name, cache, &arg, 1, &functor) != 0) return -1;
  int rc = functor.type_index == kTVMFFIFunction ? 0 : -1;
  if (rc != 0) PyErr_SetString(PyExc_TypeError, "map iterator is not a function");
  for (int64_t i = 0; i < n && rc == 0; ++i) {
    TVMFFIAny item;
    for (int64_t cmd = 0; cmd < 2 && rc == 0; ++cmd) {
      rc = call_step(functor.v_obj, cmd, &item);
      if (rc == 0) {
        rc = add_child(w, &item); /* the map keeps it alive: a borrowed pointer */
        tvmffi_any_release(&item);
      }
    }
    if (rc == 0 && i + 1 < n) {
      rc = call_step(functor.v_obj, 2, &item);
      if (rc == 0) tvmffi_any_release(&item);
    }
  }
  tvmffi_any_release(&functor);
  return rc;
}

/* ---- Map/Dict entries read in place ----------------------------------------
 * The runtime's containers are header-only C++ (container/map_base.h), so
 * their layout is compiled into every library sharing the runtime: the
 * members after the object header, a small layout (the top bit of `slots`:
 * `size` key/value pairs at `data`) and a dense one (blocks of 16 metadata
 * bytes, then 16 items of key, value and two list links; 0xFF marks an empty
 * slot, 0xFE a protected one). Reading it in place costs nothing per entry,
 * where the iterator functor costs three FFI calls. The layout is checked
 * once against maps the runtime builds (tvmffi_map_layout_ok), and every read
 * against the entry count, so another runtime build falls back to the
 * functor instead of misreading. */
typedef struct {
  void* data;
  uint64_t size;
  uint64_t slots;
  void (*data_deleter)(void*);
} MapCell;

typedef struct {
  TVMFFIAny key, value;
  uint64_t prev, next;
} DenseItem;

#define MAP_SMALL_TAG ((uint64_t)1 << 63)
#define MAP_BLOCK_CAP 16
#define MAP_SLOT_PROTECTED 0xFE /* and 0xFF: empty; both hold no entry */

/* Calls fn on each entry; the number of entries seen, or -1 when fn failed. */
int64_t tvmffi_map_layout_each(const TVMFFIObject* obj, TVMFFIMapEntryFn fn, void* ctx) {
  const MapCell* m = tvmffi_cell((TVMFFIObjectHandle)obj);
  int64_t seen = 0;
  if (m->slots & MAP_SMALL_TAG) {
    const TVMFFIAny* kv = m->data;
    for (uint64_t i = 0; i < m->size; ++i, ++seen) {
      if (fn(ctx, &kv[2 * i], &kv[2 * i + 1]) != 0) return -1;
    }
    return seen;
  }
  uint64_t nblocks = (m->slots + MAP_BLOCK_CAP - 1) / MAP_BLOCK_CAP;
  const uint8_t* block = m->data;
  for (uint64_t b = 0; b < nblocks; ++b, block += MAP_BLOCK_CAP * (1 + sizeof(DenseItem))) {
    const DenseItem* items = (const DenseItem*)(block + MAP_BLOCK_CAP);
    for (int j = 0; j < MAP_BLOCK_CAP; ++j) {
      if (block[j] >= MAP_SLOT_PROTECTED) continue;
      if (fn(ctx, &items[j].key, &items[j].value) != 0) return -1;
      ++seen;
    }
  }
  return seen;
}

/* ---- the one-time layout check -------------------------------------------- */
typedef struct {
  int64_t n; /* entries expected: "graph-guard-%04d" -> its number */
  int64_t matched;
} LayoutProbe;

static int probe_entry(void* ctx, const TVMFFIAny* key, const TVMFFIAny* value) {
  LayoutProbe* p = ctx;
  if (key->type_index != kTVMFFIStr || value->type_index != kTVMFFIInt) return 0;
  const TVMFFIByteArray* s = tvmffi_cell(key->v_obj);
  char want[32];
  int len = snprintf(want, sizeof want, "graph-guard-%04lld", (long long)value->v_int64);
  if (value->v_int64 >= 0 && value->v_int64 < p->n && s->size == (size_t)len &&
      memcmp(s->data, want, (size_t)len) == 0) {
    ++p->matched;
  }
  return 0;
}

/* 1 if a map of n entries built by the runtime reads back exactly (and in the
 * small layout iff small), 0 if not, -1 on error. */
static int probe_layout(int64_t n, int small) {
  PyObject* dict = PyDict_New();
  for (int64_t i = 0; dict != NULL && i < n; ++i) {
    PyObject* k = PyUnicode_FromFormat("graph-guard-%04d", (int)i);
    PyObject* v = PyLong_FromLongLong(i);
    int rc = k != NULL && v != NULL ? PyDict_SetItem(dict, k, v) : -1;
    Py_XDECREF(k);
    Py_XDECREF(v);
    if (rc != 0) Py_CLEAR(dict);
  }
  TVMFFIAny map;
  if (dict == NULL || tvmffi_py_to_owned_any(dict, &map) != 0) {
    Py_XDECREF(dict);
    return -1;
  }
  Py_DECREF(dict);
  int ok = 0;
  if (map.type_index == kTVMFFIMap) {
    const MapCell* m = tvmffi_cell(map.v_obj);
    LayoutProbe p = {n, 0};
    ok = ((m->slots & MAP_SMALL_TAG) != 0) == small && m->size == (uint64_t)n &&
         tvmffi_map_layout_each(map.v_obj, probe_entry, &p) == n && p.matched == n;
  }
  tvmffi_any_release(&map);
  return ok;
}

/* Whether Map/Dict entries can be read in place: asked once per process. */
int tvmffi_map_layout_ok(void) {
  static int known = -1;
  if (known < 0) {
    int small = probe_layout(2, 1);
    int dense = small == 1 ? probe_layout(40, 0) : small;
    if (small < 0 || dense < 0) {
      PyErr_Clear(); /* unsure: keep to the functor, and ask again next time */
      return 0;
    }
    known = small && dense;
  }
  return known;
}

static int add_entry_children(void* ctx, const TVMFFIAny* key, const TVMFFIAny* value) {
  Walk* w = ctx; /* the map keeps both alive: borrowed pointers */
  return add_child(w, key) != 0 || add_child(w, value) != 0 ? -1 : 0;
}

static int add_map_children(Walk* w, TVMFFIObject* obj, int is_dict) {
  if (tvmffi_map_layout_ok()) {
    size_t begin = w->nkids;
    int64_t seen = tvmffi_map_layout_each(obj, add_entry_children, w);
    if (seen < 0) return -1;
    if ((uint64_t)seen == ((const MapCell*)tvmffi_cell(obj))->size) return 0;
    w->nkids = begin; /* a layout this check does not know: ask the runtime */
  }
  return add_map_children_by_functor(w, obj, is_dict);
}

/* ---- reflected fields: a plan per type ---------------------------------------
 * The fields that may hold an object (all but POD fields), inherited ones
 * first, as a list per type index, built on first use. Each is read through
 * its getter (an indirect call, a reference taken and dropped) until one read
 * shows where the field keeps its object: when the word at the field's offset
 * is the very object the getter returned, the field is an object reference
 * (ObjectRef, Optional<ObjectRef>, Array<T>: one pointer, NULL for None), and
 * later visits read that word in place. A field kept another way (Any, String,
 * a std::vector the getter turns into a new Array) never matches and keeps
 * its getter. The C++ layout of a field is the same in every object of a
 * type, so one match decides it. */
enum { FIELD_UNKNOWN, FIELD_POINTER, FIELD_GETTER };

typedef struct {
  TVMFFIFieldGetter getter;
  int64_t offset;
  int ignored; /* SEqHashIgnore: left out when the walk skips those */
  int how;     /* FIELD_* */
} FieldPlan;

typedef struct {
  int32_t built_fields; /* fields of the type and its ancestors when built; -1: no plan */
  int32_t n;
  FieldPlan* fields;
} TypePlan;

static TypePlan* g_plans;
static int32_t g_plans_cap;

static int32_t field_count(const TVMFFITypeInfo* info) {
  int32_t n = info->num_fields;
  for (int32_t d = 0; d < info->type_depth; ++d) n += info->type_ancestors[d]->num_fields;
  return n;
}

static void plan_add_fields(TypePlan* plan, const TVMFFITypeInfo* info) {
  for (int32_t i = 0; i < info->num_fields; ++i) {
    const TVMFFIFieldInfo* f = &info->fields[i];
    int32_t st = f->field_static_type_index;
    if ((st >= 0 && st < kTVMFFIStaticObjectBegin) || f->getter == NULL) continue; /* POD */
    plan->fields[plan->n++] = (FieldPlan){f->getter, f->offset,
                                          (f->flags & kTVMFFIFieldFlagBitMaskSEqHashIgnore) != 0,
                                          f->offset % (int64_t)sizeof(void*) == 0 ? FIELD_UNKNOWN
                                                                                 : FIELD_GETTER};
  }
}

/* The plan of type `ti` (info its type info), (re)built when its field count moved. */
static TypePlan* type_plan(int32_t ti, const TVMFFITypeInfo* info) {
  if (ti >= g_plans_cap) {
    int32_t cap = g_plans_cap ? g_plans_cap : 256;
    while (cap <= ti) cap *= 2;
    TypePlan* grown = PyMem_Realloc(g_plans, (size_t)cap * sizeof(TypePlan));
    if (grown == NULL) return (TypePlan*)PyErr_NoMemory();
    for (int32_t i = g_plans_cap; i < cap; ++i) grown[i] = (TypePlan){-1, 0, NULL};
    g_plans = grown;
    g_plans_cap = cap;
  }
  TypePlan* plan = &g_plans[ti];
  int32_t count = field_count(info);
  if (plan->built_fields == count) return plan;
  FieldPlan* fields = PyMem_Malloc((size_t)(count > 0 ? count : 1) * sizeof(FieldPlan));
  if (fields == NULL) return (TypePlan*)PyErr_NoMemory();
  PyMem_Free(plan->fields);
  *plan = (TypePlan){count, 0, fields};
  for (int32_t d = 0; d < info->type_depth; ++d) plan_add_fields(plan, info->type_ancestors[d]);
  plan_add_fields(plan, info);
  return plan;
}

/* One field's object, through its getter; learns the field's layout. */
static int add_field_by_getter(Walk* w, TVMFFIObject* obj, FieldPlan* f) {
  TVMFFIAny v = {.type_index = kTVMFFINone};
  void* field = (char*)obj + f->offset;
  if (f->getter(field, &v) != 0) {
    tvmffi_raise_ffi_error();
    return -1;
  }
  if (f->how == FIELD_UNKNOWN && v.type_index >= kTVMFFIStaticObjectBegin && v.v_obj != NULL) {
    f->how = *(TVMFFIObject* const*)field == v.v_obj ? FIELD_POINTER : FIELD_GETTER;
  }
  int rc = add_child(w, &v); /* the field keeps it alive: a borrowed pointer */
  tvmffi_any_release(&v);
  return rc;
}

static int add_field_children(Walk* w, TVMFFIObject* obj, const TVMFFITypeInfo* info) {
  TypePlan* plan = type_plan(obj->type_index, info);
  if (plan == NULL) return -1;
  for (int32_t i = 0; i < plan->n; ++i) {
    FieldPlan* f = &plan->fields[i];
    if (w->skip_seq_ignored && f->ignored) continue;
    if (f->how == FIELD_POINTER) {
      TVMFFIObject* child = *(TVMFFIObject* const*)((const char*)obj + f->offset);
      if (child != NULL && add_object_child(w, child) != 0) return -1;
    } else if (add_field_by_getter(w, obj, f) != 0) {
      return -1;
    }
  }
  return 0;
}

static int add_children(Walk* w, TVMFFIObject* obj) {
  int32_t ti = obj->type_index;
  if (ti == kTVMFFIArray || ti == kTVMFFIList) return add_seq_children(w, obj);
  if (ti == kTVMFFIMap || ti == kTVMFFIDict) return add_map_children(w, obj, ti == kTVMFFIDict);
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(ti);
  return info == NULL ? 0 : add_field_children(w, obj, info);
}

static int push(Walk* w, Table* t, TVMFFIObject* obj) {
  int inserted;
  if (t != NULL && table_insert(t, obj, &inserted) == NULL) return -1;
  if (grow((void**)&w->path, w->path_inline, &w->path_cap, w->depth + 1, sizeof(Frame))) return -1;
  size_t begin = w->nkids;
  if (add_children(w, obj) != 0) return -1;
  w->path[w->depth++] = (Frame){obj, begin, begin, w->nkids, 1};
  if (!tvmffi_graph_immutable(obj->type_index)) w->all_immutable = 0;
  if ((int64_t)w->depth > w->tallest) w->tallest = (int64_t)w->depth;
  return 0;
}

static int cycle_error(const TVMFFIObject* obj) {
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(obj->type_index);
  PyObject* key = info ? tvmffi_bytearray_to_str(&info->type_key) : PyUnicode_FromString("object");
  if (key == NULL) return -1;
  PyErr_Format(PyExc_ValueError,
               "Cycle detected: a %U contains itself, so it cannot be traversed structurally", key);
  Py_DECREF(key);
  return -1;
}

static int depth_error(int64_t limit) {
  PyErr_Format(PyExc_RecursionError,
               "value nested more than %lld levels deep: too deep for a structural traversal "
               "on this thread's stack",
               (long long)limit);
  return -1;
}

/* The fast path for small values: walk root as a tree (no table), at most
 * budget nodes. 1: it fits (every path within limit); 0: undecided (too
 * many nodes, too deep, or a cycle: graph_height tells which); -1: error. */
static int tree_fits(Walk* w, TVMFFIObject* root, int64_t limit, int64_t budget) {
  if (push(w, NULL, root) != 0) return -1;
  while (w->depth > 0) {
    Frame* top = &w->path[w->depth - 1];
    if (top->next == top->end) {
      w->nkids = top->begin;
      --w->depth;
      continue;
    }
    TVMFFIObject* child = w->kids[top->next++];
    if ((int64_t)w->depth >= limit || --budget <= 0) return 0;
    if (push(w, NULL, child) != 0) return -1;
  }
  return 1;
}

/* Height of the graph below root (1 for a childless object), or -1 with an
 * exception: ValueError for a cycle, RecursionError once it exceeds limit. */
static int64_t graph_height(Walk* w, TVMFFIObject* root, int64_t limit) {
  Table t;
  table_init(&t);
  int64_t result = -1;
  if (push(w, &t, root) != 0) goto done;
  while (w->depth > 0) {
    Frame* top = &w->path[w->depth - 1];
    if (top->next == top->end) { /* all children done: the node's height is final */
      int64_t h = top->height;
      table_find(&t, top->obj)->height = h;
      w->nkids = top->begin; /* its children are the last ones recorded: drop them */
      --w->depth;
      if (h > limit) { /* reached through a shared node: taller than the path */
        depth_error(limit);
        goto done;
      }
      if (w->depth == 0) {
        result = h;
      } else if (h + 1 > w->path[w->depth - 1].height) {
        w->path[w->depth - 1].height = h + 1;
      }
      continue;
    }
    TVMFFIObject* child = w->kids[top->next++];
    Slot* s = table_find(&t, child);
    if (s->key == child) {
      if (s->height == IN_PROGRESS) {
        cycle_error(child);
        goto done;
      }
      if (s->height + 1 > top->height) top->height = s->height + 1;
      continue;
    }
    if ((int64_t)w->depth >= limit) {
      depth_error(limit);
      goto done;
    }
    if (push(w, &t, child) != 0) goto done;
  }
done:
  table_free(&t);
  return result;
}

/* The most levels a traversal needing bytes_per_level may nest here. */
int64_t tvmffi_graph_limit(long long bytes_per_level) {
  int64_t usable = tvmffi_stack_usable(); /* stack.c */
  return usable > 0 ? usable / bytes_per_level : 0;
}

uint64_t tvmffi_graph_epoch;

static PyObject* py_graph_epoch(PyObject* m, PyObject* unused) {
  (void)m;
  (void)unused;
  return PyLong_FromUnsignedLongLong(__atomic_load_n(&tvmffi_graph_epoch, __ATOMIC_RELAXED));
}

/* _graph_height(obj): the height recorded in obj's wrapper, 0 when not known. */
static PyObject* py_graph_height(PyObject* m, PyObject* obj) {
  (void)m;
  if (!tvmffi_is_object(obj)) {
    PyErr_SetString(PyExc_TypeError, "_graph_height(obj): obj must be an Object");
    return NULL;
  }
  return PyLong_FromLongLong(((TVMFFIPyObject*)obj)->graph_height);
}

static PyObject* py_depth_limit(PyObject* m, PyObject* arg) {
  (void)m;
  long long per_level = PyLong_AsLongLong(arg);
  if (per_level <= 0) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "bytes_per_level must be > 0");
    return NULL;
  }
  return PyLong_FromLongLong(tvmffi_graph_limit(per_level));
}

static int is_plain_scalar(PyObject* v) {
  return v == Py_None || PyBool_Check(v) || PyLong_CheckExact(v) || PyFloat_CheckExact(v) ||
         PyUnicode_CheckExact(v) || PyBytes_CheckExact(v);
}

/* Checks the graph below obj; on success *immutable_height is its height if
 * every node is immutable (tvmffi_graph_immutable), else 0. */
static int check_handle(TVMFFIObject* obj, int64_t limit, int skip_ignored,
                        int64_t* immutable_height) {
  Walk w;
  walk_init(&w, skip_ignored);
  int64_t height = 0;
  int rc = tree_fits(&w, obj, limit, TREE_BUDGET);
  if (rc == 1) {
    height = w.tallest;
  } else if (rc == 0) {
    w.nkids = w.depth = 0;
    height = graph_height(&w, obj, limit);
    rc = height < 0 ? -1 : 1;
  }
  *immutable_height = rc == 1 && w.all_immutable ? height : 0;
  walk_free(&w);
  return rc < 0 ? -1 : 0;
}

/* check_handle for an object's own handle, remembering an immutable graph's
 * height in the object, so that checking it again is one comparison. */
int tvmffi_graph_check_object(PyObject* obj, int64_t limit, int skip_ignored) {
  TVMFFIPyObject* self = (TVMFFIPyObject*)obj;
  TVMFFIObjectHandle h = tvmffi_object_handle(obj);
  if (h == NULL) return -1;
  if (self->graph_height > 0 && self->graph_height <= limit) return 0;
  int64_t height;
  int rc;
  /* Without a GIL: the lock every change of a List or Dict takes too (and
   * that guards g_plans), so the graph holds still while it is walked. */
  TVMFFI_BEGIN_RUNTIME(NULL);
  rc = check_handle(h, limit, skip_ignored, &height);
  TVMFFI_END_RUNTIME();
  if (rc != 0) return -1;
  self->graph_height = height;
  return 0;
}

/* The value to pass to the runtime in value's place, before its check: objects
 * and obj._move() references as they are, lists, dicts and other convertible
 * values converted once (this may run Python code: __tvm_ffi_value__, __index__).
 * New reference, or NULL with the error set. */
PyObject* tvmffi_graph_converted(PyObject* value) {
  if (is_plain_scalar(value) || Py_IS_TYPE(value, &TVMFFIRValueRefType) ||
      tvmffi_is_object(value)) {
    return Py_NewRef(value);
  }
  return tvmffi_convert(value); /* a container built from Python comes measured */
}

/* Check a tvmffi_graph_converted value (runs no Python code): 0, or -1 with ValueError for a
 * cycle / RecursionError for too deep. */
int tvmffi_graph_check(PyObject* value, int64_t limit, int skip) {
  if (Py_IS_TYPE(value, &TVMFFIRValueRefType)) { /* obj._move(): check obj, keep the move */
    PyObject* target = PyObject_GetAttrString(value, "obj");
    if (target == NULL) return -1;
    int rc = tvmffi_is_object(target) ? tvmffi_graph_check_object(target, limit, skip) : 0;
    Py_DECREF(target);
    return rc;
  }
  return tvmffi_is_object(value) ? tvmffi_graph_check_object(value, limit, skip) : 0;
}

static PyObject* checked_value(PyObject* value, long long per_level, int skip) {
  PyObject* v = tvmffi_graph_converted(value);
  if (v != NULL && tvmffi_graph_check(v, tvmffi_graph_limit(per_level), skip) != 0) Py_CLEAR(v);
  return v;
}

static int guard_args(PyObject* per_level_obj, PyObject* skip_obj, long long* per_level,
                      int* skip, const char* usage) {
  if ((*per_level = PyLong_AsLongLong(per_level_obj)) <= 0) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, usage);
    return -1;
  }
  *skip = PyObject_IsTrue(skip_obj);
  return *skip < 0 ? -1 : 0;
}

/* _graph_check(value, bytes_per_level, skip_seq_ignored): checked_value. */
static PyObject* py_graph_check(PyObject* m, PyObject* const* args, Py_ssize_t nargs) {
  (void)m;
  static const char usage[] = "_graph_check(value, bytes_per_level > 0, skip_ignored)";
  long long per_level;
  int skip;
  if (nargs != 3) {
    PyErr_SetString(PyExc_TypeError, usage);
    return NULL;
  }
  if (guard_args(args[1], args[2], &per_level, &skip, usage) != 0) return NULL;
  return checked_value(args[0], per_level, skip);
}

/* _graph_call(fn, bytes_per_level, skip_seq_ignored, checked, *args): fn(*args), each
 * argument i with bit i set in `checked` passed as tvmffi_graph_converted gives it. Checking and calling
 * are one step for other Python threads: between a separate check and the call
 * another thread could make a checked List contain itself (the runtime functions
 * called here keep the GIL, and packing checked values runs no Python code). */
#define GRAPH_CALL_MAX_ARGS 8
static PyObject* py_graph_call(PyObject* m, PyObject* const* args, Py_ssize_t nargs) {
  (void)m;
  static const char usage[] =
      "_graph_call(fn, bytes_per_level > 0, skip_ignored, checked bit mask, *args), at most 8 args";
  long long per_level;
  int skip;
  if (nargs < 4 || nargs - 4 > GRAPH_CALL_MAX_ARGS) {
    PyErr_SetString(PyExc_TypeError, usage);
    return NULL;
  }
  if (guard_args(args[1], args[2], &per_level, &skip, usage) != 0) return NULL;
  Py_ssize_t n = nargs - 4;
  long checked = PyLong_AsLong(args[3]);
  if (checked < 0 || checked >= (1L << n)) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, usage);
    return NULL;
  }
  PyObject* call_args[GRAPH_CALL_MAX_ARGS];
  Py_ssize_t made = 0;
  PyObject* result = NULL;
  /* Conversions first (they may run Python code, so other threads), then the
   * checks and the call with no Python code in between. */
  for (; made < n; ++made) {
    call_args[made] = (checked >> made) & 1 ? tvmffi_graph_converted(args[4 + made])
                                            : Py_NewRef(args[4 + made]);
    if (call_args[made] == NULL) goto done;
  }
  int64_t limit = tvmffi_graph_limit(per_level);
  /* Without a GIL the same step holds the lock every List or Dict change takes. */
  TVMFFI_BEGIN_RUNTIME(NULL);
  Py_ssize_t i = 0;
  while (i < n && !((checked >> i) & 1 && tvmffi_graph_check(call_args[i], limit, skip) != 0)) ++i;
  if (i == n) result = PyObject_Vectorcall(args[0], call_args, (size_t)n, NULL);
  TVMFFI_END_RUNTIME();
done:
  for (Py_ssize_t i = 0; i < made; ++i) Py_DECREF(call_args[i]);
  return result;
}

static PyMethodDef guard_methods[] = {
    {"_graph_check", (PyCFunction)(void (*)(void))py_graph_check, METH_FASTCALL,
     "_graph_check(value, bytes_per_level, skip_seq_ignored): value checked for cycles and "
     "depth before a recursive runtime traversal (ValueError / RecursionError)."},
    {"_graph_call", (PyCFunction)(void (*)(void))py_graph_call, METH_FASTCALL,
     "_graph_call(fn, bytes_per_level, skip_seq_ignored, checked, *args): fn(*args), the "
     "arguments in bit mask `checked` checked as by _graph_check in the same step."},
    {"_graph_epoch", py_graph_epoch, METH_NOARGS,
     "_graph_epoch(): a counter that moves whenever Python code may have added an edge to a "
     "value graph (a field write, a List/Dict insertion)."},
    {"_graph_height", py_graph_height, METH_O,
     "_graph_height(obj): the height of obj's graph as recorded in it (only immutable nodes), "
     "0 when not known."},
    {"_depth_limit", py_depth_limit, METH_O,
     "_depth_limit(bytes_per_level): levels of nesting this thread's stack has room for."},
    {NULL, NULL, 0, NULL},
};

int tvmffi_graph_guard_init(PyObject* module) {
  return PyModule_AddFunctions(module, guard_methods);
}
