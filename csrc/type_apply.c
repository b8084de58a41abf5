/*
 * Running a compiled TypeSchema plan (type_plan.h) on a value.
 *
 * Python values go through any.c first, the one conversion hub: a value is
 * packed exactly as a call argument is (protocols, NumPy scalars, tensors,
 * lists and dicts as Array/Map ...), and the plan then checks and casts the
 * packed FFI value: an int node takes an Int or a Bool, an Array[int] node
 * takes an Array or List and casts its elements, an object node checks the
 * type's ancestry. Field setters enter with a packed view already. What
 * packing cannot see is settled before it: the conversion protocols are
 * unwrapped one step at a time here (a value answering with itself stops, a
 * chain is bounded and named a cycle), and a numbers.Integral is read by
 * int()/bool() for int/bool nodes.
 */
#include "type_plan.h"

#include <string.h>

#define TP_PROTOCOL_STEPS 32 /* __tvm_ffi_value__ answers followed before "cycle" */

static TVMFFIObjectHandle g_ctor[4]; /* ffi.Array, ffi.List, ffi.Map, ffi.Dict */
static PyObject* g_device_fn;        /* tvmffi.device.device */
static PyObject* g_convertible;      /* tvmffi.object.ObjectConvertible */
static PyObject* g_integral;         /* numbers.Integral */

/* ---- small helpers ----------------------------------------------------------------- */
static void set_none(TVMFFIAny* out) {
  out->type_index = kTVMFFINone;
  out->zero_padding = 0;
  out->v_int64 = 0;
}

static void set_pod(TVMFFIAny* out, int32_t ti, int64_t v) {
  out->type_index = ti;
  out->zero_padding = 0;
  out->v_int64 = v;
}

