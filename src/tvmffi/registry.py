"""The global registry: functions by name, and the registered object types.

The names and behaviour follow the official binding's ``tvm_ffi.registry``:
``register_global_func`` returns the registered :class:`Function` (also when
used as a decorator), ``get_global_func`` raises ``ValueError`` for a missing
name unless ``allow_missing``, and ``init_ffi_api`` fills a module with the
functions of a registry namespace (the ``_ffi_api.py`` idiom).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, Literal, overload

from . import _core
from ._core import Function
from .object import register_object

# isort: split
# The class-attribute helpers of the dataclass decorators, under their official names.
from .dataclasses._registration import add_class_attrs as _add_class_attrs  # noqa: F401
from .dataclasses._registration import (  # noqa: F401
    add_type_attr_class_attrs as _add_type_attr_class_attrs,
)
from .dataclasses.c_class import _warn_missing_field_annotations  # noqa: F401

#: When true, ``register_object`` leaves a class whose type key the runtime does not
#: know unregistered instead of raising (the official switch; TVM's runtime-only mode).
_SKIP_UNKNOWN_OBJECTS = False

__all__ = [
    "get_global_func",
    "get_global_func_metadata",
    "get_registered_type_keys",
    "init_ffi_api",
    "list_global_func_names",
    "register_global_func",
    "register_object",
    "remove_global_func",
]


@overload
def get_global_func(name: str, allow_missing: Literal[False] = False) -> Function: ...
@overload
def get_global_func(name: str, allow_missing: bool) -> Function | None: ...
def get_global_func(name: str, allow_missing: bool = False) -> Function | None:
    """Return the global function ``name``.

    A missing name raises ``ValueError``, or returns ``None`` when
    ``allow_missing`` is true.
    """
    if not isinstance(name, str):
        raise TypeError(f"function name must be a str, not {type(name).__name__}")
    return _core.get_global_func(name, allow_missing)


def register_global_func(
    func_name: str | Callable[..., Any],
    f: Callable[..., Any] | None = None,
    override: bool = False,
) -> Any:
    """Register ``f`` (a Python callable or a :class:`Function`) as global ``func_name``.

    Returns the registered :class:`Function`. With ``f`` omitted it returns a
    decorator, which registers the decorated callable and returns that
    :class:`Function` (as the official binding does). ``func_name`` may itself
    be the callable, registered under its ``__name__``. Registering an existing
    name raises unless ``override`` is true.
    """
    if not isinstance(func_name, str):
        f = func_name
        func_name = getattr(f, "__name__", None)  # type: ignore[assignment]
    if not isinstance(func_name, str):
        raise ValueError("expect string function name")
    name: str = func_name

    def register(myf: Callable[..., Any]) -> Function:
        return _core.register_global_func(name, myf, bool(override))

    if f is not None:
        return register(f)
    return register


def remove_global_func(name: str) -> None:
    """Remove the global function ``name`` from the registry."""
    get_global_func("ffi.FunctionRemoveGlobal")(name)


def list_global_func_names() -> list[str]:
    """Return the names of all registered global functions."""
    functor = get_global_func("ffi.FunctionListGlobalNamesFunctor")()
    count: int = functor(-1)
    return [functor(i) for i in range(count)]


def get_registered_type_keys() -> list[str]:
    """Return the type keys of all object types registered with the runtime."""
    return list(get_global_func("ffi.GetRegisteredTypeKeys")())


def get_global_func_metadata(name: str) -> dict[str, Any]:
    """Return the metadata of global function ``name`` (``{}`` when it has none).

    The ``type_schema`` entry, when present, is the JSON text of the function's
    signature (see ``tvmffi.core.TypeSchema.from_json_str``).
    """
    text = get_global_func("ffi.GetGlobalFuncMetadata")(name)
    return json.loads(text) if text else {}


def init_ffi_api(namespace: str, target_module_name: str | None = None) -> None:
    """Set every global function ``<namespace>.<name>`` as attribute ``name`` of a module.

    The module is ``target_module_name`` (default: ``namespace``) and must be
    imported already; typical use is ``init_ffi_api("mypackage", __name__)`` in
    a package's ``_ffi_api.py``. Names with a further dot are skipped; a
    leading ``"tvm."`` of ``namespace`` is dropped, as the official binding does.
    """
    module = sys.modules[target_module_name or namespace]
    prefix = namespace[4:] if namespace.startswith("tvm.") else namespace
    for name in list_global_func_names():
        if not name.startswith(prefix + "."):
            continue
        short = name[len(prefix) + 1 :]
        if "." in short:
            continue
        func = get_global_func(name)
        func.__name__ = short  # type: ignore[attr-defined]
        setattr(module, short, func)
