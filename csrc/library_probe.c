/*
 * The loader's view of a library before the runtime reads it (tvmffi.module).
 *
 * load_module must validate a library's embedded module tree
 * (__tvm_ffi__library_bin: the runtime trusts it) before the runtime reads it,
 * and should cost about what the runtime's own dlopen does. Reading the
 * file's symbol table to find out whether the array is there costs time in
 * proportion to the library's symbols (tens of milliseconds for 100k); the
 * dynamic loader answers the same question through its hash table once the
 * library is mapped. So load_module maps it first (as the runtime is about to,
 * running the same static initializers once), asks the loader, and hands the
 * reference back once the runtime holds its own. Exported functions are then
 * resolved on first use, not at load.
 */
#include "core.h"

#include <string.h>
#include <sys/stat.h>

#if defined(__unix__) || defined(__APPLE__)
#define TVMFFI_HAVE_DLFCN 1
#include <dlfcn.h>
#if defined(__linux__)
#include <link.h>
#endif
#endif

#define LIBRARY_BIN_SYMBOL "__tvm_ffi__library_bin"

#ifdef TVMFFI_HAVE_DLFCN
/* The file the loader mapped for `handle` ("" for the main program), or NULL
 * where the platform cannot tell. */
static const char* mapped_file(void* handle) {
#if defined(__linux__)
  struct link_map* map = NULL;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != NULL && map->l_name != NULL) {
    return map->l_name;
  }
#else
  (void)handle;
#endif
  return NULL;
}

/* Whether the library itself (not one of its dependencies, which dlsym also
 * searches) defines the embedded module tree. */
static int defines_library_bin(void* handle, const char* file) {
  void* sym = dlsym(handle, LIBRARY_BIN_SYMBOL);
  if (sym == NULL) return 0;
  Dl_info info;
  if (file == NULL || dladdr(sym, &info) == 0 || info.dli_fname == NULL) return 1; /* check it */
  return strcmp(info.dli_fname, file) == 0;
}

/* _core._library_probe(path): (handle, mapped file or None, defines the module
 * tree) once the dynamic loader has mapped `path`, or None when it would not
 * (missing, not a regular file, not loadable: load_module's checks then name
 * the cause). A path with a '/' is checked to be a regular file first: the
 * loader would block opening a FIFO. The handle goes back through
 * _library_release. */
static PyObject* library_probe(PyObject* self, PyObject* arg) {
  (void)self;
  if (!PyUnicode_Check(arg)) {
    PyErr_Format(PyExc_TypeError, "_library_probe expects a str path, not %.200s",
                 Py_TYPE(arg)->tp_name);
    return NULL;
  }
  PyObject* encoded = PyUnicode_EncodeFSDefault(arg);
  if (encoded == NULL) return NULL;
  const char* path = PyBytes_AS_STRING(encoded);
  void* handle = NULL;
  int regular = 1;
  /* Its static initializers run in the dlopen: what they register keeps it
   * loaded (the registry is read with the GIL held, as its builtins are). */
  int64_t before = tvmffi_registrations_before_load(path);
  Py_BEGIN_ALLOW_THREADS
  struct stat st;
  if (strchr(path, '/') != NULL) regular = stat(path, &st) == 0 && S_ISREG(st.st_mode);
  if (regular) handle = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
  Py_END_ALLOW_THREADS
  if (handle != NULL) tvmffi_pin_if_registered(path, before);
  Py_DECREF(encoded);
  if (handle == NULL) Py_RETURN_NONE;
  const char* file = mapped_file(handle);
  int has_bin = defines_library_bin(handle, file);
  PyObject* picked = file != NULL && file[0] != '\0' ? PyUnicode_DecodeFSDefault(file) : Py_NewRef(Py_None);
  PyObject* res = picked == NULL ? NULL : Py_BuildValue("(NNO)", PyLong_FromVoidPtr(handle), picked,
                                                        has_bin ? Py_True : Py_False);
  if (res == NULL) dlclose(handle);
  return res;
}

/* _core._library_release(handle): drop the reference _library_probe took. */
static PyObject* library_release(PyObject* self, PyObject* arg) {
  (void)self;
  void* handle = PyLong_AsVoidPtr(arg);
  if (handle == NULL) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "_library_release of a null handle");
    return NULL;
  }
  dlclose(handle);
  Py_RETURN_NONE;
}
#else
static PyObject* library_probe(PyObject* self, PyObject* arg) {
  (void)self;
  (void)arg;
  Py_RETURN_NONE; /* no dynamic loader to ask: load_module reads the file */
}

static PyObject* library_release(PyObject* self, PyObject* arg) {
  (void)self;
  (void)arg;
  Py_RETURN_NONE;
}
#endif

static PyMethodDef library_probe_methods[] = {
    {"_library_probe", library_probe, METH_O,
     "_library_probe(path): (handle, mapped file, defines __tvm_ffi__library_bin) or None."},
    {"_library_release", library_release, METH_O,
     "_library_release(handle): hand back the reference _library_probe took."},
    {NULL, NULL, 0, NULL},
};

int tvmffi_library_probe_init(PyObject* module) {
  return PyModule_AddFunctions(module, library_probe_methods);
}
