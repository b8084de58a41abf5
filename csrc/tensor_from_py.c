/*
 * Python object -> Tensor handle: the cheapest route that is still safe,
 * decided once per Python type (see TypeEntry):
 *   - numpy.ndarray: read directly (ndarray.c);
 *   - tvmffi.TensorView / tvmffi.Tensor: its DLTensor / its own handle;
 *   - DLPack C exchange API or the Python protocol (dlpack.c).
 * Every route but an existing Tensor ends in ONE Tensor object built here
 * (own_tensor.c). Conversion errors name the argument.
 */
#include "tensor_internal.h"

PyTypeObject* tvmffi_numpy_ndarray_type;
PyTypeObject* g_torch_tensor_type;

/* ---- errors naming the argument ----------------------------------------------- */
/* Replace the pending exception by one that names the argument: TypeError
 * stays TypeError, other Exceptions become ValueError; the original is kept as
 * __cause__. MemoryError and non-Exception exceptions pass through. */
int wrap_error(Py_ssize_t argpos, PyObject* obj, const char* what) {
  if (!PyErr_ExceptionMatches(PyExc_Exception) || PyErr_ExceptionMatches(PyExc_MemoryError)) {
    return -1;
  }
  PyObject* exc = tvmffi_fetch_exception();
  if (exc == NULL) return -1;
  PyObject* cls = PyObject_TypeCheck(exc, (PyTypeObject*)PyExc_TypeError) ? PyExc_TypeError
                                                                            : PyExc_ValueError;
  PyObject* msg;
  if (argpos >= 0) {
    msg = PyUnicode_FromFormat("argument %zd: %s of '%.200s' failed: %.200s: %S", argpos, what,
                               Py_TYPE(obj)->tp_name, Py_TYPE(exc)->tp_name, exc);
  } else {
    msg = PyUnicode_FromFormat("%s of '%.200s' failed: %.200s: %S", what, Py_TYPE(obj)->tp_name,
                               Py_TYPE(exc)->tp_name, exc);
  }
  PyObject* new_exc = msg ? PyObject_CallOneArg(cls, msg) : NULL;
  Py_XDECREF(msg);
  if (new_exc == NULL) {
    Py_DECREF(exc);
    return -1;
  }
  PyException_SetCause(new_exc, exc); /* steals exc */
  PyErr_SetObject(cls, new_exc);
  Py_DECREF(new_exc);
  return -1;
}

/* ---- known array types (resolved once their module is imported) --------------- */
static PyTypeObject* module_type(const char* module, const char* name) {
  PyObject* mod = PyDict_GetItemString(PyImport_GetModuleDict(), module); /* borrowed */
  if (mod == NULL) return NULL;
  PyObject* tp = PyObject_GetAttrString(mod, name);
  if (tp == NULL || !PyType_Check(tp)) {
    PyErr_Clear();
    Py_XDECREF(tp);
    return NULL;
  }
  return (PyTypeObject*)tp; /* kept for the life of the process */
}

void refresh_known_types(void) {
  if (tvmffi_numpy_ndarray_type == NULL) {
    tvmffi_numpy_ndarray_type = module_type("numpy", "ndarray");
  }
  if (g_torch_tensor_type == NULL) g_torch_tensor_type = module_type("torch", "Tensor");
}

int is_ndarray_type(PyTypeObject* tp) {
  if (tvmffi_numpy_ndarray_type == NULL) refresh_known_types();
  return tvmffi_numpy_ndarray_type != NULL && PyType_IsSubtype(tp, tvmffi_numpy_ndarray_type);
}

static int is_torch_type(PyTypeObject* tp) {
  if (g_torch_tensor_type == NULL) refresh_known_types();
  return g_torch_tensor_type != NULL && PyType_IsSubtype(tp, g_torch_tensor_type);
}

/* Asked anew each time, not cached per type: a class may gain or lose
 * __dlpack__ after it was first seen, and from_dlpack / TensorView follow. */
