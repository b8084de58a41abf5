"""Interop with the official ``tvm_ffi`` binding loaded in the same process."""

from __future__ import annotations

import os

import pytest

import tvmffi
import tvmffi.testing as testing
from tvmffi._core import object_use_count

# The kinds the official binding maps to builtin exceptions (it has no mapping
# for NotImplementedError, which it turns into RuntimeError).
BUILTIN_KINDS = [
    ValueError,
    TypeError,
    IndexError,
    AttributeError,
    AssertionError,
    RuntimeError,
    MemoryError,
]


def test_same_runtime_library(tvm_ffi):
    official = os.path.realpath(tvm_ffi.libinfo.find_libtvm_ffi())
    assert official == tvmffi.lib_path()
    assert os.path.isabs(tvmffi.lib_path())
    assert os.path.isfile(tvmffi.lib_path())


def test_runtime_loaded_once(tvm_ffi):
    # Exactly one libtvm_ffi is mapped into the process: one registry.
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "libtvm_ffi.so" in line}
    assert {os.path.realpath(p) for p in paths} == {tvmffi.lib_path()}


def test_tvmffi_registered_function_visible_to_tvm_ffi(tvm_ffi, unique_name):
    tvmffi.register_global_func(unique_name, lambda a, b: a * 100 + b)
    f = tvm_ffi.get_global_func(unique_name)
    assert f(3, 4) == 304
    assert f(1, -1) == 99
    assert unique_name in tvm_ffi.registry.list_global_func_names()


def test_tvm_ffi_registered_function_visible_to_tvmffi(tvm_ffi, unique_name):
    tvm_ffi.register_global_func(unique_name, lambda s, n: s * n)
    f = tvmffi.get_global_func(unique_name)
    assert isinstance(f, tvmffi.Function)
    assert f("ab", 3) == "ababab"
    assert unique_name in tvmffi.registry.list_global_func_names()


def test_values_cross_between_bindings(tvm_ffi, unique_name):
    # tvmffi calls a tvm_ffi Python function: every scalar kind survives.
    tvm_ffi.register_global_func(unique_name, lambda x: x)
    f = tvmffi.get_global_func(unique_name)
    for value in [None, True, 5, -(2**63), 2.5, "s", "a longer string", b"b", b"longer bytes"]:
        out = f(value)
        assert isinstance(out, type(value)) and out == value  # heap forms: String / Bytes
        if isinstance(value, (str, bytes)) and len(value) > 7:
            assert type(out) in (tvmffi.core.String, tvmffi.core.Bytes)
        else:
            assert type(out) is type(value)
    assert f(tvmffi.cuda(1)) == tvmffi.cuda(1)
    assert f(tvmffi.dtype("int8")) == tvmffi.dtype("int8")


@pytest.mark.parametrize("cls", BUILTIN_KINDS, ids=lambda c: c.__name__)
def test_tvmffi_callback_error_surfaces_in_tvm_ffi(tvm_ffi, unique_name, cls):
    def cb(x):
        raise cls(f"from tvmffi {x}")

    tvmffi.register_global_func(unique_name, cb)
    f = tvm_ffi.get_global_func(unique_name)
    with pytest.raises(cls) as info:
        f(7)
    assert "from tvmffi 7" in str(info.value)


def test_tvmffi_callback_keyerror_surfaces_in_tvm_ffi(tvm_ffi, unique_name):
    def cb():
        raise KeyError("missing")

    tvmffi.register_global_func(unique_name, cb)
    with pytest.raises(KeyError) as info:
        tvm_ffi.get_global_func(unique_name)()
    assert info.value.args[0] == "missing"


@pytest.mark.parametrize("cls", [*BUILTIN_KINDS, KeyError], ids=lambda c: c.__name__)
def test_tvm_ffi_function_error_surfaces_in_tvmffi(tvm_ffi, unique_name, cls):
    def raiser(x):
        raise cls(f"from tvm_ffi {x}")

    tvm_ffi.register_global_func(unique_name, raiser)
    f = tvmffi.get_global_func(unique_name)
    with pytest.raises(cls) as info:
        f(9)
    assert isinstance(info.value, tvmffi.Error)
    assert info.value.kind == cls.__name__
    # (the official binding sends str(exc), which quotes a KeyError's key)
    assert "from tvm_ffi 9" in info.value.args[0]


def test_error_raised_by_runtime_through_tvm_ffi_surfaces_in_tvmffi(tvm_ffi):
    official_raise = tvm_ffi.get_global_func("testing.test_raise_error")
    with pytest.raises(IndexError) as info:
        testing.apply(official_raise, "IndexError", "both bindings")
    assert isinstance(info.value, tvmffi.Error)
    assert info.value.args[0] == "both bindings"


def test_error_from_tvmffi_callback_through_tvm_ffi_apply(tvm_ffi):
    # tvmffi -> tvm_ffi's apply (C++) -> tvmffi callback raising -> back to tvmffi
    def cb(x):
        raise ValueError(f"nested {x}")

    official_apply = tvm_ffi.get_global_func("testing.apply")
    with pytest.raises(ValueError) as info:
        testing.apply(official_apply, tvmffi.convert_func(cb), 5)
    assert info.value.args[0] == "nested 5"


def test_tvm_ffi_function_as_argument(tvm_ffi):
    tf = tvm_ffi.convert(lambda x: x * 10)
    assert isinstance(tf, tvm_ffi.Function)
    assert testing.apply(tf, 3) == 30
    official_add_one = tvm_ffi.get_global_func("testing.add_one")
    assert testing.apply(official_add_one, 3) == 4


def test_tvm_ffi_function_passes_by_handle(tvm_ffi):
    official = tvm_ffi.get_global_func("testing.add_one")
    out = testing.echo(official)
    assert isinstance(out, tvmffi.Function)
    assert out.__chandle__() == official.__chandle__()
    assert out(1) == 2


def test_tvm_ffi_function_use_count_balanced(tvm_ffi):
    tf = tvm_ffi.convert(lambda x: x)
    ours = testing.echo(tf)  # a tvmffi wrapper of the very same object
    base = object_use_count(ours)
    for i in range(1000):
        testing.apply(tf, i)
        testing.nop(tf)
    assert object_use_count(ours) == base


def test_tvmffi_function_passed_to_tvm_ffi(tvm_ffi):
    fn = tvmffi.convert_func(lambda x: x + 0.5)
    official_apply = tvm_ffi.get_global_func("testing.apply")
    assert official_apply(fn, 2) == 2.5


def test_tvm_ffi_calls_tvmffi_callback_calls_tvm_ffi(tvm_ffi, unique_name):
    tvm_ffi.register_global_func(unique_name, lambda x: x * 3)
    inner = tvmffi.get_global_func(unique_name)

    def cb(x):
        return inner(x) + 1

    official_apply = tvm_ffi.get_global_func("testing.apply")
    assert official_apply(tvmffi.convert_func(cb), 4) == 13
