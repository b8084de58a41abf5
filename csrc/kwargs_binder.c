/*
 * Keyword binding in C: tvmffi.utils.kwargs_wrapper's wrappers, and keyword
 * calls of FFI functions whose metadata names their parameters.
 *
 * A KwargsWrapper holds a parameter table built once (names, positional
 * first and keyword-only after, a default or none per parameter, whether the
 * value is unpacked from dataclasses) and, for make_kwargs_wrapper, the
 * target. A call binds its positional and keyword arguments to the table
 * the way CPython binds a def's parameters (the same errors, naming the
 * parameter), fills in the defaults, unpacks the map_dataclass_to_tuple
 * values (dataclass_unpack.c) and calls the target with every value
 * positional, by vectorcall: a tvmffi Function's call path runs next, with
 * no Python frame in between.
 *
 * A Function called with keywords (function.c hands such calls here) gets
 * its table from tvmffi._function_doc.kwargs_binder once, kept in the
 * function's instance dict: a KwargsWrapper without target, or None when the
 * metadata names no parameters (then the call is refused as officially).
 *
 * The table never changes once built, so calls read it without a lock.
 * Names and messages (the qualified name in errors) are read from the
 * wrapper's instance dict, which Python code fills when it is made
 * (functools-style attributes of the prototype).
 */
#include "core.h"

#include <stdint.h>
#include <string.h>
#include <structmember.h>

#define STACK_ARGS 12

typedef struct {
  PyObject* name; /* interned str */
  PyObject* dflt; /* owned default; NULL when the parameter is required */
  int unpack;     /* a map_dataclass_to_tuple parameter */
} Param;

typedef struct {
  PyObject_VAR_HEAD /* ob_size: the number of parameters */
  vectorcallfunc vectorcall;
  PyObject* target; /* NULL: a Function's own table (the Function is passed in) */
  PyObject* dict;
  PyObject* weakreflist;
  Py_ssize_t n_pos;     /* positional-or-keyword parameters, then keyword-only ones */
  Py_ssize_t n_pos_req; /* leading positional parameters without a default */
  int any_unpack;
  Param params[1];
} KwargsWrapper;

static PyTypeObject KwargsWrapperType;
static PyObject* g_str_qualname;    /* "__qualname__" */
static PyObject* g_str_binder;      /* the instance dict key of a Function's table */

/* ---- errors, worded as CPython words them for a def ------------------------- */
/* The qualified name errors give: the wrapper's __qualname__ (the prototype's
 * after update_wrapper), "wrapper" when it has none. New reference. */
static PyObject* qualname_of(KwargsWrapper* w) {
  PyObject* name = NULL;
  PyObject* dict = TVMFFI_LOAD_PTR(w->dict);
  if (dict != NULL && tvmffi_dict_get_ref(dict, g_str_qualname, &name) < 0) PyErr_Clear();
  if (name != NULL && PyUnicode_Check(name)) return name;
  Py_XDECREF(name);
  return PyUnicode_FromString("wrapper");
}

/* Called with more positional arguments than parameters: the keywords that
 * named keyword-only parameters are counted in the message, as CPython does. */
static Py_NO_INLINE void too_many_positional(KwargsWrapper* w, Py_ssize_t given,
                                             PyObject* kwnames) {
  Py_ssize_t kwonly_given = 0;
  Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    for (Py_ssize_t i = w->n_pos; i < Py_SIZE(w); ++i) {
      if (PyUnicode_Compare(w->params[i].name, key) == 0) ++kwonly_given;
    }
  }
  PyErr_Clear(); /* a comparison that failed counts as no match */
  Py_ssize_t defcount = w->n_pos - w->n_pos_req;
  PyObject* sig = defcount > 0 ? PyUnicode_FromFormat("from %zd to %zd", w->n_pos_req, w->n_pos)
                               : PyUnicode_FromFormat("%zd", w->n_pos);
  int plural = defcount > 0 || w->n_pos != 1;
  PyObject* kwonly = kwonly_given == 0
                         ? PyUnicode_FromString("")
                         : PyUnicode_FromFormat(" positional argument%s (and %zd keyword-only "
                                                "argument%s)", given != 1 ? "s" : "",
                                                kwonly_given, kwonly_given != 1 ? "s" : "");
  PyObject* qual = qualname_of(w);
  if (sig != NULL && kwonly != NULL && qual != NULL) {
    PyErr_Format(PyExc_TypeError, "%U() takes %U positional argument%s but %zd%U %s given", qual,
                 sig, plural ? "s" : "", given, kwonly,
                 given == 1 && kwonly_given == 0 ? "was" : "were");
  }
  Py_XDECREF(sig);
  Py_XDECREF(kwonly);
  Py_XDECREF(qual);
}

