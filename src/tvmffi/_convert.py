"""Explicit conversion of Python values into TVM FFI values: ``convert``, ``convert_func``.

A value passed to an FFI function is converted automatically; these helpers do
the same conversion on request and return the Python view of the result
(an :class:`Array` for a list, a :class:`Function` for a callable, ...), as the
official binding's ``tvm_ffi.convert`` does.
"""

from __future__ import annotations

import ctypes
import importlib
import sys
from collections.abc import Callable
from numbers import Number
from typing import Any

from . import _core
from ._core import Function, Object, dtype
from ._strings import Bytes, String
from .container import Shape
from .error import _convert_to_ffi_error
from .object import ObjectConvertible
from .tensor import Tensor

__all__ = ["convert", "convert_func"]

# Values that convert() hands back unchanged: they are FFI values already, or
# only make sense as call arguments (a protocol the call converts itself).
_KEEP_PROTOCOLS = (
    "__cuda_stream__",
    "__tvm_ffi_opaque_ptr__",
    "__dlpack_device__",
    "__tvm_ffi_int__",
    "__tvm_ffi_float__",
)


def convert(value: Any) -> Any:
    """Convert ``value`` to the FFI value a call would receive, as a Python object.

    Useful to build a runtime container once and pass it to many calls, or to see
    what a call does with an argument.

    Parameters
    ----------
    value : object
        Any Python value.

    Returns
    -------
    object
        Lists and tuples become :class:`Array`, dicts :class:`Map`, ``str`` a
        ``String`` and ``bytes``/``bytearray`` a ``Bytes`` (``tvmffi.core``; both are
        ``str``/``bytes`` subclasses keeping their FFI object), an
        :class:`ObjectConvertible` its ``asobject()``, callables a :class:`Function`,
        DLPack producers a :class:`Tensor`, exceptions the FFI error object
        (``tvmffi.core.Error``, with the exception's traceback appended to its
        backtrace). Objects, numbers, devices, dtypes and ``ctypes.c_void_p`` come back
        as they are; any other Python object becomes an opaque FFI object holding it.

    Raises
    ------
    TypeError
        A conversion protocol of ``value`` (``__tvm_ffi_object__``, ...) fails or
        returns the wrong kind of value.

    Examples
    --------
    >>> import tvmffi
    >>> arr = tvmffi.convert([1, 2, [3]])
    >>> type(arr).__name__, len(arr), arr[2][0]
    ('Array', 3, 3)
    >>> type(tvmffi.convert({"a": 1})).__name__
    'Map'
    >>> tvmffi.convert(lambda x: x + 1)(1)
    2
    """
    native = (Object, String, Bytes, Shape, bool, Number, ctypes.c_void_p)
    if isinstance(value, native) or value is None:
        return value
    if isinstance(value, str):
        if isinstance(value, dtype):
            return value  # a DLDataType value already (dtype is a str subclass)
        official = sys.modules.get("tvm_ffi._dtype")
        if official is not None and isinstance(value, official.dtype):
            return _core._convert(value)  # the official binding's dtype: ours
        return String(value)  # as the official binding: str subclasses keeping the FFI object
    if isinstance(value, (bytes, bytearray)):
        return Bytes(value)
    if isinstance(value, ObjectConvertible):
        return value.asobject()
    if isinstance(value, BaseException):
        return _convert_to_ffi_error(value)
    cls = type(value)
    keep = any(hasattr(cls, p) for p in _KEEP_PROTOCOLS)
    if keep and not hasattr(cls, "__tvm_ffi_object__") and not hasattr(cls, "__dlpack__"):
        return value
    result = _core._convert(value)
    # A value with no FFI form came back as itself: hand out its OpaquePyObject instead.
    return _core._to_opaque(value) if result is value else result


def convert_func(pyfunc: Callable[..., Any], tensor_cls: type | None = None) -> Function:
    """Wrap the Python callable ``pyfunc`` as an FFI :class:`Function`.

    ``tensor_cls``, when given, must be a tensor class exposing the DLPack C
    exchange API (``__dlpack_c_exchange_api__``, e.g. ``torch.Tensor``): tensor
    arguments then reach ``pyfunc`` as instances of that class.
    """
    if tensor_cls is not None and not hasattr(tensor_cls, "__dlpack_c_exchange_api__"):
        raise TypeError(
            f"tensor_cls {getattr(tensor_cls, '__name__', tensor_cls)!r} does not expose "
            "__dlpack_c_exchange_api__"
        )
    if isinstance(pyfunc, Function):
        return pyfunc
    if not callable(pyfunc):
        raise TypeError(f"convert_func expects a callable, not {type(pyfunc).__name__}")
    if tensor_cls is None:
        return _core.to_function(pyfunc)
    return _core.to_function(_tensor_args_as(pyfunc, tensor_cls))


def _tensor_args_as(pyfunc: Callable[..., Any], tensor_cls: type) -> Callable[..., Any]:
    """``pyfunc`` receiving its tensor arguments as ``tensor_cls`` (through DLPack)."""
    from_dlpack = getattr(tensor_cls, "from_dlpack", None)
    if from_dlpack is None:
        module = importlib.import_module(tensor_cls.__module__.split(".")[0])
        from_dlpack = module.from_dlpack

    def call(*args: Any) -> Any:
        return pyfunc(*(from_dlpack(a) if isinstance(a, Tensor) else a for a in args))

    return call
