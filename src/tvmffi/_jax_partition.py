"""Sharded JAX operators: ``tvmffi.jax.register_op(..., partition=...)``.

The signature already is a sharding rule: each :class:`~tvmffi.codegen.Var` is
a factor shared by every dimension it names (a Shardy ``sharding_rule`` such as
``"n, n -> n"``), and a constant dimension is a factor of its own that must stay
whole. ``partition`` says what the kernel allows for each Var:

- ``"split"``: the kernel is element-wise along it: run on a shard of that
  dimension it computes that shard of the result (no collective). An output
  must have it: a Var of inputs only split across devices leaves each with a
  partial result, so naming one ``"split"`` raises ``ValueError`` (it is a
  ``"reduce"``);
- ``"reduce"``: a contraction (it must not appear in an output): each shard
  computes a partial result and the shards' outputs are summed (``psum``);
- ``"whole"``: the kernel needs all of it on every device (inputs sharded along
  it are gathered first).

``partition=True`` splits every Var an output has (a Var of inputs only stays
whole); a mapping ``{var_name: kind}`` names the kinds, other Vars staying whole. The operator is a
:func:`jax.experimental.custom_partitioning` function: under ``jax.jit`` on
sharded inputs each device runs the kernel on its shard, and the output keeps
the sharding the rule gives it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
from jax.experimental.custom_partitioning import custom_partitioning
from jax.sharding import NamedSharding, PartitionSpec

from .codegen import Signature
from .codegen._spec import Tensor, Var

__all__ = ["KINDS", "partitioned", "sharding_rule"]

KINDS = ("split", "reduce", "whole")


def _kinds(sig: Signature, partition: Any) -> dict[str, str]:
    """Each Var's kind from ``partition`` (True, or a mapping of Var names to kinds)."""
    names = [v.name for v in sig.vars]
    in_outputs = {
        d.name
        for t in (list(sig.outputs) or [t for t in sig.inputs if t.inout])
        for d in t.shape
        if isinstance(d, Var)
    }
    if partition is True:
        return {name: "split" if name in in_outputs else "whole" for name in names}
    if not isinstance(partition, Mapping):
        raise TypeError(
            f"partition must be True or a mapping of Var names to {', '.join(KINDS)}, "
            f"not {type(partition).__name__}"
        )
    kinds = dict.fromkeys(names, "whole")
    for name, kind in partition.items():
        if name not in kinds:
            raise ValueError(
                f"partition names {name!r}, which is not a Var of {sig.name!r} "
                f"({', '.join(names) or 'none'})"
            )
        if kind not in KINDS:
            raise ValueError(f"partition kind of {name!r} must be one of {KINDS}, got {kind!r}")
        if kind == "split" and name not in in_outputs:
            raise ValueError(
                f"partition: {name!r} is 'split' but no output of {sig.name!r} has it: each "
                "device would return its shard's partial result. Mark it 'reduce' (the "
                "outputs are summed across devices) or 'whole' (it is gathered first)"
            )
        kinds[name] = kind
    return kinds


def sharding_rule(
    sig: Signature, partition: Any
) -> tuple[str, tuple[str, ...], tuple[str, ...], list[tuple[int, int, str]]]:
    """The Shardy rule of ``sig``'s operator: (rule text, reduction factors,
    need-replication factors, (operand, dim, factor) of each reduction dimension)."""
    kinds = _kinds(sig, partition)
    operands = list(sig.inputs)
    results = list(sig.outputs) or [t for t in sig.inputs if t.inout]
    used = {v.name for v in sig.vars}
    fresh = (f"c{i}" for i in range(1 << 30))
    replicate: list[str] = [name for name, kind in kinds.items() if kind == "whole"]
    reduce = [name for name, kind in kinds.items() if kind == "reduce"]
    for t in results:
        for d in t.shape:
            if isinstance(d, Var) and kinds[d.name] == "reduce":
                raise ValueError(
                    f"partition: {d.name!r} is a reduction but output {t.name!r} has it "
                    "(a reduced dimension appears in inputs only)"
                )

    def factors(t: Tensor) -> str:
        out: list[str] = []
        for d in t.shape:
            if isinstance(d, Var) and d.name not in out:
                out.append(d.name)
                continue
            # A constant, or a Var a second time in one tensor: a factor of its own, whole.
            name = next(f for f in fresh if f not in used)
            used.add(name)
            replicate.append(name)
            out.append(name)
        return " ".join(out)

    text = f"{', '.join(factors(t) for t in operands)} -> {', '.join(factors(t) for t in results)}"
    reduction_dims = [
        (i, k, d.name)
        for i, t in enumerate(operands)
        for k, d in enumerate(t.shape)
        if isinstance(d, Var) and kinds[d.name] == "reduce"
    ]
    return text, tuple(reduce), tuple(dict.fromkeys(replicate)), reduction_dims


