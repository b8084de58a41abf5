"""Regression tests of issue 32 (reliability, fourth round): nothing reached through a
new surface may crash, corrupt or leak. Crash classes run in a subprocess."""

from __future__ import annotations

import textwrap

import pytest
from conftest import run_python

import tvmffi
import tvmffi.testing as testing


def run_ok(code: str, **kwargs: object) -> str:
    """Run ``code`` in a fresh interpreter; it must exit 0. Returns its stdout."""
    proc = run_python(textwrap.dedent(code), **kwargs)  # type: ignore[arg-type]
    assert proc.returncode == 0, f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


# ---- 1. a Shape/Bytes passes its cached object, held for the whole call ----------------
def test_cached_object_from_a_property_is_held_for_the_call() -> None:
    # The attribute is a property returning a fresh object: the reference GetAttr gave
    # is the only one, so the call must hold its own (ASan: heap-use-after-free before).
    out = run_ok(
        """
        import tvmffi, tvmffi.testing as t
        from tvmffi._strings import Bytes

        class S(tvmffi.Shape):
            @property
            def _tvm_ffi_cached_object(self):
                return tvmffi.Shape([7, 8, 9])._tvm_ffi_cached_object
            @_tvm_ffi_cached_object.setter
            def _tvm_ffi_cached_object(self, value):
                pass

        class B(Bytes):
            @property
            def _tvm_ffi_cached_object(self):
                return t.echo(b"fresh" * 10)._tvm_ffi_cached_object
            @_tvm_ffi_cached_object.setter
            def _tvm_ffi_cached_object(self, value):
                pass

        for i in range(300):
            assert t.echo(S([1, 2, 3])) == (7, 8, 9)
            assert t.echo(B(b"given")) == b"fresh" * 10
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_official_shape_proxy_cached_object_from_a_property_is_held() -> None:
    pytest.importorskip("tvm_ffi")
    out = run_ok(
        """
        import tvm_ffi, tvmffi.testing as t

        class S(tvm_ffi.Shape):
            @property
            def _tvm_ffi_cached_object(self):
                return tvm_ffi.Shape((7, 8))._tvm_ffi_cached_object
            @_tvm_ffi_cached_object.setter
            def _tvm_ffi_cached_object(self, value):
                pass

        s = tuple.__new__(S, (1, 2))
        for i in range(300):
            assert t.echo(s) == (7, 8)
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_cached_object_replaced_during_the_call_stays_alive() -> None:
    # A callback (run by the callee) replaces the attribute: the object passed stays valid.
    shape = tvmffi.Shape([4, 5])

    def replace(x: object) -> object:
        shape._tvm_ffi_cached_object = tvmffi.Shape([1])._tvm_ffi_cached_object
        return x

    apply = tvmffi.get_global_func("testing.apply")
    assert apply(replace, shape) == (4, 5)


# ---- 2. calling a moved-from Function raises, it does not call a NULL handle ----------
def test_calling_a_moved_from_function_raises() -> None:
    out = run_ok(
        """
        import tvmffi, tvmffi.testing as t
        g = tvmffi.get_global_func("testing.nop")
        cb = tvmffi.convert(lambda *a: 1)
        for f in (g, cb):
            t.echo(f._move())  # the callee takes the handle
            for args in ((), (1,), tuple(range(12))):
                try:
                    f(*args)
                except ValueError as e:
                    assert "holds no FFI function" in str(e), e
                else:
                    raise AssertionError("a moved-from Function was called")
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_moved_from_builtin_function_raises() -> None:
    clear = tvmffi.get_global_func("ffi.ListClear")
    testing.echo(clear._move())
    with pytest.raises(ValueError, match="holds no FFI function"):
        clear(tvmffi.List([1]))


# ---- 5. Function's doc descriptors check the instance type -----------------------------
@pytest.mark.parametrize("name", ["__doc__", "__name__", "__qualname__", "__signature__"])
def test_function_doc_descriptors_refuse_other_types(name: str) -> None:
    out = run_ok(
        f"""
        import tvmffi
        d = tvmffi.Function.__dict__[{name!r}]
        for call in (lambda: d.__get__(b"A" * 256, bytes), lambda: d.__set__(b"A" * 256, "x"),
                     lambda: d.__get__(object(), object), lambda: d.__delete__([1, 2])):
            try:
                call()
            except TypeError as e:
                assert "doesn't apply to a" in str(e), e
            else:
                raise AssertionError("no TypeError")
        f = tvmffi.get_global_func("testing.nop")
        def read(get):  # testing.nop has no type schema: __signature__ raises ValueError
            try:
                return get()
            except ValueError as e:
                return ("ValueError", str(e))
        assert read(lambda: d.__get__(f, type(f))) == read(lambda: getattr(f, {name!r}))
        print("ok")
        """
    )
    assert out.strip() == "ok"


# ---- 6. NumPy scalars are recognised by type identity, not by name ----------------------
@pytest.mark.parametrize("name", ["numpy.int64", "numpy.float32", "numpy.uint8"])
def test_class_named_like_a_numpy_scalar_is_an_opaque_object(name: str) -> None:
    import numpy as np

    real = getattr(np, name.split(".")[1])
    assert testing.echo(real(5)) == 5  # the real type was seen and read in place
    fake_type = type(name, (), {"__slots__": ("x",)})
    fake = fake_type()
    fake.x = 12345
    # As officially: an opaque object, the same one back (not the slot's id()).
    assert testing.echo(fake) is fake


def test_real_numpy_scalars_still_convert_exactly() -> None:
    import numpy as np

    assert testing.echo(np.int8(-3)) == -3
    assert testing.echo(np.uint64(2**63 + 5)) == 2**63 + 5
    assert testing.echo(np.float32(1.5)) == 1.5
    assert testing.echo(np.int64(-(2**62))) == -(2**62)


# ---- 8. exception classes that cross the boundary are not kept alive --------------------
def test_exception_classes_crossing_the_boundary_can_be_collected() -> None:
    import gc
    import weakref

    echo = tvmffi.get_global_func("testing.echo")

    apply = tvmffi.get_global_func("testing.apply")
    refs = []
    for i in range(100):
        cls = type(f"Dynamic{i}", (ValueError,), {})
        for _ in range(2):  # the second takes the C fast path (the class's facts)
            err = echo(cls("never raised"))
            assert (err.kind, err.message) == ("ValueError", "never raised")

        def raise_it(cls: type[BaseException] = cls) -> None:
            raise cls("from a callback")

        with pytest.raises(ValueError, match="from a callback"):
            apply(raise_it)
        refs.append(weakref.ref(cls))
        del cls, err, raise_it
    gc.collect()
    alive = sum(r() is not None for r in refs)
    assert alive == 0, f"{alive} of 100 exception classes kept alive"


# ---- 10. the torch probes run out of the user's dispatch and function modes -------------
def test_torch_probes_are_not_seen_by_user_modes() -> None:
    pytest.importorskip("torch")
    out = run_ok(
        """
        import torch, tvmffi.testing as t
        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode
        seen = []
        class Log(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                seen.append(str(func))
                return func(*args, **(kwargs or {}))
        class FunctionLog(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                seen.append(getattr(func, "__name__", str(func)))
                return func(*args, **(kwargs or {}))
        x = torch.arange(6.0).reshape(2, 3)
        c, xt = torch.ones(2, dtype=torch.complex64), x.t()
        with Log(), FunctionLog():  # the process's first torch arguments: the probes run here
            assert t.echo(x) is not None
            t.nop(c)
            t.nop(xt)
        print(seen)
        """
    )
    assert out.strip() == "[]"


# ---- 3. builtin guards follow the function's handle, not the name it was looked up by ---
_GUARD_ROUTES = """
import json, tvmffi
apply = tvmffi.get_global_func("testing.apply")
def routes(name):
    looked_up = tvmffi.get_global_func(name)
    yield "array element", tvmffi.Array([looked_up])[0]
    yield "callback argument", apply(lambda f: [f], looked_up)[0]
    yield "to_function", tvmffi.convert(looked_up)
    yield "list element", tvmffi.List([looked_up])[0]
"""


def test_json_decoder_vetting_follows_the_function() -> None:
    out = run_ok(
        _GUARD_ROUTES
        + """
nodes = [{"type": "int", "data": 1}, {"type": "ffi.Array", "data": [True]}]
text = json.dumps({"root_index": 1, "nodes": nodes})  # `true`: a self-reference
for route, decode in routes("ffi.FromJSONGraphString"):
    try:
        decode(text)
    except TypeError as e:
        assert "must be a node index" in str(e), (route, e)
    else:
        raise AssertionError(route)
for route, decode in routes("ffi.FromJSONGraph"):
    try:
        decode(json.loads(text))
    except TypeError as e:
        assert "must be a node index" in str(e), (route, e)
    else:
        raise AssertionError(route)
print("ok")
"""
    )
    assert out.strip() == "ok"


def test_container_hold_guard_follows_the_function() -> None:
    out = run_ok(
        _GUARD_ROUTES
        + """
def deep(n):
    a = tvmffi.List([])
    for _ in range(n):
        a = tvmffi.List([a])
    return a
for route, clear in routes("ffi.ListClear"):
    h = tvmffi.List([deep(300_000)])
    clear(h)  # the runtime drops a 300k-deep List: freed iteratively, no stack overflow
    assert len(h) == 0, route
for route, erase in routes("ffi.DictErase"):
    h = tvmffi.Dict({"k": deep(300_000)})
    erase(h, "k")
    assert len(h) == 0, route
print("ok")
""",
        timeout=300,
    )
    assert out.strip() == "ok"
