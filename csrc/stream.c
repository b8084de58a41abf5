/*
 * The runtime's environment stream (TVMFFIEnvGetStream / TVMFFIEnvSetStream):
 * a per-thread, per-device stream handle that kernels launch on.
 *
 * use_stream() (stream.py) sets it explicitly and records, per thread, that an
 * explicit stream is active for the device. Calls whose tensor arguments come
 * from a framework with a current stream (torch) adopt that stream for the
 * duration of the call, unless an explicit stream is active.
 */
#include "core.h"

/* Devices with an active use_stream() on this thread, with nesting depth. */
#define MAX_EXPLICIT 16
typedef struct {
  int32_t device_type;
  int32_t device_id;
  int32_t depth;
} ExplicitEntry;

static _Thread_local ExplicitEntry g_explicit[MAX_EXPLICIT];
static _Thread_local int g_num_explicit;

static ExplicitEntry* find_explicit(int32_t device_type, int32_t device_id) {
  for (int i = 0; i < g_num_explicit; ++i) {
    if (g_explicit[i].device_type == device_type && g_explicit[i].device_id == device_id) {
      return &g_explicit[i];
    }
  }
  return NULL;
}

/* Nonzero while a use_stream() context for this device is active on this thread. */
static int explicit_active(int32_t device_type, int32_t device_id) {
  if (g_num_explicit == 0) return 0;
  ExplicitEntry* e = find_explicit(device_type, device_id);
  return e != NULL && e->depth > 0;
}

static int set_stream(int32_t device_type, int32_t device_id, void* stream, void** prev) {
  if (TVMFFIEnvSetStream(device_type, device_id, stream, prev) != 0) {
    tvmffi_raise_ffi_error();
    return -1;
  }
  return 0;
}

/* ---- adopting a framework's stream for one call ---------------------------- */
typedef struct {
  int32_t device_type;
  int32_t device_id;
  void* prev;
} StreamRestore;

static void restore_stream(void* handle) {
  StreamRestore* r = (StreamRestore*)handle;
  if (TVMFFIEnvSetStream(r->device_type, r->device_id, r->prev, NULL) != 0) {
    /* Nothing to report to: drop the runtime's error. */
    tvmffi_discard_ffi_error();
  }
  PyMem_RawFree(r);
}

int tvmffi_stream_adopt(int32_t device_type, int32_t device_id, void* stream, TempList* temps) {
  if (explicit_active(device_type, device_id)) return 0;
  if (TVMFFIEnvGetStream(device_type, device_id) == stream) return 0;
  StreamRestore* r = PyMem_RawMalloc(sizeof(StreamRestore));
  if (r == NULL) return PyErr_NoMemory(), -1;
  r->device_type = device_type;
  r->device_id = device_id;
  if (set_stream(device_type, device_id, stream, &r->prev) != 0) {
    PyMem_RawFree(r);
    return -1;
  }
  /* An opaque object whose deleter restores the previous stream once the
   * call's temporaries are released. It never reaches Python or the callee. */
  TVMFFIObjectHandle h;
  if (TVMFFIObjectCreateOpaque(r, kTVMFFIOpaquePyObject, restore_stream, &h) != 0) {
    restore_stream(r);
    tvmffi_raise_ffi_error();
    return -1;
  }
  if (temps_push(temps, h) != 0) {
    TVMFFIObjectDecRef(h);
    return -1;
  }
  return 0;
}

/* ---- Python entry points ------------------------------------------------------ */
static int parse_stream(PyObject* obj, void** out) {
  if (obj == Py_None) {
    *out = NULL;
    return 0;
  }
  *out = PyLong_AsVoidPtr(obj);
  return (*out == NULL && PyErr_Occurred()) ? -1 : 0;
}

static PyObject* py_current_stream(PyObject* self, PyObject* args) {
  (void)self;
  int device_type, device_id;
  if (!PyArg_ParseTuple(args, "ii", &device_type, &device_id)) return NULL;
  void* s = TVMFFIEnvGetStream(device_type, device_id);
  return PyLong_FromVoidPtr(s);
}

/* stream_push(device_type, device_id, stream) -> previous stream (int) */
static PyObject* py_stream_push(PyObject* self, PyObject* args) {
  (void)self;
  int device_type, device_id;
  PyObject* stream_obj;
  if (!PyArg_ParseTuple(args, "iiO", &device_type, &device_id, &stream_obj)) return NULL;
  void* stream;
  if (parse_stream(stream_obj, &stream) != 0) return NULL;
  ExplicitEntry* e = find_explicit(device_type, device_id);
  if (e == NULL) {
    if (g_num_explicit == MAX_EXPLICIT) {
      PyErr_SetString(PyExc_RuntimeError, "too many devices with an active use_stream()");
      return NULL;
    }
    e = &g_explicit[g_num_explicit++];
    e->device_type = device_type;
    e->device_id = device_id;
    e->depth = 0;
  }
  void* prev = NULL;
  if (set_stream(device_type, device_id, stream, &prev) != 0) return NULL;
  e->depth += 1;
  return PyLong_FromVoidPtr(prev);
}

/* stream_pop(device_type, device_id, previous) */
static PyObject* py_stream_pop(PyObject* self, PyObject* args) {
  (void)self;
  int device_type, device_id;
  PyObject* prev_obj;
  if (!PyArg_ParseTuple(args, "iiO", &device_type, &device_id, &prev_obj)) return NULL;
  void* prev;
  if (parse_stream(prev_obj, &prev) != 0) return NULL;
  ExplicitEntry* e = find_explicit(device_type, device_id);
  if (e != NULL && e->depth > 0) {
    e->depth -= 1;
    if (e->depth == 0) *e = g_explicit[--g_num_explicit];
  }
  if (set_stream(device_type, device_id, prev, NULL) != 0) return NULL;
  Py_RETURN_NONE;
}

static PyMethodDef stream_methods[] = {
    {"current_stream", py_current_stream, METH_VARARGS,
     "current_stream(device_type, device_id) -> int: the environment stream."},
    {"stream_push", py_stream_push, METH_VARARGS,
     "stream_push(device_type, device_id, stream) -> previous: set the stream explicitly."},
    {"stream_pop", py_stream_pop, METH_VARARGS,
     "stream_pop(device_type, device_id, previous): restore the stream stream_push replaced."},
    {NULL, NULL, 0, NULL},
};

int tvmffi_stream_init(PyObject* module) { return PyModule_AddFunctions(module, stream_methods); }
