"""One TVM FFI runtime per process: a second ``libtvm_ffi`` is detected, never left to abort.

Two runtimes in one process (a package shipping its own ``libtvm_ffi``, a library
linked against another runtime's file) keep two type tables and two registries:
objects made by one are foreign to the other, and the usual outcome is an abort or
a segfault with no message. tvmffi looks at what the dynamic loader has mapped
(``/proc/self/maps``) when it is imported and after :func:`tvmffi.load_module`
maps a library, and compares every ``libtvm_ffi`` found with the one it loaded:

- another file with the same bytes (the same build at two paths, e.g. a copy in
  a second wheel): a ``RuntimeWarning`` naming both, then it goes on;
- another build: ``ImportError`` at import, ``RuntimeError`` from ``load_module``,
  naming both files and the versions they report.

``load_module`` of a runtime file itself (another ``libtvm_ffi``) is refused before
it is mapped. What the guard cannot stop: a second runtime mapped *after* tvmffi
by other code (``ctypes.CDLL``, a library whose ``DT_NEEDED`` names another
runtime's soname) runs its static initializers inside the dynamic loader, where
they register into the first runtime and may abort before any check runs; one
mapped without aborting is reported by the next ``load_module``. On systems
without ``/proc/self/maps`` only the file-name check applies.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import warnings

__all__ = ["check"]

_RUNTIME_FILE = re.compile(r"libtvm_ffi\.so(\.[0-9.]+)?\Z")
_warned: set[str] = set()


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("patch", ctypes.c_uint32)]


def mapped_runtimes() -> list[str]:
    """The real paths of the ``libtvm_ffi`` files mapped in this process (none known
    where ``/proc/self/maps`` cannot be read)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    found: dict[str, None] = {}
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) == 6 and _RUNTIME_FILE.search(os.path.basename(parts[5])):
            path = parts[5].removesuffix(" (deleted)")
            found[os.path.realpath(path)] = None
    return list(found)


def _version(path: str) -> str:
    """``major.minor.patch`` the mapped runtime at ``path`` reports, or "unknown"."""
    try:
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LOCAL)
        get = lib.TVMFFIGetVersion
    except (OSError, AttributeError):
        return "unknown"
    v = _Version()
    get.argtypes = [ctypes.POINTER(_Version)]
    get.restype = None
    get(ctypes.byref(v))
    return f"{v.major}.{v.minor}.{v.patch}"


def _digest(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def check_file(ours: str, path: str) -> None:
    """Before ``load_module`` maps ``path``: a file that is itself a ``libtvm_ffi`` other
    than ``ours`` would be a second runtime, whose static initializers register into
    the first one and abort the process inside the dynamic loader. ``RuntimeError``."""
    real = os.path.realpath(path)
    if real == ours or not _RUNTIME_FILE.search(os.path.basename(real)):
        return
    same = _digest(real) == _digest(ours)
    raise RuntimeError(
        f"tvmffi: refusing to load {path}: it is a TVM FFI runtime (libtvm_ffi), "
        + ("the same build as" if same else "another file than")
        + f" the one tvmffi uses, {ours} (version {_version(ours)}); a second runtime in "
        "one process aborts or crashes when the two meet. Load modules built against "
        "tvmffi's runtime (tvmffi.libinfo)"
    )


def check(ours: str, error: type[Exception], culprit: str | None = None) -> None:
    """Raise ``error`` when a ``libtvm_ffi`` other than ``ours`` (a real path), of
    another build, is mapped; warn once when it is the same build at another path.
    ``culprit``: the library whose loading mapped it, named in the message."""
    others = [p for p in mapped_runtimes() if p != ours]
    if not others:
        return
    mine = _digest(ours)
    for other in others:
        if mine is not None and _digest(other) == mine:
            if other not in _warned:
                _warned.add(other)
                warnings.warn(
                    f"tvmffi: the TVM FFI runtime is mapped twice in this process, at {ours} "
                    f"and at {other}: the same build (identical files), so tvmffi goes on; "
                    "objects made through either copy are still separate",
                    RuntimeWarning,
                    stacklevel=3,
                )
            continue
        by = f" (mapped by loading {culprit})" if culprit else ""
        raise error(
            f"tvmffi: a second TVM FFI runtime is loaded in this process{by}: {other} "
            f"(version {_version(other)}), while tvmffi uses {ours} (version {_version(ours)}). "
            "Two runtimes keep separate type tables and registries and abort or crash when "
            "their objects meet. Use one libtvm_ffi: build the library against the runtime "
            "tvmffi uses (tvmffi.libinfo), or install one apache-tvm-ffi"
        )
