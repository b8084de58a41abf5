"""Hosting: programs written against the official binding run on tvmffi, unchanged.

After :func:`host`, every ``import tvm_ffi`` / ``import tvm_ffi.X`` in the process is
answered by ``tvmffi`` / ``tvmffi.X``: Apache TVM, jax-tvm-ffi, apache-tvm-ffi-orcjit
and any other package built on ``tvm_ffi`` then make their calls through tvmffi. The
official package's Python code is never imported (its runtime library is the one
tvmffi loads anyway).

Two ways to switch it on:

* ``tvmffi.host()`` called before anything imports ``tvm_ffi``;
* the environment variable ``TVMFFI_HOST=1``, honoured at interpreter start-up by the
  ``tvmffi_host.pth`` file the tvmffi wheel installs (it does nothing unless the
  variable is set), so an unchanged program and its Python subprocesses are hosted.

:func:`host` also sets ``TVMFFI_HOST=1`` in ``os.environ`` (unless asked not to), so
the subprocesses it starts are hosted too.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
from types import ModuleType

__all__ = ["ENV_VAR", "host", "is_hosted"]

#: The environment variable the start-up hook reads: hosted unless unset, empty or "0".
ENV_VAR = "TVMFFI_HOST"

_OFFICIAL = "tvm_ffi"
_OURS = "tvmffi"


def _ours_for(name: str) -> str | None:
    """``tvmffi.X`` for ``tvm_ffi.X`` (``None`` for a name outside the official package)."""
    if name == _OFFICIAL or name.startswith(_OFFICIAL + "."):
        return _OURS + name[len(_OFFICIAL) :]
    return None


class _Finder:
    """Answers ``tvm_ffi[.X]`` with the module object of ``tvmffi[.X]`` (the same object).

    A meta path finder and loader by protocol (``find_spec``, ``create_module``,
    ``exec_module``): subclassing ``importlib.abc``'s classes would import
    ``importlib.resources`` and ``tempfile`` with every ``import tvmffi`` (~5 ms).
    """

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        ours = _ours_for(fullname)
        real = None if ours is None else importlib.util.find_spec(ours)
        if real is None:
            return None  # tvm_ffi.X that tvmffi lacks: ModuleNotFoundError names tvm_ffi.X
        # Shaped like tvmffi.X's own spec: a package where that is one (tools that read the
        # spec before importing, pip's build among them, see tvm_ffi as a package).
        is_package = real.submodule_search_locations is not None
        spec = importlib.util.spec_from_loader(
            fullname, self, origin=real.origin, is_package=is_package
        )
        if spec is not None and is_package:
            spec.submodule_search_locations = list(real.submodule_search_locations or ())
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        ours = _ours_for(spec.name)
        assert ours is not None  # find_spec answered only such names
        module = importlib.import_module(ours)
        # The import system now sets module.__spec__ to ``spec``: the module keeps its own
        # (exec_module puts it back), so tvmffi's spec, importlib.resources and
        # importlib.reload (which would rename the module tvm_ffi) see tvmffi's.
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (the module is tvmffi's, imported by :meth:`create_module`) but
        to give the module back its own ``__spec__``."""
        hosted = module.__spec__
        loader: object = None if hosted is None else hosted.loader
        if hosted is not None and loader is self and hosted.loader_state is not None:
            module.__spec__ = hosted.loader_state

    def load_module(self, fullname: str) -> ModuleType:
        """The legacy loader entry (PEP 302): the same module object."""
        ours = _ours_for(fullname)
        if ours is None:
            raise ImportError(f"tvmffi.hosting answers only tvm_ffi modules, not {fullname!r}")
        module = importlib.import_module(ours)
        sys.modules[fullname] = module
        return module


_FINDER = _Finder()


def is_hosted() -> bool:
    """Whether ``import tvm_ffi`` is answered by tvmffi in this process."""
    return _FINDER in sys.meta_path


def _official_modules() -> list[str]:
    """Names of the official package's modules already imported (not tvmffi's)."""
    return sorted(
        name
        for name, mod in list(sys.modules.items())
        if _ours_for(name) is not None
        and not (getattr(mod, "__name__", "") or "").startswith(_OURS)
    )


def host(*, subprocesses: bool = True) -> None:
    """Answer every ``import tvm_ffi`` in this process with tvmffi (idempotent).

    Call it first, before anything imports ``tvm_ffi``: ``RuntimeError`` (naming the
    modules) when the official package's Python code was already imported, since its
    classes and tvmffi's would then both be live. With ``subprocesses`` (the default),
    ``TVMFFI_HOST=1`` is set in ``os.environ`` so Python subprocesses started from now
    on are hosted too (through the installed ``tvmffi_host.pth``).
    """
    if not is_hosted():
        official = _official_modules()
        if official:
            raise RuntimeError(
                "tvmffi.host(): the official tvm_ffi package was already imported "
                f"({', '.join(official[:5])}); call tvmffi.host() before anything imports "
                f"tvm_ffi, or set {ENV_VAR}=1 in the environment"
            )
        sys.meta_path.insert(0, _FINDER)
    if subprocesses:
        os.environ[ENV_VAR] = "1"


def _enabled(value: str | None) -> bool:
    return value not in (None, "", "0")


def _host_from_environment() -> None:
    """The start-up hook's entry (``tvmffi_host.pth``): host when ``TVMFFI_HOST`` is set.

    Runs while ``site`` processes ``.pth`` files, before any user code; an error is
    reported on stderr by ``site`` and leaves the interpreter unhosted.
    """
    if _enabled(os.environ.get(ENV_VAR)):
        host(subprocesses=False)
