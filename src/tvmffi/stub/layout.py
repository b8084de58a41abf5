"""Can a reflected object's native layout be reproduced byte for byte? (``--coverage-out``)

A generator for a language with native structs may hold an object by value
only when the reflected fields account for every byte of it. The registry
publishes each type's own ``sizeof`` (``ObjectInfo.total_size``) and every
field's size, alignment and offset, and one rule decides:

    the type's own fields, by ascending offset, fill ``[parent.total_size,
    total_size)`` exactly, with no gaps but those alignment forces.

The rule needs the type's own metadata and a complete parent. A type that
fails it is ``opaque`` (a normal outcome: a binding still reaches its fields
through the C ABI). Target-language rules come from the caller: which fields
have a native mirror, which types are vetoed, which are never mirrored.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any, Literal, TypeAlias

from .utils import NamedTypeSchema, ObjectInfo

OBJECT_HEADER_ALIGNMENT = 8
"""Alignment of the ``TVMFFIObject`` header every object starts with."""

OpaqueReason: TypeAlias = Literal[
    "layout-unknown",
    "parent-opaque",
    "field-overlap",
    "uncovered-bytes",
    "unrenderable-field",
    "by-directive",
    "no-mirror",
]


def align_up(value: int, alignment: int) -> int:
    """``value`` rounded up to a multiple of ``alignment``."""
    return -(-value // alignment) * alignment


@dataclasses.dataclass(frozen=True)
class ByteRange:
    """The half-open byte range ``[start, end)`` of an object."""

    start: int
    end: int

    def __str__(self) -> str:
        return f"[{self.start}, {self.end})"

    def to_json_obj(self) -> list[int]:
        """``[start, end]``."""
        return [self.start, self.end]


@dataclasses.dataclass(frozen=True)
class FieldBytes:
    """Where a reflected field lives: offset, size and alignment in bytes."""

    name: str
    offset: int
    size: int
    alignment: int

    @property
    def end(self) -> int:
        """The first byte after the field."""
        return self.offset + self.size

    def to_json_obj(self) -> dict[str, Any]:
        """The field as a JSON object."""
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Verdict:
    """Whether a type's layout is reproducible (``complete``) or not, and the evidence."""

    type_key: str
    verdict: Literal["complete", "opaque"]
    reason: OpaqueReason | None
    detail: str
    parent_type_key: str | None
    ancestors: list[str]
    total_size: int | None
    is_final: bool | None
    alignment: int | None = None
    own_bytes: ByteRange | None = None
    fields: list[FieldBytes] = dataclasses.field(default_factory=list)
    uncovered: list[ByteRange] = dataclasses.field(default_factory=list)
    padding: list[ByteRange] = dataclasses.field(default_factory=list)

    @property
    def is_complete(self) -> bool:
        """Whether the reflected fields reproduce the native layout."""
        return self.verdict == "complete"

    def to_json_obj(self) -> dict[str, Any]:
        """The language-neutral coverage-report entry of the type."""
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "detail": self.detail,
            "parent": self.parent_type_key,
            "ancestors": list(self.ancestors),
            "total_size": self.total_size,
            "is_final": self.is_final,
            "own_bytes": None if self.own_bytes is None else self.own_bytes.to_json_obj(),
            "fields": [f.to_json_obj() for f in self.fields],
            "uncovered": [r.to_json_obj() for r in self.uncovered],
            "padding": [r.to_json_obj() for r in self.padding],
        }


def classify(
    infos: Mapping[str, ObjectInfo],
    *,
    forced_opaque: AbstractSet[str] = frozenset(),
    unmirrored: AbstractSet[str] = frozenset(),
    field_renderable: Callable[[NamedTypeSchema], bool] | None = None,
) -> dict[str, Verdict]:
    """The verdict of every type of ``infos`` (any order; every ancestor must be there).

    ``forced_opaque`` demotes a type that would be complete (``by-directive``);
    ``unmirrored`` types are opaque before any evidence (``no-mirror``);
    ``field_renderable`` rejecting a field makes its type ``unrenderable-field``.
    A missing ancestor raises ``KeyError`` naming it.
    """
    verdicts: dict[str, Verdict] = {}

    def visit(key: str) -> Verdict:
        done = verdicts.get(key)
        if done is not None:
            return done
        if key not in infos:
            raise KeyError(f"Ancestor {key!r} is not among the types to classify")
        info = infos[key]
        parent = None if info.parent_type_key is None else visit(info.parent_type_key)
        verdicts[key] = _judge(info, parent, forced_opaque, unmirrored, field_renderable)
        return verdicts[key]

    for key in infos:
        visit(key)
    return verdicts


