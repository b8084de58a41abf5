"""Device and dtype value types (the official binding's names: device(), Device, dtype)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import tvmffi

# ---- Device ----------------------------------------------------------------------

DLPACK_CODES = {
    "cpu": 1,
    "cuda": 2,
    "cuda_host": 3,
    "opencl": 4,
    "vulkan": 7,
    "metal": 8,
    "rocm": 10,
}


def test_device_spellings_are_equal():
    a = tvmffi.Device("cuda:1")
    b = tvmffi.Device("cuda", 1)
    c = tvmffi.Device(2, 1)
    assert a == b == c
    assert hash(a) == hash(b) == hash(c)
    assert str(a) == str(b) == str(c) == "cuda:1"


def test_device_attributes():
    d = tvmffi.Device("cuda:1")
    assert d.type == "cuda"
    assert d.index == 1
    assert d.dlpack_device_type() == 2
    assert isinstance(d.index, int)
    assert isinstance(d.dlpack_device_type(), int)


@pytest.mark.parametrize(("name", "code"), sorted(DLPACK_CODES.items()))
def test_device_names_and_codes(name, code):
    d = tvmffi.Device(name, 3)
    assert d.type == name
    assert d.dlpack_device_type() == code
    assert d == tvmffi.Device(code, 3)
    assert str(d) == f"{name}:3"
    assert tvmffi.Device(str(d)) == d


def test_device_default_index_is_zero():
    assert tvmffi.Device("cpu").index == 0
    assert tvmffi.Device("cuda") == tvmffi.Device("cuda:0")


@pytest.mark.parametrize(
    ("helper", "name", "code"),
    [
        (tvmffi.cpu, "cpu", 1),
        (tvmffi.cuda, "cuda", 2),
        (tvmffi.opencl, "opencl", 4),
        (tvmffi.vulkan, "vulkan", 7),
        (tvmffi.metal, "metal", 8),
        (tvmffi.rocm, "rocm", 10),
    ],
)
def test_device_helpers(helper, name, code):
    d0 = helper()
    assert d0.type == name and d0.index == 0 and d0.dlpack_device_type() == code
    d2 = helper(2)
    assert d2 == tvmffi.Device(name, 2)
    assert str(d2) == f"{name}:2"


def test_device_equality_and_hashing():
    assert tvmffi.cuda(0) != tvmffi.cuda(1)
    assert tvmffi.cuda(0) != tvmffi.cpu(0)
    assert tvmffi.cuda(1) != "cuda:1"  # no implicit str comparison
    table = {tvmffi.cuda(1): "a", tvmffi.cpu(0): "b"}
    assert table[tvmffi.Device("cuda:1")] == "a"
    assert table[tvmffi.Device(1, 0)] == "b"
    assert len({tvmffi.cuda(1), tvmffi.Device(2, 1), tvmffi.Device("cuda:1")}) == 1


def test_device_repr_is_official():
    assert repr(tvmffi.cuda(1)) == "device(type='cuda', index=1)"
    assert repr(tvmffi.device("ext_dev:0")) == "device(type='ext_dev', index=0)"


def test_device_copy_and_pickle():
    d = tvmffi.rocm(4)
    assert copy.copy(d) == d
    assert copy.deepcopy(d) == d
    assert pickle.loads(pickle.dumps(d)) == d


def test_device_from_device():
    d = tvmffi.cuda(5)
    assert tvmffi.Device(d) == d


@pytest.mark.parametrize("bad", ["nope", "CUDA", "cuda1", "", "gpu:0"])
def test_device_unknown_name_raises_value_error(bad):
    with pytest.raises(ValueError):
        tvmffi.Device(bad)


@pytest.mark.parametrize("bad", ["cuda:", "cuda:x", "cuda:-1", "cuda:1:2"])
def test_device_bad_index_in_string_raises_value_error(bad):
    with pytest.raises(ValueError):
        tvmffi.Device(bad)


def test_device_unknown_code_raises_value_error():
    with pytest.raises(ValueError):
        tvmffi.Device(99, 0)
    with pytest.raises(ValueError):
        tvmffi.Device(0, 0)


def test_device_bad_index_raises():
    with pytest.raises(ValueError):
        tvmffi.Device("cuda", -1)
    with pytest.raises(TypeError):
        tvmffi.Device("cuda", "1")
    # As in the official binding, an index in the string wins over `index`.
    assert tvmffi.Device("cuda:1", 2) == tvmffi.cuda(1)


def test_device_bad_type_raises_type_error():
    with pytest.raises(TypeError):
        tvmffi.Device(1.5)
    with pytest.raises(TypeError):
        tvmffi.Device(None)


def test_device_is_immutable():
    d = tvmffi.cuda(1)
    with pytest.raises(AttributeError):
        d.index = 2
    assert d.index == 1


# ---- dtype --------------------------------------------------------------------

# (string, code, bits, lanes, itemsize)
DTYPES = [
    ("float32", 2, 32, 1, 4),
    ("float64", 2, 64, 1, 8),
    ("float16", 2, 16, 1, 2),
    ("int8", 0, 8, 1, 1),
    ("int32", 0, 32, 1, 4),
    ("int64", 0, 64, 1, 8),
    ("uint1", 1, 1, 1, 1),
    ("uint8", 1, 8, 1, 1),
    ("bool", 6, 8, 1, 1),
    ("bfloat16", 4, 16, 1, 2),
    ("float8_e4m3fn", 10, 8, 1, 1),
    ("float32x4", 2, 32, 4, 16),
    ("int8x16", 0, 8, 16, 16),
    ("handle", 3, 64, 1, 8),
]


@pytest.mark.parametrize(("text", "code", "bits", "lanes", "itemsize"), DTYPES)
def test_dtype_parse(text, code, bits, lanes, itemsize):
    dt = tvmffi.dtype(text)
    assert (dt.type_code, dt.bits, dt.lanes) == (code, bits, lanes)
    assert dt.itemsize == itemsize
    assert str(dt) == text
    assert tvmffi.dtype(str(dt)) == dt
    assert tvmffi.dtype(dt) == dt


def test_dtype_equality_and_hash():
    a = tvmffi.dtype("float32")
    b = tvmffi.dtype("float32")
    assert a == b
    assert hash(a) == hash(b)
    assert a != tvmffi.dtype("float64")
    assert a != tvmffi.dtype("float32x4")
    assert a != tvmffi.dtype("int32")
    table = {a: 1, tvmffi.dtype("int8"): 2}
    assert table[tvmffi.dtype("float32")] == 1
    assert table[tvmffi.dtype("int8")] == 2


def test_dtype_compares_with_its_string():
    assert tvmffi.dtype("float32") == "float32"
    assert tvmffi.dtype("float32") != "float16"
    assert tvmffi.dtype("float32") != "not a dtype"


@pytest.mark.parametrize(
    ("np_value", "text"),
    [
        (np.float32, "float32"),
        (np.float64, "float64"),
        (np.int16, "int16"),
        (np.uint8, "uint8"),
        (np.bool_, "bool"),
        (np.dtype("int16"), "int16"),
        (np.dtype("float16"), "float16"),
        (np.dtype("uint64"), "uint64"),
        (np.dtype(bool), "bool"),
    ],
    ids=str,
)
def test_dtype_from_numpy(np_value, text):
    dt = tvmffi.dtype(np_value)
    assert dt == tvmffi.dtype(text)
    assert str(dt) == text


def test_dtype_itemsize_matches_numpy():
    for name in ["int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64"]:
        assert tvmffi.dtype(name).itemsize == np.dtype(name).itemsize


@pytest.mark.parametrize("bad", ["floatx", "notatype", "float32x", "int8xz", "float33abc"])
def test_dtype_bad_string_raises_value_error(bad):
    with pytest.raises(ValueError) as info:
        tvmffi.dtype(bad)
    assert bad in str(info.value)


def test_dtype_bad_object_raises_value_error():
    # As in the official binding, other objects are read by their str().
    with pytest.raises(ValueError):
        tvmffi.dtype(object())
    with pytest.raises(ValueError):
        tvmffi.dtype(3.5)


def test_dtype_copy_and_pickle():
    dt = tvmffi.dtype("float32x4")
    assert copy.copy(dt) == dt
    assert pickle.loads(pickle.dumps(dt)) == dt


def test_dtype_is_immutable():
    dt = tvmffi.dtype("int8")
    with pytest.raises(AttributeError):
        dt.bits = 16
    assert dt.bits == 8


def test_dtype_repr():
    assert repr(tvmffi.dtype("float32")) == "dtype('float32')"


# ---- official surface: device(), DLDeviceType, dtype as a str ------------------------

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def test_device_function_and_dl_device_type():
    d = tvmffi.device("cuda", 3)
    assert isinstance(d, tvmffi.Device)
    assert d.dlpack_device_type() == tvmffi.DLDeviceType.kDLCUDA
    assert d.__device_type_name__() == "cuda"
    assert tvmffi.device(tvmffi.DLDeviceType.kDLMetal, 2) == tvmffi.metal(2)
    assert tvmffi.device("cpu", np.int32(1)).index == 1
    assert tvmffi.DLDeviceType.kDLMAIA == 17 and tvmffi.DLDeviceType.kDLTrn == 18


def test_device_official_aliases_and_annotations():
    assert tvmffi.device("mps") == tvmffi.metal(0)
    assert tvmffi.device("wgpu:1") == tvmffi.device("webgpu", 1)
    # Text after the first space is an annotation, as in the official binding.
    assert tvmffi.device("cuda:2 (note)") == tvmffi.cuda(2)


@pytest.mark.parametrize("alias", ["llvm", "c", "test", "nvptx", "cl"])
def test_device_unknown_name_message(alias):
    with pytest.raises(ValueError, match=rf"^Unknown device: {alias}$"):
        tvmffi.device(alias)


@pytest.mark.parametrize("bad", ["cuda:1\x00junk", "cuda: 1", "cuda:+1", "cuda:1 ", "cuda:\u0661"])
def test_device_rejects_junk_around_the_index(bad):
    # Regression (issue 12 item 9): strtol stopped at the NUL or skipped the space.
    if bad == "cuda:1 ":  # a trailing space starts an (empty) annotation
        assert tvmffi.device(bad) == tvmffi.cuda(1)
        return
    with pytest.raises(ValueError):
        tvmffi.device(bad)


class MyDevice(tvmffi.Device):
    pass


def test_device_subclass_keeps_its_class():
    d = MyDevice("cuda", 1)
    assert isinstance(d, MyDevice) and d == tvmffi.cuda(1)
    assert type(pickle.loads(pickle.dumps(d))) is MyDevice


_NAMES = ["cpu", "cuda", "opencl", "vulkan", "metal", "rocm", "ext_dev", "hexagon", "mps"]


@given(st.text(alphabet=st.sampled_from([*"cpuda:0123456789 x-+\x00é_"]), max_size=12))
def test_device_parse_never_crashes_and_is_exact(text):
    """Every string is either a ValueError or exactly `name[:digits][ annotation]`."""
    head = text.split(" ")[0]
    name, _, index = head.partition(":")
    try:
        d = tvmffi.device(text)
    except ValueError:
        ok = name in _NAMES and (":" not in head or (index.isdecimal() and index.isascii()))
        assert not ok or int(index) > 2**31 - 1
        return
    assert d.type == ("metal" if name == "mps" else name)
    assert d.index == (int(index) if ":" in head else 0)


def test_dtype_is_a_str_keeping_its_text():
    f = tvmffi.dtype("f32")
    assert isinstance(f, str) and type(f) is tvmffi.dtype
    assert str(f) == "f32" and f == "f32" and hash(f) == hash("f32")
    assert (f.type_code, f.bits, f.lanes) == (2, 32, 1)
    # Equality is the str's, as in the official binding.
    assert f != tvmffi.dtype("float32")
    assert np.zeros(2, dtype=tvmffi.float32).dtype == np.float32
    assert tvmffi.DataType is tvmffi.dtype  # tvmffi's earlier name


def test_dtype_literals():
    assert tvmffi.float32 == "float32" and isinstance(tvmffi.float32, tvmffi.dtype)
    assert tvmffi.bool.type_code == 6
    assert tvmffi.float4_e2m1fn_x2 is tvmffi.float4_e2m1fnx2
    assert (tvmffi.float4_e2m1fnx2.bits, tvmffi.float4_e2m1fnx2.lanes) == (4, 2)


def test_dtype_from_dlpack_data_type_and_with_lanes():
    d = tvmffi.dtype.from_dlpack_data_type((2, 16, 1))
    assert d == "float16" and type(d) is tvmffi.dtype
    v = tvmffi.float32.with_lanes(4)
    assert v == "float32x4" and v.lanes == 4 and v.itemsize == 16
    assert tvmffi.bool.with_lanes(4) == "boolx4"
    with pytest.raises(ValueError):
        tvmffi.dtype.from_dlpack_data_type((256, 8, 1))
    with pytest.raises(ValueError):
        tvmffi.float32.with_lanes(1 << 16)
    with pytest.raises(TypeError):
        tvmffi.dtype.from_dlpack_data_type((1, 2))


@pytest.mark.parametrize(
    ("text", "flags"),
    [
        ("bool", (True, False, False, False)),
        ("int32", (False, True, False, False)),
        ("uint8", (False, True, False, False)),
        ("bfloat16", (False, False, True, False)),
        ("float4_e2m1fn", (False, False, True, False)),
        ("handle", (False, False, False, True)),
    ],
)
def test_dtype_kind_predicates(text, flags):
    d = tvmffi.dtype(text)
    assert (d.is_bool, d.is_integer, d.is_float, d.is_handle) == flags


def test_dtype_is_dtype():
    assert tvmffi.dtype.is_dtype("float32") and tvmffi.dtype.is_dtype(tvmffi.int8)
    assert not tvmffi.dtype.is_dtype("not_a_dtype")


def test_dtype_scalable_vector_lanes():
    # Regression (issue 12 item 9): lanes read as uint16 reported 65532.
    d = tvmffi.dtype("int32xvscalex4")
    assert d.lanes == -4 and d.bits == 32
    with pytest.raises(ValueError, match="scalable"):
        _ = d.itemsize
    assert tvmffi.testing.echo(d) == "int32xvscalex4"


@pytest.mark.parametrize("bad", ["complex64\x00junk", "float32\x00", "complex64x", "complex0"])
def test_dtype_rejects_junk(bad):
    # Regression (issue 12 item 9): the complex parser stopped at the NUL.
    with pytest.raises(ValueError):
        tvmffi.dtype(bad)


def test_dtype_complex_is_a_tvmffi_extra():
    c = tvmffi.dtype("complex64x2")
    assert (c.type_code, c.bits, c.lanes) == (5, 64, 2)
    assert tvmffi.testing.echo(c) == "complex64x2"


@given(st.text(max_size=16))
def test_dtype_parse_never_crashes(text):
    try:
        d = tvmffi.dtype(text)
    except ValueError:
        return
    assert str(d) == text
    # The runtime prints what it parsed, and that parses back to the same value.
    canon = tvmffi.testing.echo(d)
    assert (canon.type_code, canon.bits, canon.lanes) == (d.type_code, d.bits, d.lanes)


def test_dtype_results_are_shared_canonical_instances():
    a = tvmffi.testing.echo(tvmffi.dtype("f32"))
    b = tvmffi.testing.echo(tvmffi.dtype("float32"))
    assert type(a) is tvmffi.dtype and str(a) == "float32"
    assert a is b  # one immutable instance per value


def test_numpy_and_torch_dtypes_as_arguments():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    torch = pytest.importorskip("torch")

    echo = tvmffi.testing.echo
    assert echo(np.dtype("float16")) == "float16"
    assert echo(np.dtype(ml_dtypes.bfloat16)).type_code == 4
    assert echo(torch.int64) == "int64" and echo(torch.bool) == "bool"
    assert tvmffi.dtype(torch.float8_e4m3fn) == "float8_e4m3fn"
    with pytest.raises(TypeError):
        echo(torch.qint8)


def test_official_dtype_passes_as_a_dtype():
    # The official dtype is a str subclass too: it must not pass as a plain str.
    import tvm_ffi

    echo = tvmffi.testing.echo
    for official in (tvm_ffi.float32, tvm_ffi.dtype("f16"), tvm_ffi.float32.with_lanes(4)):
        out = echo(official)
        assert type(out) is tvmffi.dtype
        assert (out.type_code, out.bits, out.lanes) == (
            official.type_code,
            official.bits,
            official.lanes,
        )
    assert tvmffi.dtype(tvm_ffi.dtype("f16")) == "f16"


def test_star_import_does_not_shadow_builtins():
    # Like the official __all__, ours leaves the dtype literals out (`bool` above all).
    ns: dict[str, object] = {}
    exec("from tvmffi import *", ns)
    assert "bool" not in ns and "float32" not in ns
    assert ns["dtype"] is tvmffi.dtype and ns["device"] is tvmffi.device


@pytest.mark.parametrize("code", [-(2**32) + 1, 2**32 + 1, 2**70, -(2**70), True])
def test_device_code_out_of_range_never_wraps(code):
    # A long outside int must not wrap onto a known code (-(2**32) + 1 is 1 as an int).
    with pytest.raises((ValueError, TypeError)):
        tvmffi.device(code, 0)
    with pytest.raises(ValueError):
        tvmffi.device("cpu", abs(code) if not isinstance(code, bool) else 2**40)


def test_convert_keeps_dtypes():
    import tvm_ffi

    assert tvmffi.convert(tvmffi.bool) is tvmffi.bool  # not a String
    out = tvmffi.convert(tvm_ffi.float32)  # the official binding's dtype becomes ours
    assert type(out) is tvmffi.dtype and out == "float32"
    assert type(tvmffi.convert("float32")) is not tvmffi.dtype  # a plain str stays a string


def test_core_module_names():
    # tvm_ffi.core's device/tensor/stream names (used by packages built on the official binding).
    import tvmffi.core as core

    assert core.DLDeviceType is tvmffi.DLDeviceType and core.Device is tvmffi.Device
    assert core.Tensor is tvmffi.Tensor and core.from_dlpack is tvmffi.from_dlpack
    with tvmffi.use_raw_stream(tvmffi.cuda(0), 7):
        assert core._env_get_current_stream(2, 0) == 7
    assert core._env_get_current_stream(2, 0) == 0