/* "'a'", "'a' and 'b'", "'a', 'b', and 'c'" */
static PyObject* name_list(PyObject* names) {
  Py_ssize_t n = PyList_GET_SIZE(names);
  PyObject* out = PyUnicode_FromString("");
  for (Py_ssize_t i = 0; out != NULL && i < n; ++i) {
    const char* sep = i == 0 ? "" : (n == 2 ? " and " : (i == n - 1 ? ", and " : ", "));
    PyObject* next = PyUnicode_FromFormat("%U%s'%U'", out, sep, PyList_GET_ITEM(names, i));
    Py_SETREF(out, next);
  }
  return out;
}

/* Missing arguments among parameters [begin, end): 1 with the error set. */
static Py_NO_INLINE int missing(KwargsWrapper* w, PyObject* const* bound, Py_ssize_t begin,
                                Py_ssize_t end, const char* kind) {
  PyObject* names = PyList_New(0);
  if (names == NULL) return 1;
  for (Py_ssize_t i = begin; i < end; ++i) {
    if (bound[i] == NULL && PyList_Append(names, w->params[i].name) < 0) {
      Py_DECREF(names);
      return 1;
    }
  }
  Py_ssize_t n = PyList_GET_SIZE(names);
  PyObject* listed = name_list(names);
  PyObject* qual = qualname_of(w);
  if (listed != NULL && qual != NULL) {
    PyErr_Format(PyExc_TypeError, "%U() missing %zd required %s argument%s: %U", qual, n, kind,
                 n == 1 ? "" : "s", listed);
  }
  Py_XDECREF(listed);
  Py_XDECREF(qual);
  Py_DECREF(names);
  return 1;
}

static Py_NO_INLINE int keyword_error(KwargsWrapper* w, PyObject* key, const char* fmt) {
  PyObject* qual = qualname_of(w);
  if (qual != NULL) PyErr_Format(PyExc_TypeError, fmt, qual, key);
  Py_XDECREF(qual);
  return -1;
}

/* ---- binding --------------------------------------------------------------------- */
/* The index of the parameter named key, or -1. Keyword names of a call are
 * interned (as are ours) nearly always: identity first. */
static inline Py_ssize_t find_param(KwargsWrapper* w, PyObject* key) {
  Py_ssize_t n = Py_SIZE(w);
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (w->params[i].name == key) return i;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (PyUnicode_Compare(w->params[i].name, key) == 0) return i;
  }
  if (PyErr_Occurred()) PyErr_Clear(); /* a key that is no str: reported as unexpected */
  return -1;
}

/* The first parameter in [begin, end) left unbound (required, not given), or end. */
static inline Py_ssize_t first_unbound(PyObject* const* bound, Py_ssize_t begin, Py_ssize_t end) {
  while (begin < end && bound[begin] != NULL) ++begin;
  return begin;
}

/* Binds a call's arguments to bound[0..n) (borrowed references): the
 * positional ones, then every other parameter's default (NULL for a required
 * one), then the keywords over them. 0, or -1 with CPython's TypeError for a
 * def of the same signature. Plain loops: the tables are short, and the
 * compiler's vectorized forms (a memset call) cost more than they save. */
static int bind(KwargsWrapper* w, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                PyObject** bound) {
  Py_ssize_t n = Py_SIZE(w);
  Py_ssize_t npos = nargs < w->n_pos ? nargs : w->n_pos;
  Py_ssize_t i = 0;
  for (; i < npos; ++i) bound[i] = args[i];
  for (; i < n; ++i) bound[i] = w->params[i].dflt;
  Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
  uint64_t by_keyword = 0; /* parameters (the first 64) a keyword named */
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    Py_ssize_t j = find_param(w, key);
    if (j < 0) return keyword_error(w, key, "%U() got an unexpected keyword argument '%S'");
    uint64_t bit = j < 64 ? (uint64_t)1 << j : 0;
    if (j < npos || (by_keyword & bit)) {
      return keyword_error(w, key, "%U() got multiple values for argument '%S'");
    }
    by_keyword |= bit;
    bound[j] = args[nargs + k];
  }
  if (nargs > w->n_pos) {
    too_many_positional(w, nargs, kwnames);
    return -1;
  }
  Py_ssize_t hole = first_unbound(bound, npos, n);
  if (hole == n) return 0;
  if (hole < w->n_pos) return -missing(w, bound, hole, w->n_pos, "positional");
  return -missing(w, bound, hole, n, "keyword-only");
}

