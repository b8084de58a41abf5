"""Pickling tvmffi values: every value travels between processes.

Tensors, functions, modules and objects pickle (and ``copy.deepcopy``) with the
standard :mod:`pickle` module; see ``docs/scaling.md``. CPU tensors go by their
bytes, out of band with protocol 5 (``buffer_callback``) and without a copy.
A tensor on another device is refused, unless pickled inside
:func:`device_tensors_through_host`.
"""

from __future__ import annotations

from ._pickle import device_tensors_through_host

__all__ = ["device_tensors_through_host"]
