"""manylinux aarch64 wheels cross-compiled on x86_64, and the suite run on aarch64 under qemu.

    python tools/aarch64.py wheel --out dist PYTHON...   # `make wheel ARCH=aarch64`
    python tools/aarch64.py test --dist dist             # `make test-aarch64`

Both use an arm64 Debian root (``build/aarch64/root``, suite ``stable``, made once with
mmdebstrap from the host's Debian mirror) run by qemu-user-static through binfmt_misc:

``wheel``: for the root's CPython (``python3-dev:arm64``: its headers and its
``_sysconfigdata``), the given x86_64 interpreter of the same version builds tvmffi with
``aarch64-linux-gnu-gcc`` (crossbuild-essential-arm64). setuptools takes the target's
configuration from a copy of the root's ``_sysconfigdata`` (``_PYTHON_SYSCONFIGDATA_NAME``,
``_PYTHON_HOST_PLATFORM``: the extension suffix, the ``linux_aarch64`` tag, the compiler)
and links against the aarch64 ``apache-tvm-ffi`` wheel from the package index
(``TVMFFI_TVM_FFI_ROOT``); then the RUNPATH and ``auditwheel repair`` as
``tools/build_wheels.py`` does for x86_64 (auditwheel reads the architecture from the ELF
file and takes the aarch64 policy).

``test``: the aarch64 wheels of the test dependencies (pytest, NumPy, hypothesis, ml_dtypes,
apache-tvm-ffi) downloaded on the host for the root's interpreter, a venv in the root with
those and tvmffi's aarch64 wheel from DIST, and the suite run there on a copy of tests/,
examples/ and docs/ (no src/: ``import tvmffi`` finds the wheel). torch, jax and TVM are not
installed (no aarch64 wheels of all of them), so their tests skip with the reason; the
wheel and sdist tests are left out (``TVMFFI_SKIP_WHEEL``). pytest's summary is the last line.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from build_wheels import ROOT, auditwheel_repair, build_env, set_runpath

WORK = os.path.join(ROOT, "build", "aarch64")
DEBIAN_ROOT = os.path.join(WORK, "root")
TRIPLET = "aarch64-linux-gnu"
# The arm64 root: its CPython with headers and venv, a compiler for the test fixtures
# (tests/module_fixtures, tests/native_helper.c). No CA certificates: pip there installs
# from a wheelhouse only.
ROOT_PACKAGES = ["python3", "python3-dev", "python3-venv", "build-essential"]
# What the suite imports besides tvmffi (tools/test_pythons.py's light set).
TEST_DEPS = ["pytest>=7", "numpy>=1.24", "hypothesis>=6", "ml_dtypes>=0.5"]
# Where the suite runs inside the root.
IN_ROOT = "/tvmffi-test"


def run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, text=True, **kwargs)  # type: ignore[call-overload,no-any-return]


def debian_mirror() -> str:
    """The host's Debian archive URI (from its apt sources), for the arm64 root."""
    found: list[str] = []
    for path in glob.glob("/etc/apt/sources.list.d/*.sources"):
        with open(path) as f:
            found += re.findall(r"^URIs:\s*(\S+)", f.read(), flags=re.M)
    for path in ["/etc/apt/sources.list", *glob.glob("/etc/apt/sources.list.d/*.list")]:
        if os.path.exists(path):
            with open(path) as f:
                found += re.findall(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)", f.read(), flags=re.M)
    for uri in found:
        if uri.rstrip("/").endswith("/debian"):
            return uri
    raise SystemExit("no Debian archive in the host's apt sources to make the arm64 root from")


def enable_binfmt() -> None:
    """Let the kernel run aarch64 programs through qemu-aarch64-static (binfmt_misc)."""
    misc = "/proc/sys/fs/binfmt_misc"
    if not os.path.exists(os.path.join(misc, "register")):
        run(["mount", "-t", "binfmt_misc", "binfmt_misc", misc])
    if not os.path.exists(os.path.join(misc, "qemu-aarch64")):
        run(["update-binfmts", "--enable", "qemu-aarch64"])


def make_root() -> str:
    """The arm64 Debian stable root, made once; returns its python3 version ("3.13")."""
    enable_binfmt()
    stamp = os.path.join(DEBIAN_ROOT, ".tvmffi-ready")
    if not os.path.exists(stamp):
        shutil.rmtree(DEBIAN_ROOT, ignore_errors=True)
        os.makedirs(WORK, exist_ok=True)
        run(
            [
                "mmdebstrap", "--arch=arm64", "--variant=apt", "--mode=root",
                "--include=" + ",".join(ROOT_PACKAGES), "stable", DEBIAN_ROOT, debian_mirror(),
            ]
        )
        open(stamp, "w").close()
    target = os.readlink(os.path.join(DEBIAN_ROOT, "usr", "bin", "python3"))
    match = re.fullmatch(r"python(3\.\d+)", target)
    if match is None:
        raise SystemExit(f"the arm64 root's python3 is {target}, not a CPython 3.x")
    return match.group(1)


