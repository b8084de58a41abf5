/*
 * Reflection: fast field access, method binding, constructor calls and raw
 * type-info export for the Python object layer (tvmffi/object.py).
 *
 *   FieldProperty    data descriptor over one TVMFFIFieldInfo (getter/setter)
 *   MethodDescriptor binds a reflected method Function to its instance
 *   _init_handle     self.handle = ffi_init(*args) (constructor path)
 *   _type_info       raw reflection tables as Python tuples
 *   _seq_size / _seq_getitem / _shape_tuple  direct container cell reads
 */
#include "core.h"

#include <string.h>

/* ---- FieldProperty ------------------------------------------------------- */
/* Plain-data fields whose storage a read can decode directly, without the
 * getter's indirect call and the Any round trip. Other fields use the getter. */
typedef enum { FIELD_VIA_GETTER, FIELD_INT64, FIELD_FLOAT64, FIELD_BOOL } FieldKind;

typedef struct {
  PyObject_HEAD
  const TVMFFIFieldInfo* field;
  int32_t type_index;    /* type that declares the field */
  int32_t type_depth;    /* its depth: where it sits among a subtype's ancestors */
  int32_t checked_index; /* last FFI type (the declaring one or a subtype) that passed */
  FieldKind kind;
  unsigned int checked_tag; /* version tag of the last instance type that passed the check */
  int frozen;               /* @py_class/@c_class frozen: assignment refused, .set() still writes */
  PyObject* name;
} FieldProperty;

static FieldKind field_kind(const TVMFFIFieldInfo* f) {
  /* Any stores every integer as int64, so an 8-byte int field (signed or not)
   * decodes to the same value the getter would give; narrower ones would need
   * the signedness the metadata does not record. */
  if (f->field_static_type_index == kTVMFFIInt && f->size == 8) return FIELD_INT64;
  if (f->field_static_type_index == kTVMFFIFloat && f->size == 8) return FIELD_FLOAT64;
  if (f->field_static_type_index == kTVMFFIBool && f->size == 1) return FIELD_BOOL;
  return FIELD_VIA_GETTER;
}

static int obj_handle(PyObject* obj, TVMFFIObjectHandle* out) {
  if (!tvmffi_is_object(obj)) {
    PyErr_Format(PyExc_TypeError, "expected a tvmffi.Object, got %.200s", Py_TYPE(obj)->tp_name);
    return -1;
  }
  *out = tvmffi_object_handle(obj);
  return *out != NULL ? 0 : -1;
}

/* Objects of FFI type `ti` have the field: the declaring type or a subtype. */
static int has_field(const FieldProperty* self, int32_t ti) {
  if (ti == self->type_index) return 1;
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(ti);
  return info != NULL && info->type_depth > self->type_depth &&
         info->type_ancestors[self->type_depth]->type_index == self->type_index;
}

/* Both types are registered with the runtime (one declares a field, the
 * other is a live object's), so their type info exists. */
static int field_type_error(const FieldProperty* self, TVMFFIObjectHandle h) {
  PyObject* want = tvmffi_bytearray_to_str(&TVMFFIGetTypeInfo(self->type_index)->type_key);
  PyObject* got = tvmffi_bytearray_to_str(&TVMFFIGetTypeInfo(tvmffi_type_index_of(h))->type_key);
  if (want != NULL && got != NULL) {
    PyErr_Format(PyExc_TypeError, "field '%U' belongs to %U objects, not to a %U object",
                 self->name, want, got);
  }
  Py_XDECREF(want);
  Py_XDECREF(got);
  return -1;
}

/* The full check: `obj` is a non-empty Object whose FFI type has the field.
 * Kept out of line so the cached path stays small (fewer saved registers). */
static Py_NO_INLINE int field_handle_slow(FieldProperty* self, PyObject* obj, TVMFFIObjectHandle* out) {
  if (obj_handle(obj, out) != 0) return -1;
  int32_t ti = tvmffi_type_index_of(*out);
  if (!has_field(self, ti)) return field_type_error(self, *out);
  /* Two words, each written whole: a reader pairing one with the other's old
   * value still sees a class and a type that passed has_field. */
  TVMFFI_RELAXED_STORE(self->checked_tag, tvmffi_tag_of(Py_TYPE(obj)));
  TVMFFI_RELAXED_STORE(self->checked_index, ti);
  return 0;
}

/* Handle of an object the field can be accessed on. A type's version tag
 * comes from a process-wide counter and is never reused (0 means none), so a
 * tag match proves the class already passed the Object check without holding
 * a reference to it. The class does not prove the FFI type (a plain Object
 * wraps any type, and __class__ can be reassigned between registered classes
 * of equal layout), so the handle's type index is compared on every access:
 * the declaring type and the last subtype seen pass without a lookup. */
