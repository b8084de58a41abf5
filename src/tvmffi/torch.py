"""PyTorch operators from a typed signature: :func:`register_op`.

One :class:`tvmffi.codegen.Signature` describes a kernel; ``register_op`` turns
the FFI function that follows it into a PyTorch operator (``torch.ops.ns.name``)
with a schema, an eager implementation and a fake (meta) implementation, so it
runs eagerly, under ``torch.compile(fullgraph=True)`` without a graph break, in
``torch.export`` and passes ``torch.library.opcheck``. torch is imported when
this module is, never by ``import tvmffi``.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import torch

from . import _torch_kernel
from .codegen import Signature, signature_of
from .codegen._check import ArgInfo, Checker, dtype_text
from .codegen._library import op_signature
from .codegen._spec import Scalar, Tensor, Var
from .dtype import dtype as ffi_dtype

__all__ = ["register_op", "schema"]

_SCALAR_TYPES = {
    "int32": "int",
    "int64": "int",
    "float32": "float",
    "float64": "float",
    "bool": "bool",
}

# torch device types -> the names the generated wrapper uses (DLPack's).
_DEVICE_NAMES = {"cpu": "cpu", "cuda": "cuda", "mps": "metal", "xpu": "oneapi"}

# The torch.library.Library objects that hold the registrations: an operator
# lives as long as its Library.
_LIBRARIES: list[torch.library.Library] = []
# The owners of the C++ kernels' registrations (see _torch_kernel): likewise kept.
_KERNELS: list[Any] = []
_LOCK = threading.Lock()


def schema(sig: Signature) -> str:
    """The PyTorch schema of ``sig``'s operator, without its name.

    Input tensors are ``Tensor`` arguments, ``inout`` ones ``Tensor(a!)``
    (mutated), scalars ``int``/``float``/``bool``; outputs are returned: one
    ``Tensor``, a tuple of them in declaration order, or ``()``.
    """
    args = []
    aliases = 0
    for p in sig.ffi_params:
        if isinstance(p, Scalar):
            args.append(f"{_SCALAR_TYPES[p.dtype]} {p.name}")
        elif p.inout:
            args.append(f"Tensor({_alias(aliases)}!) {p.name}")
            aliases += 1
        elif not p.output:
            args.append(f"Tensor {p.name}")
    outs = sig.outputs
    ret = "Tensor" if len(outs) == 1 else f"({', '.join('Tensor' for _ in outs)})"
    return f"({', '.join(args)}) -> {ret}"


def _alias(k: int) -> str:
    """Alias set names a, b, ..., z, a1, b1, ... for mutated arguments."""
    letter = chr(ord("a") + k % 26)
    return letter if k < 26 else f"{letter}{k // 26}"


def _torch_dtype(name: str) -> torch.dtype:
    dt = getattr(torch, name, None)
    if not isinstance(dt, torch.dtype):
        raise ValueError(f"torch has no dtype {name!r}")
    return dt


_DTYPE_TEXT: dict[torch.dtype, str] = {}


def _dtype_text(dt: torch.dtype) -> str:
    """A torch dtype as the generated wrapper's messages spell it."""
    text = _DTYPE_TEXT.get(dt)
    if text is None:
        try:
            d = ffi_dtype(dt)
            text = dtype_text(d.type_code, d.bits, d.lanes)
        except (TypeError, ValueError):  # no DLPack equivalent: torch's own name
            text = str(dt).removeprefix("torch.")
        _DTYPE_TEXT[dt] = text
    return text


def _arg_info(t: torch.Tensor) -> ArgInfo:
    """What the checks see of a (real, fake or meta) tensor."""
    dev = t.device
    kind = _DEVICE_NAMES.get(dev.type, dev.type)
    device = None if dev.type == "meta" else (kind, dev.index or 0)
    return ArgInfo(tuple(t.shape), _dtype_text(t.dtype), device, tuple(t.stride()))


