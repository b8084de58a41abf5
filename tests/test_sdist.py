"""The source distribution: it carries every tracked file and installs as a new user's would.

Builds the sdist of this tree (as ``make sdist`` does), checks it against ``git ls-files``,
then ``pip install``s it into a new venv outside the source tree (no system site-packages,
build isolation on: setuptools, wheel and ``apache-tvm-ffi`` come from the package index as
pip is configured) and runs ``examples/quickstart.py`` there. Slow (a build and an install,
about a minute): ``TVMFFI_SKIP_WHEEL=1`` leaves it out, as it does the wheel test.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(os.environ.get("TVMFFI_SKIP_WHEEL")), reason="TVMFFI_SKIP_WHEEL set"),
    pytest.mark.skipif(
        importlib.util.find_spec("build") is None, reason="needs `build` (the release extra)"
    ),
]

# Tracked files the sdist leaves out on purpose.
NOT_SHIPPED = {".gitignore"}


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sdist")
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(out), "."],
        check=True,
        cwd=ROOT,
        capture_output=True,
    )
    (made,) = out.glob("tvmffi-*.tar.gz")
    return made


def _tracked_files() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (an unpacked sdist has no file list to compare with)")
    out = subprocess.run(
        ["git", "ls-files"], check=True, cwd=ROOT, capture_output=True, text=True
    ).stdout
    # A file deleted in the work tree but not yet from the index is not shipped either.
    return [f for f in out.splitlines() if (ROOT / f).is_file()]


def test_sdist_carries_every_tracked_file(sdist: Path) -> None:
    with tarfile.open(sdist) as tf:
        top = sdist.name.removesuffix(".tar.gz") + "/"
        shipped = {m.name.removeprefix(top) for m in tf.getmembers() if m.isfile()}
    missing = sorted(set(_tracked_files()) - NOT_SHIPPED - shipped)
    assert not missing, f"MANIFEST.in leaves out: {missing}"
    assert "src/tvmffi_host.pth" in shipped  # the file whose absence broke the install


def test_sdist_installs_in_a_fresh_venv_and_runs_the_quickstart(
    sdist: Path, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    proc = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", str(sdist), "numpy"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert (Path(purelib) / "tvmffi_host.pth").is_file()  # the hosting hook is installed
    # The quickstart the sdist carries, run outside any source tree.
    run = tmp_path / "run"
    with tarfile.open(sdist) as tf:
        member = tf.getmember(sdist.name.removesuffix(".tar.gz") + "/examples/quickstart.py")
        source = tf.extractfile(member)
        assert source is not None
        run.mkdir()
        (run / "quickstart.py").write_bytes(source.read())
    proc = subprocess.run(
        [str(py), "quickstart.py"],
        cwd=run,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    first = proc.stdout.splitlines()[0]
    assert first.startswith("tvmffi ") and " on the apache-tvm-ffi " in first, proc.stdout[:400]
    # The tvmffi that ran is the installed one, not this tree's src/.
    where = subprocess.run(
        [str(py), "-c", "import tvmffi; print(tvmffi.__file__)"],
        cwd=run,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert where.startswith(purelib), where
    shutil.rmtree(venv)
