/*
 * The DLPack C exchange API route (__dlpack_c_exchange_api__ on the type):
 * for torch.Tensor its non-owning DLTensor fill, the Tensor object holding a
 * reference to the torch tensor; for others their managed export. torch's
 * lazy conjugate and negative bits, which DLPack cannot carry, are asked of
 * torch here (from C where torch's own functions can be found).
 */
#include "internal.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <string.h>

/* ---- DLPack C exchange API (__dlpack_c_exchange_api__ on the type) ---------- */
/* The attribute is a PyCapsule named "dlpack_exchange_api" (dlpack.h). Any
 * other value (an int would be an address nobody vouches for) is ignored: the
 * type then converts through its Python __dlpack__, if it has one. */
const DLPackExchangeAPI* lookup_exchange_api(PyTypeObject* tp) {
  PyObject* attr = PyObject_GetAttrString((PyObject*)tp, "__dlpack_c_exchange_api__");
  if (attr == NULL) {
    PyErr_Clear();
    return NULL;
  }
  const DLPackExchangeAPI* api = NULL;
  if (PyCapsule_IsValid(attr, "dlpack_exchange_api")) {
    api = PyCapsule_GetPointer(attr, "dlpack_exchange_api");
  }
  PyErr_Clear();
  Py_DECREF(attr);
  if (api == NULL || api->header.version.major != DLPACK_MAJOR_VERSION ||
      api->managed_tensor_from_py_object_no_sync == NULL) {
    return NULL;
  }
  return api;
}

/* The shared object that `addr` lies in, or NULL. */
static const char* library_of(const void* addr, void** base) {
  Dl_info info;
  if (dladdr(addr, &info) == 0 || info.dli_fname == NULL) return NULL;
  *base = info.dli_fbase;
  return info.dli_fname;
}

int exchange_api_is_torchs(const DLPackExchangeAPI* api) {
  void *struct_base, *fill_base;
  const char* lib = library_of(api, &struct_base);
  if (lib == NULL || api->dltensor_from_py_object_no_sync == NULL ||
      library_of((const void*)(uintptr_t)api->dltensor_from_py_object_no_sync, &fill_base) == NULL ||
      fill_base != struct_base) {
    return 0;
  }
  const char* name = strrchr(lib, '/');
  name = name != NULL ? name + 1 : lib;
  return strncmp(name, "libtorch_python.", strlen("libtorch_python.")) == 0;
}

/* ---- torch's lazy conjugate and negative bits ---------------------------------- */
/* Asked of torch from C where its own functions can be found: libtorch_cpu
 * exports at::native::is_conj / is_neg (and the dispatcher's entries to them,
 * at::_ops::is_conj::call / is_neg::call), the functions behind
 * Tensor.is_conj() / is_neg(), which take a `const at::Tensor&`: the
 * address of the at::Tensor (one TensorImpl pointer) that a torch.Tensor
 * object holds right after its header (THPVariable's cdata, a MaybeOwned
 * whose payload is that pointer after a flag word, or the plain at::Tensor).
 * Which of the two, and that the functions answer as the Python methods do,
 * is confirmed once on probe tensors; otherwise, and for subclasses (whose
 * __torch_dispatch__ could raise a C++ exception through our C frames), the
 * Python methods are called (~830 instructions a question instead of a few). */
typedef bool (*TorchBitFn)(const void* tensor);
static struct {
  int state; /* 0: not tried yet, 1: usable, -1: use the Python methods */
  TorchBitFn is_conj;
  TorchBitFn is_neg;
  Py_ssize_t offset; /* of the at::Tensor in the Python object */
  /* at::toDLPackNonOwning, once it filled the probes as torch's exchange
   * fill does (fill_state 1), else NULL (see torch_fill below). */
  int fill_state; /* 0: not tried yet, 1: usable, -1: use the exchange fill */
  TvmffiDLFillFn fill;
} g_torch_c;

/* The at::Tensor at `offset` in obj if it looks like one: a TensorImpl
 * pointer whose first word (its vtable) lies in torch's libraries. */
