"""The official binding's object, string and container API (tvm_ffi.core / .container names)."""

from __future__ import annotations

import copy
import gc
import pickle
import sys

import pytest

import tvmffi
import tvmffi.testing as T
from tvmffi import Array, Dict, List, Map, Object
from tvmffi.core import MISSING, Bytes, OpaquePyObject, String

echo = T.echo


# ---- Object: id_, is_, __init_handle_by_constructor__, pickling ------------------------
def test_id_and_is_follow_the_handle() -> None:
    x, y = T.TestIntPair(1, 2), T.TestIntPair(1, 2)
    assert x.id_ == x.__chandle__() != 0 and x.id_ != y.id_
    assert x.is_(x) and not x.is_(y) and not x.is_(None) and not x.is_(object())
    assert Array([x])[0].is_(x)
    assert T.TestIntPair.__new__(T.TestIntPair).id_ == 0


def test_init_handle_by_constructor() -> None:
    bare = T.TestIntPair.__new__(T.TestIntPair)
    ffi_init = tvmffi.core._lookup_type_attr(bare.__tvm_ffi_type_info__.type_index, "__ffi_init__")
    bare.__init_handle_by_constructor__(ffi_init, 3, 4)
    assert (bare.a, bare.b) == (3, 4)
    with pytest.raises(TypeError):
        T.TestIntPair.__new__(T.TestIntPair).__init_handle_by_constructor__(len, 1)
    # A Python __init__ of a registered class may adjust the arguments (official testing class).
    obj = T._TestCxxClassBase(1, 2)
    assert (obj.v_i64, obj.v_i32) == (2, 4)


@pytest.mark.parametrize(
    "make",
    [
        lambda: T.TestIntPair(1, 2),
        lambda: Array([1, "two", [3.0]]),
        lambda: List([1, {"k": 2}]),
        lambda: Map({"a": 1}),
        lambda: Dict({"a": [1, 2]}),
    ],
)
def test_pickle_copy_and_deepcopy_keep_type_and_content(make) -> None:
    obj = make()
    # A copy made by the runtime (copy/deepcopy: __ffi_shallow_copy__, ffi.DeepCopy) comes
    # back as any returned object does: in the class registered for its type, which another
    # test may have re-registered; pickle rebuilds the class it was given.
    returned_cls = type(Array([obj])[0])
    clones = (
        (pickle.loads(pickle.dumps(obj)), type(obj)),
        (copy.copy(obj), returned_cls),
        (copy.deepcopy(obj), returned_cls),
    )
    for clone, cls in clones:
        assert type(clone) is cls and not clone.same_as(obj)
        assert repr(clone) == repr(obj)


def test_pickle_of_empty_object_round_trips_empty() -> None:
    bare = T.TestIntPair.__new__(T.TestIntPair)
    assert pickle.loads(pickle.dumps(bare)).id_ == 0


def test_repr_is_the_runtime_printer() -> None:
    assert repr(T.TestIntPair(1, 2)) == "testing.TestIntPair(a=1, b=2)"
    assert str(Array([1, 2, 3])) == "(1, 2, 3)"
    assert str(Map({"a": 1, "b": 2})) == '{"a": 1, "b": 2}'
    assert str(List([1, "x"])) == '[1, "x"]'


# ---- fallback classes, type info ---------------------------------------------------
def test_unregistered_type_gets_official_fallback_class() -> None:
    obj = T.make_unregistered_object()
    cls = type(obj)
    assert cls.__name__ == "TestUnregisteredObject"
    assert cls.__module__ == "testing" and cls.__qualname__ == "testing.TestUnregisteredObject"
    assert "Auto-generated fallback class" in cls.__doc__
    assert "Get (v2 + 2)" in cls.get_v2_plus_two.__doc__
    assert obj.get_v1_plus_one() == 42 and cls.get_v2_plus_two(obj) == 44
    assert type(T.make_unregistered_object()) is cls
    info = cls.__tvm_ffi_type_info__
    assert info.type_key == "testing.TestUnregisteredObject"
    assert info.parent_type_info.type_key == "testing.TestUnregisteredBaseObject"


def test_type_info_names_class_and_parent() -> None:
    # (Other test modules register their own classes for some testing keys; the
    # latest registration wins, so only keys nobody re-registers are checked by class.)
    info = tvmffi.core._type_cls_to_type_info(T._TestCxxInitSubset)
    assert info.type_cls is T._TestCxxInitSubset and info.type_key == "testing.TestCxxInitSubset"
    parent = info.parent_type_info
    assert parent.type_cls is Object and parent.parent_type_info is None
    derived = tvmffi.core._type_cls_to_type_info(T.TestObjectDerived)
    assert derived.parent_type_info.type_key == "testing.TestObjectBase"
    assert derived.type_ancestors[0] == tvmffi.get_type_info("ffi.Object").type_index
    assert tvmffi.core._type_cls_to_type_info(int) is None


def test_testing_classes_have_empty_slots() -> None:
    for cls in (T.TestObjectBase, T.TestIntPair, T.TestObjectDerived):
        assert cls.__dict__["__slots__"] == () and "__dict__" not in cls.__dict__
    with pytest.raises(AttributeError):
        T.TestIntPair(1, 2).extra = 1


