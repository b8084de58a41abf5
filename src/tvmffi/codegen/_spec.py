"""Parameter specs of a generated FFI function, validated when they are created.

Everything that could make the generated C fail to compile (a bad name, an
unknown dtype or device, a malformed shape) is rejected here with ``ValueError``,
so :func:`tvmffi.codegen.emit_c` only ever sees specs it can translate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..device import Device

__all__ = ["DEVICES", "DTYPES", "EnvStream", "Param", "Scalar", "Signature", "Tensor", "Var"]


@dataclass(frozen=True)
class DTypeInfo:
    """How a dtype appears in DLPack and in C."""

    code: int  # DLDataTypeCode
    bits: int
    ctype: str  # element type of the kernel's data pointer


# Element types of tensor data pointers. float16 and bfloat16 have no portable
# C11 type, so kernels receive their raw 16-bit patterns as uint16_t*.
DTYPES: dict[str, DTypeInfo] = {
    "bool": DTypeInfo(6, 8, "uint8_t"),
    "int8": DTypeInfo(0, 8, "int8_t"),
    "int16": DTypeInfo(0, 16, "int16_t"),
    "int32": DTypeInfo(0, 32, "int32_t"),
    "int64": DTypeInfo(0, 64, "int64_t"),
    "uint8": DTypeInfo(1, 8, "uint8_t"),
    "uint16": DTypeInfo(1, 16, "uint16_t"),
    "uint32": DTypeInfo(1, 32, "uint32_t"),
    "uint64": DTypeInfo(1, 64, "uint64_t"),
    "float16": DTypeInfo(2, 16, "uint16_t"),
    "bfloat16": DTypeInfo(4, 16, "uint16_t"),
    "float32": DTypeInfo(2, 32, "float"),
    "float64": DTypeInfo(2, 64, "double"),
}

# DLPack device type codes of the device names a Tensor spec accepts (the codes
# come from tvmffi.Device, the one place that maps names to DLPack).
DEVICES: dict[str, int] = {
    name: Device(name).dlpack_device_type()
    for name in ("cpu", "cuda", "cuda_host", "opencl", "vulkan", "metal", "rocm")
}

# Scalar parameter dtypes -> (C type of the kernel argument, type-schema key).
SCALAR_DTYPES: dict[str, tuple[str, str]] = {
    "int32": ("int32_t", "int"),
    "int64": ("int64_t", "int"),
    "float32": ("float", "float"),
    "float64": ("double", "float"),
    "bool": ("bool", "bool"),
}

_VAR_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# C11 keywords plus the type names kernel prototypes use: a parameter called
# `int64_t` would shadow the type for the parameters after it in the kernel's
# own parameter list (the one `inline` bodies are written against). Other
# identifiers of the C, DLPack and TVM FFI headers (INT32_MAX, SIZE_MAX, EOF,
# errno, DLPACK_MAJOR_VERSION, TVMFFIAnyViewToOwnedAny, ...) are fine: the
# generated wrapper never spells a user's name as a C token (its locals and
# the kernel declaration are mangled), and `inline` #undefs a macro of the
# same name before the kernel.
_RESERVED_NAMES = """
    auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef
    union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic
    _Imaginary _Noreturn _Static_assert _Thread_local bool true false NULL size_t uintptr_t
    int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t DLTensor TVMFFIAny
"""
_C_RESERVED = frozenset(_RESERVED_NAMES.split())


def check_identifier(name: object, what: str) -> str:
    """Return ``name`` if it can be a C identifier in generated code, else raise ValueError."""
    if not isinstance(name, str) or not _IDENT.match(name):
        raise ValueError(f"{what} must be a C identifier ([A-Za-z_][A-Za-z0-9_]*), got {name!r}")
    if name in _C_RESERVED:
        raise ValueError(f"{what} {name!r} is a reserved C name")
    if name.startswith("__"):
        raise ValueError(f"{what} {name!r} must not start with '__' (reserved in C)")
    return name


def _is_positive_int(value: object) -> bool:
    """True for an int >= 1 (bool, an int subclass, is not accepted)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