static const void* torch_tensor_at(PyObject* obj, Py_ssize_t offset) {
  const void* slot = (const char*)obj + offset;
  uintptr_t impl = *(const uintptr_t*)slot;
  if (impl < 4096 || impl % sizeof(void*) != 0) return NULL;
  void* base;
  const char* lib = library_of(*(void* const*)impl, &base);
  if (lib == NULL || (strstr(lib, "c10") == NULL && strstr(lib, "torch") == NULL)) return NULL;
  return slot;
}

/* The Python method's answer (torch.Tensor's own: a subclass may override). */
static int torch_bit_py(PyObject* obj, const char* name) {
  PyObject* r = PyObject_CallMethod((PyObject*)g_torch_tensor_type, name, "O", obj);
  int set = r == NULL ? -1 : PyObject_IsTrue(r);
  Py_XDECREF(r);
  return set;
}

/* ---- probes run out of the user's sight ----------------------------------------- */
/* The probes below call about twenty torch ops on tensors of their own. Under
 * a TorchDispatchMode or TorchFunctionMode the user entered (a logger, a
 * counter, a device context) those ops would reach the mode as if the user
 * had called them, and could be changed by it: they run inside torch's own
 * switches that bypass modes and subclass hooks (torch._C._DisableTorchDispatch,
 * torch._C.DisableTorchFunction). A torch without them probes as before. */
static const char* const kQuietContexts[] = {"_DisableTorchDispatch", "DisableTorchFunction"};
#define QUIET_COUNT (sizeof(kQuietContexts) / sizeof(kQuietContexts[0]))

static void probes_quiet_enter(PyObject* entered[QUIET_COUNT]) {
  PyObject* c = PyImport_ImportModule("torch._C");
  for (size_t i = 0; i < QUIET_COUNT; ++i) {
    PyObject* cls = c != NULL ? PyObject_GetAttrString(c, kQuietContexts[i]) : NULL;
    PyObject* ctx = cls != NULL ? PyObject_CallNoArgs(cls) : NULL;
    PyObject* res = ctx != NULL ? PyObject_CallMethod(ctx, "__enter__", NULL) : NULL;
    if (res == NULL) Py_CLEAR(ctx);
    entered[i] = ctx; /* NULL: not entered */
    Py_XDECREF(res);
    Py_XDECREF(cls);
  }
  Py_XDECREF(c);
  PyErr_Clear();
}

static void probes_quiet_exit(PyObject* entered[QUIET_COUNT]) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  for (size_t i = QUIET_COUNT; i-- > 0;) {
    if (entered[i] == NULL) continue;
    PyObject* res = PyObject_CallMethod(entered[i], "__exit__", "OOO", Py_None, Py_None, Py_None);
    Py_XDECREF(res);
    Py_DECREF(entered[i]);
  }
  PyErr_Clear();
  PyErr_Restore(type, value, tb);
}

/* Whether the C functions at `offset` answer as the methods do on `probe`. */
static int torch_c_agrees(PyObject* probe, Py_ssize_t offset) {
  const void* t = torch_tensor_at(probe, offset);
  if (t == NULL) return 0;
  return g_torch_c.is_conj(t) == torch_bit_py(probe, "is_conj") &&
         g_torch_c.is_neg(t) == torch_bit_py(probe, "is_neg");
}

/* Probes: a complex tensor, its conjugate view, and the imaginary part of
 * that (the negative bit). Each bit is seen set and unset. */
