"""Checking and converting Python values against a :class:`TypeSchema`.

``TypeSchema.check_value`` / ``TypeSchema.convert`` (the official binding's
names) come here. A schema gets one converter, built on first use (so object
types registered after the schema was made are found): a tree of
:class:`_Converter` nodes, one per schema node, each with a dispatch function.

A dispatch function decides whether a value is acceptable for its schema
node, with the official binding's rules and messages (``int`` accepts
``bool`` and ``numbers.Integral``, ``float`` accepts ``int``, ``Array[T]``
accepts lists and tuples whose elements convert to ``T``, an object type
accepts its subtypes, a ``__ffi_convert__`` type attribute may turn other
values into the type...), and returns the converted value as a :class:`CAny`
plus whether anything changed. Packing a value into a ``CAny`` is always the C
conversion of a call argument (``csrc/any.c``): protocol values
(``__tvm_ffi_int__``, ``__dlpack__``, opaque-pointer handlers, ...) are
converted there, never a second time here.
"""

from __future__ import annotations

import ctypes
import os
import sys
import types
import typing
from collections.abc import Callable, Mapping
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

from . import _core
from ._core import CAny, ObjectRValueRef, _to_py_class_value

if TYPE_CHECKING:
    from .type_schema import TypeSchema

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_MAX_PROTOCOL_DEPTH = 64

# Runtime type indices (tvm/ffi/c_api.h).
K_ANY = -1
K_NONE, K_INT, K_BOOL, K_FLOAT, K_OPAQUE_PTR, K_DTYPE, K_DEVICE = 0, 1, 2, 3, 4, 5, 6
K_DLTENSOR_PTR, K_RAW_STR, K_BYTE_ARRAY_PTR, K_RVALUE_REF = 7, 8, 9, 10
K_SMALL_STR, K_SMALL_BYTES = 11, 12
K_STATIC_OBJECT_BEGIN = K_OBJECT = 64
K_STR, K_BYTES, K_ERROR, K_FUNCTION, K_SHAPE, K_TENSOR = 65, 66, 67, 68, 69, 70
K_ARRAY, K_MAP, K_MODULE, K_OPAQUE_PY, K_LIST, K_DICT, K_BIGINT = 71, 72, 73, 74, 75, 76, 78

# A schema origin that names no single type (Optional, Union), or none known.
ORIGIN_INDEX_STRUCTURAL = -2
ORIGIN_INDEX_UNKNOWN = -3

ORIGIN_TO_TYPE_INDEX: dict[str, int] = {
    "None": K_NONE,
    "int": K_INT,
    "bool": K_BOOL,
    "float": K_FLOAT,
    "str": K_STR,
    "bytes": K_BYTES,
    "Device": K_DEVICE,
    "dtype": K_DTYPE,
    "ctypes.c_void_p": K_OPAQUE_PTR,
    "Tensor": K_TENSOR,
    "Object": K_OBJECT,
    "Callable": K_FUNCTION,
    "Array": K_ARRAY,
    "List": K_LIST,
    "Map": K_MAP,
    "Dict": K_DICT,
    "Any": K_ANY,
}

TYPE_INDEX_TO_ORIGIN: dict[int, str] = {v: k for k, v in ORIGIN_TO_TYPE_INDEX.items()}
TYPE_INDEX_TO_ORIGIN.update(
    {
        K_DLTENSOR_PTR: "Tensor",
        K_RAW_STR: "str",
        K_BYTE_ARRAY_PTR: "bytes",
        K_SMALL_STR: "str",
        K_SMALL_BYTES: "bytes",
        K_RVALUE_REF: "Object",
        K_BIGINT: "int",
    }
)


class ConvertError(Exception):
    """A value does not fit its schema; the message says where and why."""

    @property
    def message(self) -> str:
        return str(self.args[0])


_Dispatch = Callable[["_Converter", Any], "tuple[CAny, bool]"]


