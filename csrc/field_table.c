/*
 * The field table of an FFI dataclass, and the dunders that read it.
 *
 * When @py_class / @c_class (or register_object, for __init__ and
 * __ffi_init__ alone) decorates a class, the Python layer reads the class
 * once and builds one FieldTable: the type's key and constructor, and a row
 * per field (its name, the FieldProperty that reads it, its default or
 * factory, its converter, its init/repr/compare/hash/kw_only flags). The
 * class's __init__, __ffi_init__, __repr__, __eq__/__ne__, ordering,
 * __hash__, __copy__, __deepcopy__ and __replace__ are TableMethod objects:
 * C callables bound to the table, installed in the class dict. A table is
 * never changed once built, so readers need no lock (free-threaded builds).
 *
 * Common values take C paths: repr of a row whose value is an int, float,
 * bool, str or None is printed here in the runtime's own format (ReprPrint's:
 * %g floats, double-quoted escaped strings); == and hash of such values are
 * decided here with RecursiveEq's rules (NaN equals NaN, -0.0 equals 0.0).
 * Anything else (objects, containers, a custom __ffi_repr__) goes to the
 * runtime's recursive functions, handed over once per class (_field_table_setup).
 */
#include "core.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The object's handle, NULL (no error set) for an empty one. */
#define HANDLE(obj) (((TVMFFIPyObject*)(obj))->handle)

/* Row flags (set by the Python layer, dataclasses/_table.py). */
enum {
  ROW_INIT = 1 << 0,
  ROW_REPR = 1 << 1,
  ROW_COMPARE = 1 << 2,
  ROW_HASH = 1 << 3,
  ROW_KW_ONLY = 1 << 4,
  ROW_CONVERT_ARG = 1 << 5, /* __init__ converts the argument (the runtime would refuse it) */
};

/* Table flags. */
enum {
  TABLE_CUSTOM_REPR = 1 << 0, /* the type has __ffi_repr__: the runtime prints it */
  TABLE_POST_INIT = 1 << 1,   /* call self.__post_init__() after construction */
  TABLE_CONVERTS = 1 << 2,    /* a row has ROW_CONVERT_ARG */
};

typedef struct {
  PyObject* name;      /* str */
  PyObject* prop;      /* the field's descriptor (reads the object's storage) */
  PyObject* default_;  /* the default value, or NULL */
  PyObject* factory;   /* the default factory, or NULL */
  PyObject* converter; /* conv(value) -> converted value, or NULL (stored as given) */
  unsigned flags;
} Row;

typedef struct {
  PyObject_VAR_HEAD
  PyObject* type_key;   /* str: the repr's prefix */
  PyObject* ffi_init;   /* the type's reflected constructor (a Function), or None */
  PyObject* shallow_copy; /* the type's __ffi_shallow_copy__ (a Function), or None */
  PyObject* init_props; /* tuple of (prop, func): computed fields set after __init__ */
  PyObject* positional; /* tuple of row indices: the field each positional argument sets */
  unsigned flags;
  Row rows[1];
} FieldTable;

/* The runtime's recursive functions and the generic repr, set once. */
static PyObject* g_recursive[6]; /* Eq, Hash, Lt, Le, Gt, Ge */
static PyObject* g_deep_copy;
static PyObject* g_repr_fallback;
static PyObject* g_kwargs_marker;
static PyObject* g_missing;
static PyObject* g_post_init_name;
static PyObject* g_set_name; /* "set": FieldProperty.set writes frozen fields too */

static void table_dealloc(PyObject* op) {
  FieldTable* t = (FieldTable*)op;
  PyObject_GC_UnTrack(op);
  for (Py_ssize_t i = 0; i < Py_SIZE(t); i++) {
    Row* r = &t->rows[i];
    Py_XDECREF(r->name);
    Py_XDECREF(r->prop);
    Py_XDECREF(r->default_);
    Py_XDECREF(r->factory);
    Py_XDECREF(r->converter);
  }
  Py_XDECREF(t->type_key);
  Py_XDECREF(t->ffi_init);
  Py_XDECREF(t->init_props);
  Py_XDECREF(t->shallow_copy);
  Py_XDECREF(t->positional);
  PyObject_GC_Del(op);
}

static int table_traverse(PyObject* op, visitproc visit, void* arg) {
  FieldTable* t = (FieldTable*)op;
  for (Py_ssize_t i = 0; i < Py_SIZE(t); i++) {
    Py_VISIT(t->rows[i].prop);
    Py_VISIT(t->rows[i].default_);
    Py_VISIT(t->rows[i].factory);
    Py_VISIT(t->rows[i].converter);
  }
  Py_VISIT(t->ffi_init);
  Py_VISIT(t->init_props);
  Py_VISIT(t->shallow_copy);
  Py_VISIT(t->positional);
  return 0;
}

static PyObject* table_names(PyObject* op, void* closure) {
  FieldTable* t = (FieldTable*)op;
  unsigned want = (unsigned)(uintptr_t)closure;
  PyObject* out = PyList_New(0);
  for (Py_ssize_t i = 0; out != NULL && i < Py_SIZE(t); i++) {
    if ((t->rows[i].flags & want) == want && PyList_Append(out, t->rows[i].name) != 0) {
      Py_CLEAR(out);
    }
  }
  if (out == NULL) return NULL;
  PyObject* tup = PyList_AsTuple(out);
  Py_DECREF(out);
  return tup;
}

