"""Errors across the boundary, both directions."""

from __future__ import annotations

import gc
import weakref

import pytest

import tvmffi
import tvmffi.testing as testing

apply = testing.apply
raise_error = testing.test_raise_error

BUILTIN_KINDS = [
    ValueError,
    TypeError,
    IndexError,
    KeyError,
    AttributeError,
    NotImplementedError,
    AssertionError,
    RuntimeError,
    MemoryError,
]


def tb_function_names(exc: BaseException) -> list[str]:
    names = []
    tb = exc.__traceback__
    while tb is not None:
        names.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    return names


# ---- FFI -> Python ---------------------------------------------------------------


@pytest.mark.parametrize("cls", BUILTIN_KINDS, ids=lambda c: c.__name__)
def test_ffi_error_kind_maps_to_builtin(cls):
    msg = f"message for {cls.__name__}: äöü ✓"
    with pytest.raises(cls) as info:
        raise_error(cls.__name__, msg)
    exc = info.value
    assert isinstance(exc, cls)
    assert isinstance(exc, tvmffi.Error)
    assert exc.kind == cls.__name__
    assert exc.args[0] == msg
    if cls is not KeyError:  # str(KeyError) quotes its argument
        assert str(exc) == msg


@pytest.mark.parametrize("cls", BUILTIN_KINDS, ids=lambda c: c.__name__)
def test_ffi_error_is_catchable_as_tvmffi_error(cls):
    with pytest.raises(tvmffi.Error) as info:
        raise_error(cls.__name__, "x")
    assert isinstance(info.value, cls)


def test_ffi_error_classes_are_stable():
    # The same kind always gives the same class.
    with pytest.raises(ValueError) as a:
        raise_error("ValueError", "a")
    with pytest.raises(ValueError) as b:
        raise_error("ValueError", "b")
    assert type(a.value) is type(b.value)


def test_unknown_kind_is_a_runtime_error():
    # As with the official binding, an unknown kind raises a RuntimeError;
    # here it is also a tvmffi.Error whose .kind is the unknown kind.
    with pytest.raises(RuntimeError) as info:
        raise_error("MyKind", "custom message")
    exc = info.value
    assert isinstance(exc, tvmffi.Error)
    assert exc.kind == "MyKind"
    assert str(exc) == "custom message"
    assert exc.__tvm_ffi_error__.kind == "MyKind"
    assert not isinstance(exc, (ValueError, TypeError))


def test_ffi_backtrace_kept_in_notes():
    with pytest.raises(ValueError) as info:
        raise_error("ValueError", "with backtrace")
    notes = getattr(info.value, "__notes__", [])
    text = "\n".join(notes) + str(info.value)
    # The C++ frame that raised is named in the backtrace.
    assert "TestRaiseError" in text or "testing.cc" in text


def test_empty_and_long_messages():
    with pytest.raises(RuntimeError) as info:
        raise_error("RuntimeError", "")
    assert info.value.args[0] == ""
    long_msg = "line\n" * 2000
    with pytest.raises(RuntimeError) as info:
        raise_error("RuntimeError", long_msg)
    assert info.value.args[0] == long_msg


def test_runtime_type_check_error_is_type_error():
    with pytest.raises(TypeError) as info:
        testing.add_one("not an int")
    assert isinstance(info.value, tvmffi.Error)
    assert "add_one" in str(info.value)


def test_register_error_maps_kind_to_class():
    class MyExc(Exception):
        pass

    tvmffi.register_error("TvmffiTestsKindA", MyExc)
    with pytest.raises(MyExc) as info:
        raise_error("TvmffiTestsKindA", "custom kind")
    assert type(info.value) is MyExc
    assert info.value.args[0] == "custom kind"


def test_register_error_decorator():
    @tvmffi.register_error("TvmffiTestsKindB")
    class OtherExc(LookupError):
        pass

    assert isinstance(OtherExc, type)
    with pytest.raises(OtherExc) as info:
        raise_error("TvmffiTestsKindB", "decorated")
    assert info.value.args[0] == "decorated"