def _described(item: Any) -> ArgInfo:
    """What the checks see of a tensor the C++ kernel described (see :meth:`_Plan.explain`)."""
    dtype, kind, index, shape, *strides = item
    device = None if kind == "meta" else (_DEVICE_NAMES.get(kind, kind), int(index))
    dims = tuple(strides[0]) if strides else None
    return ArgInfo(tuple(shape), _dtype_text(_torch_dtype(str(dtype))), device, dims)


def _example(value: Any) -> Any:
    """A symbolic size as the value it has in the example being traced."""
    if isinstance(value, torch.SymInt):
        node = value.node
        if node.has_hint():
            return node.hint
    return value


class _Plan:
    """How the operator's arguments map to ``fn``'s parameters, and its checks."""

    def __init__(self, sig: Signature):
        self.sig = sig
        self.checker = Checker(sig, _example)
        # Operator argument names (schema order) and the FFI parameters' order.
        self.op_params = [p for p in sig.ffi_params if not (isinstance(p, Tensor) and p.output)]
        self.out_dtypes = [_torch_dtype(t.dtype) for t in sig.outputs]
        self.first = sig.inputs[0].name if sig.inputs else None
        self.first_index = next(
            (i for i, p in enumerate(self.op_params) if p.name == self.first), -1
        )

    def check(self, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """Run the signature's checks on the operator's arguments; the output shapes."""
        return self._checked(args, _arg_info)

    def explain(self, items: Any) -> None:
        """The checks on a call the C++ kernel rejected, as it describes the call.

        Each item is a scalar, or a tensor as ``[dtype name, device type, device
        index, shape, strides]`` (no strides: not strided); raises the
        signature's error for the call.
        """
        self._checked(tuple(items), _described)

    def _checked(
        self, args: tuple[Any, ...], info: Callable[[Any], ArgInfo]
    ) -> list[tuple[Any, ...]]:
        tensors: dict[str, ArgInfo] = {}
        scalars: dict[str, object] = {}
        for p, a in zip(self.op_params, args, strict=True):
            if isinstance(p, Scalar):
                scalars[p.name] = a
            else:
                tensors[p.name] = info(a)
        return self.checker.output_shapes(self.checker.check(tensors, scalars))

    def fake(self, *args: Any) -> Any:
        """The fake (meta) implementation: checks, then empty outputs of the right shapes."""
        try:
            shapes = self.check(args)
        except ValueError as err:
            _break_graph_on(err)
            raise
        if not shapes:
            return None
        first = args[self.first_index]  # outputs imply an input (Signature checks)
        outs = tuple(
            first.new_empty(shape, dtype=dt)
            for shape, dt in zip(shapes, self.out_dtypes, strict=True)
        )
        return _returned(outs)

    def eager(self, fn: Callable[..., Any], checked: bool) -> Callable[..., Any]:
        """The eager implementation, generated straight-line for this signature.

        It allocates the outputs (shapes read from the inputs that bind their
        Vars) and calls ``fn`` with every parameter. When ``fn`` does not run
        the signature's checks itself (``checked`` false) they run here first.
        An input too wrong to read a dimension from sends the call to the checks,
        which name it.
        """
        sig = self.sig
        names = {p.name: f"a{i}" for i, p in enumerate(self.op_params)}
        args = ", ".join(names.values())
        env: dict[str, Any] = {
            "_fn": fn,
            "_check": self.check,
            "_empty": torch.empty,
            "_empty_like": torch.empty_like,
        }
        lines = [f"def impl({args}):"]
        if not checked:
            lines.append(f"    _check({_tuple(args)})")
        lines += self._allocations(names, env)
        outs = [f"o{i}" for i in range(len(sig.outputs))]
        it = iter(outs)
        call = [
            next(it) if isinstance(p, Tensor) and p.output else names[p.name]
            for p in sig.ffi_params
        ]
        lines.append(f"    _fn({', '.join(call)})")
        if outs:
            lines.append(
                f"    return {outs[0] if len(outs) == 1 else '(' + ', '.join(outs) + ',)'}"
            )
        exec(compile("\n".join(lines), f"<tvmffi.torch op {sig.name}>", "exec"), env)
        impl: Callable[..., Any] = env["impl"]
        return impl

    def _allocations(self, names: dict[str, str], env: dict[str, Any]) -> list[str]:
        """Lines of the eager implementation that allocate output ``o<i>``."""
        sig, where, lines, shapes = self.sig, _var_sources(self.sig), [], []
        dev = f"{names[self.first]}.device" if self.first is not None else ""
        for i, (t, dt) in enumerate(zip(sig.outputs, self.out_dtypes, strict=True)):
            twin = _twin(sig, t)
            if twin is not None:
                lines.append(f"    o{i} = _empty_like({names[twin.name]})")
                continue
            env[f"_dt{i}"] = dt
            dims = [str(d) if isinstance(d, int) else _read(names, where[d.name]) for d in t.shape]
            shapes.append(f"        s{i} = ({''.join(d + ', ' for d in dims)})")
            lines.append(f"    o{i} = _empty(s{i}, dtype=_dt{i}, device={dev})")
        if not shapes:
            return lines
        guard = [
            "    try:",
            *shapes,
            "    except IndexError:",
            f"        _check({_tuple(', '.join(names.values()))})",
            "        raise",
        ]
        return guard + lines


def _break_graph_on(err: ValueError) -> None:
    """While dynamo traces, turn a failed check into a graph break caused by ``err``.

    Dynamo reports any other exception of a fake implementation as a
    TorchRuntimeError that only quotes it. A graph break is what it does for a
    Python ``raise`` in traced code: without ``fullgraph`` the call runs eagerly
    and raises ``err`` itself; with ``fullgraph=True`` dynamo raises its
    ``Unsupported`` error with ``err`` as ``__cause__``. Outside dynamo (FakeTensorMode,
    non-strict ``torch.export``, opcheck) ``err`` propagates unchanged.
    """
    convert = sys.modules.get("torch._dynamo.symbolic_convert")
    if convert is None or getattr(convert.tls, "current_tx", None) is None:
        return
    exc = sys.modules.get("torch._dynamo.exc")
    # torch 2.7-2.9 name the structured graph break unimplemented_v2; later ones
    # unimplemented; before 2.7 unimplemented took a message only.
    structured = getattr(exc, "unimplemented_v2", None) or getattr(exc, "unimplemented", None)
    if structured is None:
        return
    explanation = str(err)
    try:
        structured(
            gb_type="tvmffi operator: the signature's check failed",
            context="",
            explanation=explanation,
            hints=["The same call raises this ValueError when run eagerly."],
            from_exc=err,
        )
    except TypeError:  # the message-only form
        structured(explanation, from_exc=err)


def _tuple(items: str) -> str:
    """Python source of a tuple of the comma-separated ``items``."""
    return f"({items},)" if items else "()"


def _twin(sig: Signature, out: Tensor) -> Tensor | None:
    """An input that a correct call gives ``out``'s shape, dtype and compact layout.

    ``torch.empty_like`` of it (the cheapest allocation torch has) is then a
    right output: the wrapper checks that input before the outputs, so a call
    where it is wrong fails on it and never looks at the output.
    """
    for t in sig.inputs:
        if t.shape == out.shape and t.dtype == out.dtype and t.strides is None:
            return t
    return None


def _var_sources(sig: Signature) -> dict[str, tuple[str, str, int]]:
    """Where each Var is bound: (input tensor name, "shape" or "strides", index)."""
    where: dict[str, tuple[str, str, int]] = {}
    for t in sig.inputs:
        for kind, dims in (("shape", t.shape), ("strides", t.strides or ())):
            for k, d in enumerate(dims):
                if isinstance(d, Var):
                    where.setdefault(d.name, (t.name, kind, k))
    return where


def _read(names: dict[str, str], source: tuple[str, str, int]) -> str:
    tensor, kind, k = source
    return f"{names[tensor]}.shape[{k}]" if kind == "shape" else f"{names[tensor]}.stride()[{k}]"


def _returned(outs: tuple[Any, ...]) -> Any:
    if not outs:
        return None
    return outs[0] if len(outs) == 1 else outs


def _register_eager(
    lib: torch.library.Library, qualname: str, fn: Any, plan: _Plan, checked: bool
) -> None:
    """The eager kernel: C++ (:mod:`._torch_kernel`) for an FFI function, else Python's.

    ``checked``: ``fn`` runs the signature's checks itself.
    """
    ns, name = qualname.split("::")
    owner = _torch_kernel.register(ns, name, fn, plan.sig, checked, plan.explain)
    if owner is not None:
        _KERNELS.append(owner)
        return
    eager = plan.eager(fn, checked)
    lib.impl(name, eager, "CompositeExplicitAutograd")  # type: ignore[no-untyped-call]


def register_op(
    qualname: str,
    fn: Callable[..., Any],
    sig: Signature | None = None,
    *,
    backward: Callable[..., Any] | None = None,
    backward_sig: Signature | None = None,
) -> torch._ops.OpOverload:
    """Define the PyTorch operator ``qualname`` (``"ns::name"``) that runs ``fn``.

    ``fn`` is an FFI function (from :mod:`tvmffi.codegen`, ``tvmffi.cpp.load_inline``,
    a module, a global function) taking ``sig``'s parameters in order, outputs
    included; ``sig`` may be left out for a function :mod:`tvmffi.codegen` built
    (its own signature). The operator takes the inputs (``inout`` tensors as
    mutated arguments) and scalars in that order and returns the outputs it
    allocates (one tensor, a tuple, or None); see :func:`schema`.

    Eagerly a C++ dispatcher kernel (:mod:`tvmffi._torch_kernel`, no Python, no
    GIL) allocates the outputs on the first input's device and calls ``fn``
    through the C ABI (on torch's current stream, which reaches the kernel as
    the environment stream); a function that ``codegen`` did not build gets the
    signature's checks there first, and a call that fails them raises the
    signature's error. Where the kernel library cannot be built, and for a
    ``fn`` that is not an FFI function, the eager kernel is generated Python
    doing the same (one warning for the former). Its fake implementation runs the
    signature's checks with the wrapper's messages and returns empty outputs
    of the computed shapes. Returns ``torch.ops.ns.name.default``.

    ``backward`` makes it differentiable: another kernel with its own signature
    (``backward_sig``, or its codegen signature), whose parameters are named after
    the forward's inputs and scalars and ``grad_<output>``, and whose outputs are
    ``grad_<input>``; or a Python function called with those keywords that returns
    the input gradients. See ``docs/scaling.md`` (``tvmffi._torch_autograd``).
    """
    if not isinstance(qualname, str) or qualname.count("::") != 1:
        raise ValueError(f"qualname must be 'namespace::name', got {qualname!r}")
    sig = op_signature(fn, sig, qualname)
    if not callable(fn):
        raise TypeError(f"fn must be callable, not {type(fn).__name__}")
    ns, name = qualname.split("::")
    plan = _Plan(sig)
    autograd = None
    if backward is not None or backward_sig is not None:
        from ._torch_autograd import prepare_backward  # checked before anything is defined

        autograd = prepare_backward(qualname, sig, backward, backward_sig)
    with _LOCK:
        # (torch.library's methods are untyped.)
        lib = torch.library.Library(ns, "FRAGMENT")  # type: ignore[no-untyped-call]
        lib.define(name + schema(sig))  # type: ignore[no-untyped-call]
        _register_eager(lib, qualname, fn, plan, checked=signature_of(fn) == sig)
        torch.library.register_fake(qualname, plan.fake, lib=lib)
        _LIBRARIES.append(lib)
    if autograd is not None:
        autograd.attach(qualname, lib, register_op)
    op: torch._ops.OpOverload = getattr(getattr(torch.ops, ns), name).default
    return op