/* *out = *in, with a reference of its own. */
static void copy_any(const TVMFFIAny* in, TVMFFIAny* out) {
  *out = *in;
  if (in->type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectIncRef(in->v_obj);
}

static int same_any(const TVMFFIAny* a, const TVMFFIAny* b) {
  return a->type_index == b->type_index && a->v_uint64 == b->v_uint64 &&
         (a->type_index != kTVMFFISmallStr && a->type_index != kTVMFFISmallBytes
              ? 1
              : a->small_str_len == b->small_str_len);
}

static int is_object(int32_t ti) { return ti >= kTVMFFIStaticObjectBegin; }

/* Whether object type `ti` is `target` or derives from it. */
static int is_instance(int32_t ti, int32_t target) {
  if (!is_object(ti)) return 0;
  if (ti == target || target == kTVMFFIObject) return 1;
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(ti);
  const TVMFFITypeInfo* want = TVMFFIGetTypeInfo(target);
  if (info == NULL || want == NULL) return 0;
  int32_t d = want->type_depth;
  return d < info->type_depth && info->type_ancestors[d]->type_index == target;
}

/* ---- messages ----------------------------------------------------------------------- */
/* The name of what a packed value is: its Python type for an opaque Python
 * object, the type key for other objects, the scalar's Python name else. */
static PyObject* name_of_any(const TVMFFIAny* v) {
  switch (v->type_index) {
    case kTVMFFINone: return PyUnicode_FromString("None");
    case kTVMFFIInt: case kTVMFFIBigInt: return PyUnicode_FromString("int");
    case kTVMFFIBool: return PyUnicode_FromString("bool");
    case kTVMFFIFloat: return PyUnicode_FromString("float");
    case kTVMFFISmallStr: case kTVMFFIStr: case kTVMFFIRawStr: return PyUnicode_FromString("str");
    case kTVMFFISmallBytes: case kTVMFFIBytes: return PyUnicode_FromString("bytes");
    case kTVMFFIOpaquePtr: return PyUnicode_FromString("ctypes.c_void_p");
    case kTVMFFIDataType: return PyUnicode_FromString("dtype");
    case kTVMFFIDevice: return PyUnicode_FromString("Device");
    case kTVMFFIDLTensorPtr: return PyUnicode_FromString("Tensor");
    case kTVMFFIOpaquePyObject: {
      PyObject* held = (PyObject*)((TVMFFIOpaqueObjectCell*)tvmffi_cell(v->v_obj))->handle;
      return PyUnicode_FromString(Py_TYPE(held)->tp_name);
    }
    default: break;
  }
  if (!is_object(v->type_index)) return PyUnicode_FromFormat("type index %d", v->type_index);
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(v->type_index);
  if (info == NULL) return PyUnicode_FromFormat("type index %d", v->type_index);
  return PyUnicode_FromStringAndSize(info->type_key.data, (Py_ssize_t)info->type_key.size);
}

/* The name of a Python value: FFI objects by type key (from the packed value). */
static PyObject* name_of(const TVMFFIAny* v, PyObject* py) {
  if (py == NULL || tvmffi_is_object(py)) return name_of_any(v);
  if (py == Py_None) return PyUnicode_FromString("None");
  return PyUnicode_FromString(Py_TYPE(py)->tp_name);
}

/* TypeError("expected <node>, got <value>[<detail>]"); returns -1. */
static int mismatch(const TPNode* n, const TVMFFIAny* v, PyObject* py, const char* detail) {
  PyObject* got = py != NULL && v == NULL ? PyUnicode_FromString(
                      py == Py_None ? "None" : Py_TYPE(py)->tp_name)
                                          : name_of(v, py);
  if (got == NULL) return -1;
  PyErr_Format(PyExc_TypeError, "expected %U, got %U%s", n->text, got, detail ? detail : "");
  Py_DECREF(got);
  return -1;
}

/* The pending exception taken out, and put back (err_put takes the reference). */
static void err_put(PyObject* exc) {
#if PY_VERSION_HEX >= 0x030C0000
  PyErr_SetRaisedException(exc);
#else
  PyErr_Restore(Py_NewRef((PyObject*)Py_TYPE(exc)), exc, PyException_GetTraceback(exc));
#endif
}

/* A child's TypeError, prefixed with where the child is ("element [1]: ..."). */
static int prefixed(PyObject* where) {
  if (where == NULL) return -1;
  if (PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyObject* exc = tvmffi_fetch_exception();
    PyObject* msg = exc == NULL ? NULL : PyObject_Str(exc);
    Py_XDECREF(exc);
    if (msg != NULL) PyErr_Format(PyExc_TypeError, "%U: %U", where, msg);
    Py_XDECREF(msg);
  }
  Py_DECREF(where);
  return -1;
}

/* ---- leaves ------------------------------------------------------------------------- */
/* A String/Bytes object short enough to be inline, re-packed inline (the
 * official converter's results are). */
static void maybe_inline(const TVMFFIAny* in, int32_t small, TVMFFIAny* out) {
  const TVMFFIByteArray* b = (const TVMFFIByteArray*)tvmffi_cell(in->v_obj);
  if (b->size > 7) {
    copy_any(in, out);
    return;
  }
  set_pod(out, small, 0);
  out->small_str_len = (uint32_t)b->size;
  memcpy(out->v_bytes, b->data, b->size);
}

int tp_apply_plain(const TPNode* n, const TVMFFIAny* in, TVMFFIAny* out) {
  int32_t ti = in->type_index;
  switch (n->kind) {
    case TP_ANY:
      if (ti == kTVMFFIRawStr || ti == kTVMFFIByteArrayPtr || ti == kTVMFFIObjectRValueRef) return 0;
      copy_any(in, out);
      return 1;
    case TP_INT:
      if (ti != kTVMFFIInt && ti != kTVMFFIBool) return 0;
      set_pod(out, kTVMFFIInt, in->v_int64);
      return 1;
    case TP_BOOL:
      if (ti != kTVMFFIInt && ti != kTVMFFIBool) return 0;
      set_pod(out, kTVMFFIBool, in->v_int64 != 0);
      return 1;
    case TP_FLOAT:
      if (ti == kTVMFFIFloat) {
        *out = *in;
        return 1;
      }
      if (ti != kTVMFFIInt && ti != kTVMFFIBool) return 0;
      set_pod(out, kTVMFFIFloat, 0);
      out->v_float64 = (double)in->v_int64;
      return 1;
    case TP_STR:
      if (ti == kTVMFFISmallStr) *out = *in;
      else if (ti == kTVMFFIStr) maybe_inline(in, kTVMFFISmallStr, out);
      else return 0;
      return 1;
    case TP_BYTES:
      if (ti == kTVMFFISmallBytes) *out = *in;
      else if (ti == kTVMFFIBytes) maybe_inline(in, kTVMFFISmallBytes, out);
      else return 0;
      return 1;
    case TP_NONE:
    case TP_OPTIONAL:
      if (ti != kTVMFFINone) return 0;
      set_none(out);
      return 1;
    case TP_DTYPE: case TP_DEVICE: case TP_OPAQUE_PTR:
      if (ti != n->type_index) return 0;
      *out = *in;
      return 1;
    case TP_TENSOR: case TP_CALLABLE: case TP_OBJECT:
      if (!is_instance(ti, n->type_index)) return 0;
      copy_any(in, out);
      return 1;
    default:
      return 0;
  }
}

static int str_view(const TVMFFIAny* in, const char** data, size_t* size) {
  if (in->type_index == kTVMFFISmallStr) {
    *data = in->v_bytes;
    *size = in->small_str_len;
    return 1;
  }
  if (in->type_index == kTVMFFIStr) {
    const TVMFFIByteArray* b = (const TVMFFIByteArray*)tvmffi_cell(in->v_obj);
    *data = b->data;
    *size = b->size;
    return 1;
  }
  return 0;
}

static int dtype_from_str(const TPNode* n, const TVMFFIAny* in, TVMFFIAny* out, PyObject* py) {
  TVMFFIByteArray s;
  if (!str_view(in, &s.data, &s.size)) return mismatch(n, in, py, NULL);
  set_pod(out, kTVMFFIDataType, 0);
  if (TVMFFIDataTypeFromString(&s, &out->v_dtype) == 0) return 0;
  tvmffi_discard_ffi_error();
  PyErr_Format(PyExc_TypeError, "expected %U, got invalid dtype string '%.*s'", n->text,
               (int)s.size, s.data);
  return -1;
}

static int device_from_str(const TPNode* n, const TVMFFIAny* in, TVMFFIAny* out, PyObject* py) {
  const char* data;
  size_t size;
  if (!str_view(in, &data, &size)) return mismatch(n, in, py, NULL);
  PyObject* fn = tvmffi_import_once(&g_device_fn, "tvmffi.device", "device");
  PyObject* s = fn == NULL ? NULL : PyUnicode_FromStringAndSize(data, (Py_ssize_t)size);
  PyObject* dev = s == NULL ? NULL : PyObject_CallOneArg(fn, s);
  if (dev == NULL && s != NULL && PyErr_ExceptionMatches(PyExc_Exception)) {
    PyObject* exc = tvmffi_fetch_exception();
    PyErr_Format(PyExc_TypeError, "expected %U, got invalid device string %R: %S", n->text, s, exc);
    Py_XDECREF(exc);
  }
  Py_XDECREF(s);
  if (dev == NULL) return -1;
  int rc = tvmffi_py_to_owned_any(dev, out);
  Py_DECREF(dev);
  if (rc == 0 && out->type_index != kTVMFFIDevice) {
    tvmffi_any_release(out);
    return mismatch(n, in, py, NULL);
  }
  return rc;
}

static int float_from_bigint(const TPNode* n, const TVMFFIAny* in, TVMFFIAny* out, PyObject* py) {
  PyObject* big = tvmffi_bigint_to_py(in);
  double d = big == NULL ? -1.0 : PyLong_AsDouble(big);
  Py_XDECREF(big);
  if (d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    return mismatch(n, in, py, " (too large for a float)");
  }
  set_pod(out, kTVMFFIFloat, 0);
  out->v_float64 = d;
  return 0;
}

/* An object node's ways beyond an instance: a payload (enum variants), the
 * type's registered __ffi_convert__. */
static int object_by_hook(const TPNode* n, const TVMFFIAny* in, TVMFFIAny* out, PyObject* py) {
  if (in->type_index == kTVMFFIBigInt) return mismatch(n, in, py, " (out of int64 range)");
  PyObject* payload = tvmffi_any_to_py_borrowed(in);
  PyObject* found = payload == NULL ? NULL : PyObject_CallOneArg(n->hook, payload);
  Py_XDECREF(payload);
  if (found == NULL) return -1;
  int rc = found == Py_None ? 1 : tvmffi_py_to_owned_any(found, out);
  Py_DECREF(found);
  if (rc == 0 && !is_instance(out->type_index, n->type_index)) {
    tvmffi_any_release(out);
    return 1;
  }
  return rc;
}

/* str(exc) with every line after `pad`: a nested reason reads one level deeper than the
 * line that introduces it. New reference, or NULL with an error set. */
static PyObject* indented(PyObject* exc, const char* pad) {
  PyObject* text = exc != NULL ? PyObject_Str(exc) : PyUnicode_FromString("");
  if (text == NULL) return NULL;
  PyObject* sep = PyUnicode_FromFormat("\n%s", pad);
  PyObject* lines = sep != NULL ? PyUnicode_Splitlines(text, 0) : NULL;
  PyObject* joined = lines != NULL ? PyUnicode_Join(sep, lines) : NULL;
  PyObject* out = joined != NULL ? PyUnicode_FromFormat("%s%U", pad, joined) : NULL;
  Py_XDECREF(joined);
  Py_XDECREF(lines);
  Py_XDECREF(sep);
  Py_DECREF(text);
  return out;
}

static int object_by_convert_attr(const TPNode* n, const TVMFFIAny* in, TVMFFIAny* out,
                                  PyObject* py) {
  static const TVMFFIByteArray name = {"__ffi_convert__", 15};
  const TVMFFITypeAttrColumn* col = TVMFFIGetTypeAttrColumn(&name);
  int32_t at = col == NULL ? -1 : n->type_index - col->begin_index;
  if (at < 0 || at >= col->size || col->data[at].type_index != kTVMFFIFunction) return 1;
  TVMFFIObjectHandle fn = col->data[at].v_obj;
  TVMFFISafeCallType call = ((TVMFFIFunctionCell*)tvmffi_cell(fn))->safe_call;
  set_none(out);
  if (call(fn, in, 1, out) == 0) {
    if (is_instance(out->type_index, n->type_index)) return 0;
    tvmffi_any_release(out);
    return 1;
  }
  tvmffi_raise_ffi_error();
  PyObject* exc = tvmffi_fetch_exception();
  PyObject* got = name_of(in, py);
  PyObject* why = got != NULL ? indented(exc, "    ") : NULL;
  if (why != NULL) {
    PyErr_Format(PyExc_TypeError, "expected %U, got %U\n  __ffi_convert__ failed:\n%U", n->text,
                 got, why);
  }
  Py_XDECREF(why);
  Py_XDECREF(got);
  Py_XDECREF(exc);
  return -1;
}

static int apply_leaf(const TPNode* n, const TVMFFIAny* in, TVMFFIAny* out, PyObject* py) {
  int32_t ti = in->type_index;
  switch (n->kind) {
    case TP_INT:
      if (ti == kTVMFFIBigInt) {
        if (n->type_index == kTVMFFIBigInt) {
          copy_any(in, out);
          return 0;
        }
        return mismatch(n, in, py, " (out of int64 range)");
      }
      break;
    case TP_FLOAT:
      if (ti == kTVMFFIBigInt) return float_from_bigint(n, in, out, py);
      break;
    case TP_DTYPE:
      return dtype_from_str(n, in, out, py);
    case TP_DEVICE:
      return device_from_str(n, in, out, py);
    case TP_OPAQUE_PTR:
      if (ti != kTVMFFINone) break;
      set_pod(out, kTVMFFIOpaquePtr, 0);
      return 0;
    case TP_TENSOR:
      if (ti != kTVMFFIDLTensorPtr) break;
      *out = *in;
      return 0;
    case TP_OBJECT: {
      int rc = n->hook != NULL ? object_by_hook(n, in, out, py) : 1;
      if (rc == 1 && n->type_index != kTVMFFIObject) rc = object_by_convert_attr(n, in, out, py);
      if (rc != 1) return rc;
      break;
    }
    default:
      break;
  }
  return mismatch(n, in, py, NULL);
}

/* ---- sequences ------------------------------------------------------------------------ */
typedef struct {
  TVMFFIAny* items;
  int64_t n;
} Items; /* owned views of a container's items, or key/value pairs */

static void items_release(Items* it) {
  for (int64_t i = 0; i < it->n; ++i) tvmffi_any_release(&it->items[i]);
  PyMem_Free(it->items);
  it->items = NULL;
  it->n = 0;
}

/* The elements of an Array or List, each with its own reference, read under
 * the container's lock (a List may change meanwhile on another thread). */
static int seq_items(TVMFFIObjectHandle h, Items* it) {
  int rc = 0;
  TVMFFI_BEGIN_RUNTIME(h);
  const TVMFFISeqCell* cell = (const TVMFFISeqCell*)tvmffi_cell(h);
  it->n = cell->size;
  it->items = PyMem_Malloc((size_t)(it->n > 0 ? it->n : 1) * sizeof(TVMFFIAny));
  if (it->items == NULL) rc = -1;
  for (int64_t i = 0; rc == 0 && i < it->n; ++i) copy_any(&((TVMFFIAny*)cell->data)[i], &it->items[i]);
  TVMFFI_END_RUNTIME();
  if (rc != 0) {
    it->n = 0;
    PyErr_NoMemory();
  }
  return rc;
}

typedef struct {
  Items* it;
  int64_t cap;
} PairSink;

static int take_pair(void* ctx, const TVMFFIAny* key, const TVMFFIAny* value) {
  PairSink* s = ctx;
  if (s->it->n + 2 > s->cap) {
    int64_t cap = s->cap * 2 + 16;
    TVMFFIAny* grown = PyMem_Realloc(s->it->items, (size_t)cap * sizeof(TVMFFIAny));
    if (grown == NULL) return -1;
    s->it->items = grown;
    s->cap = cap;
  }
  copy_any(key, &s->it->items[s->it->n++]);
  copy_any(value, &s->it->items[s->it->n++]);
  return 0;
}

/* The entries of a Map or Dict as key, value, key, value ..., read in the
 * runtime's layout under the container's lock when that layout is known. */
static int map_items_py(TVMFFIObjectHandle h, Items* it);

static int map_items(TVMFFIObjectHandle h, Items* it) {
  if (!tvmffi_map_layout_ok()) return map_items_py(h, it);
  int64_t seen;
  PairSink sink = {it, 0};
  TVMFFI_BEGIN_RUNTIME(h);
  seen = tvmffi_map_layout_each((const TVMFFIObject*)h, take_pair, &sink);
  TVMFFI_END_RUNTIME();
  if (seen < 0) {
    items_release(it);
    PyErr_NoMemory();
    return -1;
  }
  return 0;
}

/* The slow way: through the Python Map's items(). */
static int map_items_py(TVMFFIObjectHandle h, Items* it) {
  TVMFFIAny view = {.type_index = tvmffi_type_index_of(h)};
  view.v_obj = (TVMFFIObject*)h;
  PyObject* m = tvmffi_any_to_py_borrowed(&view);
  PyObject* pairs = m == NULL ? NULL : PyObject_CallMethod(m, "items", NULL);
  PyObject* seq = pairs == NULL ? NULL : PySequence_Tuple(pairs);
  Py_XDECREF(m);
  Py_XDECREF(pairs);
  if (seq == NULL) return -1;
  Py_ssize_t n = PyTuple_GET_SIZE(seq);
  it->items = PyMem_Malloc((size_t)(2 * n + 1) * sizeof(TVMFFIAny));
  it->n = 0;
  int rc = it->items == NULL ? -1 : 0;
  for (Py_ssize_t i = 0; rc == 0 && i < n; ++i) {
    PyObject* kv = PyTuple_GET_ITEM(seq, i);
    for (int j = 0; rc == 0 && j < 2; ++j) {
      rc = tvmffi_py_to_owned_any(PyTuple_GET_ITEM(kv, j), &it->items[it->n]);
      if (rc == 0) ++it->n;
    }
  }
  Py_DECREF(seq);
  if (rc != 0) items_release(it);
  return rc;
}

static int build(int which, const char* name, Items* out_items, TVMFFIAny* out) {
  if (out_items->n > INT32_MAX) {
    PyErr_SetString(PyExc_OverflowError, "container too large");
    return -1;
  }
  return tvmffi_call_global_any(name, &g_ctor[which], out_items->items, (int32_t)out_items->n, out);
}

/* Converts items[i] (stride: 1 for sequences, 2 for maps, `at` the first one
 * converted) in place by node `child`; *changed when any item changed. */
static int convert_items(const TypeConverterObject* c, const TPNode* child, Items* it,
                         int64_t at, int stride, int is_value, int* changed) {
  for (int64_t i = at; i < it->n; i += stride) {
    TVMFFIAny res;
    if (tp_apply_any(c, child, &it->items[i], &res, NULL) != 0) {
      if (stride == 1) return prefixed(PyUnicode_FromFormat("element [%lld]", (long long)i));
      PyObject* exc = tvmffi_fetch_exception();
      PyObject* key = tvmffi_any_to_py_class(&it->items[i - is_value]);
      PyObject* where = key == NULL ? NULL
                                    : PyUnicode_FromFormat(is_value ? "value for key %R" : "key %R", key);
      Py_XDECREF(key);
      if (where == NULL) {
        Py_XDECREF(exc);
        return -1;
      }
      err_put(exc);
      return prefixed(where);
    }
    if (!same_any(&res, &it->items[i])) *changed = 1;
    tvmffi_any_release(&it->items[i]);
    it->items[i] = res;
  }
  return 0;
}

static int apply_seq(const TypeConverterObject* c, const TPNode* n, const TVMFFIAny* in,
                     TVMFFIAny* out, PyObject* py) {
  int32_t ti = in->type_index;
  if (!is_instance(ti, kTVMFFIArray) && !is_instance(ti, kTVMFFIList)) return mismatch(n, in, py, NULL);
  Items it = {NULL, 0};
  if (seq_items(in->v_obj, &it) != 0) return -1;
  int changed = 0;
  int rc = 0;
  if (n->kind == TP_TUPLE && n->nchild >= 0 && it.n != n->nchild) {
    PyErr_Format(PyExc_TypeError, "expected tuple of length %d, got length %lld", n->nchild,
                 (long long)it.n);
    rc = -1;
  } else if (n->kind == TP_TUPLE) {
    for (int64_t i = 0; rc == 0 && i < (n->nchild < 0 ? 0 : it.n); ++i) {
      TVMFFIAny res;
      rc = tp_apply_any(c, tp_child(c, n, (int32_t)i), &it.items[i], &res, NULL);
      if (rc != 0) {
        prefixed(PyUnicode_FromFormat("element [%lld]", (long long)i));
        break;
      }
      if (!same_any(&res, &it.items[i])) changed = 1;
      tvmffi_any_release(&it.items[i]);
      it.items[i] = res;
    }
  } else {
    rc = convert_items(c, tp_child(c, n, 0), &it, 0, 1, 0, &changed);
  }
  int want = n->kind == TP_LIST ? kTVMFFIList : kTVMFFIArray;
  if (rc == 0 && !changed && is_instance(ti, want)) copy_any(in, out);
  else if (rc == 0) rc = build(want == kTVMFFIList, want == kTVMFFIList ? "ffi.List" : "ffi.Array", &it, out);
  items_release(&it);
  return rc;
}

static int apply_map(const TypeConverterObject* c, const TPNode* n, const TVMFFIAny* in,
                     TVMFFIAny* out, PyObject* py) {
  int32_t ti = in->type_index;
  if (!is_instance(ti, kTVMFFIMap) && !is_instance(ti, kTVMFFIDict)) return mismatch(n, in, py, NULL);
  Items it = {NULL, 0};
  if (map_items(in->v_obj, &it) != 0) return -1;
  int changed = 0;
  int rc = convert_items(c, tp_child(c, n, 0), &it, 0, 2, 0, &changed);
  if (rc == 0) rc = convert_items(c, tp_child(c, n, 1), &it, 1, 2, 1, &changed);
  int want = n->kind == TP_DICT ? kTVMFFIDict : kTVMFFIMap;
  if (rc == 0 && !changed && is_instance(ti, want)) copy_any(in, out);
  else if (rc == 0) rc = build(want == kTVMFFIDict ? 3 : 2, want == kTVMFFIDict ? "ffi.Dict" : "ffi.Map", &it, out);
  items_release(&it);
  return rc;
}

static int apply_union(const TypeConverterObject* c, const TPNode* n, const TVMFFIAny* in,
                       TVMFFIAny* out, PyObject* py) {
  for (int32_t i = 0; i < n->nchild; ++i) {
    if (tp_apply_any(c, tp_child(c, n, i), in, out, py) == 0) return 0;
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) return -1;
    PyErr_Clear();
  }
  return mismatch(n, in, py, NULL);
}