static inline int field_handle(FieldProperty* self, PyObject* obj, TVMFFIObjectHandle* out) {
  unsigned int tag = tvmffi_tag_of(Py_TYPE(obj));
  if (tag != 0 && tag == TVMFFI_RELAXED_LOAD(self->checked_tag)) {
    TVMFFIObjectHandle h = ((TVMFFIPyObject*)obj)->handle;
    if (h != NULL) {
      int32_t ti = tvmffi_type_index_of(h);
      if (ti == self->type_index || ti == TVMFFI_RELAXED_LOAD(self->checked_index)) {
        *out = h;
        return 0;
      }
    }
  }
  return field_handle_slow(self, obj, out);
}

static PyObject* field_read(const TVMFFIFieldInfo* f, TVMFFIObjectHandle h) {
  TVMFFIAny result = {.type_index = kTVMFFINone};
  int rc;
  /* Without a GIL: another thread's write cannot drop the value being taken. */
  TVMFFI_BEGIN_RUNTIME(h);
  rc = f->getter((char*)h + f->offset, &result);
  TVMFFI_END_RUNTIME();
  if (rc != 0) return tvmffi_raise_ffi_error();
  return tvmffi_any_to_py_owned(&result);
}

/* The value an object-holding field has before a write, held across it: the
 * setter then never drops the last reference to a deep value inside the
 * runtime; we do, iteratively (teardown.c). None for other fields. */
static void field_hold_old(const TVMFFIFieldInfo* f, TVMFFIObjectHandle h, TVMFFIAny* old) {
  old->type_index = kTVMFFINone;
  int32_t ti = f->field_static_type_index;
  if ((ti != kTVMFFIAny && ti < kTVMFFIStaticObjectBegin) || f->getter == NULL) return;
  if (f->getter((char*)h + f->offset, old) != 0) {
    tvmffi_discard_ffi_error();
    old->type_index = kTVMFFINone;
  }
}

static int field_write(const TVMFFIFieldInfo* f, TVMFFIObjectHandle h, PyObject* value) {
  TempList temps;
  temps_init(&temps);
  TVMFFIAny arg;
  if (tvmffi_py_to_any(value, &arg, &temps, -1) != 0) {
    temps_release(&temps);
    return -1;
  }
  void* ptr = (char*)h + f->offset;
  TVMFFIAny old;
  int rc;
  /* Without a GIL: one write at a time, no reader mid-way, no graph walk. */
  TVMFFI_BEGIN_RUNTIME_CHANGE(h);
  field_hold_old(f, h, &old);
  if (f->flags & kTVMFFIFieldFlagBitSetterIsFunctionObj) {
    TVMFFIAny args[2];
    args[0].type_index = kTVMFFIOpaquePtr;
    args[0].zero_padding = 0;
    args[0].v_ptr = ptr;
    args[1] = arg;
    TVMFFIAny result = {.type_index = kTVMFFINone};
    rc = TVMFFIFunctionCall((TVMFFIObjectHandle)f->setter, args, 2, &result);
    if (rc == 0) tvmffi_any_release(&result);
  } else {
    rc = ((TVMFFIFieldSetter)f->setter)(ptr, &arg);
  }
  TVMFFI_END_RUNTIME_CHANGE();
  temps_release(&temps);
  tvmffi_any_release(&old);
  tvmffi_graph_mutated();
  if (rc != 0) {
    tvmffi_raise_ffi_error();
    return -1;
  }
  return 0;
}

static PyObject* fprop_get(PyObject* op, PyObject* obj, PyObject* type) {
  (void)type;
  FieldProperty* self = (FieldProperty*)op;
  if (obj == NULL || obj == Py_None) {
    Py_INCREF(op);
    return op;
  }
  TVMFFIObjectHandle h;
  if (field_handle(self, obj, &h) != 0) return NULL;
  const char* ptr = (const char*)h + self->field->offset;
  switch (self->kind) {
    case FIELD_INT64: {
      int64_t v;
      memcpy(&v, ptr, sizeof(v));
      return PyLong_FromLongLong(v);
    }
    case FIELD_FLOAT64: {
      double v;
      memcpy(&v, ptr, sizeof(v));
      return PyFloat_FromDouble(v);
    }
    case FIELD_BOOL:
      return PyBool_FromLong(*ptr != 0);
    default:
      return field_read(self->field, h);
  }
}

/* Writes through the field's setter; `force` (the .set() escape hatch, as the
 * official FFIProperty.set) also writes a field registered read-only, which
 * plain assignment refuses. A field without a setter is never written. */
static int fprop_write(FieldProperty* self, PyObject* obj, PyObject* value, int force) {
  if ((!force && !(self->field->flags & kTVMFFIFieldFlagBitMaskWritable)) ||
      self->field->setter == NULL) {
    PyErr_Format(PyExc_AttributeError, "field '%U' is read-only", self->name);
    return -1;
  }
  TVMFFIObjectHandle h;
  if (field_handle(self, obj, &h) != 0) return -1;
  return field_write(self->field, h, value);
}

static int fprop_set(PyObject* op, PyObject* obj, PyObject* value) {
  FieldProperty* self = (FieldProperty*)op;
  if (value == NULL) {
    PyErr_Format(PyExc_AttributeError, "cannot delete field '%U'", self->name);
    return -1;
  }
  if (self->frozen) {
    PyErr_Format(PyExc_AttributeError, "cannot assign to field '%U': it is frozen", self->name);
    return -1;
  }
  return fprop_write(self, obj, value, 0);
}

