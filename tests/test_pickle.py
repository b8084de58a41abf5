"""pickle and copy.deepcopy of every tvmffi value (tensors, functions, modules, objects)."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import importlib.util
import os
import pickle
import re
import textwrap
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from conftest import run_python
from hypothesis import given, settings
from hypothesis import strategies as st

import tvmffi
import tvmffi.cpp
import tvmffi.pickling
from tvmffi import _pickle, codegen
from tvmffi.codegen import Scalar, Signature, Tensor, Var
from tvmffi.testing.testing import create_object

PROTOCOLS = list(range(2, pickle.HIGHEST_PROTOCOL + 1))


def _layouts() -> list[np.ndarray]:
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    return [
        a,
        a[:, ::2],  # strided
        a.T,  # transposed
        a[::-1],  # negative stride
        a[1:3, 2:5],  # offset into its buffer
        np.array(7.5),  # 0-d
        np.zeros((0, 3), np.float64),  # empty
        np.arange(10, dtype=np.int8),
        np.array([True, False, True]),
        np.arange(6, dtype=np.uint64).reshape(2, 3) * (2**63 // 5),
        np.arange(5, dtype=np.float16),
        np.arange(4, dtype=np.float32).astype(ml_dtypes.bfloat16),
        np.arange(8, dtype=np.complex64),
    ]


def _same_tensor(u: Any, t: Any, arr: np.ndarray) -> None:
    assert isinstance(u, tvmffi.Tensor)
    assert u.shape == t.shape and u.strides == t.strides
    assert u.dtype == t.dtype and u.device == t.device
    if arr.dtype == ml_dtypes.bfloat16:  # NumPy's DLPack import lacks it: torch's has it
        torch = pytest.importorskip("torch")

        np.testing.assert_array_equal(torch.from_dlpack(u).float().numpy(), arr.astype(np.float32))
        return
    np.testing.assert_array_equal(np.from_dlpack(u), arr)


@pytest.mark.parametrize("index", range(len(_layouts())))
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tensor_round_trip_keeps_dtype_shape_strides(index: int, protocol: int) -> None:
    arr = _layouts()[index]
    t = tvmffi.from_dlpack(arr)
    _same_tensor(pickle.loads(pickle.dumps(t, protocol=protocol)), t, arr)


@pytest.mark.parametrize("index", range(len(_layouts())))
def test_tensor_deepcopy_is_a_copy(index: int) -> None:
    arr = _layouts()[index]
    t = tvmffi.from_dlpack(arr)
    u = copy.deepcopy(t)
    _same_tensor(u, t, arr)
    if arr.size:
        assert u.data_ptr() != t.data_ptr()


def test_tensor_in_band_protocol5_is_writable_and_separate() -> None:
    arr = np.arange(6, dtype=np.float64)
    u = pickle.loads(pickle.dumps(tvmffi.from_dlpack(arr), protocol=5))
    back = np.from_dlpack(u)
    back[0] = 42.0  # the loaded tensor owns writable memory of its own
    assert arr[0] == 0.0 and np.from_dlpack(u)[0] == 42.0


def test_100mb_tensor_goes_out_of_band_without_a_copy() -> None:
    arr = np.ones(25_000_000, dtype=np.float32)  # 100 MB
    t = tvmffi.from_dlpack(arr)
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(t, protocol=5, buffer_callback=buffers.append)
    assert len(data) < 1024  # the stream holds no element
    assert len(buffers) == 1
    raw = buffers[0].raw()
    assert raw.nbytes == arr.nbytes
    # The buffer is the tensor's own memory, not a copy of it.
    assert np.frombuffer(raw, np.uint8).ctypes.data == arr.ctypes.data
    # A writable buffer handed back becomes the loaded tensor's memory (zero-copy)...
    u = pickle.loads(data, buffers=buffers)
    assert u.data_ptr() == arr.ctypes.data
    # ... a read-only one (bytes, as from another process) is copied once.
    v = pickle.loads(data, buffers=[bytes(raw)])
    assert v.data_ptr() != arr.ctypes.data
    assert np.from_dlpack(v).shape == (25_000_000,) and np.from_dlpack(v)[-1] == 1.0


def test_loaded_tensor_keeps_its_buffer_alive() -> None:
    t = tvmffi.from_dlpack(np.arange(1000, dtype=np.int64))
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(t, protocol=5, buffer_callback=buffers.append)
    u = pickle.loads(data, buffers=[bytearray(buffers[0].raw())])
    del t, buffers
    assert int(np.from_dlpack(u).sum()) == sum(range(1000))


def test_sub_byte_tensor_is_refused() -> None:
    if not hasattr(ml_dtypes, "int4"):
        pytest.skip("ml_dtypes has no int4")
    t = tvmffi.from_dlpack(np.zeros(4, dtype=np.int8))
    with pytest.raises(TypeError, match="not whole bytes"):
        _pickle._itemsize(_FakeDtypeTensor(t, 4))  # type: ignore[arg-type]


class _FakeDtypeTensor:
    """What _itemsize reads of a tensor, with a sub-byte dtype."""

    def __init__(self, t: Any, bits: int) -> None:
        self.dtype = tvmffi.dtype(f"int{bits}")


def test_device_tensor_is_refused_unless_copied_through_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from test_dlpack_lies import make_capsule

    # A tensor that says it lives on cuda:0 (no GPU needed: nothing reads its data here).
    t = tvmffi.from_dlpack(make_capsule(1, [4], device=(2, 0)))
    assert t.device.type == "cuda"
    with pytest.raises(TypeError, match=r"cannot pickle a tensor on cuda:0.*through_host"):
        pickle.dumps(t)
    # Opted in, the pickle holds a host copy and the device (the copy is torch's; here a
    # stand-in, as this test runs without a GPU).
    host = tvmffi.from_dlpack(np.arange(4, dtype=np.float32))
    monkeypatch.setattr(_pickle, "_host_copy", lambda _t: host)
    with tvmffi.pickling.device_tensors_through_host():
        data = pickle.dumps(t)
    with pytest.raises(TypeError, match="only CPU tensors"):
        pickle.dumps(t)  # the opt-in ends with its block
    with tvmffi.pickling.device_tensors_through_host():
        func, args = _pickle._reduce_tensor(t)
    assert func is _pickle._rebuild_device_tensor and args == (host, "cuda", 0)
    torch = pytest.importorskip("torch")

    if torch.cuda.is_available():
        u = pickle.loads(data)
        assert u.device.type == "cuda"
        np.testing.assert_array_equal(torch.from_dlpack(u).cpu().numpy(), np.arange(4))
    else:
        with pytest.raises(RuntimeError, match="back to that device"):
            pickle.loads(data)


# ---- functions -----------------------------------------------------------------
def test_global_function_by_name(unique_name: str) -> None:
    tvmffi.register_global_func(unique_name, lambda x: x * 3)
    f = tvmffi.get_global_func(unique_name)
    data = pickle.dumps(f)
    assert unique_name.encode() in data
    assert pickle.loads(data)(5) == 15
    assert pickle.loads(pickle.dumps(tvmffi.get_global_func("ffi.Shape")))(1, 2) == (1, 2)
    assert copy.deepcopy(f)(2) == 6


def test_missing_global_function_is_a_clear_error(unique_name: str) -> None:
    tvmffi.register_global_func(unique_name, lambda: 1)
    data = pickle.dumps(tvmffi.get_global_func(unique_name))
    tvmffi.get_global_func("ffi.FunctionRemoveGlobal")(unique_name)
    with pytest.raises(ValueError, match=re.escape(unique_name) + ".*no function of that name"):
        pickle.loads(data)


def _triple(x: int) -> int:
    return 3 * x


def test_python_callback_by_its_callable() -> None:
    f = tvmffi.convert(_triple)
    g = pickle.loads(pickle.dumps(f))
    assert isinstance(g, tvmffi.Function) and g(4) == 12
    assert copy.deepcopy(f)(5) == 15
    # A callable pickle cannot send fails with pickle's own error.
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        pickle.dumps(tvmffi.convert(lambda x: x))


@pytest.fixture(scope="module")
def cpp_module(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return tvmffi.cpp.load_inline(
        "test_pickle_cpp",
        cpp_sources="int64_t twice(int64_t x) { return 2 * x; }",
        functions=["twice"],
        build_directory=str(tmp_path_factory.mktemp("cpp")),
    )


n = Var("n")
SCALE = Signature(
    "pickle_scale",
    [
        Tensor("x", [n], "float64"),
        Scalar("alpha", "float64"),
        Tensor("out", [n], "float64", output=True),
    ],
)


@pytest.fixture(scope="module")
def codegen_fn(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return codegen.inline(
        SCALE,
        "for (int64_t i = 0; i < n; ++i) out[i] = alpha * x[i];",
        output_dir=str(tmp_path_factory.mktemp("codegen")),
    )


def test_module_function_and_module(cpp_module: Any) -> None:
    f = cpp_module.twice
    assert pickle.loads(pickle.dumps(f))(21) == 42
    assert pickle.loads(pickle.dumps(cpp_module)).twice(4) == 8
    assert copy.deepcopy(f)(1) == 2


def test_codegen_function_keeps_its_signature(codegen_fn: Any) -> None:
    g = pickle.loads(pickle.dumps(codegen_fn))
    assert codegen.signature_of(g) == SCALE
    x = np.arange(4.0)
    out = np.empty(4)
    g(x, 2.0, out)
    np.testing.assert_array_equal(out, 2 * x)


def test_library_travels_by_bytes_into_the_cache(
    cpp_module: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TVMFFI_CACHE_DIR", str(tmp_path))
    func, (name, data, digest, _origin) = _pickle._reduce_module(cpp_module)
    assert hashlib.sha256(data).hexdigest() == digest
    # As on a machine where the original path does not exist: written to the cache.
    mod = func(name, data, digest, "/nonexistent/" + name)
    path = tmp_path / "pickled" / digest / name
    assert path.read_bytes() == data
    assert mod.twice(5) == 10
    assert func(name, data, digest, None).twice(6) == 12  # the cached copy again


def test_system_lib_by_prefix() -> None:
    mod = pickle.loads(pickle.dumps(tvmffi.system_lib()))
    assert isinstance(mod, tvmffi.Module) and mod.kind == "library"


def test_unpicklable_function_and_module_are_clear_errors(cpp_module: Any) -> None:
    from tvmffi.module import _SOURCES

    # A function made by an FFI call: neither global, nor a module's, nor a callback.
    functor = tvmffi.get_global_func("ffi.FunctionListGlobalNamesFunctor")()
    with pytest.raises(TypeError, match="cannot pickle this Function"):
        pickle.dumps(functor)
    # A module whose source this process does not know.
    saved = _SOURCES.pop(cpp_module.__chandle__())
    try:
        with pytest.raises(TypeError, match="cannot pickle this Module"):
            pickle.dumps(cpp_module)
    finally:
        _SOURCES[cpp_module.__chandle__()] = saved


# ---- objects holding tensors, functions, modules -----------------------------
def test_containers_holding_tensors_and_functions(cpp_module: Any) -> None:
    arr = np.arange(6, dtype=np.float32)
    t = tvmffi.from_dlpack(arr)
    value = tvmffi.Array([t, cpp_module.twice, 3, "s", tvmffi.Map({"k": t})])
    for protocol in PROTOCOLS:
        r = pickle.loads(pickle.dumps(value, protocol=protocol))
        assert isinstance(r, tvmffi.Array) and len(r) == 5
        np.testing.assert_array_equal(np.from_dlpack(r[0]), arr)
        assert r[1](8) == 16 and r[2] == 3 and r[3] == "s"
        np.testing.assert_array_equal(np.from_dlpack(r[4]["k"]), arr)
    d = copy.deepcopy(tvmffi.Dict({"t": t}))
    assert isinstance(d, tvmffi.Dict)
    np.testing.assert_array_equal(np.from_dlpack(d["t"]), arr)
    lst = pickle.loads(pickle.dumps(tvmffi.List([t])))
    assert isinstance(lst, tvmffi.List)


def test_reflected_object_holding_tensors() -> None:
    arr = np.arange(4.0)
    t = tvmffi.from_dlpack(arr)
    obj = create_object("testing.TestDeepCopyEdges", v_any=t, v_obj=tvmffi.Array([t, 1]))
    r = pickle.loads(pickle.dumps(obj, protocol=5))
    assert type(r) is type(obj)
    np.testing.assert_array_equal(np.from_dlpack(r.v_any), arr)
    np.testing.assert_array_equal(np.from_dlpack(r.v_obj[0]), arr)
    # Objects without tensors still travel as the runtime's JSON graph.
    pair = create_object("testing.TestIntPair", a=1, b=2)
    assert b"ffi.FromJSONGraph" not in pickle.dumps(pair)
    assert pickle.loads(pickle.dumps(pair)).a == 1


def test_spawned_process_loads_every_kind(cpp_module: Any, codegen_fn: Any, tmp_path: Any) -> None:
    t = tvmffi.from_dlpack(np.arange(5.0))
    payload = tmp_path / "payload.pkl"
    payload.write_bytes(
        pickle.dumps(
            (
                t,
                cpp_module.twice,
                codegen_fn,
                tvmffi.Array([t]),
                tvmffi.get_global_func("ffi.Shape"),
            ),
            protocol=5,
        )
    )
    code = textwrap.dedent(
        f"""
        import pickle, numpy as np, tvmffi
        from tvmffi import codegen
        with open({str(payload)!r}, "rb") as f:
            t, twice, scale, arr, shape = pickle.load(f)
        out = np.empty(5)
        scale(t, 3.0, out)
        assert codegen.signature_of(scale) is not None
        print(twice(4), out.tolist(), np.from_dlpack(arr[0]).tolist(), shape(2))
        """
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stdout.split("\n")[0] == "8 [0.0, 3.0, 6.0, 9.0, 12.0] [0.0, 1.0, 2.0, 3.0, 4.0] (2,)"
    )


# ---- malformed payloads: clean exceptions only --------------------------------
_ints = st.one_of(
    st.integers(-4, 70),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([2**62, -(2**62), 2**63, -(2**63) - 1, 2**64]),
)
_anything = st.one_of(
    st.none(), _ints, st.text(max_size=8), st.binary(max_size=64), st.floats(), st.tuples(_ints)
)
_CLEAN = (ValueError, TypeError, BufferError, OverflowError, AttributeError, RuntimeError)


@settings(max_examples=400, deadline=None)
@given(
    data=st.one_of(st.binary(max_size=96), st.binary(max_size=96).map(bytearray), _anything),
    dtype=st.one_of(st.tuples(_ints, _ints, _ints), _anything),
    shape=st.one_of(st.lists(_ints, max_size=5).map(tuple), _anything),
    strides=st.one_of(st.lists(_ints, max_size=5).map(tuple), _anything),
    byte_offset=st.one_of(_ints, _anything),
)
def test_fuzz_tensor_payload(
    data: Any, dtype: Any, shape: Any, strides: Any, byte_offset: Any
) -> None:
    try:
        t = _pickle._rebuild_tensor(data, dtype, shape, strides, byte_offset)
    except _CLEAN:
        return
    # Accepted: its elements lie inside the buffer; pickling reads every byte they span.
    assert isinstance(t, tvmffi.Tensor)
    u = pickle.loads(pickle.dumps(t, protocol=4))
    assert u.shape == t.shape and u.strides == t.strides


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(
        ["global", "callback", "module_function", "library", "system", "container", "object"]
    ),
    a=_anything,
    b=_anything,
    c=_anything,
)
def test_fuzz_other_payloads(kind: str, a: Any, b: Any, c: Any) -> None:
    calls = {
        "global": lambda: _pickle._rebuild_global(a),
        "callback": lambda: _pickle._rebuild_callback(a),
        "module_function": lambda: _pickle._rebuild_module_function(a, b, c),
        "library": lambda: _pickle._rebuild_library(a, b, c),
        "system": lambda: _pickle._rebuild_system_lib(a),
        "container": lambda: _pickle._rebuild_container(
            a if not isinstance(b, str) else "ffi.Map", (a, b, c)
        ),
        "object": lambda: _pickle._rebuild_object(
            "testing.TestDeepCopyEdges" if isinstance(c, bytes) else a,
            (("v_any", a), ("v_obj", b)) if c is not None else a,
        ),
    }
    with contextlib.suppress(_CLEAN):
        calls[kind]()


def test_fuzz_library_bytes_with_a_right_digest(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TVMFFI_CACHE_DIR", str(tmp_path))
    for data in (b"", b"\x7fELF" + b"\0" * 60, os.urandom(256)):
        digest = hashlib.sha256(data).hexdigest()
        with pytest.raises(ValueError):
            _pickle._rebuild_library("libx.so", data, digest)
    with pytest.raises(ValueError, match="do not match"):
        _pickle._rebuild_library("libx.so", b"abc", "0" * 64)
    with pytest.raises(ValueError, match="file name"):
        _pickle._rebuild_library("../evil.so", b"abc", hashlib.sha256(b"abc").hexdigest())


def test_fuzz_mutated_pickle_streams_never_crash(cpp_module: Any, tmp_path: Any) -> None:
    """Byte mutations of a real pickle of each kind, loaded in a child process:
    every load ends in a value or an exception, never a crash."""
    t = tvmffi.from_dlpack(np.arange(6, dtype=np.float32).reshape(2, 3)[:, ::2])
    streams = {
        "tensor": pickle.dumps(t, protocol=5),
        "tensor4": pickle.dumps(t, protocol=4),
        "global": pickle.dumps(tvmffi.get_global_func("ffi.Shape")),
        "callback": pickle.dumps(tvmffi.convert(_triple)),
        "module_function": pickle.dumps(cpp_module.twice),
        "system": pickle.dumps(tvmffi.system_lib()),
        "object": pickle.dumps(create_object("testing.TestDeepCopyEdges", v_any=t, v_obj=t)),
        "container": pickle.dumps(tvmffi.Map({"a": t, "b": tvmffi.Array([t])})),
    }
    (tmp_path / "streams.pkl").write_bytes(pickle.dumps(streams))
    code = textwrap.dedent(
        f"""
        import os, pickle, random, resource, sys
        # CPython's unpickler allocates what a mutated length or memo index asks for
        # (gigabytes): capped, that is a MemoryError, not the OOM killer (ASan needs
        # its shadow memory: no cap under it).
        if "asan" not in os.environ.get("LD_PRELOAD", ""):
            resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import tvmffi, test_pickle
        with open({str(tmp_path / "streams.pkl")!r}, "rb") as f:
            streams = pickle.load(f)
        rng = random.Random(1234)
        outcomes = {{}}
        for kind, data in streams.items():
            for _ in range(150):
                b = bytearray(data)
                for _ in range(rng.randint(1, 4)):
                    i = rng.randrange(len(b))
                    flip = b[i] ^ (1 << rng.randrange(8))
                    b[i] = rng.randrange(256) if rng.random() < 0.7 else flip
                try:
                    pickle.loads(bytes(b))
                    outcomes["ok"] = outcomes.get("ok", 0) + 1
                except (Exception, RecursionError) as err:
                    outcomes[type(err).__name__] = outcomes.get(type(err).__name__, 0) + 1
        print(sum(outcomes.values()), sorted(outcomes))
        """
    )
    proc = run_python(code, timeout=300, env_extra={"TVMFFI_CACHE_DIR": os.devnull + "-no"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith(str(150 * len(streams)))


def test_py_class_object_holding_a_tensor() -> None:
    from tvmffi.dataclasses import py_class

    @py_class("test_pickle.Holder")
    class Holder(tvmffi.Object):
        name: str
        data: Any
        count: int = 3

    arr = np.arange(3.0)
    h = Holder("a", tvmffi.from_dlpack(arr))
    for r in (pickle.loads(pickle.dumps(h, protocol=5)), copy.deepcopy(h)):
        assert type(r) is Holder and r.name == "a" and r.count == 3
        np.testing.assert_array_equal(np.from_dlpack(r.data), arr)
        assert r.data.data_ptr() != h.data.data_ptr()


def test_deepcopy_of_a_non_copyable_type_still_raises() -> None:
    # Only tensors, functions and modules are copied the pickle way; a type the runtime
    # cannot copy raises as officially.
    from tvmffi.testing.testing import TestNonCopyable

    obj = TestNonCopyable(1)
    with pytest.raises(RuntimeError, match="not copy-constructible"):
        copy.deepcopy(tvmffi.Array([obj]))


def test_object_of_a_generated_class_pickles_by_its_graph() -> None:
    # No Python class is registered for this type: its class is generated, so it cannot
    # be named in a pickle; the JSON graph names the type instead.
    obj = create_object("testing.TestDeepCopyEdges", v_any=5, v_obj=tvmffi.Array([1, 2]))
    assert getattr(type(obj), "__tvm_ffi_synthetic__", False)
    r = pickle.loads(pickle.dumps(obj))
    assert r.type_key == "testing.TestDeepCopyEdges" and r.v_any == 5 and list(r.v_obj) == [1, 2]


def test_objects_holding_tensors_travel_the_same_with_tvm_loaded(tmp_path: Any) -> None:
    """Apache TVM registers a JSON serializer for tensors: an object holding one must
    still travel by its fields (so a process without TVM reads it, strided tensors too)."""
    if importlib.util.find_spec("tvm") is None:
        pytest.skip("needs apache-tvm")
    path = tmp_path / "with_tvm.pkl"
    send = textwrap.dedent(
        f"""
        import pickle, numpy as np, tvm, tvmffi
        from tvmffi.testing.testing import create_object
        t = tvmffi.from_dlpack(np.arange(12.0).reshape(3, 4)[:, ::2])
        obj = create_object("testing.TestDeepCopyEdges", v_any=t, v_obj=tvmffi.Array([t]))
        with open({str(path)!r}, "wb") as f:
            pickle.dump((obj, tvmffi.Map({{"t": t}})), f, protocol=5)
        """
    )
    proc = run_python(send)
    assert proc.returncode == 0, proc.stderr[-3000:]
    receive = textwrap.dedent(
        f"""
        import pickle, sys, numpy as np, tvmffi
        with open({str(path)!r}, "rb") as f:
            obj, m = pickle.load(f)
        assert "tvm" not in sys.modules
        print(np.from_dlpack(obj.v_any).tolist(), np.from_dlpack(m["t"]).tolist())
        """
    )
    proc = run_python(receive)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = "[[0.0, 2.0], [4.0, 6.0], [8.0, 10.0]]"
    assert proc.stdout.strip() == f"{rows} {rows}"
