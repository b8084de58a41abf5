"""C++ ABI views of reflected FFI object types (the official ``tvm_ffi.dataclasses.gen_abi_cpp``).

:func:`gen_abi_cpp` turns the runtime's reflection data (each type's fields with
their byte offset, size and alignment, its total size and its parent) into one
C++17 header that declares, for every selected type, a ``struct`` with the
same memory layout: the members at the reflected offsets, deriving from the
parent's view, so that C++ code can read objects made elsewhere (a
``@py_class`` instance, a type registered by another library) without that
library's headers. The views only *look up* their type
(``TVM_FFI_DECLARE_OBJECT_INFO_LOOKUP``): including the header registers,
allocates and loads nothing. Every size, alignment and offset is checked by a
``static_assert``, so a view that does not match the compiler's layout fails
to compile instead of misreading memory.

Each field gets the C++ type that owns its bytes the way the runtime stores
them (its *carrier*): ``int64_t`` for ``int``, ``::tvm::ffi::String`` for
``str``, ``::tvm::ffi::Arc<XObj>`` for a non-null object of type ``X``,
``::tvm::ffi::ObjectPtr<XObj>`` for a nullable one, ``::tvm::ffi::Any`` where
the storage is a tagged value. A native field whose schema does not say which
of two layouts its bytes have is refused with ``ValueError`` rather than
guessed.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

# From the modules ``tvmffi.core`` re-exports them from (``core`` imports this package).
from .. import _core
from .._lineage import _lineage
from ..object import FieldInfo as TypeField
from ..object import TypeInfo, get_type_info
from ..registry import get_registered_type_keys
from ..type_schema import TypeSchema

__all__ = ["gen_abi_cpp"]

# Runtime type-index ranges (TVMFFITypeIndex): ``ffi.Object`` itself, the static
# object types the runtime defines (64..127) and the dynamically allocated ones.
_K_OBJECT = 64
_K_DYNAMIC_BEGIN = 128
# ``TVMFFIObject``: the header every view derives from (checked in the header too).
_OBJECT_SIZE = 24
_OBJECT_ALIGN = 8

_NS = "::tvm::ffi::"
_ESCAPE = "__ffi_escape_"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Valid-looking names a C++ compiler still rejects as identifiers.
_CPP_KEYWORD_TEXT = """
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
    char16_t char32_t class compl concept const consteval constexpr constinit const_cast
    continue co_await co_return co_yield decltype default delete do double dynamic_cast else
    enum explicit export extern false float for friend goto if inline int long mutable
    namespace new noexcept not not_eq nullptr operator or or_eq private protected public
    register reinterpret_cast requires return short signed sizeof static static_assert
    static_cast struct switch template this thread_local throw true try typedef typeid
    typename union unsigned using virtual void volatile wchar_t while xor xor_eq
