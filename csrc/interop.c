/*
 * One object world with the official binding (`tvm_ffi`), both directions.
 *
 * In: an instance of the official binding's object base class (CObject:
 * Object, Function, Module, Tensor, containers, errors) or of any subclass,
 * wherever it is defined, is an FFI object to us by its handle. The official
 * classes are resolved once tvm_ffi.core is imported; any.c classifies a
 * Python type against them once (its per-type cache), and a value then costs
 * one load of the handle from the instance.
 *
 * Out: tvmffi.Object.__tvm_ffi_object__() returns the official binding's
 * object for the same handle, made by the official binding itself: a C
 * global function registered here hands over the handle that the calling
 * thread has parked in a thread-local slot, and the official binding wraps
 * the returned object in its class for the type. No private API of the
 * official binding is used; the function does nothing unless a
 * __tvm_ffi_object__ call on the same thread parked a handle for it.
 */
#include "core.h"

#include <stddef.h>

/* ---- the official classes ----------------------------------------------------- */
PyTypeObject* tvmffi_official_tensor_type;

static struct {
  int resolved;
  PyTypeObject* cobject; /* tvm_ffi.core.CObject: base of every official object class */
  PyTypeObject* tensor;  /* tvm_ffi.core.Tensor */
  PyTypeObject* native;  /* tvm_ffi.core.PyNativeObject: str/bytes/tuple-based proxies */
  /* Where CObject keeps its handle (a `cdef void* chandle` right after the
   * object header), when the layout check below confirmed it; 0 = read it
   * through the public __chandle__() instead. */
  Py_ssize_t handle_offset;
  /* Where Tensor keeps its DLTensor* (its one field after CObject's); 0 when
   * the layout is not the expected one (views then cannot be converted). */
  Py_ssize_t dltensor_offset;
} g_official;

static PyTypeObject* official_class(PyObject* core, const char* name) {
  PyObject* cls = PyObject_GetAttrString(core, name);
  if (cls != NULL && !PyType_Check(cls)) Py_CLEAR(cls);
  if (cls == NULL) PyErr_Clear();
  return (PyTypeObject*)cls; /* kept for the life of the process */
}

/* The handle field sits right after the object header when CObject adds one
 * pointer and nothing else; confirm it on a live official object (a global
 * function) against its public __chandle__(). Returns 0 when no official
 * object could be made yet (tvm_ffi still importing): ask again later. */
static int check_handle_layout(PyObject* tvm_ffi) {
  PyTypeObject* co = g_official.cobject;
  if (co->tp_basicsize != (Py_ssize_t)(sizeof(PyObject) + sizeof(void*))) return 1;
  PyObject* f = PyObject_CallMethod(tvm_ffi, "get_global_func", "s", "ffi.String");
  if (f == NULL) {
    PyErr_Clear();
    return 0;
  }
  PyObject* h = PyObject_CallMethod(f, "__chandle__", NULL);
  void* expected = h != NULL ? PyLong_AsVoidPtr(h) : NULL;
  if (expected != NULL && PyObject_TypeCheck(f, co) &&
      *(void**)((char*)f + sizeof(PyObject)) == expected) {
    g_official.handle_offset = (Py_ssize_t)sizeof(PyObject);
    PyTypeObject* t = g_official.tensor;
    if (t != NULL && t->tp_basicsize == co->tp_basicsize + (Py_ssize_t)sizeof(void*)) {
      g_official.dltensor_offset = co->tp_basicsize;
      tvmffi_official_tensor_type = t;
    }
  }
  Py_XDECREF(h);
  Py_DECREF(f);
  PyErr_Clear();
  return 1;
}

/* Resolve the official classes once tvm_ffi is imported. Until then no
 * official object can exist, so nothing is lost by answering "not official"
 * (and the caller asks again for the next new type). */
