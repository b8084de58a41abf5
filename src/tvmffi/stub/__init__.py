"""``tvmffi.stub``: the official stub generator (``tvm-ffi-stubgen``), run on tvmffi.

Stub generation is an offline tool whose logic does not depend on which binding runs it,
so tvmffi does not carry its own: the submodules of this package (``cli``, ``consts``,
``file_utils``, ``generator``, ``layout``, ``lib_state``, ``utils``, ``python_generator``,
``rust_generator``) are the official ``tvm_ffi/stub`` source files of the installed
``apache-tvm-ffi`` wheel, executed under ``tvmffi.stub.*`` names. Their own
``import tvm_ffi...`` lines are answered by ``tvmffi...``, so the generator reads the
registry and the type information through tvmffi and the official binding is never
imported. Importing this package loads nothing of the generator; each submodule is
loaded when first imported (``tvmffi.stub.cli`` loads the rest).
"""

from __future__ import annotations

import builtins
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

_OFFICIAL = "tvm_ffi"
_OURS = __name__.rpartition(".")[0]  # "tvmffi"


def official_stub_dir() -> str:
    """The directory of the official ``tvm_ffi/stub`` package, found without importing it."""
    # PathFinder alone: a finder earlier on sys.meta_path may answer `tvm_ffi` with tvmffi.
    spec = importlib.machinery.PathFinder.find_spec(_OFFICIAL)
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in roots:
        stub = os.path.join(root, "stub")
        if os.path.isfile(os.path.join(stub, "cli.py")):
            return stub
    raise ImportError(
        "tvmffi.stub runs the official stub generator, but the apache-tvm-ffi package "
        f"(tvm_ffi/stub) was not found on sys.path {sys.path!r}"
    )


def _import_as_tvmffi(
    name: str,
    globals: Mapping[str, object] | None = None,
    locals: Mapping[str, object] | None = None,
    fromlist: Sequence[str] | None = (),
    level: int = 0,
) -> ModuleType:
    """``__import__`` for the official files: absolute ``tvm_ffi[.X]`` means ``tvmffi[.X]``."""
    if level == 0 and (name == _OFFICIAL or name.startswith(_OFFICIAL + ".")):
        name = _OURS + name[len(_OFFICIAL) :]
    return builtins.__import__(name, globals, locals, fromlist, level)


# The builtins the official files run with: Python's own, but for `__import__`.
_BUILTINS: dict[str, Any] = {**vars(builtins), "__import__": _import_as_tvmffi}


class _OfficialLoader(importlib.machinery.SourceFileLoader):
    """Executes an official source file with :data:`_BUILTINS` as its builtins."""

    def exec_module(self, module: ModuleType) -> None:
        """Run the file's code in ``module``; its imports of ``tvm_ffi`` resolve to tvmffi."""
        vars(module)["__builtins__"] = _BUILTINS
        super().exec_module(module)


class _OfficialFinder(importlib.abc.MetaPathFinder):
    """Finds ``tvmffi.stub.X[.Y]`` as the official ``tvm_ffi/stub/X[/Y]`` source file."""

    def __init__(self, root: str, own: str) -> None:
        self.root = root
        self.own = own

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        """The spec of an official stub module under its ``tvmffi.stub`` name, else ``None``."""
        if not fullname.startswith(__name__ + "."):
            return None
        parts = fullname[len(__name__) + 1 :].split(".")
        if os.path.isfile(os.path.join(self.own, parts[0] + ".py")):
            return None  # tvmffi's own file (`__main__`)
        rel = os.path.join(self.root, *parts)
        package = os.path.join(rel, "__init__.py")
        origin = package if os.path.isfile(package) else rel + ".py"
        if not os.path.isfile(origin):
            return None
        return importlib.util.spec_from_file_location(
            fullname,
            origin,
            loader=_OfficialLoader(fullname, origin),
            submodule_search_locations=[rel] if origin == package else None,
        )


if not any(isinstance(f, _OfficialFinder) for f in sys.meta_path):
    # First: the path finder would load an official subpackage's modules with plain builtins.
    sys.meta_path.insert(0, _OfficialFinder(official_stub_dir(), os.path.dirname(__file__)))
