"""@py_class annotations naming a type not defined yet: the class's fields wait for it.

The type is allocated at decoration (others can name it); its fields are registered,
typed, once every name resolves: after a later @py_class, or at first instantiation,
which raises TypeError naming what does not resolve (and frees the key).
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

import pytest

import tvmffi
from tvmffi import Object
from tvmffi.core import _lookup_or_register_type_info_from_type_key as type_info
from tvmffi.dataclasses import fields, py_class

_ids = itertools.count()


def _key(name: str) -> str:
    return f"tests.deferred.{name}{next(_ids)}"


def test_mutual_references_get_typed_fields() -> None:
    left_key, right_key = _key("Left"), _key("Right")

    @py_class(left_key)
    class Left(Object):
        rights: list[Right]

    assert type_info(left_key).fields is None  # waits for Right

    @py_class(right_key)
    class Right(Object):
        lefts: list[Left]

    (rights,) = type_info(left_key).fields
    assert (rights.size, rights.offset) == (8, 24)  # a List pointer, not a 16-byte Any
    assert rights.type_schema == {"type": "List", "args": [{"type": right_key}]}
    left = Left(rights=[Right(lefts=[])])
    assert isinstance(left.rights, tvmffi.List)
    assert left.rights[0].lefts == []
    with pytest.raises(TypeError):
        Left(rights=[1])


def test_name_defined_later_resolves_at_first_instantiation() -> None:
    @py_class(_key("Early"))
    class Early(Object):
        value: int
        ref: LateAlias | None  # noqa: F821 - a module global assigned below

    @py_class(_key("Late"))
    class Late(Object):
        x: int

    assert type_info(Early.__tvm_ffi_type_info__.type_key).fields is None
    globals()["LateAlias"] = Late
    try:
        obj = Early(value=1, ref=Late(x=2))
    finally:
        del globals()["LateAlias"]
    assert obj.ref.x == 2
    assert [f.name for f in fields(Early)] == ["value", "ref"]


def test_unresolvable_names_are_reported_at_instantiation_and_free_the_key() -> None:
    key = _key("Broken")
    broken: Any = type(
        "Broken",
        (Object,),
        {"__module__": __name__, "__annotations__": {"a": "NoSuchName", "b": "len(1)"}},
    )
    broken = py_class(key)(broken)
    with pytest.raises(TypeError, match="Cannot instantiate Broken") as err:
        broken()
    assert "a: NoSuchName" in str(err.value)
    assert "b: len(1)" in str(err.value)
    with pytest.raises(TypeError, match="registration failed before"):
        broken()

    @py_class(key)  # the key is free again
    class Fixed(Object):
        a: int

    assert Fixed(a=3).a == 3


def test_a_bad_annotation_alone_fails_the_decoration() -> None:
    key = _key("Bad")
    bad = type("Bad", (Object,), {"__module__": __name__, "__annotations__": {"a": "len(1)"}})
    with pytest.raises(TypeError, match="has no len"):
        py_class(key)(bad)

    @py_class(key)
    class Good(Object):
        a: float

    assert Good(a=1.5).a == 1.5


def test_subclass_of_a_pending_class_waits_for_it() -> None:
    @py_class(_key("Base"))
    class Base(Object):
        flag: bool
        target: Target

    @py_class(_key("Child"))
    class Child(Base):
        count: int

    assert Child.__tvm_ffi_type_info__.fields is None

    @py_class(_key("Target"))
    class Target(Object):
        v: int

    # Target's decoration finished both, parent first: the child's field follows the
    # parent's (bool at 24, pointer at 32).
    (count,) = Child.__tvm_ffi_type_info__.fields
    assert count.offset == 40
    child = Child(flag=True, target=Target(v=7), count=5)
    assert (child.flag, child.target.v, child.count) == (True, 7, 5)


def test_user_init_is_kept() -> None:
    @py_class(_key("WithInit"))
    class WithInit(Object):
        value: int
        ref: LaterTarget | None

        def __init__(self, value: int) -> None:
            self.value = value * 2
            self.ref = None

    @py_class(_key("LaterTarget"))
    class LaterTarget(Object):
        x: int

    assert WithInit(21).value == 42


def test_concurrent_first_instantiations_register_once() -> None:
    @py_class(_key("Racy"))
    class Racy(Object):
        value: int
        ref: RacyAlias | None  # noqa: F821

    @py_class(_key("RacyTarget"))
    class RacyTarget(Object):
        x: int

    globals()["RacyAlias"] = RacyTarget
    barrier = threading.Barrier(4)
    results: list[Any] = []

    def build(i: int) -> None:
        barrier.wait()
        try:
            results.append(Racy(value=i, ref=None).value)
        except Exception as err:  # collected: asserted below
            results.append(err)

    threads = [threading.Thread(target=build, args=(i,)) for i in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        del globals()["RacyAlias"]
    assert sorted(results) == [0, 1, 2, 3]
    assert [f.name for f in Racy.__tvm_ffi_type_info__.fields] == ["value", "ref"]
