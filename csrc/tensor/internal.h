/*
 * Declarations shared by the files of csrc/tensor/ (nothing outside them
 * includes this; core.h holds what the rest of the extension uses):
 *
 *   import.c    THE ENTRY: Python value -> Tensor handle, read top-down (the
 *               route of a type, one function per route, the read-only rule,
 *               the entry points for call arguments, from_dlpack, TensorView)
 *   own.c       the Tensor objects every route ends in (OwnTensor), built by
 *               one shared fill, checked where the producer is not trusted
 *   numpy.c     the NumPy route (array fields read directly)
 *   exchange.c  the DLPack C exchange API route (torch's fill, its lazy bits)
 *   capsule.c   the Python protocol route (__dlpack__ capsules)
 *   types.c     tvmffi.Tensor / tvmffi.TensorView, from_dlpack, and the
 *               lifetime rule of a DLTensor* that reaches Python
 *   export.c    tensors -> consumers: __dlpack__ and tvmffi.Tensor's own
 *               DLPack C exchange API
 */
#ifndef TVMFFI_TENSOR_INTERNAL_H_
#define TVMFFI_TENSOR_INTERNAL_H_

#include "core.h"
#include "cxx_call.h" /* the C++ call with exceptions caught (cxx_call.cc) */

#include <stddef.h>

/* DLPack capsule names (the array API's), before and after consumption. */
static const char* const kCapsule = "dltensor";
static const char* const kCapsuleUsed = "used_dltensor";
static const char* const kCapsuleVersioned = "dltensor_versioned";
static const char* const kCapsuleVersionedUsed = "used_dltensor_versioned";

/* ---- own.c: Tensor objects built here -------------------------------------- */
/* A runtime Tensor (type index kTVMFFITensor) made in ONE allocation: the C
 * ABI's object header, the DLTensor that follows it in every Tensor object
 * (the runtime's TensorObj is exactly header + DLTensor), then what keeps the
 * data alive and the shape and strides. Callees, the runtime and other
 * bindings see an ordinary Tensor: they read the DLTensor, retain and release
 * through the header's reference count and destroy through our deleter.
 * Compared with handing a managed tensor to TVMFFITensorFromDLPackVersioned,
 * this saves the managed tensor and the runtime's second object per argument,
 * and it keeps the DLPack flags (read-only), which the runtime's Tensor drops. */
typedef struct {
  TVMFFIObject header;
  DLTensor dl;
  PyObject* owner;              /* Python object keeping the data alive, or NULL */
  DLManagedTensorVersioned* mv; /* consumed producer tensor released with us, or NULL */
  DLManagedTensor* ml;          /* same, legacy DLPack */
  uint64_t flags;               /* DLPACK_FLAG_BITMASK_* that hold for the data */
  int py_alloc;                 /* memory from PyObject_Malloc (freed under the GIL): 1, or
                                 * 2 for a small block of the free list (own_tensor.c) */
  int exchange_fill;            /* a framework tensor's fill (exchange_fill_tensor): the
                                 * same tensor comes back as its owner (function.c) */
  int borrowed;                 /* a DLTensor* lent to a callback: 1 while it runs, 2 once
                                 * it returned (expired: see types.c) */
  int owner_lent;               /* `owner` is a call's argument, not referenced (own_new_lent) */
  int64_t storage[];            /* shape, then strides */
} OwnTensor;

_Static_assert(offsetof(OwnTensor, dl) == sizeof(TVMFFIObject),
               "the DLTensor must follow the object header, as in the runtime's TensorObj");

/* Give a consumed producer tensor back to its producer (either may be NULL). */
static inline void release_managed(DLManagedTensorVersioned* mv, DLManagedTensor* ml) {
  if (mv != NULL && mv->deleter != NULL) mv->deleter(mv);
  if (ml != NULL && ml->deleter != NULL) ml->deleter(ml);
}

/* The header's deleter; also frees a Tensor object that was never handed out
 * (flags kTVMFFIObjectDeleterFlagBitMaskBoth). */
void own_deleter(void* self, int flags);
OwnTensor* own_new(int ndim, PyObject* owner);
/* The same over a call's own argument `owner`, which the caller keeps alive
 * until the call returns: no reference is taken (on a free-threaded build
 * threads passing one array would all write its count). Only for a call's
 * temporary: tvmffi_own_release_unshared takes the reference if the callee
 * kept the tensor. */
OwnTensor* own_new_lent(int ndim, PyObject* owner);
OwnTensor* own_from_managed(DLManagedTensorVersioned* mv, DLManagedTensor* ml,
                            Py_ssize_t argpos);