def test_register_error_rejects_non_exception():
    with pytest.raises(TypeError):
        tvmffi.register_error("TvmffiTestsKindC", int)


def test_error_after_error_clears_state():
    for kind in ("ValueError", "KeyError", "MyKind"):
        with pytest.raises(tvmffi.Error):
            raise_error(kind, "again")
    # A successful call afterwards is unaffected.
    assert testing.add_one(1) == 2


# ---- Python -> FFI -> Python -------------------------------------------------------


@pytest.mark.parametrize("cls", BUILTIN_KINDS, ids=lambda c: c.__name__)
def test_callback_exception_roundtrips(cls):
    msg = f"raised in callback: {cls.__name__}"

    def failing_callback_xyz(x):
        raise cls(msg)

    with pytest.raises(cls) as info:
        apply(failing_callback_xyz, 1)
    exc = info.value
    assert type(exc) is cls
    assert exc.args == (msg,)
    assert "failing_callback_xyz" in tb_function_names(exc)


def test_custom_exception_class_roundtrips():
    class Custom(Exception):
        def __init__(self, a, b):
            super().__init__(a, b)
            self.extra = a + b

    def cb():
        raise Custom(2, 3)

    with pytest.raises(Custom) as info:
        apply(cb)
    assert type(info.value) is Custom
    assert info.value.args == (2, 3)
    assert info.value.extra == 5
    assert "cb" in tb_function_names(info.value)


def test_exception_subclass_roundtrips():
    class MyValueError(ValueError):
        pass

    def cb():
        raise MyValueError("sub")

    with pytest.raises(MyValueError, match="sub"):
        apply(cb)


def test_keyboard_interrupt_in_callback_propagates():
    def cb():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        apply(cb)


def test_error_three_callback_levels_deep():
    def deepest_level(x):
        raise IndexError(f"deep {x}")

    def middle_level(x):
        return apply(deepest_level, x + 1)

    def top_level(x):
        return apply(middle_level, x + 1)

    with pytest.raises(IndexError) as info:
        apply(top_level, 1)
    assert type(info.value) is IndexError
    assert info.value.args == ("deep 3",)
    names = tb_function_names(info.value)
    for name in ("top_level", "middle_level", "deepest_level"):
        assert name in names
    assert names.index("top_level") < names.index("middle_level") < names.index("deepest_level")


def test_ffi_error_inside_callback_propagates_with_kind():
    def cb():
        raise_error("AttributeError", "from C++ inside a callback")

    with pytest.raises(AttributeError) as info:
        apply(cb)
    assert isinstance(info.value, tvmffi.Error)
    assert info.value.kind == "AttributeError"
    assert info.value.args[0] == "from C++ inside a callback"


def test_callback_can_catch_ffi_error_and_continue():
    def cb():
        try:
            raise_error("ValueError", "caught")
        except ValueError as e:
            return "handled " + str(e)

    assert apply(cb) == "handled caught"


def test_exception_object_is_released():
    class Tracked(Exception):
        pass

    refs = []

    def cb():
        exc = Tracked("t")
        refs.append(weakref.ref(exc))
        raise exc

    for _ in range(3):
        with pytest.raises(Tracked):
            apply(cb)
    gc.collect()
    assert all(r() is None for r in refs)


def test_exception_in_result_conversion():
    class Unconvertible:
        def __tvm_ffi_float__(self):
            raise TypeError("Unconvertible has no float value")

    with pytest.raises(TypeError) as info:
        apply(lambda: Unconvertible())
    assert "Unconvertible" in str(info.value)


# ---- exceptions seen by native callers ---------------------------------------------


