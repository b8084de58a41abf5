/*
 * Tensors and DLPack: the Python types.
 *
 *   tvmffi.Tensor      the runtime's reference-counted tensor (type index
 *                      kTVMFFITensor), an Object subclass; DLPack producer.
 *   tvmffi.TensorView  a borrowed DLTensor (passed as kTVMFFIDLTensorPtr) that
 *                      keeps whatever its source handed out alive.
 *
 * Python objects become tensors by the cheapest route that is still safe
 * (tensor_from_py.c: NumPy in ndarray.c, DLPack producers in dlpack.c); each
 * route ends in ONE Tensor object built in own_tensor.c. Exports live in
 * dlpack_export.c; tensor_internal.h maps the files.
 */
#include "tensor_internal.h"

#include <limits.h>
#include <string.h>

/* ---- shared DLTensor accessors -------------------------------------------------- */
static PyObject* dl_shape(const DLTensor* dl) {
  PyObject* t = PyTuple_New(dl->ndim);
  if (t == NULL) return NULL;
  for (int i = 0; i < dl->ndim; ++i) {
    PyObject* v = PyLong_FromLongLong(dl->shape[i]);
    if (v == NULL) return Py_DECREF(t), NULL;
    PyTuple_SET_ITEM(t, i, v);
  }
  return t;
}

static PyObject* dl_strides(const DLTensor* dl) {
  PyObject* t = PyTuple_New(dl->ndim);
  if (t == NULL) return NULL;
  int64_t compact = 1;
  for (int i = dl->ndim - 1; i >= 0; --i) {
    int64_t s = dl->strides != NULL ? dl->strides[i] : compact;
    compact *= dl->shape[i];
    PyObject* v = PyLong_FromLongLong(s);
    if (v == NULL) return Py_DECREF(t), NULL;
    PyTuple_SET_ITEM(t, i, v);
  }
  return t;
}

static PyObject* dl_dlpack_device(const DLTensor* dl) {
  return Py_BuildValue("(ii)", (int)dl->device.device_type, (int)dl->device.device_id);
}

static PyObject* dl_data_ptr(const DLTensor* dl) {
  return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)dl->data + dl->byte_offset);
}

static PyObject* dl_repr(const char* cls, const DLTensor* dl) {
  PyObject* shape = dl_shape(dl);
  PyObject* dtype = tvmffi_dtype_from_dl(dl->dtype);
  PyObject* dtype_s = dtype ? PyObject_Str(dtype) : NULL;
  PyObject* device = tvmffi_device_from_dl(dl->device);
  PyObject* res = NULL;
  if (shape && dtype_s && device) {
    res = PyUnicode_FromFormat("%s(shape=%S, dtype=%U, device=%S)", cls, shape, dtype_s, device);
  }
  Py_XDECREF(shape);
  Py_XDECREF(dtype);
  Py_XDECREF(dtype_s);
  Py_XDECREF(device);
  return res;
}

/* ---- tvmffi.Tensor -------------------------------------------------------------- */
static const DLTensor* tensor_dl(PyObject* self) {
  TVMFFIObjectHandle h = ((TVMFFIPyObject*)self)->handle;
  if (h == NULL) {
    PyErr_SetString(PyExc_ValueError, "tvmffi.Tensor object holds no FFI handle");
    return NULL;
  }
  return (const DLTensor*)tvmffi_cell(h);
}

/* Properties and DLPack methods shared by Tensor and TensorView. */
static const DLTensor* self_dl(PyObject* self) {
  return Py_TYPE(self) == &TVMFFITensorViewType ? view_dl(self) : tensor_dl(self);
}

#define DL_GETTER(name, expr)                                 \
  static PyObject* dl_get_##name(PyObject* self, void* c) { \
    (void)c;                                                 \
    const DLTensor* dl = self_dl(self);                      \
    if (dl == NULL) return NULL;                             \
    return expr;                                             \
  }

DL_GETTER(shape, dl_shape(dl))
DL_GETTER(strides, dl_strides(dl))
DL_GETTER(dtype, tvmffi_dtype_from_dl(dl->dtype))
DL_GETTER(device, tvmffi_device_from_dl(dl->device))
DL_GETTER(ndim, PyLong_FromLong(dl->ndim))
DL_GETTER(data_ptr, dl_data_ptr(dl))
DL_GETTER(dlpack_device, dl_dlpack_device(dl))

static PyObject* dl_dlpack_device_method(PyObject* self, PyObject* unused) {
  (void)unused;
  return dl_get_dlpack_device(self, NULL);
}

