"""A type's ancestry and its fields in layout order, and the runtime's deep copy.

Small queries over :class:`~tvmffi.object.TypeInfo` that the dataclass layer, the
container classes and the ABI-header generator share.
"""

from __future__ import annotations

from collections.abc import Callable
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


# The types the runtime's deep copy refuses that pickling copies (their data, their
# library): a graph holding one is copied by a pickle round trip instead.
_PICKLED_TYPES = ('"ffi.Tensor"', '"ffi.Function"', '"ffi.Module"')


class GraphCopy:
    """How ``copy.deepcopy`` copies a graph ``ffi.DeepCopy`` refuses (it holds a tensor,
    function or module): ``fallback(obj, memo)``, handed down by the pickling layer
    (``tvmffi._pickle_hooks``), which sits above this one."""

    fallback: Callable[[Any, Any], Any] | None = None


def _deep_copy(obj: Any, memo: Any = None) -> Any:
    """``copy.deepcopy`` of an FFI value: the runtime's ``ffi.DeepCopy`` (shared
    sub-objects stay shared, cycles stay cycles), recorded in ``memo``. A graph holding
    tensors, functions or modules is copied through pickle; any other type the runtime
    cannot copy raises its ``RuntimeError``."""
    if memo is not None and ("tvmffi.handle", obj.__chandle__()) in memo:
        return memo[("tvmffi.handle", obj.__chandle__())]  # a cycle through deep_copy_graph
    try:
        made = _cached_global_func("ffi.DeepCopy")(obj)
    except RuntimeError as err:
        if not any(kind in str(err) for kind in _PICKLED_TYPES) or GraphCopy.fallback is None:
            raise
        # Copied the way pickle sends it (tensors by their bytes), element by element
        # with memo, so a container holding itself copies into one holding its copy.
        made = GraphCopy.fallback(obj, memo)
    if memo is not None:
        memo[id(obj)] = made
    return made
