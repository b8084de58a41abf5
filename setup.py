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
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

# The start-up hook of hosting (tvmffi.hosting): a .pth file at the root of site-packages,
# which `site` runs at interpreter start-up; inactive unless TVMFFI_HOST is set.
HOST_PTH = "tvmffi_host.pth"


class BuildPyWithPth(build_py):
    """build_py that also puts the hosting .pth file at the root of the wheel."""

    def run(self) -> None:
        super().run()
        self.copy_file(os.path.join("src", HOST_PTH), os.path.join(self.build_lib, HOST_PTH))


def _tvm_ffi_root() -> str:
    # A cross build (tools/aarch64.py) names the target's apache-tvm-ffi package directory:
    # the build interpreter's own one holds a libtvm_ffi of the wrong architecture.
    cross = os.environ.get("TVMFFI_TVM_FFI_ROOT")
    if cross:
        if not os.path.isfile(os.path.join(cross, "include", "tvm", "ffi", "c_api.h")):
            raise RuntimeError(f"TVMFFI_TVM_FFI_ROOT={cross} is not an apache-tvm-ffi package")
        return cross
    # find_spec on a top-level package locates it without executing its __init__.
    spec = importlib.util.find_spec("tvm_ffi")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("apache-tvm-ffi must be installed to build tvmffi")
    return next(iter(spec.submodule_search_locations))


class BuildExtCxx(build_ext):
    """build_ext that compiles the one C++ file (csrc/tensor/cxx_call.cc) as C++17.

    The C flags name the C standard; a C++ source gets the C++ one instead.
    """

    def build_extensions(self) -> None:
        compile_one = self.compiler._compile

        def _compile(obj, src, ext, cc_args, extra_postargs, pp_opts):  # type: ignore[no-untyped-def]
            if src.endswith(".cc"):
                extra_postargs = [a for a in extra_postargs if a != "-std=c11"] + ["-std=c++17"]
            compile_one(obj, src, ext, cc_args, extra_postargs, pp_opts)

        self.compiler._compile = _compile
        super().build_extensions()


root = _tvm_ffi_root()
# csrc/tensor/ holds the tensor route (its entry is csrc/tensor/import.c).
sources = sorted(glob.glob(os.path.join("csrc", "*.c")) + glob.glob(os.path.join("csrc", "*", "*.c")))
# One C++ file: a call into torch whose C++ exceptions must be caught (see the file).
sources += sorted(glob.glob(os.path.join("csrc", "*", "*.cc")))
extra_compile_args = ["-std=c11", "-O3", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden"]
# The call path crosses files (function.c -> any.c -> object.c); link-time
# optimization lets those small functions inline into one another.
extra_link_args = ["-O3", "-flto"]
if os.environ.get("TVMFFI_SANITIZE") == "thread":  # ThreadSanitizer (docs/guide/development.md)
    extra_compile_args += ["-fsanitize=thread", "-fno-omit-frame-pointer", "-O1", "-g"]
    extra_link_args = ["-fsanitize=thread"]
elif os.environ.get("TVMFFI_SANITIZE"):
    extra_compile_args += [
        "-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-O1", "-g", "-DTVMFFI_SANITIZE"
    ]
    extra_link_args = ["-fsanitize=address,undefined"]
else:
    extra_compile_args += ["-flto"]

core = Extension(
    "tvmffi._core",
    sources=sources,
    depends=sorted(glob.glob(os.path.join("csrc", "*.h")) + glob.glob(os.path.join("csrc", "*", "*.h"))),
    include_dirs=[os.path.join(root, "include"), "csrc"],
    library_dirs=[os.path.join(root, "lib")],
    libraries=["tvm_ffi"] + (["dl"] if sys.platform.startswith("linux") else []),
    extra_compile_args=extra_compile_args,
    extra_link_args=extra_link_args,
)

setup(ext_modules=[core], cmdclass={"build_py": BuildPyWithPth, "build_ext": BuildExtCxx})
