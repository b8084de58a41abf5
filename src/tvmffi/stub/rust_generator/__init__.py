"""The Rust target of the stub generator (``--target rust``)."""

from __future__ import annotations

from .generator import RustGenerator

__all__ = ["RustGenerator"]
