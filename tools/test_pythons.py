"""Run the test suite on several CPython interpreters.

    python tools/test_pythons.py /path/to/python3.10 /path/to/python3.13 ...

Each interpreter gets its own venv under ``build/pythons/<tag>`` with
``apache-tvm-ffi``, tvmffi built from this tree, and the light test
dependencies (pytest, NumPy, hypothesis, ml_dtypes): tests that need torch, jax
or TVM are reported skipped with their reason. The wheel test is left out (it
builds wheels itself: ``make wheel``). Prints one summary line per interpreter
and exits non-zero if any run failed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIGHT_DEPS = [
    "setuptools>=77",
    "wheel",
    "apache-tvm-ffi>=0.1.15,<0.2",
    "pytest>=7",
    "numpy>=1.24",
    "hypothesis>=6",
    "ml_dtypes>=0.5",
]


def run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, text=True, **kwargs)  # type: ignore[call-overload,no-any-return]


def test_one(python: str) -> tuple[str, int, str]:
    tag = subprocess.run(
        # 3.14t: a free-threaded build gets a venv of its own (sys.abiflags "t").
        [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2] + sys.abiflags)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    env_dir = os.path.join(ROOT, "build", "pythons", tag)
    py = os.path.join(env_dir, "bin", "python")
    stamp = os.path.join(env_dir, ".ready")
    if not os.path.exists(stamp):
        shutil.rmtree(env_dir, ignore_errors=True)
        run([python, "-m", "venv", env_dir], check=True)
        run([py, "-m", "pip", "install", "-q", *LIGHT_DEPS], check=True)
        open(stamp, "w").close()
    for stale in os.listdir(os.path.join(ROOT, "build")):
        if stale.startswith("lib."):
            shutil.rmtree(os.path.join(ROOT, "build", stale))
    run(
        [py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
         "--force-reinstall", ROOT],
        check=True,
        cwd=ROOT,
    )  # fmt: skip
    env = dict(os.environ, TVMFFI_SKIP_WHEEL="1")
    env.setdefault("TVM_FFI_CACHE_DIR", os.path.join(ROOT, ".cache", f"tvm-ffi-{tag}"))
    proc = run(
        [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    print(proc.stdout[-4000:], flush=True)
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "(no output)"
    return tag, proc.returncode, summary


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    results = [test_one(p) for p in sys.argv[1:]]
    print("\nSummary:")
    for tag, rc, summary in results:
        print(f"  Python {tag}: {'ok' if rc == 0 else 'FAILED'}: {summary}")
    sys.exit(0 if all(rc == 0 for _, rc, _ in results) else 1)


if __name__ == "__main__":
    main()
