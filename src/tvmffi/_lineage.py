"""A type's ancestry and its fields in layout order, and the runtime's deep copy.

Small queries over :class:`~tvmffi.object.TypeInfo` that the dataclass layer, the
container classes and the ABI-header generator share.
"""

from __future__ import annotations

from typing import Any

from .function import _cached_global_func


def _lineage(info: Any) -> list[Any]:
    """``info`` and its ancestors' TypeInfos, root first (``info`` last)."""
    chain = []
    while info is not None:
        chain.append(info)
        info = info.parent_type_info
    chain.reverse()
    return chain


def _chain_fields(info: Any) -> list[Any]:
    """Every reflected field of ``info``'s type, the root type's first (layout order)."""
    return [f for level in _lineage(info) for f in level.fields or ()]


def _deep_copy(obj: Any, memo: Any = None) -> Any:
    """``copy.deepcopy`` of an FFI value: the runtime's ``ffi.DeepCopy`` (shared
    sub-objects stay shared, cycles stay cycles), recorded in ``memo``."""
    made = _cached_global_func("ffi.DeepCopy")(obj)
    if memo is not None:
        memo[id(obj)] = made
    return made