static PyObject* table_row(PyObject* op, PyObject* arg) {
  FieldTable* t = (FieldTable*)op;
  Py_ssize_t i = PyLong_AsSsize_t(arg);
  if (i == -1 && PyErr_Occurred()) return NULL;
  if (i < 0 || i >= Py_SIZE(t)) {
    PyErr_SetString(PyExc_IndexError, "field table row out of range");
    return NULL;
  }
  Row* r = &t->rows[i];
  return Py_BuildValue("(OOOOOI)", r->name, r->prop, r->default_ ? r->default_ : g_missing,
                       r->factory ? r->factory : g_missing, r->converter ? r->converter : Py_None,
                       r->flags);
}

static PyGetSetDef table_getset[] = {
    {"names", table_names, NULL, "every field's name, in order", (void*)0},
    {"init_names", table_names, NULL, "the fields __init__ takes", (void*)(uintptr_t)ROW_INIT},
    {"repr_names", table_names, NULL, "the fields repr shows", (void*)(uintptr_t)ROW_REPR},
    {NULL}};

static PyMethodDef table_methods[] = {
    {"row", table_row, METH_O,
     "row(i) -> (name, prop, default, factory, converter, flags): row i, read-only"},
    {NULL}};

static Py_ssize_t table_len(PyObject* op) { return Py_SIZE(op); }

static PySequenceMethods table_as_sequence = {.sq_length = table_len};

static PyTypeObject FieldTableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.core.FieldTable",
    .tp_basicsize = sizeof(FieldTable) - sizeof(Row),
    .tp_itemsize = sizeof(Row),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The read-only field table of an FFI dataclass (csrc/field_table.c).",
    .tp_dealloc = table_dealloc,
    .tp_traverse = table_traverse,
    .tp_getset = table_getset,
    .tp_methods = table_methods,
    .tp_as_sequence = &table_as_sequence,
};

/* ---- building a table --------------------------------------------------- */

static PyObject* or_null(PyObject* v) {
  if (v == g_missing || v == Py_None) return NULL;
  return Py_NewRef(v);
}

static int fill_row(Row* r, PyObject* spec) {
  PyObject *name, *prop, *dflt, *factory, *conv;
  unsigned int flags;
  if (!PyTuple_Check(spec) ||
      !PyArg_ParseTuple(spec, "UOOOOI", &name, &prop, &dflt, &factory, &conv, &flags)) {
    if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      PyErr_SetString(PyExc_TypeError,
                      "a field row is (name, prop, default, factory, converter, flags)");
    }
    return -1;
  }
  r->name = Py_NewRef(name);
  r->prop = Py_NewRef(prop);
  r->default_ = dflt == g_missing ? NULL : Py_NewRef(dflt);
  r->factory = or_null(factory);
  r->converter = or_null(conv);
  r->flags = flags;
  return 0;
}

/* _field_table(type_key, ffi_init, shallow_copy, rows, init_props, positional, flags) */
static PyObject* py_field_table(PyObject* self, PyObject* args) {
  (void)self;
  PyObject *key, *ffi_init, *shallow, *rows, *init_props, *positional;
  unsigned int flags;
  if (!PyArg_ParseTuple(args, "UOOO!O!O!I", &key, &ffi_init, &shallow, &PyTuple_Type, &rows,
                        &PyTuple_Type, &init_props, &PyTuple_Type, &positional, &flags)) {
    return NULL;
  }
  if (g_missing == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "_field_table_setup was not called");
    return NULL;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(rows);
  FieldTable* t = PyObject_GC_NewVar(FieldTable, &FieldTableType, n);
  if (t == NULL) return NULL;
  memset(t->rows, 0, sizeof(Row) * (size_t)n);
  t->type_key = Py_NewRef(key);
  t->ffi_init = Py_NewRef(ffi_init);
  t->init_props = Py_NewRef(init_props);
  t->shallow_copy = Py_NewRef(shallow);
  t->positional = Py_NewRef(positional);
  t->flags = flags;
  PyObject_GC_Track((PyObject*)t);
  for (Py_ssize_t i = 0; i < n; i++) {
    if (fill_row(&t->rows[i], PyTuple_GET_ITEM(rows, i)) != 0) {
      Py_DECREF(t);
      return NULL;
    }
  }
  return (PyObject*)t;
}

/* _field_table_setup(eq, hash, lt, le, gt, ge, deep_copy, repr_fallback, kwargs_marker,
 *                    missing): the runtime's functions the methods fall back
 *                    on, once per process. */
static PyObject* py_field_table_setup(PyObject* self, PyObject* args) {
  (void)self;
  PyObject* v[10];
  if (!PyArg_ParseTuple(args, "OOOOOOOOOO", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
                        &v[7], &v[8], &v[9])) {
    return NULL;
  }
  for (int i = 0; i < 6; i++) tvmffi_publish_once(&g_recursive[i], Py_NewRef(v[i]));
  tvmffi_publish_once(&g_deep_copy, Py_NewRef(v[6]));
  tvmffi_publish_once(&g_repr_fallback, Py_NewRef(v[7]));
  tvmffi_publish_once(&g_kwargs_marker, Py_NewRef(v[8]));
  tvmffi_publish_once(&g_missing, Py_NewRef(v[9]));
  Py_RETURN_NONE;
}

/* ---- reading fields ----------------------------------------------------- */

static PyObject* row_get(const Row* r, PyObject* obj) {
  descrgetfunc get = Py_TYPE(r->prop)->tp_descr_get;
  if (get == NULL) return PyObject_GetAttr(obj, r->name);
  return get(r->prop, obj, (PyObject*)Py_TYPE(obj));
}

/* ---- construction ------------------------------------------------------- */

static const Row* find_row(FieldTable* t, PyObject* name);

