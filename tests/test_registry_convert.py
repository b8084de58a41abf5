"""The official binding's registry, conversion, error and support-module API on tvmffi."""

from __future__ import annotations

import copy
import ctypes
import dataclasses
import inspect
import os
import pickle
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tvmffi
import tvmffi.testing as testing
from tvmffi import libinfo
from tvmffi.core import TypeSchema
from tvmffi.utils.kwargs_wrapper import make_kwargs_wrapper, make_kwargs_wrapper_from_signature

echo = testing.echo


# ---- registry --------------------------------------------------------------------------
def test_decorator_returns_the_registered_function(unique_name: str) -> None:
    @tvmffi.register_global_func(unique_name)
    def double(x: int) -> int:
        return 2 * x

    assert isinstance(double, tvmffi.Function)
    assert tvmffi.get_global_func(unique_name).same_as(double)
    assert double(21) == 42
    tvmffi.remove_global_func(unique_name)
    assert tvmffi.get_global_func(unique_name, allow_missing=True) is None
    assert unique_name not in tvmffi.registry.list_global_func_names()


def test_register_callable_under_its_name() -> None:
    def tvmffi_test_named_func(x: int) -> int:
        return x + 3

    f = tvmffi.register_global_func(tvmffi_test_named_func, override=True)
    try:
        assert tvmffi.get_global_func("tvmffi_test_named_func").same_as(f)
        assert f(1) == 4
    finally:
        tvmffi.remove_global_func("tvmffi_test_named_func")


def test_missing_global_raises_value_error() -> None:
    with pytest.raises(ValueError, match=r"no\.such\.function"):
        tvmffi.get_global_func("no.such.function")
    with pytest.raises(ValueError):
        tvmffi.register_global_func(42)  # type: ignore[arg-type]


def test_metadata_of_cxx_and_python_functions(unique_name: str) -> None:
    meta = tvmffi.get_global_func_metadata("testing.schema_id_int")
    assert meta["int_attr"] == 1 and meta["str_attr"] == "hello"
    assert str(TypeSchema.from_json_str(meta["type_schema"])) == "Callable[[int], int]"
    tvmffi.register_global_func(unique_name, lambda: None)
    assert tvmffi.get_global_func_metadata(unique_name) == {}


def test_registered_type_keys() -> None:
    keys = tvmffi.registry.get_registered_type_keys()
    assert "ffi.Array" in keys and "ffi.Error" in keys


def test_init_ffi_api_fills_a_module(unique_name: str) -> None:
    prefix = unique_name.rsplit(".", 1)[0] + ".api"
    tvmffi.register_global_func(prefix + ".triple", lambda x: 3 * x)
    tvmffi.register_global_func(prefix + ".deeper.skip", lambda: 0)
    mod = types.ModuleType(prefix)
    sys.modules[prefix] = mod
    try:
        tvmffi.init_ffi_api(prefix)
        assert mod.triple(5) == 15
        assert not hasattr(mod, "deeper") and not hasattr(mod, "skip")
    finally:
        del sys.modules[prefix]
    from tvmffi import _ffi_api

    assert _ffi_api.ArraySize(tvmffi.convert([1, 2])) == 2


# ---- conversion ------------------------------------------------------------------------
def test_convert_gives_ffi_values() -> None:
    assert isinstance(tvmffi.convert([1, 2]), tvmffi.Array)
    assert isinstance(tvmffi.convert({"a": 1}), tvmffi.Map)
    f = tvmffi.convert(lambda a, b: a + b)
    assert isinstance(f, tvmffi.Function) and f(1, 2) == 3
    assert tvmffi.convert(None) is None and tvmffi.convert(3) == 3
    assert tvmffi.convert_func(lambda: 7)() == 7
    with pytest.raises(TypeError, match="__dlpack_c_exchange_api__"):
        tvmffi.convert_func(lambda x: x, tensor_cls=object)


