"""The ``__reduce__`` / ``__setstate__`` of every object, installed in the extension.

An object pickles as the runtime's JSON graph (``serialization``'s writer, so a cyclic
or too deep object raises instead of overflowing the runtime's stack); tensors,
functions, modules and graphs holding them go through :mod:`tvmffi._pickle`. This
module sits above everything it uses: ``import tvmffi`` imports it last.
"""

from __future__ import annotations

from typing import Any

from . import _core
from ._core import Object
from ._graph_doc import checked_text
from ._lineage import GraphCopy
from .function import _cached_global_func
from .object import _is_synthetic, _new_object
from .serialization import to_json_graph_str


def _reduce_hook(obj: Object) -> tuple[Any, ...]:
    """``__reduce__`` of every object: the runtime's JSON graph (``serialization``'s, so a
    cyclic or too deep object raises instead of overflowing the runtime's stack)."""
    if obj.__chandle__() == 0:
        return (_new_object, (type(obj),), {"handle": None})
    # import-time: tvmffi._pickle (hashlib, tempfile, pickle) took 175-290 ms on the
    # shared 2-core machine (2026-12-02): loaded by the first object pickled instead.
    from . import _pickle

    special = _pickle.reduce(obj)
    if special is not None:
        return special
    try:
        text: str | None = to_json_graph_str(obj)
    except (TypeError, RuntimeError):
        # The runtime's refusal of a tensor or function, or a serializer another
        # package registered for them failing (TVM's, on a strided tensor).
        if not _pickle.holds_native(obj):
            raise
        text = None
    if text is None or _pickle.graph_holds_native(text):
        # It holds a tensor, function or module: sent as its fields, each pickled in
        # turn (a JSON graph with a tensor needs the sender's serializer, e.g. TVM's).
        return _pickle.reduce_graph(obj)
    if _is_synthetic(type(obj)):
        # A generated class cannot be pickled by reference: the graph names the type.
        return (_pickle.rebuild_from_graph, (text,))
    return (_new_object, (type(obj),), {"handle": text})


def _setstate_hook(obj: Object, state: Any) -> None:
    """``__setstate__``: rebuild the handle from the JSON graph of ``_reduce_hook``."""
    handle = state.get("handle") if isinstance(state, dict) else None
    if handle is not None:
        # The runtime's decoder trusts the document: the text is checked first.
        handle = checked_text(handle)
        _core._init_handle(obj, _cached_global_func("ffi.FromJSONGraphString"), handle)


def _copy_graph(obj: Object, memo: Any) -> Any:
    """``copy.deepcopy``'s way for a graph the runtime refuses to copy (``_lineage``)."""
    from . import _pickle  # import-time: as in _reduce_hook, loaded on first use

    return _pickle.deep_copy_graph(obj, memo)


_core._set_pickle_hooks(_reduce_hook, _setstate_hook)
GraphCopy.fallback = _copy_graph
