/*
 * Library pinning: a shared library whose loading registered global functions
 * or types stays loaded for the rest of the process, however it was loaded.
 *
 * The runtime loads a `.so` module through its global loader
 * "ffi.Module.load_from_file.so" (what ffi.ModuleLoadFromFile dispatches to,
 * whoever calls it: tvmffi.load_module, the official binding, C++ code, a
 * direct get_global_func("ffi.ModuleLoadFromFile") call). The library object
 * it makes dlcloses the file when the last module referring to it dies; but
 * a library that registered globals from its static initializers (apache-tvm-
 * ffi-orcjit's) leaves them in the registry, pointing into the unmapped code:
 * the next call of one crashes. So tvmffi puts its loader in front of the
 * runtime's: it calls the runtime's, and if the registry grew meanwhile it
 * marks the library RTLD_NODELETE, which makes the runtime's later dlclose
 * leave it mapped. A library that registered nothing still unloads with its
 * last module. The loader is plain C with no Python in it, so it serves
 * threads without the GIL and calls after interpreter shutdown alike.
 * tvmffi's own first dlopen of a library (library_probe.c, which runs its
 * static initializers before the runtime's loader sees it) follows the same
 * rule through tvmffi_pin_if_registered.
 */
#include "core.h"

#include <dlfcn.h>
#include <string.h>
#include <sys/stat.h>

static const char kLoaderName[] = "ffi.Module.load_from_file.so";

/* A global's handle by name (owned; NULL if missing or on error). */
static TVMFFIObjectHandle global_func(const char* name) {
  TVMFFIByteArray ba = {name, strlen(name)};
  TVMFFIObjectHandle h = NULL;
  if (TVMFFIFunctionGetGlobal(&ba, &h) != 0) {
    tvmffi_discard_ffi_error(); /* the caller treats it as missing */
    return NULL;
  }
  return h;
}

/* fn(arg) as an int, or -1 (the error, if any, discarded). */
static int64_t call_for_int(TVMFFIObjectHandle fn, const TVMFFIAny* arg, int32_t nargs) {
  TVMFFIAny out = {.type_index = kTVMFFINone};
  if (TVMFFIFunctionCall(fn, (TVMFFIAny*)arg, nargs, &out) != 0) {
    tvmffi_discard_ffi_error();
    return -1;
  }
  if (out.type_index == kTVMFFIInt) return out.v_int64;
  int64_t size = -1;
  if (out.type_index == kTVMFFIArray) size = ((TVMFFISeqCell*)tvmffi_cell(out.v_obj))->size;
  if (out.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(out.v_obj);
  return size;
}

/* Global functions plus types registered so far (-1 if the runtime cannot say). */
int64_t tvmffi_registrations(void) {
  TVMFFIObjectHandle names = global_func("ffi.FunctionListGlobalNamesFunctor");
  TVMFFIObjectHandle types = global_func("ffi.GetRegisteredTypeKeys");
  int64_t total = -1;
  if (names != NULL && types != NULL) {
    TVMFFIAny functor = {.type_index = kTVMFFINone};
    TVMFFIAny none = {.type_index = kTVMFFINone}; /* a valid pointer, never read */
    if (TVMFFIFunctionCall(names, &none, 0, &functor) == 0 &&
        functor.type_index == kTVMFFIFunction) {
      TVMFFIAny size_cmd = {.type_index = kTVMFFIInt, .v_int64 = -1}; /* functor(-1): count */
      int64_t n_funcs = call_for_int(functor.v_obj, &size_cmd, 1);
      int64_t n_types = call_for_int(types, &size_cmd, 0); /* no arguments read */
      if (n_funcs >= 0 && n_types >= 0) total = n_funcs + n_types;
    }
    if (functor.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(functor.v_obj);
  }
  if (names != NULL) TVMFFIObjectDecRef(names);
  if (types != NULL) TVMFFIObjectDecRef(types);
  return total;
}

/* The text of a String argument, NUL-terminated in buf; 0 if it is none or too long. */
static int path_text(const TVMFFIAny* v, char* buf, size_t cap) {
  const char* data;
  size_t size;
  if (v->type_index == kTVMFFISmallStr) {
    data = v->v_bytes;
    size = v->small_str_len;
  } else if (v->type_index == kTVMFFIStr) {
    const TVMFFIByteArray* s = tvmffi_cell(v->v_obj);
    data = s->data;
    size = s->size;
  } else {
    return 0;
  }
  if (size + 1 > cap || memchr(data, '\0', size) != NULL) return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  return 1;
}

/* A library already mapped runs no static initializers when loaded again:
 * nothing to count (the count costs ~10 us, this lookup ~1 us). */
#define ALREADY_MAPPED (-2)

int64_t tvmffi_registrations_before_load(const char* path) {
  /* The loader opens the file even to find it mapped: never a FIFO or device. */
  struct stat st;
  if (strchr(path, '/') != NULL && (stat(path, &st) != 0 || !S_ISREG(st.st_mode))) return -1;
  void* h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
  if (h == NULL) return tvmffi_registrations();
  dlclose(h);
  return ALREADY_MAPPED;
}

void tvmffi_pin_if_registered(const char* path, int64_t before) {
  if (before == ALREADY_MAPPED) return;
  /* Unknown counts pin too: keeping a library loaded is always safe. */
  if (before >= 0 && tvmffi_registrations() == before) return;
  void* h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
  if (h != NULL) dlclose(h); /* drops our reference; NODELETE keeps the mapping */
}

/* The loader registered in front of the runtime's (self: the runtime's loader). */
static int pinning_loader(void* self, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* result) {
  char path[4096];
  int named = nargs >= 1 && path_text(&args[0], path, sizeof path);
  int64_t before = named ? tvmffi_registrations_before_load(path) : -1;
  int rc = TVMFFIFunctionCall((TVMFFIObjectHandle)self, (TVMFFIAny*)args, nargs, result);
  if (rc == 0 && named) tvmffi_pin_if_registered(path, before);
  return rc;
}

static void release_loader(void* self) { TVMFFIObjectDecRef((TVMFFIObjectHandle)self); }

/* Puts pinning_loader in front of the runtime's `.so` loader, once per process. */
int tvmffi_library_pin_init(void) {
  TVMFFIObjectHandle current = global_func(kLoaderName);
  if (current == NULL) return 0; /* a runtime without a .so loader: nothing to guard */
  if (((TVMFFIFunctionCell*)tvmffi_cell(current))->safe_call == pinning_loader) {
    TVMFFIObjectDecRef(current); /* already in front (the extension initialized again) */
    return 0;
  }
  TVMFFIObjectHandle ours = NULL;
  if (TVMFFIFunctionCreate(current, pinning_loader, release_loader, &ours) != 0) {
    TVMFFIObjectDecRef(current);
    tvmffi_raise_ffi_error();
    return -1;
  }
  TVMFFIByteArray name = {kLoaderName, sizeof kLoaderName - 1};
  int rc = TVMFFIFunctionSetGlobal(&name, ours, 1);
  TVMFFIObjectDecRef(ours); /* the registry holds it (and it the runtime's loader) */
  if (rc != 0) {
    tvmffi_raise_ffi_error();
    return -1;
  }
  return 0;
}
