"""The Python target of the stub generator (``--target python``, the default)."""

from __future__ import annotations

from .generator import PythonGenerator

__all__ = ["PythonGenerator"]
