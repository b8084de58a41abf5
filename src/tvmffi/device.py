"""Devices: ``Device("cuda", 1)``, ``Device("cuda:1")``, ``Device(2, 1)``."""

from __future__ import annotations

from ._core import Device

__all__ = ["Device", "cpu", "cuda", "metal", "opencl", "rocm", "vulkan"]


def cpu(index: int = 0) -> Device:
    """Return the CPU device ``cpu:index``."""
    return Device("cpu", index)


def cuda(index: int = 0) -> Device:
    """Return the CUDA device ``cuda:index``."""
    return Device("cuda", index)


def opencl(index: int = 0) -> Device:
    """Return the OpenCL device ``opencl:index``."""
    return Device("opencl", index)


def vulkan(index: int = 0) -> Device:
    """Return the Vulkan device ``vulkan:index``."""
    return Device("vulkan", index)


def metal(index: int = 0) -> Device:
    """Return the Metal device ``metal:index``."""
    return Device("metal", index)


def rocm(index: int = 0) -> Device:
    """Return the ROCm device ``rocm:index``."""
    return Device("rocm", index)
