# ruff: noqa: UP007, UP045  (typing.Optional / Union spellings are inputs under test)
"""TypeSchema.from_annotation / check_value / convert and CAny (the official type converter)."""

from __future__ import annotations

import ctypes
import gc
import typing
from collections.abc import Callable
from typing import Any, Optional, Union

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tvmffi
from tvmffi.core import CAny, ObjectConvertible, TypeSchema, _to_py_class_value
from tvmffi.dataclasses import py_class

A = TypeSchema.from_annotation
INT64 = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)


def roundtrip(schema: TypeSchema, value: Any) -> Any:
    return _to_py_class_value(schema.convert(value))


@pytest.mark.parametrize(
    ("annotation", "text"),
    [
        (int, "int"),
        (Optional[int], "int | None"),
        (Union[int, str], "int | str"),
        (int | None, "int | None"),
        (list[int], "List[int]"),
        (dict[str, float], "Dict[str, float]"),
        (tuple[int, ...], "Array[int]"),
        (tuple[int, str], "tuple[int, str]"),
        (Callable[[int], str], "Callable[[int], str]"),
        (Callable[..., int], "Callable[..., int]"),
        (tvmffi.Map[str, int], "Map[str, int]"),
        (tvmffi.Array[int], "Array[int]"),
        (tvmffi.Object, "Object"),
        (tvmffi.Function, "Callable[..., Any]"),
        (tvmffi.Tensor, "Tensor"),
        (tvmffi.dtype, "dtype"),
        (tvmffi.Device, "Device"),
        (ctypes.c_void_p, "ctypes.c_void_p"),
        (typing.Any, "Any"),
        (None, "None"),
    ],
)
def test_from_annotation(annotation: Any, text: str) -> None:
    assert A(annotation).repr() == text


def test_from_annotation_refuses_what_has_no_ffi_type() -> None:
    class NotFFI:
        pass

    with pytest.raises(TypeError, match="Cannot convert"):
        A(NotFFI)
    with pytest.raises(TypeError, match="at most 1 type argument"):
        A(list[int, str])  # type: ignore[misc]
    with pytest.raises(ValueError, match="at least two"):
        TypeSchema("Union", (TypeSchema("int"),))


def test_scalars_convert_by_the_ffi_rules() -> None:
    assert roundtrip(A(int), True) == 1 and type(roundtrip(A(int), True)) is int
    assert roundtrip(A(float), 3) == 3.0 and type(roundtrip(A(float), 3)) is float
    assert roundtrip(A(bool), 0) is False
    assert isinstance(roundtrip(A(str), "hi"), tvmffi.core.String)
    assert roundtrip(A(bytes), bytearray(b"ab")) == b"ab"
    assert roundtrip(A(tvmffi.dtype), "float32") == tvmffi.dtype("float32")
    assert roundtrip(A(tvmffi.Device), "cpu:0") == tvmffi.device("cpu", 0)
    assert roundtrip(A(ctypes.c_void_p), None).value is None
    with pytest.raises(TypeError, match="expected int, got float"):
        A(int).check_value(1.5)
    with pytest.raises(TypeError, match="out of int64 range"):
        A(int).check_value(1 << 63)
    with pytest.raises(TypeError, match="invalid dtype string"):
        A(tvmffi.dtype).check_value("not-a-dtype")
    with pytest.raises(TypeError, match=r"expected int \| str, got float"):
        A(Union[int, str]).check_value(1.5)


def test_containers_convert_element_by_element() -> None:
    arr = roundtrip(A(tuple[int, ...]), [1, True, 3])
    assert isinstance(arr, tvmffi.Array) and list(arr) == [1, 1, 3]
    lst = roundtrip(A(list[float]), (1, 2))
    assert isinstance(lst, tvmffi.List) and list(lst) == [1.0, 2.0]
    m = roundtrip(A(dict[str, int]), {"a": True})
    assert isinstance(m, tvmffi.Dict) and dict(m) == {"a": 1}
    assert tuple(roundtrip(A(tuple[int, str]), (True, "x"))) == (1, "x")
    with pytest.raises(TypeError, match=r"element \[1\]: expected int, got str"):
        A(list[int]).check_value([1, "x"])
    with pytest.raises(TypeError, match="value for key 'k': expected int"):
        A(dict[str, int]).check_value({"k": "v"})
    with pytest.raises(TypeError, match="expected tuple of length 2"):
        A(tuple[int, str]).check_value([1])
    with pytest.raises(TypeError, match="expected Array, got int"):
        A(tuple[int, ...]).check_value(3)