/* The row the argument at `pos` (positional) or named `name` sets, if it converts. */
static const Row* converting_row(FieldTable* t, Py_ssize_t pos, PyObject* name) {
  const Row* r = NULL;
  if (name != NULL) {
    r = find_row(t, name);
  } else if (pos < PyTuple_GET_SIZE(t->positional)) {
    Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(t->positional, pos));
    if (i >= 0 && i < Py_SIZE(t)) r = &t->rows[i];
  }
  return r != NULL && (r->flags & ROW_CONVERT_ARG) && r->converter != NULL ? r : NULL;
}

/* stack[at] = arg, converted by its field's converter where the row asks for it
 * (the new reference is kept in owned[*n_owned]). */
static int put_arg(FieldTable* t, PyObject** stack, Py_ssize_t at, PyObject* arg, Py_ssize_t pos,
                   PyObject* name, PyObject** owned, Py_ssize_t* n_owned) {
  const Row* r = (t->flags & TABLE_CONVERTS) ? converting_row(t, pos, name) : NULL;
  if (r == NULL) {
    stack[at] = arg;
    return 0;
  }
  PyObject* v = PyObject_CallOneArg(r->converter, arg);
  if (v == NULL) return -1;
  owned[(*n_owned)++] = v;
  stack[at] = v;
  return 0;
}

/* The type's constructor called with the KWARGS protocol (positional values,
 * the marker, then name/value pairs); self takes the result's handle. An
 * argument given as MISSING (a signature's placeholder default) is left out. */
static int construct(FieldTable* t, PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                     PyObject* kwnames) {
  if (t->ffi_init == Py_None) {
    PyErr_Format(PyExc_TypeError,
                 "`%s` cannot be constructed directly. Define a custom __init__ or use a factory "
                 "method.",
                 _PyType_Name(Py_TYPE(self)));
    return -1;
  }
  Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
  Py_ssize_t cap = 2 + 2 * nargs + 1 + 2 * nkw;
  PyObject* small[40];
  PyObject** stack = 2 * cap <= 40 ? small : PyMem_Malloc(sizeof(PyObject*) * (size_t)(2 * cap));
  if (stack == NULL) {
    PyErr_NoMemory();
    return -1;
  }
  PyObject** owned = stack + cap;
  Py_ssize_t n = 0, n_owned = 0;
  int rc = 0;
  stack[n++] = self;
  stack[n++] = t->ffi_init;
  /* Positional arguments up to the first MISSING; the ones after it go by the
   * name of the field they set (the MISSING one's field keeps its default). */
  Py_ssize_t npos = 0;
  while (npos < nargs && args[npos] != g_missing) npos++;
  for (Py_ssize_t i = 0; rc == 0 && i < npos; i++) {
    rc = put_arg(t, stack, n++, args[i], i, NULL, owned, &n_owned);
  }
  if (rc == 0 && (nkw > 0 || npos < nargs)) stack[n++] = g_kwargs_marker;
  for (Py_ssize_t i = npos; rc == 0 && i < nargs; i++) {
    if (args[i] == g_missing) continue;
    if (i >= PyTuple_GET_SIZE(t->positional)) {
      PyErr_Format(PyExc_TypeError, "%U.__init__() takes %zd positional arguments but %zd were given",
                   t->type_key, PyTuple_GET_SIZE(t->positional), nargs);
      rc = -1;
      break;
    }
    Py_ssize_t row = PyLong_AsSsize_t(PyTuple_GET_ITEM(t->positional, i));
    stack[n++] = t->rows[row].name;
    rc = put_arg(t, stack, n++, args[i], i, NULL, owned, &n_owned);
  }
  for (Py_ssize_t i = 0; rc == 0 && i < nkw; i++) {
    if (args[nargs + i] == g_missing) continue;
    PyObject* name = PyTuple_GET_ITEM(kwnames, i);
    stack[n++] = name;
    rc = put_arg(t, stack, n++, args[nargs + i], -1, name, owned, &n_owned);
  }
  PyObject* res = rc == 0 ? tvmffi_init_handle(NULL, stack, n) : NULL;
  for (Py_ssize_t i = 0; i < n_owned; i++) Py_DECREF(owned[i]);
  if (stack != small) PyMem_Free(stack);
  if (res == NULL) return -1;
  Py_DECREF(res);
  return 0;
}

/* Computed fields (init_property): each stored once, after the constructor. */
static int run_init_props(FieldTable* t, PyObject* self) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t->init_props); i++) {
    PyObject* pair = PyTuple_GET_ITEM(t->init_props, i);
    PyObject* prop = PyTuple_GET_ITEM(pair, 0);
    PyObject* value = PyObject_CallOneArg(PyTuple_GET_ITEM(pair, 1), self);
    if (value == NULL) return -1;
    PyObject* call[3] = {prop, self, value};
    PyObject* r = PyObject_VectorcallMethod(g_set_name, call, 3,
                                            NULL);
    Py_DECREF(value);
    if (r == NULL) return -1;
    Py_DECREF(r);
  }
  return 0;
}

static int post_init(PyObject* self) {
  PyObject* hook = PyObject_GetAttr(self, g_post_init_name);
  if (hook == NULL) return -1;
  PyObject* r = PyObject_CallNoArgs(hook);
  Py_DECREF(hook);
  if (r == NULL) return -1;
  Py_DECREF(r);
  return 0;
}

/* ---- repr --------------------------------------------------------------- */

/* A str builder: CPython's public PyUnicodeWriter from 3.14, its private
 * predecessor before (the same operations). */
