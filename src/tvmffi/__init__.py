"""tvmffi: a fast, complete Python binding of the TVM FFI stable C ABI."""

from __future__ import annotations

# isort: off
from . import _lib  # must load libtvm_ffi before the extension is imported

# isort: on
# ---- registry, conversion, errors, support modules (official names; w13c) -------
from . import _core, core, dataclasses, libinfo, registry, utils
from ._convert import convert, convert_func
from ._core import Object
from .container import Array, Dict, List, Map, Shape
from .dataclasses import method
from .device import Device, cpu, cuda, metal, opencl, rocm, vulkan
from .error import Error, register_error
from .function import Function, to_function
from .module import Module, ModulePropertyMask, load_module, system_lib
from .object import (
    MISSING,
    FieldInfo,
    MethodInfo,
    TypeInfo,
    get_fields,
    get_methods,
    get_type_info,
    register_object,
    type_index,
    type_key,
)
from .registry import (
    get_global_func,
    get_global_func_metadata,
    init_ffi_api,
    list_global_func_names,
    register_global_func,
    remove_global_func,
)
from .tensor import Tensor, TensorView, from_dlpack

# ---- end w13c block ---------------------------------------------------------------

# ---- devices, dtypes, tensors, streams (official names; tvmffi aliases after) ----
# isort: split
from .device import DLDeviceType, device

