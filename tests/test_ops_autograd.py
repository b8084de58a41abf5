"""tvmffi.torch.register_op(..., backward=...): gradients from a kernel or a Python function.

gradcheck on float64 kernels; torch.compile through forward and backward; a DDP
run of 2 gloo ranks on 127.0.0.1 (torch.multiprocessing.spawn) training a module
that uses the operator, compiled with no graph break, whose ranks agree.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest

import tvmffi
from tvmffi import codegen
from tvmffi.codegen import Scalar, Signature, Tensor, Var

torch = pytest.importorskip("torch")
import tvmffi.torch  # noqa: E402  (needs torch)

# tvmffi's own source directory, as it appears in torch's graph-break text.
TVMFFI_DIR = os.path.dirname(os.path.abspath(tvmffi.__file__)) + os.sep
N = Var("n")
MUL = Signature(
    "ad_mul",
    [
        Tensor("x", [N], "float64"),
        Tensor("y", [N], "float64"),
        Tensor("out", [N], "float64", output=True),
    ],
)
MUL_BODY = "for (int64_t i = 0; i < n; ++i) out[i] = x[i] * y[i];"
# The backward kernel: named after the forward's inputs and grad_<output>; its
# outputs are grad_<input>.
MUL_BWD = Signature(
    "ad_mul_bwd",
    [
        Tensor("x", [N], "float64"),
        Tensor("y", [N], "float64"),
        Tensor("grad_out", [N], "float64"),
        Tensor("grad_x", [N], "float64", output=True),
        Tensor("grad_y", [N], "float64", output=True),
    ],
)
MUL_BWD_BODY = """
for (int64_t i = 0; i < n; ++i) { grad_x[i] = grad_out[i] * y[i]; grad_y[i] = grad_out[i] * x[i]; }
"""
AXPY = Signature(
    "ad_axpy",
    [
        Tensor("x", [N], "float64"),
        Tensor("y", [N], "float64"),
        Scalar("alpha", "float64"),
        Tensor("out", [N], "float64", output=True),
    ],
)
AXPY_BODY = "for (int64_t i = 0; i < n; ++i) out[i] = alpha * x[i] + y[i];"


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    cache = tmp_path_factory.mktemp("ops-autograd")
    return {
        "mul": codegen.inline(MUL, MUL_BODY, output_dir=cache),
        "mul_bwd": codegen.inline(MUL_BWD, MUL_BWD_BODY, output_dir=cache),
        "axpy": codegen.inline(AXPY, AXPY_BODY, output_dir=cache),
    }


def _inputs(n: int = 6) -> tuple[Any, Any]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, dtype=torch.float64, generator=g, requires_grad=True)
    y = torch.randn(n, dtype=torch.float64, generator=g, requires_grad=True)
    return x, y


def test_gradcheck_with_a_backward_kernel(kernels: dict[str, Any]) -> None:
    op = tvmffi.torch.register_op("ad_test::mul", kernels["mul"], backward=kernels["mul_bwd"])
    x, y = _inputs()
    assert torch.autograd.gradcheck(op, (x, y))
    (op(x, y).sum()).backward()
    torch.testing.assert_close(x.grad, y.detach())
    torch.testing.assert_close(y.grad, x.detach())
    # The backward kernel is an operator of its own (fake implementation included).
    assert hasattr(torch.ops.ad_test, "mul_backward")


def test_gradcheck_with_a_python_backward(kernels: dict[str, Any]) -> None:
    def backward(x: Any, y: Any, alpha: float, grad_out: Any) -> dict[str, Any]:
        return {"x": alpha * grad_out, "y": grad_out}

    op = tvmffi.torch.register_op("ad_test::axpy", kernels["axpy"], backward=backward)
    x, y = _inputs()
    assert torch.autograd.gradcheck(lambda a, b: op(a, b, 2.5), (x, y))

    # A tuple in input order works too; None means no gradient.
    op2 = tvmffi.torch.register_op(
        "ad_test::axpy2", kernels["axpy"], backward=lambda x, y, alpha, grad_out: (None, grad_out)
    )
    x, y = _inputs()
    op2(x, y, 3.0).sum().backward()
    assert x.grad is None
    torch.testing.assert_close(y.grad, torch.ones_like(y))


def test_backward_kernel_with_a_scalar_and_one_gradient(
    kernels: dict[str, Any], tmp_path: Path
) -> None:
    bwd_sig = Signature(
        "ad_axpy_bwd",
        [
            Tensor("grad_out", [N], "float64"),
            Scalar("alpha", "float64"),
            Tensor("grad_x", [N], "float64", output=True),
        ],
    )
    bwd = codegen.inline(
        bwd_sig,
        "for (int64_t i = 0; i < n; ++i) grad_x[i] = alpha * grad_out[i];",
        output_dir=tmp_path,
    )
    op = tvmffi.torch.register_op("ad_test::axpy3", kernels["axpy"], backward=bwd)
    x, y = _inputs()
    op(x, y, 4.0).sum().backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 4.0))
    assert y.grad is None  # the kernel computes no grad_y


def test_bad_backwards_are_refused_before_the_op_is_defined(kernels: dict[str, Any]) -> None:
    wrong = Signature(
        "ad_wrong",
        [Tensor("z", [N], "float64"), Tensor("grad_x", [N], "float64", output=True)],
    )
    with pytest.raises(ValueError, match="parameter 'z' is neither an input"):
        tvmffi.torch.register_op(
            "ad_test::bad", kernels["mul"], backward=kernels["mul"], backward_sig=wrong
        )
    wrong_out = Signature(
        "ad_wrong2",
        [Tensor("x", [N], "float64"), Tensor("grad_q", [N], "float64", output=True)],
    )
    with pytest.raises(ValueError, match="output 'grad_q' is not grad_<input>"):
        tvmffi.torch.register_op(
            "ad_test::bad", kernels["mul"], backward=kernels["mul"], backward_sig=wrong_out
        )
    with pytest.raises(TypeError, match="backward must be callable"):
        tvmffi.torch.register_op("ad_test::bad", kernels["mul"], backward=3)
    inout = Signature("ad_inout", [Tensor("x", [N], "float64", inout=True)])
    with pytest.raises(ValueError, match="inout tensors cannot have a backward"):
        tvmffi.torch.register_op("ad_test::bad", kernels["mul"], inout, backward=lambda **k: None)
    # Nothing was defined: the name is still free.
    op = tvmffi.torch.register_op("ad_test::bad", kernels["mul"], backward=kernels["mul_bwd"])
    x, y = _inputs()
    assert torch.autograd.gradcheck(op, (x, y))


def test_python_backward_returning_wrong_gradients(kernels: dict[str, Any]) -> None:
    op = tvmffi.torch.register_op(
        "ad_test::mul_wrong", kernels["mul"], backward=lambda **k: {"q": k["grad_out"]}
    )
    x, y = _inputs()
    with pytest.raises(ValueError, match=r"gradients for \['q'\]"):
        op(x, y).sum().backward()


def test_compile_fullgraph_forward_and_backward(kernels: dict[str, Any]) -> None:
    op = tvmffi.torch.register_op("ad_test::mul_c", kernels["mul"], backward=kernels["mul_bwd"])

    def f(a: Any, b: Any) -> Any:
        return (op(a, b) * 2).sin().sum()

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    x, y = _inputs()
    compiled(x, y).backward()
    gx, gy = x.grad.clone(), y.grad.clone()
    x.grad = y.grad = None
    f(x, y).backward()
    torch.testing.assert_close(gx, x.grad)
    torch.testing.assert_close(gy, y.grad)


# ---- DDP: 2 gloo ranks --------------------------------------------------------
STEPS, LR = 3, 0.1


def _data(rank: int, step: int) -> tuple[Any, Any]:
    g = torch.Generator().manual_seed(100 * rank + step)
    return torch.randn(8, dtype=torch.float64, generator=g), torch.randn(
        8, dtype=torch.float64, generator=g
    )


class _Scale(torch.nn.Module):
    """y = w * x through the tvmffi operator."""

    def __init__(self, op: Any) -> None:
        super().__init__()
        self.op = op
        self.w = torch.nn.Parameter(torch.linspace(0.5, 1.5, 8, dtype=torch.float64))

    def forward(self, x: Any) -> Any:
        return self.op(x, self.w)


class _Plain(_Scale):
    """The same module in plain torch ops: what DDP's own code costs torch.compile."""

    def forward(self, x: Any) -> Any:
        return x * self.w


