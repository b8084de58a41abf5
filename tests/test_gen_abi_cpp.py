"""tvmffi.dataclasses.gen_abi_cpp: C++ ABI-view headers of reflected object types.

The views are only worth anything if C++ compiled against them reads the very
bytes Python wrote: the header is compiled once per module (two shared cores)
together with functions that read live ``@py_class`` and native objects through it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional, Union

import pytest
from hypothesis import given
from hypothesis import strategies as st

import tvmffi
import tvmffi.cpp
import tvmffi.testing
from tvmffi import Device, Object
from tvmffi.core import DataType, Error, _lookup_or_register_type_info_from_type_key
from tvmffi.dataclasses import IntEnum, gen_abi_cpp, py_class
from tvmffi.dataclasses.gen_abi_cpp import _identifier, _string_literal


@py_class("tests.abi.Leaf")
class Leaf(Object):
    value: int


@py_class("tests.abi.Base")
class Base(Object):
    flag: bool
    count: int


@py_class("tests.abi.sub.Derived")
class Derived(Base):
    ratio: float
    name: str
    leaf: Leaf
    leaves: list[Leaf]
    table: dict[str, int]
    # py_class resolves annotations at runtime: no PEP 604 union on Python 3.9.
    maybe: Optional[int]  # noqa: UP045
    device: Device
    dtype: DataType


@py_class("tests.abi.Keywords")
class Keywords(Object):
    new: int
    default: float


@py_class("tests.abi.Ωmega")
class Omega(Object):
    value: int


@py_class("tests.abi.Failing")
class Failing(Object):
    failure: Error


class Color(IntEnum, type_key="tests.abi.Color"):
    RED = 3
    GREEN = 40


_KEYS = [
    "tests.abi.sub.*",
    "tests.abi.Keywords",
    "tests.abi.Ωmega",
    "tests.abi.Color",
    "tests.abi.Failing",
    "testing.TestIntPair",
]

_READERS = r"""
using ::tests::abi::LeafObj;
using ::tests::abi::sub::DerivedObj;

static_assert(std::is_base_of_v<::tests::abi::BaseObj, DerivedObj>);

