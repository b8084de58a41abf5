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
/* _OPAQUE_PTR_HANDLERS: exact class -> callable returning an address. Filled by
 * applications at setup (official name and semantics); looked up per value, so
 * entries added or removed later take effect. */
static PyObject* g_opaque_ptr_handlers;

static void set_object(TVMFFIAny* out, TVMFFIObjectHandle h) {
  out->type_index = tvmffi_type_index_of(h);
  out->zero_padding = 0;
  out->v_obj = (TVMFFIObject*)h;
}

/* A value without a payload beyond its type (or whose payload the caller
 * sets next): the unused bytes are zeroed. */
static void pod_to_any(int32_t type_index, TVMFFIAny* out) {
  out->type_index = type_index;
  out->zero_padding = 0;
  out->v_int64 = 0;
}

/* ---- graph heights of containers built here --------------------------------
 * A container built from Python lists, tuples and dicts records the height of
 * its graph as graph_guard.c counts it (object levels on the longest path: 0
 * for a value holding no object, 1 for a leaf) when every node is immutable
 * (tvmffi_graph_immutable): such a graph can neither change nor contain
 * itself, so the guard compares the height with the stack room instead of
 * walking the value. -1: not known (a List, Dict, Tensor, an object with
 * fields, an object whose graph was never measured). */
static int64_t pod_height(int32_t type_index) {
  switch (type_index) {
    case kTVMFFIRawStr: /* the runtime stores these as Str / Bytes */
    case kTVMFFIByteArrayPtr:
      return 1;
    case kTVMFFIDLTensorPtr: /* stored as a Tensor; a moved object's graph is not known */
    case kTVMFFIObjectRValueRef:
      return -1;
    default:
      return 0;
  }
}

/* The height of the value `view` that `item` converted to. */
static int64_t view_height(PyObject* item, const TVMFFIAny* view) {
  if (view->type_index < kTVMFFIStaticObjectBegin) return pod_height(view->type_index);
  if (tvmffi_graph_leaf(view->type_index)) return 1;
  if (tvmffi_is_object(item) && ((TVMFFIPyObject*)item)->handle == view->v_obj) {
    int64_t h = ((TVMFFIPyObject*)item)->graph_height;
    return h > 0 ? h : -1;
  }
  return -1;
}

/* Folds an element's height into *tallest (-1 once one is not known). */
static void fold_height(int64_t* tallest, int64_t h) {
  if (*tallest >= 0) *tallest = h < 0 ? -1 : (h > *tallest ? h : *tallest);
}

static int seq_to_array(PyObject* seq, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos,
                        int64_t* height);
static int dict_to_map(PyObject* dict, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos,
                       int64_t* height);

/* A value converted with its height: exact lists, tuples and dicts (which can
 * only take the container route) built here, measured as they are built. */
static int measured_to_any(PyObject* item, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos,
                           int64_t* height) {
  PyTypeObject* tp = Py_TYPE(item);
  int64_t built = 0;
  int rc;
  if (tp == &PyList_Type || tp == &PyTuple_Type) {
    rc = seq_to_array(item, out, temps, argpos, &built);
  } else if (tp == &PyDict_Type) {
    rc = dict_to_map(item, out, temps, argpos, &built);
  } else {
    rc = tvmffi_py_to_any(item, out, temps, argpos);
    if (rc == 0) *height = view_height(item, out);
    return rc;
  }
  *height = built > 0 ? built : -1;
  return rc;
}

/* An element of a container built from a list/tuple/dict. */
static int element_to_any(PyObject* item, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos,
                          int64_t* height) {
  *height = -1;
  if (Py_TYPE(item) == &TVMFFIRValueRefType) {
    /* A container keeps its elements: a move can only go to the callee. */
    return tvmffi_arg_error(PyExc_TypeError, argpos, "obj._move() cannot be a container element");
  }
  return measured_to_any(item, out, temps, argpos, height);
}

/* Convert `n` Python items to views in `views`, then call a runtime
 * constructor (ffi.Array / ffi.Map) and keep the result as a temporary;
 * *height: its graph height, 0 if not known. */
static int construct(const char* ctor, TVMFFIObjectHandle* cache, PyObject* const* items,
                     Py_ssize_t n, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos,
                     int64_t* height) {
  TVMFFIAny stack_views[16];
  TVMFFIAny* views = n <= 16 ? stack_views : PyMem_Malloc(sizeof(TVMFFIAny) * (size_t)n);
  if (views == NULL) return PyErr_NoMemory(), -1;
  int rc = 0;
  int64_t tallest = 0; /* -1 once an element's height is not known */
  /* The container keeps its elements beyond the call: a view among them (a
   * TensorView, an official view, also nested or from a protocol) becomes a
   * Tensor that holds it, not a DLTensor* that dangles once the call returns. */
  int keep_views = temps->keep_views;
  temps->keep_views = 1;
  /* Elements packed so far borrow from Python objects that a later element's
   * conversion may move (call_guard.c). */
  CallGuard guard = {.parent = temps->guard, .packed = views};
  temps->guard = &guard;
  for (Py_ssize_t i = 0; i < n && rc == 0; ++i) {
    int64_t h;
    guard.npacked = i;
    rc = element_to_any(items[i], &views[i], temps, argpos, &h);
    if (rc == 0 && guard.holding) rc = tvmffi_guard_hold_value(temps, &views[i]);
    fold_height(&tallest, h);
  }
  temps->guard = guard.parent;
  temps->keep_views = keep_views;
  TVMFFIAny result = {.type_index = kTVMFFINone};
  if (rc == 0) rc = tvmffi_call_global_any(ctor, cache, views, (int32_t)n, &result);
  if (views != stack_views) PyMem_Free(views);
  if (rc != 0) return -1;
  *height = tallest < 0 ? 0 : tallest + 1;
  if (temps_push(temps, result.v_obj) != 0) {
    TVMFFIObjectDecRef(result.v_obj);
    return -1;
  }
  set_object(out, result.v_obj);
  return 0;
}

