"""Compile the module test fixtures (C and C++ sources in this folder) with the system compiler.

Used by tests/test_module.py and benchmarks/bench_modules.py; nothing built here
is committed.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import tvmffi

HERE = os.path.dirname(os.path.abspath(__file__))

# fixture name -> (source file, compiler, links libtvm_ffi)
FIXTURES: dict[str, tuple[str, str, bool]] = {
    "plain": ("plain.c", "cc", True),
    "cpp": ("cpp.cc", "c++", True),
    "syslib": ("syslib.c", "cc", True),
    "nosym": ("nosym.c", "cc", False),
    "static_init": ("static_init.c", "cc", True),
    "alloc": ("alloc.c", "cc", True),
    "clash": ("clash.c", "cc", True),
}


def wheel_dirs() -> tuple[str, str]:
    """(include dir, lib dir) of the runtime wheel tvmffi uses."""
    lib_dir = os.path.dirname(tvmffi.lib_path())
    return os.path.join(os.path.dirname(lib_dir), "include"), lib_dir


def compiler(kind: str) -> str | None:
    """Path of a C (``cc``) or C++ (``c++``) compiler, or None."""
    names = ("cc", "gcc", "clang") if kind == "cc" else ("c++", "g++", "clang++")
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


def build(name: str, out_dir: str) -> str:
    """Compile fixture ``name`` into ``out_dir``/lib<name>.so and return its path."""
    source, kind, link = FIXTURES[name]
    cc = compiler(kind)
    if cc is None:
        raise RuntimeError(f"no {kind} compiler found")
    include_dir, lib_dir = wheel_dirs()
    out = os.path.join(out_dir, f"lib{name}.so")
    cmd = [cc, "-shared", "-fPIC", "-O2", "-o", out, os.path.join(HERE, source)]
    if kind == "c++":
        cmd.insert(1, "-std=c++17")
    cmd += ["-I", include_dir]
    if link:
        cmd += [f"-L{lib_dir}", "-ltvm_ffi", f"-Wl,-rpath,{lib_dir}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"compiling {source} failed:\n{' '.join(cmd)}\n{proc.stderr}")
    return out
