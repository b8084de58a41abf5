"""``python -m tvmffi.config``: paths and flags for compiling against the TVM FFI runtime.

The same options and output as the official ``tvm-ffi-config``
(``python -m tvm_ffi.config``), answered from :mod:`tvmffi.libinfo`; also
``python -m tvmffi config ...``. The flags are functions too: :func:`cflags`,
:func:`cxxflags`, :func:`ldflags`, :func:`libs`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import libinfo

_FLAGS = (
    ("--includedir", "Print include directory"),
    ("--dlpack-includedir", "Print dlpack include directory"),
    ("--cmakedir", "Print cmake directory"),
    ("--sourcedir", "Print source directory"),
    ("--libfiles", "Fully qualified library filenames"),
    ("--libdir", "Print library directory"),
    ("--libs", "Libraries to be linked"),
    ("--cython-lib-path", "Print cython path"),
    ("--cxxflags", "Print cxx flags"),
    ("--cflags", "Print c flags"),
    ("--ldflags", "Print ld flags"),
)


def _libdir() -> str:
    return str(Path(libinfo.find_libtvm_ffi()).parent)


# The flags as functions, for build scripts written in Python.
def cflags() -> str:
    """C compile flags: ``-I`` the runtime's and DLPack's include directories, each once
    (the wheel ships DLPack's headers in the runtime's include directory)."""
    dirs = dict.fromkeys([libinfo.find_include_path(), libinfo.find_dlpack_include_path()])
    return " ".join(f"-I{d}" for d in dirs)


def cxxflags() -> str:
    """C++ compile flags: :func:`cflags` and the standard the headers need (C++17)."""
    return f"{cflags()} -std=c++17"


def ldflags() -> str:
    """Link flags: ``-L`` the library directory (:func:`libs` names the library)."""
    return f"-L{_libdir()}"


def libs() -> str:
    """The library to link: ``-ltvm_ffi`` (the import library's path on Windows)."""
    return libinfo.find_windows_implib() if sys.platform.startswith("win32") else "-ltvm_ffi"


def _lines(args: argparse.Namespace) -> list[str]:
    windows = sys.platform.startswith("win32")
    out: list[str] = []
    # Printed in this order, whatever order the options were given in.
    answers = (
        ("includedir", libinfo.find_include_path),
        ("dlpack_includedir", libinfo.find_dlpack_include_path),
        ("cmakedir", libinfo.find_cmake_path),
        ("libdir", _libdir),
        ("libfiles", libinfo.find_windows_implib if windows else libinfo.find_libtvm_ffi),
        ("sourcedir", libinfo.find_source_path),
        ("cython_lib_path", libinfo.find_cython_lib),
        ("cxxflags", cxxflags),
        ("cflags", cflags),
        ("libs", libs),
    )
    for name, answer in answers:
        if getattr(args, name):
            out.append(answer())
    if args.ldflags and not windows:
        out.append(ldflags())
    return out


def main(argv: list[str] | None = None) -> None:
    """Parse the options and print the asked paths and flags, one per line."""
    parser = argparse.ArgumentParser(
        description="Get various configuration information needed to compile with tvm-ffi"
    )
    for flag, text in _FLAGS:
        parser.add_argument(flag, action="store_true", help=text)
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    if not argv:
        parser.print_help()
        return
    for line in _lines(args):
        print(line)


if __name__ == "__main__":
    main()
