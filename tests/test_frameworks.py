"""Frameworks get their tensors back (issue 11 item 4, DESIGN "The first rule" 3).

A call whose tensor arguments came through a DLPack C exchange API (torch's
``__dlpack_c_exchange_api__``) returns that framework's tensors, also from the
containers it returns, and runs with the framework's tensor allocator as the
environment allocator (``TVMFFIEnvTensorAlloc``), as the official binding does.
"""

from __future__ import annotations

import inspect
import os
import sys
import warnings
from typing import Any

import numpy as np
import pytest
from conftest import run_python

import tvmffi
import tvmffi.testing as T

try:
    import torch
except ImportError:  # each test is reported skipped, with the reason
    torch = None
pytestmark = pytest.mark.skipif(torch is None, reason="needs torch (the test extra)")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "module_fixtures"))
import fixture_build  # noqa: E402


@pytest.fixture(scope="module")
def alloc_mod(tmp_path_factory: pytest.TempPathFactory) -> tvmffi.Module:
    if fixture_build.compiler("cc") is None:
        pytest.skip("no C compiler")
    return tvmffi.load_module(fixture_build.build("alloc", str(tmp_path_factory.mktemp("alloc"))))


# ---- torch in, torch out ----------------------------------------------------------
def test_echo_returns_the_torch_tensor() -> None:
    x = torch.arange(4.0)
    y = T.echo(x)
    assert isinstance(y, torch.Tensor)
    assert y is x  # the tensor handed back is the argument itself
    v = x[1:]
    w = T.echo(v)
    assert isinstance(w, torch.Tensor) and w.data_ptr() == v.data_ptr()
    assert w.tolist() == [1.0, 2.0, 3.0]


def test_new_tensor_results_are_torch_tensors() -> None:
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    arr = T.make_array_with_tensor(x)
    assert isinstance(arr, tvmffi.Array)
    elem = arr[0]
    assert isinstance(elem, torch.Tensor)
    assert elem.data_ptr() == x.data_ptr() and elem.shape == (2, 3)
    elem[0, 0] = 42.0  # shares memory
    assert x[0, 0] == 42.0


def test_container_elements_are_torch_tensors() -> None:
    x = torch.arange(4, dtype=torch.float32)
    mixed = T.make_array_with_mixed(x, 42)
    assert isinstance(mixed[0], torch.Tensor) and mixed[1] == 42 and mixed[2] == "hello"
    lst = T.make_list_with_tensor(x, 7)
    assert isinstance(lst, tvmffi.List) and isinstance(lst[0], torch.Tensor)
    m = T.make_map_with_tensor(x)
    assert isinstance(m, tvmffi.Map) and isinstance(m["tensor"], torch.Tensor)
    assert m["tensor"].data_ptr() == x.data_ptr() and m["value"] == 42
    d = T.make_dict_with_tensor(x)
    assert isinstance(d, tvmffi.Dict) and isinstance(d["tensor"], torch.Tensor)
    nested = T.make_nested_map_with_tensor(x, torch.arange(8, dtype=torch.int32))
    assert isinstance(nested["array"][1], torch.Tensor)
    assert isinstance(nested["map"]["t"], torch.Tensor)
    inner = T.make_nested_array_with_tensor(x)[0]
    assert isinstance(inner, tvmffi.Array) and isinstance(inner[0], torch.Tensor)


def test_container_passed_on_keeps_the_framework() -> None:
    x = torch.arange(4, dtype=torch.float32)
    arr = T.make_array_with_tensor(x)
    again = T.echo(arr)
    assert isinstance(again[0], torch.Tensor) and again[0].data_ptr() == x.data_ptr()


def test_no_framework_no_conversion() -> None:
    a = np.arange(4, dtype="float32")
    assert type(T.echo(a)) is tvmffi.Tensor
    arr = T.make_array_with_tensor(tvmffi.from_dlpack(a))
    assert type(arr[0]) is tvmffi.Tensor


