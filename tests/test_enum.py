"""tvmffi.dataclasses enums: declaration order, entry values, aliases and bad input."""

from __future__ import annotations

import itertools
from typing import ClassVar

import pytest

import tvmffi
from tvmffi.dataclasses import Enum, IntEnum, StrEnum, auto, entry

_ids = itertools.count()


def key(name: str) -> str:
    return f"tests.enum.{name}{next(_ids)}"


def test_variants_keep_the_body_order_across_bare_and_assigned_declarations() -> None:
    # A bare annotation is placed by the annotated declarations around it (the class
    # namespace does not say where it stood among unannotated assignments).
    class Step(Enum, type_key=key("Step")):
        first = auto()
        second: ClassVar[Step]
        third: ClassVar[Step] = entry()
        fourth = auto()
        fifth: ClassVar[Step]

    assert [v._str_index for v in Step] == ["first", "second", "third", "fourth", "fifth"]
    assert [v._int_index for v in Step] == [0, 1, 2, 3, 4]


def test_entry_fills_fields_by_position_and_by_name() -> None:
    class Op(Enum, type_key=key("Op")):
        arity: int
        symbol: str = "?"
        add = entry(2, "+")
        neg = entry(1, symbol="-")
        nop = entry(arity=0)

    assert (Op.add.arity, Op.add.symbol) == (2, "+")
    assert (Op.neg.arity, Op.neg.symbol) == (1, "-")
    assert (Op.nop.arity, Op.nop.symbol) == (0, "?")
    with pytest.raises(TypeError, match="more values than fields"):

        class TooMany(Enum, type_key=key("TooMany")):
            arity: int
            x = entry(1, 2)

    with pytest.raises(TypeError, match="invalid enum entry"):

        class Missing(Enum, type_key=key("Missing")):
            arity: int
            x = auto()


def test_payload_aliases_share_one_variant_and_non_payload_attributes_stay() -> None:
    class Level(IntEnum, type_key=key("Level")):
        LOW = 1
        MIN = 1
        HIGH = entry(value=9)

        def describe(self) -> str:
            return f"level {self.value}"

    assert Level.MIN.same_as(Level.LOW) and list(Level) == [Level.LOW, Level.HIGH]  # type: ignore[attr-defined]
    assert Level.HIGH.describe() == "level 9" and Level("HIGH").same_as(Level.HIGH)  # type: ignore[call-arg]
    assert Level.get(True).same_as(Level.LOW)  # a bool index is the int it equals

    class Plain(Enum, type_key=key("Plain")):
        LIMIT = 5  # data in a plain Enum body is an ordinary class attribute
        only = auto()

    assert Plain.LIMIT == 5 and len(Plain) == 1


def test_bad_declarations_and_indices_raise_clear_errors() -> None:
    with pytest.raises(TypeError, match="value must be int"):

        class Flag(IntEnum, type_key=key("Flag")):
            ON = True

    with pytest.raises(OverflowError, match="outside int64"):

        class Huge(IntEnum, type_key=key("Huge")):
            BIG = 1 << 64

    with pytest.raises(TypeError, match="requires an int value"):

        class NoValue(IntEnum, type_key=key("NoValue")):
            X = auto()

    class Mode(StrEnum, type_key=key("Mode")):
        READ = "r"

    with pytest.raises(TypeError, match="int or a str, got float"):
        Mode.get(1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="one canonical index"):
        Mode("r", "w")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="'w' is not a valid Mode"):
        Mode("w")  # type: ignore[call-arg]


def test_attribute_views_need_an_enum_type_of_their_own() -> None:
    class Abstract(IntEnum):
        pass

    class Concrete(Abstract, type_key=key("Concrete")):
        ONE = 1

    assert len(Abstract) == 0 and list(Abstract) == []
    with pytest.raises(TypeError, match="no type_key"):
        Abstract.def_attr("x")[Concrete.ONE] = 1
    view = Concrete.def_attr("weight")
    view[Concrete.ONE] = 2.5
    state = tvmffi.core._lookup_type_attr(tvmffi.get_type_info(Concrete).type_index, "__ffi_enum__")
    assert state.attrs["weight"][Concrete.ONE] == 2.5
