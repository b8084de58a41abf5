"""TypeSchema: the FFI's description of a value's type, and its compiled converter.

A schema is a tree: an ``origin`` ("int", "Array", "Optional", an object type key ...)
with ``args``. It is read from a function's or field's ``type_schema`` metadata
(``TypeSchema.from_json_str``), built from a Python annotation
(``TypeSchema.from_annotation``, in ``_annotation.py``) or by hand. It prints as Python
annotation text (``repr``; ``input_repr`` / ``output_repr`` for stub generation), and
checks or converts values: ``check_value`` / ``convert`` run the schema's converter, a
plan compiled once in C (``csrc/type_plan.c``) and applied by the conversion hub
(``csrc/type_apply.c`` next to ``csrc/any.c``), reached through ``_converter()``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from . import _core

# ---- facts: the runtime's type names and static type indices ---------------------------
# JSON type names (C++ TypeSchema() / type_traits.h spellings) -> the origin they denote.
_JSON_ORIGIN = {
    "ffi.Array": "Array",
    "std::vector": "Array",
    "ffi.List": "List",
    "ffi.Map": "Map",
    "std::map": "Map",
    "std::unordered_map": "Map",
    "ffi.Dict": "Dict",
    "Variant": "Union",
    "std::variant": "Union",
    "std::optional": "Optional",
    "Tuple": "tuple",
    "std::tuple": "tuple",
    "ffi.Function": "Callable",
    "std::function": "Callable",
    "void*": "ctypes.c_void_p",
    "DataType": "dtype",
    "DLTensor*": "Tensor",
    "ffi.Tensor": "Tensor",
    "const char*": "str",
    "std::string": "str",
    "ffi.String": "str",
    "ffi.SmallStr": "str",
    "ffi.Bytes": "bytes",
    "ffi.SmallBytes": "bytes",
    "TVMFFIByteArray*": "bytes",
    "ObjectRValueRef": "Object",
    "ffi.Object": "Object",
    "ffi.BigInt": "int",
}
# Names whose origin says less than the name: kept as ``type_key`` (and written back).
_KEPT_KEYS = frozenset({"ffi.BigInt"})

# Origin -> static type index (kTVMFFI*); -2 marks a structural origin (no one index).
_STRUCTURAL = -2
_ORIGIN_INDEX = {
    "Any": -1,
    "None": 0,
    "int": 1,
    "bool": 2,
    "float": 3,
    "ctypes.c_void_p": 4,
    "dtype": 5,
    "Device": 6,
    "Object": 64,
    "str": 65,
    "bytes": 66,
    "Callable": 68,
    "Tensor": 70,
    "Array": 71,
    "Map": 72,
    "List": 75,
    "list": 75,
    "Dict": 76,
    "dict": 76,
    "Optional": _STRUCTURAL,
    "Union": _STRUCTURAL,
    "tuple": _STRUCTURAL,
}
# Static type index -> origin, for from_type_index (the low ones are views of the same).
_INDEX_ORIGIN = {
    -1: "Any",
    0: "None",
    1: "int",
    2: "bool",
    3: "float",
    4: "ctypes.c_void_p",
    5: "dtype",
    6: "Device",
    7: "Tensor",
    8: "str",
    9: "bytes",
    10: "Object",
    11: "str",
    12: "bytes",
    64: "Object",
    65: "str",
    66: "bytes",
    68: "Callable",
    70: "Tensor",
    71: "Array",
    72: "Map",
    75: "List",
    76: "Dict",
}
_K_STATIC_OBJECT_BEGIN = 64
_K_BIGINT = 78

# Arity rules of the generic origins: (allowed counts, the message's wording).
_ARITY = {
    "Array": ((0, 1), "0 or 1"),
    "List": ((0, 1), "0 or 1"),
    "list": ((0, 1), "0 or 1"),
    "Map": ((0, 2), "0 or 2"),
    "Dict": ((0, 2), "0 or 2"),
    "dict": ((0, 2), "0 or 2"),
}


def _any() -> TypeSchema:
    return TypeSchema("Any")


class TypeSchema:
    """A type: ``origin`` plus ``args`` (see the module docstring)."""

    __slots__ = (
        "__weakref__",
        "_conv",
        "_hash",
        "args",
        "fallback",
        "named_args",
        "origin",
        "origin_type_index",
        "type_key",
    )
    origin: str
    args: tuple[TypeSchema, ...]  # None only for a bare ``tuple``
    origin_type_index: int
    fallback: TypeSchema | None
    named_args: dict[str, tuple[TypeSchema, ...]] | None
    type_key: str | None

    def __init__(
        self,
        origin: str,
        args: tuple[TypeSchema, ...] | None = (),
        origin_type_index: int | None = None,
        fallback: TypeSchema | None = None,
        named_args: dict[str, tuple[TypeSchema, ...]] | None = None,
        type_key: str | None = None,
    ) -> None:
        if not isinstance(origin, str) or not origin:
            raise ValueError(f"TypeSchema origin must be a nonempty str, got {origin!r}")
        given = None if args is None else tuple(args)
        self.origin = origin
        self.fallback = fallback
        self.type_key = type_key
        self.named_args = None
        self.args = _normal_args(origin, given)  # type: ignore[assignment]
        if origin == "Callable":
            self.args, self.named_args = (), _callable_named(given or (), named_args)
        elif named_args is not None:
            self.named_args = {str(k): tuple(v) for k, v in named_args.items()}
        self.origin_type_index = (
            _origin_index(origin) if origin_type_index is None else int(origin_type_index)
        )
        self._conv: Any = None
        self._hash: int | None = None

    # ---- JSON --------------------------------------------------------------------
    @staticmethod
    def from_json_obj(obj: dict[str, Any]) -> TypeSchema:
        """A schema from its JSON object form (``{"type": ..., "args": [...]}``)."""
        return _from_json(obj)

    @staticmethod
    def from_json_str(s: str) -> TypeSchema:
        """A schema from its JSON text."""
        return _from_json(json.loads(s))

    def to_json(self) -> dict[str, Any]:
        """The JSON object form; ``from_json_obj`` reads it back to an equal schema."""
        parts = ((key, write(self)) for key, write in _JSON_WRITERS)
        return {"type": self.type_key or self.origin, **{k: v for k, v in parts if v is not None}}

    # ---- other constructors --------------------------------------------------------
    @staticmethod
    def from_annotation(annotation: object) -> TypeSchema:
        """The schema of a Python annotation (``int``, ``list[int]``, ``Optional[X]``,
        an FFI class ...); ``TypeError`` for what has no FFI type."""
        parse = _FromAbove.parse_annotation
        if parse is None:
            raise RuntimeError("tvmffi._annotation has not loaded: annotations cannot be read yet")
        return parse(annotation)

    @staticmethod
    def from_type_index(type_index: int, args: tuple[TypeSchema, ...] = ()) -> TypeSchema:
        """The schema of runtime type ``type_index`` (``ValueError`` when unknown)."""
        index = int(type_index)
        origin = _INDEX_ORIGIN.get(index)
        if origin is not None:
            return TypeSchema(origin, tuple(args))
        key = _type_key_of(index)
        if index == _K_BIGINT:
            return TypeSchema("int", type_key=key)
        return TypeSchema(key, tuple(args), origin_type_index=index)

    # ---- printing ------------------------------------------------------------------
    def repr(self, ty_map: Callable[[str], str] | None = None) -> str:
        """Python annotation text; ``ty_map`` renames origins and type keys."""
        return _Printer(ty_map, None).text(self)

    def output_repr(self, ty_map: Callable[[str], str] | None = None) -> str:
        """The text of this type as a value handed out (``repr``)."""
        return _Printer(ty_map, False).text(self)

    def input_repr(self, ty_map: Callable[[str], str] | None = None) -> str:
        """The text of this type as a value taken in: an object type that registers
        ``__ffi_convert_type_schema__`` shows what it converts from."""
        return _Printer(ty_map, True).text(self)

    def __str__(self) -> str:
        return self.repr()

    def __repr__(self) -> str:
        return self.repr()

    # ---- identity ------------------------------------------------------------------
    def _key(self) -> tuple[Any, ...]:
        named = None
        if self.named_args is not None:
            named = tuple(sorted(self.named_args.items()))
        return (self.origin, self.args, named, self.fallback)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TypeSchema):
            return NotImplemented
        return self is other or self._key() == other._key()

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(self._key())
        return self._hash

    # ---- types ---------------------------------------------------------------------
    def is_subtype_of(self, target_cls: type) -> bool:
        """Whether every value of this schema is an instance of FFI class ``target_cls``."""
        info = getattr(target_cls, "__dict__", {}).get("__tvm_ffi_type_info__")
        if target_cls is _core.Object:
            target = _K_STATIC_OBJECT_BEGIN
        elif info is not None:
            target = int(info.type_index)
        else:
            return False
        index = self.origin_type_index
        if index < _K_STATIC_OBJECT_BEGIN:
            return False
        return index == target or target in _ancestors_of(index)

    # ---- conversion ----------------------------------------------------------------
    def _converter(self) -> Any:
        """The compiled converter (``_core.TypeConverter``), made once per schema."""
        conv = self._conv
        if conv is None:
            conv = _core.TypeConverter(self, _object_hook)
            self._conv = conv
        return conv

    def check_value(self, value: object) -> None:
        """``TypeError`` (naming this schema and the reason) unless ``value`` converts."""
        self._converter().check(value)

    def convert(self, value: object) -> Any:
        """``value`` converted to this type, as an owned FFI value (a ``CAny``)."""
        return self._converter().convert(value)


# ---- helpers -----------------------------------------------------------------------------
def _origin_index(origin: str) -> int:
    index = _ORIGIN_INDEX.get(origin)
    if index is not None:
        return index
    found = _core._type_key_to_index(origin)
    return _STRUCTURAL if found is None else int(found)


def _normal_args(origin: str, args: tuple[TypeSchema, ...] | None) -> tuple[TypeSchema, ...] | None:
    """``args`` checked against the origin's arity; missing container args become ``Any``."""
    if origin == "Union" and (args is None or len(args) < 2):
        raise ValueError("Union must have at least two args")
    if origin == "Optional" and (args is None or len(args) != 1):
        raise ValueError("Optional must have exactly one arg")
    rule = _ARITY.get(origin)
    if rule is None:
        return args if origin == "tuple" else (args or ())
    counts, words = rule
    n = len(args or ())
    if n not in counts:
        raise ValueError(f"{origin} must have {words} args, got {n}")
    return args if n else tuple(_any() for _ in range(max(counts)))