#if PY_VERSION_HEX >= 0x030E0000
typedef PyUnicodeWriter* Writer;
static Writer w_new(void) { return PyUnicodeWriter_Create(64); }
static int w_char(Writer w, Py_UCS4 c) { return PyUnicodeWriter_WriteChar(w, c); }
static int w_ascii(Writer w, const char* s) {
  return PyUnicodeWriter_WriteUTF8(w, s, (Py_ssize_t)strlen(s));
}
static int w_str(Writer w, PyObject* s) { return PyUnicodeWriter_WriteStr(w, s); }
static PyObject* w_finish(Writer w) { return PyUnicodeWriter_Finish(w); }
static void w_discard(Writer w) { PyUnicodeWriter_Discard(w); }
#else
typedef _PyUnicodeWriter* Writer;
static Writer w_new(void) {
  _PyUnicodeWriter* w = PyMem_Malloc(sizeof(_PyUnicodeWriter));
  if (w == NULL) {
    PyErr_NoMemory();
    return NULL;
  }
  _PyUnicodeWriter_Init(w);
  w->overallocate = 1;
  return w;
}
static int w_char(Writer w, Py_UCS4 c) { return _PyUnicodeWriter_WriteChar(w, c); }
static int w_ascii(Writer w, const char* s) {
  return _PyUnicodeWriter_WriteASCIIString(w, s, (Py_ssize_t)strlen(s));
}
static int w_str(Writer w, PyObject* s) { return _PyUnicodeWriter_WriteStr(w, s); }
static PyObject* w_finish(Writer w) {
  PyObject* out = _PyUnicodeWriter_Finish(w);
  PyMem_Free(w);
  return out;
}
static void w_discard(Writer w) {
  _PyUnicodeWriter_Dealloc(w);
  PyMem_Free(w);
}
#endif

/* One str in ReprPrint's form: double quotes, C escapes, non-ASCII as \u/\U. */
static int write_str(Writer w, PyObject* s) {
  Py_ssize_t n = PyUnicode_GET_LENGTH(s);
  int kind = PyUnicode_KIND(s);
  const void* data = PyUnicode_DATA(s);
  if (w_char(w, '"') < 0) return -1;
  for (Py_ssize_t i = 0; i < n; i++) {
    Py_UCS4 c = PyUnicode_READ(kind, data, i);
    char buf[16];
    const char* esc = NULL;
    switch (c) {
      case '"': esc = "\\\""; break;
      case '\\': esc = "\\\\"; break;
      case '\n': esc = "\\n"; break;
      case '\r': esc = "\\r"; break;
      case '\t': esc = "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          snprintf(buf, sizeof buf, "\\x%02x", (unsigned)c);
          esc = buf;
        } else if (c >= 0x10000) {
          snprintf(buf, sizeof buf, "\\U%08x", (unsigned)c);
          esc = buf;
        } else if (c >= 0x80) {
          snprintf(buf, sizeof buf, "\\u%04x", (unsigned)c);
          esc = buf;
        }
    }
    if ((esc != NULL ? w_ascii(w, esc) : w_char(w, c)) < 0) return -1;
  }
  return w_char(w, '"');
}

/* 1 when `value` was printed, 0 when it is not a plain value (the runtime prints it). */
static int write_plain(Writer w, PyObject* value) {
  char buf[64];
  if (value == Py_None) {
    snprintf(buf, sizeof buf, "None");
  } else if (PyBool_Check(value)) {
    snprintf(buf, sizeof buf, "%s", value == Py_True ? "True" : "False");
  } else if (PyLong_CheckExact(value)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow != 0) return 0; /* a BigInt: the runtime's */
    snprintf(buf, sizeof buf, "%lld", v);
  } else if (PyFloat_CheckExact(value)) {
    snprintf(buf, sizeof buf, "%g", PyFloat_AS_DOUBLE(value));
  } else if (PyUnicode_Check(value)) {
    return write_str(w, value) < 0 ? -1 : 1;
  } else {
    return 0;
  }
  return w_ascii(w, buf) < 0 ? -1 : 1;
}

/* NULL with no error set: a value needs the runtime's printer. */
static PyObject* repr_plain(FieldTable* t, PyObject* self) {
  Writer w = w_new();
  if (w == NULL) return NULL;
  int first = 1;
  if (w_str(w, t->type_key) < 0 || w_char(w, '(') < 0) goto fail;
  for (Py_ssize_t i = 0; i < Py_SIZE(t); i++) {
    Row* r = &t->rows[i];
    if (!(r->flags & ROW_REPR)) continue;
    PyObject* value = row_get(r, self);
    if (value == NULL) goto fail;
    int rc = -1;
    if ((first || w_ascii(w, ", ") == 0) && w_str(w, r->name) == 0 && w_char(w, '=') == 0) {
      rc = write_plain(w, value);
    }
    Py_DECREF(value);
    if (rc <= 0) {
      w_discard(w);
      return NULL; /* rc 0: no error, the caller falls back */
    }
    first = 0;
  }
  if (w_char(w, ')') < 0) goto fail;
  return w_finish(w);
fail:
  w_discard(w);
  return NULL;
}

static PyObject* table_repr_of(FieldTable* t, PyObject* self) {
  if (!(t->flags & TABLE_CUSTOM_REPR) && HANDLE(self) != NULL) {
    PyObject* s = repr_plain(t, self);
    if (s != NULL || PyErr_Occurred()) return s;
  }
  return PyObject_CallOneArg(g_repr_fallback, self);
}

/* ---- equality and hash -------------------------------------------------- */

