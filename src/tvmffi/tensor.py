"""Tensors: ``Tensor``, ``TensorView`` and ``from_dlpack``.

``Tensor`` is the runtime's reference-counted tensor object (an ``Object``); it
is a DLPack producer, so ``numpy.from_dlpack(t)`` and ``torch.from_dlpack(t)``
take it back without copying. ``from_dlpack(obj)`` imports any DLPack producer
zero-copy; the resulting tensor keeps its source alive.

``TensorView(array)`` is a borrowed view passed to functions as ``DLTensor*``:
the caller promises that ``array`` outlives every use of the view.

Any DLPack producer passed to a ``Function`` (NumPy, PyTorch, CuPy, JAX arrays,
``tvm_ffi.Tensor``) becomes a ``Tensor`` automatically, without copying.

A ``TensorView`` that is *kept* rather than passed (a callback's return value,
a field assignment, an element of a list, tuple or dict argument, which becomes
an ``Array`` or ``Map``) becomes a ``Tensor`` that keeps the view alive, since a
raw ``DLTensor*`` cannot own anything.

Layouts: non-contiguous, zero-size and 0-d arrays pass unchanged. Negative
strides are passed as they are too: DLPack counts strides as signed element
counts, so ``arr[::-1]`` is expressible and ``numpy.from_dlpack`` takes it
back; note that PyTorch 2.x cannot import negative strides (it aborts the
process, with NumPy's own export as well), so do not hand such tensors to
``torch.from_dlpack``. NumPy arrays whose byte strides are not multiples of the
itemsize, with non-native byte order, or of sub-byte dtypes stored one per
byte (ml_dtypes ``int4``) cannot be expressed in DLPack and raise
``ValueError`` naming the argument.

Read-only data stays read-only: a non-writable NumPy array, or a versioned
DLPack producer's tensor flagged ``DLPACK_FLAG_BITMASK_READ_ONLY``, gives a
``Tensor`` (also after passing through FFI calls) whose versioned
``__dlpack__`` export carries the flag, so ``numpy.from_dlpack`` returns a
non-writable array. Legacy (unversioned) DLPack has no flags, and PyTorch has
no read-only tensors: ``torch.from_dlpack`` imports such data as writable, as
it does NumPy's own read-only export; do not write through it. Tensors made by
the runtime or another binding carry no flag.
"""

from __future__ import annotations

from . import _core
from ._core import Tensor, TensorView

__all__ = ["Tensor", "TensorView", "from_dlpack"]


# The C function itself: its docstring carries the signature (inspect.signature
# works) and from_dlpack(x) reaches C without keyword parsing.
from_dlpack = _core.from_dlpack
