"""torch's DLPack C exchange API where torch lacks it: the addon package, or an addon built here.

torch >= 2.10 puts a DLPack C exchange API on ``torch.Tensor``
(``__dlpack_c_exchange_api__``, a PyCapsule named ``"dlpack_exchange_api"``);
through it tensors cross without a Python ``__dlpack__`` call and calls get
torch's allocator and stream (see docs/tensors.md). For an older torch the
official binding gets the same API in two ways, and so does tvmffi:

1. the ``torch-c-dlpack-ext`` package, which adds the attribute when imported;
2. otherwise an addon compiled once against the installed torch and kept in
   the tvm-ffi cache (``$TVM_FFI_CACHE_DIR``, default ``~/.cache/tvm-ffi``),
   under the official binding's file name, so either binding reuses the
   other's build. The build is an offline step that does not depend on the
   binding: it runs the official package's own build script
   (``tvm_ffi/utils/_build_optional_torch_c_dlpack.py``, from the
   apache-tvm-ffi dependency) in a subprocess.

tvmffi's C core takes this step by itself, lazily: the first torch tensor it
meets without the API imports this module, once. Importing it runs the step,
as importing the official module does, unless ``TVM_FFI_DISABLE_TORCH_C_DLPACK``
is set to something other than ``0``. Where neither way works torch keeps the
Python ``__dlpack__`` protocol, which works, only slower (a warning says why).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import importlib
import os
import subprocess
import sys
import warnings
from pathlib import Path
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

    Returns the addon library (a ``ctypes.CDLL``) when one built in the cache
    supplied the API, else ``None``, as the official function does: torch
    already has the API, ``torch-c-dlpack-ext`` gave it, or nothing could
    (no torch, or the build failed: a warning says why, and tensors keep the
    Python ``__dlpack__`` route).
    """
    try:
        import torch
    except ImportError:
        return None
    if _check_and_update_dlpack_c_exchange_api(torch.Tensor):
        return None
    # Not installed, or built for another torch ABI (ctypes raises AttributeError).
    with contextlib.suppress(ImportError, AttributeError):
        importlib.import_module("torch_c_dlpack_ext")
    if _check_and_update_dlpack_c_exchange_api(torch.Tensor):
        return None
    try:
        return _load_cached_addon(torch)
    except Exception as err:  # a failed build leaves torch on its Python protocol
        warnings.warn(
            f"torch {torch.__version__} has no DLPack C exchange API and building one failed "
            f"({err}); torch tensors take the slower Python __dlpack__ route. Installing "
            "torch-c-dlpack-ext (pip install torch-c-dlpack-ext) avoids the build.",
            RuntimeWarning,
            stacklevel=2,
        )
        return None


def addon_path(torch_module: Any) -> Path:
    """Where the addon for this torch build lives in the cache.

    The name is the official binding's (``libtorch_c_dlpack_addon_torch<major><minor>-
    <device>-<tag>``), the tag a digest of torch's full version and C++ ABI flag, so a
    build for another torch is never loaded and either binding finds the other's build.
    """
    major, minor = torch_module.__version__.split(".")[:2]
    device = _torch_extension_device(torch_module)
    identity = f"{torch_module.__version__}|cxx11abi={int(torch_module.compiled_with_cxx11_abi())}"
    tag = hashlib.sha256(identity.encode()).hexdigest()[:8]
    suffix = ".dll" if sys.platform.startswith("win") else ".so"
    cache = Path(os.environ.get("TVM_FFI_CACHE_DIR", "~/.cache/tvm-ffi")).expanduser()
    return cache / f"libtorch_c_dlpack_addon_torch{major}{minor}-{device}-{tag}{suffix}"


def _build_addon(torch_module: Any, path: Path) -> None:
    """Compile the addon into ``path`` with the official build script (a subprocess)."""
    from . import _lib

    script = Path(_lib._package_dir()) / "utils" / "_build_optional_torch_c_dlpack.py"
    if not script.is_file():
        raise RuntimeError(f"apache-tvm-ffi has no addon build script ({script})")
    args = [sys.executable, str(script), "--output-dir", str(path.parent), "--libname", path.name]
    device = _torch_extension_device(torch_module)
    if device != "cpu":
        args.append(f"--build-with-{device}")
    # The script runs the official package as it is: not hosted on tvmffi.
    env = {k: v for k, v in os.environ.items() if k != "TVMFFI_HOST"}
    env["TVM_FFI_DISABLE_TORCH_C_DLPACK"] = "1"
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not path.exists():
        detail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise RuntimeError(f"the addon build exited with {done.returncode}: " + " | ".join(detail))


def _load_cached_addon(torch_module: Any) -> Any:
    """The addon for this torch (built first if the cache lacks it), its API set on torch.Tensor."""
    from ._build.private import check_private, make_private_dir

    path = addon_path(torch_module)
    make_private_dir(path.parent)  # the cache: a library found there is loaded as is
    if not path.exists():
        _build_addon(torch_module, path)
    check_private(path, "library")
    lib = ctypes.CDLL(str(path))
    api = lib.TorchDLPackExchangeAPIPtr
    api.restype = ctypes.c_uint64
    api.argtypes = []
    torch_module.Tensor.__dlpack_c_exchange_api__ = _create_dlpack_exchange_api_capsule(api())
    return lib


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