/* Elements may be containers in turn: nesting depth is bounded like any
 * Python recursion (a self-containing list raises RecursionError), and by the
 * C stack left, for threads whose stack is smaller than the recursion limit
 * assumes. */
static int build_container(const char* ctor, TVMFFIObjectHandle* cache, PyObject* const* items,
                           Py_ssize_t n, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos,
                           int64_t* height) {
  if (tvmffi_stack_low("while converting a nested container")) return -1;
  if (Py_EnterRecursiveCall(" while converting a nested container") != 0) return -1;
  int rc = construct(ctor, cache, items, n, out, temps, argpos, height);
  Py_LeaveRecursiveCall();
  return rc;
}

/* The runtime's container constructors, looked up once (builtins live for
 * the whole process). */
static TVMFFIObjectHandle g_array_ctor, g_map_ctor;

/* Items whose conversion runs no Python code and allocates no Python object
 * (so no garbage collection, no finalizer): None, bool, exact int, float,
 * str and bytes, and FFI objects of a class deriving from Object directly
 * (tvmffi_py_to_any reads their handle; a deeper class may be classified by
 * Python-level lookups the first time). */
static int items_run_no_python(PyObject* const* items, Py_ssize_t n) {
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyTypeObject* tp = Py_TYPE(items[i]);
    if (tp != &PyLong_Type && tp != &PyFloat_Type && tp != &PyUnicode_Type &&
        tp != &PyBool_Type && items[i] != Py_None && tp != &PyBytes_Type &&
        tp->tp_base != &TVMFFIObjectType) {
      return 0;
    }
  }
  return 1;
}

#define HELD_ITEMS_MAX 16

/* A short exact list converted from a snapshot of its items in a stack
 * buffer (new references taken under the list's own lock, so another
 * thread's change is wholly before or after it); 0 when it is too long. */
static int short_list_to_array(PyObject* list, TVMFFIAny* out, TempList* temps,
                               Py_ssize_t argpos, int64_t* height, int* rc) {
  PyObject* held[HELD_ITEMS_MAX];
  Py_ssize_t n;
  Py_BEGIN_CRITICAL_SECTION(list);
  n = PyList_GET_SIZE(list);
  for (Py_ssize_t i = 0; i < n && n <= HELD_ITEMS_MAX; ++i) {
    held[i] = Py_NewRef(PyList_GET_ITEM(list, i));
  }
  Py_END_CRITICAL_SECTION();
  if (n > HELD_ITEMS_MAX) return 0;
  *rc = build_container("ffi.Array", &g_array_ctor, held, n, out, temps, argpos, height);
  for (Py_ssize_t i = 0; i < n; ++i) Py_DECREF(held[i]);
  return 1;
}

/* Converting an element may run Python code (__index__, protocols) that
 * mutates the container, so elements are converted from a snapshot holding
 * its own references, unless none of them can run any. */
static int seq_to_array(PyObject* seq, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos,
                        int64_t* height) {
  /* Without a GIL another thread may change the list at any moment: only a
   * snapshot holds items that stay alive. */
  if (PyList_CheckExact(seq)) {
    if (!TVMFFI_FREE_THREADED &&
        items_run_no_python(&PyList_GET_ITEM(seq, 0), PyList_GET_SIZE(seq))) {
      return build_container("ffi.Array", &g_array_ctor, &PyList_GET_ITEM(seq, 0),
                             PyList_GET_SIZE(seq), out, temps, argpos, height);
    }
    int rc;
    if (short_list_to_array(seq, out, temps, argpos, height, &rc)) return rc;
  }
  PyObject* snapshot = PySequence_Tuple(seq);
  if (snapshot == NULL) return -1;
  int rc = build_container("ffi.Array", &g_array_ctor, &PyTuple_GET_ITEM(snapshot, 0),
                           PyTuple_GET_SIZE(snapshot), out, temps, argpos, height);
  Py_DECREF(snapshot);
  return rc;
}

/* A dict of plain keys and values (items_run_no_python): its entries as
 * borrowed pointers in `items` (room for 2 * size), converted with no
 * snapshot. 1 when built (rc in *rc), 0 when the dict needs the snapshot. */
static int plain_dict_to_map(PyObject* dict, PyObject** items, TVMFFIAny* out, TempList* temps,
                             Py_ssize_t argpos, int64_t* height, int* rc) {
  Py_ssize_t pos = 0, i = 0;
  PyObject *k, *v;
  while (PyDict_Next(dict, &pos, &k, &v)) {
    items[i++] = k;
    items[i++] = v;
    if (!items_run_no_python(&items[i - 2], 2)) return 0;
  }
  *rc = build_container("ffi.Map", &g_map_ctor, items, i, out, temps, argpos, height);
  return 1;
}

/* The keys and values of `dict` (new references) in a tuple of *n items, or
 * NULL; read under the dict's lock, so another thread's change is wholly
 * before or after it. */
static PyObject* dict_snapshot(PyObject* dict, Py_ssize_t* n) {
  PyObject* snapshot;
  Py_BEGIN_CRITICAL_SECTION(dict);
  Py_ssize_t size = PyDict_GET_SIZE(dict), pos = 0, i = 0;
  snapshot = PyTuple_New(2 * size);
  PyObject *k, *v;
  while (snapshot != NULL && i < 2 * size && PyDict_Next(dict, &pos, &k, &v)) {
    PyTuple_SET_ITEM(snapshot, i++, Py_NewRef(k));
    PyTuple_SET_ITEM(snapshot, i++, Py_NewRef(v));
  }
  *n = i;
  Py_END_CRITICAL_SECTION();
  return snapshot;
}

