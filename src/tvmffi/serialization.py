"""JSON graph serialization of FFI values (``ffi.ToJSONGraphString`` / ``FromJSONGraphString``).

Mirrors the official ``tvm_ffi.serialization``: the text is the runtime's own JSON
graph format, which keeps shared references (a value reachable twice is written once),
so any binding on the same runtime reads what another wrote.

The runtime's encoder and decoder recurse on the C stack once per level of nesting and
its decoder trusts the document it reads; so values are checked for cycles and depth
before encoding, and every text is checked as untrusted input before decoding (see
``tvmffi._graph_doc``, which also guards ``ffi.FromJSONGraphString`` itself): bad input
is a ``TypeError`` / ``ValueError`` / ``RecursionError`` naming what was wrong, never a
crash.
"""

from __future__ import annotations

from typing import Any

from . import (
    _core,
    _graph_doc,  # noqa: F401  (guards ffi.FromJSONGraphString before the lookup below)
)
from .registry import get_global_func

__all__ = ["from_json_graph_str", "to_json_graph_str"]

_ToJSONGraphString = get_global_func("ffi.ToJSONGraphString")
_FromJSONGraphString = get_global_func("ffi.FromJSONGraphString")  # vets its argument

# Estimated C stack per level of nesting (about 2.5x the runtime's measured worst case).
_ENCODE_LEVEL_BYTES = 5120  # ~2 KiB measured


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

    The text is untrusted input: a field of the wrong type raises ``TypeError``, a
    malformed or inconsistent document (an index out of range, a cycle, an unknown type,
    an enum value out of range) ``ValueError``, one nested too deeply ``RecursionError``.
    """
    return _FromJSONGraphString(json_str)  # its arguments are vetted (tvmffi._graph_doc)