int tp_apply_any(const TypeConverterObject* c, const TPNode* n, const TVMFFIAny* in,
                 TVMFFIAny* out, PyObject* py) {
  if (tp_apply_plain(n, in, out)) return 0;
  switch (n->kind) {
    case TP_ARRAY: case TP_LIST: case TP_TUPLE:
      return apply_seq(c, n, in, out, py);
    case TP_MAP: case TP_DICT:
      return apply_map(c, n, in, out, py);
    case TP_OPTIONAL:
      return tp_apply_any(c, tp_child(c, n, 0), in, out, py);
    case TP_UNION:
      return apply_union(c, n, in, out, py);
    case TP_ANY: {
      TVMFFIAny owned;
      if (TVMFFIAnyViewToOwnedAny(in, &owned) != 0) {
        tvmffi_raise_ffi_error();
        return -1;
      }
      *out = owned;
      return 0;
    }
    default:
      return apply_leaf(n, in, out, py);
  }
}

/* ---- Python values ---------------------------------------------------------------------- */
/* One protocol step of `v`: 1 with *next (new ref) when it answered with
 * another value, 0 when `v` is final, 2 when it stalled (raised, or answered
 * with itself), -1 on a reported failure. */
static int object_step(PyObject* v, PyObject** next) {
  *next = PyObject_CallMethod(v, "__tvm_ffi_object__", NULL);
  if (*next != NULL) return 1;
  PyObject* exc = tvmffi_fetch_exception();
  PyErr_Format(PyExc_TypeError, "__tvm_ffi_object__() failed: %S", exc);
  Py_XDECREF(exc);
  return -1;
}

