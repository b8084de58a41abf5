"""Shared fixtures and helpers for the tvmffi core test suite."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

import tvmffi
import tvmffi.testing

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "module_fixtures"))
from fixture_build import wheel_dirs as _wheel_dirs  # noqa: E402  (the fixtures' compiler setup)

# The build caches the suite fills: tvmffi.cpp's and the official binding's
# ($TVM_FFI_CACHE_DIR, default ~/.cache/tvm-ffi), tvmffi.codegen's and pickled
# libraries' ($TVMFFI_CACHE_DIR, default ~/.cache/tvmffi), and whatever else follows
# $XDG_CACHE_HOME (default ~/.cache). The suite never writes the user's ~/.cache.
CACHE_ENV_VARS = ("TVM_FFI_CACHE_DIR", "TVMFFI_CACHE_DIR", "XDG_CACHE_HOME")
_saved_cache_env: dict[str, str | None] = {}
_cache_dir: str | None = None


def pytest_configure(config: pytest.Config) -> None:
    """Point the cache variables at one temporary directory before collection, so that
    anything built while test modules are imported, and every subprocess (they inherit
    ``os.environ``), uses it too."""
    global _cache_dir
    _cache_dir = tempfile.mkdtemp(prefix="tvmffi-test-cache-")
    for var in CACHE_ENV_VARS:
        _saved_cache_env[var] = os.environ.get(var)
        os.environ[var] = os.path.join(_cache_dir, var.lower())


def pytest_unconfigure(config: pytest.Config) -> None:
    for var, value in _saved_cache_env.items():
        if value is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = value
    if _cache_dir is not None:
        shutil.rmtree(_cache_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def session_cache_dir() -> str:
    """The session's temporary cache directory (the cache variables point inside it)."""
    assert _cache_dir is not None
    return _cache_dir


@pytest.fixture(scope="session")
def wheel_include_dir() -> str:
    include_dir, _ = _wheel_dirs()
    assert os.path.isfile(os.path.join(include_dir, "tvm", "ffi", "c_api.h")), include_dir
    return include_dir


class NativeHelper:
    """ctypes face of tests/native_helper.c (ctypes is used in tests only)."""

    BUF = 512

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        lib.call_int.argtypes = [
            ctypes.c_void_p,
            ctypes.c_longlong,
            ctypes.c_int,
            ctypes.POINTER(ctypes.c_longlong),
            ctypes.POINTER(ctypes.c_long),
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.c_int,
        ]
        lib.call_int.restype = ctypes.c_int
        lib.call_concurrently.argtypes = [
            ctypes.c_void_p,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.POINTER(ctypes.c_longlong),
        ]
        lib.call_concurrently.restype = ctypes.c_int
        lib.set_flag.argtypes = []
        lib.set_flag.restype = None
        lib.reset_flag.argtypes = []
        lib.reset_flag.restype = None
        lib.wait_entered.argtypes = [ctypes.c_int]
        lib.wait_entered.restype = ctypes.c_int
        lib.send_signal_after.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.send_signal_after.restype = ctypes.c_int
        lib.register_wait_flag.argtypes = [ctypes.c_char_p]
        lib.register_wait_flag.restype = ctypes.c_int
        lib.runtime_version.argtypes = [ctypes.POINTER(ctypes.c_uint)] * 3
        lib.runtime_version.restype = None
        lib.call_with_dltensor.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong]
        lib.call_with_dltensor.restype = ctypes.c_int
        lib.call_with_dltensor_nd.argtypes = [
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_int,
            ctypes.POINTER(ctypes.c_int64),
        ]
        lib.call_with_dltensor_nd.restype = ctypes.c_int

    def call_int(self, fn: tvmffi.Function, x: int, *, spawn: bool) -> dict[str, Any]:
        """Call ``fn(x)`` from C, on a new native thread when ``spawn``."""
        out = ctypes.c_longlong(0)
        tid = ctypes.c_long(0)
        kind = ctypes.create_string_buffer(self.BUF)
        msg = ctypes.create_string_buffer(self.BUF)
        rc = self.lib.call_int(
            ctypes.c_void_p(fn.__chandle__()),
            x,
            1 if spawn else 0,
            ctypes.byref(out),
            ctypes.byref(tid),
            kind,
            msg,
            self.BUF,
        )
        return {
            "rc": rc,
            "out": out.value,
            "tid": tid.value,
            "kind": kind.value.decode(),
            "message": msg.value.decode(),
        }

    def call_concurrently(self, fn: tvmffi.Function, nthreads: int, iters: int) -> tuple[int, int]:
        total = ctypes.c_longlong(0)
        failures = self.lib.call_concurrently(
            ctypes.c_void_p(fn.__chandle__()), nthreads, iters, ctypes.byref(total)
        )
        return failures, total.value

    def call_with_dltensor(self, fn: Any, data: int | None, n: int) -> int:
        """Call ``fn`` (any binding's Function) with a bare 1-d float32 ``DLTensor*``.

        Returns the call's return code (a raised error is dropped).
        """
        return int(self.lib.call_with_dltensor(ctypes.c_void_p(fn.__chandle__()), data, n))

    def call_with_dltensor_nd(self, fn: Any, data: int | None, shape: list[int]) -> int:
        """Like :meth:`call_with_dltensor` with any shape (extents may be negative)."""
        dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        return int(
            self.lib.call_with_dltensor_nd(
                ctypes.c_void_p(fn.__chandle__()), data, len(shape), dims
            )
        )

    def runtime_version(self) -> str:
        parts = [ctypes.c_uint(0) for _ in range(3)]
        self.lib.runtime_version(*(ctypes.byref(p) for p in parts))
        return ".".join(str(p.value) for p in parts)


