"""JSON graph serialization of FFI values (``ffi.ToJSONGraphString`` / ``FromJSONGraphString``).

Mirrors the official ``tvm_ffi.serialization``: the text is the runtime's own JSON
graph format, which keeps shared references (a value reachable twice is written once),
so any binding on the same runtime reads what another wrote.
"""

from __future__ import annotations

from typing import Any

from .registry import get_global_func

__all__ = ["from_json_graph_str", "to_json_graph_str"]

_ToJSONGraphString = get_global_func("ffi.ToJSONGraphString")
_FromJSONGraphString = get_global_func("ffi.FromJSONGraphString")


def to_json_graph_str(obj: Any, metadata: dict[str, Any] | None = None) -> str:
    """The JSON graph text of ``obj``, with ``metadata`` (a dict) stored alongside.

    Example: ``from_json_graph_str(to_json_graph_str([1, 2]))`` is ``Array([1, 2])``.
    """
    return str(_ToJSONGraphString(obj, metadata))


def from_json_graph_str(json_str: str) -> Any:
    """The value that :func:`to_json_graph_str` wrote as ``json_str``."""
    return _FromJSONGraphString(json_str)
