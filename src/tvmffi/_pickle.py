"""Pickle (and ``copy.deepcopy``) of the values the JSON graph cannot carry.

``Object.__reduce__`` (:func:`tvmffi._pickle_hooks._reduce_hook`) asks :func:`reduce`
first; what it answers ``None`` for goes through the runtime's JSON graph, and
an object whose graph holds a tensor, a function or a module (which the JSON
graph refuses) is sent as its reflected fields by :func:`reduce_graph`, each
field pickled in turn. How each kind travels:

- a CPU :class:`~tvmffi.Tensor`: the bytes its elements span, with dtype,
  shape, strides and byte offset. With protocol 5 the bytes are a
  :class:`pickle.PickleBuffer` over the tensor's own memory, so a
  ``buffer_callback`` receives them out of band without a copy; a writable
  buffer handed back to ``pickle.loads(..., buffers=...)`` becomes the new
  tensor's memory without a copy (a read-only one is copied once).
  A tensor on another device is refused unless pickled inside
  :func:`tvmffi.pickling.device_tensors_through_host`;
- a :class:`~tvmffi.Function`: a global function by its name (looked up, and
  checked to exist, when loaded); a function of a module (``tvmffi.cpp``,
  ``tvmffi.codegen``, ``load_module``) as its module and its name (with its
  codegen signature); a Python callback as its callable;
- a :class:`~tvmffi.Module`: a library file by its bytes (those this process
  loaded: a file rebuilt or replaced since is refused) and their SHA-256,
  written on the receiving side to ``<cache>/pickled/<digest>/``, every level
  private to this user (else ``UnsafeCacheError``, as the build cache), and
  loaded from there (or the module this process already runs from the original
  path, when that is the same file); the system library by its prefix.

Every ``_rebuild_*`` function below is what a pickle stream calls to load a
value, so each checks its arguments: a malformed payload raises ``ValueError``
or ``TypeError``, never makes a tensor that reaches outside its buffer.
(Pickle streams themselves can call any importable function: load only
pickles you trust, as with any pickle.)
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import ctypes
import hashlib
import os
import pickle
import re
import tempfile
from collections.abc import Iterator
from typing import Any

from . import _core, _function_doc, container
from ._build.private import check_private, make_private_dir, strip_shared_write
from ._core import Function, Object, Tensor
from .codegen._library import _BUILT, signature_of
from .codegen._spec import Signature
from .function import _cached_global_func
from .module import (
    Module,
    _file_identity,
    _loaded_from,
    _loaded_identity,
    _source_of,
    load_module,
    system_lib,
)
from .object import get_fields
from .registry import list_global_func_names
from .serialization import from_json_graph_str
from .tensor import from_dlpack

__all__ = ["device_tensors_through_host", "reduce", "reduce_graph"]

_THROUGH_HOST: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "tvmffi_pickle_through_host", default=False
)


@contextlib.contextmanager
def device_tensors_through_host() -> Iterator[None]:
    """Within this block, pickling a non-CPU tensor copies it to host memory.

    The pickle then holds the host bytes and the tensor's device; loading it
    copies the bytes back to that device (through PyTorch, which the loading
    process must have, with that device).
    """
    token = _THROUGH_HOST.set(True)
    try:
        yield
    finally:
        _THROUGH_HOST.reset(token)


def reduce(obj: Object) -> tuple[Any, ...] | None:
    """``__reduce__`` of a tensor, function or module; ``None`` for other objects."""
    if isinstance(obj, Tensor):
        return _reduce_tensor(obj)
    if isinstance(obj, Function):
        return _reduce_function(obj)

    if isinstance(obj, Module):
        return _reduce_module(obj)
    return None


# ---- tensors -----------------------------------------------------------------
_KDLCPU = 1


def _itemsize(t: Tensor) -> int:
    dt = t.dtype
    bits = dt.bits * dt.lanes
    if bits % 8:
        raise TypeError(
            f"cannot pickle a tensor of dtype {dt}: its elements are not whole bytes "
            "(sub-byte dtypes have no portable layout)"
        )
    return bits // 8


def _element_span(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, int]:
    """The lowest and one past the highest element offset the tensor addresses."""
    if any(n == 0 for n in shape):
        return 0, 0
    lo = sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s > 0)
    return lo, hi + 1


class _TensorBytes:
    """The bytes a CPU tensor's elements span; pickles as a buffer over them.

    With protocol 5 it is a :class:`pickle.PickleBuffer` over the tensor's own
    memory (out of band when the pickler has a ``buffer_callback``, in band as
    one ``bytearray`` otherwise); with older protocols a ``bytes`` copy.
    """

    __slots__ = ("nbytes", "start", "tensor")

    def __init__(self, tensor: Tensor, start: int, nbytes: int) -> None:
        self.tensor = tensor
        self.start = start
        self.nbytes = nbytes

    def view(self) -> memoryview:
        """A byte view of the memory; it keeps the tensor alive. Read-only when the
        tensor is: a loader handed this buffer (out of band) then copies it instead of
        making a writable tensor over memory nobody may write."""
        if self.nbytes == 0:
            return memoryview(bytearray())
        raw = (ctypes.c_char * self.nbytes).from_address(self.start)
        raw._tvmffi_tensor = self.tensor  # type: ignore[attr-defined]  # kept alive by the view
        view = memoryview(raw).cast("B")
        return view.toreadonly() if _core._tensor_read_only(self.tensor) else view

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        if isinstance(protocol, int) and protocol >= 5:
            return (_buffer, (pickle.PickleBuffer(self.view()),))
        return (_buffer, (self.view().tobytes(),))

    def __deepcopy__(self, memo: Any) -> bytearray:
        return bytearray(self.view())


def _buffer(data: Any) -> Any:
    """Pickle's constructor of a tensor's bytes: the buffer itself."""
    return data


def _reduce_tensor(t: Tensor) -> tuple[Any, ...]:
    dev = t.device
    if dev.dlpack_device_type() != _KDLCPU:
        if not _THROUGH_HOST.get():
            raise TypeError(
                f"cannot pickle a tensor on {dev}: only CPU tensors travel by pickle. "
                "Pickle inside `with tvmffi.pickling.device_tensors_through_host():` to copy "
                "it through host memory (the loading process copies it back to the device)"
            )
        return (_rebuild_device_tensor, (_host_copy(t), dev.type, dev.index))
    itemsize = _itemsize(t)
    shape, strides = tuple(t.shape), tuple(t.strides)
    lo, hi = _element_span(shape, strides)
    nbytes = (hi - lo) * itemsize
    dt = t.dtype
    return (
        _rebuild_tensor,
        (
            _TensorBytes(t, t.data_ptr() + lo * itemsize, nbytes),
            (dt.type_code, dt.bits, dt.lanes),
            shape,
            strides,
            -lo * itemsize,
        ),
    )


def _address(buf: Any) -> int:
    return ctypes.addressof(ctypes.c_char.from_buffer(buf)) if len(buf) else 0


def _writable(data: Any, align: int) -> memoryview:
    """``data`` as a writable contiguous byte view aligned to ``align``; copied if need be."""
    try:
        view = memoryview(data)
    except TypeError:
        raise TypeError(
            f"a pickled tensor's data must be a bytes-like buffer, not {type(data).__name__}"
        ) from None
    if view.ndim > 1 or not view.c_contiguous:
        view = memoryview(view.tobytes())
    view = view.cast("B")
    if not view.readonly and _address(view) % align == 0:
        return view  # zero-copy: the tensor lives in the buffer the loader gave
    raw = bytearray(len(view) + align)
    start = -_address(raw) % align if len(view) else 0
    out = memoryview(raw)[start : start + len(view)]
    out[:] = view
    return out


def _rebuild_tensor(data: Any, dtype: Any, shape: Any, strides: Any, byte_offset: Any) -> Tensor:
    """A CPU tensor over ``data`` (pickle's constructor; every number checked in C)."""
    if isinstance(data, _TensorBytes):  # copy.copy() passes the reduction's parts as they are
        raise TypeError(
            "copy.copy() of a Tensor is not supported: use copy.deepcopy() for a new tensor "
            "with a copy of the data, or the Tensor itself to share its memory"
        )
    if not (isinstance(dtype, tuple) and len(dtype) == 3 and all(type(x) is int for x in dtype)):
        raise ValueError(f"a pickled tensor's dtype must be (code, bits, lanes), got {dtype!r}")
    if not isinstance(shape, tuple) or not isinstance(strides, tuple):
        raise ValueError("a pickled tensor's shape and strides must be tuples")
    if type(byte_offset) is not int:
        raise ValueError("a pickled tensor's byte offset must be an int")
    _, bits, lanes = dtype
    itemsize = max(1, (bits * lanes + 7) // 8)
    align = min(itemsize & -itemsize, 16)  # natural alignment, as an allocator gives it
    view = _writable(data, align)
    tensor: Tensor = _core._tensor_from_buffer(view, dtype, shape, strides, byte_offset)
    return tensor


def _host_copy(t: Tensor) -> Tensor:
    """A CPU copy of a device tensor, through PyTorch."""
    try:
        import torch.utils.dlpack
    except ImportError:
        raise TypeError(
            f"cannot copy a tensor on {t.device} to the host: that needs PyTorch"
        ) from None

    host = torch.utils.dlpack.from_dlpack(t).to("cpu")
    return from_dlpack(host)


def _rebuild_device_tensor(host: Any, device_type: Any, index: Any) -> Tensor:
    """A tensor pickled through the host, copied back to its device (through PyTorch)."""
    if not isinstance(host, Tensor) or not isinstance(device_type, str) or type(index) is not int:
        raise ValueError("malformed pickled device tensor")
    try:
        import torch.utils.dlpack
    except ImportError:
        raise RuntimeError(
            f"loading a tensor pickled from {device_type}:{index} needs PyTorch"
        ) from None

    try:
        on_device = torch.utils.dlpack.from_dlpack(host).to(torch.device(device_type, index))
    except (RuntimeError, AssertionError, ValueError, TypeError) as err:
        raise RuntimeError(
            f"cannot copy a tensor pickled from {device_type}:{index} back to that device: {err}"
        ) from None
    return from_dlpack(on_device)


# ---- functions ---------------------------------------------------------------
def _reduce_function(f: Function) -> tuple[Any, ...]:
    """A module's function, else a global one (by name, even when Python registered
    it), else a Python callback (by its callable)."""

    origin = _module_origin(f)
    if origin is not None:
        return (_rebuild_module_function, (origin.module[0], origin.name, signature_of(f)))
    name = _global_name(f)
    if name is not None:
        return (_rebuild_global, (name,))
    callable_ = _core._callback_callable(f)
    if callable_ is not None:
        return (_rebuild_callback, (callable_,))
    raise TypeError(
        "cannot pickle this Function: it is not a global function, a function looked up "
        "in a module (mod.name, mod['name'], tvmffi.cpp, tvmffi.codegen), nor a Python callback"
    )


def _module_origin(f: Function) -> Any:
    """Where a module function came from (``_function_doc``'s note), found by handle:
    ``f`` may be another wrapper of it (an item of an Array, a call's result)."""

    entry = _function_doc._MODULE_FUNCS.get(id(f))
    if entry is not None and entry[0]() is f:
        return entry[1] if entry[1].module is not None else None
    handle = f.__chandle__()
    for ref, origin in list(_function_doc._MODULE_FUNCS.values()):
        noted = ref()  # alive: so its handle is this function's only while f is it
        if noted is not None and noted.__chandle__() == handle and origin.module is not None:
            return origin
    return None


# The registry's reverse index (handle -> name), rebuilt on a miss: a name may
# have been removed and another registered since (the count alone can't tell).
_GLOBAL_NAMES: dict[int, str] = {}


def _global_name(f: Function) -> str | None:
    handle = f.__chandle__()
    for attempt in range(2):
        name = _GLOBAL_NAMES.get(handle)
        if name is not None:
            current = _core.get_global_func(name, True)
            if current is not None and current.__chandle__() == handle:
                return name
        if attempt == 0:
            _GLOBAL_NAMES.clear()
            for n in list_global_func_names():
                g = _core.get_global_func(n, True)
                if g is not None:
                    _GLOBAL_NAMES.setdefault(g.__chandle__(), n)
    return None


def _rebuild_callback(fn: Any) -> Function:
    if not callable(fn):
        raise TypeError(f"a pickled callback must be callable, not {type(fn).__name__}")
    return _core.to_function(fn)


def _rebuild_global(name: Any) -> Function:
    if not isinstance(name, str):
        raise TypeError("a pickled global function's name must be a str")
    func = _core.get_global_func(name, True)
    if func is None:
        raise ValueError(
            f"cannot unpickle the global function {name!r}: no function of that name is "
            "registered in this process"
        )
    return func


def _rebuild_module_function(module: Any, name: Any, sig: Any) -> Function:

    if not isinstance(module, Module) or not isinstance(name, str):
        raise TypeError("a pickled module function is a Module and a function name")
    if sig is not None and not isinstance(sig, Signature):
        raise TypeError("a pickled module function's signature must be a codegen Signature")
    func = module.get_function(name)  # AttributeError when the module lacks it
    if sig is not None:
        _BUILT[func] = sig  # the same library: its wrapper checks that signature
    return func


# ---- modules -----------------------------------------------------------------
_DIGEST = re.compile(r"[0-9a-f]{64}\Z")
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,200}\Z")


def _reduce_module(mod: Any) -> tuple[Any, ...]:

    source = _source_of(mod)
    if source is None:
        raise TypeError(
            "cannot pickle this Module: only modules loaded by this process from a file "
            "(load_module, tvmffi.cpp, tvmffi.codegen) or the system library travel by pickle"
        )
    kind, value = source
    if kind == "system":
        return (_rebuild_system_lib, (value,))
    # The bytes this process runs, or a refusal: a file rebuilt or replaced since it was
    # loaded would make the receiver run other code than the sender.
    loaded = _loaded_identity(mod)
    with open(value, "rb") as f:
        now = _file_identity(os.fstat(f.fileno()))
        if loaded is not None and now != loaded:
            raise RuntimeError(
                f"cannot pickle this Module: its library {value!r} changed since it was loaded "
                "(rebuilt or replaced), so its bytes are not the code this process runs. "
                "Load the new file (load_module) and pickle that module"
            )
        data = f.read()
    digest = hashlib.sha256(data).hexdigest()
    return (_rebuild_library, (os.path.basename(value), data, digest, value))


def _rebuild_system_lib(prefix: Any) -> Any:

    if not isinstance(prefix, str):
        raise TypeError("a pickled system library's prefix must be a str")
    return system_lib(prefix)


def _cache_root() -> str:
    base = os.environ.get("TVMFFI_CACHE_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(xdg, "tvmffi")
    return base


def _cache_dir() -> str:
    return os.path.join(_cache_root(), "pickled")


def _same_file(path: str, digest: str) -> bool:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest() == digest
    except OSError:
        return False


def _private_folder(digest: str) -> str:
    """``<cache>/pickled/<digest>``, every level private to this user (as the build
    cache's): anyone else who could write there could swap the library between its
    check and its load. :class:`~tvmffi._build.private.UnsafeCacheError` otherwise."""

    folder = os.path.join(_cache_dir(), digest)
    for level in (_cache_root(), _cache_dir(), folder):
        make_private_dir(level)
    return folder


def _rebuild_library(name: Any, data: Any, digest: Any, origin: Any = None) -> Any:
    """The library of these bytes: the module this process already runs from ``origin``
    when that is the same file, else a private copy (``<cache>/pickled/<digest>/<name>``)."""

    if not isinstance(name, str) or not _FILE_NAME.match(name):
        raise ValueError(f"a pickled library's file name is malformed: {name!r}")
    if not isinstance(digest, str) or not _DIGEST.match(digest):
        raise ValueError("a pickled library's digest must be 64 hex digits")
    try:
        data = bytes(memoryview(data))
    except TypeError:
        raise TypeError("a pickled library's contents must be bytes") from None
    if hashlib.sha256(data).hexdigest() != digest:
        raise ValueError("a pickled library's bytes do not match their SHA-256 digest")
    # Only a library mapped in this process is taken from its original path: the
    # dynamic loader then hands back that mapping without opening the file again.
    # Any other path could be re-pointed between a check and the load.
    if isinstance(origin, str) and os.path.isabs(origin) and _loaded_from(origin, digest):
        return load_module(origin)
    folder = _private_folder(digest)
    path = os.path.join(folder, name)
    if os.path.lexists(path):
        check_private(path, "library")
    if os.path.islink(path) or not _same_file(path, digest):
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            strip_shared_write(tmp)
            os.replace(tmp, path)  # atomic: a concurrent loader sees all or nothing
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    return load_module(path)


# ---- objects whose graph holds tensors, functions or modules ------------------
_CONTAINERS = ("ffi.Array", "ffi.List", "ffi.Map", "ffi.Dict")


def reduce_graph(obj: Object) -> tuple[Any, ...]:
    """An object the JSON graph refused: its container items or reflected fields,
    each pickled in turn (tensors by their bytes, functions and modules as above)."""
    key = obj.type_key
    if key in ("ffi.Array", "ffi.List"):
        return (_rebuild_container, (key, tuple(obj)))  # type: ignore[arg-type]
    if key in ("ffi.Map", "ffi.Dict"):
        return (_rebuild_container, (key, tuple(obj.items())))  # type: ignore[attr-defined]

    fields = tuple((f.name, getattr(obj, f.name)) for f in get_fields(obj))
    return (_rebuild_object, (key, fields))


_NATIVE_NODE = re.compile(r'"(?:ffi\.Tensor|ffi\.Function|ffi\.Module[^"]*)"')


def graph_holds_native(text: str) -> bool:
    """Whether a JSON graph names a tensor, function or module node (which a package
    such as TVM may serialize, but a process without it cannot read back)."""
    return _NATIVE_NODE.search(text) is not None


def holds_native(obj: Any) -> bool:
    """Whether an object's graph (containers, reflected fields) holds a tensor, function
    or module; each node is visited once (a List may hold itself)."""

    seen: set[int] = set()
    todo = [obj]
    while todo:
        value = todo.pop()
        if isinstance(value, (Tensor, Function, Module)):
            return True
        if not isinstance(value, Object) or value.__chandle__() in seen:
            continue
        seen.add(value.__chandle__())
        key = value.type_key
        if key in ("ffi.Array", "ffi.List"):
            todo.extend(value)  # type: ignore[arg-type]
        elif key in ("ffi.Map", "ffi.Dict"):
            for k, v in value.items():  # type: ignore[attr-defined]
                todo += (k, v)
        else:
            todo.extend(getattr(value, f.name) for f in get_fields(value))
    return False


def rebuild_from_graph(text: Any) -> Any:
    """An object of a generated class (no class to name), from its JSON graph."""

    if not isinstance(text, str):
        raise TypeError("a pickled object's graph must be a str")
    return from_json_graph_str(text)  # the text is vetted before the runtime reads it


def _rebuild_container(key: Any, items: Any) -> Any:

    if key not in _CONTAINERS or not isinstance(items, tuple):
        raise ValueError(f"malformed pickled container {key!r}")
    if key == "ffi.Array":
        return container.Array(items)
    if key == "ffi.List":
        return container.List(items)
    if not all(isinstance(kv, tuple) and len(kv) == 2 for kv in items):
        raise ValueError(f"a pickled {key} holds (key, value) pairs")
    cls = container.Map if key == "ffi.Map" else container.Dict
    return cls(dict(items))


def _rebuild_object(key: Any, fields: Any) -> Any:
    if not isinstance(key, str) or _core._type_key_to_index(key) is None:
        raise ValueError(f"cannot unpickle an object of unknown type {key!r}")
    if not isinstance(fields, tuple) or not all(
        isinstance(f, tuple) and len(f) == 2 and isinstance(f[0], str) for f in fields
    ):
        raise ValueError(f"a pickled {key} object's fields must be (name, value) pairs")

    args: list[Any] = [key]
    for name, value in fields:
        args += (name, value)
    return _cached_global_func("ffi.MakeObjectFromPackedArgs")(*args)


_REFUSED_TYPE = re.compile(
    r'Cannot deep copy object of type "([^"]+)" because it is not copy-constructible'
)


def copies_what_deepcopy_refused(err: BaseException) -> bool:
    """Whether ``ffi.DeepCopy``'s refusal ``err`` was for a tensor, function or module:
    values pickle carries, which :func:`deep_copy_graph` then copies."""
    found = _REFUSED_TYPE.search(str(err))
    return found is not None and (
        found.group(1) in ("ffi.Tensor", "ffi.Function") or found.group(1).startswith("ffi.Module")
    )


def deep_copy_graph(obj: Object, memo: Any) -> Any:
    """``copy.deepcopy`` of an object ``ffi.DeepCopy`` refused (it holds a tensor or a
    function): rebuilt from deep copies of what :func:`reduce_graph` sends.

    ``memo`` knows each copied object by its handle (each read of an element is a new
    wrapper), and a List or Dict is in it before its items are copied: a List holding
    itself copies into a List holding its copy, as ``ffi.DeepCopy`` does."""
    if memo is None:
        memo = {}
    key = ("tvmffi.handle", obj.__chandle__())
    if key in memo:
        return memo[key]
    type_key = obj.type_key
    if type_key in ("ffi.List", "ffi.Dict"):
        if type_key == "ffi.List":
            items = list(obj)  # type: ignore[call-overload]
            clone: Any = container.List()
            memo[key] = clone
            clone.extend([copy.deepcopy(v, memo) for v in items])
        else:
            pairs = list(obj.items())  # type: ignore[attr-defined]
            clone = container.Dict()
            memo[key] = clone
            for k, v in pairs:
                clone[copy.deepcopy(k, memo)] = copy.deepcopy(v, memo)
        return clone
    func, args = reduce_graph(obj)
    result = func(*copy.deepcopy(args, memo))
    memo[key] = result
    return result
