"""The Rust target's one-line directives: their grammar, and the per-file record of them.

Field directives name ``<type_key>.<field>``, type directives ``<type_key>``::

    // tvm-ffi-stubgen(field): tirx.Add.a -> PrimExpr          the field's Rust type
    // tvm-ffi-stubgen(nullable): ir.Expr.span                 wrapped in Option
    // tvm-ffi-stubgen(enum): tirx.For.kind -> ForKind(i32) { Serial=0, Parallel=1 }
    // tvm-ffi-stubgen(opaque): ir.SourceName                  never mirrored by value
    // tvm-ffi-stubgen(upcast): tirx.Add -> PrimExpr           an extra typed view
    // tvm-ffi-stubgen(custom-new): tirx.Add                   `new` is hand-written

A ``field`` directive on an inherited field narrows the allocator parameter;
with ``custom-new`` the generated allocator is named ``from_fields``.
"""

from __future__ import annotations

import dataclasses
import re

_ENUM_RE = re.compile(
    r"^(?P<target>\S+)\s*->\s*(?P<name>[A-Za-z_]\w*)\((?P<repr>[iu](?:8|16|32|64))\)"
    r"\s*(?:\{(?P<body>[^{}]*)\})?$"
)
_MEMBER_RE = re.compile(r"^(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<value>-?\d+)$")
_ENUM_SHAPE = "<type_key>.<field> -> Name(i32) { A=0, B=1 }"


@dataclasses.dataclass(frozen=True)
class EnumSpec:
    """An ``enum`` directive: newtype name, integer representation, members."""

    name: str
    repr: str
    members: tuple[tuple[str, int], ...]


@dataclasses.dataclass
class Directives:
    """One file's Rust directives, keyed by ``<type_key>.<field>`` or ``<type_key>``."""

    field_types: dict[str, str] = dataclasses.field(default_factory=dict)
    nullable: set[str] = dataclasses.field(default_factory=set)
    enums: dict[str, EnumSpec] = dataclasses.field(default_factory=dict)
    opaque: set[str] = dataclasses.field(default_factory=set)
    upcasts: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    custom_new: set[str] = dataclasses.field(default_factory=set)

    def add(self, name: str, payload: str, lineno: int) -> None:
        """Record one directive; ``ValueError`` naming the line for a malformed one."""
        if name == "field":
            lhs, rust_type = _arrow(name, payload, lineno, "<type_key>.<field> -> <RustType>")
            self.field_types[_field_key(name, lhs, lineno)] = rust_type
        elif name == "nullable":
            self.nullable.add(_field_key(name, payload, lineno))
        elif name == "enum":
            key, spec = _enum(payload, lineno)
            self.enums[key] = spec
        elif name == "opaque":
            self.opaque.add(_type_key(name, payload, lineno))
        elif name == "upcast":
            lhs, rust_type = _arrow(name, payload, lineno, "<type_key> -> <RustType>")
            self.upcasts.setdefault(_type_key(name, lhs, lineno), []).append(rust_type)
        elif name == "custom-new":
            self.custom_new.add(_type_key(name, payload, lineno))
        else:
            raise ValueError(f"Unknown directive `{name}` at line {lineno}")


def _invalid(name: str, lineno: int, shape: str) -> ValueError:
    return ValueError(f"Invalid `{name}` directive at line {lineno}. Expected `{shape}`")


def _type_key(name: str, text: str, lineno: int) -> str:
    key = text.strip()
    if not key or " " in key:
        raise _invalid(name, lineno, "<type_key>")
    return key


def _field_key(name: str, text: str, lineno: int) -> str:
    key = text.strip()
    if not key or " " in key or "." not in key.strip("."):
        raise _invalid(name, lineno, "<type_key>.<field>")
    return key


def _arrow(name: str, payload: str, lineno: int, shape: str) -> tuple[str, str]:
    lhs, arrow, rhs = payload.partition("->")
    if not arrow or not rhs.strip():
        raise _invalid(name, lineno, shape)
    return lhs, rhs.strip()


def _enum(payload: str, lineno: int) -> tuple[str, EnumSpec]:
    match = _ENUM_RE.match(payload.strip())
    if match is None:
        raise _invalid("enum", lineno, _ENUM_SHAPE)
    members: list[tuple[str, int]] = []
    for item in filter(None, (s.strip() for s in (match.group("body") or "").split(","))):
        member = _MEMBER_RE.match(item)
        if member is None:
            raise _invalid("enum", lineno, _ENUM_SHAPE)
        members.append((member.group("name"), int(member.group("value"))))
    key = _field_key("enum", match.group("target"), lineno)
    return key, EnumSpec(match.group("name"), match.group("repr"), tuple(members))
