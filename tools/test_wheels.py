"""Install the wheel built for each interpreter into a fresh venv of it and run the quickstart.

    python tools/test_wheels.py --dist dist /path/to/python3.10 ... /path/to/python3.14t

For each interpreter: a new venv (``build/test-wheels/<tag>``, made anew every run, no
system site-packages); ``pip install --find-links DIST --only-binary tvmffi tvmffi numpy``,
the README's command, which takes the one wheel in DIST whose tags fit that interpreter
(``--only-binary`` so that a missing wheel fails instead of building the sdist beside it;
``apache-tvm-ffi`` and NumPy come from the package index); then checks that the installed
tvmffi is that wheel (its ``WHEEL`` tag names the interpreter's ABI, ``cp314t`` for a
free-threaded one), runs ``examples/quickstart.py`` outside the source tree and, on a
free-threaded interpreter, that the GIL stays off. Prints one line per interpreter and exits
non-zero if any failed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Run in the fresh venv: where tvmffi came from, its wheel tag, and the GIL after import.
PROBE = """
import glob, os, sys, sysconfig
import tvmffi
site = sysconfig.get_path("platlib")
(info,) = glob.glob(os.path.join(site, "tvmffi-*.dist-info"))
lines = open(os.path.join(info, "WHEEL")).read().splitlines()
tags = [l.split(":", 1)[1].strip() for l in lines if l.startswith("Tag:")]
gil = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
print(tvmffi.__file__.startswith(site), ",".join(tags), gil)
"""


def interpreter_tag(python: str) -> tuple[str, bool]:
    """``cp313`` / ``cp314t``, and whether the interpreter is a free-threaded build."""
    out = subprocess.run(
        [
            python,
            "-c",
            "import sys, sysconfig; v = sys.version_info; "
            "print(f'cp{v[0]}{v[1]}' + sys.abiflags, "
            "bool(sysconfig.get_config_var('Py_GIL_DISABLED')))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return out[0], out[1] == "True"


def check(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    print("+", " ".join("<probe>" if "\n" in c else c for c in cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return proc  # type: ignore[no-any-return]


def test_one(python: str, dist: str) -> str:
    tag, free_threaded = interpreter_tag(python)
    venv = os.path.join(ROOT, "build", "test-wheels", tag)
    shutil.rmtree(venv, ignore_errors=True)
    check([python, "-m", "venv", venv])
    py = os.path.join(venv, "bin", "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    check(
        [py, "-m", "pip", "install", "-q", "--find-links", dist, "--only-binary", "tvmffi",
         "tvmffi", "numpy"],
        env=env,
    )
    with tempfile.TemporaryDirectory(prefix=f"tvmffi-quickstart-{tag}-") as run_dir:
        # Outside the source tree, so `import tvmffi` can only find the installed wheel.
        shutil.copy(os.path.join(ROOT, "examples", "quickstart.py"), run_dir)
        installed, tags, gil = check([py, "-c", PROBE], cwd=run_dir, env=env).stdout.split()
        if installed != "True":
            raise RuntimeError("tvmffi was not imported from the venv's site-packages")
        if not any(t.split("-")[1] == tag and "manylinux" in t for t in tags.split(",")):
            raise RuntimeError(f"installed wheel has tags {tags}, not a manylinux {tag} one")
        if free_threaded and gil != "False":
            raise RuntimeError("importing tvmffi turned the GIL on")
        out = check([py, "quickstart.py"], cwd=run_dir, env=env).stdout
    shutil.rmtree(venv)
    return f"{tags}: quickstart ran ({len(out.splitlines())} lines)" + (
        ", GIL off" if free_threaded else ""
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dist", default=os.path.join(ROOT, "dist"))
    parser.add_argument("pythons", nargs="+", help="CPython interpreters whose wheels to test")
    args = parser.parse_args()
    dist = os.path.abspath(args.dist)
    results = []
    for python in args.pythons:
        try:
            results.append((python, True, test_one(python, dist)))
        except (RuntimeError, subprocess.CalledProcessError) as exc:
            results.append((python, False, str(exc)))
    print()
    for python, ok, what in results:
        print(f"{'ok  ' if ok else 'FAIL'} {python}: {what}")
    failed = sum(not ok for _, ok, _ in results)
    print(f"{len(results) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