static PyObject* dl_data_ptr_method(PyObject* self, PyObject* unused) {
  (void)unused;
  return dl_get_data_ptr(self, NULL);
}

static PyObject* dl_numel_method(PyObject* self, PyObject* unused) {
  (void)unused;
  const DLTensor* dl = self_dl(self);
  if (dl == NULL) return NULL;
  int64_t n = 1;
  for (int i = 0; i < dl->ndim; ++i) n *= dl->shape[i];
  return PyLong_FromLongLong(n);
}

static PyObject* dl_size_method(PyObject* self, PyObject* arg) {
  const DLTensor* dl = self_dl(self);
  if (dl == NULL) return NULL;
  Py_ssize_t idx = PyNumber_AsSsize_t(arg, PyExc_IndexError);
  if (idx == -1 && PyErr_Occurred()) return NULL;
  if (idx < -(Py_ssize_t)dl->ndim || idx >= (Py_ssize_t)dl->ndim) {
    PyErr_Format(PyExc_IndexError, "Dimension %zd out of range for tensor with %d dimensions",
                 idx, (int)dl->ndim);
    return NULL;
  }
  if (idx < 0) idx += dl->ndim;
  return PyLong_FromLongLong(dl->shape[idx]);
}

/* C-contiguous (row-major); as in NumPy, PyTorch and the official binding,
 * an empty tensor is, whatever its strides, and size-1 dimensions' strides
 * do not matter. */
static PyObject* dl_is_contiguous_method(PyObject* self, PyObject* unused) {
  (void)unused;
  const DLTensor* dl = self_dl(self);
  if (dl == NULL) return NULL;
  if (dl->strides == NULL) Py_RETURN_TRUE;
  for (int i = 0; i < dl->ndim; ++i) {
    if (dl->shape[i] == 0) Py_RETURN_TRUE;
  }
  int64_t expected = 1;
  for (int i = dl->ndim - 1; i >= 0; --i) {
    if (dl->shape[i] == 1) continue;
    if (dl->strides[i] != expected) Py_RETURN_FALSE;
    expected *= dl->shape[i];
  }
  Py_RETURN_TRUE;
}

/* A view exports through a Tensor that keeps the view alive. */
static PyObject* dl_dlpack_method(PyObject* self, PyObject* args, PyObject* kwargs) {
  if (Py_TYPE(self) != &TVMFFITensorViewType) {
    return tensor_dl(self) == NULL ? NULL
                                   : dlpack_export(((TVMFFIPyObject*)self)->handle, args, kwargs);
  }
  OwnTensor* h = own_from_dl(view_dl(self), self, view_flags(self));
  if (h == NULL) return NULL;
  PyObject* cap = dlpack_export(h, args, kwargs);
  TVMFFIObjectDecRef(h);
  return cap;
}

static PyGetSetDef dl_getset[] = {
    {"shape", dl_get_shape, NULL, "Shape as a tuple of ints.", NULL},
    {"strides", dl_get_strides, NULL, "Strides in elements (compact when not stored).", NULL},
    {"dtype", dl_get_dtype, NULL, "Element type as a tvmffi.dtype (a str subclass).", NULL},
    {"device", dl_get_device, NULL, "Device holding the data.", NULL},
    {"ndim", dl_get_ndim, NULL, "Number of dimensions.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef dl_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))dl_dlpack_method, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(stream=None, max_version=None, dl_device=None, copy=None): a DLPack capsule "
     "sharing this memory (a view's is valid while the viewed array is)."},
    {"__dlpack_device__", dl_dlpack_device_method, METH_NOARGS,
     "(device_type, device_id) of the data."},
    {"data_ptr", dl_data_ptr_method, METH_NOARGS,
     "data_ptr() -> int: address of the first element (data + byte_offset)."},
    {"numel", dl_numel_method, METH_NOARGS, "numel() -> int: number of elements."},
    {"size", dl_size_method, METH_O,
     "size(idx) -> int: extent of dimension idx (negative counts from the last)."},
    {"is_contiguous", dl_is_contiguous_method, METH_NOARGS,
     "is_contiguous() -> bool: whether the layout is C-contiguous (row-major)."},
    {NULL, NULL, 0, NULL},
};

static PyObject* tensor_repr(PyObject* self) {
  if (((TVMFFIPyObject*)self)->handle == NULL) return PyUnicode_FromString("tvmffi.Tensor(empty)");
  return dl_repr("tvmffi.Tensor", tensor_dl(self));
}

/* from_dlpack's keywords: the tensor itself may be named ext_tensor (the
 * official name) or obj (tvmffi's earlier one). -1 with TypeError otherwise. */