def test_value_and_number_protocols() -> None:
    class Value:
        def __init__(self, v: object) -> None:
            self.v = v

        def __tvm_ffi_value__(self) -> object:
            return self.v

    class AsInt:
        def __tvm_ffi_int__(self) -> int:
            return 10

    class AsFloat:
        def __tvm_ffi_float__(self) -> float:
            return 2.5

    assert echo(Value(Value(10))) == 10
    assert tuple(echo(Value([1, Value(2)]))) == (1, 2)
    assert echo(AsInt()) == 10 and isinstance(echo(AsInt()), int)
    assert echo(AsFloat()) == 2.5


def test_pointer_stream_dtype_device_protocols() -> None:
    class Ptr:
        def __tvm_ffi_opaque_ptr__(self) -> int:
            return 0x1234

    class Stream:
        def __cuda_stream__(self) -> tuple[int, int]:
            return (0, 0x5678)

    class DT:
        def __dlpack_data_type__(self) -> tuple[int, int, int]:
            return (2, 32, 1)

    class Dev:
        def __dlpack_device__(self) -> tuple[int, int]:
            return (2, 1)

    assert echo(Ptr()).value == 0x1234
    assert echo(Stream()).value == 0x5678
    assert echo(DT()) == tvmffi.dtype("float32")
    assert echo(Dev()) == tvmffi.device("cuda:1")


def test_bad_pair_protocols_raise() -> None:
    class BadDT:
        def __dlpack_data_type__(self) -> tuple[int, int]:
            return (2, 32)

    class BigDev:
        def __dlpack_device__(self) -> tuple[int, int]:
            return (2, 2**40)

    with pytest.raises(TypeError, match="__dlpack_data_type__"):
        echo(BadDT())
    with pytest.raises(ValueError):
        echo(BigDev())


@settings(deadline=None)
@given(st.integers(0, 255), st.integers(0, 255), st.integers(1, 32767))
def test_dlpack_data_type_protocol_round_trips(code: int, bits: int, lanes: int) -> None:
    class DT:
        def __dlpack_data_type__(self) -> tuple[int, int, int]:
            return (code, bits, lanes)

    try:
        out = echo(DT())
    except ValueError:
        return  # a code the runtime cannot name
    assert (out.type_code, out.bits, out.lanes) == (code, bits, lanes)


def test_opaque_objects_keep_identity_and_references() -> None:
    class Thing:
        pass

    x = Thing()
    base = sys.getrefcount(x)
    assert echo(x) is x
    assert tvmffi.convert(lambda z: z)(x) is x
    assert sys.getrefcount(x) == base


def test_opaque_ptr_handlers_are_looked_up_per_value() -> None:
    class Event:
        def __init__(self, address: int) -> None:
            self.address = address

    handlers = tvmffi.core._OPAQUE_PTR_HANDLERS
    handlers[Event] = lambda e: e.address
    try:
        assert echo(Event(0xCAFE)).value == 0xCAFE
    finally:
        del handlers[Event]
    e = Event(1)
    assert echo(e) is e


# ---- errors ----------------------------------------------------------------------------
def _cxx_error() -> BaseException:
    try:
        testing.test_raise_error("ValueError", "error XYZ")
    except ValueError as e:
        return e
    raise AssertionError("no error")


def test_ffi_exception_carries_its_error_object() -> None:
    err = _cxx_error()
    ffi_error = err.__tvm_ffi_error__  # type: ignore[attr-defined]
    assert isinstance(ffi_error, tvmffi.core.Error)
    assert (ffi_error.kind, ffi_error.message) == ("ValueError", "error XYZ")
    assert "TestRaiseError" in ffi_error.backtrace