static int dict_to_map(PyObject* dict, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos,
                       int64_t* height) {
  if (!TVMFFI_FREE_THREADED && PyDict_Size(dict) <= 16) {
    /* the common small dict: no allocation at all when plain */
    PyObject* items[32];
    int rc;
    if (plain_dict_to_map(dict, items, out, temps, argpos, height, &rc)) return rc;
  }
  Py_ssize_t i;
  PyObject* snapshot = dict_snapshot(dict, &i);
  if (snapshot == NULL) return -1;
  int rc = build_container("ffi.Map", &g_map_ctor, &PyTuple_GET_ITEM(snapshot, 0), i, out, temps,
                           argpos, height);
  Py_DECREF(snapshot);
  return rc;
}

/* The height of the value a call argument converts to, from the Python value
 * alone: plain scalars (their conversion is fixed: a POD value or a leaf) and
 * objects (always passed as their own handle) with a measured graph; -1 if
 * not known. */
static int64_t arg_height(PyObject* v) {
  PyTypeObject* tp = Py_TYPE(v);
  if (v == Py_None || tp == &PyBool_Type || tp == &PyFloat_Type) return 0;
  if (tp == &PyLong_Type) {
    int overflow;
    (void)PyLong_AsLongLongAndOverflow(v, &overflow); /* cannot fail on an int */
    return overflow ? 1 : 0;                          /* a BigInt leaf, or an Int */
  }
  if (tp == &PyUnicode_Type || tp == &PyBytes_Type) return 1; /* at most: maybe a small value */
  if (tvmffi_is_object(v) && ((TVMFFIPyObject*)v)->graph_height > 0) {
    return ((TVMFFIPyObject*)v)->graph_height;
  }
  return -1;
}

int64_t tvmffi_ctor_graph_height(TVMFFIObjectHandle func, PyObject* const* args, Py_ssize_t n) {
  /* Arguments of these kinds convert without running Python code, so what
   * was converted is what arg_height reads now. */
  if ((g_array_ctor == NULL && tvmffi_get_global("ffi.Array", &g_array_ctor) != 0) ||
      (g_map_ctor == NULL && tvmffi_get_global("ffi.Map", &g_map_ctor) != 0)) {
    PyErr_Clear(); /* not known; looked up again next time */
    return 0;
  }
  if (func == NULL || (func != g_array_ctor && func != g_map_ctor)) return 0;
  int64_t tallest = 0;
  for (Py_ssize_t i = 0; i < n && tallest >= 0; ++i) fold_height(&tallest, arg_height(args[i]));
  return tallest < 0 ? 0 : tallest + 1;
}

static int object_to_any(PyObject* obj, TVMFFIAny* out, TempList* temps) {
  TVMFFIObjectHandle h = tvmffi_object_handle(obj);
  if (h == NULL) return -1;
  /* A container from a framework's call carries its API into this call,
   * unless a tensor argument already named one (framework.c). */
  const DLPackExchangeAPI* api = ((TVMFFIPyObject*)obj)->dlpack_api;
  if (api != NULL && temps->dlpack_api == NULL) temps->dlpack_api = api;
  set_object(out, h);
  return 0;
}

/* Optional conversion protocols shared with the official binding, in the
 * order a type is probed for them. */
enum {
  PROTOCOL_OBJECT,
  PROTOCOL_VALUE,
  PROTOCOL_INT,
  PROTOCOL_FLOAT,
  PROTOCOL_OPAQUE_PTR,
  NUM_PROTOCOLS,
};
static const char* const kProtocols[NUM_PROTOCOLS] = {
    [PROTOCOL_OBJECT] = "__tvm_ffi_object__",
    [PROTOCOL_VALUE] = "__tvm_ffi_value__",
    [PROTOCOL_INT] = "__tvm_ffi_int__",
    [PROTOCOL_FLOAT] = "__tvm_ffi_float__",
    [PROTOCOL_OPAQUE_PTR] = "__tvm_ffi_opaque_ptr__",
};

/* A ctypes.c_void_p's pointer, read from the buffer ctypes exports for it
 * (its storage: the pointer itself), not through the `value` property. */
static int void_p_to_any(PyObject* obj, TVMFFIAny* out) {
  Py_buffer view;
  if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) == 0) {
    int whole = view.len == (Py_ssize_t)sizeof(void*);
    void* p = NULL;
    if (whole) memcpy(&p, view.buf, sizeof p);
    PyBuffer_Release(&view);
    if (whole) {
      pod_to_any(kTVMFFIOpaquePtr, out);
      out->v_ptr = p;
      return 0;
    }
  } else {
    PyErr_Clear();
  }
  PyObject* value = PyObject_GetAttrString(obj, "value");
  if (value == NULL) return -1;
  void* p = value == Py_None ? NULL : PyLong_AsVoidPtr(value);
  Py_DECREF(value);
  if (p == NULL && PyErr_Occurred()) return -1;
  pod_to_any(kTVMFFIOpaquePtr, out);
  out->v_ptr = p;
  return 0;
}