/* 1 equal, 0 not, -1 error, 2 not a pair of plain values of one type. */
static int plain_equal(PyObject* a, PyObject* b) {
  if (Py_TYPE(a) != Py_TYPE(b)) return 2;
  if (a == b) return 1;
  if (PyFloat_CheckExact(a)) {
    double x = PyFloat_AS_DOUBLE(a), y = PyFloat_AS_DOUBLE(b);
    return x == y || (isnan(x) && isnan(y));
  }
  if (PyLong_CheckExact(a) || PyUnicode_Check(a) || PyBool_Check(a)) {
    return PyObject_RichCompareBool(a, b, Py_EQ);
  }
  return a == Py_None ? 1 : 2;
}

/* 1 equal, 0 not, -1 error, 2 a value needs the runtime. */
static int fields_equal(FieldTable* t, PyObject* a, PyObject* b) {
  for (Py_ssize_t i = 0; i < Py_SIZE(t); i++) {
    Row* r = &t->rows[i];
    if (!(r->flags & ROW_COMPARE)) continue;
    PyObject* x = row_get(r, a);
    if (x == NULL) return -1;
    PyObject* y = row_get(r, b);
    if (y == NULL) {
      Py_DECREF(x);
      return -1;
    }
    int eq = plain_equal(x, y);
    Py_DECREF(x);
    Py_DECREF(y);
    if (eq != 1) return eq;
  }
  return 1;
}

static PyObject* recursive(int which, PyObject* a, PyObject* b) {
  PyObject* args[2] = {a, b};
  PyObject* f = g_recursive[which];
  if (Py_TYPE(f) == &TVMFFIFunctionType && HANDLE(f) != NULL) {
    return tvmffi_call_handle(HANDLE(f), args, b == NULL ? 1 : 2, 0, 0);
  }
  return PyObject_Vectorcall(f, args, b == NULL ? 1 : 2, NULL);
}

static PyObject* table_compare(FieldTable* t, PyObject* a, PyObject* b, int op) {
  if (Py_TYPE(a) != Py_TYPE(b)) Py_RETURN_NOTIMPLEMENTED;
  if (op == Py_EQ || op == Py_NE) {
    int eq = a == b ? 1 : 2;
    if (eq == 2 && HANDLE(a) == HANDLE(b)) eq = 1;
    if (eq == 2) eq = fields_equal(t, a, b);
    if (eq == 2) {
      PyObject* r = recursive(0, a, b);
      if (r == NULL) return NULL;
      eq = PyObject_IsTrue(r);
      Py_DECREF(r);
    }
    if (eq < 0) return NULL;
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
  }
  int which = op == Py_LT ? 2 : op == Py_LE ? 3 : op == Py_GT ? 4 : 5;
  return recursive(which, a, b);
}

/* Hash of one plain value, equal for RecursiveEq-equal values; 0 with *plain
 * cleared for a value that needs the runtime. */
static Py_hash_t plain_hash(PyObject* v, int* plain) {
  *plain = 1;
  if (v == Py_None) return 0x345678;
  if (PyFloat_CheckExact(v)) {
    double x = PyFloat_AS_DOUBLE(v);
    if (isnan(x)) return 0x7ff8;
    return PyObject_Hash(v); /* -0.0 and 0.0 hash alike */
  }
  if (PyLong_CheckExact(v) || PyUnicode_Check(v) || PyBool_Check(v)) return PyObject_Hash(v);
  *plain = 0;
  return 0;
}

static PyObject* table_hash_of(FieldTable* t, PyObject* self) {
  /* The combination of a tuple's hash (xxHash's rounds), seeded by the type. */
  Py_uhash_t acc = 0x27D4EB2F165667C5ULL ^ (Py_uhash_t)PyObject_Hash(t->type_key);
  for (Py_ssize_t i = 0; i < Py_SIZE(t); i++) {
    Row* r = &t->rows[i];
    if (!(r->flags & ROW_HASH)) continue;
    PyObject* v = row_get(r, self);
    if (v == NULL) return NULL;
    int plain;
    Py_hash_t h = plain_hash(v, &plain);
    Py_DECREF(v);
    if (!plain) return recursive(1, self, NULL);
    if (h == -1 && PyErr_Occurred()) return NULL;
    acc += (Py_uhash_t)h * 14029467366897019727ULL;
    acc = (acc << 31) | (acc >> 33);
    acc *= 11400714785074694791ULL;
  }
  Py_hash_t out = (Py_hash_t)acc;
  return PyLong_FromSsize_t(out == -1 ? -2 : out);
}

/* ---- copies and __replace__ -------------------------------------------- */

static PyObject* table_deepcopy(PyObject* self, PyObject* memo) {
  PyObject* copy = PyObject_CallOneArg(g_deep_copy, self);
  if (copy == NULL || memo == NULL || memo == Py_None) return copy;
  PyObject* key = PyLong_FromVoidPtr(self);
  int rc = key == NULL ? -1 : PyObject_SetItem(memo, key, copy);
  Py_XDECREF(key);
  if (rc != 0) Py_CLEAR(copy);
  return copy;
}

static PyObject* table_copy(FieldTable* t, PyObject* self) {
  if (t->shallow_copy == Py_None) {
    PyErr_Format(PyExc_TypeError,
                 "Type `%U` does not support copy: it registers no __ffi_shallow_copy__ "
                 "(its C++ class is not copy-constructible)",
                 t->type_key);
    return NULL;
  }
  /* The runtime's copy is short: called with the GIL kept. */
  if (Py_TYPE(t->shallow_copy) == &TVMFFIFunctionType && HANDLE(t->shallow_copy) != NULL) {
    return tvmffi_call_handle(HANDLE(t->shallow_copy), &self, 1, 0, 0);
  }
  return PyObject_CallOneArg(t->shallow_copy, self);
}

