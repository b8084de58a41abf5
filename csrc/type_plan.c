/*
 * TypeConverter: a TypeSchema compiled once into a plan (type_plan.h).
 *
 * TypeConverter(schema, object_hook) walks the schema tree (origin, args,
 * origin_type_index, type_key) into pre-ordered nodes; object_hook(schema)
 * gives an object node its payload lookup (payload enums) or None. The
 * converter is then used three ways, all running type_apply.c:
 *   conv(value)           -> the converted value as Python (vectorcall)
 *   conv.convert(value)   -> a CAny;  conv.check(value) -> None
 *   tvmffi_converter_to_any / the runtime's field setters (f_convert), for
 *   fields typed by the schema: reason-only TypeErrors.
 */
#include "type_plan.h"

#include <string.h>

/* ---- compiling ------------------------------------------------------------------ */
typedef struct {
  const char* origin;
  TPKind kind;
  int32_t type_index;
} OriginKind;

/* The origins with a kind of their own; any other origin names an object type. */
static const OriginKind kOrigins[] = {
    {"Any", TP_ANY, kTVMFFIAny},
    {"None", TP_NONE, kTVMFFINone},
    {"int", TP_INT, kTVMFFIInt},
    {"bool", TP_BOOL, kTVMFFIBool},
    {"float", TP_FLOAT, kTVMFFIFloat},
    {"str", TP_STR, kTVMFFIStr},
    {"bytes", TP_BYTES, kTVMFFIBytes},
    {"dtype", TP_DTYPE, kTVMFFIDataType},
    {"Device", TP_DEVICE, kTVMFFIDevice},
    {"ctypes.c_void_p", TP_OPAQUE_PTR, kTVMFFIOpaquePtr},
    {"Tensor", TP_TENSOR, kTVMFFITensor},
    {"Callable", TP_CALLABLE, kTVMFFIFunction},
    {"Object", TP_OBJECT, kTVMFFIObject},
    {"Array", TP_ARRAY, kTVMFFIArray},
    {"List", TP_LIST, kTVMFFIList},
    {"list", TP_LIST, kTVMFFIList},
    {"Map", TP_MAP, kTVMFFIMap},
    {"Dict", TP_DICT, kTVMFFIDict},
    {"dict", TP_DICT, kTVMFFIDict},
    {"tuple", TP_TUPLE, kTVMFFIArray},
    {"Optional", TP_OPTIONAL, kTVMFFINone},
    {"Union", TP_UNION, kTVMFFINone},
};

typedef struct {
  TPNode* nodes;
  int32_t nnodes, cap_nodes;
  int32_t* children;
  int32_t nchildren, cap_children;
  PyObject* hook_factory;
  int depth;
} Builder;

static int grow(void** buf, int32_t* cap, int32_t need, size_t item) {
  if (need <= *cap) return 0;
  int32_t cap2 = *cap ? *cap * 2 : 8;
  while (cap2 < need) cap2 *= 2;
  void* p = PyMem_Realloc(*buf, (size_t)cap2 * item);
  if (p == NULL) {
    PyErr_NoMemory();
    return -1;
  }
  *buf = p;
  *cap = cap2;
  return 0;
}

static int kind_of_origin(PyObject* schema, const char* origin, TPKind* kind, int32_t* index) {
  for (size_t i = 0; i < sizeof(kOrigins) / sizeof(kOrigins[0]); ++i) {
    if (strcmp(origin, kOrigins[i].origin) == 0) {
      *kind = kOrigins[i].kind;
      *index = kOrigins[i].type_index;
      return 0;
    }
  }
  PyObject* ti = PyObject_GetAttrString(schema, "origin_type_index");
  if (ti == NULL) return -1;
  long v = PyLong_AsLong(ti);
  Py_DECREF(ti);
  if (v == -1 && PyErr_Occurred()) return -1;
  if (v < kTVMFFIStaticObjectBegin) {
    PyErr_Format(PyExc_TypeError, "unknown TypeSchema origin '%s'", origin);
    return -1;
  }
  *kind = TP_OBJECT;
  *index = (int32_t)v;
  return 0;
}