"""
_CPP_KEYWORDS = frozenset(_CPP_KEYWORD_TEXT.split())


@dataclass(frozen=True)
class _Carrier:
    """The C++ type a field is declared with, and the layout that type has."""

    cpp_type: str
    size: int
    alignment: int


def _pointer(cpp_type: str) -> _Carrier:
    """A carrier that is one owning pointer (every object reference)."""
    return _Carrier(cpp_type, 8, 8)


def _arc(object_class: str) -> _Carrier:
    """A non-null reference to ``object_class``."""
    return _pointer(f"{_NS}Arc<{object_class}>")


def _object_ptr(object_class: str) -> _Carrier:
    """A nullable reference to ``object_class``."""
    return _pointer(f"{_NS}ObjectPtr<{object_class}>")


_ANY = _Carrier(f"{_NS}Any", 16, 8)
_ANY_OBJECT = _arc(f"{_NS}Object")

# Schema origins (normalized, as TypeSchema names them) whose carrier does not depend on
# their arguments: the POD values and the value-like object wrappers.
_VALUE_CARRIERS = {
    "int": _Carrier("int64_t", 8, 8),
    "float": _Carrier("double", 8, 8),
    "bool": _Carrier("bool", 1, 1),
    "ctypes.c_void_p": _Carrier("void*", 8, 8),
    "dtype": _Carrier("DLDataType", 4, 2),
    "DataType": _Carrier("DLDataType", 4, 2),
    "Device": _Carrier("DLDevice", 8, 4),
    "Any": _ANY,
    "str": _Carrier(f"{_NS}String", 16, 8),
    "bytes": _Carrier(f"{_NS}Bytes", 16, 8),
    "Callable": _pointer(f"{_NS}Function"),
    "Tensor": _pointer(f"{_NS}Tensor"),
}

# The raw (runtime) schema spellings whose bytes are what the normalized origin's carrier
# owns. Others normalize to the same origin but store something else (``DLTensor*`` is a
# borrowed pointer, not a ``Tensor``; ``std::vector`` is no ``ffi.Array``).
_CANONICAL_RAW = {
    origin: {origin} for origin in ("int", "float", "bool", "Device", "Any", "Optional")
}
_CANONICAL_RAW.update(dtype={"DataType"}, DataType={"DataType"}, tuple={"Tuple"})
_CANONICAL_RAW.update(Union={"Variant"}, Callable={"ffi.Function"}, Tensor={"ffi.Tensor"})
_CANONICAL_RAW.update({"ctypes.c_void_p": {"void*"}})
for _origin in ("Array", "List", "Map", "Dict"):
    _CANONICAL_RAW[_origin] = {f"ffi.{_origin}"}
_CANONICAL_RAW.update(str={"ffi.String", "ffi.SmallStr"}, bytes={"ffi.Bytes", "ffi.SmallBytes"})

_CONTAINERS = {"Array": "Array", "List": "List", "Map": "Map", "Dict": "Dict", "tuple": "Tuple"}

# Carriers of schema-less fields, by the field's static type index.
_STATIC_INDEX_CARRIERS = {
    -1: _ANY,
    1: _VALUE_CARRIERS["int"],
    2: _VALUE_CARRIERS["bool"],
    3: _VALUE_CARRIERS["float"],
    4: _VALUE_CARRIERS["ctypes.c_void_p"],
    5: _VALUE_CARRIERS["dtype"],
    6: _VALUE_CARRIERS["Device"],
}


@dataclass(frozen=True)
class _Builtin:
    """A static object type the C++ headers define: its object class and its reference
    wrapper (``None`` for the types referenced as ``Arc<object class>``)."""

    object_class: str
    wrapper: _Carrier | None


def _wrapped(object_class: str, wrapper: str, size: int = 8) -> _Builtin:
    return _Builtin(_NS + object_class, _Carrier(_NS + wrapper, size, 8))


# ``ffi.OpaquePyObject`` is left out on purpose: C++ has no owning wrapper of it.
_BUILTINS_BY_KEY = {
    "ffi.Object": _Builtin(f"{_NS}Object", None),
    "ffi.String": _wrapped("detail::StringObj", "String", 16),
    "ffi.Bytes": _wrapped("detail::BytesObj", "Bytes", 16),
    # Error also derives from std::exception, whose size is the C++ library's: the
    # field's reflected size is taken and the header's static_assert checks it.
    "ffi.Error": _wrapped("ErrorObj", "Error", 0),
    "ffi.Function": _wrapped("FunctionObj", "Function"),
    "ffi.Shape": _wrapped("ShapeObj", "Shape"),
    "ffi.Tensor": _wrapped("TensorObj", "Tensor"),
    "ffi.Array": _wrapped("ArrayObj", f"Array<{_NS}Any>"),
    "ffi.Map": _wrapped("MapObj", f"Map<{_NS}Any, {_NS}Any>"),
    "ffi.List": _wrapped("ListObj", f"List<{_NS}Any>"),
    "ffi.Dict": _wrapped("DictObj", f"Dict<{_NS}Any, {_NS}Any>"),
    "ffi.Module": _Builtin(f"{_NS}ModuleObj", None),
    "ffi.VisitInterrupt": _Builtin(f"{_NS}VisitInterruptObj", None),
}


def _builtins() -> dict[int, _Builtin]:
    """The static object types with a C++ counterpart, by this runtime's type index."""
    table: dict[int, _Builtin] = {}
    for key, builtin in _BUILTINS_BY_KEY.items():
        index = _core._type_key_to_index(key)
        if index is not None:
            table[index] = builtin
    return table


