"""JAX operators from a typed signature: :func:`register_op`.

The FFI function is registered as an XLA FFI target through jax-tvm-ffi (whose
C++ handler calls it directly, with XLA's buffers as DLTensors); the operator
``register_op`` returns computes its outputs' ``ShapeDtypeStruct`` from the
:class:`tvmffi.codegen.Signature`, checking the inputs at trace time with the
messages of the generated wrapper, and lowers to ``jax.ffi.ffi_call``. jax and
jax-tvm-ffi are imported when this module is, never by ``import tvmffi``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy
import jax_tvm_ffi  # type: ignore[import-untyped]
import numpy as np

from .codegen import Signature
from .codegen._check import ArgInfo, Checker, dtype_text
from .codegen._library import op_signature
from .codegen._spec import Scalar
from .dtype import dtype as ffi_dtype

__all__ = ["register_op"]

# Signature device -> jax-tvm-ffi platform.
_PLATFORMS = {"cpu": "cpu", "cuda": "gpu"}

# XLA attributes are typed: each scalar goes as the NumPy type of its dtype.
_ATTR_TYPES: dict[str, Callable[[Any], Any]] = {
    "int32": np.int32,
    "int64": np.int64,
    "float32": np.float32,
    "float64": np.float64,
    "bool": np.bool_,
}


def _arg_spec(sig: Signature) -> list[str]:
    """jax-tvm-ffi's argument spec: how ``fn``'s parameters come from the FFI call.

    jax-tvm-ffi passes all of the call's operands (``"args"``) as one block and
    all of its results (``"rets"``) as another; scalars are attributes
    (``"attrs.<name>"``). So ``fn``'s input tensors must be adjacent, as must
    its outputs. An ``inout`` tensor is an operand aliased to a result (XLA
    passes the one buffer for both): it is read and written as an operand.
    """
    spec: list[str] = []
    for p in sig.ffi_params:
        token = f"attrs.{p.name}" if isinstance(p, Scalar) else "rets" if p.output else "args"
        if token in spec and spec[-1] != token:
            kind = "output" if token == "rets" else "input"
            raise ValueError(
                f"tvmffi.jax cannot call {sig.name!r}: its {kind} tensors are not adjacent in "
                f"its parameters (jax-tvm-ffi passes them to the function as one block)"
            )
        if not spec or spec[-1] != token:
            spec.append(token)
    return spec


def _aval_info(x: Any) -> ArgInfo:
    d = ffi_dtype(np.dtype(x.dtype))
    return ArgInfo(tuple(x.shape), dtype_text(d.type_code, d.bits, d.lanes))


class _Op:
    """The operator: checks and output types at trace time, then the FFI call."""

    def __init__(self, target: str, sig: Signature, vmap_method: str | None):
        self.sig = sig
        self.target = target
        self.vmap_method = vmap_method
        self.checker = Checker(sig)
        self.inputs = sig.inputs
        self.scalars = [p for p in sig.ffi_params if isinstance(p, Scalar)]
        inouts = [i for i, t in enumerate(self.inputs) if t.inout]
        self.aliases = {i: k for k, i in enumerate(inouts)}

    def check(self, arrays: tuple[Any, ...], scalars: dict[str, Any]) -> dict[str, Any]:
        """The signature's checks on the arrays' shapes; the scalars as Python numbers."""
        return self._check(arrays, scalars)[1]

    def _check(
        self, arrays: tuple[Any, ...], scalars: dict[str, Any]
    ) -> tuple[dict[str, int], dict[str, Any]]:
        sig = self.sig
        if len(arrays) != len(self.inputs):
            raise TypeError(
                f"{sig.name} takes {len(self.inputs)} arrays "
                f"({', '.join(t.name for t in self.inputs)}) but got {len(arrays)}"
            )
        names = {p.name for p in self.scalars}
        if set(scalars) != names:
            missing, extra = sorted(names - set(scalars)), sorted(set(scalars) - names)
            raise TypeError(
                f"{sig.name} takes the scalars {sorted(names)} as keywords"
                + (f"; missing {missing}" if missing else "")
                + (f"; unexpected {extra}" if extra else "")
            )
        # NumPy scalars (np.float32(2.0)) count as the Python numbers they hold.
        scalars = {k: v.item() if isinstance(v, np.generic) else v for k, v in scalars.items()}
        infos = {t.name: _aval_info(a) for t, a in zip(self.inputs, arrays, strict=True)}
        return self.checker.check(infos, scalars), scalars

    def __call__(self, *arrays: Any, **scalars: Any) -> Any:
        sig = self.sig
        values, scalars = self._check(arrays, scalars)
        if sig.outputs:
            results = [
                jax.ShapeDtypeStruct(shape, jax.numpy.dtype(t.dtype))  # type: ignore[no-untyped-call]
                for shape, t in zip(self.checker.output_shapes(values), sig.outputs, strict=True)
            ]
        else:
            results = [
                jax.ShapeDtypeStruct(arrays[i].shape, arrays[i].dtype)  # type: ignore[no-untyped-call]
                for i in self.aliases
            ]
        attrs = {p.name: _ATTR_TYPES[p.dtype](scalars[p.name]) for p in self.scalars}
        call = jax.ffi.ffi_call(
            self.target,
            results,
            vmap_method=self.vmap_method,
            input_output_aliases=self.aliases or None,
        )
        out = call(*arrays, **attrs)
        return out[0] if len(out) == 1 else tuple(out)


def register_op(
    name: str,
    fn: Callable[..., Any],
    sig: Signature | None = None,
    *,
    vmap_method: str | None = "sequential",
    partition: Any = None,
) -> Callable[..., Any]:
    """A JAX operator running ``fn``, registered as the XLA FFI target ``name``.

    ``fn`` is an FFI function taking ``sig``'s parameters in order (outputs
    included); ``sig`` may be left out for a function :mod:`tvmffi.codegen`
    built. The operator is called as ``op(*inputs, **scalars)``: the input
    tensors (``inout`` ones included) positionally in ``sig``'s order, the
    scalars as keywords (static: each value compiles its own call). It returns
    the outputs, or, for a kernel with ``inout`` tensors and no outputs, their
    new values (each operand is aliased to its result; donate it to save XLA
    the copy): one array or a tuple.

    It is a ``jax.jit`` function, so eager calls are compiled once per shape,
    and it inlines into an enclosing ``jax.jit``. Shapes, dtypes and the Vars
    are checked at trace time with the messages of the generated wrapper.
    Under ``jax.vmap`` it follows ``vmap_method`` (``jax.ffi.ffi_call``'s):
    ``"sequential"`` (default) calls the kernel once per batch element;
    ``None`` makes ``vmap`` raise.

    The device is the signature's (``cpu``, or ``cuda`` on a GPU backend).
    jax-tvm-ffi passes operands and results as two blocks, so ``fn``'s input
    tensors must be adjacent among its parameters, as must its outputs, and a
    signature cannot mix outputs with ``inout`` tensors (``ValueError``).

    ``partition`` shards it: ``True`` (every Var may be split: the kernel is
    element-wise along it) or a mapping of Var names to ``"split"``, ``"reduce"``
    (a contraction: shards' outputs are summed) or ``"whole"`` (the default for
    Vars it leaves out). The Shardy sharding rule comes from the signature, each
    Var a factor, constant dimensions whole; under ``jax.jit`` on sharded inputs
    each device runs the kernel on its shard (see ``docs/scaling.md``).
    """
    sig = op_signature(fn, sig, name)
    if not sig.inputs:
        raise ValueError(f"tvmffi.jax cannot call {sig.name!r}: it has no input tensor")
    inouts = [t for t in sig.inputs if t.inout]
    if sig.outputs and inouts:
        raise ValueError(
            f"tvmffi.jax cannot call {sig.name!r}: it has both outputs and inout tensors "
            "(jax-tvm-ffi passes every result to the function)"
        )
    if not sig.outputs and not inouts:
        raise ValueError(f"tvmffi.jax cannot call {sig.name!r}: it has no output nor inout tensor")
    platform = _PLATFORMS.get(sig.inputs[0].device)
    if platform is None:
        raise ValueError(
            f"tvmffi.jax cannot call {sig.name!r}: its tensors are on {sig.inputs[0].device!r} "
            f"(supported: {', '.join(_PLATFORMS)})"
        )
    jax_tvm_ffi.register_ffi_target(name, fn, _arg_spec(sig), platform=platform)
    op = _Op(name, sig, vmap_method)
    op.__name__ = op.__qualname__ = sig.name  # type: ignore[attr-defined]
    static: Sequence[str] = [p.name for p in op.scalars]
    if partition is not None and partition is not False:
        from ._jax_partition import partitioned

        sharded = partitioned(op, op.check, sig, partition)
        sharded.__name__ = sharded.__qualname__ = sig.name
        jitted_sharded: Callable[..., Any] = jax.jit(sharded, static_argnames=static)
        jitted_sharded.sharding_rule = sharded.sharding_rule  # type: ignore[attr-defined]
        return jitted_sharded
    jitted: Callable[..., Any] = jax.jit(op, static_argnames=static)
    return jitted
