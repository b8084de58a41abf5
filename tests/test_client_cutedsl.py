"""CuTe DSL (nvidia-cutlass-dsl) as a real client, plain and hosted on tvmffi.

``tests/hosted/cutedsl_host.py`` compiles host-only ``@cute.jit`` functions with
``--enable-tvm-ffi`` and runs them on the CPU: scalars, tensors (through
``from_dlpack`` too), a ``Shape``, defaults and keywords, a no-argument function,
wrong arguments, and an exported object file loaded back. It runs once on the official
binding and once hosted (``TVMFFI_HOST=1``); both must give the same results and the
same errors. Skipped without nvidia-cutlass-dsl (the ``test`` extra installs it) or
where it cannot compile.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from typing import Any

import pytest

pytestmark = [
    pytest.mark.slow,  # CuTe DSL compiles (make test-fast leaves it out)
    pytest.mark.skipif(
        importlib.util.find_spec("cutlass") is None or importlib.util.find_spec("tvm_ffi") is None,
        reason="needs nvidia-cutlass-dsl and apache-tvm-ffi (the test extra)",
    ),
]

SCRIPT = os.path.join(os.path.dirname(__file__), "hosted", "cutedsl_host.py")


def _run(hosted: bool) -> tuple[dict[str, Any], str]:
    env = {k: v for k, v in os.environ.items() if k != "TVMFFI_HOST"}
    if hosted:
        env["TVMFFI_HOST"] = "1"
    proc = subprocess.run(
        [sys.executable, SCRIPT], env=env, capture_output=True, text=True, timeout=900
    )
    lines = proc.stdout.splitlines()
    skip = [line for line in lines if line.startswith("SKIP: ")]
    if skip and proc.returncode == 0:
        pytest.skip(skip[0])
    mode = "hosted" if hosted else "plain"
    assert proc.returncode == 0 and "OK" in lines, (
        f"cutedsl_host.py failed {mode} (rc {proc.returncode}):\n"
        f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    )
    result = next(line for line in lines if line.startswith("RESULT "))
    return json.loads(result[len("RESULT ") :]), proc.stdout


@pytest.fixture(scope="module")
def plain() -> tuple[dict[str, Any], str]:
    return _run(hosted=False)


def test_cutedsl_host_functions_run_plain(plain: tuple[dict[str, Any], str]) -> None:
    result, stdout = plain
    assert result["numpy"] == [1.0, 2.0, 3.0, 4.0]
    assert "noarg ran" in stdout  # the no-argument function's printf


def test_cutedsl_host_functions_run_hosted_as_plain(plain: tuple[dict[str, Any], str]) -> None:
    hosted, stdout = _run(hosted=True)
    assert hosted == plain[0]  # every value and every error message
    assert "noarg ran" in stdout
    assert len(hosted["errors"]) == 6 and all(e[0] != "no error" for e in hosted["errors"])
