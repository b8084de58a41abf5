"""Functions: the :class:`Function` type and wrapping Python callables.

The runtime registry's queries (``get_global_func``, ``list_global_func_names``,
``get_registered_type_keys``, ``get_global_func_metadata``) live here, below the
object model that uses them; :mod:`tvmffi.registry` re-exports them with the
registering side (``register_global_func``, ``register_object``, ...), as in the
official binding.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any, Literal, overload

from . import _core
from ._core import Function

__all__ = [
    "Function",
    "get_global_func",
    "get_global_func_metadata",
    "get_registered_type_keys",
    "list_global_func_names",
    "to_function",
]


@functools.cache
def _cached_global_func(name: str) -> Function:
    """The global function ``name``, looked up once (tvmffi's own use: ``ffi.*`` builtins).

    A missing name raises ``ValueError`` (and is not cached). Later
    re-registrations of ``name`` are not seen.
    """
    return _core.get_global_func(name, False)  # type: ignore[return-value]


def to_function(func: Callable[..., Any]) -> Function:
    """Wrap a Python callable as a :class:`Function` without registering it.

    tvmffi's name for ``tvmffi.convert_func(func)``.
    """
    return _core.to_function(func)


@overload
def get_global_func(name: str, allow_missing: Literal[False] = False) -> Function: ...


@overload
def get_global_func(name: str, allow_missing: bool) -> Function | None: ...


def get_global_func(name: str, allow_missing: bool = False) -> Function | None:
    """Return the global function registered under ``name``.

    Global functions are registered by C++ libraries (``TVM_FFI_STATIC_INIT_BLOCK``
    with ``refl::GlobalDef``), by :func:`register_global_func`, or by any other
    binding in the process: the registry is the runtime's, shared with the official
    ``tvm_ffi`` package.

    Parameters
    ----------
    name : str
        The registered name, e.g. ``"testing.add_one"``.
    allow_missing : bool
        When true, a name nobody registered gives ``None`` instead of an error.

    Returns
    -------
    Function or None
        The function, callable like any Python callable. Its ``__signature__`` and
        ``__doc__`` come from the registration's type schema, computed when first read.
        ``None`` only for a missing name with ``allow_missing``.

    Raises
    ------
    ValueError
        ``name`` is not registered and ``allow_missing`` is false.
    TypeError
        ``name`` is not a ``str``.

    Examples
    --------
    >>> import tvmffi
    >>> add_one = tvmffi.get_global_func("testing.add_one")
    >>> add_one(41)
    42
    >>> tvmffi.get_global_func("no.such.function", allow_missing=True) is None
    True
    """
    if not isinstance(name, str):
        raise TypeError(f"function name must be a str, not {type(name).__name__}")
    return _core.get_global_func(name, allow_missing)


def list_global_func_names() -> list[str]:
    """Return the names of all registered global functions.

    Returns
    -------
    list of str
        Every name in the runtime's registry, from all libraries and bindings.

    Examples
    --------
    >>> import tvmffi
    >>> "testing.add_one" in tvmffi.registry.list_global_func_names()
    True
    """
    functor = get_global_func("ffi.FunctionListGlobalNamesFunctor")()
    count: int = functor(-1)
    return [functor(i) for i in range(count)]


def get_registered_type_keys() -> list[str]:
    """Return the type keys of all object types registered with the runtime.

    Returns
    -------
    list of str
        Keys such as ``"ffi.Array"`` or ``"testing.TestIntPair"``.

    Examples
    --------
    >>> import tvmffi
    >>> "ffi.Array" in tvmffi.registry.get_registered_type_keys()
    True
    """
    return list(get_global_func("ffi.GetRegisteredTypeKeys")())


def get_global_func_metadata(name: str) -> dict[str, Any]:
    """Return the metadata registered with global function ``name``.

    C++ registrations carry a ``type_schema`` entry (JSON text of the function's
    signature, read by ``tvmffi.core.TypeSchema.from_json_str``) and may carry a
    ``doc``; functions registered from Python have none.

    Parameters
    ----------
    name : str
        The registered name.

    Returns
    -------
    dict
        The decoded metadata; ``{}`` when the function has none.

    Raises
    ------
    ValueError
        ``ffi.GetGlobalFuncMetadata`` is missing from the runtime.

    Examples
    --------
    >>> import tvmffi
    >>> meta = tvmffi.get_global_func_metadata("testing.add_one")
    >>> str(tvmffi.core.TypeSchema.from_json_str(meta["type_schema"]))
    'Callable[[int], int]'
    """
    text = get_global_func("ffi.GetGlobalFuncMetadata")(name)
    return json.loads(text) if text else {}
