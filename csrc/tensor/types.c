/*
 * Tensors and DLPack: the Python types.
 *
 *   tvmffi.Tensor      the runtime's reference-counted tensor (type index
 *                      kTVMFFITensor), an Object subclass; DLPack producer.
 *   tvmffi.TensorView  a DLTensor (passed as kTVMFFIDLTensorPtr) over the
 *                      Tensor made for its source, which it keeps alive.
 *
 * Python objects become tensors by the routes of import.c; exports live in
 * export.c; internal.h maps the files. Also here: the lifetime rule of a
 * DLTensor* that comes back to Python (a result, a callback's argument).
 */
#include "internal.h"

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
static int lent_expired(TVMFFIObjectHandle h);

static const DLTensor* tensor_dl(PyObject* self) {
  TVMFFIObjectHandle h = ((TVMFFIPyObject*)self)->handle;
  if (h == NULL) {
    PyErr_SetString(PyExc_ValueError, "tvmffi.Tensor object holds no FFI handle");
    return NULL;
  }
  if (lent_expired(h)) {
    PyErr_SetString(PyExc_ValueError,
                    "this tvmffi.Tensor was a DLTensor* lent to a Python callback, which has "
                    "returned: its memory belongs to the caller and may be gone; copy the data "
                    "inside the callback (e.g. numpy.array(numpy.from_dlpack(t))) to keep it");
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

/* A view exports the Tensor it holds. */
static PyObject* dl_dlpack_method(PyObject* self, PyObject* args, PyObject* kwargs) {
  if (Py_TYPE(self) == &TVMFFITensorViewType) {
    return dlpack_export(((TVMFFIPyTensorView*)self)->tensor, args, kwargs);
  }
  return tensor_dl(self) == NULL ? NULL
                                 : dlpack_export(((TVMFFIPyObject*)self)->handle, args, kwargs);
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
                                ImportOptions* opt) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); ++i) {
    PyObject* name = PyTuple_GET_ITEM(kwnames, i);
    if (PyUnicode_CompareWithASCIIString(name, "require_alignment") == 0) {
      long v = PyLong_AsLong(values[i]); /* an int or anything with __index__ */
      if (v == -1 && PyErr_Occurred()) return -1;
      if (v > INT_MAX || v < INT_MIN) {
        PyErr_SetString(PyExc_OverflowError, "from_dlpack: require_alignment is out of range");
        return -1;
      }
      opt->align = (int)v;
    } else if (PyUnicode_CompareWithASCIIString(name, "require_contiguous") == 0) {
      int v = PyObject_IsTrue(values[i]);
      if (v < 0) return -1;
      opt->contiguous = v;
    } else if (PyUnicode_CompareWithASCIIString(name, "allow_read_only") == 0) {
      int v = PyObject_IsTrue(values[i]);
      if (v < 0) return -1;
      opt->allow_read_only = v;
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

/* 0 when obj can be imported as a tensor; else TypeError naming `who`. Arrays
 * and exchange-API producers (cached per type) skip the attribute lookup. */
static int check_importable(PyObject* obj, const char* who) {
  if (tvmffi_is_object(obj)) {
    if (object_holds_tensor(obj)) return 0;
    PyErr_Format(PyExc_TypeError, "%s expects a tensor, got '%.200s'", who, Py_TYPE(obj)->tp_name);
    return -1;
  }
  TypeEntry scratch;
  if (PyCapsule_CheckExact(obj) || type_entry(Py_TYPE(obj), &scratch)->kind != TK_PROTOCOL ||
      tvmffi_is_tensor_type(Py_TYPE(obj))) {
    return 0;
  }
  PyErr_Format(PyExc_TypeError,
               "%s expects a DLPack producer (an object with __dlpack__) or a DLPack capsule, "
               "got '%.200s'",
               who, Py_TYPE(obj)->tp_name);
  return -1;
}

static PyObject* from_dlpack_impl(PyObject* obj, const ImportOptions* opt) {
  if (opt->align < 0) {
    PyErr_SetString(PyExc_ValueError, "require_alignment must be >= 0");
    return NULL;
  }
  if (check_importable(obj, "from_dlpack") != 0) return NULL;
  /* A Tensor imports as itself when there is nothing to check. */
  if (Py_TYPE(obj) == &TVMFFITensorType && opt->align == 0 && !opt->contiguous) {
    return Py_NewRef(obj);
  }
  TVMFFIObjectHandle h;
  if (tensor_handle_from_py(obj, opt, &h) != 0) return NULL;
  return tvmffi_object_wrap_owned(h);
}

/* from_dlpack(ext_tensor, *, require_alignment=0, require_contiguous=False,
 * allow_read_only=False). Vectorcall: the common from_dlpack(x) parses nothing. */
static PyObject* py_from_dlpack(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                                PyObject* kwnames) {
  (void)self;
  ImportOptions opt = {0, 0, 0};
  if (nargs == 1 && kwnames == NULL) return from_dlpack_impl(args[0], &opt);
  if (nargs > 1) {
    PyErr_Format(PyExc_TypeError,
                 "from_dlpack() takes 1 positional argument but %zd were given", nargs);
    return NULL;
  }
  PyObject* obj = nargs == 1 ? args[0] : NULL;
  if (kwnames != NULL && from_dlpack_keywords(args + nargs, kwnames, &obj, &opt) != 0) {
    return NULL;
  }
  if (obj == NULL) {
    PyErr_SetString(PyExc_TypeError, "from_dlpack() missing required argument 'ext_tensor'");
    return NULL;
  }
  return from_dlpack_impl(obj, &opt);
}

static PyObject* tensor_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  (void)type;
  static char* kwlist[] = {"obj", "require_alignment", "require_contiguous", "allow_read_only",
                           NULL};
  PyObject* obj;
  ImportOptions opt = {0, 0, 0};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$ipp:Tensor", kwlist, &obj, &opt.align,
                                   &opt.contiguous, &opt.allow_read_only)) {
    return NULL;
  }
  return from_dlpack_impl(obj, &opt);
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
static TVMFFIPyTensorView g_live_views; /* list head: prev/next of the live views */
static TVMFFIMutex g_views_lock;         /* the list, without a GIL (no Python code held) */