/* The map_dataclass_to_tuple values, unpacked in place (new references, which
 * release_unpacked drops): 0, or -1 with those made so far dropped. */
static int unpack_bound(KwargsWrapper* w, PyObject** bound) {
  for (Py_ssize_t i = 0; i < Py_SIZE(w); ++i) {
    if (!w->params[i].unpack) continue;
    PyObject* v = tvmffi_unpack_dataclass(bound[i]);
    if (v == NULL) {
      for (Py_ssize_t j = 0; j < i; ++j) {
        if (w->params[j].unpack) Py_DECREF(bound[j]);
      }
      return -1;
    }
    bound[i] = v;
  }
  return 0;
}

static void release_unpacked(KwargsWrapper* w, PyObject** bound) {
  for (Py_ssize_t i = 0; i < Py_SIZE(w); ++i) {
    if (w->params[i].unpack) Py_DECREF(bound[i]);
  }
}

/* A tvmffi Function is called through its own call slot (no generic
 * dispatch, no result check: the call path sets errors itself); a subclass,
 * whose __call__ may be Python code, and any other callable by vectorcall. */
static inline PyObject* call_positional(PyObject* callee, PyObject* const* args, size_t nargsf) {
  if (Py_TYPE(callee) == &TVMFFIFunctionType) {
    return ((TVMFFIPyFunction*)callee)->vectorcall(callee, args, nargsf, NULL);
  }
  return PyObject_Vectorcall(callee, args, nargsf, NULL);
}

/* Binds and calls `callee` with every value positional. */
static PyObject* bind_and_call(KwargsWrapper* w, PyObject* callee, PyObject* const* args,
                               Py_ssize_t nargs, PyObject* kwnames) {
  Py_ssize_t n = Py_SIZE(w);
  PyObject* stack[STACK_ARGS + 1];
  PyObject** buf = stack;
  if (n > STACK_ARGS) {
    buf = PyMem_Malloc(sizeof(PyObject*) * (size_t)(n + 1));
    if (buf == NULL) return PyErr_NoMemory();
  }
  PyObject** bound = buf + 1; /* bound[-1] is the callee's to use */
  PyObject* res = NULL;
  if (bind(w, args, nargs, kwnames, bound) == 0 && (!w->any_unpack || unpack_bound(w, bound) == 0)) {
    res = call_positional(callee, bound, (size_t)n | PY_VECTORCALL_ARGUMENTS_OFFSET);
    if (w->any_unpack) release_unpacked(w, bound);
  }
  if (buf != stack) PyMem_Free(buf);
  return res;
}

static PyObject* wrapper_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf,
                                    PyObject* kwnames) {
  KwargsWrapper* w = (KwargsWrapper*)self;
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (w->target == NULL) {
    PyErr_SetString(PyExc_TypeError, "this parameter table has no target to call");
    return NULL;
  }
  /* Every parameter given positionally, nothing to unpack: the arguments as
   * they came (the caller's offset slot too). */
  if ((kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0) && nargs == Py_SIZE(w) &&
      nargs == w->n_pos && !w->any_unpack) {
    return call_positional(w->target, args, nargsf);
  }
  return bind_and_call(w, w->target, args, nargs, kwnames);
}

/* ---- keyword calls of FFI functions ---------------------------------------------- */
static PyObject* g_binder_helper;

/* The function's table (borrowed from its dict: the dict keeps it), Py_None
 * when its metadata names no parameters, NULL with an error. */
static PyObject* function_binder(PyObject* func, PyObject** holder) {
  PyObject* dict = TVMFFI_LOAD_PTR(((TVMFFIPyFunction*)func)->dict);
  if (dict != NULL) {
    int found = tvmffi_dict_get_ref(dict, g_str_binder, holder);
    if (found != 0) return found > 0 ? *holder : NULL;
  }
  PyObject* helper = tvmffi_import_once(&g_binder_helper, "tvmffi._function_doc", "kwargs_binder");
  if (helper == NULL) return NULL;
  *holder = PyObject_CallOneArg(helper, func); /* computes and caches it */
  return *holder;
}

