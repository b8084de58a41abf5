"""The runtime loader for ``tvmffi_dso`` modules embedded in a library's ``__tvm_ffi__library_bin``.

Importing ``tvmffi`` registers the global function
``ffi.Module.load_from_bytes.tvmffi_dso``. The runtime calls it with the
embedded bytes (a whole shared-library file, see
:func:`tvmffi.codegen._embed.library_bin_c_source`) while it loads the outer
library -- whether the load came from ``tvmffi.load_module`` or from the
official binding's ``tvm_ffi.load_module`` in the same process -- and expects
a ``Module`` back.

The bytes are written to a fresh private file (``mkstemp``: mode 0600, a unique
name, in ``tempfile.gettempdir()`` so ``TMPDIR`` moves it), loaded through the
runtime's own ``.so`` loader, and the file is unlinked right away: a dlopen'ed
file stays mapped after its name is gone, so nothing is left behind, even if
the process crashes later. A unique name per load also matters because the
dynamic loader returns an already-loaded library when the same path is opened
twice; every embedded copy is therefore its own library instance (its own
static data), as with two different files. On Windows a loaded DLL cannot be
deleted, so the file is removed at interpreter exit instead (best effort).
A temp directory mounted ``noexec`` makes dlopen fail; the error says so and
points at ``TMPDIR``.

This module lives outside :mod:`tvmffi.codegen` so that ``import tvmffi``
does not import the code generator.

The loader is registered only when no function of that name exists yet, so a
second copy of tvmffi, or another runtime that owns the kind, is never
overridden.
"""

from __future__ import annotations

import atexit
import contextlib
import os

from .module import Module, _load_module
from .registry import get_global_func, register_global_func

DSO_KIND = "tvmffi_dso"
"""Kind of a module entry whose payload is a whole shared-library file."""

__all__ = ["DSO_KIND", "LOADER_NAME", "load_dso_from_bytes", "register"]

LOADER_NAME = "ffi.Module.load_from_bytes." + DSO_KIND
"""The global function the runtime calls for each ``tvmffi_dso`` entry."""

_LIBRARY_MAGIC = (
    b"\x7fELF",  # ELF
    b"\xcf\xfa\xed\xfe",  # Mach-O 64-bit, little endian
    b"\xce\xfa\xed\xfe",  # Mach-O 32-bit, little endian
    b"\xca\xfe\xba\xbe",  # Mach-O universal
    b"MZ",  # PE (Windows DLL)
)

_WINDOWS_LEFTOVERS: list[str] = []


def load_dso_from_bytes(payload: bytes) -> Module:
    """Load the shared library held in ``payload`` as a module (the ``tvmffi_dso`` loader).

    Raises ``TypeError`` for a non-bytes payload and ``ValueError`` when the
    bytes are not a loadable module library.
    """
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise TypeError(f"{DSO_KIND} payload must be bytes, not {type(payload).__name__}")
    data = bytes(payload)
    if not data.startswith(_LIBRARY_MAGIC):
        raise ValueError(
            f"{DSO_KIND} payload ({len(data)} bytes, starting {data[:8]!r}) is not a shared library"
        )
    import tempfile  # import-time: at the top it costs `import tvmffi` about 3 ms

    fd, path = tempfile.mkstemp(prefix="tvmffi-embedded-", suffix=".so")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        try:
            return _load_module(path, data)  # the file holds `data`: no need to read it
        except ValueError as err:
            raise ValueError(
                f"cannot load the embedded {DSO_KIND} module ({len(data)} bytes) from the "
                f"temporary file {path}: {err} (if the temp directory is mounted noexec, "
                "point TMPDIR elsewhere)"
            ) from None
    finally:
        _discard(path)


def _discard(path: str) -> None:
    if os.name == "nt":  # a loaded DLL cannot be deleted on Windows
        _WINDOWS_LEFTOVERS.append(path)
        return
    with contextlib.suppress(OSError):
        os.unlink(path)


@atexit.register
def _remove_leftovers() -> None:
    for path in _WINDOWS_LEFTOVERS:
        with contextlib.suppress(OSError):
            os.unlink(path)


def register() -> bool:
    """Register :data:`LOADER_NAME` unless some loader of that name exists; True if it did."""
    if get_global_func(LOADER_NAME, allow_missing=True) is not None:
        return False  # the name is taken (another tvmffi copy, another runtime): keep theirs
    try:
        register_global_func(LOADER_NAME, load_dso_from_bytes)
    except RuntimeError:  # taken in between
        return False
    return True


register()