static int value_step(PyObject* v, PyObject** next) {
  *next = PyObject_CallMethod(v, "__tvm_ffi_value__", NULL);
  if (*next == NULL) {
    PyErr_Clear(); /* the value then fails as itself */
    return 2;
  }
  if (*next != v) return 1;
  Py_DECREF(*next);
  return 2;
}

static int asobject_step(PyObject* v, PyObject** next) {
  *next = PyObject_CallMethod(v, "asobject", NULL);
  if (*next != NULL) return 1;
  PyObject* exc = tvmffi_fetch_exception();
  PyErr_Format(PyExc_TypeError, "asobject() failed: %S", exc);
  Py_XDECREF(exc);
  return -1;
}

/* Whether type `tp` defines __tvm_ffi_object__ itself, not only through
 * ObjectConvertible (whose one calls asobject(), the last resort). */
static int own_object_protocol(PyTypeObject* tp, PyObject* convertible, int is_conv) {
  PyObject* mine = PyObject_GetAttrString((PyObject*)tp, "__tvm_ffi_object__");
  if (mine == NULL) {
    PyErr_Clear();
    return 0;
  }
  int own = 1;
  if (is_conv) {
    PyObject* base = PyObject_GetAttrString(convertible, "__tvm_ffi_object__");
    own = base == NULL || base != mine;
    if (base == NULL) PyErr_Clear();
    Py_XDECREF(base);
  }
  Py_DECREF(mine);
  return own;
}

