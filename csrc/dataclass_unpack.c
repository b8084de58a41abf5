/*
 * Dataclass values to tuples (tvmffi.utils.unpack_dataclass_to_tuple and the
 * map_dataclass_to_tuple parameters of kwargs_binder.c).
 *
 * A dataclass instance becomes the tuple of its field values, lists and
 * tuples are rebuilt element by element (keeping their type: a namedtuple is
 * made again with its fields, a subclass from the rebuilt items), dicts are
 * rebuilt on their values (as plain dicts), and every other value is passed
 * through as it is.
 *
 * What a type needs is decided once per type and kept in a plan: for a
 * dataclass, its field names and, per field, whether the value is passed
 * through (a field annotated with a leaf type: int, str, ...) or looked at by
 * its type at run time. The Python side (unpack_dataclass.py) reads the
 * annotations; this file only executes plans. Plans are found through a
 * small direct-mapped table keyed by the type's version tag, which CPython
 * never reuses and changes whenever the class is modified, so an entry can
 * neither go stale nor answer for another type that took a freed one's
 * address.
 */
#include "core.h"

#include <string.h>

enum {
  PLAN_LEAF,       /* passed through */
  PLAN_DATACLASS,  /* the tuple of its fields */
  PLAN_LIST_SUB,   /* a list subclass: type(x)(rebuilt list) */
  PLAN_TUPLE_SUB,  /* a tuple subclass: type(x)(rebuilt tuple) */
  PLAN_NAMEDTUPLE, /* type(x)(*rebuilt items) */
  PLAN_DICT_SUB,   /* a dict subclass: a plain dict of rebuilt values */
};

/* A type's plan; for a dataclass, names[i] and dynamic[i] per field
 * (dynamic: the value is looked at by type; else passed through). */
typedef struct {
  PyObject_VAR_HEAD
  int kind;
  PyObject* names; /* tuple of str, or NULL */
  unsigned char dynamic[1];
} UnpackPlan;

static void plan_dealloc(PyObject* op) {
  Py_XDECREF(((UnpackPlan*)op)->names);
  Py_TYPE(op)->tp_free(op);
}

static PyTypeObject UnpackPlanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.core.UnpackPlan",
    .tp_basicsize = offsetof(UnpackPlan, dynamic),
    .tp_itemsize = 1,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "How values of one type are unpacked (internal).",
    .tp_dealloc = plan_dealloc,
};

static UnpackPlan* plan_new(int kind, Py_ssize_t nfields) {
  UnpackPlan* p = PyObject_NewVar(UnpackPlan, &UnpackPlanType, nfields);
  if (p == NULL) return NULL;
  p->kind = kind;
  p->names = NULL;
  if (nfields > 0) memset(p->dynamic, 0, (size_t)nfields);
  return p;
}

/* ---- the plan table ---------------------------------------------------------- */
#define PLAN_SLOTS 256 /* a power of two */

static struct {
  unsigned int tag;
  UnpackPlan* plan; /* owned */
} g_plans[PLAN_SLOTS];
static TVMFFIMutex g_plans_lock; /* held for lookups and stores only, never over Python code */

static inline unsigned int slot_of(unsigned int tag) {
  return (tag * 2654435761u) >> (32 - 8);
}

/* The cached plan for tag (a new reference), or NULL. */
static UnpackPlan* plan_lookup(unsigned int tag) {
  UnpackPlan* plan = NULL;
  unsigned int s = slot_of(tag);
  TVMFFI_LOCK(&g_plans_lock);
  if (g_plans[s].tag == tag && g_plans[s].plan != NULL) {
    plan = g_plans[s].plan;
    Py_INCREF(plan);
  }
  TVMFFI_UNLOCK(&g_plans_lock);
  return plan;
}

static void plan_store(unsigned int tag, UnpackPlan* plan) {
  unsigned int s = slot_of(tag);
  TVMFFI_LOCK(&g_plans_lock);
  UnpackPlan* old = g_plans[s].plan;
  Py_INCREF(plan);
  g_plans[s].plan = plan;
  g_plans[s].tag = tag;
  TVMFFI_UNLOCK(&g_plans_lock);
  Py_XDECREF(old); /* a plan runs no Python code when freed */
}

/* tvmffi.utils.unpack_dataclass._dataclass_plan(cls) -> tuple of (name, dynamic)
 * pairs, or None when cls is not a dataclass. */
static PyObject* g_plan_helper;
static PyObject* g_str_fields; /* "_fields" */

