/*
 * The tensor import route: a Python value -> a Tensor handle. Read top-down:
 *
 *   1. the route of a Python type, decided once per type (and version tag)
 *      and cached (TypeEntry);
 *   2. one function per route, each ending in the Tensor object built by the
 *      shared fill of own.c (own_from_dl and its checked forms):
 *        route_tvmffi    tvmffi.Tensor (its handle) and tvmffi.TensorView
 *        route_official  the official binding's Tensor (its handle, or the
 *                        DLTensor of a handle-less view)
 *        route_exchange  a DLPack C exchange API (torch: its non-owning fill)
 *        route_numpy     numpy.ndarray, its fields read directly (numpy.c)
 *        route_capsule   the Python protocol: a __dlpack__ capsule (capsule.c)
 *   3. the read-only rule, then the entry points: a call argument (the hub,
 *      any.c, hands a tensor-like value here and gets a TVMFFIAny back),
 *      from_dlpack and TensorView.
 *
 * Nothing here calls back into the conversion hub: errors come from
 * error.c, temporaries from object.c, the official classes from interop.c.
 */
#include "internal.h"

PyTypeObject* tvmffi_numpy_ndarray_type;
PyTypeObject* g_torch_tensor_type;

/* ==== 0. errors naming the argument ========================================== */
/* Replace the pending exception by one that names the argument: TypeError
 * stays TypeError, other Exceptions become ValueError; the original is kept as
 * __cause__. MemoryError and non-Exception exceptions pass through. Every
 * route's producer errors go through here. */
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

/* ==== 1. the route of a Python type ========================================== */
static PyTypeObject* module_type(const char* module, const char* name) {
  PyObject* key = PyUnicode_FromString(module);
  PyObject* mod = key == NULL ? NULL : PyImport_GetModule(key); /* strong: no GIL keeps it */
  Py_XDECREF(key);
  if (mod == NULL) {
    PyErr_Clear();
    return NULL;
  }
  PyObject* tp = PyObject_GetAttrString(mod, name);
  Py_DECREF(mod);
  if (tp == NULL || !PyType_Check(tp)) {
    PyErr_Clear();
    Py_XDECREF(tp);
    return NULL;
  }
  return (PyTypeObject*)tp; /* kept for the life of the process */
}

/* numpy.ndarray and torch.Tensor, once their modules are imported. */
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

/* torch < 2.10 has no DLPack C exchange API of its own. As the official
 * binding does, tvmffi gets one from the torch-c-dlpack-ext package or else
 * from an addon built once into the tvm-ffi cache: importing
 * tvmffi._optional_torch_c_dlpack takes that step (and honours
 * TVM_FFI_DISABLE_TORCH_C_DLPACK). Tried once, when a torch tensor without
 * the API is first met; a failure leaves torch on the Python protocol. An API
 * that appears later (the package or tvm_ffi imported afterwards) is still
 * found: setting the attribute changes the type's version tag, so its entry
 * is decided again. */
static void load_torch_exchange_api(void) {
  static int tried;
  if (tried) return;
  tried = 1;
  PyObject* mod = PyImport_ImportModule("tvmffi._optional_torch_c_dlpack");
  if (mod == NULL) PyErr_Clear(); /* it warns of a failed build itself */
  Py_XDECREF(mod);
}

TypeEntry g_type_cache[TYPE_CACHE_SIZE];
#ifdef Py_GIL_DISABLED
unsigned int g_type_cache_seq[TYPE_CACHE_SIZE];
static PyMutex g_type_cache_lock; /* one writer at a time (no Python code held) */

/* Rewrites slot `e` (a seqlock write, core.h); the old entry's
 * reference to its type is returned for the caller to drop. */
