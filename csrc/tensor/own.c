/*
 * Tensor objects built here (see OwnTensor in internal.h): every route of
 * import.c (NumPy, DLPack exchange API, the Python protocol, TensorView, an
 * official view) ends in one of these, filled by own_from_dl (internal.h)
 * from the producer's DLTensor, checked here first where the producer is not
 * trusted; so the callee gets a Tensor object that owns a reference to its
 * source, and the DLPack read-only flag travels with it to every later export.
 */
#include "internal.h"

#include <string.h>

/* Copy shape and strides (compact when NULL) into storage[0, 2*ndim). */
void copy_shape_strides(const DLTensor* src, int64_t* storage) {
  memcpy(storage, src->shape, sizeof(int64_t) * (size_t)src->ndim);
  copy_strides(src, storage);
}

/* Whether this thread holds the GIL, i.e. has a current thread state (one
 * that released it, or never ran Python, has none). Cheaper than
 * PyGILState_Check, which goes through thread-local storage. */
static inline int gil_held(void) {
#if PY_VERSION_HEX >= 0x030D0000
  return PyThreadState_GetUnchecked() != NULL;
#else
  return _PyThreadState_UncheckedGet() != NULL;
#endif
}

/* Tensor objects with a Python owner are made and dropped at call rate (one
 * per tensor argument). Those of up to SMALL_NDIM dimensions come in one block
 * size and are recycled through a small free list, touched only with the GIL
 * held (made while packing arguments; released under the GIL, see below), as
 * the result-object free list in object.c. */
#define SMALL_NDIM 4
#define SMALL_BLOCK (sizeof(OwnTensor) + sizeof(int64_t) * 2 * SMALL_NDIM)
#define FREE_TENSORS_MAX 32
static void* g_free_tensors[FREE_TENSORS_MAX];
static int g_free_tensor_count;

enum { ALLOC_RAW = 0, ALLOC_PY = 1, ALLOC_PY_SMALL = 2 };

static void* py_block(int ndim, int* alloc) {
  if (ndim > SMALL_NDIM) {
    *alloc = ALLOC_PY;
    return PyObject_Malloc(sizeof(OwnTensor) + sizeof(int64_t) * 2 * (size_t)ndim);
  }
  *alloc = ALLOC_PY_SMALL;
  if (TVMFFI_FREE_LISTS && g_free_tensor_count > 0) {
    return g_free_tensors[--g_free_tensor_count];
  }
  return PyObject_Malloc(SMALL_BLOCK);
}

/* With the GIL held. */
static void py_block_free(OwnTensor* t) {
  if (TVMFFI_FREE_LISTS && t->py_alloc == ALLOC_PY_SMALL &&
      g_free_tensor_count < FREE_TENSORS_MAX) {
    g_free_tensors[g_free_tensor_count++] = t;
    return;
  }
  PyObject_Free(t);
}

/* Drops the owner of a Tensor object whose last strong reference is gone. */
static void own_drop_owner(OwnTensor* t) {
  if (t->owner_lent) {
    t->owner = NULL; /* never referenced: a call's argument, still the caller's */
    t->owner_lent = 0;
  } else {
    Py_CLEAR(t->owner);
  }
}

/* Runs wherever the last reference goes away, maybe in a thread without the
 * GIL. A Tensor with a Python owner lives in Python's small-object allocator
 * (faster than malloc; releasing it needs the GIL for the owner anyway); one
 * without is plain malloc'ed, so the runtime can drop it anywhere for free.
 * After interpreter exit, Python-side state is leaked on purpose. */
void own_deleter(void* self, int flags) {
  OwnTensor* t = (OwnTensor*)self;
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) release_managed(t->mv, t->ml);
  int weak = (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) != 0;
  if (!t->py_alloc) {
    if (weak) PyMem_RawFree(t);
    return;
  }
  if (TVMFFI_PY_UNUSABLE()) return;
  int held = gil_held(); /* the common case: released right after a call */
  PyGILState_STATE gil = held ? PyGILState_UNLOCKED : PyGILState_Ensure();
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) own_drop_owner(t);
  if (weak) py_block_free(t);
  if (!held) PyGILState_Release(gil);
}