# ---- MISSING, opaque objects, convert -----------------------------------------------
def test_missing_is_the_runtime_sentinel() -> None:
    assert isinstance(MISSING, Object) and MISSING.same_as(tvmffi.container.MISSING)
    assert MISSING.same_as(tvmffi.get_global_func("ffi.GetInvalidObject")())
    assert Map({"a": 1}).get("b", 7) == 7 and Dict({}).get("x") is None


def test_convert_matches_the_official_results() -> None:
    class Plain:
        pass

    p = Plain()
    held = tvmffi.convert(p)
    assert isinstance(held, OpaquePyObject) and held.pyobject() is p
    assert type(tvmffi.convert("hello")) is String and tvmffi.convert("hello") == "hello"
    assert type(tvmffi.convert(b"ab")) is Bytes and type(tvmffi.convert(bytearray(b"ab"))) is Bytes
    assert isinstance(tvmffi.convert([1, 2]), Array) and isinstance(tvmffi.convert({1: 2}), Map)

    class Convertible(tvmffi.ObjectConvertible):
        def asobject(self) -> Object:
            return T.TestIntPair(5, 6)

    assert tvmffi.convert(Convertible()).a == 5
    assert echo(Convertible()).b == 6 and T.TestIntPairSum(Convertible()) == 11  # as arguments


def test_opaque_object_refcount() -> None:
    class Plain:
        pass

    p = Plain()
    base = sys.getrefcount(p)
    held = tvmffi.convert(p)
    assert sys.getrefcount(p) == base + 1 and T.object_use_count(held) == 1
    del held
    gc.collect()
    assert sys.getrefcount(p) == base


# ---- String and Bytes ---------------------------------------------------------------
def test_heap_strings_come_back_as_string_keeping_their_object() -> None:
    s = echo("x" * 200)
    assert type(s) is String and isinstance(s, str) and s == "x" * 200
    cached = s._tvm_ffi_cached_object
    assert isinstance(cached, Object) and cached.type_key == "ffi.String"
    # Passed back, the String travels as its own object: no new FFI String is made.
    assert echo(s)._tvm_ffi_cached_object.same_as(cached)
    assert type(echo("short")) is str  # the inline form stays a plain str
    assert String("made here")._tvm_ffi_cached_object is None
    assert pickle.loads(pickle.dumps(s)) == s and type(pickle.loads(pickle.dumps(s))) is str
    assert type(copy.copy(s)) is str and s[1:3] == "xx" and s.find("x", 5) == 5


def test_heap_bytes_come_back_as_bytes_keeping_their_object() -> None:
    b = echo(b"y" * 100)
    assert type(b) is Bytes and isinstance(b, bytes) and b == b"y" * 100
    cached = b._tvm_ffi_cached_object
    assert cached.type_key == "ffi.Bytes"
    assert echo(b)._tvm_ffi_cached_object.same_as(cached)
    assert Bytes(b"abc")._tvm_ffi_cached_object is None and echo(Bytes(b"abc")) == b"abc"
    assert type(pickle.loads(pickle.dumps(b))) is bytes


def test_string_keeps_its_object_alive_exactly_once() -> None:
    s = echo("z" * 64)
    obj = s._tvm_ffi_cached_object
    assert T.object_use_count(obj) == 2  # the String and this wrapper
    del s
    gc.collect()
    assert T.object_use_count(obj) == 1


# ---- containers -------------------------------------------------------------------
def test_container_concat_slices_and_contains() -> None:
    a = Array([1, 2, 3])
    assert type(a + [4]) is Array and tuple((0,) + a) == (0, 1, 2, 3)  # noqa: RUF005
    assert type(a[1:]) is list and a[::-1] == [3, 2, 1]
    assert Array([("k", 1)]).__contains__(("k", 1)) and 5 not in a
    lst = List([0, 1, 2, 3, 4, 5])
    lst[1:5:2] = ["a", "b"]
    assert list(lst) == [0, "a", 2, "b", 4, 5]
    with pytest.raises(ValueError):
        lst[0:6:2] = [1]
    del lst[::2]
    assert list(lst) == ["a", "b", 5]
    lst.extend([6])
    assert lst.pop() == 6 and lst.pop(0) == "a"
    with pytest.raises(IndexError):
        List().pop()


def test_dict_pop_update_and_views() -> None:
    d = Dict({"a": 1})
    d.update({"b": 2}, c=3)
    assert d.pop("a") == 1 and d.pop("zz", 9) == 9 and len(d) == 2
    with pytest.raises(KeyError):
        d.pop("zz")
    assert ("b", 2) in d.items() and ("b", 3) not in d.items() and "c" in d.keys()  # noqa: SIM118
    assert sorted(d.values()) == [2, 3]


def test_map_equality_is_structural_not_with_dict() -> None:
    assert Map({"x": [1]}) == Map({"x": [1]}) and Map({"x": 1}).__eq__({"x": 1}) is NotImplemented
    assert hash(Map({"x": 1})) == hash(Map({"x": 1}))
    assert hash(List([1])) == hash(List([1])) and List([1]) == [1]
