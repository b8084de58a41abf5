/*
 * Test-only helper library: calls TVM FFI functions from native (non-Python)
 * threads and provides a C-implemented FFI function that blocks until a flag
 * is set, to observe whether the GIL is released during a call.
 *
 * Built by tests/conftest.py with the system C compiler against the headers of
 * the apache-tvm-ffi wheel and called from the tests through ctypes.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <tvm/ffi/c_api.h>

static void copy_bytes(char* dst, int cap, const TVMFFIByteArray* src) {
  if (dst == NULL || cap <= 0) return;
  size_t n = src->size < (size_t)(cap - 1) ? src->size : (size_t)(cap - 1);
  memcpy(dst, src->data, n);
  dst[n] = '\0';
}

typedef struct {
  void* fn;
  long long x;
  long long out;
  long tid;
  int rc;
  char* kind;
  char* msg;
  int cap;
} CallJob;

/* Call fn(x) and store an int result, or the error's kind and message. */
static void run_job(CallJob* job) {
  job->tid = (long)syscall(SYS_gettid);
  TVMFFIAny arg;
  memset(&arg, 0, sizeof(arg));
  arg.type_index = kTVMFFIInt;
  arg.v_int64 = job->x;
  TVMFFIAny res;
  memset(&res, 0, sizeof(res));
  res.type_index = kTVMFFINone;
  job->rc = TVMFFIFunctionCall(job->fn, &arg, 1, &res);
  if (job->rc == 0) {
    if (res.type_index == kTVMFFIInt) {
      job->out = res.v_int64;
    } else {
      job->rc = -2; /* wrong result type */
      if (res.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(res.v_obj);
    }
    return;
  }
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  if (err != NULL) {
    const TVMFFIErrorCell* cell = (const TVMFFIErrorCell*)((char*)err + sizeof(TVMFFIObject));
    copy_bytes(job->kind, job->cap, &cell->kind);
    copy_bytes(job->msg, job->cap, &cell->message);
    /* Releasing the error may release Python objects it carries, from this thread. */
    TVMFFIObjectDecRef(err);
  }
}

static void* job_thread(void* p) {
  run_job((CallJob*)p);
  return NULL;
}

/* Call fn(x) on a freshly spawned native thread (spawn != 0) or on the calling
 * thread. Returns the call's status (0 ok, -2 wrong result type, -1 error,
 * -100 thread creation failure). */
int call_int(void* fn, long long x, int spawn, long long* out, long* tid, char* kind, char* msg,
             int cap) {
  CallJob job = {fn, x, 0, 0, 0, kind, msg, cap};
  if (kind && cap > 0) kind[0] = '\0';
  if (msg && cap > 0) msg[0] = '\0';
  if (spawn) {
    pthread_t th;
    if (pthread_create(&th, NULL, job_thread, &job) != 0) return -100;
    pthread_join(th, NULL);
  } else {
    run_job(&job);
  }
  if (out) *out = job.out;
  if (tid) *tid = job.tid;
  return job.rc;
}

typedef struct {
  void* fn;
  int index;
  int iters;
  long long sum;
  int failures;
} LoopJob;

static void* loop_thread(void* p) {
  LoopJob* job = (LoopJob*)p;
  for (int i = 0; i < job->iters; ++i) {
    CallJob c = {job->fn, (long long)job->index * 1000000 + i, 0, 0, 0, NULL, NULL, 0};
    run_job(&c);
    if (c.rc != 0) {
      job->failures++;
    } else {
      job->sum += c.out;
    }
  }
  return NULL;
}

/* nthreads native threads, each calling fn(index * 1000000 + i) iters times,
 * concurrently. Stores the sum of all results; returns the number of failures. */
int call_concurrently(void* fn, int nthreads, int iters, long long* sum) {
  pthread_t th[64];
  LoopJob jobs[64];
  if (nthreads > 64) return -100;
  for (int t = 0; t < nthreads; ++t) {
    jobs[t] = (LoopJob){fn, t, iters, 0, 0};
    if (pthread_create(&th[t], NULL, loop_thread, &jobs[t]) != 0) return -100;
  }
  int failures = 0;
  long long total = 0;
  for (int t = 0; t < nthreads; ++t) {
    pthread_join(th[t], NULL);
    failures += jobs[t].failures;
    total += jobs[t].sum;
  }
  *sum = total;
  return failures;
}

/* ---- a C function that waits for a flag set by another thread ------------- */
static atomic_int g_flag;
static atomic_int g_entered;

void set_flag(void) { atomic_store(&g_flag, 1); }
void reset_flag(void) {
  atomic_store(&g_flag, 0);
  atomic_store(&g_entered, 0);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Block (called through ctypes, so without the GIL) until wait_flag has been
 * entered. Returns 1 when it was, 0 on timeout. */
int wait_entered(int timeout_ms) {
  for (int waited = 0; waited <= timeout_ms; ++waited) {
    if (atomic_load(&g_entered)) return 1;
    sleep_ms(1);
  }
  return 0;
}

/* wait_flag(timeout_ms) -> bool: whether the flag got set before the timeout. */
static int wait_flag_call(void* self, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* result) {
  (void)self;
  if (nargs != 1 || args[0].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "wait_flag expects one int (timeout in ms)");
    return -1;
  }
  long long timeout_ms = args[0].v_int64;
  int seen = 0;
  atomic_store(&g_entered, 1);
  for (long long waited = 0; waited <= timeout_ms; ++waited) {
    if (atomic_load(&g_flag)) {
      seen = 1;
      break;
    }
    sleep_ms(1);
  }
  result->type_index = kTVMFFIBool;
  result->zero_padding = 0;
  result->v_int64 = seen;
  return 0;
}

/* Register wait_flag as the global function `name`. Returns 0 on success. */
int register_wait_flag(const char* name) {
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionCreate(NULL, wait_flag_call, NULL, &f) != 0) return -1;
  TVMFFIByteArray ba = {name, strlen(name)};
  int rc = TVMFFIFunctionSetGlobal(&ba, f, 1);
  TVMFFIObjectDecRef(f);
  return rc;
}