def test_exception_pickles_and_copies_with_its_error() -> None:
    err = _cxx_error()
    for restored in (pickle.loads(pickle.dumps(err)), copy.deepcopy(err)):
        assert isinstance(restored, ValueError)
        assert restored.__tvm_ffi_error__.message == "error XYZ"  # type: ignore[attr-defined]
    bare = tvmffi.core.Error("TypeError", "boom", "bt")
    back = pickle.loads(pickle.dumps(bare))
    assert (back.kind, back.message, back.backtrace) == ("TypeError", "boom", "bt")
    assert not back.same_as(bare)
    empty = pickle.loads(pickle.dumps(tvmffi.core.Error.__new__(tvmffi.core.Error)))
    assert empty.__chandle__() == 0


def test_exception_argument_becomes_error_object() -> None:
    def raise_here() -> None:
        raise KeyError("missing")

    try:
        raise_here()
    except KeyError as e:
        ffi_error = echo(e)
    assert isinstance(ffi_error, tvmffi.core.Error)
    assert ffi_error.kind == "KeyError" and ffi_error.message == "missing"
    assert "raise_here" in ffi_error.backtrace


def test_register_error_official_forms() -> None:
    @tvmffi.register_error
    class W13cError(RuntimeError):
        pass

    @tvmffi.register_error("W13cOther")
    class Other(ValueError):
        pass

    with pytest.raises(W13cError, match="one"):
        testing.test_raise_error("W13cError", "one")
    with pytest.raises(Other, match="two"):
        testing.test_raise_error("W13cOther", "two")
    with pytest.raises(RuntimeError):
        testing.test_raise_error("W13cUnknownKind", "three")


# ---- libinfo, config -------------------------------------------------------------------
def test_libinfo_answers_with_the_wheel_files() -> None:
    assert Path(libinfo.find_libtvm_ffi()).samefile(tvmffi.lib_path())
    include = Path(libinfo.find_include_path())
    assert (include / "tvm" / "ffi" / "c_api.h").is_file()
    assert (Path(libinfo.find_dlpack_include_path()) / "dlpack").is_dir()
    assert (Path(libinfo.find_cmake_path()) / "tvm_ffi-config.cmake").is_file()
    assert Path(libinfo.find_cython_lib()).is_file()
    assert str(include) in libinfo.include_paths()


def test_find_library_by_basename(tmp_path: Path) -> None:
    (tmp_path / "libw13cdummy.so").write_bytes(b"")
    found = libinfo._find_library_by_basename("no-such-dist", "w13cdummy", [tmp_path])
    assert found == (tmp_path / "libw13cdummy.so").resolve()
    with pytest.raises(TypeError, match=r"extra_lib_paths\[1\]"):
        libinfo._find_library_by_basename("x", "y", [tmp_path, str(tmp_path)])  # type: ignore[list-item]
    with pytest.raises(RuntimeError, match="Cannot find library"):
        libinfo._find_library_by_basename("no-such-dist", "w13c_absent", [tmp_path])


def test_config_cli_prints_paths() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "tvmffi.config", "--includedir", "--libs", "--cflags"],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ},
    ).stdout.split("\n")
    inc = libinfo.find_include_path()
    dirs = dict.fromkeys([inc, libinfo.find_dlpack_include_path()])  # each named once
    assert out[:3] == [inc, " ".join(f"-I{d}" for d in dirs), "-ltvm_ffi"]


# ---- kwargs wrapper --------------------------------------------------------------------
def test_kwargs_wrapper_binds_and_validates() -> None:
    w = make_kwargs_wrapper(lambda *a: a, ["a", "b"], (5,), ["c"], {"c": "s"})
    assert w(1) == (1, 5, "s") and w(1, c=None, b=2) == (1, 2, None)
    with pytest.raises(TypeError):
        w()
    with pytest.raises(ValueError, match="Python keyword"):
        make_kwargs_wrapper(lambda *a: a, ["class"])
    with pytest.raises(ValueError, match="internal names"):
        make_kwargs_wrapper(lambda *a: a, ["__i_MISSING"])

    @dataclasses.dataclass
    class P:
        x: int
        y: list[object]

    def proto(p: P, q: int = 3) -> None:
        """Doc."""

    w2 = make_kwargs_wrapper_from_signature(
        lambda *a: a, inspect.signature(proto), proto, map_dataclass_to_tuple=["p"]
    )
    assert w2(P(1, [P(2, [])])) == ((1, [(2, [])]), 3)
    assert w2.__name__ == "proto" and w2.__doc__ == "Doc."