/* FFIProperty.set(obj, value): the escape hatch past `frozen` and read-only
 * (replace(), construction code); a field without a setter stays unwritable. */
static PyObject* fprop_set_method(PyObject* op, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_Format(PyExc_TypeError, "set() takes 2 arguments (obj, value), got %zd", nargs);
    return NULL;
  }
  if (fprop_write((FieldProperty*)op, args[0], args[1], 1) != 0) return NULL;
  Py_RETURN_NONE;
}

static void fprop_dealloc(PyObject* op) {
  PyObject_GC_UnTrack(op);
  Py_XDECREF(((FieldProperty*)op)->name);
  Py_TYPE(op)->tp_free(op);
}

static int fprop_traverse(PyObject* op, visitproc visit, void* arg) {
  Py_VISIT(((FieldProperty*)op)->name);
  return 0;
}

static PyObject* fprop_get_name(PyObject* op, void* c) {
  (void)c;
  PyObject* n = ((FieldProperty*)op)->name;
  Py_INCREF(n);
  return n;
}

static PyObject* fprop_get_doc(PyObject* op, void* c) {
  (void)c;
  const TVMFFIFieldInfo* f = ((FieldProperty*)op)->field;
  if (f->doc.size == 0) Py_RETURN_NONE;
  return tvmffi_bytearray_to_str(&f->doc);
}

/* property-compatible views: fget reads, fset writes (None when assignment is refused). */
static PyObject* fprop_get_fget(PyObject* op, void* c) {
  (void)c;
  return PyObject_GetAttrString(op, "__get__");
}

static PyObject* fprop_get_fset(PyObject* op, void* c) {
  (void)c;
  FieldProperty* self = (FieldProperty*)op;
  if (self->frozen || !(self->field->flags & kTVMFFIFieldFlagBitMaskWritable) ||
      self->field->setter == NULL) {
    Py_RETURN_NONE;
  }
  return PyObject_GetAttrString(op, "set");
}

static PyObject* fprop_get_frozen(PyObject* op, void* c) {
  (void)c;
  return PyBool_FromLong(((FieldProperty*)op)->frozen);
}

