"""C++ ABI views of reflected FFI object types (the official ``tvm_ffi.dataclasses.gen_abi_cpp``).

:func:`gen_abi_cpp` turns registered object types into one C++17 header of structs
that lay their fields out exactly as the runtime reports them (``static_assert``
checked), so C++ code can read the objects Python or another language built.

It works in two steps. ``_Generator`` reads the type table into a model: a list of
``_View`` records (one per C++ struct: its namespace, base, depth and ``_Member``
rows, each with its ``_Carrier``, the C++ type holding the field's bytes). Then
``_render`` prints the model; it knows C++ text and nothing of the runtime.

What is emitted, for the selected types:
- a full view (members and layout asserts) of each selected type and its
  dynamic ancestors (parents before children);
- a lookup-only view (no members, derived from ``Object``) of each other dynamic
  type a member refers to;
- nothing for the runtime's static types (``ffi.Array``, ``ffi.Function``...):
  ``tvm/ffi/tvm_ffi.h`` declares them, and members name them directly.

Where the official generator would write a header that does not compile, tvmffi
writes one that does: a reflected name that is not a C++ identifier (a keyword,
non-ASCII) is escaped as ``__ffi_escape_<utf-8 hex>``, a field registered over
inherited bytes is a comment naming the inherited member, and an ``ffi.Error``
member is the 8-byte ``Arc<ErrorObj>`` it is.
"""

from __future__ import annotations

import fnmatch
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import _core
from ..function import _cached_global_func
from ..object import TypeInfo, get_type_info

__all__ = ["gen_abi_cpp"]

# ---------------------------------------------------------------------------
# C++ spelling of names and strings
# ---------------------------------------------------------------------------
# C++20 keywords and alternative tokens: a reflected name spelled like one is escaped.
# The contextual ``final``, ``override``, ``import`` and ``module`` are identifiers in a
# member declaration and stay as they are.
_KEYWORD_TEXT = """
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
char16_t char32_t class compl concept const consteval constexpr constinit const_cast
continue co_await co_return co_yield decltype default delete do double dynamic_cast
else enum explicit export extern false float for friend goto if inline int long
mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected
public register reinterpret_cast requires return short signed sizeof static
static_assert static_cast struct switch template this thread_local throw true try
typedef typeid typename union unsigned using virtual void volatile wchar_t while xor
xor_eq
"""
_CPP_KEYWORDS = frozenset(_KEYWORD_TEXT.split())
_ESCAPE_PREFIX = "__ffi_escape_"
_IDENT_HEAD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_IDENT_TAIL = _IDENT_HEAD | frozenset("0123456789")


def _identifier(name: str) -> str:
    """``name`` when it is a plain ASCII C++ identifier, else ``__ffi_escape_`` + the hex
    of its UTF-8 bytes (so two different names never meet)."""
    plain = (
        bool(name)
        and name[0] in _IDENT_HEAD
        and all(c in _IDENT_TAIL for c in name)
        and name not in _CPP_KEYWORDS
        and not name.startswith(_ESCAPE_PREFIX)
    )
    return name if plain else _ESCAPE_PREFIX + name.encode("utf-8").hex()


# How each byte is spelled inside a C++ string literal: printable ASCII stands for
# itself (quote and backslash escaped), every other byte is a 3-digit octal escape,
# which no following character can extend.
_BYTE_SPELLING = tuple(
    ("\\" + chr(b)) if chr(b) in '"\\' else chr(b) if 0x20 <= b < 0x7F else f"\\{b:03o}"
    for b in range(256)
)


def _string_literal(text: str) -> str:
    """A C++ string literal holding exactly ``text``'s UTF-8 bytes."""
    return '"' + "".join(map(_BYTE_SPELLING.__getitem__, text.encode("utf-8"))) + '"'


def _split_key(type_key: str) -> tuple[tuple[str, ...], str]:
    """(namespace parts, last part) of a dotted type key."""
    *space, last = type_key.split(".")
    return tuple(space), last


def _struct_name(type_key: str) -> str:
    return _identifier(_split_key(type_key)[1]) + "Obj"


def _qualified(type_key: str) -> str:
    space, _ = _split_key(type_key)
    return "".join(f"::{_identifier(part)}" for part in space) + "::" + _struct_name(type_key)


# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class _Carrier:
    """The C++ type that holds a field's bytes; ``object_ref`` when it is one pointer to
    an object (usable as a non-null union member)."""

    cpp_type: str
    size: int
    alignment: int
    object_ref: bool = False