static void resolve_official(void) {
  if (g_official.resolved) return;
  PyObject* name = PyUnicode_InternFromString("tvm_ffi.core");
  PyObject* core = name != NULL ? PyImport_GetModule(name) : NULL;
  Py_XDECREF(name);
  if (core == NULL) {
    PyErr_Clear();
    return;
  }
  Py_XSETREF(g_official.cobject, official_class(core, "CObject"));
  if (g_official.cobject == &TVMFFIObjectType) {
    /* Hosted (tvmffi.hosting): tvm_ffi.core is tvmffi.core, and there is no
     * official binding in the process. Every object is our own. */
    Py_CLEAR(g_official.cobject);
    Py_DECREF(core);
    g_official.resolved = 1;
    return;
  }
  Py_XSETREF(g_official.tensor, official_class(core, "Tensor"));
  Py_XSETREF(g_official.native, official_class(core, "PyNativeObject"));
  Py_DECREF(core);
  /* Until the layout check has run, handles are read through __chandle__(). */
  PyObject* tvm_ffi = PyImport_ImportModule("tvm_ffi"); /* imported: its core is */
  g_official.resolved = g_official.cobject == NULL ||
                        (tvm_ffi != NULL && check_handle_layout(tvm_ffi));
  Py_XDECREF(tvm_ffi);
  PyErr_Clear();
}

int tvmffi_official_kind(PyTypeObject* tp) {
  resolve_official();
  if (g_official.cobject == NULL) return OFFICIAL_NONE;
  if (g_official.tensor != NULL && PyType_IsSubtype(tp, g_official.tensor)) {
    return OFFICIAL_TENSOR;
  }
  if (PyType_IsSubtype(tp, g_official.cobject)) return OFFICIAL_OBJECT;
  /* A proxy deriving from tuple etc. (tvm_ffi.Shape) carries its object; the
   * str and bytes ones convert as the strings they are. */
  if (g_official.native != NULL && PyType_IsSubtype(tp, g_official.native) &&
      !PyType_IsSubtype(tp, &PyUnicode_Type) && !PyType_IsSubtype(tp, &PyBytes_Type)) {
    return OFFICIAL_NATIVE;
  }
  return OFFICIAL_NONE;
}

int tvmffi_official_handle(PyObject* obj, TVMFFIObjectHandle* out) {
  if (g_official.handle_offset > 0) {
    *out = *(TVMFFIObjectHandle*)((char*)obj + g_official.handle_offset);
    return 0;
  }
  PyObject* h = PyObject_CallMethod(obj, "__chandle__", NULL);
  if (h == NULL) return -1;
  *out = PyLong_AsVoidPtr(h);
  Py_DECREF(h);
  return *out == NULL && PyErr_Occurred() ? -1 : 0;
}

Py_ssize_t tvmffi_official_dltensor_offset(void) { return g_official.dltensor_offset; }

int tvmffi_official_to_any(PyObject* obj, int kind, TVMFFIAny* out, TempList* temps,
                           Py_ssize_t argpos) {
  if (kind == OFFICIAL_NATIVE) {
    /* The proxy's attached object (what the official binding passes). */
    PyObject* attached = PyObject_GetAttr(obj, tvmffi_str_cached_object);
    if (attached == NULL) return -1;
    int rc = PyObject_TypeCheck(attached, g_official.cobject)
                 ? tvmffi_official_to_any(attached, OFFICIAL_OBJECT, out, temps, argpos)
                 : tvmffi_arg_error(PyExc_TypeError, argpos,
                                    "'%.200s' carries no FFI object", Py_TYPE(obj)->tp_name);
    /* The attribute may be a fresh object (a property) or be replaced during
     * the call: the handle is held by `temps`, not by `attached`. */
    if (rc == 0) {
      TVMFFIObjectIncRef(out->v_obj);
      if (temps_push(temps, out->v_obj) != 0) {
        TVMFFIObjectDecRef(out->v_obj);
        rc = -1;
      }
    }
    Py_DECREF(attached);
    return rc;
  }
  if (kind == OFFICIAL_TENSOR) return tvmffi_official_tensor_to_any(obj, out, temps, argpos);
  TVMFFIObjectHandle h;
  if (tvmffi_official_handle(obj, &h) != 0) {
    return -1;
  } else if (h == NULL) {
    return tvmffi_arg_error(PyExc_ValueError, argpos, "'%.200s' object holds no FFI handle",
                            Py_TYPE(obj)->tp_name);
  }
  /* Borrowed for the call, like our own Objects' handles (and as the official
   * binding passes them): the argument object is kept alive by the caller. */
  (void)temps;
  out->type_index = tvmffi_type_index_of(h);
  out->zero_padding = 0;
  out->v_obj = (TVMFFIObject*)h;
  return 0;
}