static UnpackPlan* dataclass_plan(PyObject* fields) {
  Py_ssize_t n = PyTuple_GET_SIZE(fields);
  UnpackPlan* plan = plan_new(PLAN_DATACLASS, n);
  if (plan == NULL) return NULL;
  plan->names = PyTuple_New(n);
  if (plan->names == NULL) goto fail;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* entry = PyTuple_GET_ITEM(fields, i);
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 2 ||
        !PyUnicode_Check(PyTuple_GET_ITEM(entry, 0))) {
      PyErr_SetString(PyExc_TypeError, "dataclass plan entries must be (name, dynamic) pairs");
      goto fail;
    }
    PyObject* name = Py_NewRef(PyTuple_GET_ITEM(entry, 0));
    PyUnicode_InternInPlace(&name);
    PyTuple_SET_ITEM(plan->names, i, name);
    int dyn = PyObject_IsTrue(PyTuple_GET_ITEM(entry, 1));
    if (dyn < 0) goto fail;
    plan->dynamic[i] = (unsigned char)dyn;
  }
  return plan;
fail:
  Py_DECREF(plan);
  return NULL;
}

/* The plan of a type not seen before (runs Python code for a dataclass). */
static UnpackPlan* plan_build(PyTypeObject* tp) {
  PyObject* helper =
      tvmffi_import_once(&g_plan_helper, "tvmffi.utils.unpack_dataclass", "_dataclass_plan");
  if (helper == NULL) return NULL;
  PyObject* fields = PyObject_CallOneArg(helper, (PyObject*)tp);
  if (fields == NULL) return NULL;
  if (fields != Py_None) {
    UnpackPlan* plan = PyTuple_Check(fields) ? dataclass_plan(fields) : NULL;
    if (plan == NULL && !PyErr_Occurred()) {
      PyErr_SetString(PyExc_TypeError, "_dataclass_plan must return a tuple or None");
    }
    Py_DECREF(fields);
    return plan;
  }
  Py_DECREF(fields);
  int kind = PLAN_LEAF;
  if (PyType_IsSubtype(tp, &PyList_Type)) {
    kind = PLAN_LIST_SUB;
  } else if (PyType_IsSubtype(tp, &PyDict_Type)) {
    kind = PLAN_DICT_SUB;
  } else if (PyType_IsSubtype(tp, &PyTuple_Type)) {
    kind = PyObject_HasAttr((PyObject*)tp, g_str_fields) ? PLAN_NAMEDTUPLE : PLAN_TUPLE_SUB;
  }
  return plan_new(kind, 0);
}

static UnpackPlan* plan_of(PyTypeObject* tp) {
  unsigned int tag = tvmffi_type_version_tag(tp);
  UnpackPlan* plan = tag != 0 ? plan_lookup(tag) : NULL;
  if (plan != NULL) return plan;
  plan = plan_build(tp);
  /* The tag is read again: building ran Python code, which may have changed
   * the class (a new tag), and the plan is then that of the old one. */
  if (plan != NULL && tag != 0 && tvmffi_type_version_tag(tp) == tag) plan_store(tag, plan);
  return plan;
}

/* ---- unpacking ------------------------------------------------------------------- */
static PyObject* unpack_value(PyObject* v);

static inline int is_leaf_type(PyTypeObject* tp) {
  return tp == &PyLong_Type || tp == &PyFloat_Type || tp == &PyUnicode_Type ||
         tp == &PyBool_Type || tp == Py_TYPE(Py_None) || tp == &PyBytes_Type ||
         tp == &PyComplex_Type;
}

static PyObject* unpack_fields(PyObject* v, UnpackPlan* plan) {
  Py_ssize_t n = PyTuple_GET_SIZE(plan->names);
  PyObject* out = PyTuple_New(n);
  if (out == NULL) return NULL;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PyObject_GetAttr(v, PyTuple_GET_ITEM(plan->names, i));
    if (item != NULL && plan->dynamic[i]) {
      PyObject* inner = unpack_value(item);
      Py_DECREF(item);
      item = inner;
    }
    if (item == NULL) {
      Py_DECREF(out);
      return NULL;
    }
    PyTuple_SET_ITEM(out, i, item);
  }
  return out;
}

/* A private copy of the list (a snapshot another thread cannot change), its
 * items replaced in place. */
