"""The generated wrapper's checks, in Python: for tracing frameworks that see no data.

An operator built from a :class:`Signature` (``tvmffi.torch``, ``tvmffi.jax``)
must reject a bad call while it is traced, before any kernel runs, with the
error the wrapper would raise: :class:`Checker` runs the wrapper's checks in
the wrapper's order (inputs and scalars in parameter order, then outputs) on a
description of each argument and raises the same ``ValueError``/``TypeError``
text, ``when calling: `<signature>``` included. Only what a trace knows is
checked: the data alignment needs an address and is left to the wrapper; a
device or strides the framework does not know (``None``) are not checked.

Dimensions may be symbolic integers (torch ``SymInt``): every comparison is a
plain Python comparison, which such types answer (and guard on).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ._emit import _VAR_RANGES
from ._spec import SCALAR_DTYPES, Scalar, Signature, Tensor, Var

__all__ = ["ArgInfo", "Checker", "dtype_text"]

# DLPack type codes named as the wrapper names them (tvmffi_cg_dtype_str).
_CODE_NAMES = ("int", "uint", "float", "handle", "bfloat", "complex")


def dtype_text(code: int, bits: int, lanes: int = 1) -> str:
    """A DLPack data type as the wrapper's messages spell it (``float32``, ``bool``)."""
    if code == 6 and bits == 8 and lanes == 1:
        return "bool"
    if code < len(_CODE_NAMES):
        base = f"{_CODE_NAMES[code]}{bits}"
        return base if lanes == 1 else f"{base}x{lanes}"
    return f"dtype(code={code}, bits={bits}, lanes={lanes})"


@dataclass(frozen=True)
class ArgInfo:
    """What a trace knows of one tensor argument.

    ``dtype`` is the wrapper's text for it (see :func:`dtype_text`); ``device``
    is ``(device type name, device id)`` or ``None`` when unknown; ``strides``
    (in elements) is ``None`` for compact or unknown strides.
    """

    shape: Sequence[Any]
    dtype: str
    device: tuple[str, int] | None = None
    strides: Sequence[Any] | None = None