@dataclass
class _Member:
    """One reflected field of a full view. ``shadowed`` names the inherited member whose
    bytes the field re-registers: it is then printed as a comment only."""

    name: str
    carrier: _Carrier
    offset: int
    size: int
    alignment: int
    shadowed: str | None = None

    @property
    def ident(self) -> str:
        return _identifier(self.name)


@dataclass
class _View:
    """One C++ struct: ``members`` is ``None`` for a lookup-only view."""

    type_key: str
    depth: int
    base: str = "::tvm::ffi::Object"
    members: list[_Member] | None = None
    size: int = 0
    alignment: int = 8

    @property
    def namespace(self) -> tuple[str, ...]:
        return _split_key(self.type_key)[0]

    @property
    def name(self) -> str:
        return _struct_name(self.type_key)

    @property
    def declaration_order(self) -> tuple[tuple[str, ...], str]:
        return _split_key(self.type_key)


# ---------------------------------------------------------------------------
# Runtime facts: the static object types and the carriers of value types
# ---------------------------------------------------------------------------
_DYN_OBJECT_BEGIN = 128  # kTVMFFIDynObjectBegin: indices below are the runtime's own
_STATIC_OBJECT_BEGIN = 64  # kTVMFFIStaticObjectBegin
_DLTENSOR_PTR = 7  # kTVMFFIDLTensorPtr
_SETTER_IS_FUNCTION = 1 << 11  # kTVMFFIFieldFlagBitSetterIsFunctionObj

_ANY = _Carrier("::tvm::ffi::Any", 16, 8)
_OBJECT_PTR = _Carrier("::tvm::ffi::ObjectPtr<::tvm::ffi::Object>", 8, 8)
_ANY_OBJECT = _Carrier("::tvm::ffi::Arc<::tvm::ffi::Object>", 8, 8, object_ref=True)

# Value types by schema origin and by static type index (a field without schema).
_VALUES = {
    "bool": _Carrier("bool", 1, 1),
    "int": _Carrier("int64_t", 8, 8),
    "float": _Carrier("double", 8, 8),
    "ctypes.c_void_p": _Carrier("void*", 8, 8),
    "dtype": _Carrier("DLDataType", 4, 2),
    "Device": _Carrier("DLDevice", 8, 4),
    "Any": _ANY,
}
_VALUE_BY_INDEX = {
    -1: _ANY,
    1: _VALUES["int"],
    2: _VALUES["bool"],
    3: _VALUES["float"],
    4: _VALUES["ctypes.c_void_p"],
    5: _VALUES["dtype"],
    6: _VALUES["Device"],
}

# Static object types: the C++ class a member of that type is (containers aside).
_STATIC_OBJECTS = {
    64: _ANY_OBJECT,
    65: _Carrier("::tvm::ffi::String", 16, 8),
    66: _Carrier("::tvm::ffi::Bytes", 16, 8),
    67: _Carrier("::tvm::ffi::Arc<::tvm::ffi::ErrorObj>", 8, 8, object_ref=True),
    68: _Carrier("::tvm::ffi::Function", 8, 8, object_ref=True),
    69: _Carrier("::tvm::ffi::Shape", 8, 8, object_ref=True),
    70: _Carrier("::tvm::ffi::Tensor", 8, 8, object_ref=True),
    73: _Carrier("::tvm::ffi::Arc<::tvm::ffi::ModuleObj>", 8, 8, object_ref=True),
    77: _Carrier("::tvm::ffi::Arc<::tvm::ffi::VisitInterruptObj>", 8, 8, object_ref=True),
    78: _Carrier("::tvm::ffi::Arc<::tvm::ffi::BigIntObj>", 8, 8, object_ref=True),
}
_CONTAINERS = {71: "Array", 75: "List", 72: "Map", 76: "Dict"}
_OPAQUE_PY_OBJECT = 74

# Schema origins that name a static type by a Python spelling.
_ORIGIN_INDEX = {
    "Object": 64,
    "str": 65,
    "bytes": 66,
    "Callable": 68,
    "Tensor": 70,
    "Array": 71,
    "tuple": 71,
    "Map": 72,
    "List": 75,
    "Dict": 76,
}


def _index_of(type_key: str) -> int | None:
    found = _core._type_key_to_index(type_key)
    return None if found is None else int(found)


