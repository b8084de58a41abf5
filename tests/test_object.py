"""Objects: registration, reflected fields/methods, constructors, type info, containers."""

from __future__ import annotations

import gc

import pytest

import tvmffi
import tvmffi.testing as T
from tvmffi import Array, Dict, List, Map, Object, Shape


@tvmffi.register_object("testing.TestObjectBase")
class Base(Object):
    pass


@tvmffi.register_object("testing.TestObjectDerived")
class Derived(Base):
    pass


@tvmffi.register_object("testing.TestIntPair")
class IntPair(Object):
    pass


@tvmffi.register_object("testing.TestCxxKwOnly")
class KwOnly(Object):
    pass


@tvmffi.register_object("testing.TestCxxNoAutoInit")
class NoAutoInit(Object):
    pass


@tvmffi.register_object("testing.TestCxxClassBase")
class CxxBase(Object):
    pass


def use_count(obj: Object) -> int:
    return T.object_use_count(obj)  # arguments are passed as views: no extra count


# ---- registration --------------------------------------------------------
def test_register_unknown_key() -> None:
    with pytest.raises(ValueError, match="unknown"):

        @tvmffi.register_object("testing.NoSuchType")
        class Nope(Object):
            pass


def test_register_twice_replaces_the_class() -> None:
    # As in the official binding, the latest class registered for a type key wins.
    @tvmffi.register_object("testing.TestIntPair")
    class Again(Object):
        __slots__ = ()

    try:
        assert type(T.echo(IntPair(1, 2))) is Again
        assert type(Array([IntPair(1, 2)])[0]) is Again
    finally:
        tvmffi.register_object("testing.TestIntPair")(IntPair)
    assert type(Array([IntPair(1, 2)])[0]) is IntPair


def test_register_object_default_key_and_init_flag() -> None:
    # type_key defaults to the class name; init=False leaves __init__ alone.
    class TestIntPair(Object):
        __slots__ = ()

    try:
        with pytest.raises(ValueError, match="unknown"):
            tvmffi.register_object(TestIntPair)

        @tvmffi.register_object("testing.TestIntPair", init=False)
        class NoInit(Object):
            __slots__ = ()

        assert "__init__" not in NoInit.__dict__
        assert NoInit.__tvm_ffi_type_info__.type_key == "testing.TestIntPair"
    finally:
        tvmffi.register_object("testing.TestIntPair")(IntPair)


def test_register_non_object() -> None:
    with pytest.raises(TypeError):
        tvmffi.register_object("testing.TestIntPair")(int)


# ---- fields ------------------------------------------------------------------
def test_defaults_and_fields() -> None:
    b = Base()
    assert type(b) is Base
    assert (b.v_i64, b.v_f64, b.v_str) == (10, 10.0, "hello")
    b = Base(v_i64=5, v_str="x")
    assert b.v_i64 == 5 and b.v_str == "x"


def test_field_write() -> None:
    b = Base()
    b.v_i64 = 123
    assert b.v_i64 == 123
    b.v_str = "a much longer string than the small string limit"
    assert b.v_str == "a much longer string than the small string limit"


def test_read_only_field() -> None:
    b = Base()
    with pytest.raises(AttributeError, match="read-only"):
        b.v_f64 = 1.0
    p = IntPair(1, 2)
    with pytest.raises(AttributeError):
        p.a = 3
    with pytest.raises(AttributeError):
        del b.v_i64


def test_field_wrong_type() -> None:
    b = Base()
    with pytest.raises(TypeError):
        b.v_i64 = "not an int"
    with pytest.raises(TypeError):
        b.v_i64 = object()
    assert b.v_i64 == 10


def test_unknown_attribute() -> None:
    b = Base()
    with pytest.raises(AttributeError):
        _ = b.no_such_field
    u = T.make_unregistered_object()  # plain Object: no __dict__
    with pytest.raises(AttributeError):
        u.no_such_field = 1
    with pytest.raises(AttributeError):
        u.v1 = 1  # reflected fields of unregistered types are read through reflection only


def test_positional_init() -> None:
    p = IntPair(3, 4)
    assert (p.a, p.b) == (3, 4)
    assert p.sum() == 7