@pytest.fixture(scope="session")
def native(tmp_path_factory: pytest.TempPathFactory, wheel_include_dir: str) -> NativeHelper:
    """Compile tests/native_helper.c into a shared library and load it."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler available")
    _, lib_dir = _wheel_dirs()
    out = tmp_path_factory.mktemp("native") / "libtvmffi_native_helper.so"
    cmd = [
        cc,
        "-shared",
        "-fPIC",
        "-O1",
        "-std=c11",
        "-Wall",
        "-Werror",
        f"-I{wheel_include_dir}",
        os.path.join(HERE, "native_helper.c"),
        "-o",
        str(out),
        f"-L{lib_dir}",
        f"-Wl,-rpath,{lib_dir}",
        "-ltvm_ffi",
        "-lpthread",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"building the native helper failed:\n{proc.stderr}"
    return NativeHelper(ctypes.CDLL(str(out)))


@pytest.fixture(scope="session")
def testing() -> Any:
    return tvmffi.testing


@pytest.fixture(scope="session")
def tvm_ffi() -> Any:
    """The official binding, imported into this same process."""
    return pytest.importorskip("tvm_ffi")


def array_items(arr: tvmffi.Object) -> list[Any]:
    """Contents of an ffi.Array, read through the runtime's own accessors."""
    size = tvmffi.get_global_func("ffi.ArraySize")(arr)
    get = tvmffi.get_global_func("ffi.ArrayGetItem")
    return [get(arr, i) for i in range(size)]


def map_size(m: tvmffi.Object) -> int:
    return int(tvmffi.get_global_func("ffi.MapSize")(m))


def map_get(m: tvmffi.Object, key: Any) -> Any:
    return tvmffi.get_global_func("ffi.MapGetItem")(m, key)


# Where the tvmffi under test was imported from (the installed package, or
# src/ for an in-place build): subprocesses must import that same one.
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(tvmffi.__file__)))


def run_python(
    code: str, timeout: float = 60, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter that imports this checkout's tvmffi."""
    env = dict(os.environ)
    env.update(env_extra or {})
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> Iterator[str]:
    """A global-function name unique to the test; removed from the registry afterwards."""
    name = "tvmffi_tests." + request.node.name.replace("[", "_").replace("]", "_")
    yield name
    remove = tvmffi.get_global_func("ffi.FunctionRemoveGlobal", allow_missing=True)
    if remove is not None:
        remove(name)


@pytest.fixture
def jax_on_cpu() -> Iterator[None]:
    """Run JAX on the CPU: tests that register CPU-only FFI targets use it, since on a
    machine with a GPU backend JAX would otherwise place arrays (and the custom call) there."""
    import jax

    with jax.default_device(jax.devices("cpu")[0]):
        yield