# ---------------------------------------------------------------------------
# Selection
# ---------------------------------------------------------------------------
def _selector_list(type_keys: Any) -> list[str]:
    if isinstance(type_keys, str):
        return [type_keys]
    if isinstance(type_keys, (bytes, bytearray)) or not isinstance(type_keys, Sequence):
        raise TypeError(
            "gen_abi_cpp expects a type key (str) or a sequence of them, "
            f"got {type(type_keys).__name__}"
        )
    for item in type_keys:
        if not isinstance(item, str):
            raise TypeError(f"gen_abi_cpp expects each type key as str, got {type(item).__name__}")
    return list(type_keys)


def _registered_keys() -> list[str]:
    keys = _cached_global_func("ffi.GetRegisteredTypeKeys")()
    return sorted(str(k) for k in keys)


def _chosen_types(selectors: list[str]) -> list[TypeInfo]:
    """The dynamic object types the selectors name (exact keys or shell patterns)."""
    every: list[str] | None = None
    chosen: dict[str, TypeInfo] = {}
    for selector in selectors:
        if any(c in selector for c in "*?["):
            every = _registered_keys() if every is None else every
            keys = fnmatch.filter(every, selector)
        else:
            keys = [selector] if _index_of(selector) is not None else []
        if not keys:
            raise ValueError(f"gen_abi_cpp: {selector!r} did not match any registered type")
        indices = {key: _index_of(key) for key in keys}
        objects = [k for k, i in indices.items() if i is not None and i >= _STATIC_OBJECT_BEGIN]
        if not objects:
            raise ValueError(f"gen_abi_cpp: {selector!r} did not match any registered object type")
        if indices.get(selector) == _OPAQUE_PY_OBJECT:
            raise ValueError(f"gen_abi_cpp: {selector!r} is not supported (a host-language object)")
        for key in objects:
            if (indices[key] or 0) >= _DYN_OBJECT_BEGIN:
                chosen[key] = get_type_info(key)
    return list(chosen.values())


# ---------------------------------------------------------------------------
# Model building
# ---------------------------------------------------------------------------
def _fields_end(info: TypeInfo | None) -> int:
    """End of the bytes ``info`` and its ancestors' fields occupy (the header: 24)."""
    end = 24
    while info is not None:
        for f in info.fields or ():
            end = max(end, f.offset + f.size)
        info = info.parent_type_info
    return end


def _inherited_at(info: TypeInfo | None, offset: int) -> str | None:
    while info is not None:
        for f in info.fields or ():
            if f.offset == offset:
                return str(f.name)
        info = info.parent_type_info
    return None