uint64_t tensor_flags(TVMFFIObjectHandle h);
/* The Tensor (a new reference) of the live TensorView whose DLTensor `dl` is,
 * or NULL (types.c). */
TVMFFIObjectHandle live_view_tensor(const DLTensor* dl);
/* Copy strides (compact when NULL) into storage[ndim, 2*ndim). Inline, as
 * the description copies below: they run per tensor argument. */
static inline void copy_strides(const DLTensor* src, int64_t* storage) {
  int n = src->ndim;
  if (src->strides != NULL) {
    for (int i = 0; i < n; ++i) storage[n + i] = src->strides[i]; /* few: no memcpy call */
  } else {
    int64_t s = 1;
    for (int i = n - 1; i >= 0; --i) {
      storage[n + i] = s;
      s *= src->shape[i];
    }
  }
}
/* The rest of src's description in t, whose shape is already in its storage:
 * data, device, dtype, byte offset and strides (compact when NULL). */
static inline void own_describe_rest(OwnTensor* t, const DLTensor* src) {
  t->dl.data = src->data;
  t->dl.device = src->device;
  t->dl.dtype = src->dtype;
  t->dl.byte_offset = src->byte_offset;
  copy_strides(src, t->storage);
}
/* A Tensor object describing `src` (shape/strides copied, compact strides
 * filled in) that keeps `owner` alive. Inline too: torch's hot route ends here. */
static inline OwnTensor* own_from_dl(const DLTensor* src, PyObject* owner, uint64_t flags) {
  OwnTensor* t = own_new(src->ndim, owner);
  if (t == NULL) return NULL;
  for (int i = 0; i < src->ndim; ++i) t->storage[i] = src->shape[i]; /* few: no memcpy call */
  t->flags = flags;
  own_describe_rest(t, src);
  return t;
}
/* Copy shape and strides (compact when NULL) into storage[0, 2*ndim). */
void copy_shape_strides(const DLTensor* src, int64_t* storage);
/* The most dimensions a producer's tensor may have (NumPy's limit). */
#define DL_MAX_NDIM 64
/* 0 when a producer's DLTensor is sound to read (ndim, shape, device, dtype);
 * else -1 with a ValueError naming the argument and what was wrong. */
int dl_check(const DLTensor* dl, const char* producer, Py_ssize_t argpos);
/* own_from_dl for a producer's DLTensor, checked as dl_check does in the
 * pass that copies its shape (the error names `owner`'s type). */
OwnTensor* own_from_checked(const DLTensor* dl, PyObject* owner, Py_ssize_t argpos);
/* The same for a producer trusted to describe its own tensors (torch's own
 * fill): only what the copy relies on, the rank and the shape pointer. */
OwnTensor* own_from_trusted(const DLTensor* dl, PyObject* owner, Py_ssize_t argpos);

/* ---- buffer.c: a CPU Tensor over a Python buffer (pickle's rebuild) ------- */
int tvmffi_tensor_buffer_init(PyObject* module);

/* ---- numpy.c: NumPy -------------------------------------------------------- */
/* Everything needed from an ndarray. */
typedef struct {
  void* data;
  int ndim;
  const Py_ssize_t* shape;
  const Py_ssize_t* strides; /* bytes */
  Py_ssize_t itemsize;
  int readonly;
  DLDataType dtype;
  int has_view;
  Py_buffer view;
} NumpyDesc;

int ndarray_init(void);
int numpy_describe(PyObject* arr, Py_ssize_t argpos, NumpyDesc* d);
void numpy_release(NumpyDesc* d);
int numpy_fill(PyObject* arr, const NumpyDesc* d, DLTensor* dl, int64_t* storage,
               Py_ssize_t argpos);
OwnTensor* numpy_tensor(PyObject* arr, Py_ssize_t argpos, int lend);

/* ---- import.c: Python value -> Tensor handle ------------------------------- */
/* How values of a Python type become tensors, decided once per type. */
typedef enum {
  TK_NDARRAY = 1, /* numpy.ndarray and subclasses */
  TK_VIEW,        /* tvmffi.TensorView */
  TK_OBJECT,      /* tvmffi.Object (a Tensor when its handle is one) */
  TK_OFFICIAL,    /* the official binding's Tensor: its handle, or a view's DLTensor */
  TK_EXCHANGE,    /* DLPack C exchange API on the type */
  TK_PROTOCOL,    /* Python __dlpack__ / __dlpack_device__ */
} TensorKind;