# ---- the framework's allocator during the call --------------------------------------
def test_env_tensor_alloc_gives_torch_tensors(alloc_mod: tvmffi.Module) -> None:
    doubled = alloc_mod["doubled"]
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    y = doubled(x)
    assert isinstance(y, torch.Tensor)
    assert y.shape == (2, 3) and y.dtype == torch.float32
    assert torch.equal(y, 2 * x)
    assert torch.equal(doubled(x.T), 2 * x.T)  # strided input, compact output


def test_allocator_only_during_framework_calls(alloc_mod: tvmffi.Module) -> None:
    doubled = alloc_mod["doubled"]
    doubled(torch.zeros(2))
    # Restored afterwards: a call without torch tensors has no allocator.
    with pytest.raises(RuntimeError, match="allocator"):
        doubled(np.zeros(2, dtype="float32"))
    # Also restored when the callee fails.
    with pytest.raises(TypeError, match="float32"):
        doubled(torch.zeros(2, dtype=torch.int32))
    with pytest.raises(RuntimeError, match="allocator"):
        doubled(np.zeros(2, dtype="float32"))


def test_allocator_from_a_returned_container(alloc_mod: tvmffi.Module) -> None:
    # A container returned by a torch call carries torch into the next call.
    x = torch.arange(3, dtype=torch.float32)
    arr = T.make_array_with_tensor(x)
    first = alloc_mod["doubled"](arr[0])
    assert isinstance(first, torch.Tensor) and first.tolist() == [0.0, 2.0, 4.0]


# ---- lazy conjugate / negative bits (issue 12 item 12) ------------------------------
def _lazy_tensors() -> list[tuple[object, str]]:
    z = torch.tensor([1 + 2j, 3 + 4j])
    w = (torch.arange(12.0) + 1j).to(torch.complex64).reshape(3, 4)
    n = w.conj().imag
    return [
        (z.conj(), "conjugate"),
        (w.conj().t(), "conjugate"),
        (z.conj().imag, "negative"),
        # views of a negative-bit tensor keep the bit, also without a _base
        (n.detach(), "negative"),
        (n.t(), "negative"),
        (n[:, :1], "negative"),
        (n[1, 2], "negative"),
        (n.unsqueeze(0), "negative"),
    ]


@pytest.mark.parametrize("route", ["call", "from_dlpack", "view"])
def test_lazy_bits_are_refused(route: str) -> None:
    for t, bit in _lazy_tensors():
        with pytest.raises(ValueError, match=f"{bit} bit"):
            if route == "call":
                T.echo(t)
            elif route == "from_dlpack":
                tvmffi.from_dlpack(t)
            else:
                tvmffi.TensorView(t)


def test_resolved_lazy_tensors_pass_with_their_values() -> None:
    z = torch.tensor([1 + 2j, 3 + 4j])
    c, n = z.conj(), z.conj().imag
    rc = np.from_dlpack(tvmffi.from_dlpack(c.resolve_conj()))  # type: ignore[attr-defined]
    assert rc.tolist() == [1 - 2j, 3 - 4j]
    rn = np.from_dlpack(tvmffi.from_dlpack(n.resolve_neg()))  # type: ignore[attr-defined]
    assert rn.tolist() == [-2.0, -4.0]


# ---- torch's fill called directly (issue 24: exchange.c torch_fill) ----------------
def _layouts() -> list[Any]:
    g = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    return [
        g, g.t(), g[2], g[1, 3], g[:, ::2], g[1:, 2:], torch.zeros(0), torch.zeros(3, 0, 2),
        g.to(torch.float16), g.to(torch.bfloat16), g.to(torch.int8), g.to(torch.bool),
        g.to(torch.complex64), g.unsqueeze(1).expand(4, 5, 6),
        # filled: empty memory may hold NaN, which torch.equal never matches
        torch.empty_strided((2, 3), (1, 2)).fill_(7.0),
    ]