/* ---- out: tvmffi.Object.__tvm_ffi_object__ ---------------------------------------- */
#define EXPORT_GLOBAL "tvmffi.__export_object__"

/* The handle a __tvm_ffi_object__ call on this thread is handing over. */
static _Thread_local TVMFFIObjectHandle g_pending;
/* tvm_ffi.get_global_func(EXPORT_GLOBAL): an official Function. */
static PyObject* g_official_export;

static int export_pending(void* self, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* rv) {
  (void)self;
  (void)args;
  TVMFFIObjectHandle h = g_pending;
  if (nargs != 0 || h == NULL) {
    TVMFFIErrorSetRaisedFromCStr("ValueError", EXPORT_GLOBAL
                                 " takes no arguments and is only called by tvmffi's "
                                 "__tvm_ffi_object__");
    return -1;
  }
  g_pending = NULL;
  TVMFFIObjectIncRef(h);
  rv->type_index = tvmffi_type_index_of(h);
  rv->zero_padding = 0;
  rv->v_obj = (TVMFFIObject*)h;
  return 0;
}

static PyObject* official_export_func(void) {
  if (g_official_export != NULL) return g_official_export;
  PyObject* tvm_ffi = PyImport_ImportModule("tvm_ffi");
  if (tvm_ffi == NULL) return NULL;
  PyObject* f = PyObject_CallMethod(tvm_ffi, "get_global_func", "s", EXPORT_GLOBAL);
  Py_DECREF(tvm_ffi);
  if (f == NULL) return NULL;
  /* The hand-over is a few loads: releasing the GIL would only cost. */
  if (PyObject_SetAttrString(f, "release_gil", Py_False) != 0) PyErr_Clear();
  g_official_export = f;
  return f;
}

PyObject* tvmffi_object_to_official(PyObject* self, PyObject* unused) {
  (void)unused;
  TVMFFIObjectHandle h = tvmffi_object_handle(self);
  if (h == NULL) return NULL;
  PyObject* f = official_export_func();
  if (f == NULL) return NULL;
  g_pending = h;
  PyObject* res = PyObject_CallNoArgs(f);
  g_pending = NULL;
  resolve_official();
  if (res == NULL || g_official.cobject == NULL || PyObject_TypeCheck(res, g_official.cobject)) {
    return res;
  }
  /* A type the official binding returns as a Python-native proxy (ffi.Shape
   * as a tuple): the protocol asks for the object the proxy carries. */
  PyObject* attached = PyObject_GetAttr(res, tvmffi_str_cached_object);
  Py_DECREF(res);
  return attached;
}

int tvmffi_interop_init(void) {
  TVMFFIObjectHandle f;
  if (TVMFFIFunctionCreate(NULL, export_pending, NULL, &f) != 0) {
    tvmffi_raise_ffi_error();
    return -1;
  }
  TVMFFIByteArray name = {EXPORT_GLOBAL, sizeof(EXPORT_GLOBAL) - 1};
  int rc = TVMFFIFunctionSetGlobal(&name, f, 1);
  TVMFFIObjectDecRef(f); /* the registry holds it */
  if (rc != 0) {
    tvmffi_raise_ffi_error();
    return -1;
  }
  return 0;
}