static void views_link(TVMFFIPyTensorView* v) {
  TVMFFI_LOCK(&g_views_lock);
  if (g_live_views.next == NULL) g_live_views.next = g_live_views.prev = &g_live_views;
  v->next = g_live_views.next;
  v->prev = &g_live_views;
  g_live_views.next->prev = v;
  g_live_views.next = v;
  TVMFFI_UNLOCK(&g_views_lock);
}

static void views_unlink(TVMFFIPyTensorView* v) {
  TVMFFI_LOCK(&g_views_lock);
  v->prev->next = v->next;
  v->next->prev = v->prev;
  TVMFFI_UNLOCK(&g_views_lock);
}

/* The Tensor of the live view whose DLTensor is `dl` (a new reference, taken
 * while the view is linked, so before it could be freed), or NULL. Views are
 * few (each made by hand), and this runs only when a DLTensor* comes back to
 * Python. */
TVMFFIObjectHandle live_view_tensor(const DLTensor* dl) {
  TVMFFIObjectHandle found = NULL;
  TVMFFI_LOCK(&g_views_lock);
  for (TVMFFIPyTensorView* v = g_live_views.next; v != NULL && v != &g_live_views; v = v->next) {
    if (&v->dl == dl) {
      found = v->tensor;
      TVMFFIObjectIncRef(found);
      break;
    }
  }
  TVMFFI_UNLOCK(&g_views_lock);
  return found;
}

/* A view over the Tensor `h` (a reference taken over). */
static PyObject* view_of_tensor(TVMFFIObjectHandle h) {
  TVMFFIPyTensorView* v = PyObject_New(TVMFFIPyTensorView, &TVMFFITensorViewType);
  if (v == NULL) {
    TVMFFIObjectDecRef(h);
    return NULL;
  }
  v->dl = *(const DLTensor*)tvmffi_cell(h);
  v->tensor = h;
  v->flags = tensor_flags(h);
  views_link(v);
  return (PyObject*)v;
}

/* TensorView(array, *, allow_read_only=False): the Tensor of import.c's route
 * for array (a view of a view shares its Tensor). */
static PyObject* view_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  (void)type;
  static char* kwlist[] = {"array", "allow_read_only", NULL};
  PyObject* obj;
  int allow_read_only = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$p:TensorView", kwlist, &obj,
                                   &allow_read_only)) {
    return NULL;
  }
  TVMFFIObjectHandle h;
  if (PyType_IsSubtype(Py_TYPE(obj), &TVMFFITensorViewType)) {
    h = ((TVMFFIPyTensorView*)obj)->tensor;
    TVMFFIObjectIncRef(h);
  } else if (check_importable(obj, "TensorView") != 0 ||
             view_source_handle(obj, allow_read_only, &h) != 0) {
    return NULL;
  }
  return view_of_tensor(h);
}

static void view_dealloc(PyObject* op) {
  TVMFFIPyTensorView* v = (TVMFFIPyTensorView*)op;
  views_unlink(v);
  TVMFFIObjectDecRef(v->tensor);
  PyObject_Free(op);
}