# ---- names ---------------------------------------------------------------------------


def _identifier(name: str) -> str:
    """``name`` as a C++ identifier: kept when it is one, else hex-escaped (injectively:
    a name that merely looks escaped is escaped too)."""
    if _IDENTIFIER.fullmatch(name) and name not in _CPP_KEYWORDS and not name.startswith(_ESCAPE):
        return name
    return _ESCAPE + name.encode("utf-8").hex()


@functools.cache
def _byte_spellings() -> tuple[str, ...]:
    """How each byte value is written inside a C++ string literal: printable ASCII as
    itself (``"`` and ``\\`` escaped), every other byte as a three-digit octal escape, so
    the literal's bytes do not depend on the compiler's execution character set."""
    printable = {b: chr(b) for b in range(0x20, 0x7F)}
    printable[ord('"')], printable[ord("\\")] = '\\"', "\\\\"
    return tuple(printable.get(b, f"\\{b:03o}") for b in range(256))


def _string_literal(text: str) -> str:
    """A C++ literal of ``text``'s UTF-8 bytes (see :func:`_byte_spellings`)."""
    spell = _byte_spellings()
    return '"' + "".join(spell[b] for b in text.encode("utf-8")) + '"'


@dataclass(frozen=True)
class _CppName:
    """A type key's C++ view: dotted prefix -> namespaces, last part + ``Obj`` -> struct."""

    namespaces: tuple[str, ...]
    struct: str

    @staticmethod
    def of(type_key: str) -> _CppName:
        *outer, last = type_key.split(".")
        return _CppName(tuple(_identifier(p) for p in outer), _identifier(last) + "Obj")

    @property
    def qualified(self) -> str:
        return "".join(f"::{part}" for part in (*self.namespaces, self.struct))


def _declaration_order(info: TypeInfo) -> tuple[tuple[str, ...], str, str]:
    name = _CppName.of(info.type_key)
    return name.namespaces, name.struct, info.type_key


# ---- which types ---------------------------------------------------------------------


def _is_python_defined(info: Any) -> bool:
    """Whether ``info`` is a ``@py_class`` type: its fields' layout is the Python
    registration's own (top-level ``Optional``/``Union`` stored as ``Any``), not a C++
    member's, so no raw schema is needed to tell the bytes apart."""
    return bool(getattr(info, "_decorator_args", None))


def _selectors(type_keys: str | Sequence[str]) -> list[str]:
    if isinstance(type_keys, str):
        return [type_keys]
    if not isinstance(type_keys, Iterable) or isinstance(type_keys, (bytes, bytearray)):
        raise TypeError(
            "gen_abi_cpp expects a type key, a pattern or a sequence of them, "
            f"got {type(type_keys).__name__}"
        )
    selectors = list(type_keys)
    for selector in selectors:
        if not isinstance(selector, str):
            raise TypeError(
                f"gen_abi_cpp expects type keys or patterns as str, got {type(selector).__name__}"
            )
    return selectors


def _matching_object_types(selector: str, registered: list[str]) -> list[TypeInfo]:
    keys = [key for key in registered if fnmatch.fnmatchcase(key, selector)]
    if not keys:
        raise ValueError(f"Type-key selector {selector!r} did not match any registered type")
    infos = []
    for key in keys:
        index = _core._type_key_to_index(key)
        if index is not None and index >= _K_OBJECT:
            infos.append(get_type_info(key))
    if not infos:
        raise ValueError(
            f"Type-key selector {selector!r} did not match any registered object type "
            f"(matched only {', '.join(keys)})"
        )
    return infos


def _select(type_keys: str | Sequence[str]) -> list[TypeInfo]:
    """The types to declare views of: the selected dynamic types and their dynamic
    ancestors, parents before children (by depth), then by type key."""
    registered = sorted({str(key) for key in get_registered_type_keys()})
    builtins = _builtins()
    chosen: dict[int, TypeInfo] = {}
    for selector in _selectors(type_keys):
        for info in _matching_object_types(selector, registered):
            if info.type_index < _K_DYNAMIC_BEGIN:
                # The C++ headers already define these: nothing to generate.
                if info.type_index not in builtins:
                    raise ValueError(
                        f"Static TVM-FFI type {info.type_key!r} is not supported: "
                        "C++ has no public view of it"
                    )
                continue
            for ancestor in _lineage(info):
                if ancestor.type_index >= _K_DYNAMIC_BEGIN:
                    chosen[ancestor.type_index] = ancestor
    return sorted(chosen.values(), key=lambda info: (len(info.type_ancestors), info.type_key))