def _outer_compile_breaks(module: Any) -> list[str]:
    """Graph breaks of torch.compile(DDP(module)) over one training step."""
    from torch._dynamo.utils import counters
    from torch.nn.parallel import DistributedDataParallel

    counters.clear()
    torch._dynamo.reset()
    compiled = torch.compile(DistributedDataParallel(module), backend="aot_eager")
    compiled(_data(0, 0)[0]).sum().backward()
    return sorted(counters["graph_break"])


def _ddp_rank(rank: int, world: int, port: int, fwd: Any, bwd: Any, out_dir: str) -> None:
    """One rank: the kernels arrive pickled (their libraries and signatures)."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        op = tvmffi.torch.register_op("ddp_test::mul", fwd, backward=bwd)
        # fullgraph=True: a graph break (in the forward or the backward) would raise.
        module = torch.compile(_Scale(op), fullgraph=True, backend="aot_eager")
        model = DistributedDataParallel(module)
        opt = torch.optim.SGD(model.parameters(), lr=LR)
        for step in range(STEPS):
            x, target = _data(rank, step)
            opt.zero_grad()
            loss = ((model(x) - target) ** 2).sum()
            loss.backward()
            opt.step()
        w = model.module.w.detach()
        gathered = [torch.empty_like(w) for _ in range(world)]
        dist.all_gather(gathered, w)
        result = {
            "w": w.tolist(),
            "all": [g.tolist() for g in gathered],
            # torch.compile(DDP(m)) breaks in DDP's own code (its runtime-stats logging,
            # torch 2.13): the operator must add none to those of plain torch ops.
            "outer_breaks": _outer_compile_breaks(_Scale(op)),
            "plain_breaks": _outer_compile_breaks(_Plain(op)),
        }
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps(result))
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _reference_w(world: int) -> Any:
    """The same training in one process, gradients averaged as DDP does."""
    w = torch.linspace(0.5, 1.5, 8, dtype=torch.float64)
    for step in range(STEPS):
        grad = torch.zeros_like(w)
        for rank in range(world):
            x, target = _data(rank, step)
            grad += 2 * (w * x - target) * x
        w = w - LR * grad / world
    return w


@pytest.mark.slow  # two gloo ranks, each compiling with torch.compile
def test_ddp_two_gloo_ranks_train_and_agree(kernels: dict[str, Any], tmp_path: Path) -> None:
    import torch.multiprocessing as mp

    world = 2
    mp.spawn(
        _ddp_rank,
        args=(world, _free_port(), kernels["mul"], kernels["mul_bwd"], str(tmp_path)),
        nprocs=world,
        join=True,
    )
    results = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(world)]
    expected = _reference_w(world)
    for r in results:
        assert r["all"][0] == r["all"][1]  # the ranks agree
        torch.testing.assert_close(torch.tensor(r["w"], dtype=torch.float64), expected)
        assert r["outer_breaks"] == r["plain_breaks"]
        # The operator's own name, and tvmffi's own source files: a path segment named
        # tvmffi elsewhere (the clone folder, its .venv) is not tvmffi's code.
        assert not any("ddp_test" in b or TVMFFI_DIR in b for b in r["outer_breaks"])
    assert not torch.equal(expected, torch.linspace(0.5, 1.5, 8, dtype=torch.float64))