static const Row* find_row(FieldTable* t, PyObject* name) {
  if (!PyUnicode_Check(name)) return NULL;
  for (Py_ssize_t i = 0; i < Py_SIZE(t); i++) {
    int eq = PyUnicode_Compare(t->rows[i].name, name);
    if (eq == 0) return &t->rows[i];
  }
  return NULL;
}

/* A shallow copy with the named fields set (frozen ones too). */
static PyObject* table_replace(FieldTable* t, PyObject* self, PyObject* const* values,
                               PyObject* kwnames) {
  Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t i = 0; i < nkw; i++) {
    PyObject* name = PyTuple_GET_ITEM(kwnames, i);
    const Row* r = find_row(t, name);
    if (r == NULL) {
      PyErr_Format(PyExc_TypeError, "replace() got an unexpected field %R", name);
      return NULL;
    }
    if (!(r->flags & ROW_INIT)) {
      PyErr_Format(PyExc_ValueError,
                   "field %R is declared with init=False, it cannot be specified with "
                   "replace()",
                   name);
      return NULL;
    }
  }
  PyObject* copy = table_copy(t, self);
  for (Py_ssize_t i = 0; copy != NULL && i < nkw; i++) {
    const Row* r = find_row(t, PyTuple_GET_ITEM(kwnames, i));
    PyObject* call[3] = {r->prop, copy, values[i]};
    PyObject* res = PyObject_VectorcallMethod(g_set_name, call, 3, NULL);
    if (res == NULL) Py_CLEAR(copy);
    Py_XDECREF(res);
  }
  return copy;
}

/* ---- TableMethod: the dunders ------------------------------------------- */

typedef enum {
  M_INIT,
  M_FFI_INIT,
  M_REPR,
  M_EQ,
  M_NE,
  M_LT,
  M_LE,
  M_GT,
  M_GE,
  M_HASH,
  M_COPY,
  M_DEEPCOPY,
  M_REPLACE,
  M_COUNT
} MethodKind;

static const char* const kMethodNames[M_COUNT] = {
    "__init__", "__ffi_init__", "__repr__", "__eq__",   "__ne__",      "__lt__",      "__le__",
    "__gt__",   "__ge__",       "__hash__", "__copy__", "__deepcopy__", "__replace__"};

typedef struct {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  FieldTable* table;
  PyObject* owner;     /* the class it was made for (__ffi_init__'s type guard) */
  PyObject* signature; /* inspect.Signature or NULL (inspect.signature reads it) */
  PyObject* qualname;
  PyObject* wrapped; /* __init__ over a class body's own: that function, else NULL */
  PyObject* ffi_new; /* with wrapped: the type's allocator (__ffi_new__) */
  MethodKind kind;
} TableMethod;

static int check_self(TableMethod* m, PyObject* const* args, size_t nargsf, Py_ssize_t want_min,
                      Py_ssize_t want_max, PyObject* kwnames, int kwargs_ok) {
  Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  if (n < 1 || !tvmffi_is_object(args[0])) {
    PyErr_Format(PyExc_TypeError, "%s() needs an FFI object as its first argument",
                 kMethodNames[m->kind]);
    return -1;
  }
  if ((n - 1 < want_min || (want_max >= 0 && n - 1 > want_max)) ||
      (!kwargs_ok && kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0)) {
    PyErr_Format(PyExc_TypeError, "%s() got the wrong number of arguments",
                 kMethodNames[m->kind]);
    return -1;
  }
  return 0;
}

static PyObject* reconstruct(FieldTable* t, PyObject* self, PyObject* const* args,
                             Py_ssize_t nargs, PyObject* kwnames);

static PyObject* method_init(TableMethod* m, PyObject* const* args, Py_ssize_t n,
                             PyObject* kwnames) {
  FieldTable* t = m->table;
  PyObject* self = args[0];
  if (m->kind == M_FFI_INIT && (PyObject*)Py_TYPE(self) != m->owner) {
    int32_t own = 0, mine = 0;
    if (tvmffi_class_type_index(Py_TYPE(self), &own) != 0 ||
        tvmffi_class_type_index((PyTypeObject*)m->owner, &mine) != 0 || own != mine) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError,
                   "%.200s.__ffi_init__ called on a %.200s object: constructing a subclass "
                   "through its base class's __ffi_init__ is not supported",
                   ((PyTypeObject*)m->owner)->tp_name, Py_TYPE(self)->tp_name);
      return NULL;
    }
  }
  if (m->kind == M_FFI_INIT) return reconstruct(t, self, args + 1, n - 1, kwnames);
  /* A base class's __init__ reached by super().__init__() from a subclass whose own
   * __init__ already has its object (allocated before that __init__ ran): nothing to
   * construct, the subclass sets its fields itself. */
  if (HANDLE(self) != NULL && (PyObject*)Py_TYPE(self) != m->owner) Py_RETURN_NONE;
  if (construct(t, self, args + 1, n - 1, kwnames) != 0) return NULL;
  if (m->kind == M_INIT) {
    if (PyTuple_GET_SIZE(t->init_props) > 0 && run_init_props(t, self) != 0) return NULL;
    if ((t->flags & TABLE_POST_INIT) && post_init(self) != 0) return NULL;
  }
  Py_RETURN_NONE;
}

/* __ffi_init__ on an object that has a handle already: the handle the
 * allocator gave it before the class body's __init__ ran, held by nothing
 * else, is replaced by the constructed one. */