PyObject* tvmffi_function_call_kw(PyObject* func, PyObject* const* args, size_t nargsf,
                                  PyObject* kwnames) {
  PyObject* holder = NULL;
  PyObject* binder = function_binder(func, &holder);
  if (binder == NULL) return NULL;
  PyObject* res;
  if (Py_TYPE(binder) == &KwargsWrapperType) {
    res = bind_and_call((KwargsWrapper*)binder, func, args, PyVectorcall_NARGS(nargsf), kwnames);
  } else { /* no names: positional only, worded as the official binding words it */
    PyErr_Format(PyExc_TypeError, "__call__() got an unexpected keyword argument '%S'",
                 PyTuple_GET_ITEM(kwnames, 0));
    res = NULL;
  }
  Py_DECREF(holder);
  return res;
}

/* ---- the type -------------------------------------------------------------------- */
/* Checks the table's parts (the Python side validated names and messages;
 * this only keeps bad input from becoming a bad table). */
static int check_names(PyObject* names, Py_ssize_t n_pos) {
  if (!PyTuple_Check(names)) {
    PyErr_SetString(PyExc_TypeError, "names must be a tuple of str");
    return -1;
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); ++i) {
    if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(names, i))) {
      PyErr_SetString(PyExc_TypeError, "names must be a tuple of str");
      return -1;
    }
  }
  if (n_pos < 0 || n_pos > PyTuple_GET_SIZE(names)) {
    PyErr_SetString(PyExc_ValueError, "n_pos must be between 0 and len(names)");
    return -1;
  }
  return 0;
}

static int fill_params(KwargsWrapper* w, PyObject* names, PyObject* defaults, PyObject* unpack) {
  for (Py_ssize_t i = 0; i < Py_SIZE(w); ++i) {
    PyObject* name = Py_NewRef(PyTuple_GET_ITEM(names, i));
    PyUnicode_InternInPlace(&name);
    w->params[i].name = name;
    if (tvmffi_dict_get_ref(defaults, name, &w->params[i].dflt) < 0) return -1;
    int u = PySequence_Contains(unpack, name);
    if (u < 0) return -1;
    w->params[i].unpack = u;
    w->any_unpack |= u;
  }
  w->n_pos_req = 0;
  while (w->n_pos_req < w->n_pos && w->params[w->n_pos_req].dflt == NULL) ++w->n_pos_req;
  for (Py_ssize_t i = w->n_pos_req; i < w->n_pos; ++i) {
    if (w->params[i].dflt == NULL) {
      PyErr_Format(PyExc_ValueError, "parameter '%U' without a default follows one with a "
                   "default", w->params[i].name);
      return -1;
    }
  }
  return 0;
}

/* KwargsWrapper(target, names, n_pos, defaults, unpack): target None for a
 * Function's own table; names: tuple of str (positional first); defaults: a
 * dict name -> value; unpack: the names whose values are unpacked. */
static PyObject* wrapper_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject *target, *names, *defaults, *unpack;
  Py_ssize_t n_pos;
  static char* kwlist[] = {"target", "names", "n_pos", "defaults", "unpack", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOnO!O:KwargsWrapper", kwlist, &target, &names,
                                   &n_pos, &PyDict_Type, &defaults, &unpack) ||
      check_names(names, n_pos) != 0) {
    return NULL;
  }
  /* A target that is not callable fails when called, as a def calling it would. */
  Py_ssize_t n = PyTuple_GET_SIZE(names);
  KwargsWrapper* w = PyObject_GC_NewVar(KwargsWrapper, type, n);
  if (w == NULL) return NULL;
  if (n > 0) memset(w->params, 0, sizeof(Param) * (size_t)n);
  w->vectorcall = wrapper_vectorcall;
  w->target = target == Py_None ? NULL : Py_NewRef(target);
  w->dict = NULL;
  w->weakreflist = NULL;
  w->n_pos = n_pos;
  w->any_unpack = 0;
  if (fill_params(w, names, defaults, unpack) != 0) {
    Py_DECREF(w);
    return NULL;
  }
  PyObject_GC_Track(w);
  return (PyObject*)w;
}

static int wrapper_traverse(PyObject* op, visitproc visit, void* arg) {
  KwargsWrapper* w = (KwargsWrapper*)op;
  Py_VISIT(w->target);
  Py_VISIT(w->dict);
  for (Py_ssize_t i = 0; i < Py_SIZE(w); ++i) Py_VISIT(w->params[i].dflt);
  return 0;
}

static int wrapper_clear(PyObject* op) {
  KwargsWrapper* w = (KwargsWrapper*)op;
  Py_CLEAR(w->target);
  Py_CLEAR(w->dict);
  for (Py_ssize_t i = 0; i < Py_SIZE(w); ++i) Py_CLEAR(w->params[i].dflt);
  return 0;
}

