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


# ---- untrusted documents: a grammar of JSON graph documents (issue 21, item 1) --------
_GRAMMAR_TYPES = [
    "None", "bool", "int", "float", "DataType", "Device", "ffi.String", "ffi.Bytes",
    "ffi.Shape", "ffi.Array", "ffi.List", "ffi.Map", "ffi.Dict", "ffi.BigInt",
    "ffi.reflection.AccessStep", "ffi.reflection.AccessPath", "testing.TestIntPair",
    "testing.TestObjectDerived", "ffi.Function", "ffi.Tensor", "ffi.Object", "void*",
    "ffi.IntEnum", "no.such.type",
]  # fmt: skip


def _validated_types() -> list[str]:
    """The grammar's types whose nodes the validator checks: a client library loaded in
    this process (TVM's runtime teaches the runtime to read ffi.Tensor and ffi.Module)
    makes a static type read its own data, which only its reader can check."""
    from tvmffi import _core

    def client_reads(key: str) -> bool:
        index = _core._type_key_to_index(key)
        return index is not None and index < 79 and (
            _core._lookup_type_attr(index, "__data_from_json__") is not None
        )  # fmt: skip

    return [key for key in _GRAMMAR_TYPES if not client_reads(key)]


_JUNK = st.one_of(
    st.none(), st.booleans(), st.floats(), st.text(max_size=3), st.just([]), st.just({})
)


def _field_names(type_key: str) -> list[str]:
    with contextlib.suppress(Exception):
        return [f.name for f in tvmffi.object.get_fields(type_key)]
    return []


@st.composite
def _graph_documents(draw: Any) -> str:
    """A JSON graph document.

    Nodes of every kind with data of the right shape most of the time and, otherwise,
    wrong JSON types, indices out of range or written as true/false, enum values out of
    range (AccessStep.kind beyond 0..5), references that make cycles, and chains."""
    count = draw(st.integers(1, 8))

    def index() -> Any:
        return draw(
            st.one_of(
                st.integers(0, count - 1), st.integers(0, count - 1), st.integers(-2, count + 2),
                st.booleans(), _JUNK,
            )
        )  # fmt: skip

    def data_for(key: str) -> Any:
        if draw(st.integers(0, 9)) == 0:
            return draw(_JUNK)  # the wrong JSON type altogether
        if key in ("ffi.Array", "ffi.List", "ffi.Map", "ffi.Dict"):
            return [index() for _ in range(draw(st.integers(0, 4)))]
        if key == "ffi.reflection.AccessStep":
            return {"kind": draw(st.integers(-3, 9) | st.booleans()), "key": index()}
        if key == "ffi.reflection.AccessPath":
            return {"parent": index(), "step": index(), "depth": draw(st.integers(-2, 12))}
        names = _field_names(key)
        if names:
            values = st.integers(-(2**65), 2**65) | st.booleans() | st.floats() | st.text()
            return {n: index() if draw(st.booleans()) else draw(values) for n in names}
        return draw(
            st.one_of(
                st.integers(-(2**65), 2**65), st.floats(), st.booleans(), st.text(max_size=6),
                st.sampled_from(["float32", "int8x4", "QUJD", "QUJD=", "123", "-5", "e"]),
                st.lists(st.integers(-(2**33), 2**33) | st.booleans(), max_size=3),
            )
        )  # fmt: skip

    nodes: list[Any] = []
    for _ in range(count):
        shape = draw(st.integers(0, 19))
        key = draw(st.sampled_from(_validated_types()))
        if shape == 0:
            nodes.append(draw(_JUNK))  # not an object
        elif shape == 1:
            nodes.append({"type": draw(_JUNK), "data": data_for(key)})
        elif shape == 2:
            nodes.append({"type": key})  # no data
        else:
            nodes.append({"type": key, "data": data_for(key)})
    root = draw(st.one_of(st.integers(0, count - 1), st.integers(-1, count), st.booleans()))
    return json.dumps({"root_index": root, "nodes": nodes})


def _decode_outcome(decode: Any, arg: Any) -> Any:
    """ "ok" (the value prints and hashes) or the class of the clear error raised."""
    try:
        value = decode(arg)
    except (TypeError, ValueError, RecursionError, RuntimeError) as err:
        return next(c for c in (TypeError, ValueError, RecursionError) if isinstance(err, c))
    repr(value)  # the runtime's printer reads every field (an out-of-range enum crashed it)
    return "ok"