/* The big-int key on an "int" schema: then any Python int fits. */
static int accepts_big_ints(PyObject* schema) {
  PyObject* key = PyObject_GetAttrString(schema, "type_key");
  if (key == NULL) return -1;
  int big = PyUnicode_Check(key) && PyUnicode_CompareWithASCIIString(key, "ffi.BigInt") == 0;
  Py_DECREF(key);
  return big;
}

static int32_t compile_node(Builder* b, PyObject* schema);

/* The node's children (`args`; None: a bare tuple), compiled after it. */
static int compile_children(Builder* b, int32_t self, PyObject* schema) {
  PyObject* args = PyObject_GetAttrString(schema, "args");
  if (args == NULL) return -1;
  if (args == Py_None) {
    Py_DECREF(args);
    b->nodes[self].nchild = -1;
    return 0;
  }
  PyObject* seq = PySequence_Tuple(args);
  Py_DECREF(args);
  if (seq == NULL) return -1;
  Py_ssize_t n = PyTuple_GET_SIZE(seq);
  int32_t first = b->nchildren;
  int rc = n > INT32_MAX / 2 ? -1 : grow((void**)&b->children, &b->cap_children,
                                         b->nchildren + (int32_t)n, sizeof(int32_t));
  if (rc == 0) {
    b->nchildren += (int32_t)n;
    b->nodes[self].first_child = first;
    b->nodes[self].nchild = (int32_t)n;
  }
  for (Py_ssize_t i = 0; rc == 0 && i < n; ++i) {
    int32_t child = compile_node(b, PyTuple_GET_ITEM(seq, i));
    if (child < 0) rc = -1;
    else b->children[first + i] = child;
  }
  Py_DECREF(seq);
  return rc;
}

/* Containers and callables are named by their origin alone in "expected X"
 * (the element types show in the element's own message); NULL: the full text. */
static PyObject* short_name(TPKind kind) {
  switch (kind) {
    case TP_ARRAY: return PyUnicode_FromString("Array");
    case TP_LIST: return PyUnicode_FromString("List");
    case TP_MAP: return PyUnicode_FromString("Map");
    case TP_DICT: return PyUnicode_FromString("Dict");
    case TP_TUPLE: return PyUnicode_FromString("tuple");
    case TP_CALLABLE: return PyUnicode_FromString("Callable");
    default: return NULL;
  }
}

/* The node's own facts: kind, target, text, hook. */
static int fill_node(Builder* b, TPNode* node, PyObject* schema) {
  PyObject* origin = PyObject_GetAttrString(schema, "origin");
  if (origin == NULL) return -1;
  const char* text = PyUnicode_Check(origin) ? PyUnicode_AsUTF8(origin) : NULL;
  if (text == NULL) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "TypeSchema origin must be a str");
    Py_DECREF(origin);
    return -1;
  }
  int rc = kind_of_origin(schema, text, &node->kind, &node->type_index);
  Py_DECREF(origin);
  if (rc != 0) return -1;
  if (node->kind == TP_INT) {
    int big = accepts_big_ints(schema);
    if (big < 0) return -1;
    if (big) node->type_index = kTVMFFIBigInt;
  }
  node->text = short_name(node->kind);
  if (node->text == NULL) node->text = PyObject_Str(schema);
  if (node->text == NULL) return -1;
  /* The hook also vouches for the target index: the runtime aborts the
   * process on type info of an index it never assigned. */
  if (node->kind == TP_OBJECT && node->type_index != kTVMFFIObject) {
    PyObject* hook = PyObject_CallOneArg(b->hook_factory, schema);
    if (hook == NULL) return -1;
    if (hook == Py_None) Py_DECREF(hook);
    else node->hook = hook;
  }
  return 0;
}

static int32_t compile_node(Builder* b, PyObject* schema) {
  if (++b->depth > 200) {
    PyErr_SetString(PyExc_RecursionError, "TypeSchema nested too deeply to compile");
    return -1;
  }
  if (grow((void**)&b->nodes, &b->cap_nodes, b->nnodes + 1, sizeof(TPNode)) != 0) return -1;
  int32_t self = b->nnodes++;
  memset(&b->nodes[self], 0, sizeof(TPNode));
  if (fill_node(b, &b->nodes[self], schema) != 0) return -1;
  TPKind kind = b->nodes[self].kind;
  int has_args = kind >= TP_ARRAY && kind <= TP_UNION;
  if (has_args && compile_children(b, self, schema) != 0) return -1;
  --b->depth;
  return self;
}