def test_kwargs_wrapper_defaults_never_enter_the_source() -> None:
    # A str default that looks like code is a value, not source.
    w = make_kwargs_wrapper(lambda *a: a, ["a"], ("__import__('os').getpid()",))
    assert w() == ("__import__('os').getpid()",)


# ---- type schema -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("testing.schema_packed", "Callable[..., Any]"),
        ("testing.schema_no_args_no_return", "Callable[[], None]"),
        ("testing.schema_id_dltensor", "Callable[[Tensor], Tensor]"),
        ("testing.schema_id_arr", "Callable[[Array[Any]], Array[Any]]"),
        (
            "testing.schema_arr_map_opt",
            "Callable[[Array[int | None], Map[str, Array[int]], str | None], Map[str, Array[int]]]",
        ),
    ],
)
def test_type_schema_renders_official_spelling(name: str, text: str) -> None:
    schema = TypeSchema.from_json_str(tvmffi.get_global_func_metadata(name)["type_schema"])
    assert str(schema) == text
    assert schema.repr(lambda t: {"Array": "Sequence"}.get(t, t)) == text.replace(
        "Array", "Sequence"
    )


def test_opaque_ptr_arguments_keep_ctypes() -> None:
    assert echo(ctypes.c_void_p(0x10)).value == 0x10


# ---- Function --------------------------------------------------------------------------
def test_function_has_instance_attributes_and_is_collected() -> None:
    import gc
    import weakref

    f = tvmffi.convert(lambda x: x)
    f.__name__ = "renamed"  # type: ignore[attr-defined]
    assert f.__name__ == "renamed"  # type: ignore[attr-defined]
    f.me = f  # type: ignore[attr-defined]  # a cycle through the instance dict
    ref = weakref.ref(f)
    del f
    gc.collect()
    assert ref() is None


def test_function_subclass_starts_empty() -> None:
    class Jit(tvmffi.Function):
        def __init__(self, meta: int) -> None:
            self.meta = meta

    j = Jit(5)
    assert j.meta == 5 and j.__chandle__() == 0
    with pytest.raises(ValueError, match="holds no FFI function"):
        j(1)
    with pytest.raises(TypeError):
        tvmffi.Function()


# ---- moves (obj._move()) ---------------------------------------------------------------
def test_move_hands_the_reference_to_a_callback() -> None:
    use_count = tvmffi.get_global_func("testing.object_use_count")
    seen: list[int] = []

    def take(x: object) -> None:
        seen.append(use_count(x))

    f = tvmffi.convert(take)
    x = tvmffi.convert([1, 2])
    f(x)
    assert seen == [2] and x.__ctypes_handle__().value is not None
    f(x._move())
    assert seen == [2, 1]  # moved: the callback held the only reference
    assert x.__ctypes_handle__().value is None
    with pytest.raises(ValueError, match="holds no FFI handle"):
        f(x._move())


def test_move_and_plain_view_of_one_object_in_one_call() -> None:
    # The callee takes and drops the moved reference; the plain view stays valid.
    f = tvmffi.convert(lambda moved, plain: len(plain))
    x = tvmffi.convert([1, 2, 3])
    assert f(x._move(), x) == 3
    with pytest.raises(TypeError, match="container element"):
        echo([tvmffi.convert([1])._move()])