@dataclass
class _Generator:
    """Reads the selected types (and what they need) into ``_View`` records."""

    selected: Iterable[TypeInfo]
    _refs: set[str] = field(default_factory=set)

    def views(self) -> list[_View]:
        full: dict[str, _View] = {}
        for info in self.selected:
            chain: TypeInfo | None = info
            while chain is not None and chain.type_index >= _DYN_OBJECT_BEGIN:
                if chain.type_key not in full:
                    full[chain.type_key] = self._full_view(chain)
                chain = chain.parent_type_info
        lookups = [
            _View(key, len(get_type_info(key).ancestors)) for key in sorted(self._refs - set(full))
        ]
        return [*full.values(), *lookups]

    def _full_view(self, info: TypeInfo) -> _View:
        key = info.type_key
        if info.fields is None:
            raise ValueError(
                f"gen_abi_cpp: {key!r} has no fields yet (its annotations still wait for "
                "names to be defined)"
            )
        size = getattr(info, "own_total_size", None)
        if size is None:
            raise ValueError(
                f"gen_abi_cpp: {key!r} does not expose fixed total-size metadata, so its "
                "layout cannot be checked"
            )
        parent = info.parent_type_info
        view = _View(key, len(info.ancestors), members=[], size=int(size))
        if parent is not None and parent.type_index >= _DYN_OBJECT_BEGIN:
            view.base = _qualified(parent.type_key)
        elif parent is not None and parent.type_index != _STATIC_OBJECT_BEGIN:
            raise ValueError(f"gen_abi_cpp: {key!r} derives from {parent.type_key!r}")
        inherited_end = _fields_end(parent)
        members = []
        for f in info.fields:
            carrier = self._lower_field(f, info)
            shadowed = None
            if f.offset < inherited_end:
                shadowed = _inherited_at(parent, f.offset) or "an inherited field"
            members.append(_Member(f.name, carrier, f.offset, f.size, f.alignment, shadowed))
        view.members = members
        view.alignment = max([8, *(m.alignment for m in members)])
        return view

    # ---- one field -> its carrier ----
    def _lower_field(self, f: Any, owner: Any) -> _Carrier:
        """The carrier of reflected field ``f`` of type ``owner``, checked against the
        size and alignment the runtime reports for it."""
        where = f"field {f.name!r} of {owner.type_key!r}"
        static_index = int(f.field_static_type_index)
        if static_index == _DLTENSOR_PTR:
            raise ValueError(f"gen_abi_cpp: {where} is a raw DLTensor* (no ABI view for it)")
        schema = f.ty
        if schema is None:
            carrier = _VALUE_BY_INDEX.get(static_index)
            if carrier is None:
                carrier = _STATIC_OBJECTS.get(static_index, _OBJECT_PTR)
        elif schema.origin in ("Optional", "Union", "Variant"):
            carrier = self._top_choice(schema, f, where)
        else:
            carrier = self._lower(schema, where)
        if (carrier.size, carrier.alignment) != (f.size, f.alignment):
            raise ValueError(
                f"gen_abi_cpp: {where} would be {carrier.cpp_type} of (size, align) "
                f"({carrier.size}, {carrier.alignment}), but reflection reports "
                f"({f.size}, {f.alignment})"
            )
        return carrier

    def _top_choice(self, schema: Any, f: Any, where: str) -> _Carrier:
        """An Optional/Union field: the reported size tells which C++ form holds it."""
        laid_out_by_binding = bool(getattr(f, "flags", 0) & _SETTER_IS_FUNCTION)
        if schema.origin != "Optional":
            if f.size == _ANY.size:
                return _ANY
            return self._lower(schema, where)
        payload = self._lower(schema.args[0], where)
        if f.size == _ANY.size and laid_out_by_binding:
            return _ANY  # a binding stores every Optional field as an Any
        if payload.object_ref and f.size == 8:
            return self._nullable(payload)
        if payload.object_ref and f.size == 16:
            return _Carrier(f"::tvm::ffi::Optional<{payload.cpp_type}>", 16, 8)
        raise ValueError(
            f"gen_abi_cpp: Ambiguous native Optional carrier for {where}: "
            f"{f.size} bytes may be an Optional<{payload.cpp_type}> or an Any"
        )

    @staticmethod
    def _nullable(payload: _Carrier) -> _Carrier:
        if payload.cpp_type.startswith("::tvm::ffi::Arc<"):
            inner = payload.cpp_type[len("::tvm::ffi::Arc<") : -1]
            return _Carrier(f"::tvm::ffi::ObjectPtr<{inner}>", 8, 8)
        return _Carrier(f"::tvm::ffi::Optional<{payload.cpp_type}>", 8, 8)

    def _lower(self, schema: Any, where: str) -> _Carrier:
        """The carrier of a value of ``schema`` (a member or a container element)."""
        origin = schema.origin
        if origin in _VALUES:
            return _VALUES[origin]
        if origin == "Optional":
            payload = self._lower(schema.args[0], where)
            return self._nullable(payload) if payload.object_ref else _ANY
        if origin in ("Union", "Variant"):
            options = [self._lower(a, where) for a in schema.args or ()]
            return _ANY_OBJECT if all(o.object_ref for o in options) else _ANY
        index = _ORIGIN_INDEX.get(origin)
        if index is None:
            index = _index_of(origin)
        if index is None or index < _STATIC_OBJECT_BEGIN:
            raise ValueError(f"gen_abi_cpp: {where} has type {origin!r}, not a registered type")
        if index == _OPAQUE_PY_OBJECT:
            raise ValueError(f"gen_abi_cpp: {where} holds 'ffi.OpaquePyObject': not supported")
        if index in _CONTAINERS:
            if origin == "tuple":
                items = "::tvm::ffi::Any"
            else:
                items = ", ".join(self._lower(a, where).cpp_type for a in schema.args or ())
            return _Carrier(f"::tvm::ffi::{_CONTAINERS[index]}<{items}>", 8, 8, object_ref=True)
        if index in _STATIC_OBJECTS:
            return _STATIC_OBJECTS[index]
        if index < _DYN_OBJECT_BEGIN:
            raise ValueError(f"gen_abi_cpp: {where} has type {origin!r}: no C++ view for it")
        self._refs.add(origin)
        return _Carrier(f"::tvm::ffi::Arc<{_qualified(origin)}>", 8, 8, object_ref=True)