static int int_to_any(PyObject* obj, TVMFFIAny* out, TempList* temps) {
  long long compact;
  if (tvmffi_compact_int(obj, &compact)) {
    out->type_index = kTVMFFIInt;
    out->zero_padding = 0;
    out->v_int64 = compact;
    return 0;
  }
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

/* Keep an owned handle alive until the call returns (temps take our reference). */
static int own_into_temps(TVMFFIObjectHandle h, TVMFFIAny* out, TempList* temps) {
  if (temps_push(temps, h) != 0) {
    TVMFFIObjectDecRef(h);
    return -1;
  }
  set_object(out, h);
  return 0;
}

/* A __cuda_stream__ producer: the protocol returns (version, handle). */
static int cuda_stream_to_any(PyObject* obj, TVMFFIAny* out, Py_ssize_t argpos) {
  PyObject* t = PyObject_CallMethod(obj, "__cuda_stream__", NULL);
  if (t == NULL) return -1;
  int rc = -1;
  if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) < 2) {
    tvmffi_arg_error(PyExc_TypeError, argpos, "__cuda_stream__() of '%.200s' must return a "
                     "(version, handle) tuple", Py_TYPE(obj)->tp_name);
  } else {
    void* p = PyLong_AsVoidPtr(PyTuple_GET_ITEM(t, 1));
    if (p != NULL || !PyErr_Occurred()) {
      pod_to_any(kTVMFFIOpaquePtr, out);
      out->v_ptr = p;
      rc = 0;
    }
  }
  Py_DECREF(t);
  return rc;
}

/* Field `i` of a protocol's result tuple as a C integer in [lo, hi]. */
static int tuple_field(PyObject* t, Py_ssize_t i, long long lo, long long hi, long long* out) {
  long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(t, i));
  if (v == -1 && PyErr_Occurred()) return -1;
  if (v < lo || v > hi) {
    PyErr_Format(PyExc_ValueError, "field %zd is %lld, outside [%lld, %lld]", i, v, lo, hi);
    return -1;
  }
  *out = v;
  return 0;
}

/* __dlpack_data_type__() -> (code, bits, lanes) as a DataType, or
 * __dlpack_device__() -> (device_type, index) as a Device. */
static int dlpack_pair_protocol_to_any(PyObject* obj, int is_dtype, TVMFFIAny* out,
                                       Py_ssize_t argpos) {
  const char* name = is_dtype ? "__dlpack_data_type__" : "__dlpack_device__";
  Py_ssize_t want = is_dtype ? 3 : 2;
  PyObject* t = PyObject_CallMethod(obj, name, NULL);
  if (t == NULL) return -1;
  long long f[3] = {0, 0, 0};
  int rc = -1;
  if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != want) {
    tvmffi_arg_error(PyExc_TypeError, argpos, "%.200s.%s() must return a tuple of %zd ints",
                     Py_TYPE(obj)->tp_name, name, want);
  } else if (is_dtype && tuple_field(t, 0, 0, UINT8_MAX, &f[0]) == 0 &&
             tuple_field(t, 1, 0, UINT8_MAX, &f[1]) == 0 &&
             tuple_field(t, 2, INT16_MIN, UINT16_MAX, &f[2]) == 0) {
    pod_to_any(kTVMFFIDataType, out);
    out->v_dtype.code = (uint8_t)f[0];
    out->v_dtype.bits = (uint8_t)f[1];
    out->v_dtype.lanes = (uint16_t)f[2];
    rc = 0;
  } else if (!is_dtype && tuple_field(t, 0, 0, INT32_MAX, &f[0]) == 0 &&
             tuple_field(t, 1, 0, INT32_MAX, &f[1]) == 0) {
    pod_to_any(kTVMFFIDevice, out);
    out->v_device.device_type = (DLDeviceType)f[0];
    out->v_device.device_id = (int32_t)f[1];
    rc = 0;
  }
  Py_DECREF(t);
  return rc;
}

/* An exception argument travels as the FFI error object (ffi.Error) that
 * tvmffi.error makes of it (error_object.c). */
static int exception_to_any(PyObject* exc, TVMFFIAny* out, TempList* temps) {
  TVMFFIObjectHandle h;
  return tvmffi_exception_error(exc, &h) != 0 ? -1 : own_into_temps(h, out, temps);
}

/* Anything no conversion claims: an exception becomes an FFI error, a class
 * with an _OPAQUE_PTR_HANDLERS entry an opaque pointer, and every other
 * object an opaque Python object (returned to Python as the object itself),
 * as the official binding does. */
static int fallback_to_any(PyObject* obj, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos) {
  if (PyExceptionInstance_Check(obj)) return exception_to_any(obj, out, temps);
  /* Most programs register no handler: an empty table is not hashed into
   * (the lookup is ~130 instructions, a fifth of an opaque argument's cost). */
  PyObject* handler = NULL; /* a strong reference: another thread may replace the entry */
  if (PyDict_GET_SIZE(g_opaque_ptr_handlers) != 0 &&
      tvmffi_dict_get_ref(g_opaque_ptr_handlers, (PyObject*)Py_TYPE(obj), &handler) < 0) {
    return -1;
  }
  if (handler != NULL) {
    PyObject* addr = PyObject_CallOneArg(handler, obj);
    Py_DECREF(handler);
    if (addr == NULL) return -1;
    void* p = PyLong_Check(addr) ? PyLong_AsVoidPtr(addr) : NULL;
    if (!PyLong_Check(addr)) {
      tvmffi_arg_error(PyExc_TypeError, argpos, "opaque pointer handler of '%.200s' returned "
                       "'%.200s', not an int", Py_TYPE(obj)->tp_name, Py_TYPE(addr)->tp_name);
    }
    Py_DECREF(addr);
    if (p == NULL && PyErr_Occurred()) return -1;
    pod_to_any(kTVMFFIOpaquePtr, out);
    out->v_ptr = p;
    return 0;
  }
  if (PyErr_Occurred()) return -1;
  TVMFFIObjectHandle h;
  if (tvmffi_opaque_py_create(obj, &h) != 0) return -1;
  return own_into_temps(h, out, temps);
}