def _judge(
    info: ObjectInfo,
    parent: Verdict | None,
    forced_opaque: AbstractSet[str],
    unmirrored: AbstractSet[str],
    field_renderable: Callable[[NamedTypeSchema], bool] | None,
) -> Verdict:
    if info.type_key is None:
        raise ValueError("cannot classify an ObjectInfo without a type key")
    v = Verdict(
        type_key=info.type_key,
        verdict="opaque",
        reason=None,
        detail="",
        parent_type_key=info.parent_type_key,
        ancestors=list(info.ancestors),
        total_size=info.total_size,
        is_final=info.is_final,
    )
    if info.type_key in unmirrored:
        v.reason = "no-mirror"
        v.detail = "its bytes belong to the target's runtime and are never mirrored"
        return v
    failure = _check_layout(info, parent, v) or _target_rules(info, forced_opaque, field_renderable)
    if failure is not None:
        v.reason, v.detail = failure
        return v
    v.verdict = "complete"
    if parent is None:
        v.detail = f"object header [0, {info.total_size}): owned by the C ABI"
    else:
        v.detail = f"reflected fields fill {v.own_bytes} exactly"
        if v.padding:
            v.detail += f" (alignment padding {', '.join(map(str, v.padding))})"
    return v


def _check_layout(
    info: ObjectInfo, parent: Verdict | None, v: Verdict
) -> tuple[OpaqueReason, str] | None:
    """Record the byte evidence on ``v``; return why the layout is not reproducible, if so."""
    if info.total_size is None:
        return "layout-unknown", "no metadata of its own: total_size is unknown"
    fields: list[FieldBytes] = []
    for f in info.fields:
        if f.size is None or f.alignment is None or f.offset is None:
            return "layout-unknown", f"field {f.name!r} carries no native layout facts"
        fields.append(FieldBytes(f.name, f.offset, f.size, f.alignment))
    v.fields = sorted(fields, key=lambda f: f.offset)
    if parent is None:
        v.alignment = OBJECT_HEADER_ALIGNMENT
        v.own_bytes = ByteRange(info.total_size, info.total_size)
        return None
    if not parent.is_complete or parent.total_size is None or parent.alignment is None:
        return "parent-opaque", f"parent {parent.type_key!r} is opaque ({parent.reason})"
    v.own_bytes = ByteRange(parent.total_size, info.total_size)
    v.alignment = max([parent.alignment, *(f.alignment for f in v.fields)])
    return _fill(v, v.own_bytes, v.alignment)


def _fill(v: Verdict, region: ByteRange, alignment: int) -> tuple[OpaqueReason, str] | None:
    """Walk the fields over ``region``, sorting each gap into padding or uncovered bytes."""
    overlap: str | None = None
    cursor = region.start
    for f in v.fields:
        if f.offset < cursor:
            overlap = overlap or (
                f"field {f.name!r} at [{f.offset}, {f.end}) starts before byte {cursor}"
            )
            cursor = max(cursor, f.end)
            continue
        _gap(v, cursor, align_up(cursor, f.alignment), f.offset)
        cursor = f.end
    if cursor > region.end:
        overlap = overlap or f"fields extend to byte {cursor}, past total_size {region.end}"
    else:
        _gap(v, cursor, align_up(cursor, alignment), region.end)
    if overlap is not None:
        return "field-overlap", overlap
    if v.uncovered:
        ranges = ", ".join(map(str, v.uncovered))
        return "uncovered-bytes", (
            f"bytes {ranges} of {region} are not accounted for by reflected fields"
        )
    return None


def _gap(v: Verdict, cursor: int, aligned: int, boundary: int) -> None:
    """A gap ``[cursor, boundary)`` is padding when alignment alone puts ``boundary`` there."""
    if aligned != boundary:
        v.uncovered.append(ByteRange(cursor, boundary))
    elif aligned != cursor:
        v.padding.append(ByteRange(cursor, aligned))


def _target_rules(
    info: ObjectInfo,
    forced_opaque: AbstractSet[str],
    field_renderable: Callable[[NamedTypeSchema], bool] | None,
) -> tuple[OpaqueReason, str] | None:
    if field_renderable is not None:
        for f in info.fields:
            if not field_renderable(f):
                return "unrenderable-field", f"field {f.name!r} ({f.repr()}) has no native mirror"
    if info.type_key in forced_opaque:
        return "by-directive", "vetoed by directive although the layout is reproducible"
    return None


def coverage_report(verdicts: Mapping[str, Verdict]) -> dict[str, Any]:
    """The JSON coverage report: one entry per type key, sorted by key."""
    return {key: verdicts[key].to_json_obj() for key in sorted(verdicts)}


def write_coverage_report(path: Path, verdicts: Mapping[str, Verdict]) -> None:
    """Write :func:`coverage_report` to ``path`` as indented JSON (atomically)."""
    from .file_utils import _write_atomic

    _write_atomic(Path(path), json.dumps(coverage_report(verdicts), indent=2) + "\n")
