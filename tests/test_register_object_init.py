"""``register_object`` classes: ``__ffi_init__`` and ``__init__`` as the official binding
gives them (fftvm's pattern: a class with its own ``__init__`` constructing through
``self.__ffi_init__(...)``), and the C dunders of the field table (csrc/field_table.c)."""

from __future__ import annotations

import copy
import inspect
import threading
from typing import Any

import pytest

import tvmffi
import tvmffi.testing
from tvmffi import Object, register_object
from tvmffi.dataclasses import field, py_class


@register_object("testing.TestIntPair")
class OwnInitPair(Object):
    """fftvm's pattern: the class's own ``__init__`` calls ``__ffi_init__``."""

    __slots__ = ()

    def __init__(self, a: int, b: int) -> None:
        self.__ffi_init__(a, b)


def test_own_init_constructs_through_ffi_init() -> None:
    p = OwnInitPair(3, 4)
    assert (p.a, p.b, p.sum()) == (3, 4, 7)
    assert "__ffi_init__" in OwnInitPair.__dict__
    assert OwnInitPair.__dict__["__init__"] is OwnInitPair.__init__  # the body's own kept


def test_objects_built_in_a_loop_are_distinct_and_correct() -> None:
    made = [OwnInitPair(i, 2 * i) for i in range(2000)]
    assert [p.sum() for p in made] == [3 * i for i in range(2000)]
    assert len({p.__chandle__() for p in made}) == len(made)


def test_ffi_init_errors_match_the_runtime() -> None:
    with pytest.raises(TypeError, match="Expected 2 but got 1"):
        OwnInitPair.__new__(OwnInitPair).__ffi_init__(1)  # type: ignore[attr-defined]
    obj = OwnInitPair.__new__(OwnInitPair)
    OwnInitPair.__ffi_init__(obj, 5, 6)  # type: ignore[attr-defined]
    assert obj.sum() == 11


def test_type_without_constructor_has_no_ffi_init() -> None:
    @register_object("testing.TestCxxNoAutoInit")
    class NoInitOwn(Object):
        __slots__ = ()

        def __init__(self, *args: Any) -> None:
            self.__ffi_init__(*args)

    with pytest.raises(AttributeError, match="__ffi_init__"):
        NoInitOwn(1, 2)

    @register_object("testing.TestCxxNoAutoInit")
    class NoInitPlain(Object):
        __slots__ = ()

    assert not hasattr(NoInitPlain, "__ffi_init__")
    with pytest.raises(TypeError, match="`NoInitPlain` cannot be constructed directly"):
        NoInitPlain(1, 2)


def test_generated_init_has_the_fields_signature() -> None:
    @register_object("testing.TestIntPair")
    class PlainPair(Object):
        __slots__ = ()

    assert str(inspect.signature(PlainPair.__init__)) == "(self, a, b)"
    assert PlainPair(1, 2).sum() == 3


def test_ffi_init_refuses_a_subclass_object() -> None:
    @register_object("testing.TestIntPair")
    class Base(Object):
        __slots__ = ()

    class Sub(Base):
        __slots__ = ()

    @register_object("testing.TestObjectDerived")
    class Other(Object):
        __slots__ = ()

    obj = Other.__new__(Other)
    with pytest.raises(TypeError, match="not supported"):
        Base.__ffi_init__(obj, 1, 2)  # type: ignore[attr-defined]
    sub = Sub.__new__(Sub)
    Base.__ffi_init__(sub, 1, 2)  # the same type: fine
    assert sub.sum() == 3


def test_callback_on_a_native_worker_thread_builds_objects(native: Any) -> None:
    seen: dict[str, int] = {}

    def build(x: int) -> int:
        seen["thread"] = threading.get_native_id()
        pairs = [OwnInitPair(x, i) for i in range(50)]
        return sum(p.sum() for p in pairs)

    res = native.call_int(tvmffi.convert_func(build), 2, spawn=True)
    assert res["rc"] == 0, res
    assert res["out"] == sum(2 + i for i in range(50))
    assert seen["thread"] == res["tid"] != threading.get_native_id()