static int callable_to_any(PyObject* obj, TVMFFIAny* out, TempList* temps) {
  TVMFFIObjectHandle f;
  if (tvmffi_callback_create(obj, &f) != 0) return -1;
  if (temps_push(temps, f) != 0) {
    TVMFFIObjectDecRef(f);
    return -1;
  }
  set_object(out, f);
  return 0;
}

/* ---- per-type classification of the slow path ---------------------------- */
/* How values of a given Python type convert. Deciding it may need attribute
 * lookups, so the decision is made once per type and cached. */
typedef enum {
  K_OPAQUE = 0, /* no conversion claims it: an opaque Python object */
  K_OBJECT,
  K_INT,
  K_FLOAT,
  K_STR,
  K_STRING,
  K_BYTES,
  K_BYTES_OBJ,
  K_SHAPE,
  K_BYTEARRAY,
  K_DEVICE,
  K_DTYPE,
  K_DTYPE_LIKE,
  K_SEQUENCE,
  K_DICT,
  K_OFFICIAL_OBJECT, /* the official binding's classes (interop.c) */
  K_OFFICIAL_TENSOR,
  K_OFFICIAL_NATIVE,
  K_VOID_P,
  K_CALLABLE,
  K_INDEX,
  K_FLOAT_LIKE,
  K_BOOL_LIKE,
  K_TENSOR,
  K_CUDA_STREAM,
  K_RVALUE, /* obj._move() */
  K_DLPACK_DTYPE,  /* __dlpack_data_type__() -> (code, bits, lanes) */
  K_DLPACK_DEVICE, /* __dlpack_device__() -> (type, index), without __dlpack__ */
  K_NUMPY_SCALAR,  /* K_NUMPY_SCALAR + NumpyScalarKind: read in place (numpy_scalar.c) */
  K_PROTOCOL = K_NUMPY_SCALAR + NPS_COUNT, /* K_PROTOCOL + i for kProtocols[i] */
} SlowKind;

/* Whether values of `tp` are complex numbers (Python's, NumPy's): no FFI
 * value holds one, and their __float__ would drop the imaginary part, so they
 * travel as opaque Python objects (as on the official binding). */
static int is_complex_type(PyTypeObject* tp) {
  return PyType_IsSubtype(tp, &PyComplex_Type) || strncmp(tp->tp_name, "numpy.complex", 13) == 0;
}

static int classify(PyTypeObject* tp) {
  if (PyType_IsSubtype(tp, &TVMFFIObjectType)) return K_OBJECT;
  if (tp == &TVMFFIRValueRefType) return K_RVALUE;
  /* Before the builtins (tvm_ffi.Shape is a tuple), the callable and the
   * DLPack routes: an official object converts by its handle. */
  switch (tvmffi_official_kind(tp)) {
    case OFFICIAL_OBJECT:
      return K_OFFICIAL_OBJECT;
    case OFFICIAL_TENSOR:
      return K_OFFICIAL_TENSOR;
    case OFFICIAL_NATIVE:
      return K_OFFICIAL_NATIVE;
    default:
      break;
  }
  if (PyType_IsSubtype(tp, &PyLong_Type)) return K_INT;
  if (PyType_IsSubtype(tp, &PyFloat_Type)) return K_FLOAT;
  /* tvmffi.dtype and the official dtype are str subclasses: checked before str. */
  if (PyType_IsSubtype(tp, &TVMFFIDataTypeType)) return K_DTYPE;
  if (tvmffi_is_dtype_like_type(tp)) return K_DTYPE_LIKE;
  if (PyType_IsSubtype(tp, &TVMFFIStringType)) return K_STRING;
  if (PyType_IsSubtype(tp, &PyUnicode_Type)) return K_STR;
  if (tvmffi_is_bytes_class(tp)) return K_BYTES_OBJ;
  if (PyType_IsSubtype(tp, &PyBytes_Type)) return K_BYTES;
  if (PyType_IsSubtype(tp, &PyByteArray_Type)) return K_BYTEARRAY;
  if (PyType_IsSubtype(tp, &TVMFFIDeviceType)) return K_DEVICE;
  if (tvmffi_is_shape_class(tp)) return K_SHAPE;
  if (PyType_IsSubtype(tp, &PyList_Type) || PyType_IsSubtype(tp, &PyTuple_Type)) {
    return K_SEQUENCE;
  }
  if (PyType_IsSubtype(tp, &PyDict_Type)) return K_DICT;
  if (PyObject_HasAttrString((PyObject*)tp, "__tvm_ffi_object__")) return K_PROTOCOL;
  if (PyObject_HasAttrString((PyObject*)tp, "__cuda_stream__")) return K_CUDA_STREAM;
  for (int i = 0; i < NUM_PROTOCOLS; ++i) {
    if (PyObject_HasAttrString((PyObject*)tp, kProtocols[i])) return K_PROTOCOL + i;
  }
  if (tvmffi_is_tensor_type(tp)) return K_TENSOR;
  PyObject* void_p = tvmffi_ctypes_void_p();
  if (void_p == NULL) return -1;
  if (PyType_IsSubtype(tp, (PyTypeObject*)void_p)) return K_VOID_P;
  if (tp->tp_call != NULL) return K_CALLABLE;
  if (PyObject_HasAttrString((PyObject*)tp, "__dlpack_data_type__")) return K_DLPACK_DTYPE;
  if (PyObject_HasAttrString((PyObject*)tp, "__dlpack_device__")) return K_DLPACK_DEVICE;
  if (is_complex_type(tp)) return K_OPAQUE;
  /* numpy.bool_ is neither an int nor index-able in NumPy 2: keep it a Bool. */
  if (strcmp(tp->tp_name, "numpy.bool") == 0 || strcmp(tp->tp_name, "numpy.bool_") == 0) {
    return K_BOOL_LIKE;
  }
  NumpyScalarKind scalar = tvmffi_numpy_scalar_kind(tp);
  if (scalar != NPS_NONE) return K_NUMPY_SCALAR + (int)scalar;
  if (tp->tp_as_number != NULL && tp->tp_as_number->nb_index != NULL) return K_INDEX;
  if (tp->tp_as_number != NULL && tp->tp_as_number->nb_float != NULL) return K_FLOAT_LIKE;
  return K_OPAQUE;
}