static PyTypeObject* type_entry_store(TypeEntry* e, const TypeEntry* fresh) {
  size_t slot = (size_t)(e - g_type_cache);
  PyMutex_Lock(&g_type_cache_lock);
  PyTypeObject* old = e->type;
  tvmffi_seq_write_begin(&g_type_cache_seq[slot]);
  __atomic_store_n(&e->type, fresh->type, __ATOMIC_RELEASE);
  __atomic_store_n(&e->tag, fresh->tag, __ATOMIC_RELEASE);
  __atomic_store_n(&e->kind, fresh->kind, __ATOMIC_RELEASE);
  __atomic_store_n(&e->api, fresh->api, __ATOMIC_RELEASE);
  __atomic_store_n(&e->is_torch, fresh->is_torch, __ATOMIC_RELEASE);
  __atomic_store_n(&e->trusted, fresh->trusted, __ATOMIC_RELEASE);
  tvmffi_seq_write_end(&g_type_cache_seq[slot]);
  PyMutex_Unlock(&g_type_cache_lock);
  return old;
}
#else
static PyTypeObject* type_entry_store(TypeEntry* e, const TypeEntry* fresh) {
  PyTypeObject* old = e->type;
  *e = *fresh;
  return old;
}
#endif

const TypeEntry* type_entry_decide(PyTypeObject* tp, TypeEntry* scratch) {
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
  Py_XDECREF(type_entry_store(e, &fresh));
  if (TVMFFI_FREE_THREADED) { /* the slot may already hold another thread's entry */
    *scratch = fresh;
    return scratch;
  }
  return e;
}

/* ==== 2. one function per route ============================================== */
/* Each returns a new reference to a Tensor handle, or NULL with an exception
 * naming the argument (argpos >= 0) set. */

/* tvmffi.Tensor: its own handle. tvmffi.TensorView: a Tensor object that
 * keeps the view (and so what the view keeps) alive. */
static TVMFFIObjectHandle route_tvmffi(PyObject* obj, const TypeEntry* e) {
  if (e->kind == TK_VIEW) return own_from_dl(view_dl(obj), obj, view_flags(obj));
  TVMFFIObjectHandle h = ((TVMFFIPyObject*)obj)->handle; /* see tensor_handle_from_py */
  TVMFFIObjectIncRef(h);
  return h;
}

/* Whether a borrowed DLTensor can be read at all: a NULL pointer, a negative
 * rank, missing shape, a negative extent or NULL data under elements would
 * make the callee read garbage. */