int64_t read_count(const DerivedObj* d) { return d->count; }
bool read_flag(const DerivedObj* d) { return d->flag; }
double read_ratio(const DerivedObj* d) { return d->ratio; }
::tvm::ffi::String read_name(const DerivedObj* d) { return d->name; }
int64_t read_leaf(const DerivedObj* d) { return d->leaf->value; }
int64_t sum_leaves(const DerivedObj* d) {
  int64_t total = 0;
  for (const ::tvm::ffi::Arc<LeafObj>& leaf : d->leaves) total += leaf->value;
  return total;
}
int64_t table_at(const DerivedObj* d, ::tvm::ffi::String key) { return d->table.at(key); }
int64_t maybe_or(const DerivedObj* d, int64_t fallback) {
  return d->maybe.as<int64_t>().value_or(fallback);
}
int64_t device_id(const DerivedObj* d) { return d->device.device_id; }
int64_t dtype_bits(const DerivedObj* d) { return d->dtype.bits; }
double keyword_sum(const ::tests::abi::KeywordsObj* k) {
  return static_cast<double>(k->__ffi_escape_6e6577) + k->__ffi_escape_64656661756c74;
}
int32_t omega_index() { return ::tests::abi::__ffi_escape_cea96d656761Obj::RuntimeTypeIndex(); }
int64_t pair_sum(const ::testing::TestIntPairObj* p) { return p->a * 1000 + p->b; }
int64_t color_value(const ::tests::abi::ColorObj* c) { return c->_int_index; }
::tvm::ffi::String failure_kind(const ::tests::abi::FailingObj* f) {
  return ::tvm::ffi::String(f->failure->kind.data, f->failure->kind.size);
}
"""


@pytest.fixture(scope="module")
def header() -> str:
    # Leaf selected too: a type that is only referred to gets a view without members.
    return gen_abi_cpp([*_KEYS, "tests.abi.Leaf"])


@pytest.fixture(scope="module")
def readers(header: str, tmp_path_factory: pytest.TempPathFactory) -> tvmffi.Module:
    names = re.findall(r"^[\w:]+ (\w+)\(", _READERS, re.MULTILINE)
    assert len(names) == 15
    return tvmffi.cpp.load_inline(
        name="tvmffi_test_gen_abi_cpp",
        cpp_sources=header + _READERS,
        functions=names,
        build_directory=str(tmp_path_factory.mktemp("gen_abi_cpp")),
    )


def _derived() -> Derived:
    return Derived(
        flag=True,
        count=-7,
        ratio=2.5,
        name="a name longer than the small-string buffer",
        leaf=Leaf(value=11),
        leaves=[Leaf(value=1), Leaf(value=2), Leaf(value=39)],
        table={"x": 5, "y": 6},
        maybe=None,
        device=Device("cpu", 3),
        dtype=DataType("float16"),
    )


def test_cpp_reads_py_class_fields_through_the_views(readers: tvmffi.Module) -> None:
    d = _derived()
    assert readers.read_count(d) == -7  # an inherited member, through the base view
    assert readers.read_flag(d) is True
    assert readers.read_ratio(d) == 2.5
    assert readers.read_name(d) == "a name longer than the small-string buffer"
    assert readers.read_leaf(d) == 11
    assert readers.sum_leaves(d) == 42
    assert readers.table_at(d, "y") == 6
    assert readers.maybe_or(d, -1) == -1
    d.maybe = 123
    assert readers.maybe_or(d, -1) == 123
    assert readers.device_id(d) == 3
    assert readers.dtype_bits(d) == 16


def test_keyword_field_names_are_escaped_and_readable(header: str, readers: tvmffi.Module) -> None:
    assert "double __ffi_escape_64656661756c74;  // offset=32, size=8, align=8, " in header
    assert "reflected name='default'" in header
    assert readers.keyword_sum(Keywords(new=40, default=2.25)) == 42.25


def test_unicode_type_key_views_look_up_the_same_type(header: str, readers: tvmffi.Module) -> None:
    # The key's UTF-8 bytes are octal-escaped: the lookup finds exactly the registered type.
    assert 'TVM_FFI_DECLARE_OBJECT_INFO_LOOKUP("tests.abi.\\316\\251mega", 1);' in header
    info = _lookup_or_register_type_info_from_type_key("tests.abi.Ωmega")
    assert readers.omega_index() == info.type_index


def test_native_type_view_reads_a_native_object(readers: tvmffi.Module) -> None:
    assert readers.pair_sum(tvmffi.testing.TestIntPair(4, 2)) == 4002


def test_ancestors_and_dependencies_are_declared() -> None:
    # Only Derived was selected: its base gets a full view, Leaf a lookup-only one.
    header = gen_abi_cpp(_KEYS)
    assert "struct alignas(8) BaseObj : public ::tvm::ffi::Object {" in header
    assert "struct alignas(8) DerivedObj : public ::tests::abi::BaseObj {" in header
    assert "struct LeafObj : public ::tvm::ffi::Object {\n" in header
    assert "int64_t value;" not in header.split("struct LeafObj", 2)[2].split("};")[0]
    assert "::tvm::ffi::Any maybe;  // offset=" in header
    # Color brings its ancestors ffi.Enum and ffi.IntEnum (dynamic types) along.
    assert header.count("inline constexpr bool tvm::ffi::is_object_subclass_v<") == 10


def test_output_is_deterministic_and_selector_order_free(header: str) -> None:
    keys = [*_KEYS, "tests.abi.Leaf"]
    assert gen_abi_cpp(list(reversed(keys))) == header
    assert gen_abi_cpp([*keys, "tests.abi.sub.Derived", "tests.abi.Key*"]) == header
    assert gen_abi_cpp([]) == gen_abi_cpp("ffi.Function")


@pytest.mark.parametrize(
    ("selector", "error", "message"),
    [
        ("tests.abi.NoSuchType", ValueError, "did not match any registered type"),
        ("tests.nothing.*", ValueError, "did not match any registered type"),
        ("int", ValueError, "did not match any registered object type"),
        ("ffi.OpaquePyObject", ValueError, "'ffi.OpaquePyObject' is not supported"),
        ("testing.SchemaAllTypes", ValueError, "Ambiguous native Optional carrier"),
        ("testing.TestFrozenCxx", ValueError, "does not expose fixed total-size metadata"),
        # A native int32 member is not an int64_t: refused, not misread.
        ("testing.TestCxxClassBase", ValueError, r"reflection reports \(4, 4\)"),
        (["tests.abi.Leaf", 3], TypeError, "as str, got int"),
        (None, TypeError, "a sequence of them, got NoneType"),
        (b"tests.abi.Leaf", TypeError, "a sequence of them, got bytes"),
    ],
)
def test_bad_selection_is_refused(selector: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        gen_abi_cpp(selector)  # type: ignore[arg-type]


def test_header_of_builtins_only_compiles(tmp_path: Path) -> None:
    source = tmp_path / "builtins.cc"
    (tmp_path / "abi.h").write_text(gen_abi_cpp(["ffi.Function", "ffi.Array"]))
    source.write_text('#include "abi.h"\n#include "abi.h"\n')  # #pragma once: twice is fine
    built = tvmffi.cpp.build(
        name="tvmffi_test_gen_abi_cpp_builtins",
        sources=str(source),
        extra_include_paths=[str(tmp_path)],
        build_directory=str(tmp_path / "build"),
        output="builtins.o",
    )
    assert Path(built).is_file()


_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@given(st.text(max_size=20))
def test_identifiers_are_valid_and_injective(name: str) -> None:
    ident = _identifier(name)
    assert _C_IDENTIFIER.fullmatch(ident)
    assert ident not in {"new", "default", "class", "int", "namespace"}
    if ident.startswith("__ffi_escape_"):
        assert bytes.fromhex(ident[len("__ffi_escape_") :]).decode("utf-8") == name
    else:
        assert ident == name


def _c_literal_bytes(literal: str) -> bytes:
    """The bytes a C string literal made of printable ASCII and 3-digit octal escapes holds."""
    assert literal[0] == literal[-1] == '"'
    out, body, i = bytearray(), literal[1:-1], 0
    while i < len(body):
        if body[i] == "\\":
            nxt = body[i + 1]
            if nxt in '"\\':
                out.append(ord(nxt))
                i += 2
            else:
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
        else:
            assert 0x20 <= ord(body[i]) < 0x7F and body[i] != '"'
            out.append(ord(body[i]))
            i += 1
    return bytes(out)


@given(st.text(max_size=30))
def test_string_literals_hold_the_utf8_bytes(text: str) -> None:
    assert _c_literal_bytes(_string_literal(text)) == text.encode("utf-8")


def test_a_type_still_waiting_for_its_fields_is_refused() -> None:
    @py_class("tests.abi.Waiting")
    class Waiting(Object):
        other: NotDefinedYet  # noqa: F821

    with pytest.raises(ValueError, match=r"'tests\.abi\.Waiting' has no fields yet"):
        gen_abi_cpp("tests.abi.Waiting")


def test_a_field_aliasing_inherited_bytes_is_a_comment(header: str, readers: tvmffi.Module) -> None:
    # ffi.IntEnum's `value` is registered at the offset of ffi.Enum's `_int_index`: a
    # second C++ member there is impossible (the header would not compile), so the view
    # names it in a comment and C++ reads it through the inherited member.
    assert "  // int64_t value: the bytes of '_int_index' (offset=24, size=8, align=8)" in header
    assert readers.color_value(Color.GREEN) == Color.GREEN.value == 40
    assert readers.color_value(Color.RED) == Color.RED.value == 3


def test_an_error_field_is_one_object_pointer(header: str, readers: tvmffi.Module) -> None:
    # A @py_class field holds the ErrorObj pointer; the C++ Error wrapper (which also
    # derives from std::exception) is twice that size and would fail the static_asserts.
    assert "  ::tvm::ffi::Arc<::tvm::ffi::ErrorObj> failure;  // offset=24, size=8" in header
    assert readers.failure_kind(Failing(failure=Error("KeyError", "gone", ""))) == "KeyError"


@py_class("tests.abi.Choices")
class Choices(Object):
    # py_class resolves annotations at runtime: no PEP 604 union on Python 3.9.
    maybe_leaf: Optional[Leaf]  # noqa: UP045
    either: Union[Leaf, Base]  # noqa: UP007
    leaves: list[Optional[Leaf]]  # noqa: UP045
    pair: tuple[int, str]


def test_binding_laid_out_choices_are_any_and_nested_ones_keep_their_objects() -> None:
    # A Python-defined type stores every Optional/Union field as an Any (16 bytes);
    # inside a container the element view keeps the object type, nullable.
    header = gen_abi_cpp("tests.abi.Choices")
    assert "  ::tvm::ffi::Any maybe_leaf;  // offset=24, size=16, align=8\n" in header
    assert "  ::tvm::ffi::Any either;  // offset=40, size=16, align=8\n" in header
    assert (
        "  ::tvm::ffi::List<::tvm::ffi::ObjectPtr<::tests::abi::LeafObj>> leaves;"
        "  // offset=56, size=8, align=8\n" in header
    )
    assert "  ::tvm::ffi::Array<::tvm::ffi::Any> pair;  // offset=64, size=8, align=8\n" in header
    assert "struct LeafObj : public ::tvm::ffi::Object {\n" in header  # referred to: lookup only
    assert "struct BaseObj" not in header  # only inside a Union: no view needed