/* One protocol step of `v`, in the official precedence: its own
 * __tvm_ffi_object__, __tvm_ffi_value__, ObjectConvertible.asobject(). 1 with
 * *next (new ref) when it answered with another value, 0 when `v` is final,
 * 2 when it stalled (raised, or answered with itself), -1 on failure. */
static int protocol_step(PyObject* v, PyObject** next) {
  PyObject* convertible = tvmffi_import_once(&g_convertible, "tvmffi.object", "ObjectConvertible");
  if (convertible == NULL) return -1;
  int is_conv = PyObject_IsInstance(v, convertible);
  if (is_conv < 0) return -1;
  PyTypeObject* tp = Py_TYPE(v);
  if (own_object_protocol(tp, convertible, is_conv)) return object_step(v, next);
  if (PyObject_HasAttrString((PyObject*)tp, "__tvm_ffi_value__")) return value_step(v, next);
  return is_conv ? asobject_step(v, next) : 0;
}

/* Types that answer no protocol: nothing to unwrap. */
static int plain_type(PyObject* v) {
  PyTypeObject* tp = Py_TYPE(v);
  return v == Py_None || tp == &PyLong_Type || tp == &PyFloat_Type || tp == &PyUnicode_Type ||
         tp == &PyBool_Type || tp == &PyList_Type || tp == &PyTuple_Type || tp == &PyDict_Type ||
         tp == &PyBytes_Type || tvmffi_is_object(v);
}