static void wrapper_dealloc(PyObject* op) {
  KwargsWrapper* w = (KwargsWrapper*)op;
  PyObject_GC_UnTrack(op);
  if (w->weakreflist != NULL) PyObject_ClearWeakRefs(op);
  wrapper_clear(op);
  for (Py_ssize_t i = 0; i < Py_SIZE(w); ++i) Py_CLEAR(w->params[i].name);
  Py_TYPE(op)->tp_free(op);
}

/* Stored in a class, it binds as a method, as the def it stands for would. */
static PyObject* wrapper_descr_get(PyObject* self, PyObject* obj, PyObject* type) {
  (void)type;
  if (obj == NULL || obj == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, obj);
}

static PyObject* wrapper_repr(PyObject* self) {
  PyObject* qual = qualname_of((KwargsWrapper*)self);
  if (qual == NULL) return NULL;
  PyObject* r = PyUnicode_FromFormat("<kwargs_wrapper %U at %p>", qual, self);
  Py_DECREF(qual);
  return r;
}

/* _table: (target, names, n_pos, defaults, unpack), the constructor's arguments. */
static PyObject* get_table(PyObject* self, void* closure) {
  (void)closure;
  KwargsWrapper* w = (KwargsWrapper*)self;
  Py_ssize_t n = Py_SIZE(w);
  PyObject* names = PyTuple_New(n);
  PyObject* defaults = PyDict_New();
  PyObject* unpack = PyList_New(0);
  PyObject* res = NULL;
  if (names == NULL || defaults == NULL || unpack == NULL) goto done;
  for (Py_ssize_t i = 0; i < n; ++i) {
    Param* p = &w->params[i];
    PyTuple_SET_ITEM(names, i, Py_NewRef(p->name));
    if ((p->dflt != NULL && PyDict_SetItem(defaults, p->name, p->dflt) < 0) ||
        (p->unpack && PyList_Append(unpack, p->name) < 0)) {
      goto done;
    }
  }
  res = Py_BuildValue("(OOnOO)", w->target != NULL ? w->target : Py_None, names, w->n_pos,
                      defaults, unpack);
done:
  Py_XDECREF(names);
  Py_XDECREF(defaults);
  Py_XDECREF(unpack);
  return res;
}

static PyObject* g_reduce_helper;

static PyObject* wrapper_reduce(PyObject* self, PyObject* unused) {
  (void)unused;
  PyObject* helper =
      tvmffi_import_once(&g_reduce_helper, "tvmffi.utils.kwargs_wrapper", "_reduce_wrapper");
  return helper == NULL ? NULL : PyObject_CallOneArg(helper, self);
}

static PyGetSetDef wrapper_getset[] = {
    {"_table", get_table, NULL, "(target, names, n_pos, defaults, unpack)", NULL},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef wrapper_methods[] = {
    {"__reduce__", wrapper_reduce, METH_NOARGS, "Pickles the table and the target."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef wrapper_members[] = {
    {"__wrapped_target__", T_OBJECT, offsetof(KwargsWrapper, target), READONLY,
     "The callable the wrapper calls (None for a Function's own table)."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject KwargsWrapperType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.core.KwargsWrapper",
    .tp_basicsize = offsetof(KwargsWrapper, params),
    .tp_itemsize = sizeof(Param),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A callable that binds positional and keyword arguments to a parameter table "
              "and calls its target with every value positional "
              "(tvmffi.utils.kwargs_wrapper.make_kwargs_wrapper makes them).",
    .tp_new = wrapper_new,
    .tp_dealloc = wrapper_dealloc,
    .tp_traverse = wrapper_traverse,
    .tp_clear = wrapper_clear,
    .tp_repr = wrapper_repr,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(KwargsWrapper, vectorcall),
    .tp_descr_get = wrapper_descr_get,
    .tp_dictoffset = offsetof(KwargsWrapper, dict),
    .tp_weaklistoffset = offsetof(KwargsWrapper, weakreflist),
    .tp_getset = wrapper_getset,
    .tp_methods = wrapper_methods,
    .tp_members = wrapper_members,
};

int tvmffi_kwargs_binder_init(PyObject* module) {
  g_str_qualname = PyUnicode_InternFromString("__qualname__");
  g_str_binder = PyUnicode_InternFromString("__tvmffi_kwargs_binder__");
  if (g_str_qualname == NULL || g_str_binder == NULL) return -1;
  if (PyType_Ready(&KwargsWrapperType) < 0) return -1;
  return PyModule_AddObjectRef(module, "KwargsWrapper", (PyObject*)&KwargsWrapperType);
}
