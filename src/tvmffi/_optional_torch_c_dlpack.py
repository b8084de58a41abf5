"""torch's DLPack C exchange API, from the ``torch-c-dlpack-ext`` package where torch lacks it.

torch >= 2.10 puts a DLPack C exchange API on ``torch.Tensor``
(``__dlpack_c_exchange_api__``, a PyCapsule named ``"dlpack_exchange_api"``);
through it tensors cross without a Python ``__dlpack__`` call and calls get
torch's allocator and stream (see ``tvmffi`` README, "Frameworks"). For older
torch, the ``torch-c-dlpack-ext`` package adds that attribute when imported.

tvmffi's C core already does this by itself, lazily: the first torch tensor
it meets without the API makes it import ``torch_c_dlpack_ext`` once. This
module is the official binding's Python face of the same step
(``load_torch_c_dlpack_extension``), for code that asks for it explicitly. It
does not compile an addon at run time as the official module does: without
``torch-c-dlpack-ext`` torch keeps the Python ``__dlpack__`` protocol, which
works, only slower.
"""

from __future__ import annotations

import ctypes
import importlib
import os
from typing import Any

__all__ = ["load_torch_c_dlpack_extension", "patch_torch_cuda_stream_protocol"]

_CAPSULE_NAME = b"dlpack_exchange_api"


def _torch_extension_device(torch_module: Any) -> str:
    """The backend torch was built for: ``"cuda"``, ``"rocm"`` or ``"cpu"``."""
    if not torch_module.cuda.is_available():
        return "cpu"
    version = torch_module.version
    if getattr(version, "cuda", None) is None and getattr(version, "hip", None) is not None:
        return "rocm"
    return "cuda"


def _create_dlpack_exchange_api_capsule(ptr_as_int: int) -> Any:
    """A PyCapsule named ``"dlpack_exchange_api"`` holding the API address ``ptr_as_int``."""
    if not isinstance(ptr_as_int, int) or isinstance(ptr_as_int, bool) or ptr_as_int <= 0:
        raise ValueError(f"expected a nonzero DLPack exchange API address, got {ptr_as_int!r}")
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return new(ctypes.c_void_p(ptr_as_int), _CAPSULE_NAME, None)


def _check_and_update_dlpack_c_exchange_api(tensor_cls: Any) -> bool:
    """Whether ``tensor_cls`` has a DLPack C exchange API.

    The legacy attribute name ``__c_dlpack_exchange_api__`` (a capsule or an
    address) is carried over to ``__dlpack_c_exchange_api__``, the name the
    conversion looks up.
    """
    if hasattr(tensor_cls, "__dlpack_c_exchange_api__"):
        return True
    legacy = getattr(tensor_cls, "__c_dlpack_exchange_api__", None)
    if legacy is None:
        return False
    if isinstance(legacy, int):
        legacy = _create_dlpack_exchange_api_capsule(legacy)
    tensor_cls.__dlpack_c_exchange_api__ = legacy
    return True


def load_torch_c_dlpack_extension() -> Any:
    """Make sure ``torch.Tensor`` has a DLPack C exchange API where one can be had.

    Returns ``None``, as the official function does whenever torch already has
    the API or no library had to be loaded. Without torch, or with neither a
    torch that has the API nor ``torch-c-dlpack-ext`` installed, nothing
    changes and tensors keep the Python ``__dlpack__`` route.
    """
    try:
        import torch
    except ImportError:
        return None
    if _check_and_update_dlpack_c_exchange_api(torch.Tensor):
        return None
    try:
        importlib.import_module("torch_c_dlpack_ext")
    except (ImportError, AttributeError):
        # Not installed, or built for another torch ABI (ctypes raises AttributeError).
        return None
    _check_and_update_dlpack_c_exchange_api(torch.Tensor)
    return None


def patch_torch_cuda_stream_protocol() -> None:
    """Give ``torch.cuda.Stream`` the ``__cuda_stream__`` protocol on torch builds without it."""
    try:
        import torch
    except ImportError:
        return
    if not torch.cuda.is_available() or hasattr(torch.cuda.Stream, "__cuda_stream__"):
        return

    def __cuda_stream__(self: Any) -> tuple[int, int]:
        """The protocol's (version, stream handle) pair."""
        return (0, int(self.cuda_stream))

    torch.cuda.Stream.__cuda_stream__ = __cuda_stream__  # type: ignore[method-assign]


# The official module runs the load when imported; so does this one, unless the
# same switch turns it off. Importing this module imports torch.
if os.environ.get("TVM_FFI_DISABLE_TORCH_C_DLPACK", "0") == "0":
    _LIB = load_torch_c_dlpack_extension()
    patch_torch_cuda_stream_protocol()