typedef struct {
  PyTypeObject* type; /* owned, so a reused address never aliases */
  unsigned int tag;   /* the type's version tag when decided (see core.h) */
  TensorKind kind;
  const DLPackExchangeAPI* api;
  int is_torch; /* a torch.Tensor (sub)class */
  /* The API is torch's own (exchange_api_is_torchs): its DLTensor fill of a
   * torch tensor is not checked again (~30 instructions a tensor). */
  int trusted;
} TypeEntry;

/* The route of each Python type, decided once per type and version tag and
 * kept in a small direct-mapped cache (the hit is inline: it runs per tensor). */
#define TYPE_CACHE_SIZE 32
extern TypeEntry g_type_cache[TYPE_CACHE_SIZE];
/* The entry of `tp`: with a GIL the cache slot itself; without one a copy in
 * *scratch (the caller's), read whole (type_entry_read). */
const TypeEntry* type_entry_decide(PyTypeObject* tp, TypeEntry* scratch);
#ifdef Py_GIL_DISABLED
/* Without a GIL a slot is rewritten under a lock while other threads read
 * it: each slot has a seqlock (core.h), so threads converting tensors of one
 * type share the line. */
extern unsigned int g_type_cache_seq[TYPE_CACHE_SIZE];
static inline int type_entry_read(size_t slot, TypeEntry* out) {
  const TypeEntry* e = &g_type_cache[slot];
  unsigned int seq = tvmffi_seq_read_begin(&g_type_cache_seq[slot]);
  out->type = __atomic_load_n(&e->type, __ATOMIC_ACQUIRE);
  out->tag = __atomic_load_n(&e->tag, __ATOMIC_ACQUIRE);
  out->kind = __atomic_load_n(&e->kind, __ATOMIC_ACQUIRE);
  out->api = __atomic_load_n(&e->api, __ATOMIC_ACQUIRE);
  out->is_torch = __atomic_load_n(&e->is_torch, __ATOMIC_ACQUIRE);
  out->trusted = __atomic_load_n(&e->trusted, __ATOMIC_ACQUIRE);
  return tvmffi_seq_read_whole(&g_type_cache_seq[slot], seq);
}
static inline const TypeEntry* type_entry(PyTypeObject* tp, TypeEntry* scratch) {
  size_t slot = ((uintptr_t)tp >> 4) % TYPE_CACHE_SIZE;
  unsigned int tag = tvmffi_tag_of(tp);
  if (type_entry_read(slot, scratch) && scratch->type == tp && scratch->tag == tag && tag != 0) {
    return scratch;
  }
  return type_entry_decide(tp, scratch);
}
#else
static inline const TypeEntry* type_entry(PyTypeObject* tp, TypeEntry* scratch) {
  const TypeEntry* e = &g_type_cache[((uintptr_t)tp >> 4) % TYPE_CACHE_SIZE];
  if (e->type == tp && e->tag == tp->tp_version_tag && e->tag != 0) return e;
  return type_entry_decide(tp, scratch);
}
#endif
/* torch.Tensor once torch is imported and a tensor route asked, else NULL. */
extern PyTypeObject* g_torch_tensor_type;
void refresh_known_types(void);
int is_ndarray_type(PyTypeObject* tp);
/* Replace the pending exception by one naming the argument (argpos >= 0,
 * see tvmffi_arg_error in core.h) being converted; returns -1. */
int wrap_error(Py_ssize_t argpos, PyObject* obj, const char* what);
/* What from_dlpack / TensorView ask of an import. */
typedef struct {
  int align;           /* require_alignment (bytes), 0: none */
  int contiguous;      /* require_contiguous */
  int allow_read_only; /* accept read-only memory (see import.c's read-only rule) */
} ImportOptions;
/* `obj` may be a tvmffi.Object only if it holds a Tensor: from_dlpack rejects
 * other Objects first, and calls convert Objects as objects (any.c). */
int tensor_handle_from_py(PyObject* obj, const ImportOptions* opt, TVMFFIObjectHandle* out);
/* The Tensor handle a TensorView of obj (not a view) holds. */
int view_source_handle(PyObject* obj, int allow_read_only, TVMFFIObjectHandle* out);
/* An official Tensor's handle (borrowed), or NULL and a handle-less view's
 * DLTensor (checked). */
int official_tensor_parts(PyObject* obj, TVMFFIObjectHandle* handle, const DLTensor** dl,
                          Py_ssize_t argpos);

/* Whether a tvmffi.Object holds a Tensor handle. */
static inline int object_holds_tensor(PyObject* obj) {
  TVMFFIObjectHandle h = ((TVMFFIPyObject*)obj)->handle;
  return h != NULL && tvmffi_type_index_of(h) == kTVMFFITensor;
}

