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
# Node types whose "data" holds node indices: sequences (every item), maps and dicts (pairs).
_SEQUENCE_KEYS = frozenset({"ffi.Array", "ffi.List"})
_MAP_KEYS = frozenset({"ffi.Map", "ffi.Dict"})
# Node types whose "data" is a literal (never indices).
_LITERAL_KEYS = frozenset(
    {"None", "bool", "int", "float", "DataType", "Device", "ffi.String", "ffi.Bytes", "ffi.Shape"}
)
# How each builtin node type refers to others (object types are added per call).
_BUILTIN_RULES: dict[Any, Any] = {
    **dict.fromkeys(_LITERAL_KEYS),
    **dict.fromkeys(_SEQUENCE_KEYS, _SEQUENCE_KEYS),
    **dict.fromkeys(_MAP_KEYS, _MAP_KEYS),
}
# Field types the encoder writes inline; fields of other types hold node indices.
_INLINE_FIELD_TYPES = frozenset({0, 1, 2, 3, 5})  # None, int, bool, float, DataType


def to_json_graph_str(obj: Any, metadata: dict[str, Any] | None = None) -> str:
    """The JSON graph text of ``obj``, with ``metadata`` (a dict) stored alongside.

    Example: ``from_json_graph_str(to_json_graph_str([1, 2]))`` is ``Array([1, 2])``.
    A value that contains itself raises ``ValueError``.
    """
    # Checked and encoded in one step (no other thread can change them in between).
    return str(
        _core._graph_call(_ToJSONGraphString, _ENCODE_LEVEL_BYTES, False, 0b11, obj, metadata)
    )


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


def _all_node_refs(nodes: list[Any]) -> list[list[int]]:
    """Per node, the node indices its data refers to (entries that are not ints are the
    decoder's to report). One loop with the per-type rule looked up once per type key."""
    rules = _BUILTIN_RULES.copy()  # object types' rules are looked up afresh on each call
    out: list[list[int]] = []
    append = out.append
    for node in nodes:
        if type(node) is not dict:
            append([])
            continue
        key = node.get("type")
        try:
            rule = rules[key]
        except KeyError:
            rule = rules[key] = _reference_fields(key) if isinstance(key, str) else None
        except TypeError:  # an unhashable "type": the decoder reports it
            rule = None
        if rule is None:
            append([])
            continue
        data = node.get("data")
        if rule is _SEQUENCE_KEYS or rule is _MAP_KEYS:
            if type(data) is not list:
                append([])
                continue
            if rule is _MAP_KEYS and len(data) % 2:
                raise ValueError(
                    "Invalid JSON Object Graph: Map/Dict data must contain an even number of "
                    "elements (key, value pairs)"
                )
            append([r for r in data if type(r) is int])
        elif type(data) is dict:
            append([r for n in rule if type(r := data.get(n)) is int])
        else:
            append([])
    return out


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
    """Every index reachable from ``root`` in range, no cycle, no path longer than ``limit``."""
    count = len(nodes)
    if not 0 <= root < count:
        raise ValueError(f"Invalid JSON Object Graph: invalid node index {root}")
    refs = _all_node_refs(nodes)
    # The runtime writes children before their parents: then one forward pass gives every
    # node's height and proves there is no cycle. Other texts take the general walk.
    height = [0] * count
    for i, kids in enumerate(refs):
        h = 0
        for k in kids:
            if not 0 <= k < i:
                _check_graph_walk(refs, root, limit)
                return
            if height[k] > h:
                h = height[k]
        height[i] = h + 1
    if height[root] > limit:
        raise RecursionError("JSON graph nested too deeply to decode on this thread's stack")


def _check_graph_walk(refs: list[list[int]], root: int, limit: int) -> None:
    """Iterative DFS from ``root``: indices in range, no cycle, heights within ``limit``."""
    count = len(refs)
    height: dict[int, int] = {}  # of the nodes done
    on_path: set[int] = set()
    stack: list[tuple[int, int]] = [(root, 0)]  # (node, position of its next child)
    on_path.add(root)
    while stack:
        i, pos = stack[-1]
        kids = refs[i]
        if pos == len(kids):
            stack.pop()
            on_path.discard(i)
            h = height[i] = 1 + max((height[k] for k in kids), default=0)
            if h > limit:
                raise RecursionError(
                    "JSON graph nested too deeply to decode on this thread's stack"
                )
            continue
        stack[-1] = (i, pos + 1)
        k = kids[pos]
        if not 0 <= k < count:
            raise ValueError(f"Invalid JSON Object Graph: invalid node index {k}")
        if k in on_path:
            raise ValueError(f"Invalid JSON Object Graph: node {k} refers to itself (a cycle)")
        if k not in height:
            on_path.add(k)
            stack.append((k, 0))
            if len(stack) > limit:
                raise RecursionError(
                    "JSON graph nested too deeply to decode on this thread's stack"
                )