static int torch_c_probe(Py_ssize_t offset) {
  PyObject* torch = PyImport_ImportModule("torch");
  if (torch == NULL) return 0;
  PyObject* plain = PyObject_CallMethod(torch, "zeros", "(i)", 2);
  PyObject* dtype = PyObject_GetAttrString(torch, "complex64");
  PyObject* cplx = plain && dtype ? PyObject_CallMethod(plain, "to", "O", dtype) : NULL;
  PyObject* conj = cplx ? PyObject_CallMethod(cplx, "conj", NULL) : NULL;
  PyObject* neg = conj ? PyObject_GetAttrString(conj, "imag") : NULL;
  int ok = neg != NULL && Py_TYPE(neg) == g_torch_tensor_type && torch_bit_py(conj, "is_conj") == 1 &&
           torch_bit_py(neg, "is_neg") == 1 && torch_c_agrees(cplx, offset) &&
           torch_c_agrees(conj, offset) && torch_c_agrees(neg, offset);
  PyErr_Clear();
  Py_XDECREF(neg);
  Py_XDECREF(conj);
  Py_XDECREF(cplx);
  Py_XDECREF(dtype);
  Py_XDECREF(plain);
  Py_DECREF(torch);
  return ok;
}

static void torch_c_find(void) {
  g_torch_c.state = -1;
  void* lib = dlopen("libtorch_cpu.so", RTLD_LAZY | RTLD_NOLOAD);
  if (lib == NULL) return;
  /* at::native::is_conj / is_neg read the TensorImpl's key set (a few
   * instructions); at::_ops::*::call reach the same through the dispatcher
   * (~300 instructions), the fallback where the native symbols are absent. */
  g_torch_c.fill = (TvmffiDLFillFn)(uintptr_t)dlsym(lib, "_ZN2at17toDLPackNonOwningERKNS_6TensorEP8DLTensor");
  g_torch_c.is_conj = (TorchBitFn)(uintptr_t)dlsym(lib, "_ZN2at6native7is_conjERKNS_6TensorE");
  g_torch_c.is_neg = (TorchBitFn)(uintptr_t)dlsym(lib, "_ZN2at6native6is_negERKNS_6TensorE");
  if (g_torch_c.is_conj == NULL || g_torch_c.is_neg == NULL) {
    g_torch_c.is_conj = (TorchBitFn)(uintptr_t)dlsym(lib, "_ZN2at4_ops7is_conj4callERKNS_6TensorE");
    g_torch_c.is_neg = (TorchBitFn)(uintptr_t)dlsym(lib, "_ZN2at4_ops6is_neg4callERKNS_6TensorE");
  }
  dlclose(lib); /* still loaded: torch holds it */
  if (g_torch_c.is_conj == NULL || g_torch_c.is_neg == NULL) return;
  static const Py_ssize_t offsets[] = {sizeof(PyObject) + sizeof(void*), sizeof(PyObject)};
  PyObject* quiet[QUIET_COUNT];
  probes_quiet_enter(quiet);
  for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); ++i) {
    if (torch_c_probe(offsets[i])) {
      g_torch_c.offset = offsets[i];
      g_torch_c.state = 1;
      break;
    }
  }
  probes_quiet_exit(quiet);
}

/* 1 when the bit is set, 0 when not, -1 on error. */
static int torch_bit(PyObject* obj, int conj) {
  if (g_torch_c.state == 0) torch_c_find();
  if (g_torch_c.state > 0 && Py_TYPE(obj) == g_torch_tensor_type) {
    const void* t = (const char*)obj + g_torch_c.offset;
    return conj ? g_torch_c.is_conj(t) : g_torch_c.is_neg(t);
  }
  return torch_bit_py(obj, conj ? "is_conj" : "is_neg");
}

/* ---- torch's DLTensor fill, called directly ------------------------------------ */
/* torch's exchange fill (DLTensorFromPyObjectNoSync) acquires the GIL through
 * pybind11, casts the Python object to a new at::Tensor (a reference taken and
 * dropped, which torch forwards to the Python object) and calls
 * at::toDLPackNonOwning on it: ~450 instructions a tensor, of which the last
 * call is ~160. For an exact torch.Tensor (no subclass hooks to respect) the
 * at::Tensor is the one the object holds (found for the lazy bits above), so
 * the function is called on it directly, through cxx_call.cc, which catches
 * torch's exceptions: a tensor it cannot describe goes to the exchange fill,
 * which raises the Python error torch chose. Used only once it filled probe
 * tensors (strided, offset, 0-d, complex) exactly as the exchange fill does. */
