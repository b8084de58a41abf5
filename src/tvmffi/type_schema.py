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

# Runtime type keys -> the origin a schema keeps (the official binding's table): Python
# names for the runtime's value types, its containers and the C++ STL spellings.
_ORIGIN_NAMES = {
    "Variant": "Union",
    "Optional": "Optional",
    "Tuple": "tuple",
    "ffi.Function": "Callable",
    "ffi.Array": "Array",
    "ffi.List": "List",
    "ffi.Map": "Map",
    "ffi.Dict": "Dict",
    "ffi.OpaquePyObject": "Any",  # accepts any Python value
    "ffi.Object": "Object",
    "ffi.Tensor": "Tensor",
    "ffi.BigInt": "int",  # a Python int beyond int64 (test_big_int)
    "DLTensor*": "Tensor",
    "void*": "ctypes.c_void_p",
    "TVMFFIByteArray*": "bytes",
    "ffi.SmallBytes": "bytes",
    "ffi.Bytes": "bytes",
    "std::string": "str",
    "const char*": "str",
    "ffi.SmallStr": "str",
    "ffi.String": "str",
    "DataType": "dtype",
    "std::vector": "Array",
    "std::optional": "Optional",
    "std::variant": "Union",
    "std::tuple": "tuple",
    "std::map": "Map",
    "std::unordered_map": "Map",
    "std::function": "Callable",
    "ObjectRValueRef": "Object",  # no move semantics in Python
}

# Folds that lose the key (``int`` is also a native type): the schema keeps it in ``type_key``.
_RETAINED_TYPE_KEYS = frozenset({"ffi.BigInt"})

# Generic containers and how many parameters an argument-less one shows.
_GENERIC_ARITY = {"Array": 1, "List": 1, "list": 1, "Map": 2, "Dict": 2, "dict": 2}