static int from_dlpack_keywords(PyObject* const* values, PyObject* kwnames, PyObject** obj,
                                int* align, int* contiguous) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); ++i) {
    PyObject* name = PyTuple_GET_ITEM(kwnames, i);
    if (PyUnicode_CompareWithASCIIString(name, "require_alignment") == 0) {
      long v = PyLong_AsLong(values[i]); /* an int or anything with __index__ */
      if (v == -1 && PyErr_Occurred()) return -1;
      if (v > INT_MAX || v < INT_MIN) {
        PyErr_SetString(PyExc_OverflowError, "from_dlpack: require_alignment is out of range");
        return -1;
      }
      *align = (int)v;
    } else if (PyUnicode_CompareWithASCIIString(name, "require_contiguous") == 0) {
      int v = PyObject_IsTrue(values[i]);
      if (v < 0) return -1;
      *contiguous = v;
    } else if (PyUnicode_CompareWithASCIIString(name, "ext_tensor") == 0 ||
               PyUnicode_CompareWithASCIIString(name, "obj") == 0) {
      if (*obj != NULL) {
        PyErr_SetString(PyExc_TypeError, "from_dlpack() got multiple values for 'ext_tensor'");
        return -1;
      }
      *obj = values[i];
    } else {
      PyErr_Format(PyExc_TypeError, "from_dlpack() got an unexpected keyword argument '%U'", name);
      return -1;
    }
  }
  return 0;
}

static PyObject* from_dlpack_impl(PyObject* obj, int align, int contiguous) {
  if (align < 0) {
    PyErr_SetString(PyExc_ValueError, "require_alignment must be >= 0");
    return NULL;
  }
  if (tvmffi_is_object(obj)) {
    if (!object_holds_tensor(obj)) {
      PyErr_Format(PyExc_TypeError, "from_dlpack expects a tensor, got '%.200s'",
                   Py_TYPE(obj)->tp_name);
      return NULL;
    }
    /* A Tensor imports as itself when there is nothing to check. */
    if (Py_TYPE(obj) == &TVMFFITensorType && align == 0 && !contiguous) return Py_NewRef(obj);
  } else if (!PyCapsule_CheckExact(obj) && type_entry(Py_TYPE(obj))->kind == TK_PROTOCOL &&
             !tvmffi_is_tensor_type(Py_TYPE(obj))) {
    /* Arrays and exchange-API producers (cached per type) skip the lookup. */
    PyErr_Format(PyExc_TypeError,
                 "from_dlpack expects a DLPack producer (an object with __dlpack__) or a DLPack "
                 "capsule, got '%.200s'",
                 Py_TYPE(obj)->tp_name);
    return NULL;
  }
  TVMFFIObjectHandle h;
  if (tensor_handle_from_py(obj, -1, align, contiguous, NULL, &h) != 0) return NULL;
  return tvmffi_object_wrap_owned(h);
}

/* from_dlpack(ext_tensor, *, require_alignment=0, require_contiguous=False).
 * Vectorcall: the common from_dlpack(x) parses nothing. */
static PyObject* py_from_dlpack(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                                PyObject* kwnames) {
  (void)self;
  if (nargs == 1 && kwnames == NULL) return from_dlpack_impl(args[0], 0, 0);
  if (nargs > 1) {
    PyErr_Format(PyExc_TypeError,
                 "from_dlpack() takes 1 positional argument but %zd were given", nargs);
    return NULL;
  }
  PyObject* obj = nargs == 1 ? args[0] : NULL;
  int align = 0, contiguous = 0;
  if (kwnames != NULL &&
      from_dlpack_keywords(args + nargs, kwnames, &obj, &align, &contiguous) != 0) {
    return NULL;
  }
  if (obj == NULL) {
    PyErr_SetString(PyExc_TypeError, "from_dlpack() missing required argument 'ext_tensor'");
    return NULL;
  }
  return from_dlpack_impl(obj, align, contiguous);
}

static PyObject* tensor_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  (void)type;
  static char* kwlist[] = {"obj", "require_alignment", "require_contiguous", NULL};
  PyObject* obj;
  int align = 0, contiguous = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$ip:Tensor", kwlist, &obj, &align,
                                   &contiguous)) {
    return NULL;
  }
  return from_dlpack_impl(obj, align, contiguous);
}

PyTypeObject TVMFFITensorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.Tensor",
    .tp_basicsize = sizeof(TVMFFIPyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    /* .tp_doc: set by type_docs.c */
    .tp_base = &TVMFFIObjectType,
    .tp_new = tensor_new,
    .tp_repr = tensor_repr,
    .tp_methods = dl_methods,
    .tp_getset = dl_getset,
};

