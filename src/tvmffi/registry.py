"""The global registry: functions by name, and the registered object types.

The names and behaviour follow the official binding's ``tvm_ffi.registry``:
``register_global_func`` returns the registered :class:`Function` (also when
used as a decorator), ``get_global_func`` raises ``ValueError`` for a missing
name unless ``allow_missing``, and ``init_ffi_api`` fills a module with the
functions of a registry namespace (the ``_ffi_api.py`` idiom).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

from . import _core
from ._core import Function
from .function import (  # the runtime registry's queries, one layer down
    get_global_func,
    get_global_func_metadata,
    get_registered_type_keys,
    list_global_func_names,
)
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


def register_global_func(
    func_name: str | Callable[..., Any],
    f: Callable[..., Any] | None = None,
    override: bool = False,
) -> Any:
    """Register a Python callable (or a :class:`Function`) as a global function.

    Once registered, the function can be looked up and called from C++
    (``Function::GetGlobal``), from the official ``tvm_ffi`` binding and from
    tvmffi, in any thread. Usable directly or as a decorator.

    Parameters
    ----------
    func_name : str or callable
        The name to register under. A callable here (bare decorator use,
        ``@register_global_func``) is registered under its ``__name__``.
    f : callable, optional
        The function to register. When omitted, a decorator is returned.
    override : bool
        Replace an existing registration of the same name instead of raising.

    Returns
    -------
    Function or callable
        The registered :class:`Function` when ``f`` is given (or ``func_name`` is the
        callable); otherwise a decorator that registers its argument and returns that
        :class:`Function`.

    Raises
    ------
    ValueError
        The name is not a ``str`` (and the callable has no ``__name__``).
    RuntimeError
        The name is already registered and ``override`` is false.

    Examples
    --------
    >>> import tvmffi
    >>> @tvmffi.register_global_func("example.twice", override=True)
    ... def twice(x):
    ...     return 2 * x
    >>> tvmffi.get_global_func("example.twice")(21)
    42
    >>> tvmffi.remove_global_func("example.twice")
    """
    name, target = _name_and_target(func_name, f)
    decorator = functools.partial(_register_as, name, bool(override))
    return decorator if target is None else decorator(target)


def _name_and_target(
    func_name: str | Callable[..., Any], f: Callable[..., Any] | None
) -> tuple[str, Callable[..., Any] | None]:
    """What a :func:`register_global_func` call names and registers (``None``: the
    decorator's argument, later): a callable given as ``func_name`` (bare decorator
    use) is registered under its ``__name__``."""
    if isinstance(func_name, str):
        return func_name, f
    name = getattr(func_name, "__name__", None)
    if not isinstance(name, str):
        raise ValueError("expect string function name")
    return name, func_name


def _register_as(name: str, override: bool, func: Callable[..., Any]) -> Function:
    try:
        return _core.register_global_func(name, func, override)
    except RuntimeError as e:
        # The runtime's message ("Global Function `x` is already registered") says what,
        # not how to replace it.
        if not override and len(e.args) == 1 and "is already registered" in str(e.args[0]):
            e.args = (
                f"{e.args[0]}; pass override=True to register_global_func to replace it",
            )
        raise


def remove_global_func(name: str) -> None:
    """Remove the global function ``name`` from the registry.

    Functions already looked up stay callable; later lookups of ``name`` fail.

    Parameters
    ----------
    name : str
        The registered name.

    Raises
    ------
    RuntimeError
        The runtime refuses (``name`` is not registered).

    Examples
    --------
    >>> import tvmffi
    >>> f = tvmffi.register_global_func("example.tmp", lambda: 1, override=True)
    >>> tvmffi.remove_global_func("example.tmp")
    >>> tvmffi.get_global_func("example.tmp", allow_missing=True) is None
    True
    """
    get_global_func("ffi.FunctionRemoveGlobal")(name)


def init_ffi_api(namespace: str, target_module_name: str | None = None) -> None:
    """Set every global function ``<namespace>.<name>`` as attribute ``name`` of a module.

    The ``_ffi_api.py`` idiom of packages built on TVM FFI: a package's C++ library
    registers ``mypackage.f``, ``mypackage.g``, ...; its ``_ffi_api.py`` calls
    ``init_ffi_api("mypackage", __name__)`` and then offers ``_ffi_api.f``. Only names
    directly below ``namespace`` are taken (``mypackage.sub.f`` is not, nor is
    ``mypackageX.f``). Each function's ``__name__`` is set to its short name.

    Parameters
    ----------
    namespace : str
        The registry prefix. A leading ``"tvm."`` is dropped, as the official
        binding does.
    target_module_name : str, optional
        The module to fill, which must already be imported (default: ``namespace``).

    Raises
    ------
    KeyError
        The target module is not in ``sys.modules``.

    Examples
    --------
    >>> import sys, types, tvmffi
    >>> sys.modules["demo_api"] = types.ModuleType("demo_api")
    >>> tvmffi.init_ffi_api("testing", "demo_api")
    >>> sys.modules["demo_api"].add_one(1)
    2
    """
    module = sys.modules[target_module_name or namespace]
    for name, short in _direct_members(namespace.removeprefix("tvm.")):
        func = get_global_func(name)
        func.__name__ = short  # type: ignore[attr-defined]
        setattr(module, short, func)


def _direct_members(namespace: str) -> list[tuple[str, str]]:
    """``(name, short name)`` of the registered global functions named
    ``<namespace>.<short>`` (deeper names, ``<namespace>.sub.f``, are not members)."""
    split = (name.rpartition(".") for name in list_global_func_names())
    return [(f"{head}.{short}", short) for head, dot, short in split if dot and head == namespace]
