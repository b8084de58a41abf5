"""Devices: ``device("cuda", 1)``, ``device("cuda:1")``, ``Device(2, 1)``, ``DLDeviceType``."""

from __future__ import annotations

from enum import IntEnum

from . import _core
from ._core import Device

__all__ = ["DLDeviceType", "Device", "cpu", "cuda", "device", "metal", "opencl", "rocm", "vulkan"]


class DLDeviceType(IntEnum):
    """DLPack's device type codes, as returned by :meth:`Device.dlpack_device_type`."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17
    kDLTrn = 18


def device(device_type: str | int, index: int | None = None) -> Device:
    """Return a :class:`Device`.

    Parameters
    ----------
    device_type : str or int
        A device name (``"cpu"``, ``"cuda"``, ``"rocm"``, ``"metal"``, ``"vulkan"``,
        ...), optionally with an index (``"cuda:1"``), or a :class:`DLDeviceType`
        code.
    index : int, optional
        The device index (default 0; an index in the name wins).

    Returns
    -------
    Device
        The device: an instance of the class registered with ``core._set_class_device``
        (TVM's ``tvm.runtime.Device`` when TVM is loaded), else :class:`Device`.

    Raises
    ------
    ValueError
        An unknown name (``Unknown device: <name>``) or type code, or a negative
        index.

    Examples
    --------
    >>> import tvmffi
    >>> d = tvmffi.device("cuda:1")
    >>> d.type, d.index
    ('cuda', 1)
    >>> tvmffi.device("cpu") == tvmffi.device(tvmffi.DLDeviceType.kDLCPU, 0)
    True
    """
    cls: type[Device] = _core._device_class()
    return cls(device_type, index)


def cpu(index: int = 0) -> Device:
    """Return the CPU device ``cpu:index``."""
    return device("cpu", index)


def cuda(index: int = 0) -> Device:
    """Return the CUDA device ``cuda:index``."""
    return device("cuda", index)


def opencl(index: int = 0) -> Device:
    """Return the OpenCL device ``opencl:index``."""
    return device("opencl", index)


def vulkan(index: int = 0) -> Device:
    """Return the Vulkan device ``vulkan:index``."""
    return device("vulkan", index)


def metal(index: int = 0) -> Device:
    """Return the Metal device ``metal:index``."""
    return device("metal", index)


def rocm(index: int = 0) -> Device:
    """Return the ROCm device ``rocm:index``."""
    return device("rocm", index)