/* ---- tvmffi.TensorView ----------------------------------------------------------- */
static TVMFFIPyTensorView* view_alloc(Py_ssize_t nstorage) {
  TVMFFIPyTensorView* v = PyObject_NewVar(TVMFFIPyTensorView, &TVMFFITensorViewType, nstorage);
  if (v == NULL) return NULL;
  memset(&v->dl, 0, sizeof(DLTensor));
  v->owner = NULL;
  v->managed_v = NULL;
  v->managed = NULL;
  v->flags = 0;
  return v;
}

/* A view that keeps `owner` alive and copies `src`'s shape and strides. */
static PyObject* view_copying(const DLTensor* src, PyObject* owner, uint64_t flags) {
  TVMFFIPyTensorView* v = view_alloc(2 * (Py_ssize_t)src->ndim);
  if (v == NULL) return NULL;
  v->dl = *src;
  v->dl.shape = v->storage;
  v->dl.strides = v->storage + src->ndim;
  copy_shape_strides(src, v->storage);
  v->owner = Py_XNewRef(owner);
  v->flags = flags;
  return (PyObject*)v;
}

PyObject* tvmffi_tensor_view_borrowed(const DLTensor* dl) {
  if (dl == NULL) Py_RETURN_NONE;
  return view_copying(dl, NULL, 0);
}

static PyObject* view_from_numpy(PyObject* arr) {
  NumpyDesc d;
  if (numpy_describe(arr, -1, &d) != 0) return NULL;
  TVMFFIPyTensorView* v = view_alloc(2 * (Py_ssize_t)d.ndim);
  int rc = v == NULL ? -1 : numpy_fill(arr, &d, &v->dl, v->storage, -1);
  numpy_release(&d);
  if (rc != 0) {
    Py_XDECREF(v);
    return NULL;
  }
  v->owner = Py_NewRef(arr);
  if (d.readonly) v->flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  return (PyObject*)v;
}

/* TensorView(obj) shares the producer routes of a Tensor (dlpack.c), with
 * differences kept as they are: an ndarray subclass is read directly even
 * when it overrides __dlpack__ (a Tensor calls the override); a versioned
 * producer tensor flagged as padded sub-byte is accepted (a Tensor refuses
 * it); a tvmffi.Object holding no Tensor is imported through its class's
 * __dlpack__ if it has one (from_dlpack refuses it); and a managed tensor's
 * shape and strides are used in place, so strides may stay NULL (compact). */
static PyObject* view_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  (void)type;
  static char* kwlist[] = {"array", NULL};
  PyObject* obj;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:TensorView", kwlist, &obj)) return NULL;
  PyTypeObject* tp = Py_TYPE(obj);
  if (PyType_IsSubtype(tp, &TVMFFITensorViewType)) {
    return view_copying(view_dl(obj), obj, view_flags(obj));
  }
  if (is_tensor_object(obj)) {
    /* The Tensor object owns the handle, which owns shape and data. */
    TVMFFIPyTensorView* v = view_alloc(0);
    if (v == NULL) return NULL;
    v->dl = *(const DLTensor*)tvmffi_cell(((TVMFFIPyObject*)obj)->handle);
    v->flags = tensor_flags(((TVMFFIPyObject*)obj)->handle);
    v->owner = Py_NewRef(obj);
    return (PyObject*)v;
  }
  if (tvmffi_official_kind(tp) == OFFICIAL_TENSOR) {
    /* Never through its __dlpack__: a handle-less view's crashes. */
    const DLTensor* dl;
    TVMFFIObjectHandle h;
    if (tvmffi_official_tensor_parts(obj, &h, &dl, -1) != 0) return NULL;
    return view_copying(h != NULL ? (const DLTensor*)tvmffi_cell(h) : dl, obj, 0);
  }
  if (is_ndarray_type(tp)) return view_from_numpy(obj);
  if (!PyCapsule_CheckExact(obj) && !tvmffi_is_tensor_type(tp)) {
    PyErr_Format(PyExc_TypeError,
                 "TensorView expects a DLPack producer (an object with __dlpack__), got '%.200s'",
                 tp->tp_name);
    return NULL;
  }
  const TypeEntry* e = PyCapsule_CheckExact(obj) ? NULL : type_entry(tp);
  int exchange = e != NULL && e->kind == TK_EXCHANGE;
  if (exchange && exchange_fills(e)) {
    DLTensor dl;
    if (exchange_fill(obj, e, -1, &dl) != 0) return NULL;
    return view_copying(&dl, obj, 0);
  }
  /* A managed tensor, released with the view; its shape and strides are used
   * in place. */
  TVMFFIPyTensorView* v = view_alloc(0);
  if (v == NULL) return NULL;
  int rc = exchange ? exchange_managed(obj, e, -1, &v->managed_v)
                    : protocol_take(obj, -1, &v->managed_v, &v->managed);
  if (rc != 0) {
    Py_DECREF(v);
    return NULL;
  }
  if (v->managed_v != NULL) {
    v->dl = v->managed_v->dl_tensor;
    v->flags = v->managed_v->flags;
  } else {
    v->dl = v->managed->dl_tensor;
  }
  return (PyObject*)v;
}