static int same_fill(const DLTensor* a, const DLTensor* b) {
  if (a->data != b->data || a->ndim != b->ndim || a->byte_offset != b->byte_offset ||
      a->device.device_type != b->device.device_type || a->device.device_id != b->device.device_id ||
      a->dtype.code != b->dtype.code || a->dtype.bits != b->dtype.bits ||
      a->dtype.lanes != b->dtype.lanes || (a->strides == NULL) != (b->strides == NULL)) {
    return 0;
  }
  for (int i = 0; i < a->ndim; ++i) {
    if (a->shape[i] != b->shape[i] || (a->strides != NULL && a->strides[i] != b->strides[i])) return 0;
  }
  return 1;
}

/* 1 when the direct fill of `probe` equals the exchange fill, 0 when not, -1
 * when the probe is unusable (not made, or not an exact CPU torch.Tensor:
 * made inside a torch mode or device context that changed what torch makes). */
static int torch_fill_agrees(PyObject* probe, const DLPackExchangeAPI* api) {
  DLTensor direct, exchange;
  if (probe == NULL || Py_TYPE(probe) != g_torch_tensor_type) return -1;
  if (api->dltensor_from_py_object_no_sync(probe, &exchange) != 0) {
    PyErr_Clear();
    return -1;
  }
  if (exchange.device.device_type != kDLCPU) return -1;
  const void* t = (const char*)probe + g_torch_c.offset;
  return tvmffi_call_dl_fill(g_torch_c.fill, t, &direct) == 0 && same_fill(&direct, &exchange);
}

/* Probes: a 4x6 grid, its transpose, a row (an offset into the storage), a
 * 0-d element and a complex copy; 1 when all agree, 0 when one disagrees, -1
 * when they could not be made as plain CPU tensors. */
static int torch_fill_probe(PyObject* torch, const DLPackExchangeAPI* api) {
  PyObject* cpu = PyUnicode_FromString("cpu");
  PyObject* kw = cpu != NULL ? Py_BuildValue("{s:O}", "device", cpu) : NULL;
  PyObject* arange = PyObject_GetAttrString(torch, "arange");
  PyObject* n = PyLong_FromLong(24);
  PyObject* args = n != NULL ? PyTuple_Pack(1, n) : NULL;
  PyObject* base = arange && args && kw ? PyObject_Call(arange, args, kw) : NULL;
  PyObject* grid = base ? PyObject_CallMethod(base, "reshape", "(ii)", 4, 6) : NULL;
  PyObject* tr = grid ? PyObject_CallMethod(grid, "t", NULL) : NULL;
  PyObject* row = grid ? PyObject_CallMethod(grid, "select", "(ii)", 0, 2) : NULL;
  PyObject* zero_d = row ? PyObject_CallMethod(row, "select", "(ii)", 0, 3) : NULL;
  PyObject* dtype = PyObject_GetAttrString(torch, "complex64");
  PyObject* cplx = dtype && grid ? PyObject_CallMethod(grid, "to", "O", dtype) : NULL;
  PyObject* probes[] = {grid, tr, row, zero_d, cplx};
  int verdict = 1;
  for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]) && verdict == 1; ++i) {
    verdict = torch_fill_agrees(probes[i], api);
  }
  PyErr_Clear();
  PyObject* owned[] = {cplx, dtype, zero_d, row, tr, grid, base, args, n, arange, kw, cpu};
  for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); ++i) Py_XDECREF(owned[i]);
  return verdict;
}

static void torch_fill_find(const DLPackExchangeAPI* api) {
  /* Probes that could not be made (inside a torch mode or device context) are
   * tried again at a later tensor, a few times; meanwhile, and after, the
   * exchange fill is used. */
  static int attempts;
  g_torch_c.fill_state = -1;
  if (g_torch_c.state == 0) torch_c_find();
  if (g_torch_c.state < 0 || g_torch_c.fill == NULL) return;
  PyObject* torch = PyImport_ImportModule("torch");
  if (torch == NULL) {
    PyErr_Clear();
    return;
  }
  PyObject* quiet[QUIET_COUNT];
  probes_quiet_enter(quiet);
  int verdict = torch_fill_probe(torch, api);
  probes_quiet_exit(quiet);
  Py_DECREF(torch);
  if (verdict > 0) g_torch_c.fill_state = 1;
  if (verdict < 0 && ++attempts < 4) g_torch_c.fill_state = 0;
}