def test_kw_only_init() -> None:
    k = KwOnly(x=1, y=2, z=3)
    assert (k.x, k.y, k.z, k.w) == (1, 2, 3, 100)
    k = KwOnly(x=1, y=2, z=3, w=4)
    assert k.w == 4
    with pytest.raises(TypeError):
        KwOnly(1, 2, 3)


def test_bad_constructor_args() -> None:
    with pytest.raises(TypeError):
        Base(1, 2, 3, 4, 5)
    with pytest.raises(TypeError):
        Base(no_such_field=1)
    with pytest.raises(TypeError):
        IntPair("a", "b")
    with pytest.raises(TypeError):
        IntPair(1)


def test_init_handle_requires_a_function() -> None:
    init_handle = tvmffi._core._init_handle
    obj = Object.__new__(Object)
    for not_a_function in (Array([1, 2]), Object(), 5, None):
        with pytest.raises(TypeError, match=r"func must be a tvmffi\.Function"):
            init_handle(obj, not_a_function, 1)
    assert obj.__chandle__() == 0  # left empty
    init_handle(obj, tvmffi.get_global_func("ffi.Array"), 1, 2)
    assert obj.type_key == "ffi.Array"


def test_no_ffi_init() -> None:
    with pytest.raises(TypeError):
        NoAutoInit(1, 2)


# ---- inheritance ----------------------------------------------------------
def test_inheritance() -> None:
    d = Derived(v_i64=1, v_map={"a": 1}, v_array=[1, 2])
    assert isinstance(d, Base) and type(d) is Derived
    assert d.v_i64 == 1 and d.v_str == "hello"
    assert d.v_map["a"] == 1 and list(d.v_array) == [1, 2]
    assert isinstance(d.v_map, Map) and isinstance(d.v_array, Array)
    assert d.add_i64(1) == 2  # inherited method


@pytest.fixture
def unregistered_base():
    """A class registered for testing.TestUnregisteredBaseObject for one test."""

    @tvmffi.register_object("testing.TestUnregisteredBaseObject")
    class UBase(Object):
        __slots__ = ()

    yield UBase
    index = tvmffi.type_index(UBase)
    tvmffi.object._REGISTERED.pop(index, None)
    tvmffi._core.unregister_object_class(index)
    tvmffi.object._forget_synthetic()


def test_subtype_without_class_gets_ancestor(unregistered_base) -> None:
    UBase = unregistered_base
    info = tvmffi.get_type_info("testing.TestUnregisteredObject")
    assert info.parent_type_index == tvmffi.type_index(UBase)
    obj = T.make_unregistered_object()
    # A generated subclass of the ancestor's class carries the subtype's fields.
    cls = type(obj)
    assert isinstance(obj, UBase) and cls is not UBase
    assert cls.__name__ == "TestUnregisteredObject" and cls.__bases__ == (UBase,)
    assert obj.type_key == "testing.TestUnregisteredObject"
    assert obj.v2 == 42 and obj.get_v2_plus_two() == 44
    assert obj.v1 == 41  # inherited from the ancestor's class
    assert type(T.make_unregistered_object()) is cls  # generated once per type
    assert "v2" not in UBase.__dict__  # the ancestor class is untouched


def test_registering_a_subtype_replaces_its_generated_class(unregistered_base) -> None:
    UBase = unregistered_base
    generated = type(T.make_unregistered_object())
    assert issubclass(generated, UBase) and generated.__name__ == "TestUnregisteredObject"

    @tvmffi.register_object("testing.TestUnregisteredObject")
    class Sub(UBase):
        __slots__ = ()

    index = tvmffi.type_index(Sub)
    try:
        obj = T.make_unregistered_object()
        assert type(obj) is Sub and obj.v2 == 42
    finally:
        tvmffi.object._REGISTERED.pop(index, None)
        tvmffi._core.unregister_object_class(index)


def test_registered_class_reports_unknown_attributes() -> None:
    with pytest.raises(AttributeError, match="no_such_field"):
        _ = Base(v_i64=1).no_such_field


