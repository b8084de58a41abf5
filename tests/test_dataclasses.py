"""tvmffi.dataclasses: @py_class / @c_class, field(), fields/asdict/astuple/replace."""

from __future__ import annotations

import copy
import inspect
import itertools
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tvmffi
import tvmffi.testing as T
from tvmffi import Object
from tvmffi.dataclasses import (
    KW_ONLY,
    MISSING,
    Field,
    asdict,
    astuple,
    c_class,
    field,
    fields,
    init_property,
    is_dataclass,
    py_class,
    replace,
)

_keys = itertools.count()


def key(name: str) -> str:
    return f"tvmffi_tests.dc.{name}_{next(_keys)}"


def test_py_class_fields_defaults_kw_only_and_init_signature() -> None:
    @py_class(key("Point"))
    class Point(Object):
        x: int
        y: int = 5
        tags: list = field(default_factory=list)  # type: ignore[type-arg]
        _: KW_ONLY
        label: str = "p"
        hidden: int = field(default=9, init=False)
        note: ClassVar[str] = "not a field"

    p = Point(1)
    assert (p.x, p.y, list(p.tags), p.label, p.hidden) == (1, 5, [], "p", 9)
    q = Point(1, 2, [3], label="q")
    assert (q.y, list(q.tags), q.label) == (2, [3], "q")
    assert Point.note == "not a field"
    params = inspect.signature(Point.__init__).parameters
    assert list(params) == ["self", "x", "y", "tags", "label"]
    assert params["label"].kind is inspect.Parameter.KEYWORD_ONLY
    assert [f.name for f in fields(Point)] == ["x", "y", "tags", "label", "hidden"]
    assert Point.__match_args__ == ("x", "y", "tags")  # type: ignore[attr-defined]
    # The runtime binds the arguments: its errors name what was wrong.
    with pytest.raises(TypeError, match="missing required argument: 'x'"):
        Point()
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        Point(1, nope=2)
    with pytest.raises(TypeError, match="at most"):
        Point(1, 2, [], 4)
    # Factories run per object.
    assert not Point(1).tags.same_as(Point(1).tags)


def test_py_class_objects_are_runtime_objects() -> None:
    @py_class(key("Node"))
    class Node(Object):
        value: int
        child: Object | None = None

    leaf = Node(1)
    root = Node(2, leaf)
    assert root.child.same_as(leaf)
    info = tvmffi.get_type_info(Node)
    assert [f.name for f in info.fields] == ["value", "child"]
    # Native layout, as officially: an int64 at 24, then an Any (Optional) at 32.
    assert [(f.offset, f.size) for f in info.fields] == [(24, 8), (32, 16)]
    # Built, printed and copied by the runtime's reflection.
    built = tvmffi.get_global_func("ffi.MakeObjectFromPackedArgs")(info.type_key, "value", 7)
    assert isinstance(built, Node) and built.value == 7 and built.child is None
    assert repr(root) == f"{info.type_key}(value=2, child={info.type_key}(value=1, child=None))"
    shallow = copy.copy(root)
    assert not shallow.same_as(root) and shallow.child.same_as(leaf)
    deep = copy.deepcopy(root)
    assert not deep.child.same_as(leaf) and deep.child.value == 1


def test_py_class_eq_order_hash_and_defaults_off() -> None:
    @py_class(key("Ordered"), eq=True, order=True, unsafe_hash=True)
    class V(Object):
        a: int
        b: str = field(default="", compare=False)

    assert V(1, "x") == V(1, "y") and V(1) != V(2)
    assert V(1) < V(2) <= V(2) and V(3) > V(2)
    assert hash(V(1, "x")) == hash(V(1, "y"))
    assert V(1).__eq__(42) is NotImplemented

    @py_class(key("Plain"))
    class P(Object):
        a: int

    one = P(1)
    assert one != P(1) and one == one  # identity, as officially
    with pytest.raises(ValueError, match="order=True requires eq=True"):
        py_class(key("Bad"), order=True)


def test_frozen_fields_and_replace() -> None:
    @py_class(key("Frozen"), frozen=True)
    class F(Object):
        a: int
        b: int = 2

    f = F(1)
    with pytest.raises(AttributeError, match="frozen"):
        f.a = 5  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del f.a  # type: ignore[misc]
    desc = F.__dict__["a"]
    assert isinstance(desc, tvmffi.core.FFIProperty) and desc.fset is None
    desc.set(f, 7)  # the escape hatch
    assert f.a == 7
    g = replace(f, b=3)
    assert (g.a, g.b, f.b) == (7, 3, 2) and not g.same_as(f)
    with pytest.raises(TypeError, match="unexpected field 'zz'"):
        replace(f, zz=1)

    @py_class(key("OneFrozen"))
    class H(Object):
        a: int = field(frozen=True)
        b: int = 0

    h = H(1)
    h.b = 4
    with pytest.raises(AttributeError):
        h.a = 2  # type: ignore[misc]


