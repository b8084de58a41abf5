"""Python -> FFI -> Python recursion ends in RecursionError, never a C stack overflow.

Issue 21, item 5: with ``sys.setrecursionlimit`` raised, a callback that calls back
into the FFI overflowed the main thread's 8 MiB stack at about 4,000 levels. The
runs happen in child processes: on a build without the check they die of SIGSEGV.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import tvmffi
import tvmffi.testing
from tvmffi.error import _format_backtrace

# Subprocesses import the same tvmffi as this test run (installed, or src/).
SRC = os.path.dirname(os.path.dirname(os.path.abspath(tvmffi.__file__)))

RECURSE = """
import sys, threading
import tvmffi, tvmffi.testing
sys.setrecursionlimit(1_000_000)
apply = tvmffi.get_global_func("testing.apply")
def cb(n):
    return 0 if n == 0 else apply(cb, n - 1)
def run():
    try:
        apply(cb, 200_000)
        print("no error")
    except RecursionError as err:
        # CPython 3.12 bounds C recursion itself (its C recursion limit, which
        # sys.setrecursionlimit does not raise): its RecursionError comes first.
        assert "C stack" in str(err) or sys.version_info[:2] == (3, 12), err
        # The stack unwound: callbacks work again, and shallow recursion too.
        print("RecursionError", apply(cb, 50))
stack = int(sys.argv[1])
if stack:
    threading.stack_size(stack)
    t = threading.Thread(target=run)
    t.start()
    t.join()
else:
    run()
"""


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=300
    )


@pytest.mark.parametrize("stack", [0, 256 * 1024, 2 * 1024 * 1024])
def test_deep_callback_recursion_raises_recursion_error(stack: int) -> None:
    # 0: the main thread's own stack; others: threads made with threading.stack_size.
    proc = _run(RECURSE, str(stack))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["RecursionError", "0"]


def test_recursion_within_the_stack_still_works() -> None:
    apply = tvmffi.get_global_func("testing.apply")

    def cb(n: int) -> int:
        return n if n == 0 else 1 + apply(cb, n - 1)

    assert apply(cb, 300) == 300


def test_backtrace_formatting_of_a_propagating_exception_is_incremental() -> None:
    # Each FFI crossing formats only the frames the exception gained since the last
    # one (deep chains were quadratic); the text is the full traceback's all the same.
    def inner() -> None:
        raise ValueError("x")

    def middle() -> None:
        inner()

    def outer() -> None:
        middle()

    try:
        middle()
    except ValueError as err:
        first = _format_backtrace(err.__traceback__, err)
        assert first == _format_backtrace(err.__traceback__)
        exc = err
    try:
        try:
            outer()
        except ValueError:
            raise
    except ValueError as err:
        assert err is not exc
        again = _format_backtrace(err.__traceback__, err)
        assert again == _format_backtrace(err.__traceback__)

    def reraise() -> None:
        raise exc

    try:
        reraise()
    except ValueError as err:
        assert err is exc
        grown = _format_backtrace(err.__traceback__, err)
        assert grown == _format_backtrace(err.__traceback__)
        assert grown.count("in inner") == 1 and grown.count("in reraise") == 1


NESTED = """
import sys, threading
import tvmffi
sys.setrecursionlimit(1_000_000)
def run():
    value = []
    for _ in range(100_000):
        value = [value]
    try:
        tvmffi.convert(value)
        print("no error")
    except RecursionError as err:
        # On CPython 3.12 its own C recursion limit may answer first (see RECURSE).
        assert "nested container" in str(err), err
        assert "C stack" in str(err) or sys.version_info[:2] == (3, 12), err
        print("RecursionError", len(tvmffi.convert([[1], [2]])))
threading.stack_size(int(sys.argv[1]))
t = threading.Thread(target=run)
t.start()
t.join()
"""


@pytest.mark.parametrize("stack", [512 * 1024, 4 * 1024 * 1024])
def test_deep_nested_container_on_a_small_stack_raises_recursion_error(stack: int) -> None:
    # Converting a nested list recurses in C once per level: with the recursion limit
    # raised, the thread's stack (not the limit) ran out first and the process died.
    proc = _run(NESTED, str(stack))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "RecursionError 2"