static PyObject* unpack_list(PyObject* v) {
  PyObject* out = PyList_GetSlice(v, 0, PY_SSIZE_T_MAX);
  if (out == NULL) return NULL;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(out); ++i) {
    PyObject* item = unpack_value(PyList_GET_ITEM(out, i));
    if (item == NULL) {
      Py_DECREF(out);
      return NULL;
    }
    PyList_SetItem(out, i, item); /* steals; drops the copy's reference */
  }
  return out;
}

static PyObject* unpack_tuple(PyObject* v) {
  Py_ssize_t n = PyTuple_GET_SIZE(v);
  PyObject* out = PyTuple_New(n);
  if (out == NULL) return NULL;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = unpack_value(PyTuple_GET_ITEM(v, i));
    if (item == NULL) {
      Py_DECREF(out);
      return NULL;
    }
    PyTuple_SET_ITEM(out, i, item);
  }
  return out;
}

/* A private plain copy of the dict, its values replaced: setting the value of
 * a key it has keeps PyDict_Next's walk valid, and nobody else sees it. */
static PyObject* unpack_dict(PyObject* v) {
  PyObject* out = PyDict_New();
  if (out == NULL || PyDict_Merge(out, v, 1) < 0) {
    Py_XDECREF(out);
    return NULL;
  }
  Py_ssize_t pos = 0;
  PyObject *key, *value;
  while (PyDict_Next(out, &pos, &key, &value)) {
    PyObject* item = unpack_value(value);
    if (item == NULL || PyDict_SetItem(out, key, item) < 0) {
      Py_XDECREF(item);
      Py_DECREF(out);
      return NULL;
    }
    Py_DECREF(item);
  }
  return out;
}

/* type(v)(*rebuilt) for a namedtuple, type(v)(rebuilt) for another subclass. */
static PyObject* rebuild_as(PyObject* v, PyObject* rebuilt, int spread) {
  if (rebuilt == NULL) return NULL;
  PyObject* res = spread ? PyObject_Call((PyObject*)Py_TYPE(v), rebuilt, NULL)
                         : PyObject_CallOneArg((PyObject*)Py_TYPE(v), rebuilt);
  Py_DECREF(rebuilt);
  return res;
}

static PyObject* unpack_planned(PyObject* v) {
  UnpackPlan* plan = plan_of(Py_TYPE(v));
  if (plan == NULL) return NULL;
  PyObject* res;
  switch (plan->kind) {
    case PLAN_DATACLASS: res = unpack_fields(v, plan); break;
    case PLAN_LIST_SUB: res = rebuild_as(v, unpack_list(v), 0); break;
    case PLAN_TUPLE_SUB: res = rebuild_as(v, unpack_tuple(v), 0); break;
    case PLAN_NAMEDTUPLE: res = rebuild_as(v, unpack_tuple(v), 1); break;
    case PLAN_DICT_SUB: res = unpack_dict(v); break;
    default: res = Py_NewRef(v); break;
  }
  Py_DECREF(plan);
  return res;
}

/* New reference, or NULL with an error (RecursionError for a list holding
 * itself, or nesting deeper than Python's recursion limit). */
static PyObject* unpack_value(PyObject* v) {
  PyTypeObject* tp = Py_TYPE(v);
  if (is_leaf_type(tp)) return Py_NewRef(v);
  if (Py_EnterRecursiveCall(" while unpacking a dataclass value")) return NULL;
  PyObject* res;
  if (tp == &PyList_Type) {
    res = unpack_list(v);
  } else if (tp == &PyTuple_Type) {
    res = unpack_tuple(v);
  } else if (tp == &PyDict_Type) {
    res = unpack_dict(v);
  } else {
    res = unpack_planned(v);
  }
  Py_LeaveRecursiveCall();
  return res;
}

PyObject* tvmffi_unpack_dataclass(PyObject* v) { return unpack_value(v); }

static PyObject* py_unpack_dataclass_to_tuple(PyObject* self, PyObject* v) {
  (void)self;
  return unpack_value(v);
}

static PyMethodDef unpack_methods[] = {
    {"unpack_dataclass_to_tuple", py_unpack_dataclass_to_tuple, METH_O,
     "unpack_dataclass_to_tuple(x): x with every dataclass instance in it made the tuple of "
     "its fields (lists, tuples and dict values rebuilt; other values passed through)."},
    {NULL, NULL, 0, NULL},
};

int tvmffi_dataclass_unpack_init(PyObject* module) {
  if (PyType_Ready(&UnpackPlanType) < 0) return -1;
  g_str_fields = PyUnicode_InternFromString("_fields");
  if (g_str_fields == NULL) return -1;
  return PyModule_AddFunctions(module, unpack_methods);
}
