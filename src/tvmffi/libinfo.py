"""Where the TVM FFI runtime's files are: library, headers, CMake package, sources.

Answers with the files of the installed ``apache-tvm-ffi`` wheel, the very
runtime tvmffi loads, so paths and flags agree with the official binding's
``tvm_ffi.libinfo`` and ``tvm-ffi-config``. Library lookup by package and
target name (``load_lib_ctypes``, ``load_lib_module``) searches the wheel's
RECORD first, then the given and usual build directories and the library path.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable, Iterable
from contextlib import suppress
from pathlib import Path

from . import _lib
from .module import Module, load_module

__all__ = [
    "find_cmake_path",
    "find_cython_lib",
    "find_dlpack_include_path",
    "find_include_path",
    "find_libtvm_ffi",
    "find_python_helper_include_path",
    "find_source_path",
    "find_windows_implib",
    "include_paths",
    "load_lib_ctypes",
    "load_lib_module",
]


def _wheel_dir() -> Path:
    return Path(_lib._package_dir()).resolve()


def _existing(path: Path, what: str, is_file: bool = False) -> str:
    if path.is_file() if is_file else path.is_dir():
        return str(path.resolve())
    raise RuntimeError(f"Cannot find {what} (looked for {path})")


def find_libtvm_ffi() -> str:
    """Path of the ``libtvm_ffi`` shared library in use."""
    return _lib.lib_path()


def find_windows_implib() -> str:
    """Path of the Windows import library ``tvm_ffi.lib`` (Windows wheels only)."""
    return _existing(Path(find_libtvm_ffi()).parent / "tvm_ffi.lib", "implib tvm_ffi.lib", True)


def find_source_path() -> str:
    """Home of the packaged runtime sources (the directory holding ``src``)."""
    top = _wheel_dir()
    _existing(top / "src", "packaged source path")
    return str(top)


def find_cmake_path() -> str:
    """Directory of the runtime's CMake package (``tvm_ffi-config.cmake``)."""
    return _existing(_wheel_dir() / "share" / "cmake" / "tvm_ffi", "cmake path")


def find_include_path() -> str:
    """Directory of the runtime's C/C++ headers (``tvm/ffi/c_api.h``)."""
    return _existing(_wheel_dir() / "include", "include path")


def find_dlpack_include_path() -> str:
    """Directory holding the ``dlpack`` headers."""
    path = _wheel_dir() / "include"
    _existing(path / "dlpack", "dlpack include path")
    return str(path)


def find_python_helper_include_path() -> str:
    """Directory of ``tvm_ffi_python_helpers.h``."""
    path = _wheel_dir() / "include"
    _existing(path / "tvm_ffi_python_helpers.h", "python helper include path", True)
    return str(path)


def find_cython_lib() -> str:
    """Path of the official binding's compiled core (``tvm_ffi/core*.so``)."""
    found = sorted(p for p in _wheel_dir().glob("core.*") if p.suffix in (".so", ".pyd"))
    if not found:
        raise RuntimeError("Cannot find tvm cython path.")
    return str(found[0].resolve())


def include_paths() -> list[str]:
    """All include directories FFI compilation needs, sorted, without duplicates."""
    return sorted(
        {find_include_path(), find_dlpack_include_path(), find_python_helper_include_path()}
    )


# Directories to search before the standard places (``extra_lib_paths``).
_Dirs = list[Path] | None


def load_lib_ctypes(
    package: str, target_name: str, mode: str, extra_lib_paths: _Dirs = None
) -> ctypes.CDLL:
    """Load library ``target_name`` of distribution ``package`` with ctypes.

    ``mode`` names a ctypes constant (``"RTLD_GLOBAL"`` or ``"RTLD_LOCAL"``).
    """
    path = _find_library_by_basename(package, target_name, extra_lib_paths)
    return ctypes.CDLL(str(path), getattr(ctypes, mode))


def load_lib_module(
    package: str,
    target_name: str,
    keep_module_alive: bool = True,
    extra_lib_paths: _Dirs = None,
) -> Module:
    """Load library ``target_name`` of distribution ``package`` as an FFI :class:`Module`."""
    found = _find_library_by_basename(package, target_name, extra_lib_paths)
    return load_module(str(found), keep_module_alive=keep_module_alive)


