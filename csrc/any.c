/*
 * The one place where Python values and TVMFFIAny convert, both directions.
 *
 * Python -> Any produces a *view*: it borrows from the Python object (kept
 * alive by the caller) or from temporaries recorded in a TempList. The hot
 * types are recognised by exact type first; everything else goes through the
 * slower protocol-based path.
 */
#include "core.h"

#include <string.h>

/* ---- Python -> Any: slow path helpers ------------------------------------ */
static int unsupported(PyObject* obj, Py_ssize_t argpos) {
  if (argpos >= 0) {
    PyErr_Format(PyExc_TypeError,
                 "argument %zd: cannot convert object of type '%.200s' to a TVM FFI value",
                 argpos, Py_TYPE(obj)->tp_name);
  } else {
    PyErr_Format(PyExc_TypeError, "cannot convert object of type '%.200s' to a TVM FFI value",
                 Py_TYPE(obj)->tp_name);
  }
  return -1;
}

static void set_object(TVMFFIAny* out, TVMFFIObjectHandle h) {
  out->type_index = tvmffi_type_index_of(h);
  out->zero_padding = 0;
  out->v_obj = (TVMFFIObject*)h;
}

/* Convert `n` Python items to views in `views`, then call a runtime
 * constructor (ffi.Array / ffi.Map) and keep the result as a temporary. */
static int build_container(const char* ctor, TVMFFIObjectHandle* cache, PyObject* const* items,
                           Py_ssize_t n, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos) {
  TVMFFIAny stack_views[16];
  TVMFFIAny* views = n <= 16 ? stack_views : PyMem_Malloc(sizeof(TVMFFIAny) * (size_t)n);
  if (views == NULL) return PyErr_NoMemory(), -1;
  int rc = 0;
  for (Py_ssize_t i = 0; i < n && rc == 0; ++i) {
    rc = tvmffi_py_to_any(items[i], &views[i], temps, argpos);
  }
  TVMFFIAny result = {.type_index = kTVMFFINone};
  if (rc == 0) rc = tvmffi_call_global_any(ctor, cache, views, (int32_t)n, &result);
  if (views != stack_views) PyMem_Free(views);
  if (rc != 0) return -1;
  if (temps_push(temps, result.v_obj) != 0) {
    TVMFFIObjectDecRef(result.v_obj);
    return -1;
  }
  set_object(out, result.v_obj);
  return 0;
}

static int seq_to_array(PyObject* seq, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos) {
  static TVMFFIObjectHandle ctor;
  PyObject* fast = PySequence_Fast(seq, "expected a sequence");
  if (fast == NULL) return -1;
  int rc = build_container("ffi.Array", &ctor, PySequence_Fast_ITEMS(fast),
                           PySequence_Fast_GET_SIZE(fast), out, temps, argpos);
  Py_DECREF(fast);
  return rc;
}

static int dict_to_map(PyObject* dict, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos) {
  static TVMFFIObjectHandle ctor;
  Py_ssize_t n = PyDict_Size(dict), pos = 0, i = 0;
  PyObject** kv = PyMem_Malloc(sizeof(PyObject*) * (size_t)(2 * n + 1));
  if (kv == NULL) return PyErr_NoMemory(), -1;
  PyObject *k, *v;
  while (PyDict_Next(dict, &pos, &k, &v)) {
    kv[i++] = k; /* borrowed: the dict is not mutated during the conversion */
    kv[i++] = v;
  }
  int rc = build_container("ffi.Map", &ctor, kv, i, out, temps, argpos);
  PyMem_Free(kv);
  return rc;
}

static int object_to_any(PyObject* obj, TVMFFIAny* out) {
  TVMFFIObjectHandle h = ((TVMFFIPyObject*)obj)->handle;
  if (h == NULL) {
    PyErr_Format(PyExc_ValueError, "%s object holds no FFI handle", Py_TYPE(obj)->tp_name);
    return -1;
  }
  set_object(out, h);
  return 0;
}