static PyObject* reconstruct(FieldTable* t, PyObject* self, PyObject* const* args,
                             Py_ssize_t nargs, PyObject* kwnames) {
  TVMFFIPyObject* obj = (TVMFFIPyObject*)self;
  TVMFFIObjectHandle old = obj->handle;
  if (old != NULL) {
    uint64_t count = __atomic_load_n(&((TVMFFIObject*)old)->combined_ref_count, __ATOMIC_ACQUIRE);
    if ((count & 0xFFFFFFFFu) != 1) old = NULL; /* shared: init_handle refuses it */
  }
  if (old != NULL) obj->handle = NULL;
  if (construct(t, self, args, nargs, kwnames) != 0) {
    if (old != NULL && obj->handle == NULL) obj->handle = old;
    else if (old != NULL) tvmffi_object_release(old);
    return NULL;
  }
  if (old != NULL) tvmffi_object_release(old);
  Py_RETURN_NONE;
}

/* The class body's own __init__ of a @py_class: the object is allocated
 * first (fields at their zero values), so that the body can assign them. */
static PyObject* wrapped_init(TableMethod* m, PyObject* const* args, size_t nargsf,
                              PyObject* kwnames) {
  PyObject* self = args[0];
  if (m->ffi_new != NULL && HANDLE(self) == NULL) {
    PyObject* call[2] = {self, m->ffi_new};
    PyObject* r = tvmffi_init_handle(NULL, call, 2);
    if (r == NULL) return NULL;
    Py_DECREF(r);
  }
  return PyObject_Vectorcall(m->wrapped, args, nargsf, kwnames);
}

static PyObject* method_call(PyObject* op, PyObject* const* args, size_t nargsf,
                             PyObject* kwnames) {
  TableMethod* m = (TableMethod*)op;
  FieldTable* t = m->table;
  Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  switch (m->kind) {
    case M_INIT:
      if (m->wrapped != NULL) {
        if (check_self(m, args, nargsf, 0, -1, kwnames, 1) != 0) return NULL;
        return wrapped_init(m, args, nargsf, kwnames);
      }
      /* fall through */
    case M_FFI_INIT:
      if (check_self(m, args, nargsf, 0, -1, kwnames, 1) != 0) return NULL;
      return method_init(m, args, n, kwnames);
    case M_REPR:
      if (check_self(m, args, nargsf, 0, 0, kwnames, 0) != 0) return NULL;
      return table_repr_of(t, args[0]);
    case M_EQ:
    case M_NE:
    case M_LT:
    case M_LE:
    case M_GT:
    case M_GE: {
      static const int ops[] = {Py_EQ, Py_NE, Py_LT, Py_LE, Py_GT, Py_GE};
      if (check_self(m, args, nargsf, 1, 1, kwnames, 0) != 0) return NULL;
      return table_compare(t, args[0], args[1], ops[m->kind - M_EQ]);
    }
    case M_HASH:
      if (check_self(m, args, nargsf, 0, 0, kwnames, 0) != 0) return NULL;
      return table_hash_of(t, args[0]);
    case M_COPY:
      if (check_self(m, args, nargsf, 0, 0, kwnames, 0) != 0) return NULL;
      return table_copy(t, args[0]);
    case M_DEEPCOPY:
      if (check_self(m, args, nargsf, 0, 1, kwnames, 0) != 0) return NULL;
      return table_deepcopy(args[0], n > 1 ? args[1] : NULL);
    case M_REPLACE:
      if (check_self(m, args, nargsf, 0, 0, kwnames, 1) != 0) return NULL;
      return table_replace(t, args[0], args + n, kwnames);
    default:
      PyErr_SetString(PyExc_SystemError, "unknown table method");
      return NULL;
  }
}

static PyObject* method_descr_get(PyObject* op, PyObject* obj, PyObject* type) {
  (void)type;
  if (obj == NULL || obj == Py_None) return Py_NewRef(op);
  return PyMethod_New(op, obj);
}

static void method_dealloc(PyObject* op) {
  TableMethod* m = (TableMethod*)op;
  PyObject_GC_UnTrack(op);
  Py_XDECREF(m->table);
  Py_XDECREF(m->owner);
  Py_XDECREF(m->signature);
  Py_XDECREF(m->qualname);
  Py_XDECREF(m->wrapped);
  Py_XDECREF(m->ffi_new);
  PyObject_GC_Del(op);
}

static int method_traverse(PyObject* op, visitproc visit, void* arg) {
  TableMethod* m = (TableMethod*)op;
  Py_VISIT(m->table);
  Py_VISIT(m->owner);
  Py_VISIT(m->signature);
  Py_VISIT(m->wrapped);
  Py_VISIT(m->ffi_new);
  return 0;
}

static int method_clear(PyObject* op) {
  TableMethod* m = (TableMethod*)op;
  Py_CLEAR(m->owner);
  Py_CLEAR(m->signature);
  Py_CLEAR(m->wrapped);
  Py_CLEAR(m->ffi_new);
  return 0;
}

static PyObject* method_get_name(PyObject* op, void* c) {
  (void)c;
  return PyUnicode_FromString(kMethodNames[((TableMethod*)op)->kind]);
}

static PyObject* method_get_qualname(PyObject* op, void* c) {
  (void)c;
  TableMethod* m = (TableMethod*)op;
  if (m->qualname != NULL) return Py_NewRef(m->qualname);
  return method_get_name(op, c);
}

static PyObject* method_get_signature(PyObject* op, void* c) {
  (void)c;
  TableMethod* m = (TableMethod*)op;
  if (m->signature == NULL) {
    PyErr_SetString(PyExc_AttributeError, "__signature__");
    return NULL;
  }
  return Py_NewRef(m->signature);
}

