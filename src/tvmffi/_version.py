"""tvmffi's version, read from one place: the ``tvmffi`` distribution's metadata.

``pyproject.toml``'s ``version`` is the one number: installing tvmffi records it in the
distribution's metadata, which :func:`tvmffi_version` reads (an in-place build that was
never installed reads ``pyproject.toml`` itself). ``tvmffi.__version__`` answers it.

Hosted (``tvmffi.host()`` / ``TVMFFI_HOST=1``: ``import tvm_ffi`` answers tvmffi, one
module under both names), ``__version__`` answers the installed ``apache-tvm-ffi``
version instead: tvmffi binds that wheel's runtime and answers its Python API, and a
client compares ``tvm_ffi.__version__`` with the runtime it was built for (``>=``
checks, a compiled extension's ABI check), which tvmffi's own number would fail.
``tvmffi.__tvmffi_version__`` is tvmffi's own number in both cases.
"""

from __future__ import annotations

import functools
import os
import re
import sys

from . import _core, hosting

#: The distribution that ships the runtime tvmffi loads.
RUNTIME_DISTRIBUTION = "apache-tvm-ffi"
#: tvmffi's own distribution.
DISTRIBUTION = "tvmffi"


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


@functools.cache
def tvmffi_version() -> str:
    """tvmffi's own version (e.g. ``0.1.0``), from the ``tvmffi`` distribution's metadata.

    An in-place build of a checkout that was never installed has no metadata: the
    checkout's ``pyproject.toml`` (two directories above this package) answers.
    """
    import importlib.metadata  # import-time: ~15 ms (email.*, zipfile), once per process

    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        pass
    here = os.path.dirname(os.path.abspath(__file__))
    pyproject = os.path.join(os.path.dirname(os.path.dirname(here)), "pyproject.toml")
    try:
        with open(pyproject, encoding="utf-8") as f:
            found = re.search(r'^version\s*=\s*"([^"]+)"', f.read(), re.M)
    except OSError:
        found = None
    return found.group(1) if found else "0+unknown"


def _hosted() -> bool:
    """Whether this module also answers ``tvm_ffi`` (hosting, or an alias of the name)."""

    package = sys.modules.get(__package__ or "tvmffi")
    return hosting.is_hosted() or (package is not None and sys.modules.get("tvm_ffi") is package)


def package_version() -> str:
    """What ``tvmffi.__version__`` answers: tvmffi's version, or hosted the runtime's."""
    return official_version() if _hosted() else tvmffi_version()


def _version_tuple(version: str) -> tuple[int | str, ...]:
    """``"0.1.15.post2"`` -> ``(0, 1, 15, "post2")``: numeric parts as ints, others kept."""
    return tuple(int(part) if part.isdigit() else part for part in version.split("."))


# The names of the official ``_version`` module (a setuptools-scm file), answered on
# first use (reading the distribution's metadata is what makes them cost), as the
# package's ``__version__`` answers: hosted, ``tvm_ffi._version.__version__`` is the
# runtime's version, as on the official binding.
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
        return package_version()
    if name in ("__version_tuple__", "version_tuple"):
        return _version_tuple(package_version())
    if name in ("__commit_id__", "commit_id"):
        return None  # the metadata of an installed wheel does not record its commit
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_NAMES))
