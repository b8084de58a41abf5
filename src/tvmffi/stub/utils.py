"""The language-neutral data model of the stub generator.

Functions, object types (fields with their native layout facts, methods,
auto-init parameters) and the run's options, as read from the runtime's
reflection registry. Rendering them as source text is a generator's job
(:mod:`tvmffi.stub.python_generator`, :mod:`tvmffi.stub.rust_generator`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from ..core import MISSING, TypeSchema, _lookup_type_attr
from . import consts as C

if TYPE_CHECKING:
    from ..object import FieldInfo, TypeInfo


def _parse_type_schema(raw: str | dict[str, Any] | TypeSchema) -> TypeSchema:
    """A schema from reflection metadata, given as JSON text, decoded JSON or a schema."""
    if isinstance(raw, TypeSchema):
        return raw
    if isinstance(raw, dict):
        return TypeSchema.from_json_obj(raw)
    return TypeSchema.from_json_str(raw)


@dataclasses.dataclass
class InitConfig:
    """What ``--init-pypkg``/``--init-lib``/``--init-prefix`` scaffold new API files for."""

    pkg: str
    """Python distribution name of the package (``apache-tvm-ffi``)."""
    shared_target: str
    """Build target of its shared library (``tvm_ffi_shared``), passed to ``load_lib_module``."""
    prefix: str
    """Registry prefix of the functions and types to scaffold (``tvm_ffi.``)."""


@dataclasses.dataclass
class Options:
    """The command-line options of one run."""

    imports: list[str] = dataclasses.field(default_factory=list)
    dlls: list[str] = dataclasses.field(default_factory=list)
    init: InitConfig | None = None
    indent: int = 4
    files: list[str] = dataclasses.field(default_factory=list)
    verbose: bool = False
    dry_run: bool = False
    check: bool = False
    target: str = "python"
    coverage_out: str | None = None


class NamedTypeSchema(TypeSchema):
    """A :class:`TypeSchema` with a name, and for a reflected field its native facts.

    ``size``/``alignment``/``offset`` are the C++ member's byte facts (offset
    from the start of the ``TVMFFIObject`` header), ``None`` for parameters
    and synthetic schemas. ``default`` is the registered default (``MISSING``
    when none; the factory itself when ``default_is_factory``),
    ``structural_eq`` the field's structural-equality role, ``frozen`` true
    for a read-only field.
    """

    __slots__ = (
        "alignment",
        "default",
        "default_is_factory",
        "frozen",
        "name",
        "offset",
        "size",
        "structural_eq",
    )

    def __init__(
        self,
        name: str,
        schema: TypeSchema,
        *,
        size: int | None = None,
        alignment: int | None = None,
        offset: int | None = None,
        default: Any = MISSING,
        default_is_factory: bool = False,
        structural_eq: str | None = None,
        frozen: bool = False,
    ) -> None:
        """Name ``schema`` and attach the native facts of the field it describes."""
        super().__init__(
            schema.origin,
            schema.args,
            None,
            schema.fallback,
            schema.named_args,
            schema.type_key,
        )
        self.name = name
        self.size = size
        self.alignment = alignment
        self.offset = offset
        self.default = default
        self.default_is_factory = default_is_factory
        self.structural_eq = structural_eq
        self.frozen = frozen

    @staticmethod
    def from_type_field(field: FieldInfo) -> NamedTypeSchema:
        """The schema of a reflected field, with its layout, default and flags."""
        raw = field.metadata.get("type_schema")
        schema = TypeSchema("Any") if raw is None else _parse_type_schema(raw)
        return NamedTypeSchema(
            field.name,
            schema,
            size=field.size,
            alignment=field.alignment,
            offset=field.offset,
            default=field.default,
            default_is_factory=field.has_default and field.default_from_factory,
            structural_eq=field.structural_eq,
            frozen=field.frozen,
        )


@dataclasses.dataclass
class FuncInfo:
    """A function: its named schema, and whether it is an instance method."""

    schema: NamedTypeSchema
    is_member: bool

    @staticmethod
    def from_schema(name: str, schema: TypeSchema, *, is_member: bool = False) -> FuncInfo:
        """A :class:`FuncInfo` named ``name`` with signature ``schema``."""
        return FuncInfo(schema=NamedTypeSchema(name, schema), is_member=is_member)


@dataclasses.dataclass
class InitFieldInfo:
    """A parameter of an object's reflection-generated ``__init__``."""

    name: str
    schema: NamedTypeSchema
    kw_only: bool
    has_default: bool


@dataclasses.dataclass
class ObjectInfo:
    """An object type: own fields and methods, ancestry, init parameters, native size.

    ``fields`` are the type's own; inherited ones are found through
    ``ancestors`` (root first). ``total_size`` is the native ``sizeof`` when the
    type registered metadata of its own, else ``None``. ``is_final`` is the
    ``__ffi_type_final__`` attribute, ``None`` when the type registers none.
    """

    fields: list[NamedTypeSchema]
    methods: list[FuncInfo]
    type_key: str | None = None
    parent_type_key: str | None = None
    init_fields: list[InitFieldInfo] = dataclasses.field(default_factory=list)
    has_init: bool = False
    ancestors: list[str] = dataclasses.field(default_factory=list)
    total_size: int | None = None
    is_final: bool | None = None

    def has_overloaded_methods(self) -> bool:
        """Whether two methods share a name and kind (static or member)."""
        keys = [(m.schema.name, m.is_member) for m in self.methods]
        return len(set(keys)) != len(keys)

    @staticmethod
    def from_type_info(type_info: TypeInfo) -> ObjectInfo:
        """Read an :class:`ObjectInfo` from the runtime's type information."""
        chain: list[TypeInfo] = []
        parent = type_info.parent_type_info
        while parent is not None:
            chain.append(parent)
            parent = parent.parent_type_info
        chain.reverse()
        has_init = any(m.name == "__ffi_init__" for m in type_info.methods) or (
            _lookup_type_attr(type_info.type_index, "__ffi_init__") is not None
        )
        init_fields = (
            [
                InitFieldInfo(
                    name=f.name,
                    schema=NamedTypeSchema.from_type_field(f),
                    kw_only=f.kw_only,
                    has_default=f.has_default,
                )
                for info in (*chain, type_info)
                for f in (info.fields or ())
                if f.init
            ]
            if has_init
            else []
        )
        methods = [
            FuncInfo(
                schema=NamedTypeSchema(
                    C.FN_NAME_MAP.get(m.name, m.name),
                    _parse_type_schema(m.metadata.get("type_schema") or '{"type": "Callable"}'),
                ),
                is_member=not m.is_static,
            )
            for m in type_info.methods
        ]
        final = _lookup_type_attr(type_info.type_index, "__ffi_type_final__")
        return ObjectInfo(
            fields=[NamedTypeSchema.from_type_field(f) for f in (type_info.fields or ())],
            methods=methods,
            type_key=type_info.type_key,
            parent_type_key=chain[-1].type_key if chain else None,
            init_fields=init_fields,
            has_init=has_init,
            ancestors=[info.type_key for info in chain],
            total_size=type_info.total_size if type_info._has_type_metadata else None,
            is_final=None if final is None else bool(final),
        )