def test_subclasses_without_state_are_not_gc_tracked() -> None:
    import gc

    assert gc.is_tracked(Base(v_i64=1))  # a plain subclass has a __dict__

    class Slotted(Object):
        __slots__ = ()

    class SlottedAgain(Slotted):
        __slots__ = ()

    assert not gc.is_tracked(Slotted.__new__(Slotted))
    assert not gc.is_tracked(SlottedAgain.__new__(SlottedAgain))
    assert not gc.is_tracked(Array([1]))


def test_methods() -> None:
    b = Base(v_i64=5)
    assert b.add_i64(3) == 8
    assert Base.add_i64(b, 1) == 6
    with pytest.raises(TypeError):
        b.add_i64("x")


def test_method_descriptor_binds_instances_and_refuses_static_methods() -> None:
    add = Base.__dict__["add_i64"].__func__
    desc = tvmffi._core.MethodDescriptor(add)
    assert desc.__get__(None, Base) is desc  # read through the class: itself, with the doc
    assert desc.__get__(Base(v_i64=2), Base)(3) == 5
    assert desc(Base(v_i64=4), 1) == 5
    with pytest.raises(ValueError, match=r"staticmethod\(\)"):
        tvmffi._core.MethodDescriptor(add, True)


def test_unregistered_object_reflection() -> None:
    u = T.make_unregistered_object()
    # The official fallback: a generated class named after the type, on Object.
    assert type(u).__name__ == "TestUnregisteredObject" and type(u).__bases__ == (Object,)
    assert type(u).__tvm_ffi_type_info__.type_key == "testing.TestUnregisteredObject"
    assert u.v1 == 41 and u.v2 == 42
    assert "v1" in dir(u) and "v2" in dir(u)
    assert repr(u) == "testing.TestUnregisteredObject(v1=41, v2=42)"
    with pytest.raises(AttributeError):
        _ = u.missing
    with pytest.raises(AttributeError):
        _ = u.__no_dunder__


# ---- type info ------------------------------------------------------------
def test_type_key_index() -> None:
    p = IntPair(1, 2)
    assert tvmffi.type_key(p) == tvmffi.type_key(IntPair) == "testing.TestIntPair"
    assert tvmffi.type_index(p) == tvmffi.type_index(IntPair) == p.type_index
    with pytest.raises(TypeError):
        tvmffi.type_index(int)


def test_get_type_info() -> None:
    info = tvmffi.get_type_info("testing.TestObjectBase")
    assert info is tvmffi.get_type_info(Base) is tvmffi.get_type_info(Base())
    assert info.type_key == "testing.TestObjectBase"
    names = [f.name for f in info.fields]
    assert names == ["v_i64", "v_f64", "v_str"]
    v_i64, v_f64, _ = info.fields
    assert v_i64.writable and v_i64.has_default and v_i64.default == 10
    assert v_i64.doc == "i64 field"
    assert v_i64.type_schema == {"type": "int"}
    assert not v_f64.writable and v_f64.default == 10.0
    methods = {m.name: m for m in tvmffi.get_methods(Base)}
    assert "add_i64" in methods and not methods["add_i64"].is_static
    assert methods["add_i64"].doc == "add_i64 method"
    pair_methods = {m.name: m for m in tvmffi.get_methods("testing.TestIntPair")}
    assert pair_methods["__ffi_init__"].is_static


def test_get_fields_kw_only_and_inherited() -> None:
    fields = {f.name: f for f in tvmffi.get_fields(KwOnly)}
    assert all(f.kw_only for f in fields.values())
    assert fields["w"].has_default and fields["w"].default == 100
    derived = [f.name for f in tvmffi.get_fields("testing.TestObjectDerived")]
    assert derived == ["v_i64", "v_f64", "v_str", "v_map", "v_array"]
    assert tvmffi.get_fields(CxxBase)[0].repr is False
    with pytest.raises(ValueError):
        tvmffi.get_type_info("no.such.key")


