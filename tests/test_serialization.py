"""tvmffi.serialization: the runtime's JSON graph format, round trips and bad input."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tvmffi
import tvmffi.testing
from tvmffi import Array, Dict, List, Map
from tvmffi.serialization import from_json_graph_str, to_json_graph_str

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=False)
    | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=80, deadline=None)
@given(json_values)
def test_round_trip_is_structurally_equal(value: Any) -> None:
    text = to_json_graph_str(value)
    assert isinstance(text, str)
    json.loads(text)  # valid JSON
    assert tvmffi.structural_equal(from_json_graph_str(text), value)


def test_round_trip_kinds() -> None:
    assert from_json_graph_str(to_json_graph_str(None)) is None
    assert from_json_graph_str(to_json_graph_str(True)) is True
    assert from_json_graph_str(to_json_graph_str(10**15)) == 10**15
    assert from_json_graph_str(to_json_graph_str("héllo")) == "héllo"
    assert from_json_graph_str(to_json_graph_str(b"\x00\x01")) == b"\x00\x01"
    dev = tvmffi.device("cuda:1")
    assert from_json_graph_str(to_json_graph_str(dev)) == dev
    assert from_json_graph_str(to_json_graph_str(tvmffi.dtype("float32x4"))) == "float32x4"
    assert type(from_json_graph_str(to_json_graph_str(List([1])))) is List
    assert type(from_json_graph_str(to_json_graph_str(Dict({"a": 1})))) is Dict
    assert type(from_json_graph_str(to_json_graph_str(Map({"a": 1})))) is Map
    pair = tvmffi.testing.TestIntPair(3, 4)
    back = from_json_graph_str(to_json_graph_str(pair))
    assert (back.a, back.b) == (3, 4)


def test_shared_references_kept() -> None:
    shared = Array([1, 2])
    back = from_json_graph_str(to_json_graph_str(Array([shared, shared])))
    assert back[0].same_as(back[1])


def test_metadata_is_stored() -> None:
    text = to_json_graph_str(Array([1]), {"version": "1.0", "n": 3})
    assert json.loads(text)["metadata"] == {"version": "1.0", "n": 3}
    assert list(from_json_graph_str(text)) == [1]


def test_same_text_as_official_binding() -> None:
    tvm_ffi = pytest.importorskip("tvm_ffi")
    value = {"a": [1, 2.5, "x"], "b": None}
    assert to_json_graph_str(value) == tvm_ffi.serialization.to_json_graph_str(value)
    official_text = tvm_ffi.serialization.to_json_graph_str(tvm_ffi.convert([1, {"k": 2}]))
    assert tvmffi.structural_equal(from_json_graph_str(official_text), [1, {"k": 2}])


@pytest.mark.parametrize(
    "text",
    ["", "not json", "[1, 2", '{"root_index": 5, "nodes": []}', '{"nodes": [{"type": "nope"}]}'],
)
def test_bad_text_raises(text: str) -> None:
    with pytest.raises((ValueError, RuntimeError, TypeError)):
        from_json_graph_str(text)


def test_bad_argument_types_raise_type_error() -> None:
    with pytest.raises(TypeError, match="Expected `str` but got `int`"):
        from_json_graph_str(42)  # type: ignore[arg-type]


def test_cycle_raises_value_error() -> None:
    lst = List([1])
    lst.append(lst)
    with pytest.raises(ValueError, match=r"[Cc]ycle"):
        to_json_graph_str(lst)


def _graph(root: int, nodes: list[Any]) -> str:
    return json.dumps({"root_index": root, "nodes": nodes})


@pytest.mark.parametrize(
    ("text", "error", "match"),
    [
        (_graph(0, [{"type": "ffi.Array", "data": [0]}]), ValueError, "refers to itself"),
        (
            _graph(1, [{"type": "ffi.Array", "data": [1]}, {"type": "ffi.Map", "data": [0, 0]}]),
            ValueError,
            "refers to itself",
        ),
        (_graph(9, [{"type": "int", "data": 1}]), ValueError, "invalid node index 9"),
        (_graph(0, [{"type": "ffi.List", "data": [-1]}]), ValueError, "invalid node index -1"),
        (_graph(0, [{"type": "ffi.Map", "data": [3, 0]}]), ValueError, "invalid node index 3"),
        (_graph(0, [{"type": "ffi.Dict", "data": [0, 0]}]), ValueError, "refers to itself"),
        (
            _graph(1, [{"type": "int", "data": 1}, {"type": "ffi.Map", "data": [0]}]),
            ValueError,
            "even number",
        ),
        (
            _graph(0, [{"type": "testing.TestIntPair", "data": {"a": 1, "b": 2}}]),
            None,
            None,
        ),
        ("[" * 100000 + "]" * 100000, RecursionError, "nested too deeply"),
    ],
)
def test_crafted_graph_text_is_checked(text: str, error: Any, match: Any) -> None:
    if error is None:  # int fields are written inline: not node indices
        assert from_json_graph_str(text).a == 1
        return
    with pytest.raises(error, match=match):
        from_json_graph_str(text)


def test_deep_graph_text_raises_recursion_error() -> None:
    n = 100000  # a chain of Arrays the runtime's decoder would recurse through
    nodes: list[Any] = [{"type": "int", "data": 1}]
    nodes += [{"type": "ffi.Array", "data": [i]} for i in range(n)]
    with pytest.raises(RecursionError, match="too deeply"):
        from_json_graph_str(_graph(n, nodes))
    shared = [{"type": "int", "data": 1}, {"type": "ffi.Array", "data": [0, 0, 0]}]
    assert list(from_json_graph_str(_graph(1, shared))) == [1, 1, 1]


def test_graph_text_in_any_node_order() -> None:
    # Parents before children (the runtime writes children first): the general check.
    nodes = [{"type": "ffi.Array", "data": [1, 2]}, {"type": "int", "data": 7}, {"type": "None"}]
    assert list(from_json_graph_str(_graph(0, nodes))) == [7, None]
    # A cycle among nodes the root does not reach is never decoded: accepted.
    nodes.append({"type": "ffi.Array", "data": [3]})
    assert list(from_json_graph_str(_graph(0, nodes))) == [7, None]


def test_pickle_goes_through_the_checked_json_graph() -> None:
    import pickle

    pair = tvmffi.testing.TestIntPair(3, 4)
    back = pickle.loads(pickle.dumps(pair))
    assert (back.a, back.b) == (3, 4)
    lst = List([1])
    lst.append(lst)
    with pytest.raises(ValueError, match="Cycle detected"):
        pickle.dumps(lst)
    # A tampered pickle state with a self-referencing graph is refused, not decoded.
    reduced = Array([1]).__reduce__()
    state = {"handle": _graph(0, [{"type": "ffi.Array", "data": [0]}])}
    obj = reduced[0](*reduced[1])
    with pytest.raises(ValueError, match="refers to itself"):
        obj.__setstate__(state)


_NODE_TYPES = [
    "None", "bool", "int", "float", "DataType", "Device", "ffi.String", "ffi.Bytes",
    "ffi.Array", "ffi.List", "ffi.Map", "ffi.Dict", "ffi.Shape", "ffi.Function", "ffi.Tensor",
    "ffi.Object", "testing.TestIntPair", "testing.TestObjectDerived", "testing.TestVisitHook",
    "no.such.type", 5,
]  # fmt: skip
_small_ref = st.integers(-2, 6)
_node_data = st.one_of(
    _small_ref,
    st.lists(_small_ref, max_size=4),
    st.dictionaries(
        st.sampled_from(["a", "b", "child", "v_i64", "v_map", "v_array"]),
        _small_ref | st.none() | st.just("x"),
        max_size=4,
    ),
    st.sampled_from(["int8", "eHg=", "", 1.5, True, None]),
)
_node = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(_NODE_TYPES)}, optional={"data": _node_data}),
    st.sampled_from([1, "x", []]),
)


@settings(max_examples=300, deadline=None)
@given(st.integers(-1, 6), st.lists(_node, min_size=1, max_size=6))
def test_any_small_graph_text_decodes_or_raises(root: int, nodes: list[Any]) -> None:
    # Whatever the indices, types and data: a value or an exception, never a crash.
    with contextlib.suppress(ValueError, TypeError, RuntimeError, KeyError, IndexError):
        from_json_graph_str(_graph(root, nodes))