def _callable_named(
    args: tuple[TypeSchema, ...], named: Mapping[str, Iterable[TypeSchema]] | None
) -> dict[str, tuple[TypeSchema, ...]] | None:
    """A Callable's signature in its one form: ``{"return": (r,), "params": (...)}``;
    flat ``args`` are (return, *params), a lone return meaning ``...`` params."""
    if named is not None:
        return {str(k): tuple(v) for k, v in named.items()}
    if not args:
        return None
    out: dict[str, tuple[TypeSchema, ...]] = {"return": (args[0],)}
    if len(args) > 1:
        out["params"] = tuple(args[1:])
    return out


class _FromAbove:
    """What this module needs from the layers above it, handed down as they load, so no
    import goes up: ``tvmffi.object`` gives the type-index check, type infos and the
    registered classes; ``tvmffi._annotation`` the annotation parser."""

    check_type_index: Callable[[int], None] = staticmethod(lambda index: None)
    type_info: Callable[[int], Any] | None = None
    registered: Mapping[int, type] = {}
    parse_annotation: Callable[[object], TypeSchema] | None = None


def _type_info(index: int) -> Any:
    _FromAbove.check_type_index(index)
    if _FromAbove.type_info is None:
        raise RuntimeError("tvmffi.object has not loaded: no type information yet")
    return _FromAbove.type_info(index)


