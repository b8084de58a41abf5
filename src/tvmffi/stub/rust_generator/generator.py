"""``RustGenerator``: the Rust target of the stub pipeline (placeholder until codegen lands)."""

from __future__ import annotations

from typing import Any

from .. import consts as C


class RustGenerator:
    """Writes Rust bindings (``.rs`` files, ``//`` markers)."""

    name = "rust"
    syntax = C.RUST_SYNTAX
    source_exts = frozenset({".rs"})
    directive_kinds: frozenset[str] = frozenset(
        {"import-object", "field", "nullable", "enum", "opaque", "upcast", "custom-new"}
    )

    def __getattr__(self, name: str) -> Any:
        raise NotImplementedError(f"tvmffi-stubgen --target rust: {name} is not implemented yet")