/* Direct-mapped cache. A decision holds only while the type is unchanged:
 * CPython gives a type a new version tag (never reused; 0 means none yet)
 * after any change to it or to a base, so a class that gains __dlpack__ or
 * loses __call__ is classified anew. A tag names one type in one state, so
 * an entry is just the tag and its kind packed in one word: written and read
 * whole, it needs no lock without a GIL, and readers never write, so threads
 * converting the same types share the line. Entries hold no reference:
 * classes made at run time (exception classes passed as arguments) stay
 * collectable, and a type made later at a freed one's address has a tag of
 * its own. */
#define KIND_CACHE_SIZE 64
static uint64_t g_kind_cache[KIND_CACHE_SIZE];

static inline uint64_t kind_entry(unsigned int tag, int kind) {
  return ((uint64_t)tag << 32) | (uint32_t)kind;
}

static int kind_of(PyTypeObject* tp) {
  size_t slot = ((uintptr_t)tp >> 4) % KIND_CACHE_SIZE;
  unsigned int tag = tvmffi_tag_of(tp);
  uint64_t entry = TVMFFI_RELAXED_LOAD(g_kind_cache[slot]);
  if ((unsigned int)(entry >> 32) == tag && tag != 0) return (int)(uint32_t)entry;
  int kind = classify(tp);
  if (kind < 0) return -1;
  tag = tvmffi_type_version_tag(tp); /* read after classify: its lookups may modify */
  if (tag != 0) TVMFFI_RELAXED_STORE(g_kind_cache[slot], kind_entry(tag, kind));
  return kind;
}

static int bad_protocol_result(PyObject* obj, int protocol, PyObject* v, const char* want,
                               Py_ssize_t argpos) {
  return tvmffi_arg_error(PyExc_TypeError, argpos, "%.200s.%s() returned '%.200s', not %s",
                          Py_TYPE(obj)->tp_name, kProtocols[protocol], Py_TYPE(v)->tp_name, want);
}

/* The result of __tvm_ffi_<protocol>__, checked to be what the protocol
 * promises: an int (an index, so 2.5 is refused), a real number (an int
 * becomes a float, as float() would), an FFI object; __tvm_ffi_value__ may
 * return any convertible value. */
static int protocol_result_to_any(PyObject* obj, int protocol, PyObject* v, TVMFFIAny* out,
                                  TempList* temps, Py_ssize_t argpos) {
  switch (protocol) {
    case PROTOCOL_OPAQUE_PTR: {
      void* p = PyLong_AsVoidPtr(v);
      if (p == NULL && PyErr_Occurred()) return -1;
      pod_to_any(kTVMFFIOpaquePtr, out);
      out->v_ptr = p;
      return 0;
    }
    case PROTOCOL_INT: {
      if (!PyIndex_Check(v)) return bad_protocol_result(obj, protocol, v, "an int", argpos);
      return index_to_any(v, out, temps);
    }
    case PROTOCOL_FLOAT: {
      if (is_complex_type(Py_TYPE(v))) return bad_protocol_result(obj, protocol, v, "a float", argpos);
      double d = PyFloat_AsDouble(v);
      if (d == -1.0 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return -1;
        PyErr_Clear();
        return bad_protocol_result(obj, protocol, v, "a float", argpos);
      }
      return float_to_any(d, out);
    }
    case PROTOCOL_OBJECT: {
      int kind = kind_of(Py_TYPE(v));
      if (kind < 0) return -1;
      if (kind != K_OBJECT && kind != K_OFFICIAL_OBJECT && kind != K_OFFICIAL_TENSOR) {
        return bad_protocol_result(obj, protocol, v, "an FFI object", argpos);
      }
      break;
    }
    default:
      break;
  }
  /* An object or a plain value: keep an owned reference alive for the
   * duration of the call (an empty Object raises "holds no FFI handle"). */
  TVMFFIAny owned;
  if (tvmffi_py_to_owned_any(v, &owned) != 0) return -1;
  if (owned.type_index >= kTVMFFIStaticObjectBegin && temps_push(temps, owned.v_obj) != 0) {
    TVMFFIObjectDecRef(owned.v_obj);
    return -1;
  }
  *out = owned;
  return 0;
}

/* A value through one of the protocols: `protocol` indexes kProtocols. A
 * value may answer with another protocol value (__tvm_ffi_value__ returning
 * itself, or a chain): the depth is bounded like any Python recursion. */
static int protocol_to_any(PyObject* obj, int protocol, TVMFFIAny* out, TempList* temps,
                           Py_ssize_t argpos) {
  if (Py_EnterRecursiveCall(" while converting a __tvm_ffi_*__ protocol value") != 0) return -1;
  PyObject* v = PyObject_CallMethod(obj, kProtocols[protocol], NULL);
  int rc = v == NULL ? -1 : protocol_result_to_any(obj, protocol, v, out, temps, argpos);
  Py_XDECREF(v);
  Py_LeaveRecursiveCall();
  return rc;
}

/* The last exact type classified as a tensor (torch.Tensor in a torch
 * program), with its version tag then: while the type is unchanged its
 * arguments go straight to the tensor route (tvmffi_py_to_any). The
 * reference keeps the address from being reused by another type. */
static PyTypeObject* g_hot_tensor_type;
static unsigned int g_hot_tensor_tag;

static TVMFFIMutex g_hot_tensor_lock; /* its writers, without a GIL */