# ---- the generator -------------------------------------------------------------------


@dataclass(frozen=True)
class _Member:
    name: str
    reflected_name: str
    carrier: _Carrier
    offset: int
    alias_of: str | None = None
    """The field whose bytes this one names too (``ffi.IntEnum.value`` is the inherited
    ``ffi.Enum._int_index``): a comment, as C++ cannot declare a second member there."""


@dataclass(frozen=True)
class _View:
    """One struct to emit."""

    info: TypeInfo
    name: _CppName
    base: str
    alignment: int
    size: int
    members: tuple[_Member, ...]


def _raw_schema(field: TypeField, owner: TypeInfo) -> dict[str, Any]:
    raw = field.metadata.get("type_schema") if isinstance(field.metadata, dict) else None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as err:
            raise ValueError(
                f"Invalid raw type schema for {owner.type_key}.{field.name}: {raw!r}"
            ) from err
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        raise ValueError(f"Missing raw type schema for native field {owner.type_key}.{field.name}")
    return raw


def _check_raw_schema(schema: TypeSchema, raw: dict[str, Any]) -> None:
    """Refuse a native schema whose runtime spelling stores other bytes than the carrier of
    its normalized origin would (recursively through the container arguments)."""
    origin, raw_origin = schema.origin, raw["type"]
    canonical = _CANONICAL_RAW.get(origin)
    if canonical is None:
        if schema.origin_type_index < _K_OBJECT:
            raise ValueError(f"unsupported native raw schema {raw!r}")
        expected = "ffi.Object" if origin == "Object" else origin
        if raw_origin != expected:
            raise ValueError(
                f"native object schema origin {raw_origin!r} does not match {expected!r}"
            )
        return
    if raw_origin not in canonical:
        raise ValueError(
            f"native schema origin {raw_origin!r} normalizes to {origin!r} but is not its "
            f"canonical owning representation ({' or '.join(sorted(canonical))})"
        )
    if origin not in _CONTAINERS and origin not in ("Optional", "Union"):
        return
    args = schema.args or ()
    raw_args = raw.get("args", [])
    if not isinstance(raw_args, list) or len(raw_args) != len(args):
        raise ValueError(f"raw schema {raw!r} does not match normalized schema {schema!r}")
    for arg, raw_arg in zip(args, raw_args, strict=True):
        if not isinstance(raw_arg, dict) or not isinstance(raw_arg.get("type"), str):
            raise ValueError(f"invalid nested raw schema {raw_arg!r}")
        _check_raw_schema(arg, raw_arg)


def _is_object(schema: TypeSchema) -> bool:
    return schema.origin_type_index >= _K_OBJECT