def test_bare_tuple_and_empty_tuple_differ() -> None:
    bare, empty = A(tuple), A(tuple[()])
    assert bare.args is None and empty.args == ()
    assert (bare.repr(), empty.repr()) == ("tuple", "tuple[()]")
    assert list(roundtrip(bare, [1, "a", None])) == [1, "a", None]
    empty.check_value([])
    with pytest.raises(TypeError, match="expected tuple of length 0"):
        empty.check_value([1])
    assert TypeSchema.from_json_obj(bare.to_json()) == bare
    assert TypeSchema.from_json_obj(empty.to_json()) == empty != bare


def test_unchanged_ffi_values_keep_their_identity() -> None:
    arr = tvmffi.Array([1, 2])
    assert roundtrip(A(tuple[int, ...]), arr).same_as(arr)
    f = tvmffi.get_global_func("testing.echo")
    assert roundtrip(A(Callable), f).same_as(f)
    assert roundtrip(A(tvmffi.Object), arr).same_as(arr)
    with pytest.raises(TypeError, match="expected Object, got int"):
        A(tvmffi.Object).check_value(3)
    with pytest.raises(TypeError, match=r"expected Map, got ffi\.Array"):
        A(tvmffi.Map).check_value(arr)


def test_protocol_values_go_through_the_c_conversion() -> None:
    class IntLike:
        def __tvm_ffi_int__(self) -> int:
            return 7

    class Wrapped:
        def __tvm_ffi_value__(self) -> Any:
            return [1, 2]

    class Conv(ObjectConvertible):
        def asobject(self) -> Any:
            return tvmffi.Array([5])

    assert roundtrip(A(int), IntLike()) == 7
    assert list(roundtrip(A(tuple[int, ...]), Wrapped())) == [1, 2]
    assert list(roundtrip(A(tvmffi.Array), Conv())) == [5]

    class Cycle:
        def __tvm_ffi_value__(self) -> Any:
            return Cycle()

    with pytest.raises(TypeError, match="cycle"):
        A(int).check_value(Cycle())


def test_opaque_pointer_handler_is_honoured() -> None:
    class Event:
        def __init__(self, address: int) -> None:
            self.address = address

    handlers = tvmffi.core._OPAQUE_PTR_HANDLERS
    handlers[Event] = lambda e: e.address
    try:
        assert roundtrip(A(ctypes.c_void_p), Event(0xBEEF)).value == 0xBEEF
    finally:
        del handlers[Event]
    with pytest.raises(TypeError, match=r"expected ctypes\.c_void_p"):
        A(ctypes.c_void_p).check_value(Event(1))


def test_cany_owns_its_object_reference() -> None:
    arr = tvmffi.Array([1, 2, 3])
    before = tvmffi._core.object_use_count(arr)
    held = CAny(arr)
    assert held.type_index == 71
    assert tvmffi._core.object_use_count(arr) == before + 1
    del held
    gc.collect()
    assert tvmffi._core.object_use_count(arr) == before
    assert repr(CAny(3)) == "CAny(int=3)" and repr(CAny()) == "CAny(None)"
    with pytest.raises(TypeError, match="expects a CAny, got int"):
        _to_py_class_value(3)  # type: ignore[arg-type]


def test_to_json_round_trips() -> None:
    for ann in (Optional[list[int]], Callable[[int, str], float], dict[str, tuple[int, ...]]):
        schema = A(ann)
        assert TypeSchema.from_json_obj(schema.to_json()) == schema


@given(INT64)
def test_property_int_roundtrip(x: int) -> None:
    assert roundtrip(A(int), x) == x
    assert roundtrip(A(Optional[int]), x) == x


@given(st.one_of(st.integers(min_value=1 << 63), st.integers(max_value=-(1 << 63) - 1)))
def test_property_int_out_of_range_is_a_type_error(x: int) -> None:
    with pytest.raises(TypeError, match="out of int64 range"):
        A(int).check_value(x)


@given(st.lists(st.one_of(INT64, st.booleans(), st.text(max_size=12)), max_size=10))
def test_property_union_list(values: list[Any]) -> None:
    out = list(roundtrip(A(list[int | str]), values))
    assert out == [int(v) if isinstance(v, bool) else v for v in values]


def test_from_type_index_refuses_unknown_indices_without_aborting() -> None:
    # The runtime aborts the process on type info of an unknown index: refused first.
    assert TypeSchema.from_type_index(1).repr() == "int"
    assert TypeSchema.from_type_index(71, (TypeSchema("int"),)).repr() == "Array[int]"
    assert TypeSchema.from_type_index(78).to_json() == {"type": "ffi.BigInt"}
    for bad in (14, 100, 99999):
        with pytest.raises(ValueError, match=f"unknown type index {bad}"):
            TypeSchema.from_type_index(bad)
    assert tvmffi.core._lookup_type_attr(99999, "__ffi_repr__", ancestor=True) is None


