/*
 * The calling thread's C stack: how much of it is left.
 *
 * Two users, one rule. The graph guard (graph_guard.c) turns the room left
 * into the levels of nesting a recursive runtime traversal may reach; a
 * Python callback entered from FFI code (callback.c) refuses to run once the
 * room left is below one more level of Python -> FFI -> Python recursion, so
 * that such recursion (with sys.setrecursionlimit raised) ends in a
 * RecursionError instead of overflowing the stack. Both keep the same reserve
 * free for the frames around them (the call path, error unwinding).
 *
 * Each thread's stack bounds are asked once (pthread_getattr_np reads
 * /proc/self/maps for the main thread, about a millisecond); the callback
 * check then costs one thread-local load and one comparison.
 */
#include "core.h"

#include <pthread.h>

/* Stack kept free for the frames around a checked call: this much, or an
 * eighth of a smaller thread's stack. */
#define STACK_RESERVE_BYTES (512 * 1024)
/* What one more level of callback recursion may take before the next check:
 * the callback's Python frame, an FFI call and the runtime's frames (about
 * 2 KiB measured on x86-64), with room for the error path. */
#define CALLBACK_LEVEL_BYTES (16 * 1024)

static _Thread_local char* t_stack_base;
static _Thread_local int64_t t_stack_size = -2; /* -2: not asked yet, -1: unknown */
__attribute__((tls_model("initial-exec"))) _Thread_local const char* tvmffi_t_callback_floor;

static void ask_stack_bounds(void) {
  pthread_attr_t attr;
  void* base = NULL;
  size_t size = 0;
  t_stack_size = -1;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    if (pthread_attr_getstack(&attr, &base, &size) == 0 && base != NULL) {
      t_stack_base = base;
      t_stack_size = (int64_t)size;
    }
    pthread_attr_destroy(&attr);
  }
}

static int64_t reserve_of(int64_t total) {
  return total / 8 < STACK_RESERVE_BYTES ? total / 8 : STACK_RESERVE_BYTES;
}

/* Bytes of stack left below `here` minus the reserve (may be <= 0); *known is
 * 0 when this thread's stack bounds cannot be read. */
static int64_t usable_below(const char* here, int* known) {
  if (t_stack_size == -2) ask_stack_bounds();
  *known = t_stack_size >= 0;
  if (!*known) return 0;
  return (int64_t)(here - t_stack_base) - reserve_of(t_stack_size); /* grows down to base */
}

int64_t tvmffi_stack_usable(void) {
  char here;
  int known;
  int64_t usable = usable_below(&here, &known);
  if (!known) usable = 8 * 1024 * 1024 - STACK_RESERVE_BYTES; /* assume the usual 8 MiB */
  return usable;
}

const char* tvmffi_callback_floor_init(void) {
  char here;
  int known;
  (void)usable_below(&here, &known);
  /* Unknown bounds: a floor no address is below (no check, as before). */
  tvmffi_t_callback_floor =
      known ? t_stack_base + reserve_of(t_stack_size) + CALLBACK_LEVEL_BYTES : (const char*)1;
  return tvmffi_t_callback_floor;
}

int tvmffi_callback_stack_low_slow(const char* here, const char* what) {
  /* Below the floor of this thread's stack, or on another stack altogether (a
   * coroutine library's own stack below it): only the first is low. */
  if (here < t_stack_base) return 0;
  PyErr_Format(PyExc_RecursionError,
               "maximum recursion depth exceeded %s: %lld bytes of this thread's C stack "
               "left (of %lld); each level of recursion takes C stack",
               what, (long long)(here - t_stack_base), (long long)t_stack_size);
  return 1;
}