class _Generator:
    """Builds the header of ``emitted`` (from :func:`_select`); every object type a field
    refers to becomes a dependency, forward-declared (and, when not emitted itself,
    declared as an opaque lookup-only view)."""

    def __init__(self, emitted: list[TypeInfo]) -> None:
        self.emitted = list(emitted)
        self.builtins = _builtins()
        self.dependencies: dict[int, TypeInfo] = {info.type_index: info for info in emitted}

    # ---- carriers ----

    def _object_class(self, schema: TypeSchema) -> str:
        """The C++ class of object type ``schema`` (recording a dynamic one as a dependency)."""
        index = schema.origin_type_index
        if index == _K_OBJECT or schema.origin == "Object":
            return f"{_NS}Object"
        builtin = self.builtins.get(index)
        if builtin is not None:
            return builtin.object_class
        if index < _K_DYNAMIC_BEGIN:
            raise ValueError(f"Schema {schema!r} is not a registered object type")
        info = get_type_info(schema.origin)
        self.dependencies[info.type_index] = info
        return _CppName.of(info.type_key).qualified

    def _required_object(self, schema: TypeSchema) -> _Carrier:
        """A non-null reference: the C++ wrapper of a builtin type, else ``Arc``."""
        builtin = self.builtins.get(schema.origin_type_index)
        if builtin is not None and builtin.wrapper is not None:
            return builtin.wrapper
        return _arc(self._object_class(schema))

    def _element(self, schema: TypeSchema) -> _Carrier:
        """A container element: there ``Optional[object]`` is a nullable pointer and a union
        of object types one non-null object pointer; other unions stay ``Any``."""
        args = schema.args or ()
        if schema.origin == "Optional" and _is_object(args[0]):
            return _object_ptr(self._object_class(args[0]))
        if schema.origin == "Union":
            return _ANY_OBJECT if all(_is_object(arg) for arg in args) else _ANY
        return self._value(schema)

    def _value(self, schema: TypeSchema) -> _Carrier:
        origin = schema.origin
        carrier = _VALUE_CARRIERS.get(origin)
        if carrier is not None:
            return carrier
        if origin in ("Optional", "Union"):
            return _ANY
        container = _CONTAINERS.get(origin)
        if container is not None and schema.args is not None:
            elements = ", ".join(self._element(arg).cpp_type for arg in schema.args or ())
            return _pointer(f"{_NS}{container}<{elements}>")
        if _is_object(schema):
            return self._required_object(schema)
        raise ValueError(f"Unsupported TVM-FFI type schema {schema!r}")

    def _native_nullable(self, schema: TypeSchema, field: TypeField, owner: TypeInfo) -> _Carrier:
        """A top-level ``Optional``/``Union`` of a C++ member: which C++ type it was is told
        by the schema together with the member's reflected layout; anything else is refused."""
        layout = (field.size, field.alignment)
        args = schema.args or ()
        if schema.origin == "Optional":
            value = args[0]
            if value.origin in ("str", "bytes") and layout == (16, 8):
                return self._value(value)  # Optional<String> shares String's storage
            if _is_object(value) and layout == (16, 8):
                return _Carrier(f"{_NS}Optional<{self._required_object(value).cpp_type}>", 16, 8)
            if _is_object(value) and layout == (8, 8):
                return _object_ptr(self._object_class(value))
        elif layout == (8, 8) and all(_is_object(arg) for arg in args):
            return _ANY_OBJECT
        raise ValueError(
            f"Ambiguous native {schema.origin} carrier for {owner.type_key}.{field.name} "
            f"with layout {layout}: the schema does not say which C++ type stores it"
        )

    def _carrier_of(self, field: TypeField, owner: TypeInfo) -> _Carrier:
        schema: TypeSchema | None = field.ty
        python_defined = _is_python_defined(owner)
        if schema is None:
            index = field.field_static_type_index
            carrier = _STATIC_INDEX_CARRIERS.get(index)
            if carrier is None and index >= _K_OBJECT:
                carrier = _object_ptr(f"{_NS}Object")
            if carrier is None:
                raise ValueError(
                    f"Cannot determine carrier for {owner.type_key}.{field.name}: "
                    f"missing type schema and static type index {index}"
                )
            return carrier
        if not python_defined:
            _check_raw_schema(schema, _raw_schema(field, owner))
        if schema.origin in ("Optional", "Union"):
            # A Python-defined field stores these as a tagged Any.
            return _ANY if python_defined else self._native_nullable(schema, field, owner)
        return self._value(schema)

    def _lower_field(self, field: TypeField, owner: TypeInfo) -> _Carrier:
        """The carrier of ``field`` of type ``owner``; ``ValueError`` when none is known or
        its layout is not the reflected one."""
        carrier = self._carrier_of(field, owner)
        reflected = (field.size, field.alignment)
        schema: TypeSchema | None = field.ty
        builtin = None if schema is None else self.builtins.get(schema.origin_type_index)
        if builtin is not None and builtin.wrapper is not None and carrier == builtin.wrapper:
            if reflected == (8, 8) and carrier.size != 8:
                # One pointer wide: the object itself, not the larger wrapper.
                carrier = _arc(builtin.object_class)
            elif carrier.size == 0:
                carrier = _Carrier(carrier.cpp_type, field.size, field.alignment)
        if (carrier.size, carrier.alignment) != reflected:
            raise ValueError(
                f"Carrier {carrier.cpp_type} for {owner.type_key}.{field.name} has layout "
                f"{(carrier.size, carrier.alignment)}, but reflection reports {reflected} "
                f"at offset {field.offset}"
            )
        return carrier

    # ---- views ----

    def _base_of(self, info: TypeInfo) -> str:
        parent = info.parent_type_info
        if parent is None:
            raise ValueError(f"Object type {info.type_key!r} does not expose its parent type")
        if parent.type_index >= _K_DYNAMIC_BEGIN:
            return _CppName.of(parent.type_key).qualified
        builtin = self.builtins.get(parent.type_index)
        if builtin is None:
            raise ValueError(
                f"Parent type {parent.type_key!r} of {info.type_key!r} is not supported"
            )
        return builtin.object_class

    def _view(self, info: TypeInfo) -> _View:
        if info.fields is None:
            raise ValueError(
                f"Type {info.type_key!r} has no fields yet: its @py_class annotations name "
                "a type not defined yet, so its layout is not known"
            )
        if not info._has_type_metadata and not _is_python_defined(info):
            raise ValueError(
                f"Native type {info.type_key!r} does not expose fixed total-size metadata"
            )
        base = self._base_of(info)
        # Byte ranges already declared: the ancestors' fields, then each member emitted.
        storage = [
            (f.offset, f.offset + f.size, f.name)
            for t in _lineage(info)[:-1]
            for f in t.fields or ()
            if f.size > 0
        ]
        members = []
        for f in sorted(info.fields, key=lambda f: f.offset):
            carrier = self._lower_field(f, info)
            member = _Member(_identifier(f.name), f.name, carrier, f.offset)
            end = f.offset + f.size
            overlapping = [r for r in storage if r[0] < end and f.offset < r[1]]
            if overlapping:
                first, last, name = overlapping[0]
                if len(overlapping) > 1 or not first <= f.offset < end <= last:
                    raise ValueError(
                        f"Field {info.type_key}.{f.name} (offset {f.offset}, size {f.size}) "
                        f"partly overlaps field {name!r}: no C++ member can have that layout"
                    )
                member = _Member(member.name, f.name, carrier, f.offset, alias_of=name)
            else:
                storage.append((f.offset, end, f.name))
            members.append(member)
        alignment = max(
            [_OBJECT_ALIGN, *(f.alignment for t in _lineage(info) for f in t.fields or ())]
        )
        return _View(
            info, _CppName.of(info.type_key), base, alignment, info.total_size, tuple(members)
        )

    def build(self) -> str:
        """The header text."""
        views = [self._view(info) for info in self.emitted]
        emitted = {view.info.type_index for view in views}
        dependencies = sorted(self.dependencies.values(), key=_declaration_order)
        lines = ["#pragma once", "", "#include <tvm/ffi/tvm_ffi.h>", ""]
        lines += _in_namespaces(_forward_declaration(info) for info in dependencies)
        for info in dependencies:
            qualified = _CppName.of(info.type_key).qualified
            lines += [
                "template <>",
                f"inline constexpr bool tvm::ffi::is_object_subclass_v<{qualified}> = true;",
            ]
        lines.append("")
        lines += _in_namespaces(
            _opaque_view(info) for info in dependencies if info.type_index not in emitted
        )
        lines += [
            f"static_assert(sizeof({_NS}Object) == {_OBJECT_SIZE});",
            f"static_assert(alignof({_NS}Object) == {_OBJECT_ALIGN});",
            "",
            *_OFFSETOF_WARNING_OFF,
            "",
        ]
        lines += _in_namespaces(_view_lines(view) for view in views)
        lines += [*_OFFSETOF_WARNING_RESTORE, ""]
        return "\n".join(lines)