@pytest.mark.parametrize("i", range(15))
def test_torch_tensors_arrive_as_torch_describes_them(i: int) -> None:
    t = _layouts()[i]
    ours = T.echo(t)
    assert isinstance(ours, torch.Tensor)
    assert ours.data_ptr() == t.data_ptr()
    assert (ours.shape, ours.stride(), ours.dtype) == (t.shape, t.stride(), t.dtype)
    assert torch.equal(ours, t)
    view = tvmffi.from_dlpack(t)
    assert tuple(view.shape) == tuple(t.shape) and view.data_ptr() == t.data_ptr()
    assert tuple(view.strides) == t.stride()


def test_tensors_torch_cannot_describe_raise_torchs_error() -> None:
    # at::toDLPackNonOwning throws for these; the C++ exception is caught and
    # torch's own exchange fill raises, named after the argument.
    with warnings.catch_warnings():  # sparse invariant checks are off by default
        warnings.simplefilter("ignore")
        sparse = torch.sparse_coo_tensor([[0]], [1.0], (2,))
    with pytest.raises(ValueError, match=r"argument 0: DLPack export .* storage"):
        T.nop(sparse)
    if hasattr(torch, "quantize_per_tensor"):
        with warnings.catch_warnings():  # quantized tensors are deprecated in torch
            warnings.simplefilter("ignore")
            q = torch.quantize_per_tensor(torch.zeros(2), 0.1, 0, torch.quint8)
        with pytest.raises(ValueError, match=r"argument 1: DLPack export .*(QInt|dlpack)"):
            T.nop(1, q)
    with warnings.catch_warnings():  # nested tensors are a prototype in torch
        warnings.simplefilter("ignore")
        nested = torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)])
    for other, says in ((torch.empty(2, device="meta"), "meta"), (nested, "NestedTensorImpl")):
        with pytest.raises(ValueError, match=f"argument 0: DLPack export .*{says}"):
            T.nop(other)
    assert T.echo(torch.ones(2)).tolist() == [1.0, 1.0]  # and the route still works


def test_first_torch_tensor_inside_a_fake_mode_or_device_context() -> None:
    # The direct fill is checked on probe tensors at the first torch tensor; made
    # inside FakeTensorMode they are fake (the check waits for a later tensor),
    # inside torch.device("meta") they are still made on the CPU. A fresh process:
    # the first tensor of the process is the point.
    code = """
import torch, tvmffi.testing as T
from torch._subclasses.fake_tensor import FakeTensorMode
real = torch.arange(6.0).reshape(2, 3)
rt = real.t()
with FakeTensorMode():
    out = T.echo(rt)
    assert out.data_ptr() == real.data_ptr() and out.stride() == (1, 3), out.stride()
for _ in range(3):
    out = T.echo(rt)
    assert out.data_ptr() == real.data_ptr() and out.stride() == (1, 3)
    assert out.tolist() == rt.tolist()
with torch.device("meta"):
    assert T.echo(real).tolist() == real.tolist()
print("ok")
"""
    proc = run_python(code)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_torch_subclasses_take_torchs_exchange_fill() -> None:
    class Mine(torch.Tensor):
        pass

    m = torch.arange(6.0).reshape(2, 3).as_subclass(Mine)
    p = torch.nn.Parameter(torch.arange(4.0))
    for t in (m, m.t(), p):
        out = T.echo(t)
        assert out.data_ptr() == t.data_ptr() and out.stride() == t.stride()
        assert out.tolist() == t.tolist()


# ---- from_dlpack without keyword parsing (issue 11 item 6) --------------------------
def test_from_dlpack_is_the_c_function_with_a_signature() -> None:
    assert type(tvmffi.from_dlpack).__name__ == "builtin_function_or_method"
    sig = inspect.signature(tvmffi.from_dlpack)
    assert list(sig.parameters) == [
        "ext_tensor", "require_alignment", "require_contiguous", "allow_read_only"
    ]
    assert sig.parameters["require_alignment"].default == 0
    assert "DLPack" in (tvmffi.from_dlpack.__doc__ or "")