static PyMethodDef fprop_methods[] = {
    {"set", (PyCFunction)(void (*)(void))fprop_set_method, METH_FASTCALL,
     "set(obj, value): write the field, also when it is frozen."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef fprop_getset[] = {
    {"name", fprop_get_name, NULL, "Field name.", NULL},
    {"fget", fprop_get_fget, NULL, "The read function (property compatibility).", NULL},
    {"fset", fprop_get_fset, NULL, "The write function, None when frozen or read-only.", NULL},
    {"frozen", fprop_get_frozen, NULL, "Whether plain assignment is refused.", NULL},
    {"__doc__", fprop_get_doc, NULL, "Field doc.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject FieldPropertyType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.core.FieldProperty",
    .tp_basicsize = sizeof(FieldProperty),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, /* GC: tvmffi_defer_refcount */
    .tp_doc = "Reflected field of an FFI object type.",
    .tp_dealloc = fprop_dealloc,
    .tp_traverse = fprop_traverse,
    .tp_descr_get = fprop_get,
    .tp_descr_set = fprop_set,
    .tp_getset = fprop_getset,
    .tp_methods = fprop_methods,
};

static const TVMFFITypeInfo* type_info_checked(int type_index) {
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(type_index);
  if (info == NULL) PyErr_Format(PyExc_ValueError, "unknown type index %d", type_index);
  return info;
}

/* _field_property(type_index, field_pos, frozen=False) */
static PyObject* py_field_property(PyObject* m, PyObject* args) {
  (void)m;
  int type_index, pos, frozen = 0;
  if (!PyArg_ParseTuple(args, "ii|p", &type_index, &pos, &frozen)) return NULL;
  const TVMFFITypeInfo* info = type_info_checked(type_index);
  if (info == NULL) return NULL;
  if (pos < 0 || pos >= info->num_fields) {
    PyErr_SetString(PyExc_IndexError, "field position out of range");
    return NULL;
  }
  FieldProperty* p = PyObject_GC_New(FieldProperty, &FieldPropertyType);
  if (p == NULL) return NULL;
  p->field = &info->fields[pos];
  p->type_index = type_index;
  p->type_depth = info->type_depth;
  p->checked_index = type_index;
  p->kind = field_kind(p->field);
  p->checked_tag = 0;
  p->frozen = frozen;
  p->name = tvmffi_bytearray_to_str(&p->field->name);
  PyObject_GC_Track(p);
  if (p->name == NULL) {
    Py_DECREF(p);
    return NULL;
  }
  return tvmffi_defer_refcount((PyObject*)p); /* in a class dict */
}

/* ---- MethodDescriptor ---------------------------------------------------- */
typedef struct {
  PyObject_HEAD
  PyObject* func;
  vectorcallfunc func_vectorcall; /* func's own vectorcall; NULL when it has none */
  vectorcallfunc vectorcall;
  PyObject* doc; /* the reflected method's doc, or None */
} MethodDescriptor;

/* With Py_TPFLAGS_METHOD_DESCRIPTOR, `obj.m(a)` calls the descriptor itself
 * as m(obj, a) without creating a bound method. */
static PyObject* mdesc_vectorcall(PyObject* op, PyObject* const* args, size_t nargsf,
                                  PyObject* kwnames) {
  MethodDescriptor* self = (MethodDescriptor*)op;
  /* Reflected methods are FFI functions, whose vectorcall is fixed at
   * creation: calling it directly skips one dispatch through PyObject_Vectorcall. */
  if (self->func_vectorcall != NULL) {
    return self->func_vectorcall(self->func, args, nargsf, kwnames);
  }
  return PyObject_Vectorcall(self->func, args, nargsf, kwnames);
}

static PyObject* mdesc_get(PyObject* op, PyObject* obj, PyObject* type) {
  (void)type;
  MethodDescriptor* self = (MethodDescriptor*)op;
  if (obj == NULL) return Py_NewRef(op); /* Cls.m: callable as Cls.m(obj, ...), with m's doc */
  return PyMethod_New(self->func, obj);
}

static void mdesc_dealloc(PyObject* op) {
  PyObject_GC_UnTrack(op);
  Py_XDECREF(((MethodDescriptor*)op)->func);
  Py_XDECREF(((MethodDescriptor*)op)->doc);
  Py_TYPE(op)->tp_free(op);
}

/* A Python function as `func` refers back to its module and so to the class
 * holding this descriptor: a cycle the collector must see. No tp_clear: the
 * class and the function break it, and `func` is never NULL. */
static int mdesc_traverse(PyObject* op, visitproc visit, void* arg) {
  Py_VISIT(((MethodDescriptor*)op)->func);
  Py_VISIT(((MethodDescriptor*)op)->doc);
  return 0;
}

static PyObject* mdesc_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  (void)kwargs;
  PyObject* func;
  int is_static = 0;
  PyObject* doc = Py_None;
  if (!PyArg_ParseTuple(args, "O|pO", &func, &is_static, &doc)) return NULL;
  if (is_static) {
    /* The method-descriptor call path always passes the instance. */
    PyErr_SetString(PyExc_ValueError, "wrap static methods with staticmethod()");
    return NULL;
  }
  MethodDescriptor* self = (MethodDescriptor*)type->tp_alloc(type, 0);
  if (self == NULL) return NULL;
  Py_INCREF(func);
  self->func = func;
  self->func_vectorcall = PyVectorcall_Function(func);
  self->vectorcall = mdesc_vectorcall;
  self->doc = Py_NewRef(doc);
  return tvmffi_defer_refcount((PyObject*)self); /* in a class dict */
}

static PyObject* mdesc_get_func(PyObject* op, void* c) {
  (void)c;
  PyObject* f = ((MethodDescriptor*)op)->func;
  Py_INCREF(f);
  return f;
}

static PyObject* mdesc_get_doc(PyObject* op, void* c) {
  (void)c;
  return Py_NewRef(((MethodDescriptor*)op)->doc);
}

/* Cls.m.__name__ / __qualname__: the Function's (object.py names it). */
static PyObject* mdesc_get_func_attr(PyObject* op, void* name) {
  return PyObject_GetAttrString(((MethodDescriptor*)op)->func, (const char*)name);
}

static PyGetSetDef mdesc_getset[] = {
    {"__func__", mdesc_get_func, NULL, "The underlying Function.", NULL},
    {"__name__", mdesc_get_func_attr, NULL, "The reflected method's name.", "__name__"},
    {"__qualname__", mdesc_get_func_attr, NULL, "The method's qualified name.", "__qualname__"},
    {"__doc__", mdesc_get_doc, NULL, "The reflected method's doc.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject MethodDescriptorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.core.MethodDescriptor",
    .tp_basicsize = sizeof(MethodDescriptor),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_METHOD_DESCRIPTOR | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_HAVE_GC,
    .tp_doc = "MethodDescriptor(func): reflected instance method; calls func(self, ...).",
    .tp_traverse = mdesc_traverse,
    .tp_vectorcall_offset = offsetof(MethodDescriptor, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_dealloc = mdesc_dealloc,
    .tp_new = mdesc_new,
    .tp_descr_get = mdesc_get,
    .tp_getset = mdesc_getset,
};

/* ---- constructor path ---------------------------------------------------- */
/* _init_handle(self, func, *args): call func(*args); self takes the result. */
PyObject* tvmffi_init_handle(PyObject* m, PyObject* const* args, Py_ssize_t nargs) {
  (void)m;
  if (nargs < 2 || !tvmffi_is_object(args[0])) {
    PyErr_SetString(PyExc_TypeError, "_init_handle(self, func, *args)");
    return NULL;
  }
  /* The handle is called through its function cell: it must be a Function. */
  if (Py_TYPE(args[1]) != &TVMFFIFunctionType || ((TVMFFIPyObject*)args[1])->handle == NULL) {
    PyErr_Format(PyExc_TypeError, "_init_handle: func must be a tvmffi.Function, not %.200s",
                 Py_TYPE(args[1])->tp_name);
    return NULL;
  }
  TVMFFIPyObject* self = (TVMFFIPyObject*)args[0];
  /* A handle, once set, stays until the object dies. Any call, field access
   * or element read may be using it right now (packed as an argument while
   * Python code runs, or in another thread with the GIL released) and relies
   * on the Python object alone to keep it alive: replacing it would free it
   * under them. */
  if (self->handle != NULL) {
    PyErr_Format(PyExc_RuntimeError,
                 "%.200s object is already initialized; __init__ cannot replace its FFI "
                 "object (create a new %.200s instead)",
                 Py_TYPE(self)->tp_name, Py_TYPE(self)->tp_name);
    return NULL;
  }
  TVMFFIObjectHandle func = ((TVMFFIPyObject*)args[1])->handle;
  /* List([TensorView(a)]): a constructor that stores its arguments keeps views. */
  int keeps = (((TVMFFIPyFunction*)args[1])->builtin_flags & BUILTIN_KEEPS_ARGS) != 0;
  PyObject* res = tvmffi_call_handle(func, args + 2, nargs - 2, 0, keeps);
  if (res == NULL) return NULL;
  if (!tvmffi_is_object(res) || ((TVMFFIPyObject*)res)->handle == NULL) {
    PyErr_Format(PyExc_TypeError, "constructor returned %.200s, not an object",
                 Py_TYPE(res)->tp_name);
    Py_DECREF(res);
    return NULL;
  }
  TVMFFIObjectHandle h = ((TVMFFIPyObject*)res)->handle;
  TVMFFIObjectIncRef(h);
  Py_DECREF(res);
  if (self->handle != NULL) {
    /* The arguments' conversion ran Python code that initialized self. */
    TVMFFIObjectDecRef(h);
    PyErr_Format(PyExc_RuntimeError, "%.200s object was initialized during its own __init__",
                 Py_TYPE(self)->tp_name);
    return NULL;
  }
  self->handle = h;
  /* Array(...) / Map(...) of measured values: the height is known (any.c).
   * Anything else: not known (a handle moved out, obj._move(), may be replaced). */
  self->graph_height = tvmffi_ctor_graph_height(func, args + 2, nargs - 2);
  Py_RETURN_NONE;
}

/* ---- type info export ---------------------------------------------------- */
static PyObject* py_type_key_to_index(PyObject* m, PyObject* key) {
  (void)m;
  Py_ssize_t n;
  const char* s = PyUnicode_AsUTF8AndSize(key, &n);
  if (s == NULL) return NULL;
  TVMFFIByteArray b = {s, (size_t)n};
  int32_t idx;
  if (TVMFFITypeKeyToIndex(&b, &idx) != 0) {
    /* Unknown key: drop the runtime error and report None. */
    tvmffi_discard_ffi_error();
    Py_RETURN_NONE;
  }
  return PyLong_FromLong(idx);
}

/* _type_info(type_index) -> (type_index, type_key, ancestors, fields, methods, doc, total_size)
 * fields: (name, doc, metadata, flags, static_type_index, default or MISSING-sentinel,
 *          size, alignment, offset)
 * total_size: the type's own TVMFFITypeMetadata.total_size, or None when the type registered
 * no metadata of its own (then nothing is known about its native size).
 * methods: (name, doc, metadata, flags, func) */
static PyObject* py_type_info(PyObject* m, PyObject* args) {
  (void)m;
  int type_index;
  PyObject* missing;
  if (!PyArg_ParseTuple(args, "iO", &type_index, &missing)) return NULL;
  const TVMFFITypeInfo* info = type_info_checked(type_index);
  if (info == NULL) return NULL;
  PyObject *anc = NULL, *fields = NULL, *methods = NULL, *doc = NULL, *key = NULL;
  anc = PyList_New(info->type_depth);
  fields = PyList_New(info->num_fields);
  methods = PyList_New(info->num_methods);
  if (anc == NULL || fields == NULL || methods == NULL) goto fail;
  for (int32_t i = 0; i < info->type_depth; ++i) {
    PyObject* v = PyLong_FromLong(info->type_ancestors[i]->type_index);
    if (v == NULL) goto fail;
    PyList_SET_ITEM(anc, i, v);
  }
  for (int32_t i = 0; i < info->num_fields; ++i) {
    const TVMFFIFieldInfo* f = &info->fields[i];
    PyObject* dflt;
    if (f->flags & kTVMFFIFieldFlagBitMaskHasDefault) {
      dflt = tvmffi_any_to_py_borrowed(&f->default_value_or_factory);
      if (dflt == NULL) goto fail;
    } else {
      Py_INCREF(missing);
      dflt = missing;
    }
    PyObject* t = Py_BuildValue("(NNNLiNLLL)", tvmffi_bytearray_to_str(&f->name),
                                tvmffi_bytearray_to_str(&f->doc),
                                tvmffi_bytearray_to_str(&f->metadata), (long long)f->flags,
                                (int)f->field_static_type_index, dflt, (long long)f->size,
                                (long long)f->alignment, (long long)f->offset);
    if (t == NULL) goto fail;
    PyList_SET_ITEM(fields, i, t);
  }
  for (int32_t i = 0; i < info->num_methods; ++i) {
    const TVMFFIMethodInfo* mi = &info->methods[i];
    PyObject* fn = tvmffi_any_to_py_borrowed(&mi->method);
    if (fn == NULL) goto fail;
    PyObject* t = Py_BuildValue("(NNNLN)", tvmffi_bytearray_to_str(&mi->name),
                                tvmffi_bytearray_to_str(&mi->doc),
                                tvmffi_bytearray_to_str(&mi->metadata), (long long)mi->flags, fn);
    if (t == NULL) goto fail;
    PyList_SET_ITEM(methods, i, t);
  }
  if (info->metadata != NULL) {
    doc = tvmffi_bytearray_to_str(&info->metadata->doc);
  } else {
    doc = PyUnicode_FromStringAndSize("", 0);
  }
  key = tvmffi_bytearray_to_str(&info->type_key);
  if (doc == NULL || key == NULL) goto fail;
  PyObject* total_size;
  if (info->metadata != NULL) {
    total_size = PyLong_FromLong(info->metadata->total_size);
    if (total_size == NULL) goto fail;
  } else {
    total_size = Py_NewRef(Py_None);
  }
  return Py_BuildValue("(iNNNNNN)", type_index, key, anc, fields, methods, doc, total_size);
fail:
  Py_XDECREF(anc);
  Py_XDECREF(fields);
  Py_XDECREF(methods);
  Py_XDECREF(doc);
  Py_XDECREF(key);
  return NULL;
}

/* _lookup_type_attr(type_index, name) -> value or None */
static PyObject* py_lookup_type_attr(PyObject* m, PyObject* args) {
  (void)m;
  int type_index;
  const char* name;
  Py_ssize_t n;
  if (!PyArg_ParseTuple(args, "is#", &type_index, &name, &n)) return NULL;
  TVMFFIByteArray b = {name, (size_t)n};
  const TVMFFITypeAttrColumn* col = TVMFFIGetTypeAttrColumn(&b);
  if (col == NULL) Py_RETURN_NONE;
  int32_t off = type_index - col->begin_index;
  if (off < 0 || off >= col->size) Py_RETURN_NONE;
  return tvmffi_any_to_py_borrowed(&col->data[off]);
}

/* ---- containers ---------------------------------------------------------- */
static int seq_cell(PyObject* obj, TVMFFISeqCell** out) {
  TVMFFIObjectHandle h;
  if (obj_handle(obj, &h) != 0) return -1;
  int32_t ti = tvmffi_type_index_of(h);
  if (ti != kTVMFFIArray && ti != kTVMFFIList) {
    PyErr_SetString(PyExc_TypeError, "expected an ffi.Array or ffi.List");
    return -1;
  }
  *out = (TVMFFISeqCell*)tvmffi_cell(h);
  return 0;
}

static PyObject* py_seq_size(PyObject* m, PyObject* obj) {
  (void)m;
  TVMFFISeqCell* c;
  if (seq_cell(obj, &c) != 0) return NULL;
  int64_t size;
  TVMFFI_BEGIN_RUNTIME(((TVMFFIPyObject*)obj)->handle); /* a List another thread may resize */
  size = c->size;
  TVMFFI_END_RUNTIME();
  return PyLong_FromLongLong(size);
}

/* Element `i` of a sequence (negative: from the end) as an owned Any, read
 * under the runtime lock of the sequence: another thread's ffi.ListSetItem
 * cannot free it, or a resize move it, while it is taken. 0, or -1 with
 * IndexError. */
static int seq_take(PyObject* seq, TVMFFISeqCell* c, Py_ssize_t i, TVMFFIAny* out) {
  int rc = 0;
  TVMFFI_BEGIN_RUNTIME(((TVMFFIPyObject*)seq)->handle);
  if (i < 0) i += (Py_ssize_t)c->size;
  if (i < 0 || i >= (Py_ssize_t)c->size) {
    rc = -1;
  } else {
    *out = ((TVMFFIAny*)c->data)[i];
    if (out->type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectIncRef(out->v_obj);
  }
  TVMFFI_END_RUNTIME();
  if (rc != 0) PyErr_SetString(PyExc_IndexError, "index out of range");
  return rc;
}

static PyObject* py_seq_getitem(PyObject* m, PyObject* const* args, Py_ssize_t nargs) {
  (void)m;
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "_seq_getitem(seq, index)");
    return NULL;
  }
  TVMFFISeqCell* c;
  if (seq_cell(args[0], &c) != 0) return NULL;
  Py_ssize_t i = PyNumber_AsSsize_t(args[1], PyExc_IndexError);
  if (i == -1 && PyErr_Occurred()) return NULL;
  const DLPackExchangeAPI* api = ((TVMFFIPyObject*)args[0])->dlpack_api;
#ifndef Py_GIL_DISABLED
  /* With the GIL no other thread changes the sequence while it is read. */
  if (i < 0) i += (Py_ssize_t)c->size;
  if (i < 0 || i >= (Py_ssize_t)c->size) {
    PyErr_SetString(PyExc_IndexError, "index out of range");
    return NULL;
  }
  const TVMFFIAny* item = &((TVMFFIAny*)c->data)[i];
  if (api == NULL) return tvmffi_any_to_py_borrowed(item);
#endif
  /* A container from a framework's call: its tensors as the framework's. */
  TVMFFIAny owned;
  if (seq_take(args[0], c, i, &owned) != 0) return NULL;
  return tvmffi_any_to_py_result(&owned, api);
}

/* Call a function handle with AnyView arguments; the result is owned. */
static int call_handle(TVMFFIObjectHandle f, TVMFFIAny* args, int32_t nargs, TVMFFIAny* out) {
  out->type_index = kTVMFFINone;
  out->zero_padding = 0;
  out->v_int64 = 0;
  if (TVMFFIFunctionCall(f, args, nargs, out) != 0) {
    tvmffi_raise_ffi_error();
    return -1;
  }
  return 0;
}

static void set_int_arg(TVMFFIAny* a, int64_t v) {
  a->type_index = kTVMFFIInt;
  a->zero_padding = 0;
  a->v_int64 = v;
}

/* Walk a Map/Dict with the runtime's iterator functor (functor(0) key,
 * functor(1) value, functor(2) advance), collecting owned values: per entry
 * the key (what 0), the value (1) or both (3). No Python code runs from the
 * size query to the last step (conversion comes after), so no other Python
 * thread can mutate the map under the iterator: the result is a consistent
 * snapshot, as list(d.items()) is for a Python dict. items[0, *count) are
 * owned by the caller, also on failure. */
static int map_collect(TVMFFIObjectHandle map, TVMFFIObjectHandle iter_fn, int what,
                       TVMFFIAny* items, Py_ssize_t* count) {
  TVMFFIAny arg, functor, flag;
  arg.type_index = tvmffi_type_index_of(map);
  arg.zero_padding = 0;
  arg.v_obj = (TVMFFIObject*)map;
  if (call_handle(iter_fn, &arg, 1, &functor) != 0) return -1;
  if (functor.type_index != kTVMFFIFunction) {
    tvmffi_any_release(&functor);
    PyErr_SetString(PyExc_TypeError, "map iterator is not a function");
    return -1;
  }
  int per = what == 3 ? 2 : 1;
  Py_ssize_t cap = *count;
  int rc = 0;
  for (*count = 0; *count + per <= cap && rc == 0;) {
    for (int k = 0; k < per && rc == 0; ++k) {
      set_int_arg(&arg, what == 3 ? k : what);
      rc = call_handle(functor.v_obj, &arg, 1, &items[*count]);
      if (rc == 0) ++*count;
    }
    if (rc == 0) {
      set_int_arg(&arg, 2);
      rc = call_handle(functor.v_obj, &arg, 1, &flag);
      if (rc != 0) break;
      int more = flag.type_index == kTVMFFIBool && flag.v_int64 != 0;
      tvmffi_any_release(&flag);
      if (!more) break;
    }
  }
  tvmffi_any_release(&functor);
  return rc;
}

/* The map's size, then its entries in *items (PyMem, owned, *count values;
 * NULL for an empty map). 0 or -1 with an error set (nothing to free). */
static int map_take(TVMFFIObjectHandle map, TVMFFIObjectHandle size_fn,
                    TVMFFIObjectHandle iter_fn, int per, int what, TVMFFIAny** items,
                    Py_ssize_t* count) {
  TVMFFIAny arg = {.type_index = tvmffi_type_index_of(map), .v_obj = (TVMFFIObject*)map};
  TVMFFIAny size;
  if (call_handle(size_fn, &arg, 1, &size) != 0) return -1;
  Py_ssize_t n = size.type_index == kTVMFFIInt ? (Py_ssize_t)size.v_int64 : 0;
  tvmffi_any_release(&size);
  if (n <= 0) return 0;
  /* Still no Python code since the size query: the map cannot have changed. */
  *items = PyMem_Calloc((size_t)n * (size_t)per, sizeof(TVMFFIAny));
  if (*items == NULL) return PyErr_NoMemory(), -1;
  *count = n * per;
  if (map_collect(map, iter_fn, what, *items, count) == 0) return 0;
  for (Py_ssize_t i = 0; i < *count; ++i) tvmffi_any_release(&(*items)[i]);
  PyMem_Free(*items);
  *items = NULL;
  return -1;
}

/* _map_snapshot(map, size_fn, iter_fn, what) -> tuple of keys (what 0),
 * values (1) or (key, value) pairs (3), taken atomically (see map_collect). */
static PyObject* py_map_snapshot(PyObject* m, PyObject* const* args, Py_ssize_t nargs) {
  (void)m;
  int what;
  if (nargs != 4 || !tvmffi_is_object(args[0]) ||
      !PyObject_TypeCheck(args[1], &TVMFFIFunctionType) ||
      !PyObject_TypeCheck(args[2], &TVMFFIFunctionType) ||
      ((what = PyLong_AsLong(args[3])) != 0 && what != 1 && what != 3)) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "_map_snapshot(map, size, iter, what)");
    return NULL;
  }
  TVMFFIObjectHandle map = tvmffi_object_handle(args[0]);
  TVMFFIObjectHandle size_fn = tvmffi_object_handle(args[1]);
  TVMFFIObjectHandle iter_fn = tvmffi_object_handle(args[2]);
  if (map == NULL || size_fn == NULL || iter_fn == NULL) return NULL;
  int per = what == 3 ? 2 : 1;
  TVMFFIAny* items = NULL;
  Py_ssize_t count = 0;
  int rc;
  /* Without a GIL the map's lock (the one its mutating builtins take) is held
   * from the size query to the last step, as the GIL is on the default build. */
  TVMFFI_BEGIN_RUNTIME(map);
  rc = map_take(map, size_fn, iter_fn, per, what, &items, &count);
  TVMFFI_END_RUNTIME();
  if (rc != 0) return NULL;
  if (count == 0) {
    PyMem_Free(items);
    return PyTuple_New(0);
  }
  PyObject* res = PyTuple_New(count / per);
  Py_ssize_t i = 0;
  for (; res != NULL && i + per <= count; i += per) {
    /* Each conversion consumes its value, also when it fails. */
    PyObject* v = tvmffi_any_to_py_owned(&items[i]);
    if (per == 2) {
      PyObject* second = tvmffi_any_to_py_owned(&items[i + 1]);
      PyObject* pair = v != NULL && second != NULL ? PyTuple_Pack(2, v, second) : NULL;
      Py_XDECREF(v);
      Py_XDECREF(second);
      v = pair;
    }
    if (v == NULL) {
      Py_CLEAR(res);
      i += per;
      break;
    }
    PyTuple_SET_ITEM(res, i / per, v);
  }
  for (; i < count; ++i) tvmffi_any_release(&items[i]);
  PyMem_Free(items);
  return res;
}

static PyObject* py_shape_tuple(PyObject* m, PyObject* obj) {
  (void)m;
  TVMFFIObjectHandle h;
  if (obj_handle(obj, &h) != 0) return NULL;
  if (tvmffi_type_index_of(h) != kTVMFFIShape) {
    PyErr_SetString(PyExc_TypeError, "expected an ffi.Shape");
    return NULL;
  }
  TVMFFIShapeCell* c = (TVMFFIShapeCell*)tvmffi_cell(h);
  PyObject* t = PyTuple_New((Py_ssize_t)c->size);
  if (t == NULL) return NULL;
  for (size_t i = 0; i < c->size; ++i) {
    PyObject* v = PyLong_FromLongLong(c->data[i]);
    if (v == NULL) {
      Py_DECREF(t);
      return NULL;
    }
    PyTuple_SET_ITEM(t, (Py_ssize_t)i, v);
  }
  return t;
}

static PyMethodDef reflection_methods[] = {
    {"_field_property", py_field_property, METH_VARARGS, "_field_property(type_index, pos)"},
    {"_init_handle", (PyCFunction)(void (*)(void))tvmffi_init_handle, METH_FASTCALL,
     "_init_handle(self, func, *args)"},
    {"_type_key_to_index", py_type_key_to_index, METH_O, "Type index of a key, or None."},
    {"_type_info", py_type_info, METH_VARARGS, "_type_info(type_index, missing)"},
    {"_lookup_type_attr", py_lookup_type_attr, METH_VARARGS, "_lookup_type_attr(index, name)"},
    {"_seq_size", py_seq_size, METH_O, "Size of an Array/List."},
    {"_seq_getitem", (PyCFunction)(void (*)(void))py_seq_getitem, METH_FASTCALL,
     "_seq_getitem(seq, i)"},
    {"_shape_tuple", py_shape_tuple, METH_O, "Shape as a tuple of ints."},
    {"_map_snapshot", (PyCFunction)(void (*)(void))py_map_snapshot, METH_FASTCALL,
     "_map_snapshot(map, size_fn, iter_fn, what): keys/values/items taken atomically"},
    {"_set_object_hooks", tvmffi_set_object_hooks, METH_VARARGS,
     "_set_object_hooks(repr, getattr, dir, subclass)"},
    {NULL, NULL, 0, NULL},
};

int tvmffi_reflection_init(PyObject* module) {
  if (PyType_Ready(&FieldPropertyType) < 0 || PyType_Ready(&MethodDescriptorType) < 0) return -1;
  Py_INCREF(&FieldPropertyType);
  if (PyModule_AddObject(module, "FieldProperty", (PyObject*)&FieldPropertyType) < 0) return -1;
  Py_INCREF(&MethodDescriptorType);
  if (PyModule_AddObject(module, "MethodDescriptor", (PyObject*)&MethodDescriptorType) < 0) {
    return -1;
  }
  return PyModule_AddFunctions(module, reflection_methods);
}
