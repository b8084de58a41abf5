"""Bad input: unsupported values, keyword arguments, the global registry."""

from __future__ import annotations

import re
import sys

import pytest
from conftest import run_python

import tvmffi
import tvmffi.testing as testing

echo = testing.echo


class Opaque:
    """A plain class with no conversion to an FFI value."""


class BadHandled:
    """A class whose _OPAQUE_PTR_HANDLERS entry returns a non-address."""


@pytest.mark.parametrize(
    "value",
    [object(), {1, 2}, frozenset(), Opaque(), iter([1]), range(3)],
    ids=lambda v: type(v).__name__,
)
@pytest.mark.parametrize("position", [0, 1, 3, 9])
def test_unconvertible_value_passes_as_opaque_object(value, position):
    # As with the official binding: a Python object with no FFI conversion
    # travels as an opaque object and comes back as the very same object.
    args = [0] * position + [value]
    before = sys.getrefcount(value)
    assert testing.nop(*args) is None
    back = echo(value)
    assert back is value
    del back
    assert sys.getrefcount(value) == before


@pytest.mark.parametrize("position", [0, 1, 3, 9])
def test_bad_opaque_ptr_handler_result_names_position_and_type(position):
    handlers = tvmffi.core._OPAQUE_PTR_HANDLERS
    handlers[BadHandled] = lambda v: "not an address"
    try:
        with pytest.raises(TypeError) as info:
            testing.nop(*([0] * position + [BadHandled()]))
    finally:
        del handlers[BadHandled]
    msg = str(info.value)
    assert re.search(r"\bBadHandled\b", msg), msg
    assert re.search(rf"\b{position}\b", msg), msg
    # Without the entry the same value is an opaque object again.
    value = BadHandled()
    assert echo(value) is value


def test_opaque_element_inside_list():
    value = object()
    back = echo([1, 2, value])
    assert back[2] is value


def test_opaque_elements_inside_nested_containers():
    inner = {3}
    assert echo([[1, [2, inner]]])[0][1][1] is inner
    value = object()
    assert echo({"k": [value]})["k"][0] is value
    key = object()
    # Each conversion makes a new opaque object: the key comes back, found by iteration.
    assert [(k is key, v) for k, v in echo({key: 1}).items()] == [(True, 1)]


def test_failing_value_in_second_argument_after_convertible_first():
    handlers = tvmffi.core._OPAQUE_PTR_HANDLERS
    handlers[BadHandled] = lambda v: "not an address"
    try:
        with pytest.raises(TypeError) as info:
            testing.nop("a heap string beyond seven bytes", [1, "x" * 20], BadHandled())
    finally:
        del handlers[BadHandled]
    assert re.search(r"\b2\b", str(info.value))
    assert "BadHandled" in str(info.value)


def test_kwargs_rejected():
    with pytest.raises(TypeError):
        echo(x=1)
    with pytest.raises(TypeError):
        echo(1, y=2)
    with pytest.raises(TypeError):
        tvmffi.get_global_func("testing.add_one")(**{"x": 1})


def test_kwargs_rejected_for_wrapped_callable():
    fn = tvmffi.convert_func(lambda **kw: kw)
    with pytest.raises(TypeError):
        fn(a=1)


def test_function_cannot_be_instantiated_directly():
    with pytest.raises(TypeError):
        tvmffi.Function()


def test_convert_func_rejects_non_callable():
    with pytest.raises(TypeError):
        tvmffi.convert_func(42)
    with pytest.raises(TypeError):
        tvmffi.to_function(42)  # tvmffi's earlier name, kept as an alias


class _ObjectProtocol:
    """Converts through __tvm_ffi_object__, returning whatever it was given."""

    def __init__(self, obj):
        self.obj = obj

    def __tvm_ffi_object__(self):
        return self.obj


def test_object_protocol_returning_empty_object_raises_value_error():
    with pytest.raises(ValueError, match="holds no FFI handle"):
        echo(_ObjectProtocol(tvmffi.Object()))


def test_object_protocol_returning_object_passes_its_handle():
    arr = tvmffi.Array([1, 2])
    out = echo(_ObjectProtocol(arr))
    assert out.same_as(arr)
    assert list(out) == [1, 2]