int tvmffi_is_tensor_type(PyTypeObject* tp) {
  if (PyType_IsSubtype(tp, &TVMFFITensorViewType)) return 1;
  return PyObject_HasAttr((PyObject*)tp, g_str_dlpack);
}

/* An ndarray subclass that overrides __dlpack__ gets the protocol route. */
static int same_dlpack_as_ndarray(PyTypeObject* tp) {
  if (tp == tvmffi_numpy_ndarray_type) return 1;
  PyObject* mine = PyObject_GetAttr((PyObject*)tp, g_str_dlpack);
  PyObject* base = PyObject_GetAttr((PyObject*)tvmffi_numpy_ndarray_type, g_str_dlpack);
  int same = mine != NULL && mine == base;
  Py_XDECREF(mine);
  Py_XDECREF(base);
  PyErr_Clear();
  return same;
}

/* torch < 2.10 has no DLPack C exchange API of its own; the torch-c-dlpack-ext
 * package adds one to torch.Tensor when imported (and does nothing on a torch
 * that has it). Tried once, when a torch tensor without the API is first
 * met; a failed import leaves torch on the Python protocol. An API that
 * appears later (the package or tvm_ffi imported afterwards) is still found:
 * setting the attribute changes the type's version tag, so its entry is
 * decided again. */
static void load_torch_exchange_api(void) {
  static int tried;
  if (tried) return;
  tried = 1;
  PyObject* mod = PyImport_ImportModule("torch_c_dlpack_ext");
  if (mod == NULL) {
    PyErr_Clear(); /* not installed, or no build for this torch */
  }
  Py_XDECREF(mod);
}

/* ---- the route of each Python type ---------------------------------------------- */
TypeEntry g_type_cache[TYPE_CACHE_SIZE];

const TypeEntry* type_entry_decide(PyTypeObject* tp) {
  TypeEntry* e = &g_type_cache[((uintptr_t)tp >> 4) % TYPE_CACHE_SIZE];
  TypeEntry fresh = {tp, 0, TK_PROTOCOL, NULL, is_torch_type(tp), 0};
  if (is_ndarray_type(tp) && same_dlpack_as_ndarray(tp)) {
    fresh.kind = TK_NDARRAY;
  } else if (PyType_IsSubtype(tp, &TVMFFITensorViewType)) {
    fresh.kind = TK_VIEW;
  } else if (PyType_IsSubtype(tp, &TVMFFIObjectType)) {
    fresh.kind = TK_OBJECT;
  } else if (tvmffi_official_kind(tp) == OFFICIAL_TENSOR) {
    fresh.kind = TK_OFFICIAL;
  } else if ((fresh.api = lookup_exchange_api(tp)) != NULL) {
    fresh.kind = TK_EXCHANGE;
  } else if (fresh.is_torch) {
    load_torch_exchange_api();
    if ((fresh.api = lookup_exchange_api(tp)) != NULL) fresh.kind = TK_EXCHANGE;
  }
  fresh.trusted = fresh.kind == TK_EXCHANGE && fresh.is_torch && exchange_api_is_torchs(fresh.api);
  fresh.tag = tvmffi_type_version_tag(tp); /* after the lookups above */
  Py_INCREF(tp);
  PyTypeObject* old = e->type;
  *e = fresh;
  Py_XDECREF(old);
  return e;
}


/* ---- from_dlpack's requirements ------------------------------------------------- */
/* The checks TVMFFITensorFromDLPack makes on request, with the same meaning:
 * alignment of data + byte_offset (of byte_offset alone where addresses are
 * not plain pointers), and row-major contiguity ignoring unit dimensions. */
static int is_direct_address(DLDevice d) {
  return d.device_type <= kDLCUDAHost || d.device_type == kDLCUDAManaged ||
         d.device_type == kDLROCM || d.device_type == kDLROCMHost;
}

