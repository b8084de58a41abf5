"""Functions: the :class:`Function` type and wrapping Python callables.

The global registry (``get_global_func``, ``register_global_func``, ...) lives
in :mod:`tvmffi.registry`, as in the official binding.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from . import _core
from ._core import Function

__all__ = ["Function", "to_function"]


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
