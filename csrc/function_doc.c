/*
 * Lazy documentation of FFI functions: __name__, __qualname__, __doc__ and
 * __signature__.
 *
 * What a Function is called and what it takes is known only from where it
 * came from (the global registry, a module's metadata symbols, a reflected
 * type's method table), which Python code finds more simply than C. These
 * attributes are therefore data descriptors on the Function type that, when
 * read on an instance, look in the instance dict first and otherwise ask
 * tvmffi._function_doc.describe(func, name), which computes the value and
 * caches it in the instance dict. Nothing happens on the call path or when a
 * function is looked up: the cost is paid by the first help()/inspect read.
 * Assignments (init_ffi_api sets __name__) go to the instance dict too.
 *
 * A descriptor type of its own rather than getset entries: read on the class
 * (Function.__signature__, as inspect.signature(Function) does), a getset
 * returns itself, which inspect rejects; this one answers None there.
 */
#include "core.h"

typedef struct {
  PyObject_HEAD
  PyObject* name; /* interned attribute name */
} DocAttr;

/* The Python helper, imported on first use and kept for the process. */
static PyObject* g_describe = NULL;

static PyObject* describe_helper(void) {
  return tvmffi_import_once(&g_describe, "tvmffi._function_doc", "describe");
}

/* The descriptors are reachable as Function.__dict__[name] and may be handed
 * any object: only a Function has the layout they read. */
static int check_function(PyObject* self, PyObject* obj) {
  if (PyObject_TypeCheck(obj, &TVMFFIFunctionType)) return 0;
  PyErr_Format(PyExc_TypeError, "descriptor '%U' for 'Function' objects doesn't apply to a "
               "'%.200s' object", ((DocAttr*)self)->name, Py_TYPE(obj)->tp_name);
  return -1;
}

static PyObject* docattr_get(PyObject* self, PyObject* obj, PyObject* type) {
  (void)type;
  PyObject* key = ((DocAttr*)self)->name;
  if (obj == NULL) Py_RETURN_NONE; /* on the class: no signature of its own to give */
  if (check_function(self, obj) != 0) return NULL;
  PyObject* dict = TVMFFI_LOAD_PTR(((TVMFFIPyFunction*)obj)->dict);
  if (dict != NULL) {
    PyObject* cached; /* a strong reference: another thread may replace the entry */
    int found = tvmffi_dict_get_ref(dict, key, &cached);
    if (found != 0) return found > 0 ? cached : NULL;
  }
  PyObject* describe = describe_helper();
  return describe == NULL ? NULL : PyObject_CallFunctionObjArgs(describe, obj, key, NULL);
}

static int docattr_set(PyObject* self, PyObject* obj, PyObject* value) {
  PyObject* key = ((DocAttr*)self)->name;
  if (check_function(self, obj) != 0) return -1;
  /* Through the __dict__ descriptor, which also starts GC tracking. */
  PyObject* dict = PyObject_GetAttrString(obj, "__dict__");
  if (dict == NULL) return -1;
  int rc;
  if (value != NULL) {
    rc = PyDict_SetItem(dict, key, value);
  } else {
    rc = PyDict_DelItem(dict, key);
    if (rc < 0 && PyErr_ExceptionMatches(PyExc_KeyError)) {
      PyErr_Clear();
      PyErr_SetObject(PyExc_AttributeError, key);
    }
  }
  Py_DECREF(dict);
  return rc;
}

static void docattr_dealloc(PyObject* self) {
  Py_XDECREF(((DocAttr*)self)->name);
  Py_TYPE(self)->tp_free(self);
}

static PyTypeObject DocAttrType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.core.FunctionDocAttribute",
    .tp_basicsize = sizeof(DocAttr),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A Function's name, doc or signature, computed from its type schema when read.",
    .tp_dealloc = docattr_dealloc,
    .tp_descr_get = docattr_get,
    .tp_descr_set = docattr_set,
};

int tvmffi_function_doc_init(PyObject* module) {
  (void)module;
  if (PyType_Ready(&DocAttrType) < 0) return -1;
  static const char* const names[] = {"__name__", "__qualname__", "__doc__", "__signature__"};
  PyObject* dict = TVMFFIFunctionType.tp_dict;
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
    DocAttr* attr = PyObject_New(DocAttr, &DocAttrType);
    if (attr == NULL) return -1;
    attr->name = PyUnicode_InternFromString(names[i]);
    int rc = attr->name == NULL ? -1 : PyDict_SetItem(dict, attr->name, (PyObject*)attr);
    Py_DECREF(attr);
    if (rc < 0) return -1;
  }
  PyType_Modified(&TVMFFIFunctionType);
  return 0;
}
