"""``python -m tvmffi.config``: paths and flags for compiling against the TVM FFI runtime.

The same options and output as the official ``tvm-ffi-config``
(``python -m tvm_ffi.config``), answered from :mod:`tvmffi.libinfo`.
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


def _lines(args: argparse.Namespace) -> list[str]:
    windows = sys.platform.startswith("win32")
    include = f"-I{libinfo.find_include_path()} -I{libinfo.find_dlpack_include_path()}"
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
        ("cxxflags", lambda: include + " -std=c++17"),
        ("cflags", lambda: include),
        ("libs", libinfo.find_windows_implib if windows else (lambda: "-ltvm_ffi")),
    )
    for name, answer in answers:
        if getattr(args, name):
            out.append(answer())
    if args.ldflags and not windows:
        out.append(f"-L{_libdir()}")
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