def test_self_referential_list_gives_clean_error_in_subprocess():
    # Run in a subprocess: a crash must not take the test session down.
    proc = run_python(
        "import tvmffi.testing as t\n"
        "lst = []\n"
        "lst.append(lst)\n"
        "try:\n"
        "    t.echo(lst)\n"
        "except (RecursionError, ValueError, TypeError) as e:\n"
        "    print('raised', type(e).__name__)\n"
    )
    assert proc.returncode == 0, f"interpreter died (rc={proc.returncode}): {proc.stderr[-2000:]}"
    assert "raised" in proc.stdout


def test_very_deeply_nested_list_gives_clean_error_in_subprocess():
    proc = run_python(
        "import tvmffi.testing as t\n"
        "v = [0]\n"
        "for _ in range(200000):\n"
        "    v = [v]\n"
        "try:\n"
        "    t.echo(v)\n"
        "    print('ok')\n"
        "except (RecursionError, ValueError, TypeError) as e:\n"
        "    print('raised', type(e).__name__)\n"
    )
    assert proc.returncode == 0, f"interpreter died (rc={proc.returncode}): {proc.stderr[-2000:]}"
    assert "raised" in proc.stdout or "ok" in proc.stdout


_MUTATING_ITEM = """
import tvmffi.testing as t
class Evil:
    def __init__(self, victim):
        self.victim = victim
    def __index__(self):
        self.victim.clear()
        return 1
"""


def _assert_echo_survives(setup: str, name: str) -> None:
    """Run setup then echo(name) under the debug allocator; the interpreter must live."""
    proc = run_python(
        _MUTATING_ITEM + setup + f"try:\n    t.echo({name})\n"
        "except Exception as e:\n    print('raised', type(e).__name__)\nprint('survived')\n",
        env_extra={"PYTHONMALLOC": "debug"},
    )
    assert proc.returncode == 0, f"interpreter died (rc={proc.returncode}): {proc.stderr[-2000:]}"
    assert "survived" in proc.stdout


def test_list_mutated_during_conversion_is_memory_safe():
    _assert_echo_survives(
        "lst = []\n"
        "lst.append(Evil(lst))\n"
        "lst.extend('heap string number %d of the list' % i for i in range(20))\n",
        "lst",
    )


def test_dict_mutated_during_conversion_is_memory_safe():
    _assert_echo_survives(
        "d = {}\n"
        "d['first'] = Evil(d)\n"
        "for i in range(20):\n"
        "    d['key %d' % i] = 'heap string value number %d' % i\n",
        "d",
    )


def test_small_dict_mutated_during_conversion_is_memory_safe():
    # A small dict of plain entries converts without a snapshot; one that is not all
    # plain (the Evil value last, after plain entries were seen) takes the snapshot.
    _assert_echo_survives(
        "d = {'key %d' % i: 'heap string value number %d' % i for i in range(5)}\n"
        "d['last'] = Evil(d)\n",
        "d",
    )


def test_index_item_in_list_converts_without_mutation():
    class Idx:
        def __index__(self):
            return 41

    out = echo([Idx(), "heap string after an __index__ item"])
    assert list(out) == [41, "heap string after an __index__ item"]


# ---- global registry -------------------------------------------------------------


def test_get_global_func_missing_raises_value_error_naming_it():
    with pytest.raises(ValueError) as info:
        tvmffi.get_global_func("no.such")
    assert "no.such" in str(info.value)


def test_get_global_func_allow_missing_returns_none():
    assert tvmffi.get_global_func("no.such", allow_missing=True) is None
    assert tvmffi.get_global_func("no.such", True) is None


def test_get_global_func_returns_function():
    f = tvmffi.get_global_func("testing.add_one")
    assert isinstance(f, tvmffi.Function)
    assert f(1) == 2


def test_get_global_func_rejects_non_str():
    with pytest.raises(TypeError):
        tvmffi.get_global_func(123)


def test_list_global_func_names():
    names = tvmffi.registry.list_global_func_names()
    assert isinstance(names, list)
    assert all(isinstance(n, str) for n in names)
    assert "testing.echo" in names
    assert "ffi.Array" in names
    assert len(names) == len(set(names))


def test_register_global_func(unique_name):
    fn = tvmffi.register_global_func(unique_name, lambda a, b: a - b)
    assert isinstance(fn, tvmffi.Function)
    assert fn(5, 3) == 2
    got = tvmffi.get_global_func(unique_name)
    assert got.same_as(fn)
    assert got(10, 1) == 9
    assert unique_name in tvmffi.registry.list_global_func_names()