static int check_borrowed_dl(PyObject* owner, const DLTensor* dl, Py_ssize_t argpos) {
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

/* An official Tensor's handle (borrowed), or NULL and, for a handle-less view
 * of a DLTensor that the official binding handed to a Python callback
 * (jax-tvm-ffi does), that DLTensor, checked. Such a view's __dlpack__ must
 * never be called (it crashes). */
int official_tensor_parts(PyObject* obj, TVMFFIObjectHandle* handle, const DLTensor** dl,
                          Py_ssize_t argpos) {
  if (tvmffi_official_handle(obj, handle) != 0) return -1;
  *dl = NULL;
  if (*handle != NULL) return 0;
  Py_ssize_t offset = tvmffi_official_dltensor_offset();
  if (offset == 0) {
    return tvmffi_arg_error(PyExc_TypeError, argpos,
                            "cannot convert a '%.200s' view without a handle: unknown layout of "
                            "the official binding's Tensor",
                            Py_TYPE(obj)->tp_name);
  }
  *dl = *(const DLTensor**)((char*)obj + offset);
  return check_borrowed_dl(obj, *dl, argpos);
}

static TVMFFIObjectHandle route_official(PyObject* obj, Py_ssize_t argpos) {
  TVMFFIObjectHandle h;
  const DLTensor* dl;
  if (official_tensor_parts(obj, &h, &dl, argpos) != 0) return NULL;
  if (h == NULL) return own_from_dl(dl, obj, 0);
  TVMFFIObjectIncRef(h);
  return h;
}

/* For torch, whose Python tensor owns its TensorImpl and storage, the
 * non-owning DLTensor fill plus a reference to the Python tensor keeps the
 * data alive exactly as long as the managed export would (which holds the
 * same TensorImpl), with ~30% fewer instructions and no allocation inside
 * torch. Other producers only promise the fill until control returns, so
 * they go through their managed export. */
static TVMFFIObjectHandle route_exchange(PyObject* obj, const TypeEntry* e, Py_ssize_t argpos) {
  if (exchange_fills(e)) return exchange_fill_tensor(obj, e, argpos);
  DLManagedTensorVersioned* mv;
  if (exchange_managed(obj, e, argpos, &mv) != 0) return NULL;
  return own_from_managed(mv, NULL, argpos);
}

static TVMFFIObjectHandle route_numpy(PyObject* obj, Py_ssize_t argpos) {
  return numpy_tensor(obj, argpos, 0);
}

static TVMFFIObjectHandle route_capsule(PyObject* obj, const TypeEntry* e, Py_ssize_t argpos) {
  OwnTensor* t = protocol_tensor(obj, argpos);
  if (t != NULL && e != NULL && e->is_torch && torch_check_lazy_bits(obj, &t->dl, argpos) != 0) {
    own_deleter(t, kTVMFFIObjectDeleterFlagBitMaskBoth);
    return NULL;
  }
  return t;
}

/* The route of obj's type (`e` NULL: a bare capsule). */
static TVMFFIObjectHandle route(PyObject* obj, const TypeEntry* e, Py_ssize_t argpos) {
  if (e == NULL) return route_capsule(obj, NULL, argpos);
  switch (e->kind) {
    case TK_VIEW:
    case TK_OBJECT:
      return route_tvmffi(obj, e);
    case TK_OFFICIAL:
      return route_official(obj, argpos);
    case TK_EXCHANGE:
      return route_exchange(obj, e, argpos);
    case TK_NDARRAY:
      return route_numpy(obj, argpos);
    default:
      return route_capsule(obj, e, argpos);
  }
}

/* ==== 3. the read-only rule ================================================== */
/* The C ABI has no read-only bit: a callee may write to any tensor it gets.
 * Memory its producer marks read-only (a non-writable NumPy array, a DLPack
 * 1.x tensor flagged DLPACK_FLAG_BITMASK_READ_ONLY) is therefore refused when
 * it is first imported, as the official binding refuses it, unless that
 * import opts in (from_dlpack(x, allow_read_only=True), TensorView(...,
 * allow_read_only=True)). A Tensor or TensorView so made carries the flag and
 * passes everywhere: its maker said the callee only reads. On error the
 * handle is released. */
static int refuse_read_only(PyObject* obj, TVMFFIObjectHandle h, Py_ssize_t argpos) {
  TVMFFIObjectDecRef(h);
  PyErr_Clear();
  return tvmffi_arg_error(PyExc_BufferError, argpos,
                          "'%.200s' holds read-only memory, and a function may write to any "
                          "tensor it gets; pass a writable copy, or import it with "
                          "tvmffi.from_dlpack(x, allow_read_only=True) if the callee only reads",
                          Py_TYPE(obj)->tp_name);
}

/* Whether the route made a new Tensor object over read-only memory (not an
 * existing Tensor or view, whose maker already decided; not an official
 * Tensor, which carries no flags). The routes that make one return an
 * OwnTensor, whose flags are read in place. */
static inline int read_only_import(const TypeEntry* e, TVMFFIObjectHandle h) {
  if (e != NULL && (e->kind == TK_VIEW || e->kind == TK_OBJECT || e->kind == TK_OFFICIAL)) {
    return 0;
  }
  return (((const OwnTensor*)h)->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
}

/* ==== 4. entry points ======================================================== */
/* ---- from_dlpack's requirements ---- */
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

/* from_dlpack(obj) and Tensor(obj): an owned Tensor handle for any
 * tensor-like value (a tvmffi.Object only if it holds a Tensor: from_dlpack
 * rejects other Objects first). */
int tensor_handle_from_py(PyObject* obj, const ImportOptions* opt, TVMFFIObjectHandle* out) {
  TypeEntry scratch;
  const TypeEntry* e = PyCapsule_CheckExact(obj) ? NULL : type_entry(Py_TYPE(obj), &scratch);
  TVMFFIObjectHandle h = route(obj, e, -1);
  if (h == NULL) return -1;
  if (!opt->allow_read_only && read_only_import(e, h)) return refuse_read_only(obj, h, -1);
  if (check_requirements((const DLTensor*)tvmffi_cell(h), opt->align, opt->contiguous) != 0) {
    TVMFFIObjectDecRef(h);
    return -1;
  }
  *out = h;
  return 0;
}

/* ---- call arguments ---- */
/* The entries the hub tests for inline (an exact ndarray, an official
 * Tensor) are kept out of line (Py_NO_INLINE): inlined into
 * tvmffi_py_to_any under LTO, they make it too large to be inlined into the
 * call loop itself, which costs every argument of every call ~18
 * instructions. */
int tvmffi_tensor_is_fill_of(TVMFFIObjectHandle h, PyObject* arg) {
  return ((const TVMFFIObject*)h)->deleter == own_deleter &&
         ((const OwnTensor*)h)->owner == arg && ((const OwnTensor*)h)->exchange_fill;
}

static void set_tensor_any(TVMFFIAny* out, TVMFFIObjectHandle h) {
  out->type_index = kTVMFFITensor;
  out->zero_padding = 0;
  out->v_obj = (TVMFFIObject*)h;
}

static void set_dltensor_any(TVMFFIAny* out, const DLTensor* dl) {
  out->type_index = kTVMFFIDLTensorPtr;
  out->zero_padding = 0;
  out->v_ptr = (void*)dl;
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

/* For a tensor on a device with streams, the producer's current stream
 * becomes the environment stream of the call owning `temps` (unless a
 * use_stream() is active). */
static int adopt_producer_stream(PyObject* obj, const TypeEntry* e, TVMFFIObjectHandle h,
                                 Py_ssize_t argpos, TempList* temps) {
  DLDevice dev = ((const DLTensor*)tvmffi_cell(h))->device;
  if (dev.device_type == kDLCPU || e->api->current_work_stream == NULL) return 0;
  void* stream = NULL;
  if (e->api->current_work_stream(dev.device_type, dev.device_id, &stream) != 0) {
    return wrap_error(argpos, obj, "current_work_stream()");
  }
  return tvmffi_stream_adopt(dev.device_type, dev.device_id, stream, temps);
}

/* What a framework's tensors ask of the call beyond their Tensor object:
 * the framework gets its tensors back (framework.c), and a device tensor's
 * stream becomes the call's. */
static int note_framework(PyObject* obj, const TypeEntry* e, TVMFFIObjectHandle h,
                          Py_ssize_t argpos, TempList* temps) {
  if (e->kind == TK_EXCHANGE) {
    temps->dlpack_api = e->api;
    return adopt_producer_stream(obj, e, h, argpos, temps);
  }
  /* torch without an exchange API still gets torch tensors back. */
  if (e->kind == TK_PROTOCOL && e->is_torch) temps->dlpack_api = tvmffi_torch_fallback_api();
  return 0;
}

/* A value kept beyond the call (argpos < 0: a callback's result, a field, an
 * element of a container argument) or any tensor-like argument but a view:
 * a Tensor object owned by the call's temporaries. */
int tvmffi_tensor_to_kept_any(PyObject* obj, TVMFFIAny* out, TempList* temps,
                              Py_ssize_t argpos) {
  TVMFFIObjectHandle h = converted_in_call(temps, obj);
  if (h != NULL) {
    set_tensor_any(out, h);
    return 0;
  }
  TypeEntry scratch;
  const TypeEntry* e = type_entry(Py_TYPE(obj), &scratch);
  if (e->kind == TK_EXCHANGE && exchange_fills(e)) {
    /* A torch tensor, the hot route: no flags, no switch. */
    OwnTensor* t = exchange_fill_tensor(obj, e, argpos);
    if (t == NULL) return -1;
    temps->dlpack_api = e->api; /* the framework gets its tensors back (framework.c) */
    if (push_tensor(t, obj, out, temps) != 0) return -1;
    return t->dl.device.device_type == kDLCPU ? 0
                                              : adopt_producer_stream(obj, e, t, argpos, temps);
  }
  if ((h = route(obj, e, argpos)) == NULL) return -1;
  if (read_only_import(e, h)) return refuse_read_only(obj, h, argpos);
  if (push_tensor(h, obj, out, temps) != 0) return -1;
  return note_framework(obj, e, h, argpos, temps);
}

/* A tensor argument. A view is a DLTensor* only as a call argument: without
 * a position the value is kept, and a raw pointer would dangle, so it
 * becomes a Tensor that keeps the view alive. */
int tvmffi_tensor_to_any(PyObject* obj, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos) {
  if (Py_TYPE(obj) == &TVMFFITensorViewType && argpos >= 0 && !temps->keep_views) {
    set_dltensor_any(out, view_dl(obj));
    return 0;
  }
  return tvmffi_tensor_to_kept_any(obj, out, temps, argpos);
}

/* An ndarray not seen before in this call: out of line (see above). */
static Py_NO_INLINE int ndarray_new_arg(PyObject* arr, TVMFFIAny* out, TempList* temps,
                                        Py_ssize_t argpos, int lend) {
  OwnTensor* t = numpy_tensor(arr, argpos, lend);
  if (t == NULL) return -1;
  if (t->flags & DLPACK_FLAG_BITMASK_READ_ONLY) return refuse_read_only(arr, t, argpos);
  return push_tensor(t, arr, out, temps);
}

/* An exact numpy.ndarray (the hub's inline test); a repeat (nop(x, x, x))
 * is answered inline. */
int tvmffi_ndarray_to_any(PyObject* arr, TVMFFIAny* out, TempList* temps, Py_ssize_t argpos,
                          int lent) {
  TVMFFIObjectHandle seen = converted_in_call(temps, arr);
  if (seen == NULL) return ndarray_new_arg(arr, out, temps, argpos, lent);
  set_tensor_any(out, seen);
  return 0;
}

/* The official binding's Tensor: its handle, borrowed for the call as the
 * official binding passes it; a handle-less view's DLTensor* as a plain
 * argument, a Tensor keeping the view alive when kept (no position, or an
 * element of a container: temps->keep_views). */
Py_NO_INLINE int tvmffi_official_tensor_to_any(PyObject* obj, TVMFFIAny* out, TempList* temps,
                                  Py_ssize_t argpos) {
  TVMFFIObjectHandle h;
  const DLTensor* dl;
  if (official_tensor_parts(obj, &h, &dl, argpos) != 0) return -1;
  if (h != NULL) {
    set_tensor_any(out, h);
    return 0;
  }
  if (argpos >= 0 && !temps->keep_views) {
    set_dltensor_any(out, dl);
    return 0;
  }
  /* Kept: a Tensor with its own shape and strides. The data is the lender's:
   * a tvmffi TensorView lent it (apply(cb, TensorView(a))), whose Tensor
   * keeps the array alive; else the official view, held. */
  TVMFFIObjectHandle viewed = live_view_tensor(dl);
  if (viewed != NULL) return push_tensor(viewed, obj, out, temps);
  OwnTensor* t = own_from_dl(dl, obj, 0);
  return t == NULL ? -1 : push_tensor(t, obj, out, temps);
}

/* ---- TensorView(obj) ---- */
/* The Tensor handle a TensorView of obj holds (obj not a view: see types.c). */
int view_source_handle(PyObject* obj, int allow_read_only, TVMFFIObjectHandle* out) {
  ImportOptions opt = {0, 0, allow_read_only};
  return tensor_handle_from_py(obj, &opt, out);
}
