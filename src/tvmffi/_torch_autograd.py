"""Autograd for :func:`tvmffi.torch.register_op`: its ``backward=`` argument.

The backward connects to the forward by names:

- a **kernel** (an FFI function with its own :class:`~tvmffi.codegen.Signature`)
  takes, by name, any of the forward's input tensors and scalars (their saved
  values) and ``grad_<output>`` for the gradient of each forward output; its
  ``output=True`` tensors named ``grad_<input>`` are the input gradients it
  computes. It becomes an operator of its own (``<ns>::<name>_backward``, made by
  ``register_op``), so it has a fake implementation and ``torch.compile`` traces
  through the backward as well;
- a **Python function** is called with the same keywords (inputs and scalars by
  name, ``grad_<output>``) and returns the input gradients: a dict by input
  name, or a tensor or tuple of tensors in the order of the input tensors
  (``None`` for no gradient).

Scalars get no gradient; an operator with ``inout`` tensors cannot have one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .codegen import Signature, signature_of
from .codegen._spec import Scalar, Tensor

__all__ = ["prepare_backward"]


def _grad_name(name: str) -> str:
    return f"grad_{name}"


class _Backward:
    """What autograd calls: saves the inputs, then maps gradients to ``backward``."""

    def __init__(self, sig: Signature, backward: Callable[..., Any], kernel_sig: Signature | None):
        self.sig = sig
        self.backward = backward
        self.kernel_sig = kernel_sig
        # Operator arguments in schema order (input tensors and scalars).
        self.op_params = [p for p in sig.ffi_params if not (isinstance(p, Tensor) and p.output)]
        self.input_names = [t.name for t in sig.inputs]
        self.output_names = [t.name for t in sig.outputs]
        if kernel_sig is not None:
            self._plan_kernel(kernel_sig)

    def _plan_kernel(self, ksig: Signature) -> None:
        """Check that every parameter of the backward kernel is something we can give it."""
        known = {p.name for p in self.op_params} | {_grad_name(o) for o in self.output_names}
        wanted = {_grad_name(i) for i in self.input_names}
        self.kernel_args = []
        for p in ksig.ffi_params:
            if isinstance(p, Tensor) and p.output:
                if p.name not in wanted:
                    raise ValueError(
                        f"backward kernel {ksig.name!r}: output {p.name!r} is not grad_<input> "
                        f"for an input of {self.sig.name!r} ({', '.join(sorted(wanted))})"
                    )
                continue
            if p.name not in known:
                raise ValueError(
                    f"backward kernel {ksig.name!r}: parameter {p.name!r} is neither an input "
                    f"or scalar of {self.sig.name!r} nor grad_<output> "
                    f"({', '.join(sorted(known))})"
                )
            self.kernel_args.append(p.name)
        self.kernel_outputs = [t.name for t in ksig.outputs]
        if not self.kernel_outputs:
            raise ValueError(f"backward kernel {ksig.name!r} has no grad_<input> output")

    def attach(self, qualname: str, lib: Any, register_op: Callable[..., Any]) -> None:
        """Register this as the autograd of ``qualname`` (a backward kernel as its own
        operator ``<qualname>_backward`` first)."""
        if self.kernel_sig is not None:
            self.backward = register_op(f"{qualname}_backward", self.backward, self.kernel_sig)
        torch.library.register_autograd(qualname, self, setup_context=self.setup_context, lib=lib)

    def setup_context(self, ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        tensors = [a for p, a in zip(self.op_params, inputs, strict=True) if isinstance(p, Tensor)]
        ctx.save_for_backward(*tensors)
        ctx.tvmffi_scalars = {
            p.name: a for p, a in zip(self.op_params, inputs, strict=True) if isinstance(p, Scalar)
        }

    def __call__(self, ctx: Any, *grads: Any) -> tuple[Any, ...]:
        values: dict[str, Any] = dict(zip(self.input_names, ctx.saved_tensors, strict=True))
        values.update(ctx.tvmffi_scalars)
        for name, g in zip(self.output_names, grads, strict=True):
            # Kernels take compact tensors; autograd may hand an expanded zero or a view.
            values[_grad_name(name)] = g.contiguous() if isinstance(g, torch.Tensor) else g
        by_input = self._kernel(values) if self.kernel_sig is not None else self._python(values)
        return tuple(
            by_input.get(p.name) if isinstance(p, Tensor) else None for p in self.op_params
        )

    def _kernel(self, values: dict[str, Any]) -> dict[str, Any]:
        out = self.backward(*(values[n] for n in self.kernel_args))
        outs = out if isinstance(out, tuple) else (out,)
        return {
            name.removeprefix("grad_"): g for name, g in zip(self.kernel_outputs, outs, strict=True)
        }

    def _python(self, values: dict[str, Any]) -> dict[str, Any]:
        result = self.backward(**values)
        if isinstance(result, dict):
            unknown = set(result) - set(self.input_names)
            if unknown:
                raise ValueError(
                    f"backward of {self.sig.name!r} returned gradients for {sorted(unknown)}, "
                    f"which are not its input tensors ({', '.join(self.input_names)})"
                )
            return result
        grads = result if isinstance(result, (tuple, list)) else (result,)
        if len(grads) != len(self.input_names):
            raise ValueError(
                f"backward of {self.sig.name!r} returned {len(grads)} gradients for "
                f"{len(self.input_names)} input tensors ({', '.join(self.input_names)})"
            )
        return dict(zip(self.input_names, grads, strict=True))


def prepare_backward(
    qualname: str, sig: Signature, backward: Any, backward_sig: Signature | None
) -> _Backward:
    """The autograd of the operator ``qualname``, checked (before the operator is defined)."""
    if any(t.inout for t in sig.inputs):
        raise ValueError(
            f"register_op({qualname!r}): an operator with inout tensors cannot have a backward"
        )
    if not sig.outputs:
        raise ValueError(f"register_op({qualname!r}): an operator without outputs has no backward")
    if not callable(backward):
        raise TypeError(f"backward must be callable, not {type(backward).__name__}")
    if backward_sig is not None and not isinstance(backward_sig, Signature):
        raise TypeError(
            f"backward_sig must be a tvmffi.codegen.Signature, not {type(backward_sig).__name__}"
        )
    kernel_sig = backward_sig if backward_sig is not None else signature_of(backward)
    return _Backward(sig, backward, kernel_sig)