def test_asdict_astuple_is_dataclass() -> None:
    @py_class(key("Inner"))
    class Inner(Object):
        v: int

    @py_class(key("Outer"))
    class Outer(Object):
        inner: Inner
        items: list  # type: ignore[type-arg]
        mapping: dict  # type: ignore[type-arg]

    o = Outer(Inner(1), [Inner(2), 3], {"k": Inner(4)})
    assert asdict(o) == {"inner": {"v": 1}, "items": [{"v": 2}, 3], "mapping": {"k": {"v": 4}}}
    assert astuple(o) == ((1,), [(2,), 3], {"k": (4,)})
    assert is_dataclass(o) and is_dataclass(Outer) and not is_dataclass(tvmffi.Array([1]))
    for bad in (asdict, astuple, fields):
        with pytest.raises(TypeError):
            bad(42)
    with pytest.raises(TypeError):
        asdict(Outer)


def test_inheritance_post_init_user_init_and_init_property() -> None:
    calls = []

    @py_class(key("Base"))
    class Base(Object):
        a: int

        def __post_init__(self) -> None:
            calls.append(self.a)

    @py_class(key("Derived"))
    class Derived(Base):
        b: int = 0

        @init_property
        def total(self) -> int:
            return self.a + self.b

    d = Derived(1, 2)
    assert isinstance(d, Base) and (d.a, d.b, d.total) == (1, 2, 3) and calls == [1]
    assert [f.name for f in fields(Derived)] == ["a", "b", "total"]

    @py_class(key("UserInit"))
    class U(Object):
        a: int

        def __init__(self, half: int) -> None:
            self.a = half * 2

    assert U(4).a == 8


def test_field_validation() -> None:
    with pytest.raises(ValueError, match="both default and default_factory"):
        field(default=1, default_factory=list)
    with pytest.raises(TypeError, match="default_factory must be a callable"):
        field(default_factory=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="structural_eq"):
        field(structural_eq="bogus")
    with pytest.raises(TypeError, match="unrecognized field options: bogus"):

        @py_class(key("Extra"))
        class E(Object):
            a: int = field(bogus=1)

    with pytest.raises(TypeError, match="must inherit from a registered FFI Object"):
        py_class(key("NotObj"))(int)
    f = field(default=1, metadata={"m": 1})
    g = copy.copy(f)
    assert isinstance(g, Field) and g.metadata == {"m": 1} and g.metadata is not f.metadata
    assert Field().default is MISSING


def test_c_class_testing_types() -> None:
    assert is_dataclass(T.TestIntPair)
    names = [f.name for f in fields(T._TestCxxAutoInitKwOnlyDefaults)]
    assert names == ["p_required", "p_default", "k_required", "k_default", "hidden"]
    params = inspect.signature(T._TestCxxAutoInit.__init__).parameters
    assert tuple(params) == ("self", "a", "d", "c")
    # eq/order/hash of a c_class with them switched on, through the runtime.
    a = T._TestCxxClassDerived(1, 2, 3.0, 4.0)
    b = T._TestCxxClassDerived(1, 2, 3.0, 4.0)
    assert a == b and hash(a) == hash(b) and not a < b
    frozen = T.TestFrozenCxx(1, "t")
    with pytest.raises(AttributeError):
        frozen.value = 2  # type: ignore[misc]
    with pytest.raises(TypeError, match="cannot be constructed directly"):
        T._TestCxxNoAutoInit()

    previous = tvmffi.get_type_info("testing.TestObjectBase").type_cls

    @c_class("testing.TestObjectBase", eq=True)
    class Base(Object):
        v_i64: int
        v_f64: float
        v_str: str

    try:
        assert Base(1, 2.0, "s") == Base(1, 2.0, "s") != Base(1, 2.0, "t")
        changed = replace(Base(1, 2.0, "s"), v_i64=5)
        assert (changed.v_i64, changed.v_str) == (5, "s")
    finally:
        tvmffi.register_object("testing.TestObjectBase")(previous)