static void free_nodes(TPNode* nodes, int32_t n) {
  for (int32_t i = 0; i < n; ++i) {
    Py_XDECREF(nodes[i].text);
    Py_XDECREF(nodes[i].hook);
  }
  PyMem_Free(nodes);
}

/* ---- the TypeConverter object ------------------------------------------------------ */
static PyObject* conv_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf,
                                 PyObject* kwnames);

static PyObject* conv_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject *schema, *hook_factory;
  if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) {
    return PyErr_Format(PyExc_TypeError, "TypeConverter takes no keyword arguments");
  }
  if (!PyArg_ParseTuple(args, "OO:TypeConverter", &schema, &hook_factory)) return NULL;
  Builder b = {.hook_factory = hook_factory};
  if (compile_node(&b, schema) < 0) {
    free_nodes(b.nodes, b.nnodes);
    PyMem_Free(b.children);
    return NULL;
  }
  TypeConverterObject* self = (TypeConverterObject*)type->tp_alloc(type, 0);
  if (self == NULL) {
    free_nodes(b.nodes, b.nnodes);
    PyMem_Free(b.children);
    return NULL;
  }
  self->vectorcall = conv_vectorcall;
  self->nnodes = b.nnodes;
  self->nodes = b.nodes;
  self->children = b.children;
  self->repr = PyObject_Str(schema);
  if (self->repr == NULL) {
    Py_DECREF(self);
    return NULL;
  }
  return (PyObject*)self;
}

static void conv_dealloc(PyObject* op) {
  TypeConverterObject* self = (TypeConverterObject*)op;
  free_nodes(self->nodes, self->nnodes);
  PyMem_Free(self->children);
  Py_XDECREF(self->repr);
  Py_TYPE(op)->tp_free(op);
}

/* A reason-only error (any Exception) as TypeError("<what> <schema>: <reason>"). */
static void prefix_error(const TypeConverterObject* c, const char* what) {
  if (!PyErr_ExceptionMatches(PyExc_Exception)) return;
  PyObject* exc = tvmffi_fetch_exception();
  PyObject* msg = exc == NULL ? NULL : PyObject_Str(exc);
  Py_XDECREF(exc);
  if (msg == NULL) return;
  PyErr_Format(PyExc_TypeError, "%s %U: %U", what, c->repr, msg);
  Py_DECREF(msg);
}

static int convert_value(PyObject* self, PyObject* value, TVMFFIAny* out, const char* what) {
  const TypeConverterObject* c = (const TypeConverterObject*)self;
  if (tp_apply_py(c, value, out) == 0) return 0;
  prefix_error(c, what);
  return -1;
}

static PyObject* conv_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf,
                                 PyObject* kwnames) {
  Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  if (n != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
    return PyErr_Format(PyExc_TypeError, "TypeConverter takes exactly one argument (%zd given)", n);
  }
  TVMFFIAny out;
  if (convert_value(self, args[0], &out, "type conversion failed for") != 0) return NULL;
  PyObject* res = tvmffi_any_to_py_class(&out);
  tvmffi_any_release(&out);
  return res;
}

static PyObject* conv_convert(PyObject* self, PyObject* value) {
  TVMFFIAny out;
  if (convert_value(self, value, &out, "type conversion failed for") != 0) return NULL;
  return tvmffi_cany_from_owned(&out);
}

static PyObject* conv_check(PyObject* self, PyObject* value) {
  TVMFFIAny out;
  if (convert_value(self, value, &out, "type check failed for") != 0) return NULL;
  tvmffi_any_release(&out);
  Py_RETURN_NONE;
}

/* convert_field(value) -> CAny: as a field setter converts (the reason alone on error). */
static PyObject* conv_convert_field(PyObject* self, PyObject* value) {
  TVMFFIAny out;
  if (tp_apply_py((const TypeConverterObject*)self, value, &out) != 0) return NULL;
  return tvmffi_cany_from_owned(&out);
}

