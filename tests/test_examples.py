"""Every program in examples/ runs to completion.

Each runs in a fresh interpreter from a temporary working directory; one that
needs a package this environment lacks (torch, jax, tvm) is skipped with that
reason.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tvmffi

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
REQUIRES = re.compile(r"^# requires: tvmffi\.(\w+)", re.M)
# Lines an example's output must hold, beyond running to completion.
EXPECTED = {
    "ray_tasks.py": ["task 2: Tensor [5.0, 5.0, 5.0, 5.0]"],
    "ops.py": [
        "eager:    tensor([1., 3., 5., 7.])",
        "compiled: tensor([0.5000, 2.5000, 4.5000, 6.5000]) y is now tensor([0.5000",
        "exported: ['example.axpby.default']",
        "jax.jit:  [0.5 2.5 4.5 6.5]",
        "error:    Parameter `y` expects shape[0]=n=4 (bound by `x`.shape[0])",
        "trace-time error: Parameter `y` expects shape[0]=n=4",
    ],
}
IMPORT = re.compile(r"^\s*(?:import|from)\s+([A-Za-z_][A-Za-z0-9_]*)", re.M)


def test_examples_exist() -> None:
    names = {p.stem for p in EXAMPLES}
    expected = {"quickstart", "torch_kernels", "codegen_symbolic", "jax_kernel", "host_tvm", "ops"}
    assert expected <= names


# Examples that start Ray or compile with TVM: make test-fast leaves them out.
SLOW = {"ray_tasks.py", "host_tvm.py"}


@pytest.mark.parametrize(
    "example",
    [pytest.param(p, marks=pytest.mark.slow) if p.name in SLOW else p for p in EXAMPLES],
    ids=[p.name for p in EXAMPLES],
)
def test_example_runs(example: Path, tmp_path: Path) -> None:
    text = example.read_text()
    for name in sorted(set(IMPORT.findall(text))):
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"needs {name}")
    # "# requires: tvmffi.NAME": an example written against an API not in every build.
    for attr in REQUIRES.findall(text):
        if not hasattr(tvmffi, attr):
            pytest.skip(f"this tvmffi has no {attr}")
    proc = subprocess.run(
        [sys.executable, str(example)], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"{example.name}:\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.strip(), "an example prints what it shows"
    for line in EXPECTED.get(example.name, []):
        assert line in proc.stdout, f"{example.name} did not print {line!r}"
