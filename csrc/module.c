/*
 * tvmffi._core: module initialisation and the runtime hooks that make
 * TVMFFIEnvCheckSignals and GIL handling work under Python.
 */
#include "core.h"

static PyObject* g_void_p;

PyObject* tvmffi_ctypes_void_p(void) {
  return tvmffi_import_once(&g_void_p, "ctypes", "c_void_p");
}

static PyObject* py_tvm_ffi_version(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  TVMFFIVersion v;
  TVMFFIGetVersion(&v);
  return PyUnicode_FromFormat("%u.%u.%u", v.major, v.minor, v.patch);
}

static PyObject* py_use_count(PyObject* self, PyObject* obj) {
  (void)self;
  if (!tvmffi_is_object(obj)) {
    PyErr_SetString(PyExc_TypeError, "expected a non-empty tvmffi.Object");
    return NULL;
  }
  TVMFFIObject* h = tvmffi_object_handle(obj);
  if (h == NULL) return NULL;
  return PyLong_FromUnsignedLong((unsigned long)(h->combined_ref_count & 0xFFFFFFFFu));
}

static PyMethodDef core_methods[] = {
    {"tvm_ffi_version", py_tvm_ffi_version, METH_NOARGS,
     "Version 'major.minor.patch' of the loaded libtvm_ffi."},
    {"register_object_class", tvmffi_register_object_class, METH_VARARGS,
     "register_object_class(type_index, cls): wrap objects of that type in cls."},
    {"unregister_object_class", tvmffi_unregister_object_class, METH_O,
     "unregister_object_class(type_index): forget the class of that type."},
    {"set_error_hooks", tvmffi_set_error_hooks, METH_VARARGS,
     "set_error_hooks(from_ffi, to_ffi): install the error conversion hooks."},
    {"set_dtype_hook", tvmffi_set_dtype_hook, METH_O,
     "set_dtype_hook(fn): fn(obj) -> dtype string for non-string dtype-likes."},
    {"object_use_count", py_use_count, METH_O, "Strong reference count of an object's handle."},
    {"_set_pickle_hooks", tvmffi_set_pickle_hooks, METH_VARARGS,
     "_set_pickle_hooks(reduce, setstate): Object.__reduce__ and __setstate__."},
    {"_to_opaque", tvmffi_py_to_opaque, METH_O, "_to_opaque(obj): obj in an ffi.OpaquePyObject."},
    {"_opaque_pyobject", tvmffi_opaque_pyobject, METH_O,
     "_opaque_pyobject(o): the Python object an ffi.OpaquePyObject holds."},
    {"_callback_callable", tvmffi_callback_callable, METH_O,
     "_callback_callable(f): the Python callable of a callback Function, else None."},
    {"_set_shape_class", tvmffi_set_shape_class, METH_O,
     "_set_shape_class(cls): ffi.Shape results come back as instances of cls."},
    {"_set_bytes_class", tvmffi_set_bytes_class, METH_O,
     "_set_bytes_class(cls): heap FFI bytes come back as instances of cls."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "tvmffi._core",
    "C core of tvmffi: the call path, value conversion, callbacks and errors.", -1, core_methods,
    NULL, NULL, NULL, NULL,
};

/* TVMFFIEnvCheckSignals and friends redirect to these when registered. They
 * are the same functions the official binding registers, so registering
 * them again from a second binding is harmless. */
static int register_env_symbols(void) {
  if (TVMFFIEnvRegisterCAPI("PyErr_CheckSignals", (void*)PyErr_CheckSignals) != 0 ||
      TVMFFIEnvRegisterCAPI("PyGILState_Ensure", (void*)PyGILState_Ensure) != 0 ||
      TVMFFIEnvRegisterCAPI("PyGILState_Release", (void*)PyGILState_Release) != 0) {
    tvmffi_raise_ffi_error();
    return -1;
  }
  return 0;
}

PyMODINIT_FUNC PyInit__core(void) {
  tvmffi_type_docs_apply();
  PyObject* m = PyModule_Create(&core_module);
  if (m == NULL) return NULL;
  /* threads.c first: every other part may take a runtime lock. */
  if (tvmffi_threads_init(m) < 0 || tvmffi_object_init_types(m) < 0 ||
      tvmffi_function_init_types(m) < 0 ||
      tvmffi_function_doc_init(m) < 0 ||
      tvmffi_device_init_types(m) < 0 || tvmffi_dtype_init_types(m) < 0 ||
      tvmffi_reflection_init(m) < 0 || tvmffi_graph_guard_init(m) < 0 ||
      tvmffi_graph_entry_init(m) < 0 || tvmffi_any_init(m) < 0 ||
      tvmffi_error_object_init(m) < 0 || tvmffi_rvalue_init(m) < 0 ||
      tvmffi_py_class_init(m) < 0 || tvmffi_field_table_init(m) < 0 ||
      tvmffi_strbytes_init_types(m) < 0 ||
      tvmffi_tensor_init_types(m) < 0 || tvmffi_stream_init(m) < 0 ||
      tvmffi_cany_init(m) < 0 || tvmffi_type_plan_init(m) < 0 || tvmffi_teardown_init(m) < 0 ||
      tvmffi_library_probe_init(m) < 0 || tvmffi_library_pin_init() < 0 ||
      tvmffi_interop_init() < 0 || tvmffi_kwargs_binder_init(m) < 0 ||
      tvmffi_dataclass_unpack_init(m) < 0 ||
      register_env_symbols() < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