/* Readers compare the two words (each read whole) with their own type's:
 * version tags are never reused, so a type paired with another's tag never
 * matches, and a match is a pair that was written together. */
static void remember_tensor_type(PyTypeObject* tp) {
  unsigned int tag = tvmffi_tag_of(tp);
  if (tp == TVMFFI_RELAXED_LOAD(g_hot_tensor_type) || tag == 0) return;
  Py_INCREF(tp);
  TVMFFI_LOCK(&g_hot_tensor_lock);
  PyTypeObject* old = g_hot_tensor_type;
  TVMFFI_RELAXED_STORE(g_hot_tensor_type, tp);
  TVMFFI_RELAXED_STORE(g_hot_tensor_tag, tag);
  TVMFFI_UNLOCK(&g_hot_tensor_lock);
  Py_XDECREF(old);
}

/* Everything that is not an exact hot type; out of line, so that the hub's
 * inline tests save no registers for it. */
/* Kinds whose conversion reads the object in C alone: no Python code runs. */
static int converts_in_c(int kind) {
  return kind == K_OBJECT || kind == K_INT || kind == K_FLOAT || kind == K_STR ||
         kind == K_DEVICE || kind == K_DTYPE;
}

static Py_NO_INLINE int convert_slow(PyObject* obj, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos) {
  int64_t unused_height;
  int kind = kind_of(Py_TYPE(obj));
  /* Python code may run next and move a handle already packed (call_guard.c). */
  if (temps->guard != NULL && !temps->guard->holding && !converts_in_c(kind) &&
      tvmffi_guard_hold(temps) != 0) {
    return -1;
  }
  if (kind == K_TENSOR) remember_tensor_type(Py_TYPE(obj));
  if (kind > K_NUMPY_SCALAR && kind < K_PROTOCOL) { /* read in place, else as any number */
    NumpyScalarKind scalar = (NumpyScalarKind)(kind - K_NUMPY_SCALAR);
    int read = tvmffi_numpy_scalar_to_any(obj, scalar, out);
    if (read != 0) return read > 0 ? 0 : -1;
    kind = scalar == NPS_F32 ? K_FLOAT_LIKE : K_INDEX;
  }
  switch (kind) {
    case K_OBJECT:
      return object_to_any(obj, out, temps);
    case K_INT:
      return int_to_any(obj, out, temps);
    case K_FLOAT:
      return float_to_any(PyFloat_AS_DOUBLE(obj), out);
    case K_STR:
      return tvmffi_str_to_any(obj, out, temps);
    case K_STRING:
      return tvmffi_string_to_any(obj, out, temps);
    case K_BYTES_OBJ:
      return tvmffi_bytes_obj_to_any(obj, out, temps);
    case K_SHAPE:
      return tvmffi_shape_obj_to_any(obj, out, temps);
    case K_BYTES:
      return tvmffi_bytes_to_any(PyBytes_AS_STRING(obj), PyBytes_GET_SIZE(obj), out, temps);
    case K_BYTEARRAY:
      return tvmffi_bytes_to_any(PyByteArray_AS_STRING(obj), PyByteArray_GET_SIZE(obj), out,
                                 temps);
    case K_DEVICE:
      pod_to_any(kTVMFFIDevice, out);
      out->v_device = ((TVMFFIPyDevice*)obj)->device;
      return 0;
    case K_DTYPE:
      pod_to_any(kTVMFFIDataType, out);
      out->v_dtype = ((TVMFFIPyDataType*)obj)->dtype;
      return 0;
    case K_DTYPE_LIKE:
      pod_to_any(kTVMFFIDataType, out);
      return tvmffi_dtype_like_to_dl(obj, &out->v_dtype);
    case K_SEQUENCE:
      return seq_to_array(obj, out, temps, argpos, &unused_height);
    case K_DICT:
      return dict_to_map(obj, out, temps, argpos, &unused_height);
    case K_OFFICIAL_OBJECT:
      return tvmffi_official_to_any(obj, OFFICIAL_OBJECT, out, temps, argpos);
    case K_OFFICIAL_TENSOR:
      return tvmffi_official_tensor_to_any(obj, out, temps, argpos);
    case K_OFFICIAL_NATIVE:
      return tvmffi_official_to_any(obj, OFFICIAL_NATIVE, out, temps, argpos);
    case K_VOID_P:
      return void_p_to_any(obj, out);
    case K_CALLABLE:
      return callable_to_any(obj, out, temps);
    case K_INDEX:
      return index_to_any(obj, out, temps);
    case K_FLOAT_LIKE: {
      double v = PyFloat_AsDouble(obj);
      if (v == -1.0 && PyErr_Occurred()) return -1;
      return float_to_any(v, out);
    }
    case K_BOOL_LIKE: {
      int truth = PyObject_IsTrue(obj);
      if (truth < 0) return -1;
      pod_to_any(kTVMFFIBool, out);
      out->v_int64 = truth;
      return 0;
    }
    case K_TENSOR:
      return tvmffi_tensor_to_any(obj, out, temps, argpos);
    case K_CUDA_STREAM:
      return cuda_stream_to_any(obj, out, argpos);
    case K_RVALUE:
      return tvmffi_rvalue_to_any(obj, out, argpos);
    case K_DLPACK_DTYPE:
    case K_DLPACK_DEVICE:
      return dlpack_pair_protocol_to_any(obj, kind == K_DLPACK_DTYPE, out, argpos);
    case K_OPAQUE:
      return fallback_to_any(obj, out, temps, argpos);
    default:
      if (kind < 0) return -1;
      return protocol_to_any(obj, kind - K_PROTOCOL, out, temps, argpos);
  }
}