static inline int is_tensor_object(PyObject* obj) {
  return tvmffi_is_object(obj) && object_holds_tensor(obj);
}

/* ---- exchange.c: the DLPack C exchange API --------------------------------- */
const DLPackExchangeAPI* lookup_exchange_api(PyTypeObject* tp);
/* Whether an exchange API is torch's own: the struct and its DLTensor fill
 * both lie in torch's Python extension library (libtorch_python). A subclass
 * or a test that hands over an API of its own gets its fills checked. */
int exchange_api_is_torchs(const DLPackExchangeAPI* api);
/* For a TK_EXCHANGE entry: whether the producer's non-owning DLTensor fill is
 * used (torch; the Python tensor then keeps the data alive) rather than its
 * managed export. */
static inline int exchange_fills(const TypeEntry* e) {
  return e->is_torch && e->api->dltensor_from_py_object_no_sync != NULL;
}
/* The fill as a Tensor object holding a reference to obj (checked unless the
 * API is trusted); errors name the argument. */
OwnTensor* exchange_fill_tensor(PyObject* obj, const TypeEntry* e, Py_ssize_t argpos);
/* A producer's managed export, now owned by the caller (checked). */
int exchange_managed(PyObject* obj, const TypeEntry* e, Py_ssize_t argpos,
                     DLManagedTensorVersioned** mv);
/* Whether a torch tensor with this layout may carry a lazy bit, so torch must
 * be asked (~100 ns a question, through torch's dispatcher). The conjugate
 * bit exists on complex tensors only. A real tensor with the negative bit is
 * a view of complex storage (x.conj().imag and views of it): its strides
 * count whole complex elements, so they are even, and a tensor whose
 * innermost dimension of size > 1 has stride 1 cannot be one. That is the
 * common, contiguous case, which thus pays nothing. */
static inline int may_carry_lazy_bits(const DLTensor* dl) {
  if (dl->dtype.code == kDLComplex) return 1;
  for (int i = dl->ndim - 1; i >= 0; --i) {
    if (dl->shape[i] > 1) return dl->strides != NULL && dl->strides[i] != 1;
  }
  return 1; /* at most one element: nothing to tell from the strides */
}

/* Asks torch: ValueError if the conjugate/negative bit is set. */
int torch_ask_lazy_bits(PyObject* obj, const DLTensor* dl, Py_ssize_t argpos);

/* ValueError for a torch tensor whose lazy conjugate/negative bit is set; the
 * layout test is inline, so the common contiguous tensor makes no call. */
static inline int torch_check_lazy_bits(PyObject* obj, const DLTensor* dl, Py_ssize_t argpos) {
  return may_carry_lazy_bits(dl) ? torch_ask_lazy_bits(obj, dl, argpos) : 0;
}

/* ---- capsule.c: the Python DLPack protocol --------------------------------- */
/* "__dlpack__", interned by capsule_init (before any other tensor file's use). */
extern PyObject* g_str_dlpack;
int capsule_init(void);
/* A Tensor object owning the tensor of obj.__dlpack__()'s capsule (or of the
 * capsule obj itself), which is marked consumed. */
OwnTensor* protocol_tensor(PyObject* obj, Py_ssize_t argpos);

/* ---- export.c: tensors -> consumers ---------------------------------------- */
PyObject* dlpack_export(TVMFFIObjectHandle h, PyObject* args, PyObject* kwargs);
/* Put tvmffi.Tensor's own DLPack C exchange API on the type. */
int dlpack_export_init(void);

/* ---- types.c: tvmffi.TensorView -------------------------------------------- */
/* A view is a DLTensor (passed to functions as DLTensor*) over the Tensor
 * that one of import.c's routes made for its source: the Tensor owns shape,
 * strides and (through its source) the data, so the view is valid as long as
 * it lives. Live views are linked, so that a DLTensor* coming back to Python
 * is recognised as a view's own (see types.c). */
typedef struct TVMFFIPyTensorView {
  PyObject_HEAD
  DLTensor dl;                      /* a copy of the tensor's, pointing into it */
  TVMFFIObjectHandle tensor;        /* owned */
  uint64_t flags;                   /* DLPACK_FLAG_BITMASK_* (read-only) of the source */
  struct TVMFFIPyTensorView* prev;  /* live views (GIL held) */
  struct TVMFFIPyTensorView* next;
} TVMFFIPyTensorView;

static inline DLTensor* view_dl(PyObject* view) { return &((TVMFFIPyTensorView*)view)->dl; }
static inline uint64_t view_flags(PyObject* view) { return ((TVMFFIPyTensorView*)view)->flags; }

#endif  /* TVMFFI_TENSOR_INTERNAL_H_ */
