"""Regression tests of issue 40 (reliability, fifth round): views kept by containers,
handles moved during a call, lent tensors, pickled tensors and libraries, JAX partitions,
a second runtime. Crash classes run in a subprocess."""

from __future__ import annotations

import textwrap

import pytest
from conftest import run_python


def run_ok(code: str, **kwargs: object) -> str:
    """Run ``code`` in a fresh interpreter; it must exit 0. Returns its stdout."""
    proc = run_python(textwrap.dedent(code), **kwargs)  # type: ignore[arg-type]
    assert proc.returncode == 0, f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


# A large array's buffer is unmapped when it is freed: reading it through a pointer kept
# past its life segfaults at once instead of reading stale memory.
BIG = "np.full(1 << 22, 2.0, dtype='float32')"


# ---- 1. an official view kept by a container ------------------------------------------
@pytest.mark.parametrize(
    "wrap", ["[v]", "(v,)", "{'k': v}", "[[v]]", "{'k': [v]}", "[Value(v)]"],
    ids=["list", "tuple", "dict", "nested", "dict-of-list", "protocol"],
)
def test_official_view_in_a_container_argument_is_kept(wrap: str) -> None:
    # The callee keeps the container; the view's DLTensor and the array behind it must
    # outlive the call (before: a raw DLTensor* inside, heap-use-after-free).
    out = run_ok(
        f"""
        import gc, numpy as np, tvm_ffi, tvmffi
        echo = tvmffi.get_global_func("testing.echo")
        class Value:
            def __init__(self, v): self.v = v
            def __tvm_ffi_value__(self): return self.v
        kept = []
        def callback(v):
            assert v.__chandle__() == 0  # a handle-less official view
            kept.append(echo({wrap}))
        f = echo(tvm_ffi.convert(callback))
        a = {BIG}
        f(tvmffi.TensorView(a))
        del a; gc.collect()
        c = kept[0]
        while not isinstance(c, tvmffi.Tensor):
            c = c["k"] if isinstance(c, tvmffi.Map) else c[0]
        print(float(np.from_dlpack(c).sum()))
        """
    )
    assert float(out) == 2.0 * (1 << 22)


# ---- 2. a TensorView stored by a container's constructor or mutator -------------------
@pytest.mark.parametrize(
    "build",
    [
        "tvmffi.List([v])",
        "tvmffi.Array([v])",
        "tvmffi.Map({'k': v})",
        "tvmffi.Dict({'k': v})",
        "tvmffi.List([Value(v)])",
        "tvmffi.List([[v]])",
        "(lambda c: (c.append(v), c)[1])(tvmffi.List())",
        "(lambda c: (c.insert(0, v), c)[1])(tvmffi.List())",
        "(lambda c: (c.extend([v]), c)[1])(tvmffi.List())",
        "(lambda c: (c.__setitem__(0, v), c)[1])(tvmffi.List([0]))",
        "(lambda c: (c.__setitem__(slice(0, 1), [v]), c)[1])(tvmffi.List([0]))",
        "(lambda c: (c.__setitem__(slice(0, 2, 2), [v]), c)[1])(tvmffi.List([0]))",
        "(lambda c: (c.__setitem__('k', v), c)[1])(tvmffi.Dict())",
        "(lambda c: (c.update(k=v), c)[1])(tvmffi.Dict())",
        "tvmffi.convert([v])",
    ],
    ids=[
        "List", "Array", "Map", "Dict", "protocol", "nested", "append", "insert", "extend",
        "setitem", "setslice", "setslice-step", "dict-setitem", "dict-update", "convert",
    ],
)
def test_tensor_view_stored_by_a_container_keeps_its_array(build: str) -> None:
    # docs/guide/arrays.md: a view inside a container keeps its memory (before: the
    # container kept the temporary view's DLTensor*, read after the array was freed).
    out = run_ok(
        f"""
        import gc, numpy as np, tvmffi
        class Value:
            def __init__(self, v): self.v = v
            def __tvm_ffi_value__(self): return self.v
        a = {BIG}
        v = tvmffi.TensorView(a)
        c = {build}
        del a, v; gc.collect()
        while not isinstance(c, tvmffi.Tensor):
            c = c["k"] if isinstance(c, (tvmffi.Map, tvmffi.Dict)) else c[0]
        print(float(np.from_dlpack(c).sum()))
        """
    )
    assert float(out) == 2.0 * (1 << 22)


def test_tensor_view_argument_stays_a_view() -> None:
    # The fix keeps only what a container stores: a view passed to a plain call is still
    # the DLTensor* itself (no Tensor made, no reference taken).
    import sys

    import numpy as np

    import tvmffi

    a = np.arange(3.0)
    before = sys.getrefcount(a)
    v = tvmffi.TensorView(a)
    after_view = sys.getrefcount(a)
    tvmffi.get_global_func("testing.nop")(v, v)
    assert sys.getrefcount(a) == after_view >= before