/* The hub's inline tests, for tvmffi_py_to_any and tvmffi_arg_to_any (`lent`:
 * obj is a call's positional argument, which the caller holds until the call
 * returns). */
static inline __attribute__((always_inline)) int hub_to_any(PyObject* obj, TVMFFIAny* out,
                                                            TempList* temps, Py_ssize_t argpos,
                                                            int lent) {
  PyTypeObject* tp = Py_TYPE(obj);
  if (tp == &PyLong_Type) return int_to_any(obj, out, temps);
  if (tp == &PyFloat_Type) return float_to_any(PyFloat_AS_DOUBLE(obj), out);
  if (obj == Py_None) {
    pod_to_any(kTVMFFINone, out);
    return 0;
  }
  if (tp == &PyBool_Type) {
    pod_to_any(kTVMFFIBool, out);
    out->v_int64 = obj == Py_True;
    return 0;
  }
  if (tp == &PyUnicode_Type) return tvmffi_str_to_any(obj, out, temps);
  if (tp == tvmffi_numpy_ndarray_type) return tvmffi_ndarray_to_any(obj, out, temps, argpos, lent);
  /* Registered classes (and Function) mostly derive from Object directly. */
  if (tp->tp_base == &TVMFFIObjectType) return object_to_any(obj, out, temps);
  /* The official binding's Tensor and its direct subclasses (tvm.runtime.Tensor):
   * as cheap as our own (NULL until tvm_ffi is seen and its layout checked). */
  PyTypeObject* official = tvmffi_official_tensor_type;
  if (official != NULL && (tp == official || tp->tp_base == official)) {
    /* The handle, inline (interop.c sets the type once it found the handle
     * right after the object header); a Tensor without one is a view. */
    TVMFFIObjectHandle h = *(TVMFFIObjectHandle*)((char*)obj + sizeof(PyObject));
    if (h == NULL) return tvmffi_official_tensor_to_any(obj, out, temps, argpos);
    out->type_index = kTVMFFITensor;
    out->zero_padding = 0;
    out->v_obj = (TVMFFIObject*)h;
    return 0;
  }
  /* A plain Python function (a callback argument): no protocol can apply. */
  if (tp == &PyFunction_Type) return callable_to_any(obj, out, temps);
  if (tp == TVMFFI_RELAXED_LOAD(g_hot_tensor_type) &&
      tvmffi_tag_of(tp) == TVMFFI_RELAXED_LOAD(g_hot_tensor_tag)) {
    return tvmffi_tensor_to_any(obj, out, temps, argpos);
  }
  return convert_slow(obj, out, temps, argpos);
}

int tvmffi_py_to_any(PyObject* obj, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos) {
  return hub_to_any(obj, out, temps, argpos, 0);
}

int tvmffi_arg_to_any(PyObject* obj, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos) {
  return hub_to_any(obj, out, temps, argpos, 1);
}

/* Python -> owned Any, with the graph height of a container built here. */
static int measured_to_owned(PyObject* obj, TVMFFIAny* out, int64_t* height) {
  TempList temps;
  temps_init(&temps);
  int rc = measured_to_any(obj, out, &temps, -1, height);
  /* Views of objects become owned by taking one more reference; the
   * temporaries then drop theirs. A moved object (obj._move()) hands its own. */
  if (rc == 0 && out->type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectIncRef(out->v_obj);
  if (rc == 0 && out->type_index == kTVMFFIObjectRValueRef) rc = tvmffi_take_rvalue(out, out);
  temps_release(&temps);
  return rc;
}

int tvmffi_py_to_owned_any(PyObject* obj, TVMFFIAny* out) {
  int64_t unused_height;
  return measured_to_owned(obj, out, &unused_height);
}

/* ---- Any -> Python ------------------------------------------------------- */
void tvmffi_any_release(TVMFFIAny* value) {
  if (value->type_index >= kTVMFFIStaticObjectBegin) tvmffi_object_release(value->v_obj);
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
      return tvmffi_string_from_owned(h);
    case kTVMFFIBytes:
      return tvmffi_bytes_from_owned(h);
    case kTVMFFIShape:
      return tvmffi_shape_from_owned(h);
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
  /* Objects of registered (dynamic) types first: results at call rate. */
  if (value->type_index >= kTVMFFIDynObjectBegin) {
    return tvmffi_object_wrap_typed(value->v_obj, value->type_index);
  }
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
    case kTVMFFIDLTensorPtr:
      return tvmffi_dltensor_to_py((const DLTensor*)value->v_ptr, 0);
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

PyObject* tvmffi_convert(PyObject* value) {
  TVMFFIAny any;
  int64_t height = -1;
  if (measured_to_owned(value, &any, &height) != 0) return NULL;
  TVMFFIObjectHandle h = any.type_index >= kTVMFFIStaticObjectBegin ? any.v_obj : NULL;
  PyObject* res = tvmffi_any_to_py_owned(&any);
  if (res != NULL && height > 0 && tvmffi_is_object(res) && ((TVMFFIPyObject*)res)->handle == h) {
    ((TVMFFIPyObject*)res)->graph_height = height;
  }
  return res;
}

static PyObject* py_convert(PyObject* self, PyObject* value) {
  (void)self;
  return tvmffi_convert(value);
}

static PyMethodDef any_methods[] = {
    {"_convert", py_convert, METH_O, "The FFI value a call would receive, as a Python object."},
    {NULL, NULL, 0, NULL},
};

int tvmffi_any_init(PyObject* module) {
  g_opaque_ptr_handlers = PyDict_New();
  if (g_opaque_ptr_handlers == NULL) return -1;
  if (PyModule_AddObjectRef(module, "_OPAQUE_PTR_HANDLERS", g_opaque_ptr_handlers) < 0) return -1;
  return PyModule_AddFunctions(module, any_methods);
}