def _type_key_of(index: int) -> str:
    return str(_type_info(index).type_key)


def _ancestors_of(index: int) -> tuple[int, ...]:
    return tuple(_type_info(index).ancestors)


def _schema_list(raw: Any) -> list[Any]:
    return list(raw) if isinstance(raw, (list, tuple)) else []


# The optional members of the JSON form, each written only when the schema has it.
def _write_args(s: TypeSchema) -> Any:
    # A tuple's args are written even when empty: tuple[()] differs from a bare tuple.
    keep = s.args is not None and (len(s.args) > 0 or s.origin == "tuple")
    return [a.to_json() for a in s.args] if keep else None


def _write_named(s: TypeSchema) -> Any:
    named = s.named_args
    return None if named is None else {k: [a.to_json() for a in v] for k, v in named.items()}


def _write_fallback(s: TypeSchema) -> Any:
    return None if s.fallback is None else s.fallback.to_json()


_JSON_WRITERS = (("args", _write_args), ("named_args", _write_named), ("fallback", _write_fallback))


def _from_json(obj: Any) -> TypeSchema:
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise TypeError(f"expected schema dict with a 'type' str, got {obj!r}")
    name: str = obj["type"]
    raw_args = _schema_list(obj.get("args"))
    args = tuple(_from_json(a) for a in raw_args if isinstance(a, dict))
    named = _named_from_json(obj.get("named_args"))
    origin = _JSON_ORIGIN.get(name, name)
    if origin == "Callable" and named is None and raw_args:
        named = _flat_signature(raw_args)
    fallback = _from_json(obj["fallback"]) if isinstance(obj.get("fallback"), dict) else None
    if origin == "tuple" and "args" not in obj:
        args_or_none: tuple[TypeSchema, ...] | None = None
    else:
        args_or_none = args
    return TypeSchema(
        origin,
        () if origin == "Callable" else args_or_none,
        fallback=fallback,
        named_args=named,
        type_key=name if name in _KEPT_KEYS else None,
    )