def in_root(cmd: str, env: dict[str, str] | None = None) -> None:
    """Runs a shell command in the arm64 root (aarch64 binaries: qemu via binfmt)."""
    mounted = []
    try:
        for fs, where in (("proc", "proc"), ("sysfs", "sys")):
            target = os.path.join(DEBIAN_ROOT, where)
            if not os.path.ismount(target):
                run(["mount", "-t", fs, fs, target])
                mounted.append(target)
        clean = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": "/root",
                 "LANG": "C.UTF-8"}
        chroot = shutil.which("chroot") or "/usr/sbin/chroot"  # looked up on the host's PATH
        run([chroot, DEBIAN_ROOT, "/bin/sh", "-ec", cmd], env={**clean, **(env or {})})
    finally:
        # Unmounted again: `make clean` removes build/ with rm -rf.
        for target in reversed(mounted):
            run(["umount", target])


def python_version(python: str) -> str:
    out = run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2] + sys.abiflags)"],
              capture_output=True)
    return out.stdout.strip()


def download(dest: str, version: str, requirements: list[str], no_deps: bool = False) -> None:
    """aarch64 wheels for the root's CPython (``version``, e.g. "3.13"), fetched on the host."""
    nodot = version.replace(".", "")
    run(
        [
            sys.executable, "-m", "pip", "download", "-q", "--dest", dest,
            "--only-binary=:all:", "--implementation", "cp", "--python-version", version,
            "--abi", f"cp{nodot}", "--abi", "abi3", "--abi", "none",
            # Every manylinux tag the root's glibc (2.41 in Debian 13) runs: pip takes
            # each --platform literally.
            *(f"--platform=manylinux_2_{minor}_aarch64" for minor in range(17, 42)),
            "--platform=manylinux2014_aarch64", "--platform=any",
            *(["--no-deps"] if no_deps else []), *requirements,
        ]
    )


def target_sysconfig(version: str, out_dir: str) -> str:
    """A copy of the root's _sysconfigdata with its include paths pointed into the root.

    Debian builds its CPython with the ``aarch64-linux-gnu-`` tools, so the compiler and
    linker commands it records are the cross toolchain's already (checked)."""
    name = f"_sysconfigdata__linux_{TRIPLET}"
    source = os.path.join(DEBIAN_ROOT, "usr", "lib", f"python{version}", name + ".py")
    include = os.path.join(DEBIAN_ROOT, "usr", "include", f"python{version}")
    with open(source) as f:
        text = f.read()
    for key in ("CC", "CXX", "LDSHARED", "LDCXXSHARED"):
        if not re.search(rf"'{key}': '{TRIPLET}-", text):
            raise SystemExit(f"{source}: {key} is not an {TRIPLET} tool")
    text += (
        "\n# tools/aarch64.py: the headers live in the arm64 root.\n"
        f"build_time_vars['INCLUDEPY'] = {include!r}\n"
        f"build_time_vars['CONFINCLUDEPY'] = {include!r}\n"
    )
    with open(os.path.join(out_dir, name + ".py"), "w") as f:
        f.write(text)
    return name


def aarch64_runtime(version: str) -> str:
    """The aarch64 apache-tvm-ffi wheel from the index, unpacked once: its package directory.

    Its headers and libtvm_ffi are what the cross build uses; the test installs the same
    wheel (kept beside it)."""
    dest = os.path.join(WORK, "tvm-ffi")
    package = os.path.join(dest, "tvm_ffi")
    if not os.path.isdir(package):
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest)
        download(dest, version, ["apache-tvm-ffi>=0.1.15,<0.2"], no_deps=True)
        (wheel,) = glob.glob(os.path.join(dest, "apache_tvm_ffi-*.whl"))
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(dest)
    return package


