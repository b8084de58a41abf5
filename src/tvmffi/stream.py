"""The runtime's environment stream: ``StreamContext``, ``use_raw_stream``, ``get_raw_stream``.

Kernels launched through the FFI run on the environment stream of their
device (``TVMFFIEnvGetStream``). ``use_raw_stream(device, stream)`` (a
:class:`StreamContext`) sets it for a ``with`` block and restores the previous
one on exit; blocks nest. ``use_torch_stream(ctx)`` enters a torch stream or
CUDA graph context and makes torch's current stream the environment stream.
Without an active stream context, a call that receives CUDA tensors from
PyTorch runs on PyTorch's current stream for their device.

``use_stream`` and ``current_stream`` are tvmffi's earlier names of
``StreamContext`` and ``get_raw_stream``; they also take a device name and
stream objects (``torch.cuda.Stream``, anything with ``cuda_stream`` or
``__cuda_stream__``).
"""

from __future__ import annotations

import ctypes
import sys
from contextlib import ExitStack
from types import TracebackType
from typing import Any

from . import _core
from ._core import Device

__all__ = [
    "StreamContext",
    "current_stream",
    "get_raw_stream",
    "use_raw_stream",
    "use_stream",
    "use_torch_stream",
]


def _device(device: Any) -> Device:
    # Device(device) converts a Device too, but allocates a copy (~75 ns more);
    # this keeps the caller's object.
    return device if isinstance(device, Device) else Device(device)


def _stream_handle(stream: Any) -> int:
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    if hasattr(stream, "cuda_stream"):  # torch.cuda.Stream, cupy.cuda.Stream
        return int(stream.cuda_stream)
    if hasattr(stream, "__cuda_stream__"):  # CUDA stream protocol: (version, handle)
        return int(stream.__cuda_stream__()[1])
    if isinstance(stream, ctypes.c_void_p):
        return stream.value or 0
    raise TypeError(
        f"stream must be an int handle or an object with a 'cuda_stream' attribute, "
        f"not {type(stream).__name__}"
    )


def get_raw_stream(device: Any) -> int:
    """Return the environment stream of ``device`` as an int handle.

    Kernels that launch asynchronous work read the runtime's per-device
    environment stream (``TVMFFIEnvGetStream``); :func:`use_raw_stream`,
    :func:`use_stream` and :func:`use_torch_stream` set it for a ``with`` block.

    Parameters
    ----------
    device : Device, str or int
        The device (``"cuda:0"``, a :class:`Device`, ...).

    Returns
    -------
    int
        The stream handle (a ``cudaStream_t`` for CUDA), 0 when none is set.

    Raises
    ------
    ValueError
        ``device`` does not name a device.

    Examples
    --------
    >>> import tvmffi
    >>> dev = tvmffi.device("cuda:0")
    >>> with tvmffi.use_raw_stream(dev, 0x1234):
    ...     hex(tvmffi.get_raw_stream(dev))
    '0x1234'
    >>> tvmffi.get_raw_stream(dev)
    0
    """
    dev = _device(device)
    return int(_core.current_stream(dev.dlpack_device_type(), dev.index))


current_stream = get_raw_stream


class StreamContext:
    """Context manager that makes ``stream`` the environment stream of ``device``.

    ``stream`` is an int handle (e.g. a ``cudaStream_t``) or a ``ctypes.c_void_p``;
    tvmffi also takes objects with a ``cuda_stream`` attribute
    (``torch.cuda.Stream``, ``cupy.cuda.Stream``) or ``__cuda_stream__``. The
    previous stream is restored on exit; the same context may be re-entered.
    """

    def __init__(self, device: Any, stream: Any) -> None:
        self.device = _device(device)
        self.device_type = self.device.dlpack_device_type()  # the official attributes
        self.device_id = self.device.index
        self.stream = _stream_handle(stream)
        self._saved: list[int] = []

    def __enter__(self) -> StreamContext:
        self._saved.append(_core.stream_push(self.device_type, self.device_id, self.stream))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _core.stream_pop(self.device_type, self.device_id, self._saved.pop())


use_stream = StreamContext


def use_raw_stream(device: Any, stream: int | ctypes.c_void_p) -> StreamContext:
    """Make the raw handle ``stream`` the environment stream of ``device`` in a ``with`` block.

    Parameters
    ----------
    device : Device, str or int
        The device whose stream to set.
    stream : int or ctypes.c_void_p
        The stream handle (a ``cudaStream_t`` for CUDA).

    Returns
    -------
    StreamContext
        A context manager; the previous stream is restored on exit.

    Raises
    ------
    ValueError
        ``stream`` is not an int or ``ctypes.c_void_p`` (use :func:`use_stream` for
        stream objects, :func:`use_torch_stream` for torch streams and CUDA graphs).

    Examples
    --------
    >>> import ctypes, tvmffi
    >>> with tvmffi.use_raw_stream("cuda:1", ctypes.c_void_p(0x10)):
    ...     tvmffi.get_raw_stream("cuda:1")
    16
    """
    if not isinstance(stream, (int, ctypes.c_void_p)):
        raise ValueError(
            "use_raw_stream only accepts int or c_void_p as stream input, "
            "try use_torch_stream when using torch.cuda.Stream or torch.cuda.graph"
        )
    return StreamContext(device, stream)


class TorchStreamContext:
    """Enters a torch stream or CUDA graph context, then makes torch's current
    CUDA stream the environment stream of its device until exit."""

    def __init__(self, context: Any) -> None:
        self.torch_context = context
        self._entered: ExitStack | None = None

    def __enter__(self) -> TorchStreamContext:
        with ExitStack() as entered:  # a failure on the way leaves nothing entered
            if self.torch_context:
                entered.enter_context(self.torch_context)
            # Read only now: the torch context just entered may have changed it.
            entered.enter_context(_torch_stream_context())
            self._entered = entered.pop_all()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        entered, self._entered = self._entered, None
        if entered is not None:
            entered.__exit__(exc_type, exc, tb)


def _torch_stream_context() -> StreamContext:
    """A :class:`StreamContext` of torch's current CUDA stream, on its device."""
    current = sys.modules["torch"].cuda.current_stream()
    return StreamContext(Device(str(current.device)), current.cuda_stream)


def use_torch_stream(context: Any = None) -> TorchStreamContext:
    """Enter a torch stream (or CUDA graph) context and make torch's stream the environment one.

    Within the block, kernels called through tvmffi launch on the stream torch is
    using, so their work orders correctly with torch's.

    Parameters
    ----------
    context : object, optional
        ``torch.cuda.stream(s)``, ``torch.cuda.graph(g)``, or ``None`` for torch's
        current stream.

    Returns
    -------
    TorchStreamContext
        A context manager that enters ``context`` and then sets the environment
        stream of torch's current CUDA device; both are undone on exit.

    Raises
    ------
    ImportError
        torch cannot be imported.

    Examples
    --------
    >>> import tvmffi
    >>> ctx = tvmffi.use_torch_stream()  # doctest: +SKIP
    >>> with ctx:                        # doctest: +SKIP
    ...     kernel(x)                    # runs on torch's current stream
    """
    try:
        import torch  # noqa: F401
    except ImportError as e:
        raise ImportError("Cannot import torch") from e
    return TorchStreamContext(context)
