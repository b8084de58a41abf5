"""``String`` and ``Bytes``: ``str`` / ``bytes`` that keep the FFI object they came from.

Heap strings and bytes returned by the runtime come back as these (as in the official
binding), so passing one back travels as its FFI object, without a copy. ``String`` is
the C type ``tvmffi._core.String``; ``Bytes`` lives here because ``bytes`` stores its
characters inline, which leaves a C subclass no room for the object.
"""

from __future__ import annotations

from typing import Any

from . import _core

String = _core.String


class Bytes(bytes):
    """Byte buffer that behaves like ``bytes`` and keeps its FFI ``Bytes`` object.

    ``_tvm_ffi_cached_object`` is the FFI object (``None`` for one made in Python);
    pickling gives a plain ``bytes``.
    """

    _tvm_ffi_cached_object: Any

    def __new__(cls, value: bytes | bytearray) -> Bytes:
        """A ``Bytes`` with the content of ``value`` and no FFI object yet."""
        self = super().__new__(cls, value)
        self._tvm_ffi_cached_object = None
        return self

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return (bytes, (bytes(self),))


_core._set_bytes_class(Bytes)