# ---- repr -------------------------------------------------------------------
def test_repr() -> None:
    assert repr(IntPair(1, 2)) == "testing.TestIntPair(a=1, b=2)"
    # The runtime's printer (ffi.ReprPrint), as the official binding.
    assert repr(Base()) == 'testing.TestObjectBase(v_i64=10, v_f64=10, v_str="hello")'
    assert repr(CxxBase(1, 2)) == "testing.TestCxxClassBase"  # ReprOff fields skipped
    assert repr(Array([1, "a", Map({"k": List([2])})])) == '(1, "a", {"k": [2]})'


# ---- reference counts --------------------------------------------------------
def test_result_that_is_an_argument_is_a_new_wrapper() -> None:
    """As officially: a result is a wrapper of its own, sharing the handle, so a
    later move of the argument (``x._move()``) leaves the result its reference."""
    p = IntPair(1, 2)
    r = T.echo(p)
    assert r is not p and r.same_as(p) and type(r) is IntPair
    assert use_count(p) == 2
    q = tvmffi.get_global_func("testing.apply")(lambda v: v, p)  # second argument
    assert q.same_as(p) and use_count(p) == 3
    del r, q
    assert use_count(p) == 1

    class Sub(IntPair):  # results take the class registered for the type
        __slots__ = ()

    s = Sub(3, 4)
    assert type(T.echo(s)) is IntPair and T.echo(s).same_as(s)
    assert use_count(s) == 1


def test_moving_an_argument_leaves_an_earlier_result_alive() -> None:
    echo_moved = tvmffi.convert(lambda v: v._move())
    x = tvmffi.convert([1, 2])
    y = echo_moved(x)
    assert use_count(x) == 2
    echo_moved(x._move())
    assert x.__chandle__() == 0 and y.__chandle__() != 0
    assert list(y) == [1, 2] and use_count(y) == 1


def test_refcounts_return_to_start() -> None:
    p = IntPair(1, 2)
    start = use_count(p)
    assert start == 1
    for _ in range(100):
        p.a  # noqa: B018
        p.sum()
        T.echo(p)
        tvmffi.Array([p, [p]])
        repr(p)
    alias = Array([p])[0]  # a second wrapper; the Array is gone
    assert use_count(p) == 2 and alias.same_as(p) and alias is not p
    del alias
    gc.collect()
    assert use_count(p) == start
    b = Base()
    for _ in range(10):
        with pytest.raises(TypeError):
            b.v_i64 = "bad"
        with pytest.raises(TypeError):
            IntPair("a", "b")
    assert use_count(b) == 1


def test_field_object_refcount() -> None:
    inner = Array([1, 2])
    d = Derived(v_array=inner, v_map={})
    assert use_count(inner) == 2
    got = d.v_array
    assert got.same_as(inner) and use_count(inner) == 3
    del got, d
    gc.collect()
    assert use_count(inner) == 1


# ---- containers ----------------------------------------------------------------
def test_array() -> None:
    a = Array([1, 2, 3])
    assert len(a) == 3 and a[0] == 1 and a[-1] == 3
    assert a[1:] == [2, 3] and a[::-1] == [3, 2, 1]
    assert list(a) == [1, 2, 3] and 2 in a and 5 not in a
    assert a == [1, 2, 3] and a == (1, 2, 3) and a != [1, 2]
    assert a.index(2) == 1 and a.count(3) == 1
    with pytest.raises(IndexError):
        a[3]
    with pytest.raises(IndexError):
        a[-4]
    with pytest.raises(TypeError):
        a[0] = 1  # type: ignore[index]
    assert isinstance(T.echo([1, 2]), Array)
    assert len(Array()) == 0


def test_nested_three_deep() -> None:
    value = [[{"k": [1, 2, Base()]}], {"m": {"n": [3]}}]
    a = Array(value)
    inner = a[0][0]["k"]
    assert isinstance(a[0], Array) and isinstance(a[0][0], Map) and isinstance(inner, Array)
    assert inner[0:2] == [1, 2] and isinstance(inner[2], Base)
    assert a[1]["m"]["n"][0] == 3
    echoed = T.echo(value)
    assert echoed[1]["m"]["n"] == [3]