class TypeSchema:
    """A parsed type schema: an ``origin`` (a Python type name) and its ``args``.

    As in the official binding, a function type keeps its signature in
    ``named_args`` (``{"return": (ret,), "params": (p0, ...)}``, ``params``
    absent for a packed function of unknown parameters) and has no positional
    ``args``; ``TypeSchema("Callable", (ret, p0, ...))`` is normalized to that
    form. An argument-less ``Array``/``List`` gets ``(Any,)`` and an
    argument-less ``Map``/``Dict`` ``(Any, Any)``. ``fallback`` is the schema a
    binding annotation uses when the origin itself is unknown to Python.
    """

    __slots__ = ("args", "fallback", "named_args", "origin", "type_key")

    def __init__(
        self,
        origin: str,
        args: tuple[TypeSchema, ...] | None = None,
        origin_type_index: int | None = None,
        fallback: TypeSchema | None = None,
        named_args: dict[str, tuple[TypeSchema, ...]] | None = None,
        type_key: str | None = None,
    ) -> None:
        del origin_type_index  # accepted for the official signature; resolved on demand
        if not isinstance(origin, str) or not origin:
            raise ValueError("schema type must be a nonempty string")
        # As officially, a bare ``tuple`` keeps ``args`` None (any elements), unlike
        # ``tuple[()]`` (exactly none); every other origin gets a tuple.
        bare_tuple = origin == "tuple" and args is None
        args = tuple(args) if args is not None else ()
        if any(not isinstance(a, TypeSchema) for a in args):
            raise TypeError("schema arguments must be TypeSchema instances")
        if named_args is not None:
            named_args = _normalize_named_args(named_args)
        if origin == "Callable":
            if args and named_args is None:
                named_args = {"return": (args[0],)}
                if len(args) > 1:
                    named_args["params"] = args[1:]
                args = ()
            if named_args is not None:
                if args or set(named_args) - {"return", "params"}:
                    raise ValueError("Callable uses only named return and params groups")
                if len(named_args.get("return", ())) != 1:
                    raise ValueError("Callable return group must contain exactly one type")
        if origin == "Union" and len(args) < 2:
            raise ValueError("Union must have at least two arguments")
        if origin == "Optional" and len(args) != 1:
            raise ValueError("Optional must have exactly one argument")
        arity = _GENERIC_ARITY.get(origin)
        if arity is not None:
            if len(args) not in (0, arity):
                raise ValueError(f"{origin} must have 0 or {arity} argument(s)")
            if not args:
                args = (TypeSchema("Any"),) * arity
        self.origin = origin
        self.args: tuple[TypeSchema, ...] | None = None if bare_tuple else args
        self.fallback = fallback
        self.named_args = named_args
        self.type_key = type_key

    @staticmethod
    def from_json_obj(obj: dict[str, Any]) -> TypeSchema:
        """Parse a schema given as decoded JSON (``{"type": ..., "args": [...]}``)."""
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            raise TypeError(f"expected schema dict with a 'type' string, got {obj!r}")
        key: str = obj["type"]
        origin = _ORIGIN_NAMES.get(key, key)
        raw_args = obj.get("args", ())
        if not isinstance(raw_args, (list, tuple)):
            raw_args = ()
        fallback = TypeSchema.from_json_obj(obj["fallback"]) if "fallback" in obj else None
        named = obj.get("named_args")
        named_args = None
        if named is not None:
            if not isinstance(named, dict):
                raise TypeError("named_args must be a map of names to type lists")
            named_args = {
                k: tuple(TypeSchema.from_json_obj(a) for a in v) for k, v in named.items()
            }
        # Non-object entries (e.g. std::array's length) are not types: skip them.
        args: tuple[TypeSchema, ...] | None = tuple(
            TypeSchema.from_json_obj(a) for a in raw_args if isinstance(a, dict)
        )
        if "args" not in obj:
            args = None  # a bare ``tuple`` stays bare; other origins get ()
        if key == "std::function" and len(raw_args) == 2 and isinstance(raw_args[1], list):
            # The legacy std::function spelling: [return, [params...]].
            named_args = {
                "return": (TypeSchema.from_json_obj(raw_args[0]),),
                "params": tuple(TypeSchema.from_json_obj(a) for a in raw_args[1]),
            }
            args = ()
        type_key = key if key in _RETAINED_TYPE_KEYS else None
        return TypeSchema(origin, args, None, fallback, named_args, type_key)

    @staticmethod
    def from_json_str(s: str) -> TypeSchema:
        """Parse a schema given as JSON text."""
        return TypeSchema.from_json_obj(json.loads(s))

    def repr(self, ty_map: Callable[[str], str] | None = None) -> str:
        """The schema as a Python annotation, each type name passed through ``ty_map``."""
        return self.output_repr(ty_map)

    def output_repr(self, ty_map: Callable[[str], str] | None = None) -> str:
        """The annotation of a value this schema produces (a return value, a field)."""
        return self._render(ty_map, False, frozenset())

    def input_repr(self, ty_map: Callable[[str], str] | None = None) -> str:
        """The annotation of what a parameter of this schema accepts.

        An object type that registers ``__ffi_convert_type_schema__`` (the
        schema of the values it converts from) is rendered as that schema.
        """
        return self._render(ty_map, True, frozenset())

    def _render(self, ty_map: Callable[[str], str] | None, inp: bool, seen: frozenset[str]) -> str:
        if self.fallback is not None and _object_index(self.origin) is None:
            return self.fallback._render(ty_map, inp, seen)
        if inp and self.origin not in seen:
            convert = _convert_schema_of(self.origin)
            if convert is not None:
                return convert._render(ty_map, inp, seen | {self.origin})
        origin = self.origin if ty_map is None else ty_map(self.origin)
        if self.origin == "Callable":
            if not self.named_args:
                return "Callable[..., Any]"
            ret = self.named_args["return"][0]._render(ty_map, inp, seen)
            params = self.named_args.get("params")
            if params is None:
                return f"Callable[..., {ret}]"
            inner = ", ".join(p._render(ty_map, inp, seen) for p in params)
            return f"Callable[[{inner}], {ret}]"
        if self.args is None:  # a bare tuple
            return origin
        args = [a._render(ty_map, inp, seen) for a in self.args]
        if self.origin == "tuple" and not args:
            return "tuple[()]"
        if self.origin in ("Optional", "Variant", "Union"):
            parts: list[str] = []
            for text in args:
                if text not in parts:
                    parts.append(text)
            if self.origin == "Optional":
                parts.append("None")
            return " | ".join(parts)
        if args:
            return f"{origin}[{', '.join(args)}]"
        return origin

    def __str__(self) -> str:
        return self.repr()

    def __repr__(self) -> str:
        return self.repr()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TypeSchema):
            return NotImplemented
        return (
            self.origin == other.origin
            and self.args == other.args
            and self.named_args == other.named_args
            and self.fallback == other.fallback
        )

    def __hash__(self) -> int:
        return hash((self.origin, self.args))

    # ---- conversion (the official binding's type converter; _type_converter.py) ----

    @property
    def origin_type_index(self) -> int:
        """Runtime type index the origin names; -2 for Optional/Union, -3 when unknown."""
        from ._type_converter import origin_type_index

        return origin_type_index(self)

    @staticmethod
    def from_annotation(annotation: object) -> TypeSchema:
        """The schema of a Python annotation.

        ``int``, ``list[int]`` (``List``), ``tuple[int, ...]`` (``Array``),
        ``tuple[int, str]``, ``dict[str, int]`` (``Dict``), ``X | None``,
        ``Union[...]``, ``Callable[[...], R]``, ``typing.Any``, registered
        object classes (``tvmffi.Array[int]``, ``@register_object`` classes),
        ``tvmffi.dtype``, ``tvmffi.Device``, ``ctypes.c_void_p`` and DLPack
        tensor classes. Anything else raises ``TypeError``.
        """
        from ._type_converter import from_annotation

        return from_annotation(annotation)

    @staticmethod
    def from_type_index(type_index: int, args: tuple[TypeSchema, ...] = ()) -> TypeSchema:
        """The schema of runtime type ``type_index`` (a value type or a registered object type).

        An index no type has raises ``ValueError``.
        """
        from ._type_converter import K_BIGINT, TYPE_INDEX_TO_ORIGIN, _type_key_of_index

        origin = TYPE_INDEX_TO_ORIGIN.get(type_index) or _type_key_of_index(type_index)
        type_key = "ffi.BigInt" if type_index == K_BIGINT else None
        return TypeSchema(origin, args, type_key=type_key)

    def is_subtype_of(self, target_cls: type) -> bool:
        """Whether the origin is the object type of ``target_cls`` or derives from it.

        ``False`` for a ``target_cls`` that is no FFI object class and for value
        (non-object) origins.
        """
        from ._type_converter import K_OBJECT, K_STATIC_OBJECT_BEGIN, is_instance_index

        try:
            target = TypeSchema.from_annotation(target_cls).origin_type_index
        except TypeError:
            return False
        mine = self.origin_type_index
        if target == K_OBJECT:
            return mine >= K_STATIC_OBJECT_BEGIN
        return target >= K_STATIC_OBJECT_BEGIN and is_instance_index(mine, target)

    def check_value(self, value: object) -> None:
        """Raise ``TypeError`` saying why when ``value`` cannot be converted to this schema."""
        from ._type_converter import convert

        convert(self, value, "type check")

    def convert(self, value: object) -> Any:
        """``value`` converted to this schema, as a ``CAny`` (``TypeError`` when it cannot be).

        The conversions are the FFI's implicit ones (``bool`` to ``int``, a
        list to ``Array[T]`` element by element, an object type's
        ``__ffi_convert__``...); ``tvmffi.core._to_py_class_value(result)``
        gives the converted value back as Python.
        """
        from ._type_converter import convert

        return convert(self, value, "type conversion")

    def to_json(self) -> dict[str, Any]:
        """The schema as JSON-ready data; ``from_json_obj(s.to_json()) == s``."""
        out: dict[str, Any] = {"type": self.type_key or self.origin}
        if self.args is not None and (self.args or self.origin == "tuple"):
            out["args"] = [a.to_json() for a in self.args]
        if self.named_args is not None:
            out["named_args"] = {k: [v.to_json() for v in vs] for k, vs in self.named_args.items()}
        if self.fallback is not None:
            out["fallback"] = self.fallback.to_json()
        return out

    def _converter(self) -> Callable[[Any], Any]:  # interim
        """``conv(value) -> converted value`` for this schema (``TypeError`` when the value
        does not convert). Interim: wraps today's field conversion."""
        from . import _core
        from ._type_converter import convert_field_value

        to_py = _core._to_py_class_value
        schema = self

        def conv(value: Any) -> Any:  # interim
            return to_py(convert_field_value(schema, value))

        return conv