def build_wheel(pythons: list[str], out: str) -> str:
    version = make_root()
    matching = [p for p in pythons if python_version(p) == version]
    if not matching:
        raise SystemExit(
            f"the arm64 root has CPython {version}: give an x86_64 CPython {version} "
            f"(PYTHONS=...) to cross-build with; got {pythons}"
        )
    tag = "cp" + version.replace(".", "")
    py = build_env(matching[0], tag)
    runtime = aarch64_runtime(version)
    tools_bin = os.path.dirname(sys.executable)
    with tempfile.TemporaryDirectory(prefix="tvmffi-aarch64-") as work:
        sysconfig_dir = os.path.join(work, "sysconfig")
        os.makedirs(sysconfig_dir)
        env = dict(
            os.environ,
            _PYTHON_SYSCONFIGDATA_NAME=target_sysconfig(version, sysconfig_dir),
            _PYTHON_HOST_PLATFORM="linux-aarch64",
            PYTHONPATH=sysconfig_dir,
            TVMFFI_TVM_FFI_ROOT=runtime,
            # pyconfig.h includes <aarch64-linux-gnu/python3.X/pyconfig.h>; the cross
            # toolchain's own C library headers come first.
            CFLAGS="-idirafter " + os.path.join(DEBIAN_ROOT, "usr", "include"),
        )
        # A separate build tree: objects compiled for x86_64 must not be linked in.
        build_dir = os.path.join(work, "build")
        raw = os.path.join(work, "raw")
        for stale in glob.glob(os.path.join(ROOT, "build", "lib.*")):
            shutil.rmtree(stale)
        run(
            [py, "setup.py", "-q", "build", "--build-base", build_dir, "bdist_wheel",
             "--dist-dir", raw],
            cwd=ROOT, env=env,
        )
        (raw_wheel,) = glob.glob(os.path.join(raw, "tvmffi-*linux_aarch64.whl"))
        patched = set_runpath(raw_wheel, tools_bin, work)
        made = auditwheel_repair(patched, out, tools_bin, tag)
    print(made)
    return made


def test(dist: str, pytest_args: list[str]) -> int:
    version = make_root()
    nodot = version.replace(".", "")
    wheels = glob.glob(os.path.join(dist, f"tvmffi-*-cp{nodot}-cp{nodot}-manylinux*_aarch64.whl"))
    if not wheels:
        raise SystemExit(f"no tvmffi cp{nodot} aarch64 wheel in {dist}: make wheel ARCH=aarch64")
    stage = os.path.join(DEBIAN_ROOT, IN_ROOT.lstrip("/"))
    shutil.rmtree(stage, ignore_errors=True)
    house = os.path.join(stage, "wheelhouse")
    os.makedirs(house)
    shutil.copy(max(wheels, key=os.path.getmtime), house)
    # The runtime the wheel was built against, then the test dependencies for it.
    (runtime,) = glob.glob(os.path.join(os.path.dirname(aarch64_runtime(version)), "*.whl"))
    shutil.copy(runtime, house)
    ffi_version = os.path.basename(runtime).split("-")[1]
    download(house, version, [*TEST_DEPS, f"apache-tvm-ffi=={ffi_version}"])
    for tree in ("tests", "examples", "docs"):
        shutil.copytree(os.path.join(ROOT, tree), os.path.join(stage, tree),
                        ignore=shutil.ignore_patterns("__pycache__", "*.so", "_build"))
    for name in ("pyproject.toml", "README.md", "CHANGELOG.md"):
        shutil.copy(os.path.join(ROOT, name), stage)
    # pip in the root installs from the wheelhouse only (--no-index): no network there.
    in_root(
        f"cd {IN_ROOT}\n"
        "python3 -m venv venv\n"
        "venv/bin/python -m pip install -q --no-index --find-links wheelhouse "
        f"{' '.join(repr(r) for r in TEST_DEPS)} tvmffi\n"
        "venv/bin/python -c 'import platform, tvmffi; "
        "print(platform.machine(), tvmffi.__file__)'\n"
        "exec venv/bin/python -m pytest -q -p no:cacheprovider "
        + " ".join(shlex.quote(a) for a in pytest_args or ["tests"]),
        env={"TVMFFI_SKIP_WHEEL": "1"},
    )
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("wheel", help="cross-compile the aarch64 wheel")
    w.add_argument("--out", default=os.path.join(ROOT, "dist"))
    w.add_argument("pythons", nargs="+", help="x86_64 CPythons (one of the root's version)")
    t = sub.add_parser("test", help="run the suite on aarch64 (qemu) with the wheel from DIST")
    t.add_argument("--dist", default=os.path.join(ROOT, "dist"))
    t.add_argument("pytest_args", nargs="*", help="instead of `tests`: files, -k, ...")
    args = parser.parse_args()
    if args.command == "wheel":
        os.makedirs(args.out, exist_ok=True)
        build_wheel(args.pythons, os.path.abspath(args.out))
    else:
        sys.exit(test(os.path.abspath(args.dist), args.pytest_args))


if __name__ == "__main__":
    main()
