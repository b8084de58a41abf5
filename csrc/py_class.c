/*
 * FFI object types defined in Python (tvmffi.dataclasses.py_class).
 *
 * Such a type is allocated in the runtime's type table under the parent's
 * index. Its fields are registered here with the layout the Python layer
 * computed (each one an owned Any at its offset, after the parent's fields);
 * the runtime's ffi._PyClassRegisterTypeAttrColumns then gives the type its
 * allocator (__ffi_new__), reflection-driven constructor (__ffi_init__),
 * shallow copy and deleter, exactly as for the official binding's py_class
 * types, so every binding builds, reads, writes and frees these objects.
 */
#include "core.h"

#include <string.h>

static int any_field_get(void* field, TVMFFIAny* result) {
  *result = *(const TVMFFIAny*)field;
  if (result->type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectIncRef(result->v_obj);
  return 0;
}

static int any_field_set(void* field, const TVMFFIAny* value) {
  TVMFFIAny owned;
  if (TVMFFIAnyViewToOwnedAny(value, &owned) != 0) return -1;
  TVMFFIAny* slot = field;
  TVMFFIAny old = *slot;
  *slot = owned;
  if (old.type_index >= kTVMFFIStaticObjectBegin) tvmffi_object_release(old.v_obj);
  return 0;
}

/* Typed fields convert through their TypeSchema's compiled plan: the Python
 * layer hands ffi.MakeFieldSetter a TypeConverter's f_convert (type_plan.c). */

static int key_arg(PyObject* s, TVMFFIByteArray* out) {
  Py_ssize_t n;
  const char* p = PyUnicode_AsUTF8AndSize(s, &n);
  if (p == NULL) return -1;
  out->data = p;
  out->size = (size_t)n;
  return 0;
}

/* _py_class_alloc_type(type_key, parent_index) -> type index */
static PyObject* py_alloc_type(PyObject* self, PyObject* args) {
  (void)self;
  PyObject* key;
  int parent;
  if (!PyArg_ParseTuple(args, "Ui", &key, &parent)) return NULL;
  const TVMFFITypeInfo* pinfo = TVMFFIGetTypeInfo(parent);
  if (pinfo == NULL) {
    tvmffi_discard_ffi_error();
    return PyErr_Format(PyExc_ValueError, "unknown parent type index %d", parent);
  }
  TVMFFIByteArray k;
  if (key_arg(key, &k) != 0) return NULL;
  int32_t index;
  TVMFFI_BEGIN_RUNTIME(NULL); /* the type table, which the runtime does not lock */
  index = TVMFFITypeGetOrAllocIndex(&k, -1, pinfo->type_depth + 1, 0, 1, parent);
  TVMFFI_END_RUNTIME();
  if (index < 0) return tvmffi_raise_ffi_error();
  return PyLong_FromLong(index);
}

/* _py_class_register_field(type_index, name, doc, metadata, flags, offset, size, alignment,
 *                          static_type_index, default, getter, setter)
 * One field at `offset` in the native layout the Python layer computed.
 * `getter` is a TVMFFIFieldGetter address (ffi.MakeFieldGetter) or 0 for an
 * Any-stored field's plain read; `setter` the Function ffi.MakeFieldSetter
 * made, or None for an Any-stored field's plain store (no conversion).
 * `default` (used when flags has HasDefault) is the default value or factory
 * Function. The type table copies the strings and keeps its own references. */
static PyObject* py_register_field(PyObject* self, PyObject* args) {
  (void)self;
  int index, static_index;
  long long flags, offset, size, alignment;
  PyObject *name, *doc, *metadata, *dflt, *getter, *setter;
  if (!PyArg_ParseTuple(args, "iUUULLLLiOOO", &index, &name, &doc, &metadata, &flags, &offset,
                        &size, &alignment, &static_index, &dflt, &getter, &setter)) {
    return NULL;
  }
  if (offset < (long long)sizeof(TVMFFIObject) || size <= 0 || alignment <= 0 ||
      offset % alignment != 0) {
    return PyErr_Format(PyExc_ValueError, "bad field layout: offset %lld size %lld align %lld",
                        offset, size, alignment);
  }
  TVMFFIFieldInfo info;
  memset(&info, 0, sizeof(info));
  if (key_arg(name, &info.name) != 0 || key_arg(doc, &info.doc) != 0 ||
      key_arg(metadata, &info.metadata) != 0) {
    return NULL;
  }
  info.flags = (int64_t)flags | kTVMFFIFieldFlagBitMaskWritable;
  info.size = size;
  info.alignment = alignment;
  info.offset = offset;
  info.field_static_type_index = static_index;
  void* getter_addr = PyLong_AsVoidPtr(getter);
  if (getter_addr == NULL && PyErr_Occurred()) return NULL;
  int plain_any = static_index == kTVMFFIAny && size == (long long)sizeof(TVMFFIAny);
  if (getter_addr == NULL || setter == Py_None) {
    if (!plain_any) {
      return PyErr_Format(PyExc_ValueError,
                          "field '%U' of static type %d needs the runtime's getter and setter",
                          name, static_index);
    }
  }
  info.getter = getter_addr != NULL ? (TVMFFIFieldGetter)getter_addr : any_field_get;
  info.setter = (void*)any_field_set;
  if (setter != Py_None) {
    if (!PyObject_TypeCheck(setter, &TVMFFIFunctionType)) {
      return PyErr_Format(PyExc_TypeError, "field setter must be a Function, got %.200s",
                          Py_TYPE(setter)->tp_name);
    }
    info.setter = tvmffi_object_handle(setter);
    if (info.setter == NULL) return NULL;
    info.flags |= kTVMFFIFieldFlagBitSetterIsFunctionObj;
  }
  info.default_value_or_factory.type_index = kTVMFFINone;
  TVMFFIAny owned_default = {.type_index = kTVMFFINone};
  if (info.flags & kTVMFFIFieldFlagBitMaskHasDefault) {
    if (tvmffi_py_to_owned_any(dflt, &owned_default) != 0) return NULL;
    info.default_value_or_factory = owned_default;
  }
  int rc = TVMFFITypeRegisterField(index, &info);
  tvmffi_any_release(&owned_default);
  if (rc != 0) return tvmffi_raise_ffi_error();
  Py_RETURN_NONE;
}

/* _py_class_register_metadata(type_index, total_size, structural_eq_hash_kind, doc) */
static PyObject* py_register_metadata(PyObject* self, PyObject* args) {
  (void)self;
  int index, total_size, kind;
  PyObject* doc;
  if (!PyArg_ParseTuple(args, "iiiU", &index, &total_size, &kind, &doc)) return NULL;
  if (kind < kTVMFFISEqHashKindUnsupported || kind > kTVMFFISEqHashKindUniqueInstance) {
    return PyErr_Format(PyExc_ValueError, "bad structural_eq_hash_kind %d", kind);
  }
  TVMFFITypeMetadata meta;
  memset(&meta, 0, sizeof(meta));
  if (key_arg(doc, &meta.doc) != 0) return NULL;
  meta.creator = NULL;
  meta.total_size = total_size;
  meta.structural_eq_hash_kind = (TVMFFISEqHashKind)kind;
  if (TVMFFITypeRegisterMetadata(index, &meta) != 0) return tvmffi_raise_ffi_error();
  Py_RETURN_NONE;
}

/* _py_class_register_method(type_index, name, func, is_static, doc, metadata="")
 * metadata: the method's reflection metadata JSON (its type_schema). */
static PyObject* py_register_method(PyObject* self, PyObject* args) {
  (void)self;
  int index, is_static;
  PyObject *name, *func, *doc, *metadata = NULL;
  if (!PyArg_ParseTuple(args, "iUO!pU|U", &index, &name, &TVMFFIFunctionType, &func, &is_static,
                        &doc, &metadata)) {
    return NULL;
  }
  TVMFFIMethodInfo info;
  memset(&info, 0, sizeof(info));
  if (key_arg(name, &info.name) != 0 || key_arg(doc, &info.doc) != 0) return NULL;
  if (metadata != NULL && key_arg(metadata, &info.metadata) != 0) return NULL;
  info.flags = is_static ? kTVMFFIFieldFlagBitMaskIsStaticMethod : 0;
  TVMFFIObjectHandle h = tvmffi_object_handle(func);
  if (h == NULL) return NULL;
  info.method.type_index = kTVMFFIFunction;
  info.method.v_obj = (TVMFFIObject*)h; /* the registry takes its own reference */
  if (TVMFFITypeRegisterMethod(index, &info) != 0) return tvmffi_raise_ffi_error();
  Py_RETURN_NONE;
}

/* _py_class_register_attr(type_index, name, value) */
static PyObject* py_register_attr(PyObject* self, PyObject* args) {
  (void)self;
  int index;
  PyObject *name, *value;
  if (!PyArg_ParseTuple(args, "iUO", &index, &name, &value)) return NULL;
  TVMFFIByteArray k;
  if (key_arg(name, &k) != 0) return NULL;
  TVMFFIAny v;
  if (tvmffi_py_to_owned_any(value, &v) != 0) return NULL;
  int rc = TVMFFITypeRegisterAttr(index, &k, &v);
  tvmffi_any_release(&v);
  if (rc != 0) return tvmffi_raise_ffi_error();
  Py_RETURN_NONE;
}

static PyMethodDef py_class_methods[] = {
    {"_py_class_alloc_type", py_alloc_type, METH_VARARGS, "(type_key, parent_index) -> index"},
    {"_py_class_register_field", py_register_field, METH_VARARGS,
     "(index, name, doc, metadata, flags, offset, size, alignment, static_index, default, "
     "getter, setter)"},
    {"_py_class_register_metadata", py_register_metadata, METH_VARARGS,
     "(index, total_size, structural_eq_hash_kind, doc)"},
    {"_py_class_register_method", py_register_method, METH_VARARGS,
     "(index, name, func, is_static, doc, metadata='')"},
    {"_py_class_register_attr", py_register_attr, METH_VARARGS, "(index, name, value)"},
    {NULL, NULL, 0, NULL},
};

int tvmffi_py_class_init(PyObject* module) {
  return PyModule_AddFunctions(module, py_class_methods);
}
