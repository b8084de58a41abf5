"""Kernels in other processes: tvmffi tensors and functions as task arguments and results.

A ``tvmffi.cpp`` kernel runs in ``ProcessPoolExecutor`` workers started with
``spawn`` (nothing inherited: every value arrives by pickle) and in Ray tasks on
a local cluster this test starts and stops (skipped where Ray is absent).
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np
import pytest
from conftest import PACKAGE_ROOT

import tvmffi
import tvmffi.cpp

AXPY = r"""
#include <tvm/ffi/container/tensor.h>
void axpy(tvm::ffi::TensorView x, tvm::ffi::TensorView y, double alpha, tvm::ffi::TensorView out) {
  const float* px = static_cast<const float*>(x.data_ptr());
  const float* py = static_cast<const float*>(y.data_ptr());
  float* po = static_cast<float*>(out.data_ptr());
  for (int64_t i = 0; i < x.size(0); ++i) po[i] = static_cast<float>(alpha) * px[i] + py[i];
}
"""


@pytest.fixture(scope="module")
def axpy(tmp_path_factory: pytest.TempPathFactory) -> Any:
    mod = tvmffi.cpp.load_inline(
        "test_scale_out_axpy",
        cpp_sources=AXPY,
        functions=["axpy"],
        build_directory=str(tmp_path_factory.mktemp("axpy")),
    )
    return mod.axpy


def run_axpy(fn: Any, x: Any, y: Any, alpha: float, post: Any = None) -> Any:
    """A task: run the kernel ``fn`` on the tensors it was sent; return a new tensor.

    ``post``, when given, is a tvmffi Function too (a Python callback, sent by pickle).
    """
    assert isinstance(fn, tvmffi.Function) and isinstance(x, tvmffi.Tensor)
    out = tvmffi.from_dlpack(np.empty(x.shape, np.float32))
    fn(x, y, alpha, out)
    return post(out) if post is not None else out


def _double_in_place(t: Any) -> Any:
    np.from_dlpack(t)[:] *= 2
    return t


def _inputs(k: int) -> tuple[Any, Any]:
    x = tvmffi.from_dlpack(np.arange(8, dtype=np.float32) + k)
    y = tvmffi.from_dlpack(np.ones(8, dtype=np.float32))
    return x, y


def test_process_pool_spawn_runs_the_kernel(axpy: Any) -> None:
    post = tvmffi.convert(_double_in_place)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
        futures = [pool.submit(run_axpy, axpy, *_inputs(k), 2.0) for k in range(4)]
        futures.append(pool.submit(run_axpy, axpy, *_inputs(0), 3.0, post))
        results = [f.result(timeout=300) for f in futures]
    for k, r in enumerate(results[:4]):
        assert isinstance(r, tvmffi.Tensor) and r.dtype == "float32"
        np.testing.assert_array_equal(np.from_dlpack(r), 2 * (np.arange(8) + k) + 1)
    np.testing.assert_array_equal(np.from_dlpack(results[4]), 2 * (3 * np.arange(8) + 1))


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs ray")
@pytest.mark.slow  # starts a Ray cluster
def test_ray_tasks_run_the_kernel(axpy: Any) -> None:
    import ray

    # Workers import this module (the task function) and this checkout's tvmffi.
    path = os.pathsep.join(
        p for p in (os.path.dirname(__file__), PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p
    )
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": path}},
    )
    try:
        task = ray.remote(run_axpy)
        fn_ref = ray.put(axpy)  # one copy of the function (and its library) in the store
        refs = [task.remote(fn_ref, *_inputs(k), 2.0) for k in range(4)]
        refs.append(task.remote(fn_ref, *_inputs(0), 3.0, tvmffi.convert(_double_in_place)))
        results = ray.get(refs, timeout=300)
    finally:
        ray.shutdown()
    assert not ray.is_initialized()
    for k, r in enumerate(results[:4]):
        assert isinstance(r, tvmffi.Tensor)
        np.testing.assert_array_equal(np.from_dlpack(r), 2 * (np.arange(8) + k) + 1)
    np.testing.assert_array_equal(np.from_dlpack(results[4]), 2 * (3 * np.arange(8) + 1))