class _Converter:
    """The converter of one schema node: its dispatch function and sub-converters."""

    __slots__ = ("_fn_convert", "_fn_ready", "dispatch", "hint", "subs", "type_index")

    def __init__(self, dispatch: _Dispatch, hint: str) -> None:
        self.dispatch = dispatch
        self.hint = hint
        self.subs: tuple[_Converter | None, ...] | None = None
        self.type_index = K_ANY
        self._fn_convert: Any = None
        self._fn_ready = False

    def fn_convert(self) -> Any:
        """The object type's ``__ffi_convert__`` function, looked up once; ``None`` if absent."""
        if not self._fn_ready:
            from .object import _lookup_type_attr

            self._fn_convert = _lookup_type_attr(self.type_index, "__ffi_convert__")
            self._fn_ready = True
        return self._fn_convert


# ---- helpers -----------------------------------------------------------------


def _object_type_index(value: Any) -> int | None:
    """Type index of a tvmffi object; ``None`` for anything else."""
    from .object import Object

    if isinstance(value, Object):
        return int(value.type_index)
    return None


def _type_key_of_index(index: int) -> str:
    from .object import _check_type_index, _type_info_by_index

    _check_type_index(index)
    return _type_info_by_index(index).type_key


def describe(value: Any) -> str:
    """The type of ``value`` as error messages name it."""
    if value is None:
        return "None"
    for cls, name in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str")):
        if isinstance(value, cls):
            return name
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    index = _object_type_index(value)
    if index is not None:
        info = getattr(type(value), "__tvm_ffi_type_info__", None)
        key = getattr(info, "type_key", None)
        return key if isinstance(key, str) else _type_key_of_index(index)
    return type(value).__qualname__


def is_instance_index(actual: int, target: int) -> bool:
    """Whether runtime type ``actual`` is ``target`` or derives from it."""
    if actual == target:
        return True
    if actual < K_STATIC_OBJECT_BEGIN or target < K_STATIC_OBJECT_BEGIN:
        return False
    from .object import _type_info_by_index

    try:
        return target in _type_info_by_index(actual).ancestors
    except (ValueError, KeyError):
        return False


def _pack(value: Any, expected: str, original: Any) -> CAny:
    """``value`` packed by the C conversion; its refusal becomes a ConvertError."""
    try:
        return CAny(value)
    except ConvertError:
        raise
    except Exception as err:
        raise ConvertError(f"expected {expected}, got {describe(original)}: {err}") from None


def _check_int64(value: int) -> int:
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ConvertError(f"integer {value} out of int64 range [{_INT64_MIN}, {_INT64_MAX}]")
    return value


def _as_int(value: Any) -> int:
    try:
        return int(value)
    except Exception as err:
        raise ConvertError(f"int() failed for {type(value).__qualname__}: {err}") from None


def _device_class() -> type:
    from ._core import Device

    return Device


def _dtype_class() -> type:
    from .dtype import dtype

    return dtype


# ---- scalar converters ---------------------------------------------------------


