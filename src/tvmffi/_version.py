"""The version ``tvmffi.__version__`` answers: the official package's, whose runtime tvmffi loads.

tvmffi binds the runtime of the installed ``apache-tvm-ffi`` wheel and answers its
Python API, so a client that compares ``tvm_ffi.__version__`` with the runtime it was
built for (a compiled extension's ABI check) must see that wheel's version, as it
would on the official binding. tvmffi's own release is ``tvmffi.__tvmffi_version__``.
"""

from __future__ import annotations

import functools

from . import _core

#: The distribution that ships the runtime tvmffi loads.
RUNTIME_DISTRIBUTION = "apache-tvm-ffi"


@functools.cache
def official_version() -> str:
    """The installed ``apache-tvm-ffi`` version (e.g. ``0.1.15.post2``).

    Read from its metadata on first use (``importlib.metadata`` costs ~20 ms, so not at
    import); without the metadata (a runtime built from source), the loaded runtime's
    own ``major.minor.patch``.
    """
    import importlib.metadata  # import-time: ~20 ms, see the docstring

    try:
        return importlib.metadata.version(RUNTIME_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        version: str = _core.tvm_ffi_version()
        return version


def _version_tuple(version: str) -> tuple[int | str, ...]:
    """``"0.1.15.post2"`` -> ``(0, 1, 15, "post2")``: numeric parts as ints, others kept."""
    return tuple(int(part) if part.isdigit() else part for part in version.split("."))


# The names of the official ``_version`` module (a setuptools-scm file), answered on
# first use: reading the distribution's metadata is what makes them cost.
_NAMES = (
    "__version__",
    "version",
    "__version_tuple__",
    "version_tuple",
    "__commit_id__",
    "commit_id",
)
__all__ = list(_NAMES)


def __getattr__(name: str) -> object:
    if name in ("__version__", "version"):
        return official_version()
    if name in ("__version_tuple__", "version_tuple"):
        return _version_tuple(official_version())
    if name in ("__commit_id__", "commit_id"):
        return None  # the metadata of an installed wheel does not record its commit
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_NAMES))