/* `value` with its protocols unwrapped (new ref); *stalled when a value answered
 * with itself or failed: it cannot be packed and fails as itself. */
static PyObject* unwrap(PyObject* value, int* stalled) {
  PyObject* v = Py_NewRef(value);
  *stalled = 0;
  for (int step = 0; step < TP_PROTOCOL_STEPS; ++step) {
    if (plain_type(v)) return v;
    PyObject* next = NULL;
    int rc = protocol_step(v, &next);
    if (rc <= 0 || rc == 2) {
      *stalled = rc == 2;
      if (rc < 0) Py_CLEAR(v);
      return v;
    }
    Py_SETREF(v, next);
    if (!PyObject_HasAttrString((PyObject*)Py_TYPE(v), "__tvm_ffi_value__")) return v;
  }
  PyErr_Format(PyExc_TypeError,
               "__tvm_ffi_value__ cycle: more than %d protocol values in a chain from %.200s",
               TP_PROTOCOL_STEPS, Py_TYPE(value)->tp_name);
  Py_DECREF(v);
  return NULL;
}

/* A value that cannot be packed fails as itself: against the alternatives of
 * the node (through Optional and Union), named by its Python type. */
static int fail_as_itself(const TypeConverterObject* c, const TPNode* n, PyObject* v) {
  if (n->kind == TP_OPTIONAL) return fail_as_itself(c, tp_child(c, n, 0), v);
  if (n->kind == TP_ANY) {
    PyErr_Format(PyExc_TypeError, "failed to convert Any from %R", v);
    return -1;
  }
  return mismatch(n, NULL, v, NULL);
}