def _conv_any(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    from ._strings import Bytes, String
    from .object import Object

    packed = _pack(value, "Any", value)
    native = (
        type(None),
        bool,
        int,
        float,
        ctypes.c_void_p,
        String,
        Bytes,
        Object,
        _device_class(),
        _dtype_class(),
    )
    return packed, not isinstance(value, native)


def _conv_none(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    if value is None:
        return CAny(None), False
    raise ConvertError(f"expected None, got {describe(value)}")


def _conv_int(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    if isinstance(value, bool):
        return CAny(int(value)), True
    if isinstance(value, int):
        return CAny(_check_int64(value)), False
    if isinstance(value, Integral):
        return CAny(_check_int64(_as_int(value))), True
    if hasattr(type(value), "__tvm_ffi_int__"):
        return _pack(value, "int", value), True
    raise ConvertError(f"expected int, got {describe(value)}")


def _conv_float(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    if isinstance(value, float):
        return CAny(value), False
    if isinstance(value, (int, Integral, Real)):
        try:
            f = float(value)
        except Exception as err:
            raise ConvertError(f"float() failed for {type(value).__qualname__}: {err}") from None
        return CAny(f), True
    if hasattr(type(value), "__tvm_ffi_float__"):
        return _pack(value, "float", value), True
    raise ConvertError(f"expected float, got {describe(value)}")


def _conv_bool(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    if isinstance(value, bool):
        return CAny(value), False
    if isinstance(value, Integral):
        try:
            b = bool(value)
        except Exception as err:
            raise ConvertError(f"bool() failed for {type(value).__qualname__}: {err}") from None
        return CAny(b), True
    raise ConvertError(f"expected bool, got {describe(value)}")


def _conv_str(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    from ._strings import String

    if isinstance(value, str):
        return CAny(value), not isinstance(value, String)
    raise ConvertError(f"expected str, got {describe(value)}")


def _conv_bytes(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    from ._strings import Bytes

    if isinstance(value, Bytes):
        return CAny(value), False
    if isinstance(value, bytes):
        return CAny(value), True
    if isinstance(value, bytearray):
        return CAny(bytes(value)), True
    raise ConvertError(f"expected bytes, got {describe(value)}")


def _conv_device(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    device_cls = _device_class()
    if isinstance(value, device_cls):
        return CAny(value), False
    if isinstance(value, str):
        try:
            dev = device_cls(value)
        except Exception:
            raise ConvertError(f"expected Device, got invalid device string {value!r}") from None
        return CAny(dev), True
    vtype = type(value)
    if hasattr(vtype, "__dlpack_device__") and not hasattr(vtype, "__dlpack__"):
        return _pack(value, "Device", value), True
    raise ConvertError(f"expected Device, got {describe(value)}")


def _is_framework_dtype(value: Any) -> bool:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.dtype):
        return True
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.dtype)


def _conv_dtype(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    dtype_cls = _dtype_class()
    if isinstance(value, dtype_cls):
        return CAny(value), False
    if isinstance(value, str):
        try:
            dt = dtype_cls(value)
        except Exception:
            raise ConvertError(f"expected dtype, got invalid dtype string {value!r}") from None
        return CAny(dt), True
    if _is_framework_dtype(value) or hasattr(value, "__dlpack_data_type__"):
        return _pack(value, "dtype", value), True
    raise ConvertError(f"expected dtype, got {describe(value)}")


def _conv_opaque_ptr(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    if isinstance(value, ctypes.c_void_p):
        return CAny(value), False
    if value is None:
        return CAny(ctypes.c_void_p(None)), True
    vtype = type(value)
    if (
        hasattr(vtype, "__tvm_ffi_opaque_ptr__")
        or vtype in _core._OPAQUE_PTR_HANDLERS
        or hasattr(vtype, "__cuda_stream__")
    ):
        return _pack(value, "ctypes.c_void_p", value), True
    raise ConvertError(f"expected ctypes.c_void_p, got {describe(value)}")


def _conv_tensor(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    from .tensor import Tensor

    if isinstance(value, Tensor):
        return CAny(value), False
    vtype = type(value)
    if hasattr(vtype, "__dlpack__") or (
        os.environ.get("TVM_FFI_SKIP_DLPACK_C_EXCHANGE_API", "0") != "1"
        and hasattr(vtype, "__dlpack_c_exchange_api__")
    ):
        return _pack(value, "Tensor", value), True
    raise ConvertError(f"expected Tensor, got {describe(value)}")


def _conv_callable(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    from ._core import Function

    if isinstance(value, Function):
        return CAny(value), False
    if callable(value) and _object_type_index(value) is None:
        return _pack(value, "Callable", value), True
    raise ConvertError(f"expected Callable, got {describe(value)}")


# ---- container converters ------------------------------------------------------


def _convert_item(conv: _Converter | None, item: Any, where: str) -> tuple[Any, bool]:
    """An element converted by ``conv`` (as Python) and whether it changed."""
    if conv is None:
        return item, False
    try:
        packed, changed = dispatch_with_protocols(conv, item)
    except ConvertError as err:
        raise ConvertError(f"{where}: {err.message}") from None
    return (_to_py_class_value(packed), True) if changed else (item, False)


def _conv_sequence(conv: _Converter, value: Any, seq_type: type) -> tuple[CAny, bool]:
    from .container import Array, List

    if not isinstance(value, (Array, List, list, tuple)):
        raise ConvertError(f"expected {seq_type.__name__}, got {describe(value)}")
    elem = conv.subs[0] if conv.subs else None
    if elem is None and isinstance(value, seq_type):
        return CAny(value), False
    items = []
    changed = False
    for i, raw in enumerate(value):
        item, item_changed = _convert_item(elem, raw, f"element [{i}]")
        changed = changed or item_changed
        items.append(item)
    if isinstance(value, seq_type) and not changed:
        return CAny(value), False
    return _pack(seq_type(items), seq_type.__name__, value), True


def _conv_array(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    from .container import Array

    return _conv_sequence(conv, value, Array)


def _conv_list(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    from .container import List

    return _conv_sequence(conv, value, List)


def _conv_tuple(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    from .container import Array, List

    if not isinstance(value, (Array, List, list, tuple)):
        raise ConvertError(f"expected tuple, got {describe(value)}")
    if conv.subs is None:  # a bare ``tuple``: any elements
        if isinstance(value, Array):
            return CAny(value), False
        return _pack(Array(value), "tuple", value), True
    n = len(conv.subs)
    if len(value) != n:
        raise ConvertError(
            f"expected tuple of length {n}, got {type(value).__name__} of length {len(value)}"
        )
    items = []
    changed = False
    for i in range(n):
        item, item_changed = _convert_item(conv.subs[i], value[i], f"element [{i}]")
        changed = changed or item_changed
        items.append(item)
    if isinstance(value, Array) and not changed:
        return CAny(value), False
    return _pack(Array(items), "tuple", value), True


def _conv_mapping(conv: _Converter, value: Any, map_type: type, ctor: str) -> tuple[CAny, bool]:
    name = map_type.__name__
    if not isinstance(value, Mapping):
        raise ConvertError(f"expected {name}, got {describe(value)}")
    key_conv, val_conv = conv.subs if conv.subs else (None, None)
    if key_conv is None and val_conv is None and isinstance(value, map_type):
        return CAny(value), False
    flat: list[Any] = []
    changed = False
    for raw_key, raw_val in value.items():
        key, key_changed = _convert_item(key_conv, raw_key, f"key {raw_key!r}")
        val, val_changed = _convert_item(val_conv, raw_val, f"value for key {raw_key!r}")
        changed = changed or key_changed or val_changed
        flat += (key, val)
    if isinstance(value, map_type) and not changed:
        return CAny(value), False
    from .registry import get_global_func

    try:
        built = get_global_func(ctor)(*flat)
    except Exception as err:
        raise ConvertError(f"expected {name}, got {describe(value)}: {err}") from None
    return _pack(built, name, value), True


def _conv_map(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    from .container import Map

    return _conv_mapping(conv, value, Map, "ffi.Map")


def _conv_dict(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    from .container import Dict

    return _conv_mapping(conv, value, Dict, "ffi.Dict")


# ---- Optional and Union ----------------------------------------------------------


def _conv_optional(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    if value is None:
        return CAny(None), False
    assert conv.subs is not None and conv.subs[0] is not None
    return dispatch_with_protocols(conv.subs[0], value)


def _conv_union(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    assert conv.subs is not None
    for alt in conv.subs:
        assert alt is not None
        try:
            return alt.dispatch(alt, value)
        except ConvertError:
            continue
    raise ConvertError(f"expected {conv.hint}, got {describe(value)}")


# ---- object types ----------------------------------------------------------------


def _registered_class(index: int) -> type | None:
    from .object import _type_info_by_index

    try:
        return _type_info_by_index(index).type_cls
    except (ValueError, KeyError):
        return None


def _has_enum_base(index: int, base_name: str) -> bool:
    """Whether the class registered for ``index`` derives from tvmffi's ``base_name`` enum."""
    base = getattr(sys.modules.get("tvmffi.dataclasses"), base_name, None)
    cls = _registered_class(index)
    return isinstance(base, type) and isinstance(cls, type) and issubclass(cls, base)


def _enum_variant(index: int, payload: Any) -> Any:
    """The enum entry whose payload is ``payload`` (the ``__ffi_enum__`` state's index map)."""
    from .object import _lookup_type_attr

    state = _lookup_type_attr(index, "__ffi_enum__")
    indexes = getattr(state, "indexes", None)
    if indexes is None:
        return None
    try:
        return indexes.get(payload)
    except TypeError:  # an unhashable payload names no entry
        return None


def _indent(message: object, prefix: str) -> str:
    return prefix + str(message).replace("\n", "\n" + prefix)


def _conv_object_marshaled(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    """Pack ``value``, pass it through the type's ``__ffi_convert__`` if any, check the type."""
    packed = _pack(value, conv.hint, value)
    fn = conv.fn_convert()
    failure: BaseException | None = None
    converted = packed
    if fn is not None:
        try:
            converted = CAny(fn(_to_py_class_value(packed)))
        except Exception as err:
            failure = err
    if failure is None and is_instance_index(converted.type_index, conv.type_index):
        return converted, True
    if failure is not None:
        raise ConvertError(
            f"expected {conv.hint}, got {describe(value)}\n"
            f"  __ffi_convert__ failed:\n{_indent(failure, '    ')}"
        )
    raise ConvertError(f"expected {conv.hint}, got {describe(value)}")


def _passthrough(conv: _Converter, value: Any) -> CAny | None:
    index = _object_type_index(value)
    if index is not None and is_instance_index(index, conv.type_index):
        return CAny(value)
    return None


def _conv_object(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    same = _passthrough(conv, value)
    if same is not None:
        return same, False
    return _conv_object_marshaled(conv, value)


def _int_enum_payload(value: Any) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return _check_int64(value)
    if isinstance(value, Integral):
        return _check_int64(_as_int(value))
    return None


def _conv_int_enum(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    same = _passthrough(conv, value)
    if same is not None:
        return same, False
    payload = _int_enum_payload(value)
    if payload is not None:
        variant = _enum_variant(conv.type_index, payload)
        if variant is not None:
            return CAny(variant), True
    return _conv_object_marshaled(conv, value)


def _conv_str_enum(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    same = _passthrough(conv, value)
    if same is not None:
        return same, False
    if isinstance(value, str):
        variant = _enum_variant(conv.type_index, value)
        if variant is not None:
            return CAny(variant), True
    return _conv_object_marshaled(conv, value)


# ---- building --------------------------------------------------------------------

_SIMPLE: dict[str, tuple[_Dispatch, str]] = {
    "int": (_conv_int, "int"),
    "float": (_conv_float, "float"),
    "bool": (_conv_bool, "bool"),
    "None": (_conv_none, "None"),
    "str": (_conv_str, "str"),
    "bytes": (_conv_bytes, "bytes"),
    "Device": (_conv_device, "Device"),
    "dtype": (_conv_dtype, "dtype"),
    "ctypes.c_void_p": (_conv_opaque_ptr, "ctypes.c_void_p"),
    "Tensor": (_conv_tensor, "Tensor"),
    "Callable": (_conv_callable, "Callable"),
}

_SEQUENCES: dict[str, tuple[_Dispatch, str]] = {
    "Array": (_conv_array, "Array"),
    "List": (_conv_list, "List"),
    "list": (_conv_list, "List"),
}

_MAPPINGS: dict[str, tuple[_Dispatch, str]] = {
    "Map": (_conv_map, "Map"),
    "Dict": (_conv_dict, "Dict"),
    "dict": (_conv_dict, "Dict"),
}


def _sub(schema: TypeSchema) -> _Converter | None:
    """The converter of a container's element schema; ``None`` for ``Any`` (taken as is)."""
    return None if schema.origin == "Any" else converter_of(schema)


def _object_converter(origin: str, index: int) -> _Converter:
    if _has_enum_base(index, "IntEnum"):
        conv = _Converter(_conv_int_enum, origin)
    elif _has_enum_base(index, "StrEnum"):
        conv = _Converter(_conv_str_enum, origin)
    else:
        conv = _Converter(_conv_object, origin)
    conv.type_index = index
    return conv


def build_converter(schema: TypeSchema) -> _Converter:
    """The converter of ``schema``; ``TypeError`` for an origin no type answers to."""
    origin = schema.origin
    args = schema.args or ()
    if origin == "Any":
        return _Converter(_conv_any, "Any")
    if origin == "Optional":
        conv = _Converter(_conv_optional, origin)
        conv.subs = (converter_of(args[0]),)
        return conv
    if origin == "Union":
        conv = _Converter(_conv_union, " | ".join(repr(a) for a in args))
        conv.subs = tuple(converter_of(a) for a in args)
        return conv
    if origin in _SIMPLE:
        return _Converter(*_SIMPLE[origin])
    if origin in _SEQUENCES:
        conv = _Converter(*_SEQUENCES[origin])
        elem = _sub(args[0]) if args else None
        conv.subs = (elem,) if elem is not None else None
        return conv
    if origin in _MAPPINGS:
        conv = _Converter(*_MAPPINGS[origin])
        if len(args) == 2:
            key, val = _sub(args[0]), _sub(args[1])
            conv.subs = (key, val) if key is not None or val is not None else None
        return conv
    if origin == "tuple":
        conv = _Converter(_conv_tuple, "tuple")
        if schema.args is not None:  # tuple[...] / tuple[()]; a bare tuple takes any elements
            conv.subs = tuple(converter_of(a) for a in schema.args)
        return conv
    if origin == "Object":
        conv = _Converter(_conv_object, "Object")
        conv.type_index = K_OBJECT
        return conv
    index = origin_type_index(schema)
    if index >= K_STATIC_OBJECT_BEGIN:
        return _object_converter(origin, index)
    raise TypeError(f"unknown TypeSchema origin: {origin!r}")


def origin_type_index(schema: TypeSchema) -> int:
    """The runtime type index ``schema.origin`` names (``-2`` structural, ``-3`` unknown)."""
    origin = schema.origin
    if origin in ("Optional", "Union"):
        return ORIGIN_INDEX_STRUCTURAL
    found = ORIGIN_TO_TYPE_INDEX.get(origin)
    if found is not None:
        return found
    index = _core._type_key_to_index(origin)
    return ORIGIN_INDEX_UNKNOWN if index is None else int(index)


_CACHE: dict[TypeSchema, _Converter] = {}


def converter_of(schema: TypeSchema) -> _Converter:
    """The converter of ``schema``, built once (equal schemas share one)."""
    conv = _CACHE.get(schema)
    if conv is None:
        conv = _CACHE[schema] = build_converter(schema)
    return conv


# ---- protocol values and the entry points -------------------------------------------


def _own_object_protocol(vtype: type) -> bool:
    """Whether ``vtype`` defines ``__tvm_ffi_object__`` itself (not ObjectConvertible's)."""
    from .object import ObjectConvertible

    hook = getattr(vtype, "__tvm_ffi_object__", None)
    return hook is not None and hook is not getattr(ObjectConvertible, "__tvm_ffi_object__", None)


def _protocol_step(value: Any) -> tuple[Any, bool]:
    """``value`` after one protocol unwrapping step, and whether a ``__tvm_ffi_value__`` stalled.

    The official order: ``__tvm_ffi_object__``, then ``__tvm_ffi_value__``, then
    ``ObjectConvertible.asobject()``.
    """
    from ._strings import Bytes, String
    from .object import Object, ObjectConvertible

    if isinstance(value, (Object, ObjectRValueRef, String, Bytes)):
        return value, False
    vtype = type(value)
    if _own_object_protocol(vtype):
        try:
            return value.__tvm_ffi_object__(), False
        except Exception:
            raise ConvertError(f"__tvm_ffi_object__() failed for {describe(value)}") from None
    if hasattr(vtype, "__tvm_ffi_value__"):
        try:
            inner = value.__tvm_ffi_value__()
        except Exception:
            # The schema mismatch is reported, not the protocol's own failure.
            return value, True
        return inner, inner is value
    if isinstance(value, ObjectConvertible):
        try:
            inner = value.asobject()
        except Exception:
            raise ConvertError(f"asobject() failed for {describe(value)}") from None
        if not isinstance(inner, Object):
            raise ConvertError(f"asobject() returned {describe(inner)} for {describe(value)}")
        return inner, False
    return value, False


def _stalled_error(conv: _Converter, value: Any) -> ConvertError:
    while conv.dispatch is _conv_optional and conv.subs and conv.subs[0] is not None:
        conv = conv.subs[0]
    if conv.hint == "Any":
        return ConvertError(f"failed to convert Any from {describe(value)}")
    return ConvertError(f"expected {conv.hint}, got {describe(value)}")


def dispatch_with_protocols(conv: _Converter, value: Any) -> tuple[CAny, bool]:
    """Unwrap protocol values (bounded), then dispatch; ``changed`` if anything was unwrapped."""
    unwrapped = False
    for _ in range(_MAX_PROTOCOL_DEPTH + 1):
        inner, stalled = _protocol_step(value)
        if stalled:
            raise _stalled_error(conv, value)
        if inner is value:
            packed, changed = conv.dispatch(conv, value)
            return packed, changed or unwrapped
        unwrapped = True
        value = inner
    raise ConvertError("infinite __tvm_ffi_value__ cycle detected")


def convert(schema: TypeSchema, value: Any, what: str) -> CAny:
    """``value`` converted to ``schema``; ``TypeError`` naming ``what`` failed and why."""
    try:
        return dispatch_with_protocols(converter_of(schema), value)[0]
    except RecursionError:
        raise TypeError(
            f"{what} failed for {schema!r}: infinite __tvm_ffi_value__ cycle detected"
        ) from None
    except ConvertError as err:
        raise TypeError(f"{what} failed for {schema!r}: {err.message}") from None


def convert_field_value(schema: TypeSchema, value: Any) -> CAny:
    """``value`` converted to ``schema`` for a typed field's setter.

    Like :meth:`TypeSchema.convert`, but the ``TypeError`` carries only the
    converter's reason (``element [1]: expected int, got None``), without the
    ``type conversion failed for ...:`` prefix: the official field setters
    report it that way, under their own ``field 'name':`` line.
    """
    try:
        return dispatch_with_protocols(converter_of(schema), value)[0]
    except RecursionError:
        raise TypeError("infinite __tvm_ffi_value__ cycle detected") from None
    except ConvertError as err:
        raise TypeError(err.message) from None


# ---- annotations -------------------------------------------------------------------


def from_annotation(annotation: Any) -> TypeSchema:
    """The schema of a Python annotation (``int``, ``list[int]``, ``X | None``, a class...)."""
    from .type_schema import TypeSchema

    simple = _simple_annotation(annotation)
    if simple is not None:
        return TypeSchema(simple)
    if isinstance(annotation, types.UnionType):
        return _union_schema(typing.get_args(annotation))
    origin = typing.get_origin(annotation)
    targs = typing.get_args(annotation)
    if origin is typing.Union:
        return _union_schema(targs)
    if origin is list:
        if len(targs) > 1:
            raise TypeError(f"list takes at most 1 type argument, got {len(targs)}")
        return TypeSchema("List", tuple(from_annotation(a) for a in targs))
    if origin is dict:
        if len(targs) not in (0, 2):
            raise TypeError(f"dict requires 0 or 2 type arguments, got {len(targs)}")
        return TypeSchema("Dict", tuple(from_annotation(a) for a in targs))
    if origin is tuple:
        return _tuple_schema(annotation, targs)
    if origin is typing.get_origin(Callable[[], None]):
        return _callable_schema(targs)
    if isinstance(origin, type) and _is_object_class(origin):
        return _object_class_schema(origin, targs)
    if isinstance(annotation, type):
        found = _class_schema(annotation)
        if found is not None:
            return found
    raise TypeError(f"Cannot convert {annotation!r} to TypeSchema")


_SIMPLE_ANNOTATIONS: dict[Any, str] = {
    type(None): "None",
    None: "None",
    typing.Any: "Any",
    bool: "bool",
    int: "int",
    float: "float",
    str: "str",
    bytes: "bytes",
    list: "List",
    dict: "Dict",
    tuple: "tuple",
    ctypes.c_void_p: "ctypes.c_void_p",
}


def _simple_annotation(annotation: Any) -> str | None:
    try:
        found = _SIMPLE_ANNOTATIONS.get(annotation)
    except TypeError:  # unhashable annotation
        return None
    if found is not None:
        return found
    from collections.abc import Callable as AbcCallable

    if annotation is AbcCallable:
        return "Callable"
    return None


def _union_schema(targs: tuple[Any, ...]) -> TypeSchema:
    from .type_schema import TypeSchema

    rest = tuple(a for a in targs if a is not type(None) and a is not None)
    alts = tuple(from_annotation(a) for a in rest)
    if len(rest) == len(targs):
        return TypeSchema("Union", alts)
    inner = alts[0] if len(alts) == 1 else TypeSchema("Union", alts)
    return TypeSchema("Optional", (inner,))


def _tuple_schema(annotation: Any, targs: tuple[Any, ...]) -> TypeSchema:
    from .type_schema import TypeSchema

    if len(targs) == 2 and targs[1] is Ellipsis:
        return TypeSchema("Array", (from_annotation(targs[0]),))
    if targs or annotation is not tuple:  # tuple[()] has no targs but is not bare
        return TypeSchema("tuple", tuple(from_annotation(a) for a in targs))
    return TypeSchema("tuple")


def _callable_schema(targs: tuple[Any, ...]) -> TypeSchema:
    from .type_schema import TypeSchema

    if len(targs) != 2:
        return TypeSchema("Callable")
    params, ret = targs
    ret_schema = from_annotation(ret)
    if isinstance(params, list):
        named = {"return": (ret_schema,), "params": tuple(from_annotation(p) for p in params)}
    else:  # Callable[..., R]
        named = {"return": (ret_schema,)}
    return TypeSchema("Callable", named_args=named)


def _is_object_class(cls: type) -> bool:
    from .object import Object

    return issubclass(cls, Object)


_GENERIC_ARITY = {"Array": 1, "List": 1, "Map": 2, "Dict": 2}


def _object_class_schema(cls: type, targs: tuple[Any, ...]) -> TypeSchema:
    """The schema of a registered object class, parameterized (``Array[int]``) or not."""
    from .type_schema import TypeSchema

    index = _class_type_index(cls)
    if index is None:
        raise TypeError(
            f"Object subclass {cls!r} is not registered; use @register_object to register it"
        )
    origin = TYPE_INDEX_TO_ORIGIN.get(index) or _type_key_of_index(index)
    if not targs:
        return TypeSchema(origin)
    arity = _GENERIC_ARITY.get(origin)
    if arity is not None and len(targs) != arity:
        raise TypeError(
            f"{origin} requires {arity} type argument{'s' if arity > 1 else ''}, got {len(targs)}"
        )
    return TypeSchema(origin, tuple(from_annotation(a) for a in targs))


def _class_type_index(cls: type) -> int | None:
    from ._core import Function
    from .object import Object, _type_cls_to_type_info
    from .tensor import Tensor

    info = _type_cls_to_type_info(cls)
    if info is not None:
        return int(info.type_index)
    for base, index in ((Object, K_OBJECT), (Function, K_FUNCTION), (Tensor, K_TENSOR)):
        if cls is base:
            return index
    return None


def _class_schema(cls: type) -> TypeSchema | None:
    from .type_schema import TypeSchema

    if _is_object_class(cls):
        return _object_class_schema(cls, ())
    if cls is _dtype_class():  # before str: dtype is a str subclass
        return TypeSchema("dtype")
    if cls is _device_class():
        return TypeSchema("Device")
    if issubclass(cls, str):  # String
        return TypeSchema("str")
    if issubclass(cls, bytes):  # Bytes
        return TypeSchema("bytes")
    if hasattr(cls, "__dlpack__"):
        return TypeSchema("Tensor")
    return None