/* A call's temporary Tensor object that nobody else holds (one strong and
 * the implied weak reference: the callee kept none) is freed here directly,
 * as the deleter would be for both references, without the runtime's two
 * atomic decrements and deleter calls. The count cannot grow under us: any
 * other holder would need a reference to start from. With the GIL held.
 * 1 when freed, 0 when the caller must drop its reference as usual. */
int tvmffi_own_release_unshared(TVMFFIObjectHandle h) {
  OwnTensor* t = (OwnTensor*)h;
  if (t->header.deleter != own_deleter || t->py_alloc == ALLOC_RAW) return 0;
  if (__atomic_load_n(&t->header.combined_ref_count, __ATOMIC_ACQUIRE) ==
      (((uint64_t)1 << 32) | 1)) {
    release_managed(t->mv, t->ml);
    if (!t->owner_lent) Py_XDECREF(t->owner);
    py_block_free(t);
    return 1;
  }
  /* Kept by the callee (or by a container of this call): from now on it
   * keeps its owner, which the caller still holds, so the reference is taken
   * before ours is dropped. */
  if (t->owner_lent) {
    Py_INCREF(t->owner);
    t->owner_lent = 0;
  }
  return 0;
}

/* A Tensor object of `ndim` dimensions, shape/strides pointing at its own
 * storage, with no owner yet (in Python's allocator when it will have one).
 * Data, device and dtype are left for the caller. */
static inline __attribute__((always_inline)) OwnTensor* own_block(int ndim, int with_owner) {
  int alloc = ALLOC_RAW;
  OwnTensor* t = with_owner
                     ? py_block(ndim, &alloc)
                     : PyMem_RawMalloc(sizeof(OwnTensor) + sizeof(int64_t) * 2 * (size_t)ndim);
  if (t == NULL) {
    PyErr_NoMemory();
    return NULL;
  }
  t->header.combined_ref_count = ((uint64_t)1 << 32) | 1; /* one strong, one weak */
  t->header.type_index = kTVMFFITensor;
  t->header.__padding = 0;
  t->header.deleter = own_deleter;
  t->dl.ndim = ndim;
  t->dl.shape = t->storage;
  t->dl.strides = t->storage + ndim;
  t->dl.byte_offset = 0;
  t->owner = NULL;
  t->mv = NULL;
  t->ml = NULL;
  t->flags = 0;
  t->py_alloc = alloc;
  t->exchange_fill = 0;
  t->borrowed = 0;
  t->owner_lent = 0;
  return t;
}

/* ... holding a new reference to `owner` (may be NULL). */
OwnTensor* own_new(int ndim, PyObject* owner) {
  OwnTensor* t = own_block(ndim, owner != NULL);
  if (t != NULL) t->owner = Py_XNewRef(owner);
  return t;
}

OwnTensor* own_new_lent(int ndim, PyObject* owner) {
  OwnTensor* t = own_block(ndim, 1);
  if (t != NULL) {
    t->owner = owner;
    t->owner_lent = 1;
  }
  return t;
}


/* ---- a producer's description, checked ---- */
/* ---- what a producer's tensor description may say ----------------------------- */
/* The DLDeviceType values of dlpack.h (1-4, 7-18), one bit each. */
#define KNOWN_DEVICE_TYPES ((((uint32_t)1 << 19) - 1) & ~(uint32_t)((1 << 0) | (1 << 5) | (1 << 6)))

/* What is wrong with a producer's DLTensor header (device, dtype, rank, the
 * shape pointer), or NULL when its arrays may be read. Every value is the
 * producer's word, and a lie (ndim < 0, shape NULL, a billion dimensions)
 * would otherwise be read as memory. Strides may be NULL (compact); the data
 * pointer is the producer's to answer for. */
static inline const char* dl_header_fault(const DLTensor* dl) {
  uint32_t dev = (uint32_t)dl->device.device_type;
  if (dev >= 32 || !((KNOWN_DEVICE_TYPES >> dev) & 1) || dl->device.device_id < 0) {
    return "unknown device";
  }
  if (dl->dtype.code > kDLFloat4_e2m1fn || dl->dtype.bits == 0 || dl->dtype.lanes == 0) {
    return "unknown dtype";
  }
  if ((uint32_t)dl->ndim > DL_MAX_NDIM) return "ndim out of range";
  if (dl->ndim > 0 && dl->shape == NULL) return "no shape";
  return NULL;
}