def test_map() -> None:
    m = Map({"a": 1, "b": [2]})
    assert len(m) == 2 and m["a"] == 1 and m["b"] == [2]
    assert set(m) == {"a", "b"} and "a" in m and "z" not in m
    assert dict(m.items())["a"] == 1
    # Official semantics: a Map equals Maps and Dicts by content, never a Python dict.
    assert m == Map({"a": 1, "b": [2]}) and m != {"a": 1, "b": [2]} and m.get("z", 5) == 5
    with pytest.raises(KeyError):
        m["z"]
    assert isinstance(T.echo({"x": 1}), Map)
    assert len(Map({})) == 0


def test_list_and_dict() -> None:
    lst = List([1, 2])
    lst.append(3)
    lst[0] = 10
    lst.insert(0, 0)
    assert list(lst) == [0, 10, 2, 3]
    del lst[0]
    assert lst == [10, 2, 3] and len(lst) == 3
    assert isinstance(T.echo(lst), List)
    d = Dict({"a": 1})
    d["b"] = 2
    assert dict(d.items()) == {"a": 1, "b": 2}
    del d["a"]
    assert list(d) == ["b"]
    with pytest.raises(KeyError):
        del d["zz"]
    assert isinstance(T.echo(d), Dict)


def test_shape() -> None:
    # As officially, a Shape is a tuple keeping its ffi.Shape object.
    s = Shape([2, 3, 4])
    assert isinstance(s, tuple) and len(s) == 3 and s[0] == 2 and s[-1] == 4 and s[1:] == (3, 4)
    assert s == (2, 3, 4) and list(s) == [2, 3, 4]
    assert s._tvm_ffi_cached_object.type_index == 69
    back = T.echo(s)
    assert isinstance(back, Shape) and back._tvm_ffi_cached_object.same_as(s._tvm_ffi_cached_object)
    assert tvmffi.convert(s) is s and isinstance(T.echo([s])[0], Shape)
    with pytest.raises(ValueError):
        Shape(["a"])


def test_bad_container_input() -> None:
    class Failing:
        def __tvm_ffi_int__(self) -> int:
            raise TypeError("Failing cannot convert")

    with pytest.raises(TypeError):
        Array([Failing()])
    with pytest.raises(TypeError):
        Map({"a": Failing()})
    with pytest.raises(TypeError):
        Array(1)  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        Map(1)  # type: ignore[arg-type]
    # A plain Python object is stored as an opaque object (official behaviour).
    value = object()
    assert Array([value])[0] is value and Map({"a": value})["a"] is value


# ---- crossing to the official binding -----------------------------------------
def test_identity_through_official_binding() -> None:
    tvm_ffi = pytest.importorskip("tvm_ffi")
    name = "tvmffi_test.object_identity"
    tvm_ffi.register_global_func(name, lambda x: x, override=True)
    f = tvmffi.get_global_func(name)
    p = IntPair(5, 6)
    back = f(p)
    assert back.same_as(p) and type(back) is IntPair
    arr = Array([p])
    assert f(arr).same_as(arr)
    del back
    gc.collect()
    assert use_count(p) == 2  # p and arr's element
    theirs = tvm_ffi.Array([1, 2])  # a foreign argument comes back wrapped by us
    mine = T.echo(theirs)
    assert type(mine) is Array and mine is not theirs and list(mine) == [1, 2]
    assert mine.__chandle__() == theirs.__chandle__()


def test_plain_data_fields_read_their_storage() -> None:
    # int64 / float64 / bool fields are decoded directly from the object.
    b = Base(v_i64=1)
    for v in (0, -1, 2**63 - 1, -(2**63), 123456789012):
        b.v_i64 = v
        assert b.v_i64 == v and type(b.v_i64) is int
    for f in (0.0, -2.5, 1e300, float("inf")):
        assert Base(v_i64=1, v_f64=f).v_f64 == f  # v_f64 is read-only
    assert type(b.v_f64) is float
    info = tvmffi.get_type_info("testing.TestCxxClassDerivedDerived")
    init = tvmffi._core._lookup_type_attr(info.type_index, "__ffi_init__")
    for flag in (True, False):
        obj = init(1, 2, 3.0, flag, 4.0, "s")
        assert obj.v_bool is flag
        assert obj.v_f32 == 4.0 and obj.v_i32 == 2  # narrower fields through the getter