def test_plain_registered_objects_unchanged() -> None:
    # Plain register_object classes keep identity equality and no dataclass marker.
    obj = T.create_object("testing.TestObjectBase", v_i64=1)
    assert not is_dataclass(tvmffi.Object)
    assert obj.v_i64 == 1 and type(obj).v_i64.fset is not None
    type(obj).v_i64.fset(obj, 3)
    assert obj.v_i64 == 3 and type(obj).v_i64.fget(obj) == 3
    with pytest.raises(AttributeError, match="read-only"):
        obj.v_f64 = 1.0
    type(obj).v_f64.set(obj, 1.5)  # the escape hatch writes a read-only field (officially)
    assert obj.v_f64 == 1.5


def test_typed_fields_convert_and_failed_decoration_retries() -> None:
    k = key("Typed")
    for _ in range(2):  # a failed decoration leaves the key free for a retry
        with pytest.raises(TypeError, match="Cannot convert"):

            @py_class(k)
            class Bad(Object):
                x: object

    @py_class(k)
    class Typed(Object):
        n: int
        flag: bool = False
        items: list[int] = field(default_factory=list)

    t = Typed(True, 1)
    assert type(t.n) is int and t.n == 1 and t.flag is True
    assert isinstance(t.items, tvmffi.List)
    with pytest.raises(TypeError, match="expected int"):
        t.n = "no"
    with pytest.raises(TypeError, match=r"field 'n'"):
        Typed("no")
    with pytest.raises(TypeError):
        t.items = [1, "two"]
    # Native layout: int64 at 24, bool at 32, the List at 40 (as the official binding).
    assert [(f.offset, f.size) for f in tvmffi.get_type_info(Typed).fields] == [
        (24, 8),
        (32, 1),
        (40, 8),
    ]
    with pytest.raises(ValueError, match="already registered"):

        @py_class(k)
        class Again(Object):
            n: int


def test_enums_are_runtime_singletons() -> None:

    from tvmffi.dataclasses import Enum, IntEnum, StrEnum, auto, entry

    class Act(Enum, type_key=key("Act")):
        arity: int = 0
        relu: ClassVar[Act] = entry(arity=1)  # type: ignore[assignment]
        add = entry(arity=2)
        noop = auto()

    assert list(Act) == [Act.relu, Act.add, Act.noop] and len(Act) == 3
    assert (Act.add._int_index, Act.add._str_index, Act.add.arity) == (1, "add", 2)
    assert Act(0).same_as(Act.relu) and Act("noop").same_as(Act.noop)
    with pytest.raises(ValueError, match="not a valid Act"):
        Act(9)
    with pytest.raises(AttributeError):
        Act.relu.arity = 3  # type: ignore[misc]
    # The state lives in the runtime's type table, where other languages read it.
    state = tvmffi.core._lookup_type_attr(tvmffi.get_type_info(Act).type_index, "__ffi_enum__")
    assert state.indexes["add"].same_as(Act.add)
    assert copy.deepcopy(Act.add).same_as(Act.add)

    class Pri(IntEnum, type_key=key("Pri")):
        low = entry(value=10)
        high = 20

    class Op(StrEnum, type_key=key("Op")):
        plus = entry(value="+")

    assert Pri.high == 20 and Pri(10).same_as(Pri.low) and hash(Pri.low) == hash(10)
    # A StrEnum variant's name and value are both its string index (officially).
    assert Op.plus == "+" and Op.plus.name == "+" and repr(Op.plus) == "Op.+"
    with pytest.raises(OverflowError):
        Pri.get(1 << 70)
    with pytest.raises(TypeError, match="value must be int"):

        class Bad(IntEnum, type_key=key("BadPri")):
            x = entry(value="s")

    @py_class(key("Instr"))
    class Instr(Object):
        pri: Pri
        op: Op

    ins = Instr(20, "+")  # raw payloads become their variants
    assert ins.pri.same_as(Pri.high) and ins.op.same_as(Op.plus)
    ins.pri = 10
    assert ins.pri.same_as(Pri.low)
    with pytest.raises(TypeError):
        ins.pri = 99
    held = T._TestCxxEnumHolder(priority=10, opcode="*")
    assert held.priority.same_as(T._TestCxxIntEnum.low)
    assert held.opcode.same_as(T._TestCxxStrEnum.mul)


def test_parent_type_attrs_inherit_by_the_class_lists() -> None:
    @py_class(key("AttrParent"))
    class Parent(Object):
        __ffi_type_attr_names__ = ("__test_hook__",)
        __ffi_inherit_type_attrs__ = ("__test_hook__",)

        def __test_hook__(self) -> int:
            return 11

    @py_class(key("AttrChild"))
    class Child(Parent):
        value: int

    @py_class(key("AttrOptOut"))
    class OptOut(Parent):
        __ffi_inherit_type_attrs__ = ()

    lookup = tvmffi.core._lookup_type_attr
    assert lookup(tvmffi.get_type_info(Child).type_index, "__test_hook__")(Child(7)) == 11
    assert lookup(tvmffi.get_type_info(OptOut).type_index, "__test_hook__") is None


