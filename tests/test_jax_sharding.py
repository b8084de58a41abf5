"""tvmffi.jax.register_op(..., partition=...): the signature's Shardy rule shards the kernel.

The sharded runs happen in a subprocess with 4 host devices
(``XLA_FLAGS=--xla_force_host_platform_device_count=4``, fixed when JAX starts):
the compiled HLO of a split kernel has no all-gather around its custom call,
the output keeps its sharding, ``shard_map`` works, a reduction is summed, and
every result equals the unsharded call.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import run_python

import tvmffi
from tvmffi import codegen
from tvmffi.codegen import Scalar, Signature, Tensor, Var

jax = pytest.importorskip("jax")
pytest.importorskip("jax_tvm_ffi")
pytestmark = pytest.mark.usefixtures("jax_on_cpu")
import tvmffi.jax  # noqa: E402  (needs jax)
from tvmffi._jax_partition import sharding_rule  # noqa: E402

N, M, K = Var("n"), Var("m"), Var("k")
AXPBY = Signature(
    "sh_axpby",
    [
        Tensor("x", [N], "float32"),
        Tensor("y", [N], "float32"),
        Scalar("alpha", "float32"),
        Tensor("out", [N], "float32", output=True),
    ],
)


def test_rule_from_the_signature() -> None:
    assert sharding_rule(AXPBY, True)[0] == "n, n -> n"
    matvec = Signature(
        "sh_mv",
        [
            Tensor("a", [M, K], "float32"),
            Tensor("v", [K, 3], "float32"),
            Tensor("out", [M, 3], "float32", output=True),
        ],
    )
    rule, reduce, replicate, dims = sharding_rule(matvec, {"m": "split", "k": "reduce"})
    assert rule == "m k, k c0 -> m c1"  # each constant dimension a factor of its own...
    assert reduce == ("k",) and replicate == ("c0", "c1")  # ... that stays whole
    assert dims == [(0, 1, "k"), (1, 0, "k")]
    # Vars left out of a mapping stay whole.
    assert sharding_rule(matvec, {"m": "split"})[2] == ("k", "c0", "c1")
    square = Signature(
        "sh_sq", [Tensor("a", [N, N], "float32"), Tensor("o", [N], "float32", output=True)]
    )
    assert sharding_rule(square, True)[:3] == ("n c0 -> n", (), ("c0",))


def test_bad_partitions() -> None:
    with pytest.raises(ValueError, match="'q', which is not a Var"):
        sharding_rule(AXPBY, {"q": "split"})
    with pytest.raises(ValueError, match="must be one of"):
        sharding_rule(AXPBY, {"n": "scatter"})
    with pytest.raises(ValueError, match="'n' is a reduction but output 'out' has it"):
        sharding_rule(AXPBY, {"n": "reduce"})
    with pytest.raises(TypeError, match="partition must be True or a mapping"):
        sharding_rule(AXPBY, "n")


def test_split_var_of_inputs_only_is_refused_or_kept_whole() -> None:
    # Issue 40 item 8: a row sum split along its contraction Var returned one device's
    # partial sum. Named "split", such a Var is refused; partition=True keeps it whole.
    rowsum = Signature(
        "sh_rowsum",
        [Tensor("a", [M, K], "float32"), Tensor("out", [M], "float32", output=True)],
    )
    with pytest.raises(ValueError, match="'k' is 'split' but no output of 'sh_rowsum' has it"):
        sharding_rule(rowsum, {"m": "split", "k": "split"})
    with pytest.raises(ValueError, match="Mark it 'reduce'"):
        tvmffi.jax.register_op(
            "test_rel5_rowsum", lambda a, out: None, rowsum, partition={"k": "split"}
        )
    rule, reduce, replicate, _ = sharding_rule(rowsum, True)
    assert rule == "m k -> m" and reduce == () and replicate == ("k",)
    assert sharding_rule(rowsum, {"m": "split", "k": "reduce"})[1] == ("k",)


def test_partitioned_op_runs_unsharded(tmp_path: Path) -> None:
    """One device: the partitioned operator gives the same results (and its checks)."""
    import numpy as np

    fn = codegen.inline(
        AXPBY, "for (int64_t i = 0; i < n; ++i) out[i] = alpha * x[i] + y[i];", output_dir=tmp_path
    )
    op = tvmffi.jax.register_op("sh_test.axpby1", fn, partition=True)
    assert op.sharding_rule == "n, n -> n"
    x, y = np.arange(8, dtype=np.float32), np.ones(8, np.float32)
    np.testing.assert_array_equal(np.asarray(op(x, y, alpha=2.0)), 2 * x + y)
    with pytest.raises(ValueError, match="shape"):
        op(x, y[:4], alpha=2.0)


SCRIPT = r"""
import json, os, sys
import numpy as np
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from tvmffi import codegen
from tvmffi.codegen import Scalar, Signature, Tensor, Var
import tvmffi.jax

cache = sys.argv[1]
assert len(jax.devices()) == 4, jax.devices()
n, m, k = Var("n"), Var("m"), Var("k")
axpby = Signature("sh_axpby", [
    Tensor("x", [n], "float32"), Tensor("y", [n], "float32"),
    Scalar("alpha", "float32"), Tensor("out", [n], "float32", output=True)])