# ---- text ----------------------------------------------------------------------------

# offsetof on a type with a base class is "conditionally supported"; GCC and Clang
# support it for these standard-layout-like views but warn.
_OFFSETOF_WARNING_OFF = [
    "#if defined(__clang__) || defined(__GNUC__)",
    "#pragma GCC diagnostic push",
    '#pragma GCC diagnostic ignored "-Winvalid-offsetof"',
    "#elif defined(_MSC_VER)",
    "#pragma warning(push)",
    "#pragma warning(disable : 4749)",
    "#endif",
]
_OFFSETOF_WARNING_RESTORE = [
    "#if defined(__clang__) || defined(__GNUC__)",
    "#pragma GCC diagnostic pop",
    "#elif defined(_MSC_VER)",
    "#pragma warning(pop)",
    "#endif",
]

_Block = tuple[tuple[str, ...], list[str]]


def _lookup_line(info: TypeInfo) -> str:
    key = _string_literal(info.type_key)
    return f"  TVM_FFI_DECLARE_OBJECT_INFO_LOOKUP({key}, {len(info.type_ancestors)});"


def _forward_declaration(info: TypeInfo) -> _Block:
    name = _CppName.of(info.type_key)
    return name.namespaces, [f"struct {name.struct};"]


def _opaque_view(info: TypeInfo) -> _Block:
    """A referenced type that is not emitted: only its type is looked up, no members."""
    name = _CppName.of(info.type_key)
    head = f"struct {name.struct} : public {_NS}Object {{"
    return name.namespaces, [head, _lookup_line(info), "};"]


