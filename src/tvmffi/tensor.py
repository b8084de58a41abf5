"""Tensors: ``Tensor``, ``TensorView`` and ``from_dlpack``.

``Tensor`` is the runtime's reference-counted tensor object (an ``Object``); it
is a DLPack producer, so ``numpy.from_dlpack(t)`` and ``torch.from_dlpack(t)``
take it back without copying. ``from_dlpack(obj)`` imports any DLPack producer
zero-copy; the resulting tensor keeps its source alive.

``TensorView(array)`` is a borrowed view passed to functions as ``DLTensor*``:
the caller promises that ``array`` outlives every use of the view.

Any DLPack producer passed to a ``Function`` (NumPy, PyTorch, CuPy, JAX arrays,
``tvm_ffi.Tensor``) becomes a ``Tensor`` automatically, without copying.

Negative strides are passed as they are: DLPack counts strides as signed
element counts, so ``arr[::-1]`` is expressible. Consumers that cannot
represent them (PyTorch) refuse such tensors on their side. NumPy arrays whose
byte strides are not multiples of the itemsize, or with non-native byte order,
cannot be expressed in DLPack and raise ``ValueError``.
"""

from __future__ import annotations

from typing import Any

from . import _core
from ._core import Tensor, TensorView

__all__ = ["Tensor", "TensorView", "from_dlpack"]


def from_dlpack(
    obj: Any, *, require_alignment: int = 0, require_contiguous: bool = False
) -> Tensor:
    """Import ``obj`` (a DLPack producer or capsule) as a :class:`Tensor` without copying.

    The versioned DLPack protocol is used when the producer supports it, the
    legacy one otherwise. ``require_alignment`` (bytes) and
    ``require_contiguous`` make the runtime reject tensors that do not satisfy
    them.
    """
    return _core.from_dlpack(
        obj, require_alignment=require_alignment, require_contiguous=require_contiguous
    )
