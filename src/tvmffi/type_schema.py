"""Type schemas: the runtime's JSON description of a function's or field's type.

``TypeSchema.from_json_str(metadata["type_schema"])`` parses the schema the
runtime stores in reflection metadata (``get_global_func_metadata(name)``,
field and method metadata); ``str()`` renders it as a Python annotation, e.g.
``Callable[[int, str | None], Array[int]]``, with the official binding's
spelling. ``repr(ty_map)`` renders it with ``ty_map`` applied to each type name
(e.g. ``Array`` -> ``Sequence``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["TypeSchema"]

# Runtime type keys -> the Python names a schema is rendered with.
_ORIGIN_NAMES = {
    "ffi.String": "str",
    "ffi.Bytes": "bytes",
    "ffi.BigInt": "int",  # a Python int beyond int64 (test_big_int)
    "ffi.Function": "Callable",
    "ffi.Object": "Object",
    "ffi.Tensor": "Tensor",
    "DLTensor*": "Tensor",
    "ffi.Array": "Array",
    "ffi.List": "List",
    "ffi.Map": "Map",
    "ffi.Dict": "Dict",
    "ffi.Shape": "Shape",
    "ffi.Module": "Module",
    "DataType": "dtype",
    "Device": "Device",
    "Optional": "Optional",
    "Variant": "Variant",
}

# Generic containers and how many parameters an argument-less one shows.
_GENERIC_ARITY = {"Array": 1, "List": 1, "Map": 2, "Dict": 2}


class TypeSchema:
    """A parsed type schema: an ``origin`` (a Python type name) and its ``args``."""

    __slots__ = ("args", "named_args", "origin", "type_key")

    def __init__(
        self,
        origin: str,
        args: tuple[TypeSchema, ...] = (),
        named_args: dict[str, tuple[TypeSchema, ...]] | None = None,
        type_key: str | None = None,
    ) -> None:
        self.origin = origin
        self.args = tuple(args)
        self.named_args = named_args
        self.type_key = type_key

    @staticmethod
    def from_json_obj(obj: dict[str, Any]) -> TypeSchema:
        """Parse a schema given as decoded JSON (``{"type": ..., "args": [...]}``)."""
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            raise ValueError(f"not a type schema: {obj!r}")
        key: str = obj["type"]
        origin = _ORIGIN_NAMES.get(key, key)
        args = tuple(TypeSchema.from_json_obj(a) for a in obj.get("args", ()))
        named = obj.get("named_args")
        named_args = None
        if isinstance(named, dict):
            named_args = {
                k: tuple(TypeSchema.from_json_obj(a) for a in v) for k, v in named.items()
            }
        if origin == "Callable" and named_args is not None:
            # A typed function: args are (return, *params), as the official binding keeps them.
            ret = named_args.get("return") or (TypeSchema("None"),)
            params = named_args.get("params")
            if params is not None:
                args = (ret[0], *params)
        return TypeSchema(origin, args, named_args, key)

    @staticmethod
    def from_json_str(s: str) -> TypeSchema:
        """Parse a schema given as JSON text."""
        return TypeSchema.from_json_obj(json.loads(s))

    def _is_packed_callable(self) -> bool:
        return self.origin == "Callable" and (
            self.named_args is None or self.named_args.get("params") is None
        )

    def repr(self, ty_map: Callable[[str], str] | None = None) -> str:
        """The schema as a Python annotation, each type name passed through ``ty_map``."""
        name = ty_map if ty_map is not None else (lambda t: t)
        origin = self.origin
        if origin in ("Optional", "Variant"):
            parts: list[str] = []
            for a in self.args:
                text = a.repr(ty_map)
                if text not in parts:
                    parts.append(text)
            if origin == "Optional":
                parts.append("None")
            return " | ".join(parts)
        if origin == "Callable":
            if self._is_packed_callable():
                return f"{name('Callable')}[..., Any]"
            ret, params = self.args[0], self.args[1:]
            inner = ", ".join(p.repr(ty_map) for p in params)
            return f"{name('Callable')}[[{inner}], {ret.repr(ty_map)}]"
        arity = _GENERIC_ARITY.get(origin)
        if arity is not None:
            args = [a.repr(ty_map) for a in self.args] or ["Any"] * arity
            return f"{name(origin)}[{', '.join(args)}]"
        if self.args:
            return f"{name(origin)}[{', '.join(a.repr(ty_map) for a in self.args)}]"
        return name(origin)

    def __str__(self) -> str:
        return self.repr()

    def __repr__(self) -> str:
        return f"TypeSchema({self.repr()!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TypeSchema):
            return NotImplemented
        return self.origin == other.origin and self.args == other.args

    def __hash__(self) -> int:
        return hash((self.origin, self.args))