def test_field_setter_form_carries_only_the_reason() -> None:
    conv = A(list[int])._converter()
    assert _to_py_class_value(conv.convert_field([1, True])) == [1, 1]
    with pytest.raises(TypeError) as info:
        conv.convert_field([1, None])
    assert str(info.value) == "element [1]: expected int, got None"


# ---- property tests: the compiled plan against a model of the conversion rules ----------
# A schema strategy paired with a strategy of values it accepts and the value's expected
# conversion (what _to_py_class_value gives back, as plain Python).
_LEAVES: list[tuple[Any, st.SearchStrategy[Any], Callable[[Any], Any]]] = [
    (int, st.one_of(INT64, st.booleans()), int),
    (float, st.one_of(st.floats(allow_nan=False), INT64, st.booleans()), float),
    (bool, st.one_of(st.booleans(), INT64), bool),
    (str, st.text(max_size=20), str),
]


def _plain(value: Any) -> Any:
    if isinstance(value, (tvmffi.Array, tvmffi.List)):
        return [_plain(v) for v in value]
    if isinstance(value, (tvmffi.Map, tvmffi.Dict)):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _typed(depth: int) -> st.SearchStrategy[tuple[Any, st.SearchStrategy[Any], Any]]:
    leaf = st.sampled_from(_LEAVES)
    if depth == 0:
        return leaf

    def wrap(inner: tuple[Any, st.SearchStrategy[Any], Any]) -> Any:
        ann, values, norm = inner
        return st.sampled_from(
            [
                (list[ann], st.lists(values, max_size=4), lambda v: [norm(x) for x in v]),
                (
                    tuple[ann, ...],
                    st.lists(values, max_size=4).map(tuple),
                    lambda v: [norm(x) for x in v],
                ),
                (
                    dict[str, ann],
                    st.dictionaries(st.text(max_size=5), values, max_size=3),
                    lambda v: {k: norm(x) for k, x in v.items()},
                ),
                (
                    Optional[ann],
                    st.one_of(st.none(), values),
                    lambda v: None if v is None else norm(v),
                ),
            ]
        )

    return st.one_of(leaf, _typed(depth - 1).flatmap(wrap))


@given(_typed(3).flatmap(lambda t: st.tuples(st.just(t), t[1])))
def test_property_nested_conversion_matches_the_model(case: Any) -> None:
    (ann, _, norm), value = case
    schema = A(ann)
    got = _plain(roundtrip(schema, value))
    assert got == norm(value)
    assert _plain(schema._converter()(value)) == got  # the vectorcall form agrees
    schema.check_value(value)


@given(st.lists(INT64, max_size=8), st.data())
def test_property_element_error_names_its_position(items: list[int], data: Any) -> None:
    at = data.draw(st.integers(min_value=0, max_value=len(items)))
    bad = data.draw(st.sampled_from(["x", 1.5, None, b"b"]))
    items.insert(at, bad)  # type: ignore[arg-type]
    want = {str: "str", float: "float", type(None): "None", bytes: "bytes"}[type(bad)]
    with pytest.raises(TypeError) as info:
        A(list[int]).check_value(items)
    assert str(info.value) == (
        f"type check failed for List[int]: element [{at}]: expected int, got {want}"
    )


@given(st.dictionaries(st.text(min_size=1, max_size=6), INT64, min_size=1, max_size=5), st.data())
def test_property_map_value_error_names_its_key(d: dict[str, int], data: Any) -> None:
    key = data.draw(st.sampled_from(sorted(d)))
    d[key] = 2.5  # type: ignore[assignment]
    with pytest.raises(TypeError, match=r"value for key (.*): expected int, got float") as info:
        A(dict[str, int]).check_value(d)
    assert f"value for key {key!r}:" in str(info.value)


@given(st.lists(st.one_of(INT64, st.booleans()), max_size=6), st.one_of(st.none(), st.text()))
def test_property_py_class_fields_run_the_plan(xs: list[Any], s: Any) -> None:
    obj = _Holder(xs=xs, s=s)
    assert list(obj.xs) == [int(x) for x in xs]
    assert all(type(x) is int for x in obj.xs)
    assert obj.s == s
    obj.xs = [*xs, True]
    assert list(obj.xs)[-1] == 1
    with pytest.raises(TypeError, match=r"element \[0\]: expected int, got str"):
        obj.xs = ["no"]


@py_class("testing.type_converter.Holder")
class _Holder(tvmffi.Object):
    xs: list[int]
    s: Optional[str]


def test_one_compiled_plan_serves_many_threads() -> None:
    # The plan is read-only once built: threads share one converter and one field setter.
    import threading

    schema = A(dict[str, list[int]])
    obj = _Holder(xs=[], s=None)
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(300):
                got = _plain(roundtrip(schema, {"k": [k, i, True]}))
                assert got == {"k": [k, i, 1]}
                obj.xs = [k, i]
                assert len(obj.xs) == 2
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
