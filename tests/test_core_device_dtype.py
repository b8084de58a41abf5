"""Device and DataType value types."""

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
    assert d.dlpack_device_type == 2
    assert isinstance(d.index, int)
    assert isinstance(d.dlpack_device_type, int)


@pytest.mark.parametrize(("name", "code"), sorted(DLPACK_CODES.items()))
def test_device_names_and_codes(name, code):
    d = tvmffi.Device(name, 3)
    assert d.type == name
    assert d.dlpack_device_type == code
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
    assert d0.type == name and d0.index == 0 and d0.dlpack_device_type == code
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


def test_device_repr_round_trips_information():
    r = repr(tvmffi.cuda(1))
    assert "cuda:1" in r


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
    with pytest.raises(ValueError):
        tvmffi.Device("cuda:1", 2)  # index given twice


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


# ---- DataType --------------------------------------------------------------------

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
    dt = tvmffi.DataType(text)
    assert (dt.code, dt.bits, dt.lanes) == (code, bits, lanes)
    assert dt.itemsize == itemsize
    assert str(dt) == text
    assert tvmffi.DataType(str(dt)) == dt
    assert tvmffi.DataType(dt) == dt


def test_dtype_equality_and_hash():
    a = tvmffi.DataType("float32")
    b = tvmffi.DataType("float32")
    assert a == b
    assert hash(a) == hash(b)
    assert a != tvmffi.DataType("float64")
    assert a != tvmffi.DataType("float32x4")
    assert a != tvmffi.DataType("int32")
    table = {a: 1, tvmffi.DataType("int8"): 2}
    assert table[tvmffi.DataType("float32")] == 1
    assert table[tvmffi.DataType("int8")] == 2


def test_dtype_compares_with_its_string():
    assert tvmffi.DataType("float32") == "float32"
    assert tvmffi.DataType("float32") != "float16"
    assert tvmffi.DataType("float32") != "not a dtype"


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
    dt = tvmffi.DataType(np_value)
    assert dt == tvmffi.DataType(text)
    assert str(dt) == text


def test_dtype_itemsize_matches_numpy():
    for name in ["int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64"]:
        assert tvmffi.DataType(name).itemsize == np.dtype(name).itemsize


@pytest.mark.parametrize("bad", ["floatx", "notatype", "float32x", "int8xz", "float33abc"])
def test_dtype_bad_string_raises_value_error(bad):
    with pytest.raises(ValueError) as info:
        tvmffi.DataType(bad)
    assert bad in str(info.value)


def test_dtype_bad_object_raises_type_error():
    with pytest.raises(TypeError):
        tvmffi.DataType(object())
    with pytest.raises(TypeError):
        tvmffi.DataType(3.5)


def test_dtype_copy_and_pickle():
    dt = tvmffi.DataType("float32x4")
    assert copy.copy(dt) == dt
    assert pickle.loads(pickle.dumps(dt)) == dt


def test_dtype_is_immutable():
    dt = tvmffi.DataType("int8")
    with pytest.raises(AttributeError):
        dt.bits = 16
    assert dt.bits == 8


def test_dtype_repr():
    assert "float32" in repr(tvmffi.DataType("float32"))
