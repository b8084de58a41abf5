"""Functions: global registry, registration of Python callables, wrapping."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal, TypeVar, overload

from . import _core
from ._core import Function

__all__ = [
    "Function",
    "get_global_func",
    "list_global_func_names",
    "register_global_func",
    "to_function",
]

_F = TypeVar("_F", bound=Callable[..., Any])


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


@functools.cache
def _cached_global_func(name: str) -> Function:
    """The global function ``name``, looked up once (tvmffi's own use: ``ffi.*`` builtins).

    A missing name raises ``ValueError`` like :func:`get_global_func` (and is not
    cached). Later re-registrations of ``name`` are not seen.
    """
    return get_global_func(name)


def list_global_func_names() -> list[str]:
    """Return the names of all registered global functions."""
    functor = get_global_func("ffi.FunctionListGlobalNamesFunctor")()
    count: int = functor(-1)
    return [functor(i) for i in range(count)]


@overload
def register_global_func(
    name: str, func: None = None, *, override: bool = False
) -> Callable[[_F], _F]: ...
@overload
def register_global_func(
    name: str, func: Callable[..., Any], *, override: bool = False
) -> Function: ...
def register_global_func(
    name: str, func: Callable[..., Any] | None = None, *, override: bool = False
) -> Function | Callable[[_F], _F]:
    """Register ``func`` (a Python callable or a Function) as global ``name``.

    Returns the registered :class:`Function`. With ``func`` omitted it is a
    decorator that registers the decorated callable and returns it unchanged.
    Registering an existing name raises unless ``override=True``.
    """
    if not isinstance(name, str):
        raise TypeError(f"function name must be a str, not {type(name).__name__}")
    if func is None:

        def decorator(f: _F) -> _F:
            _register(name, f, override)
            return f

        return decorator
    return _register(name, func, override)


def _register(name: str, func: Callable[..., Any], override: bool) -> Function:
    if not override and _core.get_global_func(name, True) is not None:
        raise ValueError(
            f"global function {name!r} is already registered; pass override=True to replace it"
        )
    return _core.register_global_func(name, func, override)


def to_function(func: Callable[..., Any]) -> Function:
    """Wrap a Python callable as a :class:`Function` without registering it."""
    return _core.to_function(func)
