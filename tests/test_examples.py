"""The examples in examples/ run and print what they promise."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_ops_example() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("jax_tvm_ffi")
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "ops.py")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "eager:    tensor([1., 3., 5., 7.])" in out
    assert "compiled: tensor([0.5000, 2.5000, 4.5000, 6.5000]) y is now tensor([0.5000" in out
    assert "exported: ['example.axpby.default']" in out
    assert "jax.jit:  [0.5 2.5 4.5 6.5]" in out
    assert "error:    Parameter `y` expects shape[0]=n=4 (bound by `x`.shape[0])" in out
    assert "trace-time error: Parameter `y` expects shape[0]=n=4" in out
