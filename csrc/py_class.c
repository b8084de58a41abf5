/*
 * FFI object types defined in Python (tvmffi.dataclasses.py_class).
 *
 * Such a type is allocated in the runtime's type table under the parent's
 * index, and its instances are FFI objects laid out as the C ABI says: the
 * object header, the number of fields, then one owned Any per field. Each
 * field is registered for reflection (offset, Any getter and setter), so
 * every binding reads and writes it, and tvmffi's own field properties work
 * on it unchanged; methods are registered as FFI functions.
 */
#include "core.h"

#include <string.h>

typedef struct {
  TVMFFIObject header;
  int64_t num_fields;
  TVMFFIAny fields[];
} PyClassObject;

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
  if (old.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(old.v_obj);
  return 0;
}

/* Runs without the GIL when the last reference goes away on another thread;
 * releasing the fields needs none (a Python payload's own deleter takes it). */
static void py_class_deleter(void* self, int flags) {
  PyClassObject* obj = self;
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    for (int64_t i = 0; i < obj->num_fields; ++i) {
      TVMFFIAny v = obj->fields[i];
      obj->fields[i].type_index = kTVMFFINone;
      if (v.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(v.v_obj);
    }
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) PyMem_RawFree(obj);
}

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
  int32_t index = TVMFFITypeGetOrAllocIndex(&k, -1, pinfo->type_depth + 1, 0, 1, parent);
  if (index < 0) return tvmffi_raise_ffi_error();
  return PyLong_FromLong(index);
}

/* _py_class_register_field(type_index, name, position) */
static PyObject* py_register_field(PyObject* self, PyObject* args) {
  (void)self;
  int index, pos;
  PyObject* name;
  if (!PyArg_ParseTuple(args, "iUi", &index, &name, &pos)) return NULL;
  TVMFFIFieldInfo info;
  memset(&info, 0, sizeof(info));
  if (key_arg(name, &info.name) != 0) return NULL;
  info.flags = kTVMFFIFieldFlagBitMaskWritable;
  info.size = sizeof(TVMFFIAny);
  info.alignment = 8;
  info.offset = (int64_t)(offsetof(PyClassObject, fields) + sizeof(TVMFFIAny) * (size_t)pos);
  info.getter = any_field_get;
  info.setter = (void*)any_field_set;
  info.default_value_or_factory.type_index = kTVMFFINone;
  info.field_static_type_index = kTVMFFIAny;
  if (TVMFFITypeRegisterField(index, &info) != 0) return tvmffi_raise_ffi_error();
  Py_RETURN_NONE;
}

/* _py_class_register_method(type_index, name, func, is_static, doc) */
static PyObject* py_register_method(PyObject* self, PyObject* args) {
  (void)self;
  int index, is_static;
  PyObject *name, *func, *doc;
  if (!PyArg_ParseTuple(args, "iUO!pU", &index, &name, &TVMFFIFunctionType, &func, &is_static,
                        &doc)) {
    return NULL;
  }
  TVMFFIMethodInfo info;
  memset(&info, 0, sizeof(info));
  if (key_arg(name, &info.name) != 0 || key_arg(doc, &info.doc) != 0) return NULL;
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

/* _py_class_init(self, type_index, num_fields): give an empty instance a new
 * object of the type, every field None. */
static PyObject* py_class_init(PyObject* self, PyObject* args) {
  (void)self;
  PyObject* obj;
  int index;
  Py_ssize_t n;
  if (!PyArg_ParseTuple(args, "O!in", &TVMFFIObjectType, &obj, &index, &n)) return NULL;
  if (n < 0 || n > 4096) return PyErr_Format(PyExc_ValueError, "bad field count %zd", n);
  if (((TVMFFIPyObject*)obj)->handle != NULL) {
    PyErr_SetString(PyExc_RuntimeError, "object is already initialized");
    return NULL;
  }
  PyClassObject* o =
      PyMem_RawCalloc(1, offsetof(PyClassObject, fields) + sizeof(TVMFFIAny) * (size_t)n);
  if (o == NULL) return PyErr_NoMemory();
  o->header.combined_ref_count = ((uint64_t)1 << 32) | 1u; /* one strong, one weak */
  o->header.type_index = index;
  o->header.deleter = py_class_deleter;
  o->num_fields = n; /* calloc: every field is kTVMFFINone (0) */
  ((TVMFFIPyObject*)obj)->handle = o;
  Py_RETURN_NONE;
}

static PyMethodDef py_class_methods[] = {
    {"_py_class_alloc_type", py_alloc_type, METH_VARARGS, "(type_key, parent_index) -> index"},
    {"_py_class_register_field", py_register_field, METH_VARARGS, "(index, name, position)"},
    {"_py_class_register_method", py_register_method, METH_VARARGS,
     "(index, name, func, is_static, doc)"},
    {"_py_class_register_attr", py_register_attr, METH_VARARGS, "(index, name, value)"},
    {"_py_class_init", py_class_init, METH_VARARGS, "(self, index, num_fields)"},
    {NULL, NULL, 0, NULL},
};

int tvmffi_py_class_init(PyObject* module) {
  return PyModule_AddFunctions(module, py_class_methods);
}