def _named_from_json(raw: Any) -> dict[str, tuple[TypeSchema, ...]] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise TypeError(f"named_args must be a dict, got {raw!r}")
    out = {}
    for key, value in raw.items():
        if not isinstance(value, list):
            raise TypeError(f"named_args[{key!r}] must be a list of schemas, got {value!r}")
        out[str(key)] = tuple(_from_json(v) for v in value)
    return out


def _flat_signature(raw_args: list[Any]) -> dict[str, tuple[TypeSchema, ...]]:
    """Old flat Callable args: the return first, then params inline or as one list; a
    lone return leaves the params unknown (``...``)."""
    ret = _from_json(raw_args[0]) if isinstance(raw_args[0], dict) else _any()
    if len(raw_args) == 1:
        return {"return": (ret,)}
    params: list[TypeSchema] = []
    for item in raw_args[1:]:
        group = item if isinstance(item, list) else [item]
        params.extend(_from_json(p) for p in group if isinstance(p, dict))
    return {"return": (ret,), "params": tuple(params)}


def _object_hook(schema: TypeSchema) -> Any:
    """For an object-type node: how a payload (an int or str) becomes that type's value,
    or None. A payload enum (IntEnum / StrEnum: its class's ``_payload_type``)
    looks its variant up by payload. Refuses (``ValueError``) an index the runtime does
    not know, before C asks for its type info."""
    _FromAbove.check_type_index(schema.origin_type_index)
    cls: Any = _FromAbove.registered.get(schema.origin_type_index)
    payload = getattr(cls, "_payload_type", None) if isinstance(cls, type) else None
    if payload not in (int, str):
        return None

    def lookup(value: Any) -> Any:
        if type(value) is not payload:
            return None
        try:
            return cls.get(value)
        except KeyError:
            return None

    return lookup


class _Printer:
    """Annotation text of a schema. ``inputs``: None (plain), True (a value taken in),
    False (a value handed out); a Callable's params are read the other way round."""

    def __init__(self, ty_map: Callable[[str], str] | None, inputs: bool | None) -> None:
        self.name: Callable[[str], str] = ty_map if ty_map is not None else str
        self.inputs = inputs
        self.widening: set[str] = set()

    def text(self, s: TypeSchema) -> str:
        if (
            s.fallback is not None
            and s.origin_type_index == _STRUCTURAL
            and s.origin
            not in (
                "Optional",
                "Union",
                "tuple",
            )
        ):
            return self.text(s.fallback)
        origin = s.origin
        if origin == "Optional":
            return f"{self.text(s.args[0])} | None"
        if origin == "Union":
            return " | ".join(self.text(a) for a in s.args)
        if origin == "Callable":
            return self._callable(s)
        if origin == "tuple":
            if s.args is None:
                return self.name("tuple")
            inner = ", ".join(self.text(a) for a in s.args) if s.args else "()"
            return f"{self.name('tuple')}[{inner}]"
        if origin in ("list", "dict"):
            origin = origin.capitalize()
        if s.args:
            return f"{self.name(origin)}[{', '.join(self.text(a) for a in s.args)}]"
        if self.inputs and s.origin_type_index >= _K_STATIC_OBJECT_BEGIN:
            widened = self._widened(s)
            if widened is not None:
                return widened
        return self.name(origin)

    def _widened(self, s: TypeSchema) -> str | None:
        if s.origin in self.widening:
            return None
        raw = _core._lookup_type_attr(s.origin_type_index, "__ffi_convert_type_schema__")
        if not isinstance(raw, str):
            return None
        try:
            wide = TypeSchema.from_json_str(raw)
        except (TypeError, ValueError):
            return None
        self.widening.add(s.origin)
        try:
            return self.text(wide)
        finally:
            self.widening.discard(s.origin)

    def _callable(self, s: TypeSchema) -> str:
        named = s.named_args or {}
        ret = named.get("return")
        ret_text = self.text(ret[0]) if ret else "Any"
        params = named.get("params")
        if params is None:
            return f"{self.name('Callable')}[..., {ret_text}]"
        self.inputs = None if self.inputs is None else not self.inputs
        try:
            inner = ", ".join(self.text(p) for p in params)
        finally:
            self.inputs = None if self.inputs is None else not self.inputs
        return f"{self.name('Callable')}[[{inner}], {ret_text}]"
