/*
 * Call guards: what a packing borrows, held once Python code may run.
 *
 * A call's arguments and a container's elements are packed as views that
 * borrow their handles from the Python objects passed (no reference taken:
 * the caller holds the objects for the call). That holds only while no
 * Python code runs: a later argument's protocol method, property or
 * __dlpack__ may move a handle out of an argument already packed, or out of
 * the callee (__move_handle_from__, obj._move() taken by another call), and
 * free it under the packed view. The conversions that can run Python code
 * (any.c's slow route) call tvmffi_guard_hold first; from then on the call
 * holds its own reference to the callee and to every packed handle until it
 * is over (as temporaries). Calls of plain values, the common case, never
 * take a reference.
 */
#include "core.h"

/* Whether the temporaries already own `h` (a string, a container or a Tensor
 * made for this call): nothing Python does can free it before the call ends. */
static int owned_by_temps(const TempList* t, TVMFFIObjectHandle h) {
  for (int i = 0; i < t->size; ++i) {
    if (t->items[i] == h) return 1;
  }
  return 0;
}

static int hold_handle(TempList* t, TVMFFIObjectHandle h) {
  if (h == NULL || owned_by_temps(t, h)) return 0;
  TVMFFIObjectIncRef(h);
  if (temps_push(t, h) != 0) {
    TVMFFIObjectDecRef(h);
    return -1;
  }
  return 0;
}

int tvmffi_guard_hold_value(TempList* t, const TVMFFIAny* value) {
  if (value->type_index < kTVMFFIStaticObjectBegin) return 0;
  return hold_handle(t, (TVMFFIObjectHandle)value->v_obj);
}

/* Every guard not yet holding, innermost first (an outer guard holds
 * whenever an inner one does, so the walk stops at the first that holds). */
int tvmffi_guard_hold(TempList* t) {
  for (CallGuard* g = t->guard; g != NULL && !g->holding; g = g->parent) {
    g->holding = 1;
    if (hold_handle(t, g->callee) != 0) return -1;
    for (Py_ssize_t i = 0; i < g->npacked; ++i) {
      if (tvmffi_guard_hold_value(t, &g->packed[i]) != 0) return -1;
    }
  }
  return 0;
}