def test_from_dlpack_arguments() -> None:
    a = np.arange(4.0)
    for t in (
        tvmffi.from_dlpack(a),
        tvmffi.from_dlpack(ext_tensor=a),
        tvmffi.from_dlpack(a, require_alignment=8, require_contiguous=True),
    ):
        assert t.data_ptr() == a.ctypes.data
    with pytest.raises(TypeError, match="missing"):
        tvmffi.from_dlpack()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="positional"):
        tvmffi.from_dlpack(a, a)  # type: ignore[misc]
    with pytest.raises(TypeError, match="unexpected keyword"):
        tvmffi.from_dlpack(a, copy=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values"):
        tvmffi.from_dlpack(a, ext_tensor=a)  # type: ignore[misc]
    with pytest.raises(TypeError):
        tvmffi.from_dlpack(a, require_alignment="8")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=">= 0"):
        tvmffi.from_dlpack(a, require_alignment=-1)
    with pytest.raises(RuntimeError, match="contiguous"):
        tvmffi.from_dlpack(a[::2], require_contiguous=True)
    with pytest.raises(TypeError, match="DLPack producer"):
        tvmffi.from_dlpack(object())


# ---- the exchange API found when it appears (torch < 2.10, torch-c-dlpack-ext) -----
def test_exchange_api_noticed_when_it_appears() -> None:
    # A torch class without the API (as torch < 2.10 is) takes the Python
    # protocol; its results still come back as torch tensors (through
    # torch.from_dlpack, a new alias, as the official binding's fallback).
    # Once the API appears on the class (as torch-c-dlpack-ext or tvm_ffi
    # install it) calls use it: no permanent per-type decision.
    class Late(torch.Tensor):
        __dlpack_c_exchange_api__ = None

    x = torch.arange(4.0).as_subclass(Late)
    slow = T.echo(x)
    assert isinstance(slow, torch.Tensor) and slow is not x
    assert slow.data_ptr() == x.data_ptr() and slow.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert isinstance(T.make_array_with_tensor(x)[0], torch.Tensor)
    # the first torch tensor without the API took the step that gets one (the addon
    # package or a cached build: a no-op here, where torch.Tensor has its own)
    assert "tvmffi._optional_torch_c_dlpack" in sys.modules
    del Late.__dlpack_c_exchange_api__  # torch.Tensor's own API now applies
    assert T.echo(x) is x
    assert isinstance(T.make_array_with_tensor(x)[0], torch.Tensor)


@pytest.mark.parametrize("make", [lambda: torch.arange(6.0), lambda: np.arange(6.0)])
def test_a_tensor_passed_twice_is_one_tensor_object(make: Any) -> None:
    """One source passed several times to a call is described once: the callee
    sees one Tensor object for it (and a distinct one for another source)."""
    a, b = make(), make()
    seen = tvmffi.convert(
        lambda p, q, r, s: (p.same_as(q), p.same_as(s), p.same_as(r), r.shape, p.data_ptr())
    )
    same_pq, same_ps, same_pr, shape, ptr = seen(a, a, b, a)
    assert same_pq and same_ps and not same_pr
    assert tuple(shape) == (6,)
    assert ptr == (a.data_ptr() if isinstance(a, torch.Tensor) else a.ctypes.data)


def test_repeats_inside_a_list_share_the_tensor_object() -> None:
    x, other = np.arange(4.0), np.arange(4.0)
    arr = tvmffi.get_global_func("ffi.Array")(x, [x, other, x], x)
    assert arr[0].same_as(arr[2]) and arr[1][0].same_as(arr[0]) and arr[1][2].same_as(arr[0])
    assert not arr[1][1].same_as(arr[0])
    assert arr[1][1].data_ptr() == other.ctypes.data