def test_c_class_enum_field_assignment_normalizes_payloads() -> None:
    held = T._TestCxxEnumHolder(priority=T._TestCxxIntEnum.low, opcode="+")
    held.priority = 20
    held.opcode = "*"
    assert held.priority.same_as(T._TestCxxIntEnum.high)
    assert held.opcode.same_as(T._TestCxxStrEnum.mul)
    with pytest.raises(TypeError, match="expected"):
        held.priority = 99
    assert held.priority.same_as(T._TestCxxIntEnum.high)  # unchanged
    assert replace(held, opcode="+").opcode.same_as(T._TestCxxStrEnum.add)


def test_method_signature_published_as_type_schema() -> None:
    import json

    from tvmffi.dataclasses import method

    @py_class(key("Meth"))
    class M(Object):
        value: int

        @method
        def scaled(self, k: int) -> float:
            return self.value * k / 2

        @method
        def packed(self, *args: int) -> int:
            return len(args)

    methods = {m.name: m for m in tvmffi.get_type_info(M).methods}
    schema = methods["scaled"].metadata["type_schema"]
    schema = json.loads(schema) if isinstance(schema, str) else schema
    assert schema["type"] == "Callable"
    assert [a["type"] for a in schema["named_args"]["params"]] == [
        M.__tvm_ffi_type_info__.type_key,
        "int",
    ]
    assert schema["named_args"]["return"][0]["type"] == "float"
    packed = methods["packed"].metadata["type_schema"]
    packed = json.loads(packed) if isinstance(packed, str) else packed
    assert packed == {"type": "Callable"}
    assert methods["scaled"].func(M(3), 2) == 3.0


class Marker:
    """An extension's annotation marker (module level: annotations resolve in the module)."""


def test_field_markers_record_positions() -> None:
    seen: dict[str, Any] = {}

    @py_class(key("MarkBase"))
    class Base(Object):
        __ffi_field_markers__ = (Marker,)
        first: int
        here: Marker
        second: int

        def __ffi_hook__(info: Any, own_fields: Any) -> None:  # type: ignore[misc]
            seen[info.type_cls.__name__] = info._decorator_args["field_markers"]

        __ffi_hook__.__ffi_on_fields_resolved__ = True  # type: ignore[attr-defined]

    assert seen["Base"] == ((Marker, Base, "here", 1),)
    assert [f.name for f in fields(Base)] == ["first", "second"]
    with pytest.raises(TypeError, match="__ffi_field_markers__"):

        @py_class(key("BadMarkers"))
        class Bad(Object):
            __ffi_field_markers__ = ("not a type",)


@py_class(key("Scalars"))
class _Scalars(Object):
    i: int = 0
    f: float = 0.0
    b: bool = False
    s: str = ""


def test_scalar_fields_convert_in_c_and_in_python() -> None:
    v = _Scalars(True, 3, 2, "x" * 40)  # bool -> int, int -> float, int -> bool
    assert (v.i, v.f, v.b, v.s) == (1, 3.0, True, "x" * 40)
    assert type(v.i) is int and type(v.f) is float and type(v.b) is bool
    v.s = "short"
    assert v.s == "short"
    for name, bad in (("i", 1.5), ("i", "1"), ("f", "x"), ("b", 1.0), ("s", 3), ("i", None)):
        with pytest.raises(TypeError):
            setattr(v, name, bad)
    with pytest.raises(TypeError, match="out of int64 range"):
        v.i = 1 << 64
    assert (v.i, v.f, v.b, v.s) == (1, 3.0, True, "short")  # failed writes changed nothing


@given(
    i=st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1),
    f=st.floats(allow_nan=False),
    b=st.booleans(),
    s=st.text(),
)
@settings(max_examples=200, deadline=None)
def test_scalar_fields_round_trip(i: int, f: float, b: bool, s: str) -> None:
    v = _Scalars(i, f, b, s)
    assert (v.i, v.f, v.b, v.s) == (i, f, b, s)
    v.i, v.f, v.b, v.s = i, f, b, s
    assert (v.i, v.f, v.b, v.s) == (i, f, b, s)


