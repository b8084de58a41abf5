"""Python imports and the rendering of signatures, fields and inits as stub lines."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ...core import TypeSchema
from ..utils import FuncInfo, InitFieldInfo, ObjectInfo
from . import consts as PC

TyMap = Callable[[str], str]


@dataclasses.dataclass(frozen=True, eq=True)
class ImportItem:
    """One imported name: ``from <mod> import <name> [as <alias>]``.

    Built from a dotted full name; a registry namespace of ``MOD_MAP``
    (``ffi``, ``testing``) is rewritten to the module that binds it.
    """

    mod: str
    name: str
    type_checking_only: bool = False
    alias: str | None = None

    def __init__(
        self, full_name: str, type_checking_only: bool = False, alias: str | None = None
    ) -> None:
        """Split ``full_name`` into module and name."""
        mod, _, name = full_name.rpartition(".")
        head, dot, tail = mod.partition(".")
        if head in PC.MOD_MAP:
            mod = PC.MOD_MAP[head] + dot + tail
        object.__setattr__(self, "mod", mod)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "type_checking_only", type_checking_only)
        object.__setattr__(self, "alias", alias)

    @property
    def name_with_alias(self) -> str:
        """``name as alias``, or ``name``."""
        return f"{self.name} as {self.alias}" if self.alias else self.name

    @property
    def full_name(self) -> str:
        """``mod.name``, or ``name`` without a module."""
        return f"{self.mod}.{self.name}" if self.mod else self.name

    def __str__(self) -> str:
        if self.mod:
            return f"from {self.mod} import {self.name_with_alias}"
        return f"import {self.name_with_alias}"

    __repr__ = __str__


@dataclasses.dataclass
class PythonImports:
    """The imports one file's blocks need, collected while they are rendered."""

    items: list[ImportItem] = dataclasses.field(default_factory=list)
    has_lib_load: bool = False
    """The file loads its library (``LIB`` joins ``__all__``)."""


def _signature(schema: TypeSchema) -> tuple[TypeSchema, tuple[TypeSchema, ...] | None] | None:
    """``(return, params)`` of a function schema; params None when unknown; None if untyped."""
    if not schema.named_args:
        return None
    return schema.named_args["return"][0], schema.named_args.get("params")


def render_func_signature(
    func: FuncInfo, ty_map: TyMap, indent: int, input_ty_map: TyMap | None = None
) -> str:
    """``def name(_0: T0, ..., /) -> R: ...`` for ``func`` (``self`` first for a member).

    ``ValueError`` when the schema is not a function's.
    """
    in_map = input_ty_map or ty_map
    schema = func.schema
    if schema.origin != "Callable":
        raise ValueError(f"Expected Callable type schema, but got: {schema}")
    head = " " * indent + f"def {schema.name.rsplit('.', 1)[-1]}("
    sig = _signature(schema)
    if sig is None:
        ty_map("Any")
        return head + "*args: Any) -> Any: ..."
    ret, params = sig
    if params is None:
        ty_map("Any")
        return head + f"*args: Any) -> {ret.output_repr(ty_map)}: ..."
    parts = [
        "self" if func.is_member and i == 0 else f"_{i}: {p.input_repr(in_map)}"
        for i, p in enumerate(params)
    ]
    if parts:
        parts.append("/")
    return head + ", ".join(parts) + f") -> {ret.output_repr(ty_map)}: ..."


def render_object_fields(info: ObjectInfo, ty_map: TyMap, indent: int) -> list[str]:
    """One ``name: T`` line per own field of ``info``."""
    pad = " " * indent
    return [f"{pad}{f.name}: {f.output_repr(ty_map)}" for f in info.fields]


def render_object_methods(
    info: ObjectInfo, ty_map: TyMap, indent: int, input_ty_map: TyMap | None = None
) -> list[str]:
    """The method stubs of ``info``; same-named methods become ``@overload`` groups."""
    pad = " " * indent
    groups: dict[tuple[str, bool], list[FuncInfo]] = {}
    for m in info.methods:
        groups.setdefault((m.schema.name, m.is_member), []).append(m)
    lines: list[str] = []
    for group in groups.values():
        for m in group:
            if len(group) > 1:
                lines.append(pad + "@overload")
            if m.schema.name.rsplit(".", 1)[-1] == "__ffi_init__":
                # Installed on the class as an instance method returning None, whatever
                # way the C++ side registered it.
                lines.append(_render_ffi_init_method(m, ty_map, indent, input_ty_map))
                continue
            if not m.is_member:
                lines.append(pad + "@staticmethod")
            lines.append(render_func_signature(m, ty_map, indent, input_ty_map))
    return lines


def _render_ffi_init_method(
    method: FuncInfo, ty_map: TyMap, indent: int, input_ty_map: TyMap | None
) -> str:
    in_map = input_ty_map or ty_map
    head = " " * indent + "def __ffi_init__(self"
    sig = _signature(method.schema) if method.schema.origin == "Callable" else None
    if sig is None or sig[1] is None:
        ty_map("Any")
        return head + ", *args: Any) -> None: ..."
    params = [f"_{i}: {p.input_repr(in_map)}" for i, p in enumerate(sig[1])]
    if not params:
        return head + ") -> None: ..."
    return head + ", " + ", ".join(params) + ", /) -> None: ..."


def _field_params(info: ObjectInfo, in_map: TyMap) -> str:
    """The init parameters: required before defaulted, keyword-only ones after ``*``."""

    def param(f: InitFieldInfo) -> str:
        text = f"{f.name}: {f.schema.input_repr(in_map)}"
        return text + " = ..." if f.has_default else text

    def ordered(fields: list[InitFieldInfo]) -> list[str]:
        return [param(f) for f in fields if not f.has_default] + [
            param(f) for f in fields if f.has_default
        ]

    positional = ordered([f for f in info.init_fields if not f.kw_only])
    keyword = ordered([f for f in info.init_fields if f.kw_only])
    return ", ".join(positional + (["*", *keyword] if keyword else []))


def _render_from_fields(
    name: str, info: ObjectInfo, ty_map: TyMap, indent: int, input_ty_map: TyMap | None
) -> list[str]:
    params = _field_params(info, input_ty_map or ty_map)
    sep = ", " if params else ""
    return [" " * indent + f"def {name}(self{sep}{params}) -> None: ..."]


def render_object_init(
    info: ObjectInfo, ty_map: TyMap, indent: int, input_ty_map: TyMap | None = None
) -> list[str]:
    """``__init__`` from the init fields, for a type that has an ``__ffi_init__``."""
    if not info.has_init:
        return []
    return _render_from_fields("__init__", info, ty_map, indent, input_ty_map)


def render_object_ffi_init(
    info: ObjectInfo, ty_map: TyMap, indent: int, input_ty_map: TyMap | None = None
) -> list[str]:
    """``__ffi_init__`` from the init fields, unless a reflected method already declares it."""
    if not info.has_init or any(
        m.schema.name.rsplit(".", 1)[-1] == "__ffi_init__" for m in info.methods
    ):
        return []
    return _render_from_fields("__ffi_init__", info, ty_map, indent, input_ty_map)