/* Keep a handle alive until the call returns (we take a new reference). */
static int borrow_into_temps(TVMFFIObjectHandle h, TVMFFIAny* out, TempList* temps) {
  TVMFFIObjectIncRef(h);
  if (temps_push(temps, h) != 0) {
    TVMFFIObjectDecRef(h);
    return -1;
  }
  set_object(out, h);
  return 0;
}

/* Optional conversion protocols shared with the official binding. Returns 1
 * when one applied, 0 when none did, -1 on error. */
static int protocol_to_any(PyObject* obj, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos) {
  static const char* const names[] = {"__tvm_ffi_object__", "__tvm_ffi_value__",
                                      "__tvm_ffi_int__", "__tvm_ffi_float__",
                                      "__tvm_ffi_opaque_ptr__"};
  for (int i = 0; i < 5; ++i) {
    PyObject* meth = PyObject_GetAttrString((PyObject*)Py_TYPE(obj), names[i]);
    if (meth == NULL) {
      PyErr_Clear();
      continue;
    }
    Py_DECREF(meth);
    PyObject* v = PyObject_CallMethod(obj, names[i], NULL);
    if (v == NULL) return -1;
    int rc;
    if (i == 4) {
      void* p = PyLong_AsVoidPtr(v);
      rc = (p == NULL && PyErr_Occurred()) ? -1 : 0;
      out->type_index = kTVMFFIOpaquePtr;
      out->zero_padding = 0;
      out->v_ptr = p;
    } else if (tvmffi_is_object(v)) {
      rc = borrow_into_temps(((TVMFFIPyObject*)v)->handle, out, temps);
    } else {
      /* Values that are plain Python objects are converted (and kept) as an
       * owned Any for the duration of the call. */
      TVMFFIAny owned;
      rc = tvmffi_py_to_owned_any(v, &owned);
      if (rc == 0 && owned.type_index >= kTVMFFIStaticObjectBegin) {
        rc = temps_push(temps, owned.v_obj);
        if (rc != 0) TVMFFIObjectDecRef(owned.v_obj);
      }
      if (rc == 0) *out = owned;
    }
    Py_DECREF(v);
    (void)argpos;
    return rc == 0 ? 1 : -1;
  }
  return 0;
}

static int void_p_to_any(PyObject* obj, TVMFFIAny* out) {
  PyObject* value = PyObject_GetAttrString(obj, "value");
  if (value == NULL) return -1;
  void* p = value == Py_None ? NULL : PyLong_AsVoidPtr(value);
  Py_DECREF(value);
  if (p == NULL && PyErr_Occurred()) return -1;
  out->type_index = kTVMFFIOpaquePtr;
  out->zero_padding = 0;
  out->v_ptr = p;
  return 0;
}

static int int_to_any(PyObject* obj, TVMFFIAny* out, TempList* temps) {
  int overflow;
  long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
  if (overflow) return tvmffi_bigint_to_any(obj, out, temps);
  if (v == -1 && PyErr_Occurred()) return -1;
  out->type_index = kTVMFFIInt;
  out->zero_padding = 0;
  out->v_int64 = v;
  return 0;
}

static int float_to_any(double v, TVMFFIAny* out) {
  out->type_index = kTVMFFIFloat;
  out->zero_padding = 0;
  out->v_float64 = v;
  return 0;
}

static int index_to_any(PyObject* obj, TVMFFIAny* out, TempList* temps) {
  PyObject* i = PyNumber_Index(obj);
  if (i == NULL) return -1;
  int rc = int_to_any(i, out, temps);
  Py_DECREF(i);
  return rc;
}

/* Everything that is not an exact hot type: subclasses, containers,
 * callables, foreign objects and protocols. */