/* ---- field setters ------------------------------------------------------------------ */
int tvmffi_converter_to_any(PyObject* conv, PyObject* value, TVMFFIAny* out) {
  if (!PyObject_TypeCheck(conv, &TVMFFITypeConverterType)) {
    PyErr_Format(PyExc_TypeError, "expected a TypeConverter, got %.200s", Py_TYPE(conv)->tp_name);
    return -1;
  }
  return tp_apply_py((const TypeConverterObject*)conv, value, out);
}

/* Views the runtime may hand a setter that are not owned-Any shaped (a raw C
 * string, a byte array, an rvalue reference): normalized first. */
static int is_view_only(int32_t ti) {
  return ti == kTVMFFIRawStr || ti == kTVMFFIByteArrayPtr || ti == kTVMFFIObjectRValueRef;
}

static int apply_from_runtime(const TypeConverterObject* c, const TVMFFIAny* value,
                              TVMFFIAny* result) {
  if (!is_view_only(value->type_index)) return tp_apply_any(c, c->nodes, value, result, NULL);
  TVMFFIAny owned;
  if (TVMFFIAnyViewToOwnedAny(value, &owned) != 0) {
    tvmffi_raise_ffi_error();
    return -1;
  }
  int rc = tp_apply_any(c, c->nodes, &owned, result, NULL);
  tvmffi_any_release(&owned);
  return rc;
}

/* The f_convert of ffi.MakeFieldSetter: every write of a typed field (the
 * runtime's __ffi_init__, defaults, attribute assignment, other languages)
 * passes here. Plain scalars are settled without Python; the rest takes the
 * GIL (the runtime may call from any thread) and runs the plan. */
static int conv_f_convert(void* self, const TVMFFIAny* value, TVMFFIAny* result) {
  const TypeConverterObject* c = self;
  if (tp_apply_plain(c->nodes, value, result)) return 0;
  result->type_index = kTVMFFINone;
  result->zero_padding = 0;
  result->v_int64 = 0;
  int held = tvmffi_holds_gil();
  if (!held && TVMFFI_PY_UNUSABLE()) {
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", "field converter called after Python exit");
    return -1;
  }
  PyGILState_STATE gil = held ? PyGILState_UNLOCKED : PyGILState_Ensure();
  int rc = apply_from_runtime(c, value, result) == 0 ? 0 : tvmffi_set_ffi_error_from_py();
  if (!held) PyGILState_Release(gil);
  return rc;
}

/* _setter_entry() -> (converter address, f_convert address): what ffi.MakeFieldSetter
 * takes. The caller keeps the converter alive as long as the setter (a type's
 * fields live as long as the process). */
static PyObject* conv_setter_entry(PyObject* self, PyObject* unused) {
  (void)unused;
  return Py_BuildValue("(NN)", PyLong_FromVoidPtr(self),
                       PyLong_FromVoidPtr((void*)(uintptr_t)&conv_f_convert));
}

static PyObject* conv_repr(PyObject* self) {
  return PyUnicode_FromFormat("TypeConverter(%U)", ((TypeConverterObject*)self)->repr);
}

static PyMethodDef conv_methods[] = {
    {"convert", conv_convert, METH_O, "convert(value) -> CAny; TypeError when it does not fit"},
    {"check", conv_check, METH_O, "check(value) -> None; TypeError when it does not fit"},
    {"convert_field", conv_convert_field, METH_O,
     "convert_field(value) -> CAny, as a field setter does (TypeError: the reason only)"},
    {"_setter_entry", conv_setter_entry, METH_NOARGS,
     "() -> (converter address, f_convert address) for ffi.MakeFieldSetter"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject TVMFFITypeConverterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.core.TypeConverter",
    .tp_basicsize = sizeof(TypeConverterObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "TypeConverter(schema, object_hook): a TypeSchema compiled for conversion.\n"
              "conv(value) converts to a Python value; .convert / .check as TypeSchema's.",
    .tp_new = conv_new,
    .tp_dealloc = conv_dealloc,
    .tp_repr = conv_repr,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(TypeConverterObject, vectorcall),
    .tp_methods = conv_methods,
};

int tvmffi_type_plan_init(PyObject* module) {
  if (PyType_Ready(&TVMFFITypeConverterType) < 0) return -1;
  return PyModule_AddObjectRef(module, "TypeConverter", (PyObject*)&TVMFFITypeConverterType);
}