# dtype, its earlier name DataType, and the official dtype literals (public, but not in
# __all__: see below).
from .dtype import (  # noqa: F401
    DataType,
    bfloat16,
    bool,
    dtype,
    float4_e2m1fn,
    float4_e2m1fn_x2,
    float4_e2m1fnx2,
    float6_e2m3fn,
    float6_e3m2fn,
    float8_e3m4,
    float8_e4m3,
    float8_e4m3b11fnuz,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float8_e8m0fnu,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .stream import (
    StreamContext,
    current_stream,
    get_raw_stream,
    use_raw_stream,
    use_stream,
    use_torch_stream,
)

# ---- end of devices, dtypes, tensors, streams ----
# isort: split
# ---- objects, strings, containers (official names; w13b) ---------------------------
from . import access_path, container
from .object import ObjectConvertible

# ---- end w13b block ---------------------------------------------------------------
# isort: split
# ---- structural equality/hash/traversal, JSON graph serialization (official names) ----
from . import serialization, structural
from .structural import (
    DefRegionKind,
    InplaceMode,
    StructuralKey,
    StructuralMutator,
    StructuralVisitor,
    VisitInterrupt,
    WalkOrder,
    WalkResult,
    get_first_structural_mismatch,
    structural_equal,
    structural_hash,
    structural_map,
    structural_mutate,
    structural_visit,
    structural_walk,
)

# ---- end of structural, serialization ----


def tvm_ffi_version() -> str:
    """Return the version ``major.minor.patch`` of the loaded TVM FFI runtime."""
    return _core.tvm_ffi_version()


def lib_path() -> str:
    """Return the path of the ``libtvm_ffi`` shared library in use."""
    return _lib.lib_path()


__all__ = [
    "MISSING",
    "Array",
    "DataType",
    "Device",
    "Dict",
    "Error",
    "FieldInfo",
    "Function",
    "List",
    "Map",
    "MethodInfo",
    "Module",
    "ModulePropertyMask",
    "Object",
    "ObjectConvertible",
    "Shape",
    "Tensor",
    "TensorView",
    "TypeInfo",
    "__version__",
    "access_path",
    "container",
    "convert",
    "convert_func",
    "core",
    "cpu",
    "cuda",
    "current_stream",
    "dataclasses",
    "from_dlpack",
    "get_fields",
    "get_global_func",
    "get_global_func_metadata",
    "get_methods",
    "get_type_info",
    "init_ffi_api",
    "lib_path",
    "libinfo",
    "list_global_func_names",
    "load_module",
    "metal",
    "method",
    "opencl",
    "register_error",
    "register_global_func",
    "register_object",
    "registry",
    "remove_global_func",
    "rocm",
    "system_lib",
    "to_function",
    "tvm_ffi_version",
    "type_index",
    "type_key",
    "use_stream",
    "utils",
    "vulkan",
]

# devices, dtypes, tensors, streams (official names; like the official __all__, it leaves
# out the dtype literals, so `import *` never shadows the builtin `bool`)
__all__ += [
    "DLDeviceType",
    "StreamContext",
    "device",
    "dtype",
    "get_raw_stream",
    "use_raw_stream",
    "use_torch_stream",
]

# structural equality/hash/traversal, JSON graph serialization
__all__ += ["host"]

__all__ += [
    "DefRegionKind",
    "InplaceMode",
    "StructuralKey",
    "StructuralMutator",
    "StructuralVisitor",
    "VisitInterrupt",
    "WalkOrder",
    "WalkResult",
    "get_first_structural_mismatch",
    "serialization",
    "structural",
    "structural_equal",
    "structural_hash",
    "structural_map",
    "structural_mutate",
    "structural_visit",
    "structural_walk",
]

# Registers ffi.Module.load_from_bytes.tvmffi_dso (module libraries embedded in another).
import builtins as _builtins  # noqa: E402  (`bool` is the dtype literal here)
import os as _os  # noqa: E402
import sys as _sys  # noqa: E402

from . import _embedded_loader, _pickle_hooks  # noqa: E402, F401  (_pickle_hooks: pickling)


def host(*, subprocesses: _builtins.bool = True) -> None:
    """Answer every ``import tvm_ffi`` in this process with tvmffi (docs/hosting.md).

    See :func:`tvmffi.hosting.host`, which this calls (imported on first use, so that
    ``import tvmffi`` stays light).
    """
    from .hosting import host as _host  # import-time: see the docstring

    _host(subprocesses=subprocesses)


# Modules the official ``import tvm_ffi`` leaves as attributes, imported here on first
# use so that ``import tvmffi`` stays light (clients read ``tvm_ffi._dtype.DataTypeCode``
# or ``tvm_ffi._ffi_api.X`` without importing the submodule).
_LAZY_MODULES = frozenset(
    {
        "codegen",
        "cpp",
        "pickling",
        "utils",
        "_dtype",
        "_ffi_api",
        "_optional_torch_c_dlpack",
        "_tensor",
        "_version",
    }
)
# Plain attributes of the official package answered on first use (see __getattr__).
_LAZY_VALUES = frozenset({"__version__", "__version_tuple__", "__tvmffi_version__", "LIB"})


def _is_config_mode() -> _builtins.bool:
    """Whether this process is the config command line (``python -m tvmffi.config``).

    The official package asks this to skip loading the runtime for ``tvm-ffi-config``;
    tvmffi's config module never needs the runtime, so this only reports.
    """
    main = _sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if getattr(spec, "name", None) in ("tvmffi.config", "tvm_ffi.config"):
        return True
    return _os.path.basename(_sys.argv[0] if _sys.argv else "").startswith("tvm-ffi-config")


def __getattr__(name: str) -> object:
    """Import the submodules in ``_LAZY_MODULES`` on first use: the import stays light.

    ``__version__`` is tvmffi's version (``pyproject.toml``'s, from the installed
    distribution's metadata); hosted (the module also answers ``tvm_ffi``), it is the
    installed ``apache-tvm-ffi`` version, the runtime tvmffi loads, which a client
    compares with the runtime it was built for. ``__tvmffi_version__`` is always
    tvmffi's own (see ``tvmffi._version``).
    ``LIB`` is the ``ctypes.CDLL`` of that runtime (``libtvm_ffi``).
    """
    if name in _LAZY_MODULES:
        import importlib  # import-time: the lazy submodules above, on first use

        return importlib.import_module("." + name, __name__)
    if name in ("__version__", "__version_tuple__", "__tvmffi_version__"):
        # import-time: tvm_ffi._version is a lazy submodule officially (test_attribute_parity)
        from . import _version

        if name == "__tvmffi_version__":
            return _version.tvmffi_version()
        return getattr(_version, name)
    if name == "LIB":
        return _lib.load_library(_lib.lib_path())
    raise AttributeError(f"module 'tvmffi' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names and those answered on first use (``_dtype``, ``cpp``, ...)."""
    return sorted(set(globals()) | _LAZY_MODULES | _LAZY_VALUES)
