"""tvmffi.utils.unpack_dataclass: dataclass values to nested tuples, compiled per class."""

from __future__ import annotations

import dataclasses
import threading
from collections import namedtuple
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tvmffi.utils.unpack_dataclass import (
    _extract_dataclass_to_tuple_schema,
    _validate_dataclass_to_tuple_schema,
    unpack_dataclass_to_tuple,
)


@dataclasses.dataclass
class Point:
    x: int
    y: float


@dataclasses.dataclass
class Segment:
    a: Point
    b: Point
    tag: str


@dataclasses.dataclass
class Box:
    payload: Any
    items: list[Point]
    extra: int | None


@dataclasses.dataclass
class Single:
    only: int


@dataclasses.dataclass
class Empty:
    pass


@dataclasses.dataclass
class Chain:
    value: int
    rest: Chain | None


def test_schema_of_nested_and_dynamic_fields() -> None:
    assert _extract_dataclass_to_tuple_schema(Point) == {"x": None, "y": None}
    assert _extract_dataclass_to_tuple_schema(Segment) == {
        "a": {"x": None, "y": None},
        # As in the official module, a class already expanded once in this schema
        # is dispatched at run time the next time (the memo guards recursion).
        "b": "unpack",
        "tag": None,
    }
    assert _extract_dataclass_to_tuple_schema(Box) == {
        "payload": "unpack",
        "items": "unpack",
        "extra": None,
    }
    # A self-reference is dispatched at run time, not expanded forever.
    assert _extract_dataclass_to_tuple_schema(Chain) == {"value": None, "rest": "unpack"}


def test_unpack_matches_astuple_without_copying_leaves() -> None:
    leaf = object()
    seg = Segment(Point(1, 2.0), Point(3, 4.5), "s")
    assert unpack_dataclass_to_tuple(seg) == dataclasses.astuple(seg)
    box = Box(payload=[leaf, Point(5, 6.0)], items=[Point(7, 8.0)], extra=None)
    out = unpack_dataclass_to_tuple(box)
    assert out == ([leaf, (5, 6.0)], [(7, 8.0)], None)
    assert out[0][0] is leaf
    assert unpack_dataclass_to_tuple(Single(3)) == (3,)
    assert unpack_dataclass_to_tuple(Empty()) == ()
    assert unpack_dataclass_to_tuple(Chain(1, Chain(2, None))) == (1, (2, None))


def test_containers_keep_their_type() -> None:
    rec_type = namedtuple("Rec", "p q")
    rec = unpack_dataclass_to_tuple(rec_type(Point(1, 1.0), 2))
    assert type(rec) is rec_type and rec == ((1, 1.0), 2)
    assert unpack_dataclass_to_tuple({"k": [Point(0, 0.0)]}) == {"k": [(0, 0.0)]}
    assert unpack_dataclass_to_tuple((Point(1, 2.0),)) == ((1, 2.0),)


def test_bad_schemas_are_refused_before_code_is_built() -> None:
    with pytest.raises(TypeError, match="must be a dict"):
        _validate_dataclass_to_tuple_schema([])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a valid Python identifier"):
        _validate_dataclass_to_tuple_schema({"a": {"b); import os; (": None}})
    with pytest.raises(ValueError, match="is a Python keyword"):
        _validate_dataclass_to_tuple_schema({"lambda": None})
    with pytest.raises(TypeError, match="Expected a dataclass class"):
        _extract_dataclass_to_tuple_schema(Point(1, 2.0))  # type: ignore[arg-type]


def test_each_thread_compiles_its_own_unpacker() -> None:
    results: list[Any] = []

    def work() -> None:
        results.append(unpack_dataclass_to_tuple(Segment(Point(1, 2.0), Point(3, 4.0), "t")))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [((1, 2.0), (3, 4.0), "t")] * 4


@given(st.lists(st.tuples(st.integers(), st.floats(allow_nan=False)), max_size=8))
def test_property_same_as_astuple(pairs: list[tuple[int, float]]) -> None:
    @dataclasses.dataclass
    class Holder:
        points: list[Point]
        first: Any

    holder = Holder([Point(x, y) for x, y in pairs], Point(*pairs[0]) if pairs else None)
    expected = dataclasses.astuple(holder)
    assert unpack_dataclass_to_tuple(holder) == expected


def test_container_subclasses_and_other_values_per_type() -> None:
    # Behaviour written down before the rewrite (issue 30): lists and tuples keep their
    # type (a subclass too), dicts become plain dicts, other values come back as is;
    # a second call on the same types gives the same answers (the handler is cached).
    class Items(list):  # type: ignore[type-arg]
        pass

    class Table(dict):  # type: ignore[type-arg]
        pass

    @dataclasses.dataclass
    class P:
        x: int

    marker = object()
    for _ in range(2):
        items = unpack_dataclass_to_tuple(Items([P(1), marker]))
        assert type(items) is Items and items == [(1,), marker]
        table = unpack_dataclass_to_tuple(Table(a=P(2)))
        assert type(table) is dict and table == {"a": (2,)}
        assert unpack_dataclass_to_tuple(marker) is marker
