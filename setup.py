"""Build script for the tvmffi C extension.

The extension compiles against the C headers shipped in the ``apache-tvm-ffi``
wheel and links against its ``libtvm_ffi``. At import time tvmffi preloads the
very library file that ``tvm_ffi.libinfo.find_libtvm_ffi()`` reports, so the
dynamic loader resolves ``libtvm_ffi.so`` (by soname) to that one copy.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import sys

from setuptools import Extension, setup


def _tvm_ffi_root() -> str:
    # find_spec on a top-level package locates it without executing its __init__.
    spec = importlib.util.find_spec("tvm_ffi")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("apache-tvm-ffi must be installed to build tvmffi")
    return next(iter(spec.submodule_search_locations))


root = _tvm_ffi_root()
sources = sorted(glob.glob(os.path.join("csrc", "*.c")))
extra_compile_args = ["-std=c11", "-O3", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden"]
# The call path crosses files (function.c -> any.c -> object.c); link-time
# optimization lets those small functions inline into one another.
extra_link_args = ["-O3", "-flto"]
if os.environ.get("TVMFFI_SANITIZE"):
    extra_compile_args += [
        "-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-O1", "-g", "-DTVMFFI_SANITIZE"
    ]
    extra_link_args = ["-fsanitize=address,undefined"]
else:
    extra_compile_args += ["-flto"]

core = Extension(
    "tvmffi._core",
    sources=sources,
    depends=sorted(glob.glob(os.path.join("csrc", "*.h"))),
    include_dirs=[os.path.join(root, "include"), "csrc"],
    library_dirs=[os.path.join(root, "lib")],
    libraries=["tvm_ffi"] + (["dl"] if sys.platform.startswith("linux") else []),
    extra_compile_args=extra_compile_args,
    extra_link_args=extra_link_args,
)

setup(ext_modules=[core])
