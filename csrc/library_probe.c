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

#if defined(__linux__)
/* Bytes from `addr` to the end of the loaded segment of `handle` holding it. */
static size_t segment_room(void* handle, const unsigned char* addr) {
  struct link_map* map = NULL;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == NULL) return 0;
  Dl_info info;
  const ElfW(Phdr)* phdr = NULL;
  if (dladdr(addr, &info) == 0) return 0;
  const ElfW(Ehdr)* ehdr = (const ElfW(Ehdr)*)info.dli_fbase;
  phdr = (const ElfW(Phdr)*)((const char*)ehdr + ehdr->e_phoff);
  for (int i = 0; i < ehdr->e_phnum; ++i) {
    if (phdr[i].p_type != PT_LOAD) continue;
    const unsigned char* start = (const unsigned char*)(map->l_addr + phdr[i].p_vaddr);
    const unsigned char* end = start + phdr[i].p_filesz;
    if (addr >= start && addr < end) return (size_t)(end - addr);
  }
  return 0;
}
#endif

/* The library's own embedded module tree (not a dependency's, which dlsym
 * also searches), or NULL; *room: the bytes it may span, from its symbol's
 * size, else up to the end of the mapped segment holding it (0: unknown). */
static const unsigned char* library_bin_of(void* handle, const char* file, size_t* room) {
  const unsigned char* sym = dlsym(handle, LIBRARY_BIN_SYMBOL);
  *room = 0;
  if (sym == NULL) return NULL;
#if defined(__linux__)
  Dl_info info;
  const ElfW(Sym)* entry = NULL;
  if (dladdr1(sym, &info, (void**)&entry, RTLD_DL_SYMENT) == 0) return sym;
  if (file != NULL && info.dli_fname != NULL && strcmp(info.dli_fname, file) != 0) return NULL;
  if (entry != NULL && entry->st_size != 0) {
    *room = (size_t)entry->st_size;
  } else {
    *room = segment_room(handle, sym);
  }
#else
  Dl_info info;
  if (file != NULL && dladdr(sym, &info) != 0 && info.dli_fname != NULL &&
      strcmp(info.dli_fname, file) != 0) {
    return NULL;
  }
#endif
  return sym;
}

/* The array the runtime will read, copied from the mapped library (not read
 * from the file: a path mapped earlier and replaced on disk since is not
 * mapped again, so the file would not be what the runtime walks). Its first
 * 8 bytes say how many follow; at most `room` bytes are read (all of them
 * when the header claims more, so that the check names the mismatch). */
static PyObject* mapped_library_bin(const unsigned char* bin, size_t room) {
  if (room < 8) {
    return PyBytes_FromStringAndSize((const char*)bin, (Py_ssize_t)room);
  }
  uint64_t nbytes;
  memcpy(&nbytes, bin, sizeof(nbytes));
  size_t take = nbytes <= room - 8 ? (size_t)nbytes + 8 : room;
  return PyBytes_FromStringAndSize((const char*)bin, (Py_ssize_t)take);
}

/* _core._library_probe(path): (handle, mapped file or None, the module tree)
 * once the dynamic loader has mapped `path`, or None when it would not
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
  size_t room;
  const unsigned char* bin = library_bin_of(handle, file, &room);
  PyObject* tree = bin == NULL ? Py_NewRef(Py_None)
                   : room == 0 ? Py_NewRef(Py_True) /* size unknown: the file is read */
                               : mapped_library_bin(bin, room);
  PyObject* picked = file != NULL && file[0] != '\0' ? PyUnicode_DecodeFSDefault(file) : Py_NewRef(Py_None);
  PyObject* res = picked == NULL || tree == NULL
                      ? NULL
                      : Py_BuildValue("(NOO)", PyLong_FromVoidPtr(handle), picked, tree);
  Py_XDECREF(picked);
  Py_XDECREF(tree);
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
     "_library_probe(path): (handle, mapped file, __tvm_ffi__library_bin as mapped: bytes, "
     "True when its size is unknown, None when absent) or None."},
    {"_library_release", library_release, METH_O,
     "_library_release(handle): hand back the reference _library_probe took."},
    {NULL, NULL, 0, NULL},
};

int tvmffi_library_probe_init(PyObject* module) {
  return PyModule_AddFunctions(module, library_probe_methods);
}
