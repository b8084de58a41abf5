"""Compilers, default flags and the runtime's headers and library: what a build runs.

The defaults follow the official ``tvm_ffi.cpp`` (C: ``-fPIC -O2``; C++:
``-std=c++17 -fPIC -O2``; CUDA: ``-Xcompiler -fPIC -std=c++17 -O2`` plus the GPU
architecture), with the runtime's include directory first. Every shared library
is linked with ``-Wl,-z,defs``: a symbol that nothing linked defines (a kernel
declared but never defined, a C++ definition of a kernel called with C linkage,
a library left off the link such as OpenMP's) fails the build and is named,
instead of failing at load or on the first call. Pass ``-Wl,-z,undefs`` in the
linker flags for a symbol that the loading process itself provides.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys

from .. import _lib, libinfo

LANG_OF_SUFFIX = {
    ".c": "c",
    ".cc": "c++",
    ".cpp": "c++",
    ".cxx": "c++",
    ".cu": "cuda",
    ".o": "object",
    ".obj": "object",
}

_SEARCH = {"c": ("cc", "gcc", "clang"), "c++": ("c++", "g++", "clang++"), "cuda": ("nvcc",)}
_ENV = {"c": "CC", "c++": "CXX", "cuda": "NVCC"}


def compiler(lang: str) -> str:
    """The compiler for ``lang`` ("c", "c++", "cuda"): ``$CC``/``$CXX``/``$NVCC`` or a search.

    nvcc is also looked for under ``$CUDA_HOME``/``$CUDA_PATH`` and ``/usr/local/cuda``.
    Raises ``RuntimeError`` naming what was looked for when none is found.
    """
    override = os.environ.get(_ENV[lang])
    if override:
        return override
    for name in _SEARCH[lang]:
        found = shutil.which(name)
        if found:
            return found
    if lang == "cuda":
        found = _cuda_home_nvcc()
        if found:
            return found
    looked = ", ".join(_SEARCH[lang])
    raise RuntimeError(f"no {lang} compiler found (looked for {looked}; set ${_ENV[lang]})")


def _cuda_home_nvcc() -> str | None:
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.path.isfile(os.path.join(root, "bin", "nvcc")):
            return os.path.join(root, "bin", "nvcc")
    return None


def binutil(name: str) -> str:
    """A binutils program (``ld``, ``objcopy``): ``$LD``/``$OBJCOPY`` or a PATH search."""
    override = os.environ.get(name.upper())
    if override:
        return override
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} not found (install binutils or set ${name.upper()})")
    return found


def identity(tool: str) -> str:
    """What identifies a compiler in a cache key: its resolved path, size and mtime.

    A ``stat`` instead of running ``--version``: a cached build is then a load
    without starting any process, and an upgraded compiler still changes the key.
    """
    path = shutil.which(tool) or tool
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except OSError:
        return path
    return f"{real}:{st.st_size}:{st.st_mtime_ns}"


def cuda_home() -> str:
    """The CUDA toolkit root: ``$CUDA_HOME``, ``$CUDA_PATH``, nvcc's, or ``/usr/local/cuda``.

    nvcc's root counts only when it holds the runtime's headers: an ``nvcc`` on
    PATH may be a wrapper script outside the toolkit.
    """
    for var in ("CUDA_HOME", "CUDA_PATH"):
        value = os.environ.get(var)
        if value:
            return value
    candidates = []
    nvcc = os.environ.get("NVCC") or shutil.which("nvcc")
    if nvcc:
        candidates.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
    candidates.append("/usr/local/cuda")
    for root in candidates:
        if os.path.isfile(os.path.join(root, "include", "cuda_runtime.h")):
            return root
    raise RuntimeError("no CUDA toolkit found (no include/cuda_runtime.h): set CUDA_HOME")


@functools.cache
def cuda_arch_flags() -> tuple[str, ...]:
    """``-gencode`` flags: ``$TVM_FFI_CUDA_ARCH_LIST`` ("8.0 9.0a"), else the GPU's.

    Without either (no GPU visible), nvcc's default architecture is used.
    """
    listed = os.environ.get("TVM_FFI_CUDA_ARCH_LIST")
    if listed:
        flags = []
        for arch in listed.replace(";", " ").split():
            major, dot, minor = arch.partition(".")
            if not dot or not major.isdigit() or not minor[:1].isdigit():
                raise ValueError(f"invalid CUDA architecture {arch!r} in TVM_FFI_CUDA_ARCH_LIST")
            flags.append(f"-gencode=arch=compute_{major}{minor},code=sm_{major}{minor}")
        return tuple(flags)
    try:
        proc = subprocess.run(
            ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return ()
    cap = proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout else ""
    major, _, minor = cap.partition(".")
    if major.isdigit() and minor.isdigit():
        return (f"-gencode=arch=compute_{major}{minor},code=sm_{major}{minor}",)
    return ()


@functools.cache
def include_dirs() -> tuple[str, ...]:
    """The runtime's header directories (TVM FFI, then DLPack when it lies elsewhere)."""
    return tuple(dict.fromkeys([libinfo.find_include_path(), libinfo.find_dlpack_include_path()]))


def lib_dir() -> str:
    """The directory of the ``libtvm_ffi`` in use."""
    return os.path.dirname(_lib.lib_path())


def compile_flags(lang: str) -> list[str]:
    """Default flags of one language's compile step (before the caller's own)."""
    if lang == "c":
        return ["-fPIC", "-O2"]
    if lang == "c++":
        return ["-std=c++17", "-fPIC", "-O2"]
    return ["-Xcompiler", "-fPIC", "-std=c++17", "-O2", *cuda_arch_flags()]


def link_flags(with_cuda: bool) -> list[str]:
    """Default flags of the link step: shared, every symbol defined, the runtime linked."""
    libdir = lib_dir()
    flags = ["-shared", f"-L{libdir}", "-ltvm_ffi", f"-Wl,-rpath,{libdir}"]
    if sys.platform.startswith("linux"):  # GNU ld / lld / gold; Apple's ld has no -z defs
        flags.insert(1, "-Wl,-z,defs")
    if with_cuda:
        cuda_lib = os.path.join(cuda_home(), "lib64")
        flags += [f"-L{cuda_lib}", "-lcudart", f"-Wl,-rpath,{cuda_lib}"]
    return flags
