/*
 * Object.__move_handle_from__(other): self takes the FFI object other holds,
 * and other is left empty (official name and semantics). Subclasses of
 * Function use it to become a function made elsewhere (a JIT compiler's
 * `class Compiled(tvm_ffi.Function, ...)` takes over the function it built).
 *
 * The reference moves, so the object's count does not change: the one
 * reference other owned is now self's, released once, when self dies.
 *
 * Refused, with nothing changed:
 *  - other not a tvmffi Object (TypeError), or empty (ValueError);
 *  - self already holding an object (RuntimeError): a handle, once set, stays
 *    until its wrapper dies (calls in flight rely on that; reflection.c);
 *  - an object whose type is not the one self's class stands for (TypeError):
 *    a Function wrapper reads its call slots from the handle, a registered
 *    class reads its fields at the offsets of its type.
 */
#include "core.h"

/* Whether the object's type is `want` or derives from it. */
static int type_derives_from(TVMFFIObjectHandle handle, int32_t want) {
  int32_t index = tvmffi_type_index_of(handle);
  if (index == want) return 1;
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(index);
  if (info == NULL) return 0;
  for (int32_t d = 0; d < info->type_depth; ++d) {
    if (info->type_ancestors[d]->type_index == want) return 1;
  }
  return 0;
}

/* The type index instances of cls must hold (-1: any object), or -2 on error. */
static int32_t required_type_index(PyTypeObject* cls) {
  if (PyType_IsSubtype(cls, &TVMFFIFunctionType)) return kTVMFFIFunction;
  if (PyType_IsSubtype(cls, &TVMFFITensorType)) return kTVMFFITensor;
  int32_t index;
  if (tvmffi_class_type_index(cls, &index) != 0) return -2;
  return index;
}

/* A type's key as a str, for messages ("ffi.Array"). */
static PyObject* type_key_text(int32_t index) {
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(index);
  if (info == NULL) return PyUnicode_FromFormat("<type %d>", (int)index);
  return PyUnicode_FromStringAndSize(info->type_key.data, (Py_ssize_t)info->type_key.size);
}

static int check_compatible(PyObject* self, TVMFFIObjectHandle handle) {
  int32_t want = required_type_index(Py_TYPE(self));
  if (want == -2) return -1;
  if (want < 0 || type_derives_from(handle, want)) return 0;
  PyObject* need = type_key_text(want);
  PyObject* have = need ? type_key_text(tvmffi_type_index_of(handle)) : NULL;
  if (have != NULL) {
    PyErr_Format(PyExc_TypeError, "__move_handle_from__: %.200s holds '%U' objects, not '%U'",
                 Py_TYPE(self)->tp_name, need, have);
  }
  Py_XDECREF(need);
  Py_XDECREF(have);
  return -1;
}

static int is_function(PyObject* op) { return PyObject_TypeCheck(op, &TVMFFIFunctionType); }

PyObject* tvmffi_object_move_handle_from(PyObject* self, PyObject* other) {
  if (!tvmffi_is_object(other)) {
    PyErr_Format(PyExc_TypeError, "__move_handle_from__ expects a tvmffi.Object, not %.200s",
                 Py_TYPE(other)->tp_name);
    return NULL;
  }
  TVMFFIPyObject* src = (TVMFFIPyObject*)other;
  TVMFFIPyObject* dst = (TVMFFIPyObject*)self;
  TVMFFIObjectHandle handle = src->handle;
  if (handle == NULL) {
    PyErr_Format(PyExc_ValueError,
                 "__move_handle_from__: the %.200s moved from holds no FFI handle (moved already?)",
                 Py_TYPE(other)->tp_name);
    return NULL;
  }
  if (dst->handle != NULL) {
    PyErr_Format(PyExc_RuntimeError,
                 "__move_handle_from__: %.200s object already holds an FFI object; a handle "
                 "cannot be replaced (move into a new, empty instance)",
                 Py_TYPE(self)->tp_name);
    return NULL;
  }
  if (check_compatible(self, handle) != 0) return NULL;
  int flags = is_function(other) ? ((TVMFFIPyFunction*)other)->builtin_flags : 0;
  /* Emptied first: other's slots never point at a handle it no longer owns. */
  if (is_function(other)) {
    tvmffi_function_set_handle(other, NULL, 0);
  } else {
    src->handle = NULL;
  }
  if (is_function(self)) {
    tvmffi_function_set_handle(self, handle, flags);
  } else {
    dst->handle = handle;
  }
  dst->dlpack_api = src->dlpack_api;
  dst->graph_height = src->graph_height;
  src->dlpack_api = NULL;
  src->graph_height = 0;
  Py_RETURN_NONE;
}