/* The non-owning DLTensor of a torch tensor: directly for an exact
 * torch.Tensor of torch's own API, else (or when torch threw) the exchange
 * fill. 0, or -1 with the exchange fill's Python error set. */
static int torch_fill(PyObject* obj, const TypeEntry* e, DLTensor* dl) {
  if (e->trusted && Py_TYPE(obj) == g_torch_tensor_type) {
    if (g_torch_c.fill_state == 0) torch_fill_find(e->api);
    if (g_torch_c.fill_state > 0 &&
        tvmffi_call_dl_fill(g_torch_c.fill, (const char*)obj + g_torch_c.offset, dl) == 0) {
      return 0;
    }
  }
  return e->api->dltensor_from_py_object_no_sync(obj, dl);
}

/* A torch tensor whose conjugate or negative bit is set means values its
 * memory does not hold (conj(x), -x); DLPack has no such flags, so passing the
 * memory would hand the callee wrong values. Refused, as torch's own
 * __dlpack__ refuses the conjugate bit (the official binding drops both). */
int torch_ask_lazy_bits(PyObject* obj, const DLTensor* dl, Py_ssize_t argpos) {
  int conj = dl->dtype.code == kDLComplex ? torch_bit(obj, 1) : 0;
  int neg = conj == 0 ? torch_bit(obj, 0) : 0;
  if (conj < 0 || neg < 0) return wrap_error(argpos, obj, "is_conj()/is_neg()");
  if (conj || neg) {
    return tvmffi_arg_error(PyExc_ValueError, argpos,
                            "torch.Tensor with the %s bit set cannot be passed: DLPack cannot "
                            "carry it and the callee would read wrong values; call %s first",
                            conj ? "conjugate" : "negative",
                            conj ? ".resolve_conj()" : ".resolve_neg()");
  }
  return 0;
}

/* A framework tensor's non-owning DLTensor fill (see exchange_fills) as a
 * Tensor object that keeps the framework tensor alive. */
OwnTensor* exchange_fill_tensor(PyObject* obj, const TypeEntry* e, Py_ssize_t argpos) {
  DLTensor dl;
  if (torch_fill(obj, e, &dl) != 0) {
    wrap_error(argpos, obj, "DLPack export");
    return NULL;
  }
  OwnTensor* t = e->trusted ? own_from_trusted(&dl, obj, argpos) : own_from_checked(&dl, obj, argpos);
  if (t == NULL) return NULL;
  if (e->is_torch && torch_check_lazy_bits(obj, &t->dl, argpos) != 0) {
    own_deleter(t, kTVMFFIObjectDeleterFlagBitMaskBoth);
    return NULL;
  }
  t->exchange_fill = 1;
  return t;
}

/* A producer's managed export, now owned by the caller (checked). */
int exchange_managed(PyObject* obj, const TypeEntry* e, Py_ssize_t argpos,
                     DLManagedTensorVersioned** mv) {
  if (e->api->managed_tensor_from_py_object_no_sync(obj, mv) != 0) {
    return wrap_error(argpos, obj, "DLPack export");
  }
  if (*mv == NULL) {
    return tvmffi_arg_error(PyExc_ValueError, argpos, "'%.200s' exported no DLPack tensor",
                            Py_TYPE(obj)->tp_name);
  }
  if (dl_check(&(*mv)->dl_tensor, Py_TYPE(obj)->tp_name, argpos) != 0 ||
      (e->is_torch && torch_check_lazy_bits(obj, &(*mv)->dl_tensor, argpos) != 0)) {
    release_managed(*mv, NULL);
    *mv = NULL;
    return -1;
  }
  return 0;
}

