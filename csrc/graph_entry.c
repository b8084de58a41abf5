/*
 * Native entry points over the runtime's recursive graph functions
 * (structural_equal, structural_hash): one C step binds the Python arguments
 * to the parameters, checks the graph arguments (graph_guard.c) and calls the
 * runtime function with the GIL held (without a GIL: the registries' runtime
 * lock, which every List/Dict change takes too). No other thread can change a
 * checked value before the runtime walks it, and no Python frame, generic call layer
 * or result post-processing in Python sits on the path.
 *
 *   _graph_entry(name, fn, bytes_per_level, skip_seq_ignored, checked, names, defaults, result)
 *       -> f(*args, **kwargs): the parameters `names` (the last len(defaults)
 *          optional), those in bit mask `checked` checked; fn's result as
 *          converted (result 0), as a bool (1), or as an unsigned 64-bit int (2,
 *          the runtime's int64 hash read as the official binding reports it).
 *
 * The object takes attributes (functools.update_wrapper gives it the Python
 * prototype's name, docstring and signature).
 */
#include "core.h"

#include <stddef.h>

#define ENTRY_MAX_PARAMS 8

enum { RESULT_AS_IS = 0, RESULT_BOOL = 1, RESULT_U64 = 2 };

typedef struct {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* name;     /* str, for error messages */
  PyObject* fn;       /* the runtime function: a tvmffi Function */
  long long per_level;
  int skip;
  int result;
  unsigned long checked;
  Py_ssize_t nparams, nrequired;
  PyObject* names;    /* tuple of str */
  PyObject* defaults; /* tuple: values of the last len(defaults) parameters */
  PyObject* dict;     /* __name__, __doc__, __wrapped__, ... */
} GraphEntry;

static PyTypeObject GraphEntryType;

static Py_ssize_t param_index(GraphEntry* e, PyObject* key) {
  for (Py_ssize_t i = 0; i < e->nparams; ++i) {
    if (PyTuple_GET_ITEM(e->names, i) == key) return i; /* interned: the usual case */
  }
  for (Py_ssize_t i = 0; i < e->nparams; ++i) {
    int eq = PyUnicode_Compare(PyTuple_GET_ITEM(e->names, i), key);
    if (eq == 0) return i;
    if (eq == -1 && PyErr_Occurred()) return -2;
  }
  return -1;
}

/* bound[i]: the borrowed value of parameter i, as Python would bind it. */
static int bind(GraphEntry* e, PyObject* const* args, size_t nargsf, PyObject* kwnames,
                PyObject** bound) {
  Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  if (n > e->nparams) {
    PyErr_Format(PyExc_TypeError, "%U() takes at most %zd arguments (%zd given)", e->name,
                 e->nparams, n);
    return -1;
  }
  for (Py_ssize_t i = 0; i < e->nparams; ++i) bound[i] = i < n ? args[i] : NULL;
  Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    Py_ssize_t i = param_index(e, key);
    if (i == -2) return -1;
    if (i < 0 || bound[i] != NULL) {
      PyErr_Format(PyExc_TypeError,
                   i < 0 ? "%U() got an unexpected keyword argument '%U'"
                         : "%U() got multiple values for argument '%U'",
                   e->name, key);
      return -1;
    }
    bound[i] = args[n + k];
  }
  for (Py_ssize_t i = 0; i < e->nparams; ++i) {
    if (bound[i] != NULL) continue;
    if (i < e->nrequired) {
      PyErr_Format(PyExc_TypeError, "%U() missing required argument '%U' (pos %zd)", e->name,
                   PyTuple_GET_ITEM(e->names, i), i + 1);
      return -1;
    }
    bound[i] = PyTuple_GET_ITEM(e->defaults, i - e->nrequired);
  }
  return 0;
}

static PyObject* result_to_py(GraphEntry* e, TVMFFIAny* out, const DLPackExchangeAPI* api) {
  switch (e->result) {
    case RESULT_BOOL:
      if (out->type_index == kTVMFFIBool || out->type_index == kTVMFFIInt) {
        return PyBool_FromLong(out->v_int64 != 0);
      }
      break;
    case RESULT_U64:
      if (out->type_index == kTVMFFIInt) return PyLong_FromUnsignedLongLong((uint64_t)out->v_int64);
      break;
    default:
      return tvmffi_any_to_py_result(out, api);
  }
  tvmffi_any_release(out);
  PyErr_Format(PyExc_TypeError, "%U: the runtime returned an unexpected type index %d", e->name,
               (int)out->type_index);
  return NULL;
}