# Every bound value is an int64_t in the generated C, so a divisor or an
# alignment of 2**63 or more could never be met (and has no C literal): rejected.
_INT64_MAX = 2**63 - 1


def _check_dtype(dtype: object, allowed: Iterable[str], what: str) -> str:
    allowed = tuple(allowed)
    if not isinstance(dtype, str) or dtype not in allowed:
        raise ValueError(f"{what} must be one of {', '.join(allowed)}; got {dtype!r}")
    return dtype


@dataclass(frozen=True)
class Var:
    """A symbolic integer (a dimension or stride) bound by the first tensor that uses it.

    ``dtype`` is an integer dtype; the wrapper checks the bound value fits it.
    ``divisibility`` (a positive int below 2**63) requires the value to be a
    multiple of it.
    The kernel receives every Var as ``int64_t``.
    """

    name: str
    dtype: str = "int64"
    divisibility: int | None = None

    def __init__(self, name: str, dtype: str = "int64", *, divisibility: int | None = None):
        check_identifier(name, "Var name")
        _check_dtype(dtype, _VAR_DTYPES, f"Var {name!r} dtype (an integer dtype)")
        if divisibility is not None and (
            not _is_positive_int(divisibility) or divisibility > _INT64_MAX
        ):
            raise ValueError(
                f"Var {name!r} divisibility must be a positive int below 2**63, "
                f"got {divisibility!r}"
            )
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "divisibility", divisibility)

    def __str__(self) -> str:
        return self.name


Dim = int | Var


def _check_dims(items: object, what: str, allow_negative: bool) -> tuple[Dim, ...]:
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise ValueError(f"{what} must be a sequence of ints and Vars, got {items!r}")
    out: list[Dim] = []
    for item in items:
        if isinstance(item, Var):
            out.append(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            if item < 0 and not allow_negative:
                raise ValueError(f"{what} items must be >= 0, got {item}")
            if not -(2**63) <= item < 2**63:
                raise ValueError(f"{what} item {item} does not fit in int64")
            out.append(item)
        else:
            raise ValueError(f"{what} items must be ints or Vars, got {item!r}")
    return tuple(out)


@dataclass(frozen=True)
class Tensor:
    """A tensor parameter: the kernel receives its typed data pointer (byte offset applied).

    ``shape`` and ``strides`` items are ints or :class:`Var`. ``strides=None``
    means compact row-major, where size-1 dimensions may have any stride and a
    tensor with no elements may have any strides; explicit strides (in elements,
    as in DLPack) are checked exactly. ``data_alignment`` is a power of two in
    bytes (below 2**63) that the data pointer (with byte offset) must be a multiple of.
    ``device`` is a device type name (``"cpu"``, ``"cuda"``, ...); all tensors of a
    call must share one device id.

    ``output=True`` marks a tensor the kernel writes and an operator built from
    the signature (:func:`tvmffi.torch.register_op`, :func:`tvmffi.jax.register_op`)
    allocates and returns instead of taking it: its shape must follow from
    constants and Vars bound by the input tensors, and it lives on the device of
    the first input (checked by :class:`Signature`). ``inout=True`` marks a tensor
    the kernel reads and writes in place (a mutated argument of such an operator).
    Neither changes the FFI function: its caller passes every tensor.
    """

    name: str
    shape: tuple[Dim, ...]
    dtype: str
    device: str = "cpu"
    strides: tuple[Dim, ...] | None = None
    data_alignment: int | None = None
    output: bool = False
    inout: bool = False

    def __init__(
        self,
        name: str,
        shape: Sequence[Dim],
        dtype: str,
        *,
        device: str = "cpu",
        strides: Sequence[Dim] | None = None,
        data_alignment: int | None = None,
        output: bool = False,
        inout: bool = False,
    ):
        check_identifier(name, "Tensor name")
        dims = _check_dims(shape, f"Tensor {name!r} shape", allow_negative=False)
        _check_dtype(dtype, DTYPES, f"Tensor {name!r} dtype")
        _check_dtype(device, DEVICES, f"Tensor {name!r} device")
        if strides is not None:
            strides = _check_dims(strides, f"Tensor {name!r} strides", allow_negative=True)
            if len(strides) != len(dims):
                raise ValueError(f"Tensor {name!r} has {len(dims)} dims but {len(strides)} strides")
        if data_alignment is not None and (
            not _is_positive_int(data_alignment)
            or data_alignment & (data_alignment - 1)
            or data_alignment > _INT64_MAX
        ):
            raise ValueError(
                f"Tensor {name!r} data_alignment must be a positive power of two below "
                f"2**63, got {data_alignment!r}"
            )
        if not isinstance(output, bool) or not isinstance(inout, bool):
            raise ValueError(f"Tensor {name!r} output and inout must be bools")
        if output and inout:
            raise ValueError(f"Tensor {name!r} cannot be both output and inout")
        if output and strides is not None:
            raise ValueError(
                f"Tensor {name!r} is an output, allocated compact: it takes no strides"
            )
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "shape", dims)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "device", device)
        object.__setattr__(self, "strides", None if strides is None else tuple(strides))
        object.__setattr__(self, "data_alignment", data_alignment)
        object.__setattr__(self, "output", output)
        object.__setattr__(self, "inout", inout)

    def __str__(self) -> str:
        dims = ", ".join(str(d) for d in self.shape)
        dev = "" if self.device == "cpu" else f", {self.device}"
        role = ", output" if self.output else ", inout" if self.inout else ""
        return f"{self.name}: Tensor([{dims}], {self.dtype}{dev}{role})"