# ---------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------
_PROLOGUE = "#pragma once\n\n#include <tvm/ffi/tvm_ffi.h>\n\n"
_OBJECT_ASSERTS = (
    "static_assert(sizeof(::tvm::ffi::Object) == 24);\n"
    "static_assert(alignof(::tvm::ffi::Object) == 8);\n\n"
)
_OFFSETOF_WARNINGS_OFF = """#if defined(__clang__) || defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
#elif defined(_MSC_VER)
#pragma warning(push)
#pragma warning(disable : 4749)
#endif

"""
_OFFSETOF_WARNINGS_ON = """#if defined(__clang__) || defined(__GNUC__)
#pragma GCC diagnostic pop
#elif defined(_MSC_VER)
#pragma warning(pop)
#endif
"""


def _in_namespaces(views: list[_View], body: Any) -> str:
    """``body(view)`` of each view, consecutive views of one namespace in one block."""
    out = []
    for space, run in itertools.groupby(views, key=lambda v: v.namespace):
        names = [_identifier(part) for part in space]
        opening = "".join(f"namespace {n} {{\n" for n in names)
        closing = "".join(f"}}  // namespace {n}\n" for n in reversed(names))
        items = "\n\n".join(body(v) for v in run)
        out.append(f"{opening}\n{items}\n\n{closing}\n" if names else f"{items}\n\n")
    return "".join(out)


def _lookup_line(view: _View) -> str:
    return f"  TVM_FFI_DECLARE_OBJECT_INFO_LOOKUP({_string_literal(view.type_key)}, {view.depth});"


def _lookup_only(view: _View) -> str:
    return f"struct {view.name} : public {view.base} {{\n{_lookup_line(view)}\n}};"


def _member_line(m: _Member) -> str:
    layout = f"offset={m.offset}, size={m.size}, align={m.alignment}"
    if m.shadowed is not None:
        return f"  // {m.carrier.cpp_type} {m.ident}: the bytes of '{m.shadowed}' ({layout})"
    renamed = f", reflected name='{m.name}'" if m.ident != m.name else ""
    return f"  {m.carrier.cpp_type} {m.ident};  // {layout}{renamed}"


def _full(view: _View) -> str:
    members = view.members or []
    lines = [f"struct alignas({view.alignment}) {view.name} : public {view.base} {{"]
    lines.append(_lookup_line(view))
    if members:
        lines.append("")
        lines.extend(_member_line(m) for m in members)
    lines += ["};", ""]
    lines.append(f"static_assert(sizeof({view.name}) == {view.size});")
    lines.append(f"static_assert(alignof({view.name}) == {view.alignment});")
    for m in members:
        if m.shadowed is None:
            member = f"{view.name}::{m.ident}"
            lines.append(f"static_assert(sizeof(decltype({member})) == {m.size});")
            lines.append(f"static_assert(alignof(decltype({member})) == {m.alignment});")
            lines.append(f"static_assert(offsetof({view.name}, {m.ident}) == {m.offset});")
    return "\n".join(lines)


def _render(views: list[_View]) -> str:
    declared = sorted(views, key=lambda v: v.declaration_order)
    lookups = [v for v in declared if v.members is None]
    full = sorted((v for v in views if v.members is not None), key=lambda v: (v.depth, v.type_key))
    specializations = "".join(
        "template <>\n"
        f"inline constexpr bool tvm::ffi::is_object_subclass_v<{_qualified(v.type_key)}> = true;\n"
        for v in declared
    )
    return "".join(
        [
            _PROLOGUE,
            _in_namespaces(declared, lambda v: f"struct {v.name};"),
            specializations,
            "\n",
            _in_namespaces(lookups, _lookup_only),
            _OBJECT_ASSERTS,
            _OFFSETOF_WARNINGS_OFF,
            _in_namespaces(full, _full),
            _OFFSETOF_WARNINGS_ON,
        ]
    )


def gen_abi_cpp(type_keys: str | Sequence[str]) -> str:
    """The C++17 header of ABI views of the selected object types.

    ``type_keys`` is a registered type key, a shell pattern over the registered
    keys (``"my.pkg.*"``), or a sequence mixing both. Each selected type gets a
    struct laying its fields out as the runtime reports them (checked with
    ``static_assert``), below the views of its ancestors; the types its fields
    refer to get lookup-only views. The text depends only on the selected types,
    not on the order or repetition of the selectors. Including it registers,
    allocates or loads nothing: the structs only look their type indices up.

    Raises ``TypeError`` for a selector that is not a str, and ``ValueError`` for
    one that matches no registered object type or a type with no fixed layout.
    """
    selected = _chosen_types(_selector_list(type_keys))
    return _render(_Generator(selected).views())