def _library_names(target_name: str) -> tuple[str, ...]:
    if sys.platform.startswith("win32"):
        return (f"{target_name}.dll",)
    if sys.platform.startswith("darwin"):
        return (f"lib{target_name}.dylib", f"lib{target_name}.so")
    return (f"lib{target_name}.so",)


def _from_record(package: str, names: tuple[str, ...]) -> Path | None:
    """The library as listed in the installed distribution's RECORD, if it is."""
    import importlib.metadata  # import-time: ~20 ms (email.*), only this lookup needs it

    try:
        dist = importlib.metadata.distribution(package)
        for entry in dist.files or []:
            if entry.name in names:
                path = Path(str(dist.locate_file(entry))).resolve()
                if path.is_file():
                    return path
    except (importlib.metadata.PackageNotFoundError, OSError):
        pass
    return None


def _env_dirs() -> list[Path]:
    keys = (
        ("PATH",)
        if sys.platform.startswith("win32")
        else (
            ("DYLD_LIBRARY_PATH", "PATH")
            if sys.platform.startswith("darwin")
            else ("LD_LIBRARY_PATH", "PATH")
        )
    )
    out: list[Path] = []
    for key in keys:
        out.extend(Path(p.strip()) for p in os.environ.get(key, "").split(os.pathsep) if p.strip())
    return out


def _find_library_by_basename(
    package: str,
    target_name: str,
    extra_lib_paths: _Dirs = None,
    *,
    use_fallback_build_path: bool = True,
    use_env_path: bool = True,
) -> Path:
    """Resolved path of library ``target_name`` of distribution ``package``.

    Searched in order: the distribution's RECORD, ``extra_lib_paths``, the
    wheel's ``lib`` and ``build/lib`` directories, then the library path and
    ``PATH``. Raises ``TypeError`` for a non-``Path`` in ``extra_lib_paths`` and
    ``RuntimeError`` (listing the directories searched) when not found.
    """
    for i, p in enumerate(extra_lib_paths or ()):
        if not isinstance(p, Path):
            raise TypeError(
                f"extra_lib_paths[{i}] must be a pathlib.Path, got {type(p).__name__}: {p!r}"
            )
    names = _library_names(target_name)
    found = _from_record(package, names)
    if found is not None:
        return found
    dirs: list[Path] = list(extra_lib_paths or ())
    if use_fallback_build_path:
        dirs += [_wheel_dir() / "build" / "lib", _wheel_dir() / "lib"]
    if use_env_path:
        dirs += _env_dirs()
    found_path = _resolve_and_validate([d / name for d in dirs for name in names], Path.is_file)
    if found_path is not None:
        return Path(found_path)
    searched = "\n  ".join(str(d) for d in dirs)
    raise RuntimeError(
        f"Cannot find library {', '.join(names)}; searched directories:\n  {searched}"
    )


def _accepted(candidate: Path, cond: Callable[[Path], bool | Path]) -> str | None:
    """What ``cond`` makes of one candidate, resolved: a path string, or ``None``."""
    try:
        real = candidate.resolve()
    except (OSError, RuntimeError):  # unreadable, or a symlink loop (before 3.13)
        return None
    with suppress(AssertionError):  # a failed check passes the candidate over
        answer = cond(real)
        return str(answer if isinstance(answer, Path) else real) if answer else None
    return None


def _resolve_and_validate(paths: Iterable[Path], cond: Callable[[Path], bool | Path]) -> str | None:
    """The first of ``paths`` that ``cond`` accepts, as a string; ``None`` if none does.

    Each path is resolved before ``cond`` sees it. ``cond`` answers ``True`` (take the
    resolved path), a ``Path`` (take that one instead) or ``False``; a candidate whose
    check fails an assertion, or that cannot be resolved, is passed over. Other
    exceptions from ``cond`` propagate. Candidates are tried lazily, in order.
    """
    verdicts = (_accepted(candidate, cond) for candidate in paths)
    return next((found for found in verdicts if found is not None), None)