def test_field_descriptor_rejects_foreign_instances() -> None:
    prop = Base.v_i64  # the descriptor itself, read through the class
    assert prop.__get__(Base(v_i64=7), Base) == 7
    with pytest.raises(TypeError, match=r"expected a tvmffi\.Object"):
        prop.__get__(object(), Base)
    with pytest.raises(TypeError, match=r"expected a tvmffi\.Object"):
        prop.__get__(3, int)


def _derived() -> Derived:
    return Derived(v_i64=1, v_f64=2.0, v_str="s", v_map={"k": 1}, v_array=[1, 2])


_NOT_DERIVED = (
    r"field 'v_array' belongs to testing\.TestObjectDerived objects, not to a testing\.TestIntPair"
)


def test_field_descriptor_rejects_objects_of_an_unrelated_type() -> None:
    d, pair = _derived(), IntPair(1, 2)
    assert list(Derived.v_array.__get__(d, Derived)) == [1, 2]  # warms the check cache
    with pytest.raises(TypeError, match=_NOT_DERIVED):
        Derived.v_array.__get__(pair, IntPair)
    with pytest.raises(TypeError, match=r"'v_i64' belongs to testing\.TestObjectBase objects"):
        Base.v_i64.__get__(pair, IntPair)
    with pytest.raises(TypeError, match=r"'v_i64' belongs to testing\.TestObjectBase objects"):
        Base.v_i64.__set__(pair, 5)
    assert (pair.a, pair.b) == (1, 2)


def test_field_descriptor_set_rejects_objects_of_an_unrelated_type() -> None:
    d, pair = _derived(), IntPair(1, 2)
    Derived.v_array.__set__(d, [3])  # warms the check cache
    assert list(d.v_array) == [3]
    with pytest.raises(TypeError, match=_NOT_DERIVED):
        Derived.v_array.__set__(pair, [4])
    assert (pair.a, pair.b) == (1, 2)


def test_inherited_field_reads_on_base_and_subtype_objects_alike() -> None:
    b, d = Base(v_i64=3), _derived()
    for _ in range(3):  # alternate, so both pass with the cache warm
        assert Base.v_i64.__get__(b, Base) == 3
        assert Base.v_i64.__get__(d, Derived) == 1
    Base.v_i64.__set__(d, 9)
    assert d.v_i64 == 9 and b.v_i64 == 3


def test_field_check_follows_the_object_not_its_python_class() -> None:
    # __class__ can move an object between registered classes of equal layout;
    # the field must still refuse an object whose FFI type lacks it.
    d, pair = _derived(), IntPair(1, 2)
    assert list(d.v_array) == [1, 2]
    pair.__class__ = Derived
    with pytest.raises(TypeError, match=_NOT_DERIVED):
        _ = pair.v_array
    with pytest.raises(TypeError, match=_NOT_DERIVED):
        pair.v_array = [5]
    plain = T.make_unregistered_object()  # a plain Object wraps any type
    with pytest.raises(TypeError, match=r"not to a testing\.TestUnregisteredObject"):
        Derived.v_array.__get__(plain, Object)


# ---- container semantics like the Python types they mirror --------------------
def test_slices_are_python_lists() -> None:
    # As in the official binding, a slice of an Array or List is a Python list.
    a = Array([1, "x", 3.0, 4])
    head = a[:2]
    assert type(head) is list and head == [1, "x"] and a[::-2] == [4, "x"]
    assert a[5:] == []
    lst = List([1, 2, 3])
    part = lst[1:]
    assert type(part) is list and part == [2, 3]
    part.append(4)
    assert len(lst) == 3  # a slice is a copy
    # Concatenation with Python sequences on purpose (Array.__add__ / List.__radd__).
    assert type(a + [5]) is Array and list(a + (5,)) == [1, "x", 3.0, 4, 5]  # noqa: RUF005
    assert type([0] + lst) is List and list([0] + lst) == [0, 1, 2, 3]  # noqa: RUF005