/* Runtime version as seen through the C ABI directly. */
void runtime_version(unsigned* major, unsigned* minor, unsigned* patch) {
  TVMFFIVersion v;
  TVMFFIGetVersion(&v);
  *major = v.major;
  *minor = v.minor;
  *patch = v.patch;
}

/* ---- signals from a native thread ------------------------------------------ */
typedef struct {
  int sig;
  int delay_ms;
} SignalJob;

static void* signal_thread(void* p) {
  SignalJob job = *(SignalJob*)p;
  free(p);
  sleep_ms(job.delay_ms);
  kill(getpid(), job.sig);
  return NULL;
}

/* Send `sig` to this process from a detached native thread after delay_ms:
 * unlike a Python timer thread it needs no GIL to do so. */
int send_signal_after(int sig, int delay_ms) {
  SignalJob* job = malloc(sizeof(SignalJob));
  if (job == NULL) return -1;
  job->sig = sig;
  job->delay_ms = delay_ms;
  pthread_t th;
  if (pthread_create(&th, NULL, signal_thread, job) != 0) {
    free(job);
    return -1;
  }
  pthread_detach(th);
  return 0;
}

/* Call fn(DLTensor*) with a float32 tensor of shape `shape` (ndim entries)
 * at `data` (which may be NULL): how a C caller hands a bare view to a
 * callback. Returns the call's return code (a raised error is dropped). */
int call_with_dltensor_nd(void* fn, void* data, int ndim, int64_t* shape) {
  DLTensor dl = {0};
  dl.data = data;
  dl.device.device_type = kDLCPU;
  dl.ndim = ndim;
  dl.dtype.code = kDLFloat;
  dl.dtype.bits = 32;
  dl.dtype.lanes = 1;
  dl.shape = shape;
  TVMFFIAny arg = {0};
  arg.type_index = kTVMFFIDLTensorPtr;
  arg.v_ptr = &dl;
  TVMFFIAny result = {0};
  result.type_index = kTVMFFINone;
  int rc = TVMFFIFunctionCall(fn, &arg, 1, &result);
  if (rc == 0 && result.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(result.v_obj);
  if (rc != 0) {
    TVMFFIObjectHandle err = NULL;
    TVMFFIErrorMoveFromRaised(&err);
    if (err != NULL) TVMFFIObjectDecRef(err);
  }
  return rc;
}

/* The same with a 1-d tensor of `n` elements. */
int call_with_dltensor(void* fn, void* data, long long n) {
  int64_t shape[1] = {n};
  return call_with_dltensor_nd(fn, data, 1, shape);
}