@dataclass(frozen=True)
class Scalar:
    """A scalar parameter (int32, int64, float32, float64 or bool) passed by value."""

    name: str
    dtype: str

    def __init__(self, name: str, dtype: str):
        check_identifier(name, "Scalar name")
        _check_dtype(dtype, SCALAR_DTYPES, f"Scalar {name!r} dtype")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "dtype", dtype)

    def __str__(self) -> str:
        return f"{self.name}: {self.dtype}"


@dataclass(frozen=True)
class EnvStream:
    """The environment stream of the first tensor's device, passed to the kernel as ``void*``.

    Not an argument of the FFI function: the wrapper fills it from
    ``TVMFFIEnvGetStream`` (NULL when no stream is set, e.g. on CPU).
    """

    name: str

    def __init__(self, name: str):
        check_identifier(name, "EnvStream name")
        object.__setattr__(self, "name", name)


Param = Tensor | Scalar | EnvStream


class Signature:
    """A named FFI function signature: the parameters the generated wrapper checks.

    ``str(sig)`` is ``name(x: Tensor([n], float32), alpha: float32)`` (EnvStream
    parameters are not FFI arguments and do not appear). ``doc`` becomes the
    function's ``__tvm_ffi__doc_<name>`` (default: the signature text).
    """

    name: str
    params: tuple[Param, ...]
    doc: str

    def __init__(self, name: str, params: Sequence[Param], *, doc: str | None = None):
        check_identifier(name, "Signature name")
        if name.startswith("_"):
            # __tvm_ffi_<name> would start with __tvm_ffi__, the runtime's own prefix
            # (__tvm_ffi__library_bin, __tvm_ffi__doc_<f>, ...).
            raise ValueError(
                f"Signature name {name!r} must not start with '_' (symbols starting "
                "__tvm_ffi__ are the runtime's)"
            )
        if isinstance(params, (str, bytes)) or not isinstance(params, Sequence):
            raise ValueError(f"Signature {name!r} params must be a sequence of specs")
        seen: set[str] = set()
        for p in params:
            if not isinstance(p, (Tensor, Scalar, EnvStream)):
                raise ValueError(
                    f"Signature {name!r} params must be Tensor, Scalar or EnvStream, got {p!r}"
                )
            if p.name in seen:
                raise ValueError(f"Signature {name!r} has duplicate name {p.name!r}")
            seen.add(p.name)
        self.name = name
        self.params = tuple(params)
        # The signature does not change after construction: filter its params once.
        self._tensors = tuple(p for p in self.params if isinstance(p, Tensor))
        self._ffi_params = tuple(p for p in self.params if isinstance(p, (Tensor, Scalar)))
        self._inputs = tuple(t for t in self._tensors if not t.output)
        self._outputs = tuple(t for t in self._tensors if t.output)
        order = range(len(self._ffi_params))
        is_out = [isinstance(p, Tensor) and p.output for p in self._ffi_params]
        self._check_order = tuple(
            [i for i in order if not is_out[i]] + [i for i in order if is_out[i]]
        )
        vars_ = self._collect_vars()
        for v in vars_:
            if v.name in seen:
                raise ValueError(
                    f"Signature {name!r} has duplicate name {v.name!r} (a Var and a parameter)"
                )
        if any(isinstance(p, EnvStream) for p in self.params) and not self.tensors:
            raise ValueError(
                f"Signature {name!r} has an EnvStream but no Tensor to take the device from"
            )
        if doc is not None and not isinstance(doc, str):
            raise ValueError(f"Signature {name!r} doc must be a str")
        self.vars = vars_
        self._check_outputs()
        # Any str, lone surrogates and NULs included (emit_c escapes it); a str
        # subclass is taken as its plain text.
        self.doc = str(self) if doc is None else str.__str__(doc)

    def _collect_vars(self) -> tuple[Var, ...]:
        found: dict[str, Var] = {}
        for t in self.tensors:
            for d in (*t.shape, *(t.strides or ())):
                if not isinstance(d, Var):
                    continue
                prev = found.get(d.name)
                if prev is None:
                    found[d.name] = d
                elif prev != d:
                    raise ValueError(
                        f"Signature {self.name!r} has duplicate name {d.name!r}: "
                        f"two different Vars ({prev!r} and {d!r})"
                    )
        return tuple(found.values())

    def _check_outputs(self) -> None:
        """Every output's shape must be computable from the inputs (see :class:`Tensor`)."""
        inputs = self.inputs
        bound = {
            d.name for t in inputs for d in (*t.shape, *(t.strides or ())) if isinstance(d, Var)
        }
        for t in self.outputs:
            if not inputs:
                raise ValueError(
                    f"Signature {self.name!r} output {t.name!r} needs an input tensor "
                    "to take its device from"
                )
            if t.device != inputs[0].device:
                raise ValueError(
                    f"Signature {self.name!r} output {t.name!r} is on {t.device!r} but "
                    f"outputs are allocated on the device of the first input "
                    f"{inputs[0].name!r} ({inputs[0].device!r})"
                )
            for d in t.shape:
                if isinstance(d, Var) and d.name not in bound:
                    raise ValueError(
                        f"Signature {self.name!r} output {t.name!r} has dimension "
                        f"{d.name!r}, which no input tensor binds"
                    )

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        """The Tensor parameters an operator takes (inout ones included), in order."""
        return self._inputs

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        """The ``output=True`` Tensor parameters, in order."""
        return self._outputs

    @property
    def check_order(self) -> tuple[int, ...]:
        """FFI argument indices in the order the wrapper checks them: outputs last.

        Inputs bind the Vars, so an output is checked against its inputs (and an
        operator that allocated it correctly never sees an error about it).
        """
        return self._check_order

    @property
    def tensors(self) -> tuple[Tensor, ...]:
        """The Tensor parameters, in order."""
        return self._tensors

    @property
    def ffi_params(self) -> tuple[Tensor | Scalar, ...]:
        """The parameters that are FFI arguments (all but EnvStream), in order."""
        return self._ffi_params

    def __str__(self) -> str:
        return f"{self.name}({', '.join(str(p) for p in self.ffi_params)})"

    def __repr__(self) -> str:
        return f"Signature({self.name!r}, {list(self.params)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Signature) and (self.name, self.params, self.doc) == (
            other.name,
            other.params,
            other.doc,
        )

    def __hash__(self) -> int:
        return hash((self.name, self.params, self.doc))