def test_callback_returning_a_move_hands_its_reference() -> None:
    use_count = tvmffi.get_global_func("testing.object_use_count")
    held = tvmffi.convert([7])
    out = testing.apply(lambda: held._move())
    assert held.__ctypes_handle__().value is None
    assert list(out) == [7] and use_count(out) == 1


# ---- py_class / method -----------------------------------------------------------------
def test_py_class_fields_methods_and_lifetime(unique_name: str) -> None:
    import gc
    import weakref

    from tvmffi.dataclasses import py_class

    @py_class(unique_name + ".Node")
    class Node(tvmffi.Object):
        x: int
        payload: Any

        @tvmffi.method
        def label(self) -> str:
            return f"N({self.x})"

        @tvmffi.method
        @staticmethod
        def make() -> int:
            return 42

    class Held:
        pass

    held = Held()
    ref = weakref.ref(held)
    n = Node(7, held)
    assert n.x == 7 and n.payload is held
    # Fields convert to their annotation (the official binding's type converter).
    with pytest.raises(TypeError, match="expected int"):
        n.x = "text beyond the small-string size"
    n.payload = "text beyond the small-string size"
    assert n.payload == "text beyond the small-string size"
    info = Node.__tvm_ffi_type_info__  # type: ignore[attr-defined]
    methods = {m.name: m for m in info.methods}
    assert methods["make"].is_static and methods["make"].func() == 42
    n.x = 3
    assert methods["label"].func(n) == "N(3)"
    back = echo(n)
    assert isinstance(back, Node) and back.x == 3
    with pytest.raises(TypeError, match="missing"):
        Node(x=1)
    del n, back, held
    gc.collect()
    assert ref() is None  # the object's field released the Python payload


def test_method_rejects_classmethod_and_non_callables() -> None:
    with pytest.raises(TypeError, match="classmethod"):
        tvmffi.method(classmethod(lambda cls: 0))
    with pytest.raises(TypeError, match="expected a callable"):
        tvmffi.method(42)


def test_nested_error_backtrace_keeps_each_frame_once() -> None:
    fapply = tvmffi.convert(lambda f, *args: f(*args))
    recorded = []

    def raise_error() -> None:
        try:
            fapply(testing.test_raise_error, "ValueError", "error XYZ")
        except ValueError as e:
            recorded.append(e.__tvm_ffi_error__)  # type: ignore[attr-defined]
            raise

    with pytest.raises(ValueError) as info:
        testing.apply(raise_error)
    ffi_error = info.value.__tvm_ffi_error__  # type: ignore[attr-defined]
    assert ffi_error.same_as(recorded[0])
    bt = ffi_error.backtrace
    assert bt.count("TestRaiseError") == 1 and bt.count("<lambda>") == 1
    # The native caller of the callback is in it, outside the Python frames.
    assert bt.count("TestApply") == 1
    assert bt.find("TestRaiseError") < bt.find("<lambda>") < bt.find("TestApply")


def test_register_global_func_forms(unique_name: str) -> None:
    # name and function; name then decorator; bare decorator (its __name__).
    f = tvmffi.register_global_func(unique_name + "_a", lambda x: x + 1)
    assert isinstance(f, tvmffi.Function) and f(1) == 2

    @tvmffi.register_global_func(unique_name + "_b")
    def twice(x: int) -> int:
        return 2 * x

    assert isinstance(twice, tvmffi.Function) and tvmffi.get_global_func(unique_name + "_b")(4) == 8
    with pytest.raises(RuntimeError):
        tvmffi.register_global_func(unique_name + "_b", lambda: 0)
    tvmffi.register_global_func(unique_name + "_b", lambda: 0, override=True)
    assert tvmffi.get_global_func(unique_name + "_b")() == 0
    with pytest.raises(ValueError, match="expect string function name"):
        tvmffi.register_global_func(5)  # type: ignore[arg-type]
    for suffix in ("_a", "_b"):
        tvmffi.remove_global_func(unique_name + suffix)
