"""A class's ``__new__`` that clients save, replace and call (tilelang's pattern).

tilelang saves ``tvm_ffi.dtype.__new__``, installs its own constructor and calls the
saved one from it. The official ``dtype.__new__`` is a staticmethod, so that works;
tvmffi's C classes (``dtype``, ``Device``, ``Object``) give the same. Every test runs
in a fresh interpreter: replacing a class's constructor is process-wide.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def _run(code: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and proc.stdout.strip().endswith("OK"), (
        proc.stdout[-2000:] + proc.stderr[-3000:]
    )


def test_tilelang_dtype_pattern() -> None:
    _run(
        """
        import tvmffi

        saved = tvmffi.dtype.__dict__["__new__"]
        o = tvmffi.dtype.__new__
        calls = []

        def new(cls, value):
            calls.append(value)
            return o(cls, value)

        tvmffi.dtype.__new__ = new
        d = tvmffi.dtype("float32")
        assert type(d) is tvmffi.dtype and d == "float32" and d.bits == 32, d
        assert calls == ["float32"]

        class Sub(tvmffi.dtype):
            pass

        s = Sub("int8")
        assert type(s) is Sub and s.bits == 8 and calls == ["float32", "int8"]
        tvmffi.dtype.__new__ = lambda c, v: o(c, v)  # the literal pattern of the issue
        assert tvmffi.dtype("float16").bits == 16
        tvmffi.dtype.__new__ = saved  # restored: constructs as before
        assert tvmffi.dtype("bfloat16").bits == 16 and calls == ["float32", "int8"]
        print("OK")
        """
    )


def test_device_and_object_patterns() -> None:
    _run(
        """
        import tvmffi

        o = tvmffi.Device.__new__
        tvmffi.Device.__new__ = lambda c, *a: o(c, *a)
        dev = tvmffi.Device("cuda", 1)
        assert type(dev) is tvmffi.Device and str(dev) == "cuda:1", dev
        assert tvmffi.device("cpu").index == 0

        o2 = tvmffi.Object.__new__
        made = []

        def new(cls, *args, **kwargs):
            made.append(cls.__name__)
            return o2(cls)

        tvmffi.Object.__new__ = new
        a = tvmffi.Array([1, 2])
        assert list(a) == [1, 2] and made == ["Array"], made
        assert tvmffi.convert([3])[0] == 3  # results are wrapped without __new__
        print("OK")
        """
    )


def test_saved_new_refuses_a_foreign_class() -> None:
    import tvmffi

    for cls, args in ((tvmffi.dtype, ("float32",)), (tvmffi.Device, ("cpu", 0))):
        new = cls.__new__
        with pytest.raises(TypeError, match="must be a subclass of"):
            new(int, *args)
        with pytest.raises(TypeError, match="not enough arguments"):
            new()
        assert new(cls, *args) == cls(*args)