static int dl_is_contiguous(const DLTensor* dl) {
  if (dl->strides == NULL) return 1;
  for (int i = 0; i < dl->ndim; ++i) {
    if (dl->shape[i] == 0) return 1;
  }
  int64_t expected = 1;
  for (int i = dl->ndim - 1; i >= 0; --i) {
    if (dl->shape[i] == 1) continue;
    if (dl->strides[i] != expected) return 0;
    expected *= dl->shape[i];
  }
  return 1;
}

static int check_requirements(const DLTensor* dl, int align, int contiguous) {
  if (align > 0) {
    uintptr_t addr = is_direct_address(dl->device) ? (uintptr_t)dl->data : 0;
    if ((addr + dl->byte_offset) % (uint64_t)align != 0) {
      PyErr_Format(PyExc_RuntimeError, "from_dlpack: data is not aligned to %d bytes", align);
      return -1;
    }
  }
  if (contiguous && !dl_is_contiguous(dl)) {
    PyErr_SetString(PyExc_RuntimeError, "from_dlpack: the tensor is not contiguous");
    return -1;
  }
  return 0;
}

/* Hand out `t` as an owned handle after the requested checks. */
static int own_finish(OwnTensor* t, int align, int contiguous, TVMFFIObjectHandle* out) {
  if (t == NULL) return -1;
  if (check_requirements(&t->dl, align, contiguous) != 0) {
    own_deleter(t, kTVMFFIObjectDeleterFlagBitMaskBoth);
    return -1;
  }
  *out = t;
  return 0;
}

/* ---- Python object -> Tensor handle ------------------------------------------ */
/* For a tensor on a device with streams, the producer's current stream
 * becomes the environment stream of the call owning `temps` (unless a
 * use_stream() is active). On failure the tensor `h` is released. */
static int adopt_producer_stream(PyObject* obj, const TypeEntry* e, TVMFFIObjectHandle h,
                                 Py_ssize_t argpos, TempList* temps) {
  DLDevice dev = ((const DLTensor*)tvmffi_cell(h))->device;
  if (dev.device_type == kDLCPU || e->api->current_work_stream == NULL) return 0;
  void* stream = NULL;
  if (e->api->current_work_stream(dev.device_type, dev.device_id, &stream) != 0) {
    TVMFFIObjectDecRef(h);
    return wrap_error(argpos, obj, "current_work_stream()");
  }
  if (tvmffi_stream_adopt(dev.device_type, dev.device_id, stream, temps) != 0) {
    TVMFFIObjectDecRef(h);
    return -1;
  }
  return 0;
}

/* Owned Tensor handle for any tensor-like Python object. With `temps`, a
 * framework's current stream for the tensor's device is adopted for the call. */