def test_register_existing_name_without_override_raises(unique_name):
    tvmffi.register_global_func(unique_name, lambda: "first")
    # The runtime's own error, as with the official binding: a RuntimeError.
    with pytest.raises(RuntimeError) as info:
        tvmffi.register_global_func(unique_name, lambda: "second")
    assert unique_name in str(info.value)
    assert "is already registered; pass override=True" in str(info.value)  # what to do
    assert tvmffi.get_global_func(unique_name)() == "first"


@pytest.mark.parametrize(
    ("value", "named"),
    [
        (2**70, "`int` beyond the int64 range"),
        (-(2**64), "`int` beyond the int64 range"),
        ("abc", "`str`"),  # a small string
        ("a string longer than seven bytes", "`str`"),
        (b"xy", "`bytes`"),
        (b"bytes longer than seven", "`bytes`"),
    ],
)
def test_mismatch_names_the_python_type_passed(value, named):
    # The runtime names the FFI type the value became (ffi.BigInt, ffi.SmallStr): the
    # message names what the caller passed.
    add_one = tvmffi.get_global_func("testing.add_one")
    with pytest.raises(TypeError) as info:
        add_one(value)
    msg = str(info.value)
    assert msg.startswith("Mismatched type on argument #0 when calling: `testing.add_one(")
    assert msg.endswith(f"Expected `int` but got {named}"), msg
    assert "ffi." not in msg.split("Expected")[1]


def test_mismatch_of_an_opaque_object_keeps_the_runtime_type_key():
    # As the official binding (its test_opaque_type_error pins this text).
    with pytest.raises(TypeError) as info:
        tvmffi.get_global_func("testing.add_one")(object())
    assert str(info.value).endswith("Expected `int` but got `ffi.OpaquePyObject`")


def test_register_builtin_name_without_override_raises():
    with pytest.raises(RuntimeError):
        tvmffi.register_global_func("testing.echo", lambda x: x)
    assert echo(3) == 3


def test_register_with_override_replaces(unique_name):
    tvmffi.register_global_func(unique_name, lambda: "first")
    tvmffi.register_global_func(unique_name, lambda: "second", override=True)
    assert tvmffi.get_global_func(unique_name)() == "second"


def test_register_decorator_form(unique_name):
    @tvmffi.register_global_func(unique_name)
    def my_func(x):
        return x * 2

    # As with the official binding, the decorator returns the registered Function.
    assert my_func(4) == 8
    assert isinstance(my_func, tvmffi.Function)
    assert tvmffi.get_global_func(unique_name).same_as(my_func)
    assert tvmffi.get_global_func(unique_name)(21) == 42


def test_register_decorator_existing_name_raises(unique_name):
    tvmffi.register_global_func(unique_name, lambda: 1)
    with pytest.raises(RuntimeError):

        @tvmffi.register_global_func(unique_name)
        def again():
            return 2

    @tvmffi.register_global_func(unique_name, override=True)
    def replaced():
        return 3

    assert tvmffi.get_global_func(unique_name)() == 3


def test_register_a_function_object(unique_name):
    add_one = tvmffi.get_global_func("testing.add_one")
    fn = tvmffi.register_global_func(unique_name, add_one)
    assert fn.same_as(add_one)
    assert tvmffi.get_global_func(unique_name)(1) == 2


def test_register_non_callable_raises(unique_name):
    with pytest.raises(TypeError):
        tvmffi.register_global_func(unique_name, 5)
    assert tvmffi.get_global_func(unique_name, allow_missing=True) is None


def test_registered_function_survives_dropping_python_refs(unique_name):
    import gc

    tvmffi.register_global_func(unique_name, lambda: "alive")
    gc.collect()
    assert tvmffi.get_global_func(unique_name)() == "alive"


def test_argument_error_messages_with_long_and_non_ascii_type_names():
    # Argument errors are formatted in a C buffer: a type name cut at 200 bytes
    # may split a UTF-8 sequence, which must not fail the message itself.
    np = pytest.importorskip("numpy")
    name = "Ärrày" * 60  # 2 bytes per non-ASCII letter: the cut lands inside one
    sub = type(name, (np.ndarray,), {})
    arr = np.zeros(4, np.float32).view(sub)
    arr.flags.writeable = False
    for position in (0, 2):
        args = [1] * position + [arr]
        with pytest.raises(BufferError) as info:
            testing.nop(*args)
        msg = str(info.value)
        assert msg.startswith(f"argument {position}: 'Ärrày")
        assert "holds read-only memory" in msg and "allow_read_only=True" in msg
        assert len(msg) < 600