/* Converts or holds each argument: the graph arguments that are FFI objects
 * (the common case) as they are, marked in *direct; the other graph arguments
 * converted once (this may run Python code). held[0, *made) are new references. */
static int hold(GraphEntry* e, PyObject** bound, PyObject** held, Py_ssize_t* made,
                unsigned long* direct) {
  for (*direct = 0; *made < e->nparams; ++*made) {
    Py_ssize_t i = *made;
    PyObject* v = bound[i];
    if (!((e->checked >> i) & 1)) {
      held[i] = Py_NewRef(v);
    } else if (tvmffi_is_object(v)) {
      held[i] = Py_NewRef(v);
      *direct |= 1UL << i;
    } else if ((held[i] = tvmffi_graph_converted(v)) == NULL) {
      return -1;
    }
  }
  return 0;
}

/* Packs held[i] for the parameters whose bit in `checked` equals `graph`. */
static int pack(GraphEntry* e, PyObject** held, unsigned long direct, TVMFFIAny* packed,
                TempList* temps, int graph) {
  for (Py_ssize_t i = 0; i < e->nparams; ++i) {
    if ((int)((e->checked >> i) & 1) != graph) continue;
    if ((direct >> i) & 1) { /* checked with a handle, which held[i] keeps */
      TVMFFIObjectHandle h = ((TVMFFIPyObject*)held[i])->handle;
      packed[i] = (TVMFFIAny){.type_index = tvmffi_type_index_of(h), .v_obj = h};
    } else if (tvmffi_py_to_any(held[i], &packed[i], temps, i) != 0) {
      return -1;
    }
  }
  return 0;
}

static int check_graphs(GraphEntry* e, PyObject** held, unsigned long direct) {
  int64_t limit = tvmffi_graph_limit(e->per_level);
  for (Py_ssize_t i = 0; i < e->nparams; ++i) {
    if (!((e->checked >> i) & 1)) continue;
    int rc = (direct >> i) & 1 ? tvmffi_graph_check_object(held[i], limit, e->skip)
                               : tvmffi_graph_check(held[i], limit, e->skip);
    if (rc != 0) return -1;
  }
  return 0;
}

static PyObject* entry_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf,
                                  PyObject* kwnames) {
  GraphEntry* e = (GraphEntry*)self;
  PyObject* bound[ENTRY_MAX_PARAMS];
  PyObject* held[ENTRY_MAX_PARAMS];
  TVMFFIAny packed[ENTRY_MAX_PARAMS];
  if (bind(e, args, nargsf, kwnames, bound) != 0) return NULL;
  TVMFFIObjectHandle fn = tvmffi_object_handle(e->fn);
  if (fn == NULL) return NULL;
  TempList temps;
  temps_init(&temps);
  PyObject* res = NULL;
  Py_ssize_t made = 0;
  unsigned long direct;
  /* Everything that may run Python code (converting the graph arguments,
   * packing the others) comes first; then the checks, the packing of the
   * checked values (objects and plain scalars: no Python code) and the call. */
  if (hold(e, bound, held, &made, &direct) != 0 || pack(e, held, direct, packed, &temps, 0) != 0) {
    goto done;
  }
  TVMFFIAny out;
  int rc;
  /* With the GIL held, or without one the registries' runtime lock that every
   * change of a List or Dict takes too (BUILTIN_CHANGES): no other thread may
   * change a checked value before the call is over. */
  TVMFFI_BEGIN_RUNTIME(NULL);
  rc = check_graphs(e, held, direct) != 0 || pack(e, held, direct, packed, &temps, 1) != 0 ||
       tvmffi_call_packed(fn, packed, e->nparams, &temps, 0, &out) != 0;
  TVMFFI_END_RUNTIME();
  if (rc) goto done;
  res = result_to_py(e, &out, temps.dlpack_api);
done:
  temps_release(&temps);
  for (Py_ssize_t i = 0; i < made; ++i) Py_DECREF(held[i]);
  return res;
}

static int entry_traverse(PyObject* self, visitproc visit, void* arg) {
  GraphEntry* e = (GraphEntry*)self;
  Py_VISIT(e->fn);
  Py_VISIT(e->defaults);
  Py_VISIT(e->dict);
  return 0;
}