static int handle_from_entry(PyObject* obj, const TypeEntry* e, Py_ssize_t argpos, int align,
                             int contiguous, TempList* temps, TVMFFIObjectHandle* out) {
  switch (e->kind) {
    case TK_NDARRAY:
      return own_finish(numpy_tensor(obj, argpos), align, contiguous, out);
    case TK_VIEW:
      return own_finish(own_from_dl(view_dl(obj), obj, view_flags(obj)), align, contiguous, out);
    case TK_OBJECT: { /* a Tensor object: see the declaration */
      TVMFFIObjectHandle h = ((TVMFFIPyObject*)obj)->handle;
      if (check_requirements((const DLTensor*)tvmffi_cell(h), align, contiguous) != 0) return -1;
      TVMFFIObjectIncRef(h);
      *out = h;
      return 0;
    }
    case TK_OFFICIAL: { /* its handle, or the DLTensor of a handle-less view */
      const DLTensor* dl;
      TVMFFIObjectHandle h;
      if (tvmffi_official_tensor_parts(obj, &h, &dl, argpos) != 0) return -1;
      if (h == NULL) return own_finish(own_from_dl(dl, obj, 0), align, contiguous, out);
      if (check_requirements((const DLTensor*)tvmffi_cell(h), align, contiguous) != 0) return -1;
      TVMFFIObjectIncRef(h);
      *out = h;
      return 0;
    }
    case TK_EXCHANGE:
      if (own_finish(exchange_tensor(obj, e, argpos), align, contiguous, out) != 0) return -1;
      if (temps == NULL) return 0;
      temps->dlpack_api = e->api; /* the framework gets its tensors back (framework.c) */
      return adopt_producer_stream(obj, e, *out, argpos, temps);
    default: {
      OwnTensor* t = protocol_tensor(obj, argpos);
      if (t != NULL && e->is_torch && torch_check_lazy_bits(obj, &t->dl, argpos) != 0) {
        own_deleter(t, kTVMFFIObjectDeleterFlagBitMaskBoth);
        return -1;
      }
      if (own_finish(t, align, contiguous, out) != 0) return -1;
      /* torch without an exchange API still gets torch tensors back. */
      if (e->is_torch && temps != NULL) temps->dlpack_api = tvmffi_torch_fallback_api();
      return 0;
    }
  }
}

int tensor_handle_from_py(PyObject* obj, Py_ssize_t argpos, int align, int contiguous,
                          TempList* temps, TVMFFIObjectHandle* out) {
  return handle_from_entry(obj, type_entry(Py_TYPE(obj)), argpos, align, contiguous, temps, out);
}

int tvmffi_tensor_is_fill_of(TVMFFIObjectHandle h, PyObject* arg) {
  return ((const TVMFFIObject*)h)->deleter == own_deleter &&
         ((const OwnTensor*)h)->owner == arg && ((const OwnTensor*)h)->exchange_fill;
}

static void set_tensor_any(TVMFFIAny* out, TVMFFIObjectHandle h) {
  out->type_index = kTVMFFITensor;
  out->zero_padding = 0;
  out->v_obj = (TVMFFIObject*)h;
}

static inline uint64_t owner_bit(PyObject* obj) {
  return (uint64_t)1 << (((uintptr_t)obj >> 4) & 63); /* objects are 16-byte aligned */
}

/* Hands the call `h`, the Tensor object made for `obj`, owned by the call's
 * temporaries (released on failure). */
static int push_tensor(TVMFFIObjectHandle h, PyObject* obj, TVMFFIAny* out, TempList* temps) {
  if (temps_push(temps, h) != 0) {
    TVMFFIObjectDecRef(h);
    return -1;
  }
  temps->tensor_owners |= owner_bit(obj);
  set_tensor_any(out, h);
  return 0;
}

/* The Tensor object this call already built for `obj`, or NULL. A tensor
 * passed more than once to one call (nop(y, y, y)) is described once and the
 * callee gets one Tensor object for it, as it would for one tvmffi.Tensor
 * passed three times: a torch export alone costs ~50 ns. The call's
 * temporaries own that object until the call returns. Only the last few
 * temporaries are looked at, so converting a long list of tensors stays
 * linear; a repeat further back is simply described again. */
#define REPEAT_WINDOW 8
static TVMFFIObjectHandle converted_in_call(const TempList* temps, PyObject* obj) {
  if (!(temps->tensor_owners & owner_bit(obj))) return NULL; /* not seen in this call */
  int stop = temps->size > REPEAT_WINDOW ? temps->size - REPEAT_WINDOW : 0;
  for (int i = temps->size - 1; i >= stop; --i) {
    const TVMFFIObject* o = (const TVMFFIObject*)temps->items[i];
    if (o->deleter == own_deleter && ((const OwnTensor*)o)->owner == obj) return temps->items[i];
  }
  return NULL;
}