def _view_lines(view: _View) -> _Block:
    struct = view.name.struct
    lines = [f"struct alignas({view.alignment}) {struct} : public {view.base} {{"]
    lines.append(_lookup_line(view.info))
    if view.members:
        lines.append("")
    for m in view.members:
        note = "" if m.name == m.reflected_name else f", reflected name={m.reflected_name!r}"
        layout = f"offset={m.offset}, size={m.carrier.size}, align={m.carrier.alignment}{note}"
        if m.alias_of is None:
            lines.append(f"  {m.carrier.cpp_type} {m.name};  // {layout}")
        else:
            lines.append(
                f"  // {m.carrier.cpp_type} {m.name}: the bytes of {m.alias_of!r} ({layout})"
            )
    lines += [
        "};",
        "",
        f"static_assert(sizeof({struct}) == {view.size});",
        f"static_assert(alignof({struct}) == {view.alignment});",
    ]
    for m in view.members:
        if m.alias_of is not None:
            continue
        lines += [
            f"static_assert(sizeof(decltype({struct}::{m.name})) == {m.carrier.size});",
            f"static_assert(alignof(decltype({struct}::{m.name})) == {m.carrier.alignment});",
            f"static_assert(offsetof({struct}, {m.name}) == {m.offset});",
        ]
    return view.name.namespaces, lines


def _in_namespaces(blocks: Iterable[_Block]) -> list[str]:
    """Blocks wrapped in their namespaces; consecutive blocks of one namespace share it,
    blocks separated by a blank line; a blank line ends the text when there is any."""
    groups: list[tuple[tuple[str, ...], list[list[str]]]] = []
    for namespaces, block in blocks:
        if groups and groups[-1][0] == namespaces:
            groups[-1][1].append(block)
        else:
            groups.append((namespaces, [block]))
    lines: list[str] = []
    for namespaces, group in groups:
        if lines:
            lines.append("")
        lines += [f"namespace {ns} {{" for ns in namespaces]
        if namespaces:
            lines.append("")
        for i, block in enumerate(group):
            if i:
                lines.append("")
            lines += block
        if namespaces:
            lines.append("")
        lines += [f"}}  // namespace {ns}" for ns in reversed(namespaces)]
    if lines:
        lines.append("")
    return lines


def gen_abi_cpp(type_keys: str | Sequence[str]) -> str:
    """Generate one C++ header declaring inheritance-preserving ABI views of object types.

    Parameters
    ----------
    type_keys
        A registered type key, a shell-style pattern (``"my_pkg.*"``), or a sequence of
        keys and patterns. The selected types' dynamic ancestors are included; object
        types their fields refer to are declared as lookup-only views.

    Returns
    -------
    str
        Deterministic C++17 header source. It only looks types up: including it does
        not register, load or allocate anything.

    Raises
    ------
    ValueError
        A selector that matches no registered object type, a static type without a C++
        view (``ffi.OpaquePyObject``), a native type without size metadata, or a field
        whose C++ storage cannot be told from its schema and reflected layout.
    TypeError
        A selector that is not a ``str``.

    """
    return _Generator(_select(type_keys)).build()