/* int()/bool() of a numbers.Integral that is not an int, for an int/bool node. */
static PyObject* read_integral(const TPNode* n, PyObject* v) {
  if ((n->kind != TP_INT && n->kind != TP_BOOL) || PyLong_Check(v) || plain_type(v)) {
    return Py_NewRef(v);
  }
  PyObject* integral = tvmffi_import_once(&g_integral, "numbers", "Integral");
  int is = integral == NULL ? -1 : PyObject_IsInstance(v, integral);
  if (is <= 0) return is < 0 ? NULL : Py_NewRef(v);
  PyObject* r = NULL;
  if (n->kind == TP_INT) {
    r = PyNumber_Long(v);
  } else {
    int t = PyObject_IsTrue(v);
    r = t < 0 ? NULL : PyBool_FromLong(t);
  }
  if (r == NULL && PyErr_ExceptionMatches(PyExc_Exception)) {
    PyObject* exc = tvmffi_fetch_exception();
    PyErr_Format(PyExc_TypeError, "expected %U, got %.200s: %S", n->text, Py_TYPE(v)->tp_name, exc);
    Py_XDECREF(exc);
  }
  return r;
}

int tp_apply_py(const TypeConverterObject* c, PyObject* value, TVMFFIAny* out) {
  const TPNode* root = c->nodes;
  int stalled;
  PyObject* v = unwrap(value, &stalled);
  if (v == NULL) return -1;
  if (stalled) {
    int rc = fail_as_itself(c, root, v);
    Py_DECREF(v);
    return rc;
  }
  Py_SETREF(v, read_integral(root, v));
  if (v == NULL) return -1;
  TVMFFIAny packed;
  int rc = tvmffi_py_to_owned_any(v, &packed);
  if (rc != 0 && PyErr_ExceptionMatches(PyExc_Exception)) {
    PyObject* exc = tvmffi_fetch_exception();
    PyErr_Format(PyExc_TypeError, "expected %U, got %.200s: %S", root->text, Py_TYPE(v)->tp_name, exc);
    Py_XDECREF(exc);
  }
  if (rc == 0) {
    rc = tp_apply_any(c, root, &packed, out, v);
    tvmffi_any_release(&packed);
  }
  Py_DECREF(v);
  return rc;
}