def _mesh_axes(spec: Any, dim: int) -> tuple[str, ...]:
    """The mesh axes a PartitionSpec shards dimension ``dim`` along."""
    entry = spec[dim] if spec is not None and dim < len(spec) else None
    if entry is None:
        return ()
    return tuple(entry) if isinstance(entry, tuple) else (entry,)


def _keep_whole(sharding: Any, factors: list[str], whole: set[str]) -> Any:
    """``sharding`` with the dimensions of ``whole`` factors unsharded."""
    if not isinstance(sharding, NamedSharding):
        return sharding  # (a sharding without a mesh's names: left as it is)
    spec = list(sharding.spec) + [None] * (len(factors) - len(sharding.spec))
    if not any(f in whole and spec[i] is not None for i, f in enumerate(factors)):
        return sharding
    kept = [None if f in whole else spec[i] for i, f in enumerate(factors)]
    return NamedSharding(sharding.mesh, PartitionSpec(*kept))  # type: ignore[no-untyped-call]


def partitioned(
    op: Callable[..., Any], check: Callable[..., Any], sig: Signature, partition: Any
) -> Callable[..., Any]:
    """``op(*arrays, **scalars)`` as a custom_partitioning function with ``sig``'s rule.

    ``check(arrays, scalars)`` runs the signature's checks on the global shapes;
    each shard's call runs them again on its local shapes (divisibility included).
    """
    rule, reduce, replicate, reduction_dims = sharding_rule(sig, partition)
    # Which dimensions must stay whole, per operand and per result: the partition
    # callback may be handed shardings that split them (Shardy takes
    # need-replication factors as a preference), so it asks for them whole.
    operand_factors, result_factors = (
        [side.split() for side in part.split(", ")] if part.strip() else []
        for part in rule.split(" -> ")
    )
    whole = set(replicate)

    def body(scalars: tuple[tuple[str, Any], ...], *arrays: Any) -> Any:
        return op(*arrays, **dict(scalars))

    def lower(scalars: Any, mesh: Any, arg_shapes: Any, result_shape: Any) -> Any:
        axes: list[str] = []
        for i, dim, _ in reduction_dims:
            for axis in _mesh_axes(arg_shapes[i].sharding.spec, dim):
                if axis not in axes:
                    axes.append(axis)

        def per_shard(*arrays: Any) -> Any:
            out = op(*arrays, **dict(scalars))
            return jax.lax.psum(out, tuple(axes)) if axes else out  # type: ignore[no-untyped-call]

        arg_shardings = tuple(
            _keep_whole(a.sharding, factors, whole)
            for a, factors in zip(arg_shapes, operand_factors, strict=True)
        )
        if isinstance(result_shape, (tuple, list)):
            result_shardings: Any = tuple(
                _keep_whole(r.sharding, factors, whole)
                for r, factors in zip(result_shape, result_factors, strict=True)
            )
        else:
            result_shardings = _keep_whole(result_shape.sharding, result_factors[0], whole)
        return mesh, per_shard, result_shardings, arg_shardings

    call = custom_partitioning(body, static_argnums=(0,))  # type: ignore[no-untyped-call]
    call.def_partition(  # type: ignore[no-untyped-call]
        lower,
        sharding_rule=rule,
        reduction_factors=reduce,
        need_replication_factors=replicate,
    )

    def sharded_op(*arrays: Any, **scalars: Any) -> Any:
        scalars = check(arrays, scalars)
        return call(tuple(sorted(scalars.items())), *arrays)

    sharded_op.sharding_rule = rule  # type: ignore[attr-defined]
    return sharded_op