/* The extents must be >= 0 and the element count (empty dimensions counted as
 * 1, as compact strides multiply them) must fit int64_t. Copies the shape to
 * `to` on the way when it is not NULL. */
static inline const char* dl_shape_fault(const DLTensor* dl, int64_t* to) {
  int64_t count = 1;
  for (int i = 0; i < dl->ndim; ++i) {
    int64_t d = dl->shape[i];
    if (d < 0) return "negative shape";
    if (__builtin_mul_overflow(count, d > 0 ? d : 1, &count)) return "shape too large";
    if (to != NULL) to[i] = d;
  }
  return NULL;
}

static inline const char* dl_fault(const DLTensor* dl) {
  const char* what = dl_header_fault(dl);
  return what != NULL ? what : dl_shape_fault(dl, NULL);
}

static Py_NO_INLINE int dl_error(const DLTensor* dl, const char* what, const char* producer,
                                 Py_ssize_t argpos) {
  return tvmffi_arg_error(PyExc_ValueError, argpos,
                          "'%.200s' gave an invalid DLPack tensor (%s: ndim %d, device (%d, %d), "
                          "dtype code %u bits %u lanes %u)",
                          producer, what, (int)dl->ndim, (int)dl->device.device_type,
                          (int)dl->device.device_id, (unsigned)dl->dtype.code,
                          (unsigned)dl->dtype.bits, (unsigned)dl->dtype.lanes);
}

int dl_check(const DLTensor* dl, const char* producer, Py_ssize_t argpos) {
  const char* what = dl_fault(dl);
  return what == NULL ? 0 : dl_error(dl, what, producer, argpos);
}

/* A Tensor object describing a producer's DLTensor, checked as dl_check
 * does in the pass that copies its shape. */
OwnTensor* own_from_checked(const DLTensor* dl, PyObject* owner, Py_ssize_t argpos) {
  const char* what = dl_header_fault(dl);
  if (what != NULL) {
    dl_error(dl, what, Py_TYPE(owner)->tp_name, argpos);
    return NULL;
  }
  OwnTensor* t = own_new(dl->ndim, owner);
  if (t == NULL) return NULL;
  if ((what = dl_shape_fault(dl, t->storage)) != NULL) {
    own_deleter(t, kTVMFFIObjectDeleterFlagBitMaskBoth);
    dl_error(dl, what, Py_TYPE(owner)->tp_name, argpos);
    return NULL;
  }
  own_describe_rest(t, dl);
  return t;
}

/* The same for torch's own fill of its own tensor (TypeEntry.trusted): torch
 * describes a tensor it holds, so only what our own copy relies on (the rank
 * and the shape pointer) is looked at. */
OwnTensor* own_from_trusted(const DLTensor* dl, PyObject* owner, Py_ssize_t argpos) {
  if ((uint32_t)dl->ndim > DL_MAX_NDIM || (dl->ndim > 0 && dl->shape == NULL)) {
    return own_from_checked(dl, owner, argpos); /* reports it */
  }
  return own_from_dl(dl, owner, 0);
}


/* A Tensor object owning a consumed producer tensor (exactly one of mv, ml);
 * on failure the producer tensor is released. */
OwnTensor* own_from_managed(DLManagedTensorVersioned* mv, DLManagedTensor* ml,
                            Py_ssize_t argpos) {
  if (mv != NULL && (mv->flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED)) {
    tvmffi_arg_error(PyExc_ValueError, argpos,
              "DLPack tensors with padded sub-byte elements are not supported");
    release_managed(mv, NULL);
    return NULL;
  }
  OwnTensor* t = own_from_dl(mv != NULL ? &mv->dl_tensor : &ml->dl_tensor, NULL,
                             mv != NULL ? mv->flags : 0);
  if (t == NULL) {
    release_managed(mv, ml);
    return NULL;
  }
  t->mv = mv;
  t->ml = ml;
  return t;
}

/* DLPack flags of a tensor handle: known for the tensors built here, none
 * (writable) for the runtime's own. */
uint64_t tensor_flags(TVMFFIObjectHandle h) {
  return ((const TVMFFIObject*)h)->deleter == own_deleter ? ((const OwnTensor*)h)->flags : 0;
}