static void view_dealloc(PyObject* op) {
  TVMFFIPyTensorView* v = (TVMFFIPyTensorView*)op;
  release_managed(v->managed_v, v->managed);
  Py_XDECREF(v->owner);
  PyObject_Free(op);
}

static PyObject* view_repr(PyObject* self) { return dl_repr("tvmffi.TensorView", view_dl(self)); }

PyTypeObject TVMFFITensorViewType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.TensorView",
    .tp_basicsize = offsetof(TVMFFIPyTensorView, storage),
    .tp_itemsize = sizeof(int64_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "TensorView(array): a borrowed, zero-copy view passed to functions as DLTensor*. "
              "The array must stay alive and unchanged while the view is used.",
    .tp_new = view_new,
    .tp_dealloc = view_dealloc,
    .tp_repr = view_repr,
    .tp_methods = dl_methods,
    .tp_getset = dl_getset,
};

/* ---- module ------------------------------------------------------------------------ */
/* _tensor_route(cls) -> (kind, trusted): how values of cls become tensors (for tests). */
static PyObject* py_tensor_route(PyObject* self, PyObject* cls) {
  (void)self;
  if (!PyType_Check(cls)) {
    PyErr_SetString(PyExc_TypeError, "_tensor_route expects a class");
    return NULL;
  }
  const TypeEntry* e = type_entry((PyTypeObject*)cls);
  static const char* const kinds[] = {"", "ndarray", "view", "object", "official", "exchange",
                                      "protocol"};
  return Py_BuildValue("(si)", kinds[e->kind], e->trusted);
}

static PyMethodDef tensor_module_methods[] = {
    {"_tensor_route", py_tensor_route, METH_O,
     "_tensor_route(cls) -> (kind, trusted): the tensor route of cls (for tests)."},
    {"from_dlpack", (PyCFunction)(void (*)(void))py_from_dlpack, METH_FASTCALL | METH_KEYWORDS,
     "from_dlpack($module, ext_tensor, *, require_alignment=0, require_contiguous=False)\n"
     "--\n\n"
     "Import ``ext_tensor`` (a DLPack producer or capsule) as a :class:`Tensor` without copying.\n\n"
     "The versioned DLPack protocol is used when the producer supports it, the\n"
     "legacy one otherwise. ``require_alignment`` (bytes) and\n"
     "``require_contiguous`` make the runtime reject tensors that do not satisfy\n"
     "them."},
    {NULL, NULL, 0, NULL},
};

int tvmffi_tensor_init_types(PyObject* module) {
  if (ndarray_init() != 0 || dlpack_init() != 0) return -1;
  if (PyType_Ready(&TVMFFITensorType) < 0 || PyType_Ready(&TVMFFITensorViewType) < 0) return -1;
  if (dlpack_export_init() != 0) return -1;
  Py_INCREF(&TVMFFITensorType);
  if (PyModule_AddObject(module, "Tensor", (PyObject*)&TVMFFITensorType) < 0) return -1;
  Py_INCREF(&TVMFFITensorViewType);
  if (PyModule_AddObject(module, "TensorView", (PyObject*)&TVMFFITensorViewType) < 0) return -1;
  /* Tensors coming back from the FFI are wrapped in tvmffi.Tensor. */
  PyObject* reg_args = Py_BuildValue("(iO)", (int)kTVMFFITensor, (PyObject*)&TVMFFITensorType);
  if (reg_args == NULL) return -1;
  PyObject* r = tvmffi_register_object_class(NULL, reg_args);
  Py_DECREF(reg_args);
  if (r == NULL) return -1;
  Py_DECREF(r);
  /* NumPy imported before us gets any.c's exact-ndarray fast path from the
   * first call; a later import is found lazily (is_ndarray_type). */
  refresh_known_types();
  return PyModule_AddFunctions(module, tensor_module_methods);
}