class Checker:
    """Checks calls of ``sig`` as its generated wrapper does; computes output shapes."""

    def __init__(self, sig: Signature, show: Callable[[Any], Any] | None = None):
        self.sig = sig
        # How a message shows a dimension (a symbolic one as its example value).
        self.show: Callable[[Any], Any] = show if show is not None else _same
        self.suffix = f" when calling: `{sig}`"
        self.first_input = sig.inputs[0] if sig.inputs else None

    def _fail(self, kind: type[Exception], text: str) -> Exception:
        return kind(text + self.suffix)

    def check(self, tensors: dict[str, ArgInfo], scalars: dict[str, object]) -> dict[str, Any]:
        """Check the inputs (``tensors`` by name, outputs absent) and scalars.

        Returns each Var's bound value. Raises what the wrapper raises for the
        first wrong argument.
        """
        bound: dict[str, tuple[Any, str]] = {}
        first = self.first_input
        first_id = None
        if first is not None and tensors[first.name].device is not None:
            first_id = tensors[first.name].device[1]  # type: ignore[index]
        for index in self.sig.check_order:
            p = self.sig.ffi_params[index]
            if isinstance(p, Scalar):
                self._scalar(p, scalars[p.name])
            elif not p.output:
                self._tensor(p, tensors[p.name], bound, first_id)
        return {name: value for name, (value, _) in bound.items()}

    def output_shapes(self, values: dict[str, Any]) -> list[tuple[Any, ...]]:
        """The shapes of the outputs, in order, from the values :meth:`check` bound."""
        return [
            tuple(values[d.name] if isinstance(d, Var) else d for d in t.shape)
            for t in self.sig.outputs
        ]

    def _scalar(self, s: Scalar, value: object) -> None:
        # The wrapper takes an int or a float for a float, an int or a bool otherwise.
        if SCALAR_DTYPES[s.dtype][1] == "float":
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        else:
            ok = isinstance(value, int)
        if not ok:
            raise self._fail(
                TypeError,
                f"Parameter `{s.name}` expects {s.dtype} but got {type(value).__name__}",
            )
        if s.dtype == "int32" and not -(2**31) <= operator.index(value) < 2**31:  # type: ignore[arg-type]
            raise self._fail(
                ValueError, f"Parameter `{s.name}` expects an int32 but got {value} (out of range)"
            )

    def _tensor(
        self, t: Tensor, a: ArgInfo, bound: dict[str, tuple[Any, str]], first_id: int | None
    ) -> None:
        name = t.name
        if len(a.shape) != len(t.shape):
            raise self._fail(
                ValueError,
                f"Parameter `{name}` expects ndim={len(t.shape)} but got ndim={len(a.shape)}",
            )
        if a.dtype != t.dtype:
            raise self._fail(
                ValueError, f"Parameter `{name}` expects dtype={t.dtype} but got dtype={a.dtype}"
            )
        self._device(t, a, first_id)
        for k, dim in enumerate(t.shape):
            self._dim(name, f"shape[{k}]", a.shape[k], dim, bound)
        self._strides(t, a, bound)

    def _device(self, t: Tensor, a: ArgInfo, first_id: int | None) -> None:
        if a.device is None:
            return
        kind, index = a.device
        if kind != t.device:
            raise self._fail(
                ValueError,
                f"Parameter `{t.name}` expects device_type={t.device} but got device_type={kind}",
            )
        first = self.first_input
        if first is None or t is first or first_id is None:
            return
        if index != first_id:
            raise self._fail(
                ValueError,
                f"Parameter `{t.name}` expects device_id={first_id} (the device "
                f"of `{first.name}`) but got device_id={index}",
            )

    def _strides(self, t: Tensor, a: ArgInfo, bound: dict[str, tuple[Any, str]]) -> None:
        strides = a.strides
        if t.strides is not None:
            if strides is None:  # compact: the wrapper checks the strides it implies
                strides = _compact_strides(a.shape)
            for k, dim in enumerate(t.strides):
                self._dim(t.name, f"strides[{k}]", strides[k], dim, bound)
            return
        if strides is None or any(d == 0 for d in a.shape):
            return
        expected = 1
        for k in range(len(a.shape) - 1, -1, -1):
            if a.shape[k] != 1 and strides[k] != expected:
                raise self._fail(
                    ValueError,
                    f"Parameter `{t.name}` expects compact row-major strides, strides[{k}]="
                    f"{self.show(expected)}, but got strides[{k}]={self.show(strides[k])}",
                )
            expected *= a.shape[k]

    def _dim(
        self, name: str, label: str, actual: Any, dim: int | Var, bound: dict[str, tuple[Any, str]]
    ) -> None:
        if isinstance(dim, int):
            if actual != dim:
                raise self._fail(
                    ValueError,
                    f"Parameter `{name}` expects {label}={dim} but got {label}={self.show(actual)}",
                )
            return
        if dim.name in bound:
            value, where = bound[dim.name]
            if actual != value:
                raise self._fail(
                    ValueError,
                    f"Parameter `{name}` expects {label}={dim.name}={self.show(value)} "
                    f"(bound by {where}) but got {label}={self.show(actual)}",
                )
            return
        bound[dim.name] = (actual, f"`{name}`.{label}")
        if dim.dtype in _VAR_RANGES:
            lo, hi = _VAR_RANGES[dim.dtype]
            if actual < lo or actual > hi:
                raise self._fail(
                    ValueError,
                    f"Parameter `{name}` expects {label}={dim.name} to fit in {dim.dtype} "
                    f"but got {label}={self.show(actual)}",
                )
        if dim.divisibility is not None and dim.divisibility > 1 and actual % dim.divisibility:
            raise self._fail(
                ValueError,
                f"Parameter `{name}` expects {label}={dim.name} to be divisible by "
                f"{dim.divisibility} but got {label}={self.show(actual)}",
            )


def _same(value: Any) -> Any:
    return value


def _compact_strides(shape: Sequence[Any]) -> list[Any]:
    out: list[Any] = [1] * len(shape)
    expected: Any = 1
    for k in range(len(shape) - 1, -1, -1):
        out[k] = expected
        expected = expected * shape[k]
    return out