static int method_set_signature(PyObject* op, PyObject* value, void* c) {
  (void)c;
  TableMethod* m = (TableMethod*)op;
  Py_XSETREF(m->signature, Py_XNewRef(value));
  return 0;
}

static PyObject* method_get_table(PyObject* op, void* c) {
  (void)c;
  return Py_NewRef((PyObject*)((TableMethod*)op)->table);
}

static PyObject* method_get_objclass(PyObject* op, void* c) {
  (void)c;
  TableMethod* m = (TableMethod*)op;
  return Py_NewRef(m->owner != NULL ? m->owner : Py_None);
}

/* A class body's own __init__ wrapped by the table keeps its docstring and is
 * reachable as __wrapped__ (as functools.wraps would give). */
static PyObject* method_get_doc(PyObject* op, void* c) {
  (void)c;
  TableMethod* m = (TableMethod*)op;
  if (m->wrapped != NULL) return PyObject_GetAttrString(m->wrapped, "__doc__");
  return PyUnicode_FromString(
      "A dataclass dunder of an FFI class, in C, reading the class's field table.");
}

static PyObject* method_get_wrapped(PyObject* op, void* c) {
  (void)c;
  TableMethod* m = (TableMethod*)op;
  if (m->wrapped == NULL) {
    PyErr_SetString(PyExc_AttributeError, "__wrapped__: this method wraps no function");
    return NULL;
  }
  return Py_NewRef(m->wrapped);
}

static PyGetSetDef method_getset[] = {
    {"__doc__", method_get_doc, NULL, NULL, NULL},
    {"__wrapped__", method_get_wrapped, NULL, NULL, NULL},
    {"__name__", method_get_name, NULL, NULL, NULL},
    {"__qualname__", method_get_qualname, NULL, NULL, NULL},
    {"__signature__", method_get_signature, method_set_signature, NULL, NULL},
    {"__objclass__", method_get_objclass, NULL, NULL, NULL},
    {"__ffi_field_table__", method_get_table, NULL, "the table the method reads", NULL},
    {NULL}};

static PyObject* method_repr(PyObject* op) {
  TableMethod* m = (TableMethod*)op;
  return PyUnicode_FromFormat("<field-table method %s of %U>", kMethodNames[m->kind],
                              m->table->type_key);
}

static PyTypeObject TableMethodType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.core.TableMethod",
    .tp_basicsize = sizeof(TableMethod),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "A dataclass dunder of an FFI class, in C, reading the class's field table.",
    .tp_vectorcall_offset = offsetof(TableMethod, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = method_descr_get,
    .tp_dealloc = method_dealloc,
    .tp_traverse = method_traverse,
    .tp_clear = method_clear,
    .tp_getset = method_getset,
    .tp_repr = method_repr,
};

/* _table_method(table, kind_name, owner, qualname[, wrapped, ffi_new]) -> TableMethod */
static PyObject* py_table_method(PyObject* self, PyObject* args) {
  (void)self;
  PyObject *table, *owner, *qualname, *wrapped = NULL, *ffi_new = NULL;
  const char* name;
  if (!PyArg_ParseTuple(args, "O!sOU|OO", &FieldTableType, &table, &name, &owner, &qualname,
                        &wrapped, &ffi_new)) {
    return NULL;
  }
  int kind = -1;
  for (int i = 0; i < M_COUNT; i++) {
    if (strcmp(name, kMethodNames[i]) == 0) kind = i;
  }
  if (kind < 0) {
    PyErr_Format(PyExc_ValueError, "no field-table method %s", name);
    return NULL;
  }
  TableMethod* m = PyObject_GC_New(TableMethod, &TableMethodType);
  if (m == NULL) return NULL;
  m->vectorcall = method_call;
  m->table = (FieldTable*)Py_NewRef(table);
  m->owner = Py_NewRef(owner);
  m->signature = NULL;
  m->qualname = Py_NewRef(qualname);
  m->wrapped = wrapped == NULL || wrapped == Py_None ? NULL : Py_NewRef(wrapped);
  m->ffi_new = ffi_new == NULL || ffi_new == Py_None ? NULL : Py_NewRef(ffi_new);
  m->kind = (MethodKind)kind;
  PyObject_GC_Track((PyObject*)m);
  return (PyObject*)m;
}

static PyMethodDef field_table_functions[] = {
    {"_field_table", py_field_table, METH_VARARGS,
     "(type_key, ffi_init, shallow_copy, rows, init_props, positional, flags) -> FieldTable"},
    {"_field_table_setup", py_field_table_setup, METH_VARARGS,
     "(eq, hash, lt, le, gt, ge, deep_copy, repr_fallback, kwargs, missing)"},
    {"_table_method", py_table_method, METH_VARARGS,
     "(table, dunder_name, owner, qualname) -> the dunder reading the table"},
    {NULL}};

int tvmffi_field_table_init(PyObject* module) {
  if (PyType_Ready(&FieldTableType) < 0 || PyType_Ready(&TableMethodType) < 0) return -1;
  if (PyModule_AddObjectRef(module, "FieldTable", (PyObject*)&FieldTableType) < 0) return -1;
  if (PyModule_AddObjectRef(module, "TableMethod", (PyObject*)&TableMethodType) < 0) return -1;
  g_post_init_name = PyUnicode_InternFromString("__post_init__");
  g_set_name = PyUnicode_InternFromString("set");
  if (g_post_init_name == NULL || g_set_name == NULL) return -1;
  return PyModule_AddFunctions(module, field_table_functions);
}