static int convert_slow(PyObject* obj, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos) {
  if (tvmffi_is_object(obj)) return object_to_any(obj, out);
  if (PyLong_Check(obj)) return int_to_any(obj, out, temps);
  if (PyFloat_Check(obj)) return float_to_any(PyFloat_AS_DOUBLE(obj), out);
  if (PyUnicode_Check(obj)) return tvmffi_str_to_any(obj, out, temps);
  if (PyBytes_Check(obj)) {
    return tvmffi_bytes_to_any(PyBytes_AS_STRING(obj), PyBytes_GET_SIZE(obj), out, temps);
  }
  if (PyByteArray_Check(obj)) {
    return tvmffi_bytes_to_any(PyByteArray_AS_STRING(obj), PyByteArray_GET_SIZE(obj), out,
                               temps);
  }
  if (PyObject_TypeCheck(obj, &TVMFFIDeviceType)) {
    out->type_index = kTVMFFIDevice;
    out->zero_padding = 0;
    out->v_int64 = 0;
    out->v_device = ((TVMFFIPyDevice*)obj)->device;
    return 0;
  }
  if (PyObject_TypeCheck(obj, &TVMFFIDataTypeType)) {
    out->type_index = kTVMFFIDataType;
    out->zero_padding = 0;
    out->v_int64 = 0;
    out->v_dtype = ((TVMFFIPyDataType*)obj)->dtype;
    return 0;
  }
  if (PyList_Check(obj) || PyTuple_Check(obj)) return seq_to_array(obj, out, temps, argpos);
  if (PyDict_Check(obj)) return dict_to_map(obj, out, temps, argpos);

  TVMFFIObjectHandle foreign;
  int found = tvmffi_foreign_object_handle(obj, &foreign);
  if (found != 0) return found < 0 ? -1 : borrow_into_temps(foreign, out, temps);
  found = protocol_to_any(obj, out, temps, argpos);
  if (found != 0) return found < 0 ? -1 : 0;

  PyObject* void_p = tvmffi_ctypes_void_p();
  if (void_p == NULL) return -1;
  if (PyObject_TypeCheck(obj, (PyTypeObject*)void_p)) return void_p_to_any(obj, out);
  if (PyCallable_Check(obj)) {
    TVMFFIObjectHandle f;
    if (tvmffi_callback_create(obj, &f) != 0) return -1;
    if (temps_push(temps, f) != 0) {
      TVMFFIObjectDecRef(f);
      return -1;
    }
    set_object(out, f);
    return 0;
  }
  /* Integer-like (numpy integers) and float-like (numpy floats) scalars. */
  if (PyIndex_Check(obj)) return index_to_any(obj, out, temps);
  if (Py_TYPE(obj)->tp_as_number != NULL && Py_TYPE(obj)->tp_as_number->nb_float != NULL) {
    double v = PyFloat_AsDouble(obj);
    if (v == -1.0 && PyErr_Occurred()) return -1;
    return float_to_any(v, out);
  }
  return unsupported(obj, argpos);
}

int tvmffi_py_to_any(PyObject* obj, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos) {
  PyTypeObject* tp = Py_TYPE(obj);
  if (tp == &PyLong_Type) return int_to_any(obj, out, temps);
  if (tp == &PyFloat_Type) return float_to_any(PyFloat_AS_DOUBLE(obj), out);
  if (obj == Py_None) {
    out->type_index = kTVMFFINone;
    out->zero_padding = 0;
    out->v_int64 = 0;
    return 0;
  }
  if (tp == &PyBool_Type) {
    out->type_index = kTVMFFIBool;
    out->zero_padding = 0;
    out->v_int64 = obj == Py_True;
    return 0;
  }
  if (tp == &PyUnicode_Type) return tvmffi_str_to_any(obj, out, temps);
  if (tp == &TVMFFIFunctionType) return object_to_any(obj, out);
  return convert_slow(obj, out, temps, argpos);
}

