"""Tensors: ``Tensor``, ``TensorView`` and ``from_dlpack``.

``Tensor`` is the runtime's reference-counted tensor object (an ``Object``); it
is a DLPack producer, so ``numpy.from_dlpack(t)`` and ``torch.from_dlpack(t)``
take it back without copying. ``from_dlpack(obj)`` imports any DLPack producer
zero-copy; the resulting tensor keeps its source alive.

``TensorView(array)`` is passed to functions as ``DLTensor*``; it holds the
Tensor made for ``array``, so it is valid as long as it lives.

Any DLPack producer passed to a ``Function`` (NumPy, PyTorch, CuPy, JAX arrays,
``tvm_ffi.Tensor``) becomes a ``Tensor`` automatically, without copying.

A ``DLTensor*`` that reaches Python (a result, a callback's argument) arrives
as a ``Tensor``: a live ``TensorView``'s own (keeping its source alive), or,
for one lent to a callback, a Tensor that expires when the callback returns
(its accessors then raise ``ValueError``). See ``docs/tensors.md``.

Layouts: non-contiguous, zero-size and 0-d arrays pass unchanged. Negative
strides are passed as they are too: DLPack counts strides as signed element
counts, so ``arr[::-1]`` is expressible and ``numpy.from_dlpack`` takes it
back; note that PyTorch 2.x cannot import negative strides (it aborts the
process, with NumPy's own export as well), so do not hand such tensors to
``torch.from_dlpack``. NumPy arrays whose byte strides are not multiples of the
itemsize, with non-native byte order, or of sub-byte dtypes stored one per
byte (ml_dtypes ``int4``) cannot be expressed in DLPack and raise
``ValueError`` naming the argument.

Read-only memory (a non-writable NumPy array, a versioned DLPack tensor
flagged ``DLPACK_FLAG_BITMASK_READ_ONLY``) raises ``BufferError`` on every
import route, as in the official binding, since a function may write to any
tensor it gets. ``from_dlpack(x, allow_read_only=True)`` (also ``Tensor`` and
``TensorView``) opts in; the Tensor so made passes everywhere and its
versioned ``__dlpack__`` export carries the flag, so ``numpy.from_dlpack``
returns a non-writable array. PyTorch has no read-only tensors and ignores the
flag.
"""

from __future__ import annotations

from . import _core
from ._core import Tensor, TensorView

__all__ = ["Tensor", "TensorView", "from_dlpack"]


# The C function itself: its docstring carries the signature (inspect.signature
# works) and from_dlpack(x) reaches C without keyword parsing.
from_dlpack = _core.from_dlpack