int tvmffi_ndarray_to_any(PyObject* arr, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos) {
  TVMFFIObjectHandle seen = converted_in_call(temps, arr);
  if (seen != NULL) {
    set_tensor_any(out, seen);
    return 0;
  }
  OwnTensor* t = numpy_tensor(arr, argpos);
  return t == NULL ? -1 : push_tensor(t, arr, out, temps);
}

int tvmffi_tensor_to_any(PyObject* obj, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos) {
  /* A view is a DLTensor* only as a call argument. Without a position the
   * value is kept (a callback's result, a field, an owned Any), and a raw
   * pointer would dangle: it becomes a Tensor that keeps the view alive. */
  if (Py_TYPE(obj) == &TVMFFITensorViewType && argpos >= 0) {
    out->type_index = kTVMFFIDLTensorPtr;
    out->zero_padding = 0;
    out->v_ptr = view_dl(obj);
    return 0;
  }
  return tvmffi_tensor_to_kept_any(obj, out, temps, argpos);
}

int tvmffi_tensor_to_kept_any(PyObject* obj, TVMFFIAny* out, TempList* temps,
                              Py_ssize_t argpos) {
  TVMFFIObjectHandle h = converted_in_call(temps, obj);
  if (h != NULL) {
    set_tensor_any(out, h);
    return 0;
  }
  const TypeEntry* e = type_entry(Py_TYPE(obj));
  if (e->kind == TK_EXCHANGE && exchange_fills(e)) {
    /* A torch tensor, the hot route: handle_from_entry's case without the
     * layers (no alignment or contiguity asked of an argument). */
    OwnTensor* t = exchange_fill_tensor(obj, e, argpos);
    if (t == NULL) return -1;
    temps->dlpack_api = e->api; /* the framework gets its tensors back (framework.c) */
    if (t->dl.device.device_type != kDLCPU && adopt_producer_stream(obj, e, t, argpos, temps) != 0) {
      return -1;
    }
    return push_tensor(t, obj, out, temps);
  }
  if (handle_from_entry(obj, e, argpos, 0, 0, temps, &h) != 0) return -1;
  return push_tensor(h, obj, out, temps);
}

/* Whether a borrowed DLTensor can be read at all: a NULL pointer, a negative
 * rank, missing shape, a negative extent or NULL data under elements would
 * make the callee read garbage. */
int tvmffi_check_borrowed_dl(PyObject* owner, const DLTensor* dl, Py_ssize_t argpos) {
  const char* tp = Py_TYPE(owner)->tp_name;
  if (dl == NULL) {
    return tvmffi_arg_error(PyExc_ValueError, argpos, "'%.200s' view has no DLTensor", tp);
  }
  if (dl->ndim < 0 || (dl->ndim > 0 && dl->shape == NULL)) {
    return tvmffi_arg_error(PyExc_ValueError, argpos,
                            "'%.200s' view has a malformed shape (ndim %d)", tp, dl->ndim);
  }
  int empty = 0; /* (the product of the extents may overflow: not computed) */
  for (int i = 0; i < dl->ndim; ++i) {
    if (dl->shape[i] < 0) {
      return tvmffi_arg_error(PyExc_ValueError, argpos,
                              "'%.200s' view has a negative extent in dimension %d", tp, i);
    }
    empty |= dl->shape[i] == 0;
  }
  if (dl->data == NULL && !empty) {
    return tvmffi_arg_error(PyExc_ValueError, argpos,
                            "'%.200s' view has NULL data but a non-zero size", tp);
  }
  return 0;
}

int tvmffi_dltensor_view_to_any(PyObject* owner, const DLTensor* dl, TVMFFIAny* out,
                                TempList* temps, Py_ssize_t argpos) {
  if (argpos >= 0) {
    out->type_index = kTVMFFIDLTensorPtr;
    out->zero_padding = 0;
    out->v_ptr = (void*)dl;
    return 0;
  }
  OwnTensor* t = own_from_dl(dl, owner, 0);
  if (t == NULL) return -1;
  return push_tensor(t, owner, out, temps);
}
