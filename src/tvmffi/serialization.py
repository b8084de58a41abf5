"""JSON graph serialization of FFI values (``ffi.ToJSONGraphString`` / ``FromJSONGraphString``).

Mirrors the official ``tvm_ffi.serialization``: the text is the runtime's own JSON
graph format, which keeps shared references (a value reachable twice is written once),
so any binding on the same runtime reads what another wrote.

The runtime's encoder and decoder recurse on the C stack once per level of nesting and
its decoder trusts the node indices it reads; so values are checked for cycles and depth
before encoding, and texts are checked (indices in range, no cycle, depth) before
decoding: bad input is a ``ValueError`` / ``RecursionError``, never a crash.
"""

from __future__ import annotations

import json
from typing import Any

from . import _core
from .object import get_fields
from .registry import get_global_func

__all__ = ["from_json_graph_str", "to_json_graph_str"]

_ToJSONGraphString = get_global_func("ffi.ToJSONGraphString")
_FromJSONGraphString = get_global_func("ffi.FromJSONGraphString")

# Estimated C stack per level of nesting (about 2.5x the runtime's measured worst case).
_ENCODE_LEVEL_BYTES = 5120  # ~2 KiB measured
_DECODE_LEVEL_BYTES = 10240  # ~4 KiB measured
# Node types whose "data" holds node indices: sequences (every item) and maps (pairs).
_SEQUENCE_KEYS = frozenset({"ffi.Array", "ffi.List"})
_MAP_KEY = "ffi.Map"
# Node types whose "data" is a literal (never indices).
_LITERAL_KEYS = frozenset(
    {"None", "bool", "int", "float", "DataType", "Device", "ffi.String", "ffi.Bytes", "ffi.Shape"}
)
# Field types the encoder writes inline; fields of other types hold node indices.
_INLINE_FIELD_TYPES = frozenset({0, 1, 2, 3, 5})  # None, int, bool, float, DataType


def to_json_graph_str(obj: Any, metadata: dict[str, Any] | None = None) -> str:
    """The JSON graph text of ``obj``, with ``metadata`` (a dict) stored alongside.

    Example: ``from_json_graph_str(to_json_graph_str([1, 2]))`` is ``Array([1, 2])``.
    A value that contains itself raises ``ValueError``.
    """
    obj = _core._graph_check(obj, _ENCODE_LEVEL_BYTES, False)
    metadata = _core._graph_check(metadata, _ENCODE_LEVEL_BYTES, False)
    return str(_ToJSONGraphString(obj, metadata))


def from_json_graph_str(json_str: str) -> Any:
    """The value that :func:`to_json_graph_str` wrote as ``json_str``.

    Malformed text raises ``ValueError`` (``RecursionError`` when nested too deeply).
    """
    if isinstance(json_str, str):
        _check_graph_text(json_str)
    return _FromJSONGraphString(json_str)


# ---- decoder input check ------------------------------------------------------------
def _check_graph_text(text: str) -> None:
    """Raise unless the runtime's decoder can read ``text`` without overrunning memory.

    What the decoder itself reports (a missing field, a wrong type, an unknown type key)
    is left to it, so those errors read as they do with any other binding.
    """
    try:
        doc = json.loads(text)
    except RecursionError as err:
        raise RecursionError("JSON graph text nested too deeply") from err
    except ValueError as err:
        raise ValueError(f"Invalid JSON graph text: {err}") from err
    if not isinstance(doc, dict):
        return
    nodes, root = doc.get("nodes"), doc.get("root_index")
    if not isinstance(nodes, list) or type(root) is not int:
        return
    _check_graph_nodes(nodes, root, _core._depth_limit(_DECODE_LEVEL_BYTES))


def _node_refs(node: Any, field_cache: dict[str, frozenset[str] | None]) -> list[Any]:
    """The node indices a node's data refers to (non-int entries are the decoder's to report)."""
    if not isinstance(node, dict):
        return []
    key, data = node.get("type"), node.get("data")
    if not isinstance(key, str) or key in _LITERAL_KEYS:
        return []
    if key in _SEQUENCE_KEYS:
        return list(data) if isinstance(data, list) else []
    if key == _MAP_KEY:
        if isinstance(data, list) and len(data) % 2:
            raise ValueError("Invalid JSON graph: an ffi.Map node has an odd number of entries")
        return list(data) if isinstance(data, list) else []
    if key not in field_cache:
        field_cache[key] = _reference_fields(key)
    names = field_cache[key]
    if names is None or not isinstance(data, dict):
        return []
    return [data[n] for n in names if n in data]


def _reference_fields(type_key: str) -> frozenset[str] | None:
    """Names of a type's fields that the decoder reads as node indices (None: no such type,
    or the type decodes its data itself)."""
    index = _core._type_key_to_index(type_key)
    if index is None or _core._lookup_type_attr(index, "__data_from_json__") is not None:
        return None
    return frozenset(
        f.name for f in get_fields(type_key) if f.static_type_index not in _INLINE_FIELD_TYPES
    )


def _check_graph_nodes(nodes: list[Any], root: int, limit: int) -> None:
    """Every reachable index in range, no cycle, and no path longer than ``limit``."""
    count = len(nodes)
    done: set[int] = set()
    on_path: set[int] = set()
    height: dict[int, int] = {}
    field_cache: dict[str, frozenset[str] | None] = {}

    def index_of(ref: Any) -> int | None:
        if type(ref) is not int:
            return None
        if not 0 <= ref < count:
            raise ValueError(f"Invalid JSON graph: node index {ref} out of range [0, {count})")
        return ref

    start = index_of(root)
    if start is None:
        return
    # Iterative DFS: each frame is (node index, its child indices, position of the next).
    stack: list[tuple[int, list[int], int]] = []

    def enter(i: int) -> None:
        kids = [k for k in map(index_of, _node_refs(nodes[i], field_cache)) if k is not None]
        on_path.add(i)
        stack.append((i, kids, 0))
        if len(stack) > limit:
            raise RecursionError("JSON graph nested too deeply to decode on this thread's stack")

    enter(start)
    while stack:
        i, kids, pos = stack[-1]
        if pos == len(kids):
            stack.pop()
            on_path.discard(i)
            done.add(i)
            h = 1 + max((height[k] for k in kids), default=0)
            height[i] = h
            if h > limit:
                raise RecursionError(
                    "JSON graph nested too deeply to decode on this thread's stack"
                )
            continue
        stack[-1] = (i, kids, pos + 1)
        k = kids[pos]
        if k in on_path:
            raise ValueError(f"Invalid JSON graph: node {k} refers to itself (a cycle)")
        if k not in done:
            enter(k)