def _normalize_named_args(
    named_args: dict[str, Any],
) -> dict[str, tuple[TypeSchema, ...]]:
    if not isinstance(named_args, dict):
        raise TypeError("named_args must be a map of names to type lists")
    out: dict[str, tuple[TypeSchema, ...]] = {}
    for name, values in named_args.items():
        if not isinstance(name, str) or not name:
            raise ValueError("named_args keys must be nonempty strings")
        if not isinstance(values, (list, tuple)) or any(
            not isinstance(v, TypeSchema) for v in values
        ):
            raise TypeError("named_args values must be sequences of TypeSchema")
        out[name] = tuple(values)
    return out


def _object_index(origin: str) -> int | None:
    """Type index of ``origin`` when it is a registered object type key (has a dot)."""
    if "." not in origin:
        return None
    from . import _core

    index: int | None = _core._type_key_to_index(origin)
    return index


def _convert_schema_of(origin: str) -> TypeSchema | None:
    """The ``__ffi_convert_type_schema__`` of object type ``origin``, parsed; else None."""
    index = _object_index(origin)
    if index is None:
        return None
    from . import _core

    raw = _core._lookup_type_attr(index, "__ffi_convert_type_schema__")
    if raw is None:
        return None
    if isinstance(raw, TypeSchema):
        return raw
    if isinstance(raw, dict):
        return TypeSchema.from_json_obj(raw)
    return TypeSchema.from_json_str(str(raw))
