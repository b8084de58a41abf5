"""Rust ``use`` items, type rendering, identifiers and module paths."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from ...core import TypeSchema
from . import consts as RC
from .directives import Directives

#: Names a leaf origin (and the type key it was parsed from, when the two differ) in Rust.
TyRender = Callable[[str, "str | None"], "str | None"]


@dataclasses.dataclass(frozen=True, eq=True)
class RustUse:
    """``use <path>;`` for a dotted FFI name or a ``::`` path (``ffi.X`` is ``tvm_ffi::X``)."""

    path: str

    def __init__(self, name: str) -> None:
        """Normalize ``name`` to a ``::`` path."""
        if "::" not in name and "." in name:
            head, _, tail = name.partition(".")
            name = f"{RC.RUST_MOD_MAP.get(head, head)}.{tail}"
        object.__setattr__(self, "path", name.replace(".", "::"))

    @property
    def leaf(self) -> str:
        """The last path segment: the name in scope."""
        return self.path.rsplit("::", 1)[-1]

    def as_use_line(self) -> str:
        """``use <path>;``, or ``""`` for a bare (prelude or primitive) name."""
        return f"use {self.path};" if "::" in self.path else ""


def is_crate_type_key(type_key: str) -> bool:
    """Whether the ``tvm_ffi`` crate binds ``type_key`` (every ``ffi.*`` key)."""
    return type_key.partition(".")[0] in RC.RUST_MOD_MAP


@functools.cache
def rust_module_path(path: Path) -> tuple[str, ...]:
    """The module a ``.rs`` file is, from its place under its crate's ``src/``.

    The crate is the nearest directory above with a ``Cargo.toml``; ``src/lib.rs``
    and ``src/main.rs`` are ``crate``, ``src/ir.rs`` and ``src/ir/mod.rs``
    ``crate::ir``; a keyword segment is a raw identifier. ``ValueError`` for a
    file in no crate's ``src/``.
    """
    path = path.resolve()
    crate = next((d for d in path.parents if (d / "Cargo.toml").is_file()), None)
    if crate is None:
        raise ValueError(f"{path} is in no Cargo crate: no `Cargo.toml` above it")
    src = crate / "src"
    if src not in path.parents:
        raise ValueError(f"{path} is not under `{src}`, so it is in no module of the crate")
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "mod" or (len(parts) == 1 and parts[0] in ("lib", "main")):
        parts.pop()
    return ("crate", *(f"r#{p}" if p in RC.RUST_KEYWORDS else p for p in parts))


def builtin_mirror_name(type_key: str) -> str:
    """The header-only stand-in struct of a builtin type (``ffi.IntEnum`` -> ``FfiIntEnumObj``).

    ``derive(Object)`` computes ``TYPE_DEPTH`` from the embedded base, so a type
    under a builtin needs a base at the builtin's depth, which the crate lacks.
    """
    head, _, leaf = type_key.rpartition(".")
    return f"{head.replace('.', '_').capitalize()}{leaf}Obj"


@dataclasses.dataclass
class RustImports:
    """One file's ``use`` items, Rust directives and builtin stand-ins."""

    items: list[RustUse] = dataclasses.field(default_factory=list)
    directives: Directives = dataclasses.field(default_factory=Directives)
    builtin_mirrors: dict[str, str] = dataclasses.field(default_factory=dict)
    """Builtin ancestors given a stand-in, root first: type key -> the base it embeds."""
    reserved: set[str] = dataclasses.field(default_factory=set)
    """Names the file's ``object/`` blocks define, which no import may take."""

    def record_builtin_base(self, chain: list[str]) -> str:
        """Record stand-ins for the builtin ``chain`` (root side first); return the last one.

        An empty chain is the crate's ``Object``.
        """
        base = self.record("tvm_ffi::Object")
        for key in chain:
            self.builtin_mirrors.setdefault(key, base)
            base = builtin_mirror_name(key)
        return base

    def record(self, name: str) -> str:
        """Record ``use name`` once and return how code spells it.

        The leaf, or the full path when the leaf is taken by another import or a
        type the file defines.
        """
        use = RustUse(name)
        if not use.as_use_line():
            return use.leaf
        if any(item.path == use.path for item in self.items):
            return use.leaf
        if use.leaf in self.reserved or any(item.leaf == use.leaf for item in self.items):
            return use.path
        self.items.append(use)
        return use.leaf


def render_rust_type(schema: TypeSchema, ty_render: TyRender) -> str | None:
    """``schema`` as a Rust value type, or ``None`` when it has none."""
    origin, args = schema.origin, schema.args or ()  # None only for a bare `tuple`
    if origin in RC.RUST_UNSUPPORTED_ORIGINS:
        return None
    if origin in ("Array", "List"):
        return _generic(ty_render(origin, None), render_rust_type(args[0], ty_render))
    if origin == "Map":
        key = render_rust_type(args[0], ty_render)
        return _generic(ty_render("Map", None), key, render_rust_type(args[1], ty_render))
    if origin == "Optional":
        return _generic("Option", render_rust_type(args[0], ty_render))
    if origin == "Callable":
        return ty_render("Callable", None)  # the crate's Function is type-erased
    return ty_render(origin, schema.type_key)


def _generic(base: str | None, *params: str | None) -> str | None:
    if base is None or any(p is None for p in params):
        return None
    return f"{base}<{', '.join(p for p in params if p is not None)}>"


_MODULE_QUALIFIER = re.compile(r"(?<![\w:])(?:::)?(?:[a-z_][a-z0-9_]*::)+(?=[A-Za-z_])")


def check_tokens(lines: Iterable[str]) -> tuple[str, ...]:
    """The tokens of generated Rust lines that ``--check`` compares.

    ``use`` and comment lines, module qualifiers and trailing commas are left
    out: import paths and rustfmt's wrapping do not make a file stale.
    """
    text = " ".join(s for s in (raw.strip() for raw in lines) if not s.startswith(("use ", "//")))
    tokens = re.findall(r"\w+|\S", _MODULE_QUALIFIER.sub("", text))
    nxt = [*tokens[1:], ""][: len(tokens)]  # each token's successor ("" after the last)
    closing = (")", "]", "}")
    return tuple(
        t for t, after in zip(tokens, nxt, strict=True) if not (t == "," and after in closing)
    )


def rust_ident(name: str) -> str:
    """A reflected field name spelled in Rust.

    One trailing underscore (``value_``) and dunder pairs (``__dict__``) are
    dropped; a keyword becomes a raw identifier, and the four that cannot be,
    and ``base``, get a trailing underscore.
    """
    if len(name) > 4 and name.startswith("__") and name.endswith("__"):
        name = name[2:-2]
    elif len(name) > 1 and name.endswith("_") and not name.endswith("__"):
        name = name[:-1]
    if name in RC.RUST_NOT_RAW_IDENTIFIERS or name in RC.RUST_RESERVED_MEMBERS:
        return name + "_"
    if name in RC.RUST_KEYWORDS:
        return f"r#{name}"
    return name