@pytest.mark.parametrize("cls", BUILTIN_KINDS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("spawn", [False, True], ids=["same-thread", "native-thread"])
def test_callback_exception_becomes_ffi_error_of_same_kind(native, cls, spawn):
    def cb(x):
        raise cls(f"native caller sees {x}")

    res = native.call_int(tvmffi.convert_func(cb), 5, spawn=spawn)
    assert res["rc"] == -1
    assert res["kind"] == cls.__name__
    assert res["message"] == "native caller sees 5"


@pytest.mark.parametrize(("base", "message"), [(KeyError, "k"), (IndexError, "idx")])
def test_exception_subclass_crosses_as_builtin_kind(native, base, message):
    class Subclass(base):
        pass

    def cb(x):
        raise Subclass(message)

    res = native.call_int(tvmffi.convert_func(cb), 0, spawn=False)
    assert res["kind"] == base.__name__
    assert res["message"] == message


def test_ffi_keyerror_crosses_with_plain_message(native):
    # A KeyError that came from the FFI (a tvmffi.Error) keeps its plain message.
    def cb(x):
        raise_error("KeyError", "plain key")

    res = native.call_int(tvmffi.convert_func(cb), 0, spawn=False)
    assert res["kind"] == "KeyError"
    assert res["message"] == "plain key"


def test_registered_exception_crosses_as_its_kind(native):
    class Registered(Exception):
        pass

    tvmffi.register_error("TvmffiTestsKindD", Registered)

    def cb(x):
        raise Registered("mapped")

    res = native.call_int(tvmffi.convert_func(cb), 0, spawn=True)
    assert res["rc"] == -1
    assert res["kind"] == "TvmffiTestsKindD"
    assert res["message"] == "mapped"


def test_tvmffi_error_crosses_with_its_kind(native):
    def cb(x):
        raise_error("MyKind", "unknown kind survives")

    res = native.call_int(tvmffi.convert_func(cb), 0, spawn=False)
    assert res["kind"] == "MyKind"
    assert res["message"] == "unknown kind survives"


def test_exception_with_broken_str_still_crosses(native):
    class BadStr(Exception):
        def __str__(self):
            raise RuntimeError("no str for you")

    def cb(*args):
        raise BadStr()

    # Back into Python: the very exception type comes back.
    with pytest.raises(BadStr):
        apply(cb)
    # A native caller still gets an error of the exception's kind.
    res = native.call_int(tvmffi.convert_func(cb), 0, spawn=False)
    assert res["rc"] == -1
    assert res["kind"] == "BadStr"


# ---- an exception object as an argument ---------------------------------------
def test_never_raised_exception_argument_becomes_an_error_of_its_kind() -> None:
    # The first exception of a class takes the Python path, later ones the C fast path
    # (tvmffi.error._CLASS_FACTS): both give the same error object.
    echo = tvmffi.get_global_func("testing.echo")

    class NeverRaised(Exception):
        pass

    for _ in range(3):
        err = echo(ValueError("bad value"))
        assert (err.kind, err.message, err.backtrace) == ("ValueError", "bad value", "")
        assert echo(KeyError("k")).message == "k"  # the key's text, not its repr
        assert echo(KeyError("a", "b")).message == "('a', 'b')"
        assert echo(NeverRaised("n")).kind == "NeverRaised"

    # Registering a kind for a base class re-resolves classes already seen.
    tvmffi.register_error("SeenBefore")(NeverRaised)
    assert echo(NeverRaised("n")).kind == "SeenBefore"

    try:
        raise ValueError("raised")
    except ValueError as exc:  # a traceback: the Python path, which records it
        err = echo(exc)
    assert err.kind == "ValueError" and "test_core_errors.py" in err.backtrace


def test_exception_argument_with_a_broken_str_raises_its_error() -> None:
    class Broken(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no text")

    nop = tvmffi.get_global_func("testing.nop")
    for _ in range(2):  # the Python path, then the fast path
        with pytest.raises(RuntimeError, match="no text"):
            nop(Broken())
