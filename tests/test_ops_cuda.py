"""tvmffi.torch / tvmffi.jax operators on CUDA tensors (issue 25 item 6); skipped without a GPU.

Run on a GPU machine with:
    python -m pytest -q tests/test_ops_cuda.py
torch's current stream must reach the kernel as the environment stream, eagerly
and under torch.compile; outputs are allocated on the inputs' GPU. The CUDA
kernel itself needs nvcc (those tests skip without it); the stream tests do not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import tvmffi
from tvmffi import codegen
from tvmffi._build import toolchain
from tvmffi.codegen import EnvStream, Signature, Tensor

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
from ops_kernels import N, axpby_signature  # noqa: E402

import tvmffi.torch  # noqa: E402  (needs torch)

RECORD = Signature(
    "record_stream",
    [
        Tensor("x", [N], "float32", device="cuda"),
        Tensor("out", [N], "float32", device="cuda", output=True),
        EnvStream("stream"),
    ],
)
LAST = Signature("last_stream", [Tensor("s", [1], "int64")])
# Host code only: it records the stream it was given and touches no GPU memory.
RECORD_SOURCE = r"""
#include <stdint.h>
static void* last;
int record_stream_k(float* x, float* out, int64_t n, void* stream) {
  (void)x; (void)out; (void)n;
  last = stream;
  return 0;
}
int last_stream_k(int64_t* s) { s[0] = (int64_t)(intptr_t)last; return 0; }
"""
AXPBY = axpby_signature("cuda_axpby", device="cuda")
AXPBY_CUDA = r"""
#include <cuda_runtime.h>
#include <stdint.h>
#include <tvm/ffi/c_api.h>
__global__ void axpby(const float* x, const float* y, float a, float* o, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) o[i] = a * x[i] + y[i];
}
extern "C" int cuda_axpby_k(float* x, float* y, float alpha, float* out, int64_t n, void* s) {
  if (n > 0) axpby<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)s>>>(x, y, alpha, out, n);
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return 0;
  TVMFFIErrorSetRaisedFromCStr("RuntimeError", cudaGetErrorString(err));
  return -1;
}
"""


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ops-cuda")


@pytest.fixture(scope="module")
def recorder(cache: Path) -> tuple[Any, tvmffi.Function]:
    mod = codegen.build(
        [(RECORD, "record_stream_k"), (LAST, "last_stream_k")],
        sources=[RECORD_SOURCE],
        name="ops_cuda_record",
        output_dir=cache,
    )
    return tvmffi.torch.register_op("tvmffi_cuda::record", mod.record_stream), mod.last_stream


@pytest.fixture(scope="module")
def axpby_fn(cache: Path) -> tvmffi.Function:
    try:
        toolchain.compiler("cuda")
    except RuntimeError:
        pytest.skip("nvcc not found")
    mod = codegen.build(
        [(AXPBY, "cuda_axpby_k")],
        cuda_sources=[AXPBY_CUDA],
        name="ops_cuda_axpby",
        output_dir=cache,
    )
    return mod.cuda_axpby


@pytest.fixture(scope="module")
def axpby(axpby_fn: tvmffi.Function) -> Any:
    return tvmffi.torch.register_op("tvmffi_cuda::axpby", axpby_fn)


def _last(last_stream: tvmffi.Function) -> int:
    s = torch.zeros(1, dtype=torch.int64)
    last_stream(s)
    return int(s[0])


def test_current_stream_reaches_the_kernel(recorder: tuple[Any, tvmffi.Function]) -> None:
    op, last_stream = recorder
    x = torch.ones(8, device="cuda")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        out = op(x)
    assert out.device == x.device and out.shape == (8,)
    assert _last(last_stream) == stream.cuda_stream != 0
    other = torch.cuda.Stream()
    with torch.cuda.stream(other):
        op(x)
    assert _last(last_stream) == other.cuda_stream


def test_current_stream_reaches_the_kernel_under_compile(
    recorder: tuple[Any, tvmffi.Function],
) -> None:
    _, last_stream = recorder
    torch._dynamo.reset()
    f = torch.compile(lambda x: torch.ops.tvmffi_cuda.record(x) + 1, fullgraph=True)
    x = torch.ones(8, device="cuda")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        out = f(x)
    stream.synchronize()
    assert out.device == x.device
    assert _last(last_stream) == stream.cuda_stream


def test_cuda_eager_compile_export_opcheck(axpby: Any) -> None:
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    y = torch.ones(1000, device="cuda")
    torch.testing.assert_close(torch.ops.tvmffi_cuda.axpby(x, y, 2.0), 2 * x + y)
    torch._dynamo.reset()
    f = torch.compile(lambda x, y: torch.ops.tvmffi_cuda.axpby(x, y, 2.0) * 2, fullgraph=True)
    torch.testing.assert_close(f(x, y), 4 * x + 2 * y)

    class M(torch.nn.Module):
        def forward(self, x: Any, y: Any) -> Any:
            return torch.ops.tvmffi_cuda.axpby(x, y, 0.5)

    ep = torch.export.export(M(), (x, y))
    torch.testing.assert_close(ep.module()(x, y), 0.5 * x + y)
    torch.library.opcheck(
        axpby, (torch.randn(64, device="cuda"), torch.randn(64, device="cuda"), 3.0)
    )


def test_cuda_errors_eager_and_traced(axpby: Any) -> None:
    x = torch.ones(4, device="cuda")
    with pytest.raises(ValueError) as eager:
        axpby(x, torch.ones(4), 2.0)
    assert str(eager.value).startswith(
        "Parameter `y` expects device_type=cuda but got device_type=cpu when calling:"
    )
    from torch._subclasses.fake_tensor import FakeTensorMode

    for bad in (torch.ones(4), torch.ones(5, device="cuda")):
        with pytest.raises(ValueError) as eager:
            axpby(x, bad, 2.0)
        with FakeTensorMode() as mode, pytest.raises(ValueError) as fake:
            axpby(mode.from_tensor(x), mode.from_tensor(bad), 2.0)
        assert str(fake.value) == str(eager.value)
    torch._dynamo.reset()
    f = torch.compile(lambda x, y: torch.ops.tvmffi_cuda.axpby(x, y, 2.0), fullgraph=True)
    with pytest.raises(torch._dynamo.exc.Unsupported) as info:
        f(x, torch.ones(5, device="cuda"))
    assert isinstance(info.value.__cause__, ValueError)
    assert "but got shape[0]=5" in str(info.value.__cause__)


def test_jax_on_gpu(axpby_fn: tvmffi.Function) -> None:
    jax = pytest.importorskip("jax")
    pytest.importorskip("jax_tvm_ffi")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("jax has no GPU backend")
    import jax.numpy as jnp

    import tvmffi.jax

    op = tvmffi.jax.register_op("tvmffi_cuda.axpby", axpby_fn)
    x = jnp.arange(300, dtype=jnp.float32)
    # jax-tvm-ffi sets XLA's stream as the environment stream of the thread that runs
    # the handler and leaves it there; an explicit stream scope restores it after.
    cuda0 = tvmffi.device("cuda:0")
    with tvmffi.use_stream(cuda0, 0):
        out = jax.jit(lambda x, y: op(x, y, alpha=2.0))(x, x)
        out.block_until_ready()
    assert tvmffi.get_raw_stream(cuda0) == 0
    assert out.devices().pop().platform == "gpu"
    assert jnp.allclose(out, 3 * x)
