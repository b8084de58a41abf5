"""``tvm_ffi._tensor``: the module the official binding defines its tensor names in.

Clients import from it directly; every name is tvmffi's own (:mod:`tvmffi.tensor`,
:mod:`tvmffi.device`, :mod:`tvmffi.container`).
"""

from __future__ import annotations

from .container import Shape  # noqa: F401  (an attribute of the official module, not in its __all__)
from .device import Device, DLDeviceType, device
from .tensor import Tensor, from_dlpack

__all__ = ["DLDeviceType", "Device", "Tensor", "device", "from_dlpack"]