fn = codegen.inline(axpby, "for (int64_t i = 0; i < n; ++i) out[i] = alpha * x[i] + y[i];",
                    output_dir=cache)
plain = tvmffi.jax.register_op("sh.axpby_plain", fn)
split = tvmffi.jax.register_op("sh.axpby_split", fn, partition=True)
whole = tvmffi.jax.register_op("sh.axpby_whole", fn, partition={"n": "whole"})
rowsum = Signature("sh_rowsum", [Tensor("x", [m, k], "float32"),
                                 Tensor("out", [m], "float32", output=True)])
rfn = codegen.inline(rowsum, "for (int64_t i = 0; i < m; ++i) { float s = 0; "
                     "for (int64_t j = 0; j < k; ++j) s += x[i * k + j]; out[i] = s; }",
                     output_dir=cache)
rsum = tvmffi.jax.register_op("sh.rowsum", rfn, partition={"m": "split", "k": "reduce"})
scale = Signature("sh_scale_", [Tensor("x", [n], "float32", inout=True), Scalar("a", "float32")])
sfn = codegen.inline(scale, "for (int64_t i = 0; i < n; ++i) x[i] *= a;", output_dir=cache)
sscale = tvmffi.jax.register_op("sh.scale_", sfn, partition=True)

out = {}
mesh = Mesh(np.array(jax.devices()), ("d",))
sh = NamedSharding(mesh, P("d"))
xh, yh = np.arange(32, dtype=np.float32), np.ones(32, np.float32)
x, y = jax.device_put(xh, sh), jax.device_put(yh, sh)
expected = 2 * xh + yh

def hlo(f, *args):
    return f.lower(*args).compile().as_text()

for name, op in (("plain", plain), ("split", split), ("whole", whole)):
    f = jax.jit(lambda a, b, op=op: op(a, b, alpha=2.0))
    r = f(x, y)
    text = hlo(f, x, y)
    out[name] = {"all_gather": "all-gather" in text, "spec": str(r.sharding.spec),
                 "equal": bool(np.array_equal(np.asarray(r), expected)),
                 "custom_calls": text.count("custom_call_target=\"sh.axpby")}

# shard_map: each device calls the operator on its block.
from jax import shard_map
g = jax.jit(shard_map(lambda a, b: split(a, b, alpha=2.0), mesh=mesh,
                      in_specs=(P("d"), P("d")), out_specs=P("d")))
out["shard_map"] = bool(np.array_equal(np.asarray(g(x, y)), expected))

# A reduction over a 2 x 2 mesh: rows split along "a", the reduced dim along "b".
mesh2 = Mesh(np.array(jax.devices()).reshape(2, 2), ("a", "b"))
xm = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)
xs = jax.device_put(xm, NamedSharding(mesh2, P("a", "b")))
f = jax.jit(lambda a: rsum(a))
r = f(xs)
text = hlo(f, xs)
out["reduce"] = {"all_gather": "all-gather" in text, "all_reduce": "all-reduce" in text,
                 "spec": str(r.sharding.spec),
                 "equal": bool(np.allclose(np.asarray(r), xm.sum(axis=1)))}

# An inout kernel keeps its operand's sharding.
f = jax.jit(lambda a: sscale(a, a=3.0))
r = f(x)
out["inout"] = {"all_gather": "all-gather" in hlo(f, x), "spec": str(r.sharding.spec),
                "equal": bool(np.array_equal(np.asarray(r), 3 * xh))}
print("RESULT " + json.dumps(out))
"""


def test_sharded_jit_has_no_all_gather(tmp_path: Path) -> None:
    script = tmp_path / "sharded.py"
    script.write_text(SCRIPT)
    code = textwrap.dedent(
        f"""
        import runpy, sys
        sys.argv = [{str(script)!r}, {str(tmp_path)!r}]
        runpy.run_path({str(script)!r}, run_name="__main__")
        """
    )
    proc = run_python(
        code,
        timeout=600,
        env_extra={
            "XLA_FLAGS": "--xla_force_host_platform_device_count=4",
            "JAX_PLATFORMS": "cpu",
        },
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    r: dict[str, Any] = json.loads(line.removeprefix("RESULT "))
    # Without a rule XLA gathers both inputs and replicates the result (the finding).
    assert r["plain"]["all_gather"] and r["plain"]["equal"]
    # Split: no all-gather, the output keeps P('d'), the same values.
    assert r["split"] == {
        "all_gather": False,
        "spec": "P('d',)",
        "equal": True,
        "custom_calls": r["split"]["custom_calls"],
    }
    assert r["split"]["custom_calls"] >= 1
    # Whole: the kernel needs all of n, so the inputs are gathered first.
    assert r["whole"]["all_gather"] and r["whole"]["equal"], r["whole"]
    assert r["shard_map"] is True
    # Reduction: partial sums all-reduced, no gather, rows stay split along "a".
    assert r["reduce"] == {
        "all_gather": False,
        "all_reduce": True,
        "spec": "P('a',)",
        "equal": True,
    }
    assert r["inout"] == {"all_gather": False, "spec": "P('d',)", "equal": True}