def test_containers_hash_and_compare_structurally() -> None:
    # Official semantics: ffi.RecursiveEq / ffi.RecursiveHash, for every container kind.
    a, b = Array([1, "two", 3.0]), Array([1, "two", 3.0])
    assert not a.same_as(b) and a == b and hash(a) == hash(b)
    assert len({a, b}) == 1 and a == [1, "two", 3.0] and a == (1, "two", 3.0)
    assert a != Array([1, "two", 4.0]) and a.__eq__("x") is NotImplemented
    m1, m2 = Map({"a": 1, "b": 2}), Map({"b": 2, "a": 1})
    assert m1 == m2 and hash(m1) == hash(m2) and len({m1, m2}) == 1
    s1, s2 = Shape([2, 3]), Shape((2, 3))
    assert hash(s1) == hash(s2) == hash((2, 3))
    l1, l2 = List([1, [2]]), List([1, [2]])
    assert l1 == l2 and hash(l1) == hash(l2) and not l1.same_as(l2)
    d1, d2 = Dict({"a": [1]}), Dict({"a": [1]})
    assert d1 == d2 and hash(d1) == hash(d2) and d1 != Dict({"a": [2]})


def test_mapping_views() -> None:
    m = Map({"a": 1, "b": 2})
    keys, values, items = m.keys(), m.values(), m.items()
    assert len(keys) == 2 and "a" in keys and set(keys) == {"a", "b"}
    assert sorted(values) == [1, 2] and 2 in values
    assert ("a", 1) in items and ("a", 2) not in items and set(items) == {("a", 1), ("b", 2)}
    assert keys & {"a", "z"} == {"a"}
    d = Dict({"x": 1})
    view = d.keys()
    d["y"] = 2
    assert set(view) == {"x", "y"}  # a live view, like dict.keys()


def test_missing_key_raises_keyerror_with_the_key() -> None:
    for m in (Map({"a": 1}), Dict({"a": 1})):
        with pytest.raises(KeyError) as info:
            _ = m["nope"]
        assert info.value.args == ("nope",)
        assert m.get("nope", 5) == 5 and m.get(object()) is None


def test_stateless_subclass_dealloc_keeps_type_refcount_and_finalizers() -> None:
    import sys
    import weakref

    class Slotted(Object):
        __slots__ = ()

    class WithDict(Slotted):  # adds a __dict__: GC again, its own dealloc over ours
        pass

    finalized: list[int] = []

    class WithDel(Object):
        __slots__ = ()

        def __del__(self) -> None:
            finalized.append(1)

    make_array = tvmffi.get_global_func("ffi.Array")
    for cls in (Slotted, WithDict, WithDel):
        before = sys.getrefcount(cls)
        for _ in range(1000):
            obj = cls.__new__(cls)
            tvmffi._core._init_handle(obj, make_array, 1, 2)  # obj now owns an ffi.Array
            assert obj.type_key == "ffi.Array"
            ref = weakref.ref(obj)
            del obj
            assert ref() is None
        # A free-threaded build counts a heap type's references per thread (and
        # getrefcount reads only the shared count): exact with a GIL only.
        if getattr(sys, "_is_gil_enabled", lambda: True)():
            assert sys.getrefcount(cls) == before
    assert len(finalized) == 1000
    keep = Slotted.__new__(Slotted)
    inner = Array([3])
    tvmffi._core._init_handle(keep, make_array, inner)
    count = use_count(inner)
    del keep
    assert use_count(inner) == count - 1  # the handle was released exactly once


def test_recycled_result_objects_stay_distinct() -> None:
    # Instances of slotted classes reuse freed blocks: live ones never share one.
    echo = tvmffi.get_global_func("testing.echo")
    sources = [Array([i]) for i in range(200)]
    for _ in range(3):
        results = [echo(s) for s in sources]
        assert len({id(r) for r in results}) == len(results)
        for i, (r, s) in enumerate(zip(results, sources, strict=True)):
            assert r.same_as(s) and r[0] == i
        shapes = [echo(Shape([i, i])) for i in range(100)]  # another class, same block size
        assert [tuple(sh) for sh in shapes] == [(i, i) for i in range(100)]
        del results[::2]
        assert all(type(r) is Array for r in results) and len({id(r) for r in results}) == 100