@given(value=st.one_of(st.none(), st.floats(), st.text(), st.binary(), st.lists(st.integers())))
@settings(max_examples=100, deadline=None)
def test_int_field_refuses_other_values(value: Any) -> None:
    v = _Scalars()
    with pytest.raises(TypeError):
        v.i = value
    assert v.i == 0


# ---- field resolution, written down before the rewrite (issue 30) ---------------------
def test_fields_come_from_the_class_and_its_plain_mixins_in_base_first_order() -> None:
    class Mixin:
        m: int = 5
        label: ClassVar[str] = "not a field"

    @py_class(key("Base"))
    class Base(Object):
        a: int

    @py_class(key("Child"))
    class Child(Mixin, Base):
        c: str = "x"

    # The registered base's fields first, then the mixin's, then the class's own; a
    # ClassVar of the mixin is not a field and its default moved into the field.
    assert [f.name for f in fields(Child)] == ["a", "m", "c"]
    obj = Child(1)
    assert (obj.a, obj.m, obj.c) == (1, 5, "x")
    assert "c" not in Child.__dict__ or not isinstance(Child.__dict__["c"], str)


def test_kw_only_marker_covers_the_following_fields_of_later_classes_too() -> None:
    class Mixin:
        x: int
        _: KW_ONLY
        y: int = 2

    @py_class(key("KwChild"))
    class KwChild(Mixin, Object):
        z: int = 3

    kinds = {f.name: f.kw_only for f in fields(KwChild)}
    assert kinds == {"x": False, "y": True, "z": True}
    params = inspect.signature(KwChild).parameters
    assert [(n, p.kind.name) for n, p in params.items()] == [
        ("x", "POSITIONAL_OR_KEYWORD"),
        ("y", "KEYWORD_ONLY"),
        ("z", "KEYWORD_ONLY"),
    ]
    assert (KwChild(1).y, KwChild(1, z=9).z) == (2, 9)
    with pytest.raises(TypeError):
        KwChild(1, 2)


def test_redeclared_mixin_field_keeps_its_place_and_takes_the_new_declaration() -> None:
    class Mixin:
        first: int = 1
        second: int = 2

    @py_class(key("Redeclared"))
    class Redeclared(Mixin, Object):
        first: int = 10

    assert [f.name for f in fields(Redeclared)] == ["first", "second"]
    assert Redeclared().first == 10


def test_init_properties_of_a_subclass_override_in_the_base_place() -> None:
    order: list[str] = []

    @py_class(key("PropBase"))
    class PropBase(Object):
        v: int

        @init_property
        def double(self) -> int:
            order.append("base.double")
            return 2 * self.v

        @init_property
        def triple(self) -> int:
            order.append("base.triple")
            return 3 * self.v

    @py_class(key("PropChild"))
    class PropChild(PropBase):
        @init_property
        def double(self) -> int:
            order.append("child.double")
            return -2 * self.v

    obj = PropChild(4)
    assert (obj.double, obj.triple) == (-8, 12)
    assert order == ["child.double", "base.triple"]


def test_method_marks_functions_and_refuses_classmethods_and_non_callables() -> None:
    from tvmffi.dataclasses import method

    def f(self: Any) -> int:
        return 1

    assert method(f) is f and f.__ffi_method__ is True  # type: ignore[attr-defined]
    wrapped = staticmethod(lambda: 2)
    assert method(wrapped) is wrapped and wrapped.__func__.__ffi_method__ is True  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="classmethod is not supported"):
        method(classmethod(f))
    with pytest.raises(TypeError, match="expected a callable, got int"):
        method(5)


def test_enum_attr_map_reads_defaults_and_refuses_foreign_variants() -> None:
    from tvmffi.dataclasses import Enum, auto

    class Color(Enum, type_key=key("Color")):
        RED = auto()
        BLUE = auto()

    class Other(Enum, type_key=key("Other")):
        ONE = auto()

    cost = Color.def_attr("cost", default=-1)
    bare = Color.def_attr("bare")
    assert cost.name == "cost" and cost[Color.RED] == -1 and Color.RED not in cost
    cost[Color.RED] = 7
    assert cost[Color.RED] == 7 and Color.RED in cost and cost.get(Color.BLUE, 0) == 0
    assert Color.def_attr("cost")[Color.RED] == 7  # one state, shared by every view
    with pytest.raises(KeyError, match="no extensible attribute 'bare'"):
        bare[Color.BLUE]
    assert bare.get(Color.BLUE) is None and Other.ONE not in cost
    with pytest.raises(TypeError, match="expected Color, got Other"):
        cost[Other.ONE] = 1