def test_objects_built_from_many_python_threads() -> None:
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            for i in range(300):
                assert OwnInitPair(k, i).sum() == k + i
        except BaseException as err:  # reported below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# ---- the field table's C dunders ---------------------------------------------------
@py_class("tvmffi_tests.table.P", eq=True, order=True, unsafe_hash=True)
class P(Object):
    a: int
    b: float
    c: str
    d: int = 7


def test_table_methods_are_c_callables_reading_one_table() -> None:
    methods = [P.__dict__[n] for n in ("__init__", "__repr__", "__eq__", "__hash__", "__copy__")]
    assert all(type(m) is tvmffi._core.TableMethod for m in methods)
    tables = {id(m.__ffi_field_table__) for m in methods}
    assert len(tables) == 1
    table = methods[0].__ffi_field_table__
    assert table.names == ("a", "b", "c", "d") and table.init_names == ("a", "b", "c", "d")
    assert P.__match_args__ == ("a", "b", "c", "d")
    assert str(inspect.signature(P.__init__)).startswith("(self, a, b, c, d=")


@pytest.mark.parametrize(
    "text",
    ["", "s", 'q"uote', "back\\slash", "nl\ncr\rtab\t", "\x01\x7f", "é", "\u2028", "😀", "x" * 64],
)
@pytest.mark.parametrize("b", [0.0, -0.0, 2.0, 0.1, 1e20, 1.5e-7, 123456789.125, float("nan")])
def test_repr_matches_the_runtime_printer(text: str, b: float) -> None:
    obj = P(-3, b, text, 2**40)
    assert repr(obj) == tvmffi.get_global_func("ffi.ReprPrint")(obj)


def test_repr_of_object_fields_goes_to_the_runtime() -> None:
    @py_class("tvmffi_tests.table.Holder")
    class Holder(Object):
        items: list[int]
        other: Any = None

    h = Holder([1, 2], other=OwnInitPair(1, 2))
    assert repr(h) == tvmffi.get_global_func("ffi.ReprPrint")(h)
    assert "testing.TestIntPair(a=1, b=2)" in repr(h)


def test_eq_and_hash_follow_recursive_eq() -> None:
    nan = float("nan")
    assert P(1, nan, "s") == P(1, nan, "s")  # NaN equals NaN, as RecursiveEq says
    assert hash(P(1, nan, "s")) == hash(P(1, nan, "s"))
    assert P(1, 0.0, "s") == P(1, -0.0, "s") and hash(P(1, 0.0, "s")) == hash(P(1, -0.0, "s"))
    assert P(1, 2.0, "s") != P(1, 2.0, "t") and P(1, 2.0, "s") < P(1, 2.0, "t")
    assert P(1, 2.0, "s").__eq__(3) is NotImplemented


def test_copy_replace_and_deepcopy() -> None:
    p = P(1, 2.0, "s")
    q = copy.copy(p)
    assert q == p and not q.same_as(p)
    r = p.__replace__(a=5)  # type: ignore[attr-defined]
    assert (r.a, r.c, p.a) == (5, "s", 1)
    with pytest.raises(TypeError, match="unexpected field 'zz'"):
        p.__replace__(zz=1)  # type: ignore[attr-defined]
    memo: dict[int, Any] = {}
    d = copy.deepcopy(p, memo)
    assert d == p and memo[id(p)] is d


def test_init_false_field_cannot_be_replaced() -> None:
    @py_class("tvmffi_tests.table.Hidden")
    class Hidden(Object):
        a: int
        h: int = field(default=3, init=False)

    with pytest.raises(ValueError, match="init=False"):
        Hidden(1).__replace__(h=4)  # type: ignore[attr-defined]


def test_missing_passed_positionally_keeps_the_default() -> None:
    from tvmffi.core import MISSING

    p = P(1, 2.0, "s", MISSING)
    assert p.d == 7
    q = P(1, 2.0, MISSING, c="t")  # type: ignore[arg-type]
    assert (q.c, q.d) == ("t", 7)