def test_list_pop_and_reverse() -> None:
    lst = List([1, "two", 3.0, 4])
    assert lst.pop() == 4 and lst.pop(0) == 1 and lst.pop(-1) == 3.0
    assert lst == ["two"]
    with pytest.raises(IndexError):
        lst.pop(5)
    lst.extend([5, 6])
    lst.reverse()
    assert lst == [6, 5, "two"]
    lst.clear()
    with pytest.raises(IndexError):
        lst.pop()


# ---- container protocol, written down before the rewrite (issue 30) --------------------
def test_dict_pop_default_and_argument_count() -> None:
    d = Dict({"a": 1})
    assert d.pop("missing", None) is None and d.pop("missing", 0) == 0
    with pytest.raises(KeyError):
        d.pop("missing")
    with pytest.raises(TypeError, match="pop expected at most 2 arguments, got 3"):
        d.pop("a", 1, 2)
    assert d.pop("a") == 1 and len(d) == 0


def test_list_insert_clamps_like_python_lists() -> None:
    for index in (-10, -1, 0, 2, 10):
        ours, plain = List([1, 2, 3]), [1, 2, 3]
        ours.insert(index, 0)
        plain.insert(index, 0)
        assert list(ours) == plain, index


def test_list_slices_assign_and_delete_like_python_lists() -> None:
    # Every slice form against a Python list doing the same (issue 39's rewrite).
    cases = [
        (slice(1, 3), [7]),
        (slice(4, 1), ["x", "y"]),  # an empty run: inserted at its start
        (slice(None, None, 2), list("abc")),
        (slice(None, None, -1), list(range(5))),
        (slice(-2, None), (i * i for i in range(3))),  # any iterable, read once
        (slice(1, 4, 1), []),
    ]
    for key, value in cases:
        values = list(value)
        ours, plain = List(range(5)), list(range(5))
        ours[key] = iter(values)
        plain[key] = values
        assert list(ours) == plain, key
    for key in (slice(1, 4), slice(None, None, 3), slice(4, 0, -2), slice(3, 1), slice(None)):
        ours, plain = List(range(6)), list(range(6))
        del ours[key], plain[key]
        assert list(ours) == plain, key
    lst = List(range(4))
    with pytest.raises(ValueError, match="size 1 to extended slice of size 2"):
        lst[::2] = [0]
    with pytest.raises(TypeError):
        lst[1:2] = 5  # not iterable
    lst[1:3] = lst  # the list itself, read before it changes
    assert list(lst) == [0, 0, 1, 2, 3, 3]
    with pytest.raises(IndexError, match="size: 6, got index -7"):
        del lst[-7]


def test_sequence_equality_and_containment_of_nested_containers() -> None:
    inner = Array([1, 2])
    outer = Array([inner, List(["a"]), Map({"k": 1})])
    # A container is found by value, as in a Python list, not by identity.
    assert Array([1, 2]) in outer and [1, 2] in outer and (1, 2) in outer
    assert ["a"] in outer and Map({"k": 1}) in outer and [2, 1] not in outer
    assert object() not in outer and 3 not in Array([1, 2])
    # A list holding what the FFI cannot hold is simply not equal.
    assert (Array([1]) == [object()]) is False and Array([1]) != [object()]
    assert List([1]) != Array([1])  # different runtime types


def test_sequence_and_map_equality_and_containment() -> None:
    arr = Array([1, [2, 3]])
    assert arr == [1, [2, 3]] and arr == (1, (2, 3)) and arr != [1]
    assert arr.__eq__("12") is NotImplemented and arr.__eq__({1: 2}) is NotImplemented
    assert [2, 3] in arr and (2, 3) in arr and "x" not in arr and [9] not in arr
    m = Map({"k": 1})
    assert m == Map({"k": 1}) and m != Map({"k": 2}) and m.__eq__({"k": 1}) is NotImplemented
    assert Map(None) == Map({}) and dict(Dict({1: 2, 3: 4})) == {1: 2, 3: 4}
