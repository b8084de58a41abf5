/*
 * Locks for the state Python threads share without a GIL (free-threaded
 * CPython): the runtime's containers and registries, which the runtime does
 * not lock itself.
 *
 * Every call that reads or changes a runtime List, Dict or Map on tvmffi's
 * behalf (the "ffi.*" builtins, _seq_size / _seq_getitem, the functors that
 * iterate a container) runs inside the critical section of a stand-in
 * object chosen by the container's address; calls on the global registries
 * (functions, types) use the stand-in of NULL. Python threads sharing one
 * container are then serialized as the GIL serializes them on the default
 * build, so no thread ever reads a container another is resizing.
 *
 * Stand-ins rather than the wrappers themselves: one runtime object has as
 * many Python wrappers as times it came back from a call.
 */
#include "core.h"

#ifdef Py_GIL_DISABLED
#define STRIPES 64 /* a power of two */
static PyObject* g_stripes[STRIPES];

PyObject* tvmffi_runtime_lock(const void* h) {
  uintptr_t a = (uintptr_t)h;
  /* Objects are 16-byte aligned at least: mix the higher bits in. */
  return g_stripes[((a >> 4) ^ (a >> 10)) & (STRIPES - 1)];
}
#endif

int tvmffi_threads_init(PyObject* module) {
  (void)module; /* used only without a GIL */
#ifdef Py_GIL_DISABLED
  for (int i = 0; i < STRIPES; ++i) {
    if (g_stripes[i] == NULL && (g_stripes[i] = PyList_New(0)) == NULL) return -1;
  }
  /* Every state the extension shares is guarded (core.h, "shared state
   * without the GIL"): importing it leaves the GIL off. */
  if (PyUnstable_Module_SetGIL(module, Py_MOD_GIL_NOT_USED) != 0) return -1;
#endif
  return 0;
}
