"""Property tests (hypothesis): any value tvmffi converts comes back from an FFI
round trip as what the official binding gives for the same value, and values
cross between the two bindings unchanged, both ways and through containers."""

from __future__ import annotations

import math
from typing import Any

import pytest
import tvm_ffi
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tvmffi
import tvmffi.testing as testing

official_echo = tvm_ffi.get_global_func("testing.echo")
echo = testing.echo

INT64 = st.integers(-(2**63), 2**63 - 1)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    INT64,
    st.integers(-(2**200), 2**200),  # BigInt beyond int64
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),  # includes NUL and any code point UTF-8 can carry
    st.binary(max_size=40),
)
KEYS = st.one_of(INT64, st.text(max_size=10), st.booleans(), st.none())
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.tuples(inner, inner),
        st.dictionaries(KEYS, inner, max_size=5),
    ),
    max_leaves=25,
)


def plain(v: Any) -> Any:
    """A result of either binding as plain Python: sequences -> list, maps -> dict."""
    if v is None or isinstance(v, bool):
        return v
    for t in (int, float, str, bytes):  # the official binding's str/bytes subclasses
        if isinstance(v, t):
            return t(v)
    if hasattr(v, "items"):
        return {_key(plain(k)): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)) or (hasattr(v, "__len__") and hasattr(v, "__getitem__")):
        return [plain(x) for x in v]
    raise AssertionError(f"unexpected result type {type(v)!r}")


def _key(k: Any) -> Any:
    # Map keys: 1 and True are distinct FFI keys; keep them apart in the dict.
    return (type(k).__name__, k)


def expected(v: Any) -> Any:
    """What a round trip gives for `v`: tuples become lists."""
    if isinstance(v, (list, tuple)):
        return [expected(x) for x in v]
    if isinstance(v, dict):
        return {_key(k): expected(x) for k, x in v.items()}
    return v


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALUES)
def test_round_trip_matches_the_official_binding(value: Any) -> None:
    ours = plain(echo(value))
    theirs = plain(official_echo(value))
    assert same(ours, expected(value)), (value, ours)
    assert same(ours, theirs), (value, ours, theirs)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALUES)
def test_values_cross_between_bindings_unchanged(value: Any) -> None:
    # Our result handed to the official binding and back, and the reverse.
    there = official_echo(echo(value))
    back = echo(official_echo(value))
    assert same(plain(there), expected(value)), (value, there)
    assert same(plain(back), expected(value)), (value, back)


@settings(max_examples=100, deadline=None)
@given(st.lists(SCALARS, min_size=1, max_size=8))
def test_containers_keep_identity_across_bindings(items: list[Any]) -> None:
    arr = tvmffi.Array(items)
    # The official binding sees the same handle and hands the same one back.
    assert echo(official_echo(arr)).same_as(arr)
    assert same(plain(official_echo(arr)), expected(items))


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.floats(allow_nan=False),
        st.integers(-(2**70), 2**70),
        st.complex_numbers(),
        st.text(max_size=3),
        st.none(),
    ),
    st.sampled_from(["__tvm_ffi_int__", "__tvm_ffi_float__", "__tvm_ffi_value__"]),
)
def test_protocol_results_convert_or_raise_type_error(result: Any, protocol: str) -> None:
    obj = type("Proto", (), {protocol: lambda self: result})()
    try:
        got = echo(obj)
    except TypeError:
        if protocol == "__tvm_ffi_int__":
            assert not isinstance(result, int)
        elif protocol == "__tvm_ffi_float__":
            assert not isinstance(result, (int, float))
        else:
            pytest.fail(f"__tvm_ffi_value__ returning {result!r} was refused")
        return
    if protocol == "__tvm_ffi_int__":
        assert isinstance(result, int) and got == result
    elif protocol == "__tvm_ffi_float__":
        assert type(got) is float and got == float(result)
    elif isinstance(result, complex):  # no FFI value: the object itself, opaque
        assert got is result
    else:
        assert same(plain(got), expected(result))


@given(
    st.one_of(
        st.text(min_size=8, max_size=300),
        st.text(alphabet=st.characters(max_codepoint=127), min_size=8, max_size=300),
    )
)
def test_heap_string_results_behave_as_the_str(s: str) -> None:
    """A heap string result is a String (a str subclass) indistinguishable from
    the str with the same text: ASCII results are built directly in str's
    subclass layout, the rest through str.__new__."""
    r = echo(s)
    assert type(r) is tvmffi.core.String
    assert r == s and str(r) == s and hash(r) == hash(s) and len(r) == len(s)
    assert r.encode() == s.encode() and r.isascii() == s.isascii()
    assert r[1:-1] == s[1:-1] and r + "!" == s + "!" and repr(r) == repr(s)
    assert {r: 1}[s] == 1 and (r < s + "\x00") and r.upper() == s.upper()
    assert echo(r) == s and echo(r)._tvm_ffi_cached_object is not None