int tvmffi_py_to_owned_any(PyObject* obj, TVMFFIAny* out) {
  TempList temps;
  temps_init(&temps);
  int rc = tvmffi_py_to_any(obj, out, &temps, -1);
  /* Views of objects become owned by taking one more reference; the
   * temporaries then drop theirs. */
  if (rc == 0 && out->type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectIncRef(out->v_obj);
  temps_release(&temps);
  return rc;
}

/* ---- Any -> Python ------------------------------------------------------- */
void tvmffi_any_release(TVMFFIAny* value) {
  if (value->type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(value->v_obj);
  value->type_index = kTVMFFINone;
}

static PyObject* opaque_ptr_to_py(void* p) {
  PyObject* void_p = tvmffi_ctypes_void_p();
  if (void_p == NULL) return NULL;
  if (p == NULL) return PyObject_CallFunctionObjArgs(void_p, NULL);
  PyObject* addr = PyLong_FromVoidPtr(p);
  if (addr == NULL) return NULL;
  PyObject* res = PyObject_CallFunctionObjArgs(void_p, addr, NULL);
  Py_DECREF(addr);
  return res;
}

/* Heap payloads that become plain Python values: copy, then drop our ref. */
static PyObject* object_payload_to_py(TVMFFIAny* value) {
  TVMFFIObjectHandle h = value->v_obj;
  PyObject* res;
  switch (value->type_index) {
    case kTVMFFIStr:
      res = tvmffi_bytearray_to_str((TVMFFIByteArray*)tvmffi_cell(h));
      break;
    case kTVMFFIBytes:
      res = tvmffi_bytearray_to_bytes((TVMFFIByteArray*)tvmffi_cell(h));
      break;
    case kTVMFFIBigInt:
      res = tvmffi_bigint_to_py(value);
      break;
    case kTVMFFIOpaquePyObject:
      res = (PyObject*)((TVMFFIOpaqueObjectCell*)tvmffi_cell(h))->handle;
      Py_INCREF(res);
      break;
    case kTVMFFIFunction:
      return tvmffi_function_wrap_owned(h);
    default:
      return tvmffi_object_wrap_owned(h);
  }
  TVMFFIObjectDecRef(h);
  return res;
}

PyObject* tvmffi_any_to_py_owned(TVMFFIAny* value) {
  switch (value->type_index) {
    case kTVMFFINone:
      Py_RETURN_NONE;
    case kTVMFFIInt:
      return PyLong_FromLongLong(value->v_int64);
    case kTVMFFIBool:
      return PyBool_FromLong(value->v_int64 != 0);
    case kTVMFFIFloat:
      return PyFloat_FromDouble(value->v_float64);
    case kTVMFFISmallStr:
      return tvmffi_small_str_to_py(value);
    case kTVMFFISmallBytes:
      return tvmffi_small_bytes_to_py(value);
    case kTVMFFIOpaquePtr:
      return opaque_ptr_to_py(value->v_ptr);
    case kTVMFFIDataType:
      return tvmffi_dtype_from_dl(value->v_dtype);
    case kTVMFFIDevice:
      return tvmffi_device_from_dl(value->v_device);
    case kTVMFFIRawStr:
      return PyUnicode_DecodeUTF8(value->v_c_str, (Py_ssize_t)strlen(value->v_c_str), NULL);
    case kTVMFFIByteArrayPtr:
      return tvmffi_bytearray_to_bytes((const TVMFFIByteArray*)value->v_ptr);
    case kTVMFFIObjectRValueRef: {
      /* A movable reference: treat as a borrowed object. */
      TVMFFIObjectHandle h = *(TVMFFIObjectHandle*)value->v_ptr;
      if (h == NULL) Py_RETURN_NONE;
      TVMFFIObjectIncRef(h);
      TVMFFIAny owned = {.type_index = tvmffi_type_index_of(h), .v_obj = (TVMFFIObject*)h};
      return object_payload_to_py(&owned);
    }
    default:
      break;
  }
  if (value->type_index >= kTVMFFIStaticObjectBegin) return object_payload_to_py(value);
  PyErr_Format(PyExc_TypeError, "cannot convert FFI value of type index %d to Python",
               (int)value->type_index);
  return NULL;
}

PyObject* tvmffi_any_to_py_borrowed(const TVMFFIAny* value) {
  TVMFFIAny copy = *value;
  if (copy.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectIncRef(copy.v_obj);
  return tvmffi_any_to_py_owned(&copy);
}