/* ---- a DLTensor* that comes back to Python --------------------------------------- */
/* The one lifetime rule: a DLTensor* that reaches Python (a call's result, a
 * Python callback's argument) becomes a tvmffi.Tensor (as in the official
 * binding), valid as long as what it points at is known to live:
 *   - the DLTensor of a live TensorView (echo(TensorView(a)) returns it;
 *     apply(cb, TensorView(a)) hands it to cb): the view's own Tensor, which
 *     keeps the view's source alive;
 *   - any other DLTensor* lent to a callback: until the callback returns.
 *     The caller owns that memory, so a Tensor kept beyond the callback is
 *     expired then: its Python accessors raise ValueError, and what else holds
 *     it sees an empty tensor (no data, zero extents), never freed memory;
 *   - any other DLTensor* returned by a callee: the callee's word, as with
 *     the official binding (nothing says how long it lives). */
PyObject* tvmffi_dltensor_to_py(const DLTensor* dl, int lent) {
  if (dl == NULL) Py_RETURN_NONE;
  TVMFFIObjectHandle viewed = live_view_tensor(dl);
  if (viewed != NULL) return tvmffi_object_wrap_owned(viewed);
  if (dl_check(dl, "DLTensor*", -1) != 0) return NULL;
  OwnTensor* t = own_from_dl(dl, NULL, 0);
  if (t == NULL) return NULL;
  t->borrowed = lent;
  return tvmffi_object_wrap_owned(t);
}

static int lent_expired(TVMFFIObjectHandle h) {
  const TVMFFIObject* o = (const TVMFFIObject*)h;
  return o->deleter == own_deleter && ((const OwnTensor*)o)->borrowed == 2;
}

/* The lent Tensor is tracked by its handle, not by the callback argument's
 * wrapper: the callback may move the handle out of the wrapper
 * (__move_handle_from__, lst.append(x._move())), and what it moved to must
 * expire all the same. */
int tvmffi_dltensor_lend(PyObject* arg, TempList* lent) {
  if (!tvmffi_is_object(arg)) return 0; /* a live view's Tensor is a Tensor too */
  TVMFFIObjectHandle h = ((TVMFFIPyObject*)arg)->handle;
  if (h == NULL || ((const TVMFFIObject*)h)->deleter != own_deleter) return 0;
  if (((const OwnTensor*)h)->borrowed != 1) return 0;
  TVMFFIObjectIncRef(h);
  if (temps_push(lent, h) != 0) {
    TVMFFIObjectDecRef(h);
    return -1;
  }
  return 0;
}

static void lent_expire(OwnTensor* t) {
  if (t->borrowed != 1) return;
  t->borrowed = 2;
  for (int i = 0; i < t->dl.ndim; ++i) t->storage[i] = 0; /* extents first: then no data */
  t->dl.byte_offset = 0;
  t->dl.data = NULL;
}

void tvmffi_dltensor_lent_end(TempList* lent) {
  for (int i = 0; i < lent->size; ++i) lent_expire((OwnTensor*)lent->items[i]);
  temps_release(lent);
}

static PyObject* view_repr(PyObject* self) { return dl_repr("tvmffi.TensorView", view_dl(self)); }

PyTypeObject TVMFFITensorViewType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tvmffi.TensorView",
    .tp_basicsize = sizeof(TVMFFIPyTensorView),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "TensorView(array, *, allow_read_only=False): a zero-copy view passed to functions "
              "as DLTensor*; it keeps array's memory alive. Read-only memory is refused "
              "(BufferError) unless allow_read_only=True.",
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
  TypeEntry scratch;
  const TypeEntry* e = type_entry((PyTypeObject*)cls, &scratch);
  static const char* const kinds[] = {"", "ndarray", "view", "object", "official", "exchange",
                                      "protocol"};
  return Py_BuildValue("(si)", kinds[e->kind], e->trusted);
}

static PyMethodDef tensor_module_methods[] = {
    {"_tensor_route", py_tensor_route, METH_O,
     "_tensor_route(cls) -> (kind, trusted): the tensor route of cls (for tests)."},
    {"from_dlpack", (PyCFunction)(void (*)(void))py_from_dlpack, METH_FASTCALL | METH_KEYWORDS,
     "from_dlpack($module, ext_tensor, *, require_alignment=0, require_contiguous=False, "
     "allow_read_only=False)\n"
     "--\n\n"
     "Import ``ext_tensor`` (a DLPack producer or capsule) as a :class:`Tensor` without copying.\n\n"
     "The versioned DLPack protocol is used when the producer supports it, the\n"
     "legacy one otherwise. ``require_alignment`` (bytes) and\n"
     "``require_contiguous`` make the runtime reject tensors that do not satisfy\n"
     "them. Read-only memory raises ``BufferError`` unless ``allow_read_only``\n"
     "is true (the caller then promises that functions only read it)."},
    {NULL, NULL, 0, NULL},
};

int tvmffi_tensor_init_types(PyObject* module) {
  if (ndarray_init() != 0 || capsule_init() != 0) return -1;
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
  if (tvmffi_tensor_buffer_init(module) != 0) return -1;
  return PyModule_AddFunctions(module, tensor_module_methods);
}
