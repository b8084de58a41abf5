"""tvmffi.torch.register_op: one codegen signature -> a PyTorch operator (issue 25).

Eager, torch.compile(fullgraph=True), torch.export and torch.library.opcheck, for
kernels built with codegen.inline and for a tvmffi.cpp.load_inline function given
a signature; the fake implementation's errors are the generated wrapper's.
Kernels are built once per module (two shared cores).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tvmffi
import tvmffi.cpp
from tvmffi import codegen
from tvmffi.codegen import Scalar, Signature, Tensor, Var

torch = pytest.importorskip("torch")
from ops_kernels import AXPBY_BODY, N, axpby_signature, cpp_axpby_source  # noqa: E402

import tvmffi.torch  # noqa: E402  (needs torch)

AXPBY = axpby_signature("axpby")
SCALE = Signature("scale_", [Tensor("x", [N], "float32", inout=True), Scalar("alpha", "float64")])
M, K = Var("m"), Var("k", divisibility=2)
# Outputs first and two of them, a constant dim, a Var bound by a later input.
MINMAX = Signature(
    "minmax",
    [
        Tensor("lo", [M], "float32", output=True),
        Tensor("hi", [M, 1], "float32", output=True),
        Tensor("x", [M, K], "float32"),
        Scalar("bias", "int32"),
    ],
)
MINMAX_BODY = """
for (int64_t i = 0; i < m; ++i) {
  float a = x[i * k], b = x[i * k];
  for (int64_t j = 1; j < k; ++j) { float v = x[i * k + j]; a = v < a ? v : a; b = v > b ? v : b; }
  lo[i] = a + bias; hi[i] = b + bias;
}
"""


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ops-torch")


@pytest.fixture(scope="module")
def axpby(cache: Path) -> tuple[tvmffi.Function, Any]:
    fn = codegen.inline(AXPBY, AXPBY_BODY, output_dir=cache)
    return fn, tvmffi.torch.register_op("tvmffi_test::axpby", fn, AXPBY)


@pytest.fixture(scope="module")
def scale(cache: Path) -> Any:
    fn = codegen.inline(SCALE, "for (int64_t i = 0; i < n; ++i) x[i] *= alpha;", output_dir=cache)
    return tvmffi.torch.register_op("tvmffi_test::scale_", fn)  # the signature is fn's own


@pytest.fixture(scope="module")
def minmax(cache: Path) -> Any:
    fn = codegen.inline(MINMAX, MINMAX_BODY, output_dir=cache)
    return tvmffi.torch.register_op("tvmffi_test::minmax", fn, MINMAX)


@pytest.fixture(scope="module")
def cpp_axpby(cache: Path) -> tuple[tvmffi.Function, Any]:
    mod = tvmffi.cpp.load_inline(
        "ops_cpp_axpby",
        cpp_sources=cpp_axpby_source("cpp_axpby"),
        functions=["cpp_axpby"],
        build_directory=str(cache / "cpp"),
    )
    sig = axpby_signature("cpp_axpby")
    return mod.cpp_axpby, tvmffi.torch.register_op("tvmffi_test::cpp_axpby", mod.cpp_axpby, sig)


def _compiled(f: Callable[..., Any], backend: str = "aot_eager") -> Callable[..., Any]:
    torch._dynamo.reset()
    return torch.compile(f, fullgraph=True, backend=backend)  # type: ignore[no-any-return]


def _msg(sig: Signature, text: str) -> str:
    return f"{text} when calling: `{sig}`"


# ---- the spec --------------------------------------------------------------------------
def test_schema_from_signature() -> None:
    assert tvmffi.torch.schema(AXPBY) == "(Tensor x, Tensor y, float alpha) -> Tensor"
    assert tvmffi.torch.schema(SCALE) == "(Tensor(a!) x, float alpha) -> ()"
    assert tvmffi.torch.schema(MINMAX) == "(Tensor x, int bias) -> (Tensor, Tensor)"


def test_register_op_needs_a_signature_for_a_foreign_function() -> None:
    fn = tvmffi.get_global_func("testing.echo")
    with pytest.raises(TypeError, match="needs the signature"):
        tvmffi.torch.register_op("tvmffi_test::nosig", fn)
    with pytest.raises(ValueError, match="namespace::name"):
        tvmffi.torch.register_op("nonamespace", fn, AXPBY)


# ---- eager ---------------------------------------------------------------------------------
def test_eager_call_allocates_and_returns_the_output(axpby: tuple[Any, Any]) -> None:
    fn, op = axpby
    assert op is torch.ops.tvmffi_test.axpby.default
    x, y = torch.arange(5, dtype=torch.float32), torch.ones(5)
    torch.testing.assert_close(torch.ops.tvmffi_test.axpby(x, y, 2.0), 2 * x + y)
    torch.testing.assert_close(op(x, y, alpha=-1.0), y - x)
    # the plain FFI function still takes every parameter, the output included
    out = torch.empty(5)
    fn(x, y, 2.0, out)
    torch.testing.assert_close(out, 2 * x + y)


def test_eager_wrong_shape_raises_the_signatures_error(axpby: tuple[Any, Any]) -> None:
    fn, op = axpby
    x = torch.ones(4)
    expected = _msg(
        AXPBY, "Parameter `y` expects shape[0]=n=4 (bound by `x`.shape[0]) but got shape[0]=5"
    )
    with pytest.raises(ValueError) as info:
        op(x, torch.ones(5), 2.0)
    assert str(info.value) == expected
    with pytest.raises(ValueError) as info:  # the FFI function says the same
        fn(x, torch.ones(5), 2.0, torch.empty(4))
    assert str(info.value) == expected
    with pytest.raises(ValueError, match=re.escape("expects ndim=1 but got ndim=0")):
        op(torch.tensor(1.0), x, 2.0)  # too few dims to read n from: still the signature's error


def test_several_outputs_in_declaration_order(minmax: Any) -> None:
    x = torch.tensor([[3.0, -1.0, 2.0, 0.0], [5.0, 6.0, -7.0, 1.0]])
    lo, hi = minmax(x, 10)
    torch.testing.assert_close(lo, torch.tensor([9.0, 3.0]))
    torch.testing.assert_close(hi, torch.tensor([[13.0], [16.0]]))
    with pytest.raises(ValueError) as info:
        minmax(torch.ones(2, 3), 0)
    assert str(info.value) == _msg(
        MINMAX, "Parameter `x` expects shape[1]=k to be divisible by 2 but got shape[1]=3"
    )


def test_inout_mutates_its_argument(scale: Any) -> None:
    x = torch.arange(4, dtype=torch.float32)
    assert scale(x, 3.0) is None
    torch.testing.assert_close(x, torch.tensor([0.0, 3.0, 6.0, 9.0]))


def test_load_inline_function_with_a_signature(cpp_axpby: tuple[Any, Any]) -> None:
    _, op = cpp_axpby
    x, y = torch.arange(3, dtype=torch.float32), torch.full((3,), 0.5)
    torch.testing.assert_close(op(x, y, 2.0), 2 * x + y)
    # fn checks nothing itself: the operator runs the signature's checks first
    sig = axpby_signature("cpp_axpby")
    with pytest.raises(ValueError) as info:
        op(x, torch.ones(4), 2.0)
    assert str(info.value) == _msg(
        sig, "Parameter `y` expects shape[0]=n=3 (bound by `x`.shape[0]) but got shape[0]=4"
    )
    with pytest.raises(ValueError, match="expects dtype=float32 but got dtype=float64"):
        op(x, y.double(), 2.0)


# ---- the fake implementation says what the wrapper says ----------------------------------------
BAD_CALLS = [
    ("y shape", lambda: (torch.ones(4), torch.ones(5))),
    ("x ndim", lambda: (torch.ones(2, 2), torch.ones(2))),
    ("y dtype", lambda: (torch.ones(4), torch.ones(4, dtype=torch.float16))),
    ("x strides", lambda: (torch.ones(8)[::2], torch.ones(4))),
    ("y bool", lambda: (torch.ones(3), torch.ones(3, dtype=torch.bool))),
]


@pytest.mark.parametrize("case", BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_fake_errors_are_the_wrappers(axpby: tuple[Any, Any], case: Any) -> None:
    _, op = axpby
    x, y = case[1]()
    with pytest.raises(ValueError) as eager:
        op(x, y, 2.0)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode, pytest.raises(ValueError) as fake:
        op(mode.from_tensor(x), mode.from_tensor(y), 2.0)
    assert str(fake.value) == str(eager.value)


def test_fake_output_shapes(minmax: Any) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        lo, hi = minmax(mode.from_tensor(torch.ones(3, 6)), 1)
    assert (lo.shape, hi.shape, lo.dtype) == ((3,), (3, 1), torch.float32)
    x = torch.ones(3, 6, device="meta")
    lo, hi = minmax(x, 1)
    assert (lo.device.type, lo.shape, hi.shape) == ("meta", (3,), (3, 1))


# ---- torch.compile ---------------------------------------------------------------------------
def test_compile_fullgraph_with_inductor(axpby: tuple[Any, Any]) -> None:
    def f(x: Any, y: Any) -> Any:
        return torch.ops.tvmffi_test.axpby(x, y, 2.0) * 2

    x, y = torch.arange(6, dtype=torch.float32), torch.ones(6)
    torch.testing.assert_close(_compiled(f, "inductor")(x, y), f(x, y))


def test_compile_graph_has_the_op_and_no_break(axpby: tuple[Any, Any]) -> None:
    def f(x: Any, y: Any) -> Any:
        return torch.ops.tvmffi_test.axpby(x + 1, y, 0.5)

    torch._dynamo.reset()
    x, y = torch.ones(3), torch.ones(3)
    explained = torch._dynamo.explain(f)(x, y)
    assert explained.graph_count == 1 and explained.graph_break_count == 0
    assert "tvmffi_test.axpby" in str(explained.graphs[0].graph)
    torch.testing.assert_close(_compiled(f)(x, y), f(x, y))


def test_compile_wrong_shape_raises_the_signatures_error(axpby: tuple[Any, Any]) -> None:
    def f(x: Any, y: Any) -> Any:
        return torch.ops.tvmffi_test.axpby(x, y, 2.0)

    expected = _msg(
        AXPBY, "Parameter `y` expects shape[0]=n=4 (bound by `x`.shape[0]) but got shape[0]=5"
    )
    # Without fullgraph, the failed check is a graph break: the call runs eagerly
    # and raises the signature's ValueError itself, as it does uncompiled.
    torch._dynamo.reset()
    with pytest.raises(ValueError) as plain:
        torch.compile(f, backend="aot_eager")(torch.ones(4), torch.ones(5))
    assert str(plain.value) == expected
    # fullgraph=True forbids the break: dynamo raises its Unsupported error, caused
    # by the signature's ValueError (what it does for a `raise` in traced code).
    with pytest.raises(torch._dynamo.exc.Unsupported) as full:
        _compiled(f)(torch.ones(4), torch.ones(5))
    assert isinstance(full.value.__cause__, ValueError)
    assert str(full.value.__cause__) == expected
    assert expected in str(full.value)


def test_compile_dynamic_shapes(axpby: tuple[Any, Any]) -> None:
    def f(x: Any, y: Any) -> Any:
        return torch.ops.tvmffi_test.axpby(x, y, 2.0)

    torch._dynamo.reset()
    g = torch.compile(f, fullgraph=True, backend="aot_eager", dynamic=True)
    for size in (3, 7):
        x, y = torch.randn(size), torch.randn(size)
        torch.testing.assert_close(g(x, y), 2 * x + y)
    with pytest.raises(torch._dynamo.exc.Unsupported) as info:
        g(torch.ones(4), torch.ones(5))
    assert isinstance(info.value.__cause__, ValueError)
    assert "but got shape[0]=5" in str(info.value.__cause__)


def test_inout_mutates_under_compile(scale: Any) -> None:
    def f(x: Any) -> Any:
        torch.ops.tvmffi_test.scale_(x, 2.0)
        return x + 1

    for backend in ("aot_eager", "inductor"):
        x = torch.arange(4, dtype=torch.float32)
        out = _compiled(f, backend)(x)
        torch.testing.assert_close(x, torch.tensor([0.0, 2.0, 4.0, 6.0]))
        torch.testing.assert_close(out, x + 1)


def test_load_inline_function_under_compile(cpp_axpby: tuple[Any, Any]) -> None:
    def f(x: Any, y: Any) -> Any:
        return torch.ops.tvmffi_test.cpp_axpby(x, y, 3.0)

    x, y = torch.arange(4, dtype=torch.float32), torch.ones(4)
    torch.testing.assert_close(_compiled(f)(x, y), 3 * x + y)
    with pytest.raises(torch._dynamo.exc.Unsupported) as info:
        _compiled(f)(x, torch.ones(2))
    assert isinstance(info.value.__cause__, ValueError)
    assert "(bound by `x`.shape[0]) but got shape[0]=2" in str(info.value.__cause__)


# ---- torch.export and opcheck -------------------------------------------------------------------
class _Axpby(torch.nn.Module):
    def forward(self, x: Any, y: Any) -> Any:
        return torch.ops.tvmffi_test.axpby(x, y, 2.0)


def test_export_captures_the_op(axpby: tuple[Any, Any]) -> None:
    x, y = torch.arange(4, dtype=torch.float32), torch.ones(4)
    n = torch.export.Dim("n")
    ep = torch.export.export(_Axpby(), (x, y), dynamic_shapes=({0: n}, {0: n}))
    targets = [node.target for node in ep.graph.nodes]
    assert torch.ops.tvmffi_test.axpby.default in targets
    x7, y7 = torch.randn(7), torch.randn(7)
    torch.testing.assert_close(ep.module()(x7, y7), 2 * x7 + y7)
    with pytest.raises(ValueError, match=re.escape("(bound by `x`.shape[0]) but got shape[0]=5")):
        torch.export.export(_Axpby(), (x, torch.ones(5)))


def test_export_inout(scale: Any) -> None:
    class Scale(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            torch.ops.tvmffi_test.scale_(x, 3.0)
            return x * 1

    x = torch.ones(3)
    ep = torch.export.export(Scale(), (x,))
    assert "tvmffi_test.scale_" in str(ep.graph)
    torch.testing.assert_close(ep.module()(torch.ones(3)), torch.full((3,), 3.0))


def test_opcheck(
    axpby: tuple[Any, Any], scale: Any, minmax: Any, cpp_axpby: tuple[Any, Any]
) -> None:
    torch.library.opcheck(axpby[1], (torch.randn(5), torch.randn(5), 2.0))
    torch.library.opcheck(scale, (torch.randn(5), 2.0))
    torch.library.opcheck(minmax, (torch.randn(3, 4), 2))
    torch.library.opcheck(cpp_axpby[1], (torch.randn(2), torch.randn(2), 0.5))


def test_register_autograd_passes_through(cache: Path) -> None:
    fn = codegen.inline(axpby_signature("axpby_ad"), AXPBY_BODY, output_dir=cache)
    op = tvmffi.torch.register_op("tvmffi_test::axpby_ad", fn)

    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.alpha = inputs[2]

    def backward(ctx: Any, grad: Any) -> Any:
        return grad * ctx.alpha, grad, None

    torch.library.register_autograd("tvmffi_test::axpby_ad", backward, setup_context=setup_context)
    x = torch.randn(4, requires_grad=True)
    y = torch.randn(4, requires_grad=True)
    op(x, y, 3.0).sum().backward()
    torch.testing.assert_close(x.grad, torch.full((4,), 3.0))
    torch.testing.assert_close(y.grad, torch.ones(4))
    torch.library.opcheck(op, (torch.randn(3, requires_grad=True), torch.randn(3), 2.0))


def test_scalar_only_and_empty_signatures() -> None:
    seen: list[tuple[Any, ...]] = []

    def record(*args: Any) -> None:
        seen.append(args)

    fn = tvmffi.convert(record)
    op = tvmffi.torch.register_op("tvmffi_test::nothing", fn, Signature("nothing", []))
    assert op() is None
    op = tvmffi.torch.register_op(
        "tvmffi_test::flags", fn, Signature("flags", [Scalar("k", "int32"), Scalar("b", "bool")])
    )
    assert op(3, True) is None
    assert seen == [(), (3, True)]
    with pytest.raises(ValueError, match=re.escape("expects an int32 but got 4294967296")):
        op(2**32, False)


def test_import_tvmffi_imports_no_framework() -> None:
    code = (
        "import sys, tvmffi, tvmffi.codegen\n"
        "print(sorted(m for m in ('torch', 'jax', 'jax_tvm_ffi') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
