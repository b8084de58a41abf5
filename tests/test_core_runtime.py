"""Runtime-level behaviour: signals, the GIL, versions."""

from __future__ import annotations

import os
import re
import signal
import threading

import pytest
from conftest import run_python

import tvmffi
import tvmffi.testing as testing

# ---- signals ---------------------------------------------------------------------


def _interrupt_during(call, delay=0.1):
    """Run ``call()`` while a timer sends SIGINT to this process after ``delay``."""
    timer = threading.Timer(delay, os.kill, args=(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        call()
    finally:
        timer.cancel()
        timer.join()


@pytest.fixture
def default_sigint():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("default_sigint")
def test_sigint_interrupts_long_ffi_call():
    fn = testing.run_check_signal
    assert fn.release_gil
    with pytest.raises(KeyboardInterrupt):
        # Without the interrupt this runs 30 s; the runtime polls signals each second.
        _interrupt_during(lambda: fn(30))
    # The binding is fully usable afterwards.
    assert testing.add_one(1) == 2


@pytest.mark.usefixtures("default_sigint")
def test_sigint_interrupts_long_ffi_call_without_releasing_gil(native):
    # The caller keeps the GIL, so no Python thread could send the signal:
    # a native thread does.
    fn = tvmffi.get_global_func("testing.run_check_signal")
    fn.release_gil = False
    assert native.lib.send_signal_after(signal.SIGINT, 100) == 0
    with pytest.raises(KeyboardInterrupt):
        fn(30)
    assert testing.add_one(2) == 3


def test_custom_signal_handler_exception_propagates():
    class Stop(Exception):
        pass

    def handler(signum, frame):
        raise Stop("stopped by handler")

    previous = signal.signal(signal.SIGINT, handler)
    try:
        with pytest.raises(Stop, match="stopped by handler"):
            _interrupt_during(lambda: testing.run_check_signal(30))
    finally:
        signal.signal(signal.SIGINT, previous)


# ---- release_gil -----------------------------------------------------------------


def test_release_gil_defaults_to_true():
    assert testing.echo.release_gil is True
    assert tvmffi.convert_func(lambda: 0).release_gil is True
    assert tvmffi.get_global_func("testing.nop").release_gil is True


def test_release_gil_is_settable_per_object():
    fn = tvmffi.get_global_func("testing.add_one")
    other = tvmffi.get_global_func("testing.add_one")
    fn.release_gil = False
    assert fn.release_gil is False
    assert other.release_gil is True  # a setting belongs to one Function object
    fn.release_gil = 1
    assert fn.release_gil is True
    fn.release_gil = ""
    assert fn.release_gil is False


def test_call_with_release_gil_false_works():
    fn = tvmffi.get_global_func("testing.apply")
    fn.release_gil = False
    assert fn(lambda x: x * 2, 21) == 42
    # Nested callbacks into Python while the GIL is held by the caller.
    inner = tvmffi.get_global_func("testing.apply")
    inner.release_gil = False
    assert fn(lambda: inner(lambda: "deep")) == "deep"
    echo = tvmffi.get_global_func("testing.echo")
    echo.release_gil = False
    assert echo("a string longer than seven") == "a string longer than seven"
    with pytest.raises(ValueError, match="held"):
        fn(lambda: (_ for _ in ()).throw(ValueError("gil held")))


def test_release_gil_false_from_threads():
    fn = tvmffi.get_global_func("testing.apply")
    fn.release_gil = False
    results = []

    def worker(k):
        results.append(sum(fn(lambda x: x, i) for i in range(200)) + k)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [sum(range(200)) + k for k in range(4)]


@pytest.fixture(scope="module")
def wait_flag(native):
    """A C-implemented FFI function: wait_flag(timeout_ms) -> whether the flag got set."""
    name = "tvmffi_tests.wait_flag"
    assert native.lib.register_wait_flag(name.encode()) == 0
    yield tvmffi.get_global_func(name)
    tvmffi.get_global_func("ffi.FunctionRemoveGlobal")(name)


def _wait_beside_setter(native, fn, timeout_ms):
    """Call fn(timeout_ms) while a Python thread tries to set the flag; return fn's result.

    The thread waits for fn to enter its wait inside C (GIL released by ctypes),
    then must run Python code again, which needs the GIL, before it can set the flag.
    """
    outcome = {}

    def run():
        outcome["entered"] = native.lib.wait_entered(20_000)
        native.lib.set_flag()

    native.lib.reset_flag()
    setter = threading.Thread(target=run)
    setter.start()
    try:
        result = fn(timeout_ms)
    finally:
        setter.join()
        native.lib.reset_flag()
    assert outcome["entered"] == 1
    return result


def test_other_threads_run_while_call_releases_gil(native, wait_flag):
    # The main thread waits inside C for a flag that only another Python
    # thread sets: that can only happen if the call released the GIL.
    wait_flag.release_gil = True
    assert _wait_beside_setter(native, wait_flag, 20_000) is True


@pytest.mark.skipif(
    not getattr(__import__("sys"), "_is_gil_enabled", lambda: True)(),
    reason="GIL build only: without a GIL, release_gil=False cannot stop other threads",
)
def test_other_threads_blocked_while_call_holds_gil(native, wait_flag):
    # With release_gil=False no other Python thread can run during the call,
    # so the flag cannot be set before the wait gives up.
    fn = tvmffi.get_global_func("tvmffi_tests.wait_flag")
    fn.release_gil = False
    assert _wait_beside_setter(native, fn, 300) is False


# ---- versions ----------------------------------------------------------------------


def test_tvm_ffi_version_format():
    v = tvmffi.tvm_ffi_version()
    assert isinstance(v, str)
    assert re.fullmatch(r"\d+\.\d+\.\d+", v), v


def test_tvm_ffi_version_matches_c_api(native):
    assert tvmffi.tvm_ffi_version() == native.runtime_version()


def test_tvm_ffi_version_matches_wheel_headers(wheel_include_dir):
    with open(os.path.join(wheel_include_dir, "tvm", "ffi", "c_api.h")) as f:
        header = f.read()
    parts = [
        re.search(rf"#define TVM_FFI_VERSION_{p}\s+(\d+)", header).group(1)
        for p in ("MAJOR", "MINOR", "PATCH")
    ]
    assert tvmffi.tvm_ffi_version() == ".".join(parts)


def test_tvm_ffi_version_consistent_with_official_package(tvm_ffi):
    # The wheel's package version (e.g. 0.1.15.post2) names the same
    # major.minor series as the runtime it ships.
    ours = tvmffi.tvm_ffi_version().split(".")
    theirs = re.match(r"(\d+)\.(\d+)", tvm_ffi.__version__)
    assert theirs is not None
    assert ours[:2] == [theirs.group(1), theirs.group(2)]


def test_package_version_and_lib_path():
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", tvmffi.__version__)
    path = tvmffi.lib_path()
    assert os.path.isfile(path)
    assert os.path.basename(path).startswith("libtvm_ffi")


def test_codegen_is_imported_on_first_use():
    code = (
        "import sys, tvmffi\n"
        "assert 'tvmffi.codegen' not in sys.modules\n"
        "assert tvmffi.codegen.Signature.__name__ == 'Signature'\n"
        "try:\n"
        "    tvmffi.no_such_name\n"
        "except AttributeError as e:\n"
        "    print('ok', e)\n"
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert "ok module 'tvmffi' has no attribute 'no_such_name'" in proc.stdout
