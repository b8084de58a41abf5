"""tvmffi.structural: structural equality, hash, mismatch paths, keys and traversals.

Every operation is the runtime's own ``ffi.Structural*`` function, so results are
compared with the official binding's on the same runtime where that binding is there.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tvmffi
import tvmffi.testing
from tvmffi import (
    Array,
    DefRegionKind,
    Dict,
    InplaceMode,
    List,
    Map,
    StructuralKey,
    StructuralMutator,
    StructuralVisitor,
    VisitInterrupt,
    WalkOrder,
    WalkResult,
)
from tvmffi.access_path import AccessPath

make_regions = tvmffi.get_global_func("testing.make_visit_region_graph")

# JSON-like values the runtime converts: nested lists/dicts of scalars and strings.
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


# ---- equality, hash, mismatch -----------------------------------------------------
def test_equal_and_hash_ignore_dict_order() -> None:
    lhs = {"items": [1, 2, {"k": 3}], "meta": {"tag": "x"}}
    rhs = {"meta": {"tag": "x"}, "items": [1, 2, {"k": 3}]}
    other = {"items": [1, 2, {"k": 4}], "meta": {"tag": "x"}}
    assert tvmffi.structural_equal(lhs, rhs) is True
    assert tvmffi.structural_equal(lhs, other) is False
    assert tvmffi.structural_hash(lhs) == tvmffi.structural_hash(rhs)
    assert tvmffi.structural_hash(lhs) != tvmffi.structural_hash(other)


def test_hash_is_unsigned_64_bit() -> None:
    hashes = [tvmffi.structural_hash([i]) for i in range(64)]
    assert all(0 <= h < 2**64 for h in hashes)
    assert any(h >= 2**63 for h in hashes)  # the int64 result was masked, not clipped


def test_map_and_dict_differ_structurally() -> None:
    assert not tvmffi.structural_equal(Map({"a": 1}), Dict({"a": 1}))
    assert tvmffi.structural_equal(Dict({"a": 1, "b": 2}), Dict({"b": 2, "a": 1}))


def test_tensor_content_policy() -> None:
    t1 = tvmffi.from_dlpack(np.array([1.0, 2.0], dtype="float32"))
    t2 = tvmffi.from_dlpack(np.array([1.0, 3.0], dtype="float32"))
    assert not tvmffi.structural_equal(t1, t2)
    assert tvmffi.structural_equal(t1, t2, skip_tensor_content=True)
    assert tvmffi.structural_hash(t1, skip_tensor_content=True) == tvmffi.structural_hash(
        t2, skip_tensor_content=True
    )


def test_first_mismatch_paths() -> None:
    assert tvmffi.get_first_structural_mismatch([1, [2, 3]], [1, [2, 3]]) is None
    mismatch = tvmffi.get_first_structural_mismatch([1, [2, 3]], [1, [2, 4]])
    assert isinstance(mismatch, tuple) and len(mismatch) == 2
    expected = AccessPath.root().array_item(1).array_item(1)
    assert mismatch[0] == expected and mismatch[1] == expected
    lhs, rhs = tvmffi.get_first_structural_mismatch({"a": 1}, {"b": 1}) or (None, None)
    assert isinstance(lhs, AccessPath) and isinstance(rhs, AccessPath)


@settings(max_examples=60, deadline=None)
@given(json_values, json_values)
def test_equal_agrees_with_hash_and_mismatch(a: Any, b: Any) -> None:
    equal = tvmffi.structural_equal(a, b)
    assert equal == (tvmffi.get_first_structural_mismatch(a, b) is None)
    assert tvmffi.structural_equal(a, a)
    if equal:
        assert tvmffi.structural_hash(a) == tvmffi.structural_hash(b)
    assert (StructuralKey(a) == StructuralKey(b)) == equal


def test_same_results_as_official_binding() -> None:
    tvm_ffi = pytest.importorskip("tvm_ffi")
    values = [None, 1, 2.5, "s", b"b", [1, [2]], {"a": [1, {"b": 2}]}, Map({"k": Array([1])})]
    for v in values:
        assert tvmffi.structural_hash(v) == tvm_ffi.structural_hash(v)
        assert tvmffi.structural_hash(v, map_free_vars=True) == tvm_ffi.structural_hash(
            v, map_free_vars=True
        )
    assert tvmffi.StructuralKey([1, 2]).hash_i64 == tvm_ffi.StructuralKey([1, 2]).hash_i64


# ---- StructuralKey -----------------------------------------------------------------
def test_structural_key_in_python_dict_and_map() -> None:
    k1 = StructuralKey({"x": [1, 2], "y": [3]})
    k2 = StructuralKey({"y": [3], "x": [1, 2]})
    k3 = StructuralKey({"x": [1, 2], "y": [5]})
    assert k1 == k2 and k1 != k3
    assert (k1 != k2) is False
    assert hash(k1) == hash(k2) == tvmffi.structural_hash(k1.key)
    assert {k1: "a", k3: "b"}[k2] == "a"
    m = Map({k1: 1, k2: 2, k3: 3})
    assert len(m) == 2 and m[k1] == 2 and m[k3] == 3
    assert k1 != [1, 2]  # only another key compares equal
    assert type(tvmffi.get_global_func("testing.echo")(k1)) is StructuralKey


# ---- VisitInterrupt, visitor/mutator objects ------------------------------------------
def test_visit_interrupt_payload_and_default() -> None:
    assert tvmffi.structural_equal(VisitInterrupt({"a": [1]}).value, {"a": [1]})
    assert VisitInterrupt().value is None


@pytest.mark.parametrize("cls", [StructuralVisitor, StructuralMutator])
def test_traversal_objects_not_constructible(cls: type) -> None:
    with pytest.raises(TypeError, match="cannot be constructed directly"):
        cls()


def test_enums() -> None:
    assert (WalkOrder.PREORDER, WalkOrder.POSTORDER) == (0, 1)
    assert (WalkResult.ADVANCE, WalkResult.SKIP) == (0, 1)
    assert (InplaceMode.DISALLOW, InplaceMode.ALLOW) == (0, 1)
    assert (DefRegionKind.NONE, DefRegionKind.DEF_PATTERN, DefRegionKind.DEF_SIMPLE) == (0, 1, 2)


# ---- structural_walk ---------------------------------------------------------------
def test_walk_typed_callbacks_pre_and_post() -> None:
    root = Array([Array([1]), 2.5, "s"])
    for order, expected in [
        ("pre", ["array", "array", "int:1", "float", "str"]),
        (WalkOrder.PREORDER, ["array", "array", "int:1", "float", "str"]),
        ("post", ["int:1", "array", "float", "str", "array"]),
    ]:
        trace: list[str] = []
        result = tvmffi.structural_walk(
            root,
            [
                (Array, lambda v, t=trace: t.append("array")),
                (int, lambda v, t=trace: t.append(f"int:{v}")),
                ((float, str), lambda v, t=trace: t.append(type(v).__name__)),
            ],
            order=order,
        )
        assert result is None
        assert trace == expected


def test_walk_skip_and_interrupt() -> None:
    trace: list[Any] = []
    tvmffi.structural_walk(
        Array([Array([1]), 2]),
        [
            (Array, lambda v: WalkResult.SKIP if len(v) == 1 else None),
            (int, trace.append),
        ],
        order="pre",
    )
    assert trace == [2]
    found = tvmffi.structural_walk(
        Array([1, 2, 3]), (int, lambda v: VisitInterrupt(v * 10) if v == 2 else None)
    )
    assert isinstance(found, VisitInterrupt) and found.value == 20


@pytest.mark.parametrize("catch_all", [Any, object, typing.Any])
def test_walk_catch_all_and_single_callable(catch_all: Any) -> None:
    seen: list[str] = []
    tvmffi.structural_walk(Array([1, "a"]), (catch_all, lambda v: seen.append(type(v).__name__)))
    assert seen == ["int", "str", "Array"]
    seen2: list[str] = []
    tvmffi.structural_walk(Array([1]), lambda v: seen2.append(type(v).__name__), order="pre")
    assert seen2 == ["Array", "int"]


def test_walk_object_base_and_generic_alias_types() -> None:
    seen: list[str] = []
    tvmffi.structural_walk(
        Array([Map({"k": List([1])}), 2]),
        [(Map, lambda v: seen.append("map")), (tvmffi.Object, lambda v: seen.append("obj"))],
        order="pre",
    )
    assert seen == ["obj", "map", "obj"]
    seen.clear()
    tvmffi.structural_walk(Array([Array([1])]), (Array[int], lambda v: seen.append("a")))  # type: ignore[misc]
    assert seen == ["a", "a"]
    seen.clear()
    tvmffi.structural_walk(
        Array([List([1]), Dict({"a": 1})]),
        [(list, lambda v: seen.append("l")), (dict, lambda v: seen.append("d"))],
    )
    assert seen == ["l", "d"]


def test_walk_with_def_region_kind() -> None:
    kinds: list[tuple[int, DefRegionKind]] = []
    tvmffi.structural_walk(
        make_regions(False),
        with_def_region_kind=(int, lambda v, k: kinds.append((v, k))),
        order="pre",
    )
    assert kinds == [
        (1, DefRegionKind.DEF_SIMPLE),
        (2, DefRegionKind.DEF_PATTERN),
        (3, DefRegionKind.NONE),
    ]
    assert all(type(k) is DefRegionKind for _, k in kinds)


def test_walk_callback_exception_propagates() -> None:
    def boom(v: int) -> None:
        raise KeyError("walk failure")

    with pytest.raises(KeyError, match="walk failure"):
        tvmffi.structural_walk(Array([1]), (int, boom))


@pytest.mark.parametrize(
    "callbacks",
    [42, "int", [(int, print), 3], [(int,)], (int, 3, print), [lambda v: v]],
)
def test_bad_callback_entries_raise_type_error(callbacks: Any) -> None:
    with pytest.raises(TypeError, match="structural_walk callbacks"):
        tvmffi.structural_walk(Array([1]), callbacks)


@pytest.mark.parametrize(
    "bad_type",
    [complex, tvmffi.Shape, int | None, tuple, "int", 3, int | str],
)
def test_unsupported_callback_types_raise_type_error(bad_type: Any) -> None:
    for api in (tvmffi.structural_walk, tvmffi.structural_map):
        with pytest.raises(TypeError, match="callback type must be"):
            api(Array([1]), (bad_type, lambda v: v))
    with pytest.raises(TypeError, match="structural_visit callback type must be"):
        tvmffi.structural_visit(Array([1]), (bad_type, lambda v, vis: None))


def test_bad_order_raises_value_error() -> None:
    with pytest.raises(ValueError, match="Unknown structural walk order: 'middle'"):
        tvmffi.structural_walk(Array([1]), (), order="middle")
    with pytest.raises(ValueError, match="Unknown structural map order: 2"):
        tvmffi.structural_map(Array([1]), (), order=2)  # type: ignore[arg-type]


# ---- structural_visit --------------------------------------------------------------
def test_visit_owns_descent() -> None:
    trace: list[Any] = []

    def on_array(v: Array, visitor: StructuralVisitor) -> Any:
        assert isinstance(visitor, StructuralVisitor)
        assert visitor.def_region_kind() == DefRegionKind.NONE
        trace.append("array")
        return visitor.visit(v[1])  # only the second child

    def on_int(v: int, visitor: StructuralVisitor) -> Any:
        trace.append(v)
        return None

    assert tvmffi.structural_visit(Array([1, 2, 3]), [(Array, on_array), (int, on_int)]) is None
    assert trace == ["array", 2]


def test_visit_with_def_region_kind() -> None:
    kinds: list[DefRegionKind] = []

    def on_array(v: Array, visitor: StructuralVisitor) -> Any:
        def inner() -> Any:
            kinds.append(visitor.def_region_kind())
            return "inner-result"

        assert visitor.with_def_region_kind(DefRegionKind.DEF_PATTERN, inner) == "inner-result"
        return visitor.default_visit(v)

    tvmffi.structural_visit(Array([Array([1])]), (Array, on_array))
    # default_visit bypasses the callback for the outer Array only: the inner one gets it too
    assert kinds == [DefRegionKind.DEF_PATTERN, DefRegionKind.DEF_PATTERN]


# ---- structural_mutate / structural_map ---------------------------------------------
def test_mutate_inplace_mode_and_copy_on_write() -> None:
    modes: list[Any] = []

    def with_mode(v: Array, m: StructuralMutator, mode: int) -> Any:
        modes.append(mode)
        return m.default_mutate(v)

    def bump(v: int, m: StructuralMutator) -> int:
        return v + 1

    root = Array([1, 2])
    out = tvmffi.structural_mutate(root, [(Array, with_mode), (int, bump)])
    assert list(out) == [2, 3] and list(root) == [1, 2] and not out.same_as(root)
    assert modes == [InplaceMode.DISALLOW] and type(modes[0]) is int
    moved = Array([5])
    out2 = tvmffi.structural_mutate(moved._move(), [(Array, with_mode), (int, bump)])
    assert modes[-1] == InplaceMode.ALLOW and list(out2) == [6]


def test_mutate_callback_signature_checked() -> None:
    with pytest.raises(TypeError, match=r"\(value, mutator\)"):
        tvmffi.structural_mutate(Array([1]), (int, lambda v: v))


def test_mutator_var_remap_and_region() -> None:
    regions = make_regions(False)
    seen: list[Any] = []

    def on_root(v: Any, m: StructuralMutator) -> Any:
        assert m.var_remap_get(v) is None
        m.var_remap_set(v, 7)
        seen.append(m.var_remap_get(v))
        seen.append(m.with_def_region_kind(DefRegionKind.DEF_SIMPLE, m.def_region_kind))
        return v

    tvmffi.structural_mutate(regions, (type(regions), on_root))
    assert seen == [7, DefRegionKind.DEF_SIMPLE]


def test_map_replaces_and_keeps_unchanged_identity() -> None:
    root = Array([Map({"value": Array([1])}), "s"])
    out = tvmffi.structural_map(root, (int, lambda v: v + 1))
    assert list(out[0]["value"]) == [2] and list(root[0]["value"]) == [1]
    same = tvmffi.structural_map(root, (int, lambda v: v))
    assert same.same_as(root)
    lengths = tvmffi.structural_map(Array(["abc", b"de"]), [(str, len), (bytes, len)])
    assert list(lengths) == [3, 2]


def test_map_with_def_region_kind() -> None:
    out = tvmffi.structural_map(
        make_regions(False),
        with_def_region_kind=(int, lambda v, k: v * 10 if k == DefRegionKind.NONE else v),
    )
    assert (out.simple, out.pattern, out.ordinary) == (1, 2, 30)


def test_map_moved_root_changes_in_place() -> None:
    moved = Array([1])
    handle = moved.__chandle__()
    out = tvmffi.structural_map(moved._move(), (int, lambda v: v + 1))
    assert out.__chandle__() == handle and list(out) == [2]


def _interop_cases() -> list[Callable[[Any], Any]]:
    return [
        lambda ffi: ffi.structural_hash(ffi.convert([1, {"a": 2}])),
        lambda ffi: ffi.structural_equal(ffi.convert([1]), ffi.convert([1])),
    ]


def test_official_objects_as_inputs() -> None:
    tvm_ffi = pytest.importorskip("tvm_ffi")
    official = tvm_ffi.convert([1, {"a": 2}])
    assert tvmffi.structural_equal(official, [1, {"a": 2}])
    assert tvmffi.structural_hash(official) == tvm_ffi.structural_hash(official)
    for case in _interop_cases():
        assert case(tvmffi) == case(tvm_ffi)
    # An official-binding class names its FFI type as a callback type too.
    seen: list[int] = []
    tvmffi.structural_walk(official, (tvm_ffi.Map, lambda v: seen.append(len(v))))
    assert seen == [1]


# ---- deep and cyclic values: a clean error, never a crashed process --------------------
def _cyclic_list() -> List:
    lst = List([1])
    lst.append(lst)
    return lst


def _cyclic_dict() -> Dict:
    d = Dict({"a": 1})
    d["self"] = Array([d])
    return d


def _cyclic_object() -> Any:
    obj = tvmffi.testing.create_object(
        "testing.TestObjectDerived",
        v_i64=1,
        v_f64=0.0,
        v_str="",
        v_map=Map({}),
        v_array=Array([]),
    )
    obj.v_array = Array([obj])
    return obj


_TRAVERSALS: list[tuple[str, Callable[[Any], Any]]] = [
    ("hash", tvmffi.structural_hash),
    ("equal", lambda v: tvmffi.structural_equal(v, v)),
    ("mismatch", lambda v: tvmffi.get_first_structural_mismatch(v, v)),
    ("key", StructuralKey),
    ("walk", lambda v: tvmffi.structural_walk(v, ())),
    ("visit", lambda v: tvmffi.structural_visit(v, ())),
    ("map", lambda v: tvmffi.structural_map(v, ())),
    ("mutate", lambda v: tvmffi.structural_mutate(v, ())),
    ("json", tvmffi.serialization.to_json_graph_str),
]


def _derived(v_array: Array) -> Any:
    return tvmffi.testing.create_object(
        "testing.TestObjectDerived", v_i64=1, v_f64=0.0, v_str="", v_map=Map({}), v_array=v_array
    )


def test_fields_read_in_place_still_find_cycles_and_depth() -> None:
    # The guard learns from a first read through a field's getter that the field keeps
    # an object pointer (v_array, v_map) and reads later objects' fields in place; a
    # cycle or a depth made through such a field afterwards is found all the same.
    to_json = tvmffi.serialization.to_json_graph_str  # walks every field, guarded
    assert '"testing.TestObjectDerived"' in to_json(_derived(Array([1])))
    obj = _derived(Array([]))
    assert to_json(obj) == to_json(_derived(Array([])))
    obj.v_array = Array([Array([obj])])
    with pytest.raises(ValueError, match=r"Cycle detected: a testing\.TestObjectDerived"):
        to_json(obj)
    deep = _derived(Array([]))
    for _ in range(3000):  # deeper than a 512 KiB stack has room for
        deep = _derived(Array([deep]))
    assert isinstance(_run_in_small_stack_thread(lambda: to_json(deep)), RecursionError)


@pytest.mark.parametrize("make", [_cyclic_list, _cyclic_dict, _cyclic_object])
@pytest.mark.parametrize(("name", "op"), _TRAVERSALS, ids=[n for n, _ in _TRAVERSALS])
def test_cycles_raise_value_error(name: str, op: Callable[[Any], Any], make: Any) -> None:
    with pytest.raises(ValueError, match=r"Cycle detected: a .* contains itself"):
        op(make())
    with pytest.raises(ValueError, match="Cycle detected"):
        op(Array([1, Map({"k": make()})]))  # also below the root


def test_cycle_inside_callbacks_raises_value_error() -> None:
    cyc = _cyclic_list()
    with pytest.raises(ValueError, match="Cycle detected"):
        tvmffi.structural_map(Array([1]), (int, lambda v: cyc), order="pre")
    with pytest.raises(ValueError, match="Cycle detected"):
        tvmffi.structural_visit(Array([1]), (Array, lambda v, vis: vis.visit(cyc)))
    with pytest.raises(ValueError, match="Cycle detected"):
        tvmffi.structural_mutate(Array([1]), (Array, lambda v, m: m.mutate(cyc)))


def test_pre_order_walk_callback_making_a_cycle_raises_value_error() -> None:
    # The runtime descends a value right after its pre-order callback: a callback that
    # makes the value contain itself was a C stack overflow (segfault) there.
    inner = List([2])
    root = List([1, inner])

    def close_cycle(v: Any) -> None:
        if v.same_as(inner):
            inner.append(root)

    with pytest.raises(ValueError, match="Cycle detected"):
        tvmffi.structural_walk(root, (List, close_cycle), order="pre")
    seen: list[int] = []  # post-order: the children were walked before the callback
    tvmffi.structural_walk(List([1, List([2])]), (int, seen.append), order="pre")
    assert seen == [1, 2]
    # A cycle a callback leaves anywhere under the root stops the walk, even one the walk
    # would skip: the root is checked again after a change, as a root that contains a
    # cycle callbacks would prune is refused at the start (which nodes are still ahead
    # cannot be told from here).
    skipped: list[Any] = []

    def skip_after_cycle(v: Any) -> Any:
        skipped.append(v)
        if len(skipped) == 2:
            v.append(v)
            return WalkResult.SKIP
        return None

    with pytest.raises(ValueError, match="Cycle detected"):
        tvmffi.structural_walk(List([List([1])]), (List, skip_after_cycle), order="pre")
    assert len(skipped) == 2


def test_pre_order_walk_callback_nesting_too_deep_raises_recursion_error() -> None:
    def deepen(v: Any) -> None:
        if len(v) == 0:
            return
        deep: Any = List([])
        for _ in range(3000):
            deep = List([deep])
        v.append(deep)

    err = _run_in_small_stack_thread(
        lambda: tvmffi.structural_walk(List([1]), (List, deepen), order="pre")
    )
    # Raised inside a callback, it crosses the runtime: RecursionError is not one of the
    # error kinds registered to come back as themselves (as officially), so RuntimeError.
    assert isinstance(err, (RecursionError, RuntimeError)), err
    assert "too deep" in str(err)


def test_shared_subvalues_are_not_cycles() -> None:
    # A diamond 80 levels high has 2**80 paths: the check visits each node once.
    x: Any = Array([1])
    for _ in range(80):
        x = Array([x, x])
    assert tvmffi._core._graph_check(x, 1024, True) is x
    shared = Array([1, 2])
    assert tvmffi.structural_hash(Array([shared, shared])) == tvmffi.structural_hash(
        Array([Array([1, 2]), Array([1, 2])])
    )


def _run_in_small_stack_thread(fn: Callable[[], Any]) -> Any:
    """fn() on a thread with a 512 KiB stack: its result, or the exception it raised."""
    import threading

    out: list[Any] = []

    def target() -> None:
        try:
            out.append(fn())
        except BaseException as err:  # handed back to the test
            out.append(err)

    old = threading.stack_size(512 * 1024)
    try:
        t = threading.Thread(target=target)
        t.start()
        t.join()
    finally:
        threading.stack_size(old)
    return out[0]


@pytest.mark.parametrize(("name", "op"), _TRAVERSALS, ids=[n for n, _ in _TRAVERSALS])
def test_too_deep_for_the_stack_raises_recursion_error(name: str, op: Callable[[Any], Any]) -> None:
    deep: Any = Array([1])
    for _ in range(3000):  # the runtime would overflow a 512 KiB stack on this
        deep = Array([deep])
    shallow = Array([Array([Array([1])])])
    err = _run_in_small_stack_thread(lambda: op(deep))
    assert isinstance(err, RecursionError), err
    assert "too deep" in str(err)
    ok = _run_in_small_stack_thread(lambda: op(shallow))
    assert not isinstance(ok, BaseException), ok


def test_depth_limit_follows_the_stack() -> None:
    main = tvmffi._core._depth_limit(1024)
    small = _run_in_small_stack_thread(lambda: tvmffi._core._depth_limit(1024))
    assert 0 < small < 512 < main
    with pytest.raises(ValueError, match="bytes_per_level"):
        tvmffi._core._depth_limit(0)


def test_back_pointer_in_ignored_field_is_not_a_cycle() -> None:
    from tvmffi.dataclasses import field, py_class

    @py_class("test_structural.TreeNode", structural_eq="tree")
    class TreeNode(tvmffi.Object):
        value: int
        children: list  # type: ignore[type-arg]
        parent: tvmffi.Object | None = field(structural_eq="ignore", default=None)

    root = TreeNode(1, [])
    root.children = [TreeNode(2, [], root)]  # child -> parent -> root: ignored by traversals
    assert tvmffi.structural_equal(root, root)
    assert tvmffi.structural_hash(root) == tvmffi.structural_hash(root)
    seen: list[int] = []
    tvmffi.structural_walk(root, (int, seen.append))
    assert seen == [1, 2]  # field order: value, then the children
    mapped = tvmffi.structural_map(root, (int, lambda v: v * 10))
    assert mapped.value == 10 and mapped.children[0].value == 20
    # The JSON graph writes every field: there it is a cycle.
    with pytest.raises(ValueError, match="Cycle detected"):
        tvmffi.serialization.to_json_graph_str(root)


def test_structural_key_whose_value_became_cyclic() -> None:
    inner = List([1])
    k1, k2 = StructuralKey(inner), StructuralKey(List([1]))
    assert k1 == k2
    inner.append(inner)  # the key's value now contains itself
    with pytest.raises(ValueError, match="Cycle detected"):
        k1 == k2  # noqa: B015
    assert (k1 == [1]) is False


def _wide(inner: Any, n: int = 40) -> Map:
    """A Map of n entries (the runtime's dense layout past 4) with inner in the middle."""
    entries: dict[Any, Any] = {f"key-{i:03d}": i for i in range(n)}
    entries["key-mid"] = inner
    return Map(entries)


@pytest.mark.parametrize(("name", "op"), _TRAVERSALS, ids=[n for n, _ in _TRAVERSALS])
def test_cycle_and_depth_found_through_wide_maps(name: str, op: Callable[[Any], Any]) -> None:
    # Map entries are read in the runtime's layout: a cycle or a deep chain hidden
    # among a dense map's entries (keys or values) must still be found.
    with pytest.raises(ValueError, match="Cycle detected"):
        op(_wide(_cyclic_list()))
    d = Dict({f"k{i}": i for i in range(40)})
    d[Array([d])] = 1  # the cycle through a key
    with pytest.raises(ValueError, match="Cycle detected"):
        op(d)
    deep: Any = Array([1])
    for _ in range(3000):
        deep = _wide(deep, 5) if _ % 500 == 0 else Array([deep])
    err = _run_in_small_stack_thread(lambda: op(deep))
    assert isinstance(err, RecursionError), err


@pytest.mark.parametrize(("name", "op"), _TRAVERSALS[:3], ids=[n for n, _ in _TRAVERSALS[:3]])
def test_remembered_height_is_checked_against_each_stack(
    name: str, op: Callable[[Any], Any]
) -> None:
    # A checked Array/Map graph remembers its height; a later call on a thread with
    # less stack must still refuse it.
    deep: Any = Array([1])
    for _ in range(3000):
        deep = Array([deep])
    op(deep)  # fits the main thread's stack; remembered
    op(deep)
    err = _run_in_small_stack_thread(lambda: op(deep))
    assert isinstance(err, RecursionError), err


def _walked_height(value: Any) -> int:
    """The height the guard measures by walking value's graph (0: a mutable node in it)."""
    fresh = tvmffi.get_global_func("testing.echo")(value)  # same handle, nothing recorded
    assert tvmffi._core._graph_height(fresh) == 0
    tvmffi._core._graph_check(fresh, 1024, True)
    return tvmffi._core._graph_height(fresh)


@settings(max_examples=60, deadline=None)
@given(st.lists(json_values, max_size=4) | st.dictionaries(st.text(max_size=4), json_values))
def test_converted_containers_record_the_height_the_guard_measures(value: Any) -> None:
    # A value built from Python lists/dicts is measured as it is built, so the guard
    # does not walk it: the recorded height must be the one the walk finds.
    converted = tvmffi.convert(value)
    assert tvmffi._core._graph_height(converted) == _walked_height(converted) > 0
    through_guard = tvmffi._core._graph_check(value, 1024, True)  # converted there
    assert tvmffi._core._graph_height(through_guard) == _walked_height(converted)


def test_array_and_map_constructors_record_heights() -> None:
    inner = Array([1, 2**70, b"x" * 40, None, 1.5])
    outer = Map({"k": Array([inner, "a long enough string"]), 2: inner})
    for v in (inner, outer, Array([]), Map({})):
        walked = _walked_height(v)
        # Exact where the elements' conversion shows it; a str counts as a leaf at most.
        assert walked <= tvmffi._core._graph_height(v) <= walked + 1
    assert tvmffi._core._graph_height(inner) == 2


def test_mutable_or_unmeasured_parts_leave_the_height_unknown() -> None:
    lst = List([1])
    for v in (tvmffi.convert([[1], lst]), Array([lst]), Map({"k": lst}), Array([Array([lst])])):
        assert tvmffi._core._graph_height(v) == 0  # walked by every check
    held = tvmffi.convert([1, [lst]])
    lst.append(lst)  # a cycle below a converted value: still found
    with pytest.raises(ValueError, match="Cycle detected"):
        tvmffi.structural_hash(held)
    with pytest.raises(ValueError, match="Cycle detected"):
        tvmffi.structural_equal([held], [held])


@pytest.mark.parametrize(("name", "op"), _TRAVERSALS[:3], ids=[n for n, _ in _TRAVERSALS[:3]])
def test_converted_deep_value_is_refused_on_a_small_stack(
    name: str, op: Callable[[Any], Any]
) -> None:
    nested: Any = [1]
    for _ in range(600):  # more levels than a 512 KiB stack has room for
        nested = [nested]
    deep = tvmffi.convert(nested)
    assert tvmffi._core._graph_height(deep) == 601
    op(deep)  # fits the main thread's stack
    err = _run_in_small_stack_thread(lambda: op(deep))  # the recorded height is too tall there
    assert isinstance(err, RecursionError), err
    op(nested)  # converted in the call (measured as it is built): fits the main stack


def test_equal_and_hash_signatures_and_argument_binding() -> None:
    import inspect
    import pickle

    a, b = Array([1, Map({"k": 2})]), Array([1, Map({"k": 2})])
    assert tvmffi.structural_equal(a, b) is True
    assert tvmffi.structural_equal(lhs=a, rhs=b, map_free_vars=True) is True
    assert tvmffi.structural_equal(a, Array([1])) is False
    assert tvmffi.structural_equal([1, {"k": 2}], b) is True  # converted once
    assert tvmffi.structural_hash(a) == tvmffi.structural_hash(value=b, skip_tensor_content=False)
    assert list(inspect.signature(tvmffi.structural_equal).parameters) == [
        "lhs", "rhs", "map_free_vars", "skip_tensor_content"
    ]
    assert tvmffi.structural_hash.__name__ == "structural_hash"
    assert "unsigned 64-bit" in (tvmffi.structural_hash.__doc__ or "")
    assert pickle.loads(pickle.dumps(tvmffi.structural_equal)) is tvmffi.structural_equal
    with pytest.raises(TypeError, match="missing required argument 'rhs'"):
        tvmffi.structural_equal(a)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'other'"):
        tvmffi.structural_equal(a, other=b)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values for argument 'lhs'"):
        tvmffi.structural_equal(a, b, lhs=a)  # type: ignore[misc]
    with pytest.raises(TypeError, match="at most 3 arguments"):
        tvmffi.structural_hash(a, False, False, 1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        tvmffi.structural_hash(object())


def _cycle_ahead_cases() -> list[tuple[str, Callable[[Any, Callable[..., Any]], Any]]]:
    return [
        ("walk post", lambda r, cb: tvmffi.structural_walk(r, (int, cb))),
        ("walk pre", lambda r, cb: tvmffi.structural_walk(r, (int, cb), order="pre")),
        ("visit", lambda r, cb: tvmffi.structural_visit(
            r, [(int, lambda v, vis: cb(v)), (List, lambda v, vis: vis.default_visit(v))]
        )),
        ("map", lambda r, cb: tvmffi.structural_map(r, (int, lambda v: (cb(v), v)[1]))),
        ("mutate", lambda r, cb: tvmffi.structural_mutate(r, (int, lambda v, m: (cb(v), v)[1]))),
    ]


@pytest.mark.parametrize(
    ("name", "run"), _cycle_ahead_cases(), ids=[n for n, _ in _cycle_ahead_cases()]
)
@pytest.mark.parametrize("how", ["append", "setitem", "field"])
def test_callback_closing_a_cycle_ahead_of_the_traversal_raises(
    name: str, run: Callable[[Any, Callable[..., Any]], Any], how: str
) -> None:
    # A callback on the first element makes a node the traversal has not reached yet
    # contain the root: the runtime would then recurse without end (a C stack overflow).
    later = List([7])
    holder = tvmffi.testing.create_object(
        "testing.TestObjectDerived", v_i64=1, v_f64=0.0, v_str="", v_map=Map({}),
        v_array=Array([]),
    )
    root = List([1, later, holder])

    def close(v: Any) -> None:
        if v == 1:
            if how == "append":
                later.append(root)
            elif how == "setitem":
                later[0] = root
            else:
                holder.v_array = Array([root])

    with pytest.raises(ValueError, match="Cycle detected"):
        run(root, close)


def test_callbacks_that_change_nothing_are_not_rechecked() -> None:
    # The root is checked again only when a change happened; reading values in
    # callbacks leaves the counter alone.
    before = tvmffi._core._graph_epoch()
    seen: list[int] = []
    lst = List([1, 2, List([3])])
    tvmffi.structural_walk(lst, (int, lambda v: seen.append(v + len(lst))))
    assert seen == [4, 5, 6]
    assert tvmffi._core._graph_epoch() == before
    lst.append(4)
    assert tvmffi._core._graph_epoch() == before + 1