@settings(max_examples=600, deadline=None)
@given(_graph_documents())
def test_untrusted_graph_documents_decode_or_raise_clearly(text: str) -> None:
    # Whatever the document: a value that prints, or a TypeError / ValueError
    # / RecursionError (RuntimeError only from the runtime, for a dynamic type it cannot
    # create, which the next() above lets through as a failure); never a crash. Both
    # routes for a text give the same answer; the parsed document (ffi.FromJSONGraph,
    # which cannot hold integers past int64) decodes or raises clearly too.
    text_routes = (from_json_graph_str, tvmffi.get_global_func("ffi.FromJSONGraphString"))
    outcomes = {_decode_outcome(decode, text) for decode in text_routes}
    assert len(outcomes) == 1, outcomes
    _decode_outcome(tvmffi.get_global_func("ffi.FromJSONGraph"), json.loads(text))


_INT = {"type": "int", "data": 1}
_STEP = "ffi.reflection.AccessStep"
_NAMED_FAULTS = [
    ([_INT, {"type": "ffi.Array", "data": [True]}], 1, TypeError, "true"),
    ([_INT, {"type": "ffi.List", "data": [False]}], 1, TypeError, "false"),
    ([_INT, {"type": "ffi.Map", "data": [0, True]}], 1, TypeError, "true"),
    ([_INT], True, TypeError, "root_index"),
    ([{"type": _STEP, "data": {"kind": 6, "key": 1}}, _INT], 0, ValueError, "'kind' = 6"),
    ([{"type": _STEP, "data": {"kind": -1, "key": 1}}, _INT], 0, ValueError, "'kind' = -1"),
    ([{"type": "testing.TestIntPair", "data": {"a": True, "b": 2}}], 0, TypeError, "'a'"),
    ([{"type": "testing.TestIntPair", "data": {"a": 2**64, "b": 2}}], 0, ValueError, "'a'"),
    ([{"type": "Device", "data": [1, 2**40]}], 0, ValueError, "out of range"),
    ([{"type": "ffi.Bytes", "data": "QUJD="}], 0, ValueError, "base64"),
    ([{"type": "ffi.Function", "data": {}}], 0, ValueError, "cannot be read"),
    ([{"type": "int", "data": "1"}], 0, TypeError, "must be an integer"),
    ([{"type": 3, "data": 1}], 0, TypeError, '"type" must be a string'),
    ([[1]], 0, TypeError, "node 0 must be an object"),
    ([{"type": "ffi.String"}], 0, TypeError, 'missing "data"'),
]


@pytest.mark.parametrize(("nodes", "root", "error", "match"), _NAMED_FAULTS)
def test_untrusted_graph_fields_are_named(
    nodes: list[Any], root: Any, error: Any, match: str
) -> None:
    text = json.dumps({"root_index": root, "nodes": nodes})
    with pytest.raises(error, match=match):
        from_json_graph_str(text)


def test_every_route_to_the_decoder_is_checked() -> None:
    # A self-containing node written as `true` (the runtime reads it as index 1).
    text = _graph(1, [{"type": "int", "data": 1}, {"type": "ffi.Array", "data": [True]}])

    class Text:
        def __tvm_ffi_value__(self) -> str:
            return text

    import tvmffi._ffi_api as ffi_api

    decoders = [from_json_graph_str, tvmffi.get_global_func("ffi.FromJSONGraphString")]
    decoders.append(ffi_api.FromJSONGraphString)
    for decode in decoders:
        for arg in (text, Text(), tvmffi.convert(text)):
            with pytest.raises(TypeError, match="must be a node index"):
                decode(arg)
    with pytest.raises(TypeError, match="must be a node index"):
        tvmffi.get_global_func("ffi.FromJSONGraph")(json.loads(text))
    # The runtime reads the document as checked: with duplicate keys, the last one.
    first = '"nodes": [{"type": "ffi.Array", "data": [0]}]'
    dup = '{"root_index": 0, ' + first + ', "nodes": [{"type": "int", "data": 7}]}'
    assert from_json_graph_str(dup) == 7


def test_deeply_nested_json_text_raises_recursion_error_on_every_route() -> None:
    import sys

    deep = "[" * 200000 + "]" * 200000
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10**6)  # CPython's own JSON parser no longer stops it
    try:
        for decode in (from_json_graph_str, tvmffi.get_global_func("ffi.json.Parse")):
            with pytest.raises(RecursionError, match="nested too deeply"):
                decode(deep)
    finally:
        sys.setrecursionlimit(limit)