static int entry_clear(PyObject* self) {
  GraphEntry* e = (GraphEntry*)self;
  Py_CLEAR(e->fn);
  Py_CLEAR(e->defaults);
  Py_CLEAR(e->dict);
  return 0;
}

static void entry_dealloc(PyObject* self) {
  GraphEntry* e = (GraphEntry*)self;
  PyObject_GC_UnTrack(self);
  entry_clear(self);
  Py_CLEAR(e->name);
  Py_CLEAR(e->names);
  Py_TYPE(self)->tp_free(self);
}

static PyObject* entry_repr(PyObject* self) {
  return PyUnicode_FromFormat("<native function %U>", ((GraphEntry*)self)->name);
}

/* Pickled by reference, as functions are: the module attribute of this name. */
static PyObject* entry_reduce(PyObject* self, PyObject* unused) {
  (void)unused;
  return PyObject_GetAttrString(self, "__qualname__");
}

static PyMethodDef entry_methods[] = {
    {"__reduce__", entry_reduce, METH_NOARGS, "Pickle by reference to the module attribute."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef entry_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject GraphEntryType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi._core.GraphEntry",
    .tp_doc = "A native entry point over a recursive runtime graph function.",
    .tp_basicsize = sizeof(GraphEntry),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(GraphEntry, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_dictoffset = offsetof(GraphEntry, dict),
    .tp_traverse = entry_traverse,
    .tp_clear = entry_clear,
    .tp_dealloc = entry_dealloc,
    .tp_repr = entry_repr,
    .tp_methods = entry_methods,
    .tp_getset = entry_getset,
};

static int valid_names(PyObject* names, PyObject* defaults) {
  if (!PyTuple_Check(names) || !PyTuple_Check(defaults) ||
      PyTuple_GET_SIZE(names) > ENTRY_MAX_PARAMS ||
      PyTuple_GET_SIZE(defaults) > PyTuple_GET_SIZE(names)) {
    return 0;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); ++i) {
    if (!PyUnicode_Check(PyTuple_GET_ITEM(names, i))) return 0;
  }
  return 1;
}

static PyObject* py_graph_entry(PyObject* m, PyObject* args) {
  (void)m;
  PyObject *name, *fn, *names, *defaults;
  long long per_level;
  int skip, result;
  unsigned long checked;
  if (!PyArg_ParseTuple(args, "UO!LpkOOi", &name, &TVMFFIFunctionType, &fn, &per_level, &skip,
                        &checked, &names, &defaults, &result)) {
    return NULL;
  }
  if (!valid_names(names, defaults) || per_level <= 0 || result < RESULT_AS_IS ||
      result > RESULT_U64 || checked >= (1UL << PyTuple_GET_SIZE(names))) {
    PyErr_SetString(PyExc_ValueError,
                    "_graph_entry(name, fn, bytes_per_level > 0, skip, checked mask, names: "
                    "tuple[str] (at most 8), defaults: tuple, result 0/1/2)");
    return NULL;
  }
  GraphEntry* e = PyObject_GC_New(GraphEntry, &GraphEntryType);
  if (e == NULL) return NULL;
  e->vectorcall = entry_vectorcall;
  e->name = Py_NewRef(name);
  e->fn = Py_NewRef(fn);
  e->per_level = per_level;
  e->skip = skip;
  e->result = result;
  e->checked = checked;
  e->nparams = PyTuple_GET_SIZE(names);
  e->nrequired = e->nparams - PyTuple_GET_SIZE(defaults);
  e->names = Py_NewRef(names);
  e->defaults = Py_NewRef(defaults);
  e->dict = NULL;
  PyObject_GC_Track((PyObject*)e);
  return (PyObject*)e;
}

static PyMethodDef entry_module_methods[] = {
    {"_graph_entry", py_graph_entry, METH_VARARGS,
     "_graph_entry(name, fn, bytes_per_level, skip_seq_ignored, checked, names, defaults, "
     "result): a native f(*args, **kwargs) that checks and calls fn in one step."},
    {NULL, NULL, 0, NULL},
};

int tvmffi_graph_entry_init(PyObject* module) {
  if (PyType_Ready(&GraphEntryType) < 0) return -1;
  if (PyModule_AddObjectRef(module, "GraphEntry", (PyObject*)&GraphEntryType) < 0) return -1;
  return PyModule_AddFunctions(module, entry_module_methods);
}
