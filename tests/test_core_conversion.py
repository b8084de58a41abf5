"""Value conversion, both directions, as round trips through ``testing.echo``.

Every row of the "Value conversion" table in DESIGN.md (except tensors, which
have their own tests) goes Python -> FFI -> Python here. Where the table names
an FFI form (small string vs String object, Int vs BigInt, ...), a second check
inspects the FFI side through typed runtime functions.
"""

from __future__ import annotations

import ctypes
import enum
import math
import struct

import numpy as np
import pytest
from conftest import array_items, map_get, map_size

import tvmffi
import tvmffi.testing as testing


def returned_type(value: str | bytes) -> type:
    """The type a str/bytes comes back as: plain when small (inline, <= 7 bytes), else
    the official binding's String / Bytes (str / bytes subclasses keeping the FFI object)."""
    if isinstance(value, str):
        return str if len(value.encode()) <= 7 else tvmffi.core.String
    return bytes if len(value) <= 7 else tvmffi.core.Bytes


echo = testing.echo

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def roundtrip(value):
    return echo(value)


# ---- None / bool ---------------------------------------------------------------


def test_none():
    assert roundtrip(None) is None


@pytest.mark.parametrize("value", [True, False])
def test_bool(value):
    out = roundtrip(value)
    assert type(out) is bool
    assert out is value


def test_bool_is_not_int_on_ffi_side():
    # A bool must travel as Bool, not Int: a function typed `bool` accepts it
    # and a function typed `int` sees a bool-typed value.
    assert testing.schema_id_bool(True) is True
    assert testing.schema_id_bool(False) is False


# ---- int -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", [0, 1, -1, 42, -42, 2**31, -(2**31) - 1, 2**32, INT64_MIN, INT64_MAX]
)
def test_int_in_int64_range(value):
    out = roundtrip(value)
    assert type(out) is int
    assert out == value


def test_int64_range_travels_as_ffi_int():
    # A typed int64 parameter accepts the int64 extremes.
    assert testing.schema_id_int(INT64_MAX) == INT64_MAX
    assert testing.schema_id_int(INT64_MIN) == INT64_MIN
    assert testing.add_one(41) == 42


@pytest.mark.parametrize(
    "value",
    [
        2**63,
        -(2**63) - 1,
        2**64,
        -(2**64),
        2**64 - 1,
        2**127,
        2**200,
        -(2**200),
        2**200 + 12345,
        -(2**1000) + 1,
        (1 << 64) | 1,
        -((1 << 64) | 1),
    ],
)
def test_int_beyond_int64_roundtrips_as_bigint(value):
    out = roundtrip(value)
    assert type(out) is int
    assert out == value


@pytest.mark.parametrize("bits", [1023, 1024, 1025, 5000, 70000])
def test_bigint_past_the_stack_buffer_roundtrips(bits):
    # Ints of more than 1024 bits take a heap buffer on the way in.
    for value in (1 << bits, -(1 << bits), (1 << bits) - 1, -(1 << bits) + 7):
        assert roundtrip(value) == value


def test_bigint_is_not_an_ffi_int():
    # Beyond int64 the value must not be squeezed into an Int (no silent wrap):
    # a function typed int64 refuses it.
    with pytest.raises((TypeError, OverflowError)):
        testing.schema_id_int(2**63)


# ---- float ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", [0.0, 1.5, -2.25, 1e300, -1e-300, 5e-324, float("inf"), float("-inf")]
)
def test_float(value):
    out = roundtrip(value)
    assert type(out) is float
    assert out == value


def test_float_negative_zero_keeps_sign():
    out = roundtrip(-0.0)
    assert type(out) is float
    assert out == 0.0
    assert math.copysign(1.0, out) == -1.0


def test_float_nan():
    out = roundtrip(float("nan"))
    assert type(out) is float
    assert math.isnan(out)


def test_float_bits_exact():
    value = struct.unpack("<d", struct.pack("<Q", 0x7FEFFFFFFFFFFFFF))[0]  # max double
    out = roundtrip(value)
    assert struct.pack("<d", out) == struct.pack("<d", value)


def test_float_is_not_int_on_ffi_side():
    assert type(testing.schema_id_float(1.0)) is float
    out = roundtrip(2.0)
    assert type(out) is float  # not collapsed to int 2


# ---- str -----------------------------------------------------------------------

STRINGS = [
    "",
    "a",
    "abc",
    "abcdefg",  # 7 bytes: the largest small string
    "abcdefgh",  # 8 bytes: the smallest heap string
    "x" * 1000,
    "a\0b",  # NUL inside a small string
    "\0",
    "\0" * 7,
    "\0" * 8,
    "abc\0defghij\0",  # NUL inside a heap string
    "é",  # 2 bytes
    "ü" * 3,  # 6 bytes
    "日本",  # 6 bytes
    "日本語",  # 9 bytes: CJK crossing the 7-byte boundary
    "a日本",  # 7 bytes exactly
    "ab日本",  # 8 bytes
    "😀",  # 4 bytes
    "😀😀",  # 8 bytes: emoji crossing the boundary
    "abc😀",  # 7 bytes exactly
    "😀" * 300,
    "mixed ASCII, 中文, emoji 🎉 and NUL \0 end",
]


@pytest.mark.parametrize("value", STRINGS, ids=lambda s: f"{len(s.encode())}B")
def test_str(value):
    out = roundtrip(value)
    assert type(out) is returned_type(value)
    assert out == value


@pytest.mark.parametrize("value", STRINGS, ids=lambda s: f"{len(s.encode())}B")
def test_str_through_typed_string_param(value):
    # The FFI side sees a real String (small or heap form), not bytes.
    out = testing.schema_id_string(value)
    assert type(out) is returned_type(value)
    assert out == value


def test_str_received_in_callback_is_str():
    seen = []

    def cb(s):
        seen.append(s)
        return s

    for value in STRINGS:
        assert testing.apply(cb, value) == value
    assert seen == STRINGS
    assert all(type(s) is returned_type(s) for s in seen)


# ---- bytes / bytearray ---------------------------------------------------------

BYTES = [
    b"",
    b"a",
    b"abcdefg",  # 7: small
    b"abcdefgh",  # 8: heap
    b"\0",
    b"\0" * 7,
    b"\0" * 8,
    b"a\0b\0c\0d\0e",
    bytes(range(256)),
    b"\xff\xfe\x80",  # not valid UTF-8
    b"y" * 1000,
]


@pytest.mark.parametrize("value", BYTES, ids=lambda b: f"{len(b)}B")
def test_bytes(value):
    out = roundtrip(value)
    assert type(out) is returned_type(value)
    assert out == value


def test_bytes_result_keeps_its_object_and_hashes_as_bytes():
    # A heap Bytes result is built in C (bytes.__new__, not the class's
    # __new__): same content, same hash as the plain bytes, its FFI object kept.
    value = b"z" * 100
    out = testing.echo(value)
    assert out == value and hash(out) == hash(value) and {out: 1}[value] == 1
    cached = out._tvm_ffi_cached_object
    assert isinstance(cached, tvmffi.Object)
    assert testing.echo(out) == value  # passed back by its object


@pytest.mark.parametrize("value", BYTES, ids=lambda b: f"{len(b)}B")
def test_bytearray_comes_back_as_bytes(value):
    out = roundtrip(bytearray(value))
    assert type(out) is returned_type(value)
    assert out == value


@pytest.mark.parametrize("value", [b"abc", b"abcdefghij"], ids=["small", "heap"])
def test_bytes_is_not_str_on_ffi_side(value):
    assert testing.schema_id_bytes(value) == value
    with pytest.raises(TypeError):
        testing.schema_id_string(value)


# ---- Device / dtype ---------------------------------------------------------


@pytest.mark.parametrize(
    "device",
    [
        tvmffi.cpu(),
        tvmffi.cpu(3),
        tvmffi.cuda(1),
        tvmffi.Device("rocm", 7),
        tvmffi.Device(2, 2**31 - 1),
    ],
    ids=str,
)
def test_device(device):
    out = roundtrip(device)
    assert type(out) is tvmffi.Device
    assert out == device
    assert out.type == device.type
    assert out.index == device.index
    assert testing.schema_id_device(device) == device


@pytest.mark.parametrize(
    "dtype", ["float32", "int8", "uint1", "bool", "bfloat16", "float32x4", "handle", "int64x2"]
)
def test_dtype(dtype):
    dt = tvmffi.dtype(dtype)
    out = roundtrip(dt)
    assert type(out) is tvmffi.dtype
    assert out == dt
    assert (out.type_code, out.bits, out.lanes) == (dt.type_code, dt.bits, dt.lanes)
    assert testing.schema_id_dtype(dt) == dt


# ---- Function / callable -------------------------------------------------------


def test_function_roundtrip_is_same_object():
    fn = tvmffi.get_global_func("testing.add_one")
    out = roundtrip(fn)
    assert type(out) is tvmffi.Function
    assert out.same_as(fn)
    assert out(1) == 2


def test_python_callable_comes_back_as_function():
    def py(a, b):
        return a * 10 + b

    out = roundtrip(py)
    assert isinstance(out, tvmffi.Function)
    assert callable(out)
    assert out(4, 2) == py(4, 2) == 42
    assert out(-1, 5) == py(-1, 5)


def test_lambda_and_bound_method_and_callable_instance():
    class Acc:
        def __init__(self):
            self.total = 0

        def add(self, x):
            self.total += x
            return self.total

        def __call__(self, x):
            return x * 3

    acc = Acc()
    add = roundtrip(acc.add)
    assert isinstance(add, tvmffi.Function)
    assert add(2) == 2
    assert add(5) == 7
    assert acc.total == 7
    triple = roundtrip(acc)
    assert isinstance(triple, tvmffi.Function)
    assert triple(7) == 21
    assert roundtrip(lambda: "hi")() == "hi"


def test_to_function_wraps_callable():
    fn = tvmffi.convert_func(lambda x: x + 100)
    assert isinstance(fn, tvmffi.Function)
    assert fn(1) == 101
    assert roundtrip(fn).same_as(fn)


# ---- list / tuple / dict -------------------------------------------------------


@pytest.mark.parametrize("value", [[], [1, 2, 3], (), (1, "a", 2.5), [None, True, b"xy"]])
def test_sequence_becomes_ffi_array(value):
    out = roundtrip(value)
    assert isinstance(out, tvmffi.Object)
    assert isinstance(out, tvmffi.Array)
    assert out.type_key == "ffi.Array"
    assert array_items(out) == list(value)


def test_array_contents_keep_their_types():
    value = [
        1,
        2**100,
        -(2**70),
        2.5,
        "s",
        "long string beyond seven",
        b"b",
        None,
        True,
        tvmffi.cuda(2),
        tvmffi.dtype("int8"),
    ]
    items = array_items(roundtrip(value))
    assert items == value
    assert [type(x) for x in items] == [
        returned_type(x) if type(x) in (str, bytes) else type(x) for x in value
    ]


def test_nested_sequences():
    out = roundtrip([1, [2, (3, [4])], ()])
    assert out.type_key == "ffi.Array"
    items = array_items(out)
    assert items[0] == 1
    assert items[1].type_key == "ffi.Array"
    inner = array_items(items[1])
    assert inner[0] == 2
    assert array_items(inner[1])[0] == 3
    assert array_items(array_items(inner[1])[1]) == [4]
    assert array_items(items[2]) == []


def test_moderately_deep_nesting():
    value: list = [7]
    for _ in range(50):
        value = [value]
    out = roundtrip(value)
    for _ in range(50):
        (out,) = array_items(out)
    assert array_items(out) == [7]


def test_large_sequence():
    value = list(range(1000))
    assert array_items(roundtrip(value)) == value


def test_array_object_passes_back_unchanged():
    arr = roundtrip([1, 2])
    again = roundtrip(arr)
    assert again.type_key == "ffi.Array"
    assert again.same_as(arr)


def test_sequence_of_callables():
    out = roundtrip([lambda: 1, lambda: 2])
    f1, f2 = array_items(out)
    assert isinstance(f1, tvmffi.Function)
    assert (f1(), f2()) == (1, 2)


@pytest.mark.parametrize(
    "value", [{}, {"a": 1}, {"a": 1, "bb": "x" * 20, "c": [1, 2]}, {1: "one", 2: "two"}]
)
def test_dict_becomes_ffi_map(value):
    out = roundtrip(value)
    assert isinstance(out, tvmffi.Object)
    assert isinstance(out, tvmffi.Map)
    assert out.type_key == "ffi.Map"
    assert map_size(out) == len(value)
    for k, v in value.items():
        got = map_get(out, k)
        if isinstance(v, list):
            assert array_items(got) == v
        else:
            assert got == v


def test_typed_containers_accept_converted_values():
    out = testing.schema_id_arr_int([1, 2, 3])
    assert out.type_key == "ffi.Array"
    assert array_items(out) == [1, 2, 3]
    m = testing.schema_id_map_str_int({"x": 1, "y": 2})
    assert m.type_key == "ffi.Map"
    assert map_get(m, "y") == 2


# ---- opaque pointers -----------------------------------------------------------


@pytest.mark.parametrize("address", [1, 0x1234, 0xDEADBEEF, 2**47 - 8, 2**64 - 1])
def test_c_void_p(address):
    out = roundtrip(ctypes.c_void_p(address))
    assert type(out) is ctypes.c_void_p
    assert out.value == address


def test_c_void_p_null():
    out = roundtrip(ctypes.c_void_p())
    assert type(out) is ctypes.c_void_p
    assert out.value is None
    out = roundtrip(ctypes.c_void_p(0))
    assert type(out) is ctypes.c_void_p
    assert out.value is None


def test_c_void_p_of_real_buffer():
    buf = ctypes.create_string_buffer(b"payload")
    ptr = ctypes.cast(buf, ctypes.c_void_p)
    out = roundtrip(ptr)
    assert out.value == ptr.value
    assert ctypes.string_at(out.value, 7) == b"payload"


# ---- NumPy scalars -------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (np.int8(-5), -5),
        (np.int16(300), 300),
        (np.int32(5), 5),
        (np.int64(INT64_MIN), INT64_MIN),
        (np.uint8(255), 255),
        (np.uint32(2**32 - 1), 2**32 - 1),
        (np.uint64(2**64 - 1), 2**64 - 1),
        (np.intp(7), 7),
    ],
    ids=lambda v: type(v).__name__,
)
def test_numpy_integer_scalars(value, expected):
    out = roundtrip(value)
    assert type(out) is int
    assert out == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(np.float32(1.5), 1.5), (np.float64(-2.25), -2.25), (np.float16(0.5), 0.5)],
    ids=lambda v: type(v).__name__,
)
def test_numpy_float_scalars(value, expected):
    out = roundtrip(value)
    assert type(out) is float
    assert out == expected


def test_numpy_scalars_accepted_by_typed_functions():
    assert testing.add_one(np.int32(4)) == 5
    assert testing.schema_id_float(np.float32(0.25)) == 0.25


@pytest.mark.parametrize("value", [True, False])
def test_numpy_bool_scalar_is_bool(value):
    out = roundtrip(np.bool_(value))
    assert out is value
    assert testing.schema_id_bool(np.bool_(value)) is value


# ---- subclasses of builtin types -----------------------------------------------


class Color(enum.IntEnum):
    RED = 1
    BIG = 2**40


class Flag(enum.IntFlag):
    A = 1
    B = 4


class MyInt(int):
    pass


class MyFloat(float):
    pass


class MyStr(str):
    pass


class MyBytes(bytes):
    pass


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Color.RED, 1),
        (Color.BIG, 2**40),
        (Flag.A | Flag.B, 5),
        (MyInt(-9), -9),
        (MyInt(2**70), 2**70),
    ],
    ids=repr,
)
def test_int_subclasses(value, expected):
    out = roundtrip(value)
    assert type(out) is int
    assert out == expected


def test_float_subclass():
    out = roundtrip(MyFloat(2.5))
    assert type(out) is float
    assert out == 2.5


@pytest.mark.parametrize("text", ["hello", "hello, long world", "日本語"])
def test_str_subclass(text):
    out = roundtrip(MyStr(text))
    assert type(out) is returned_type(text)
    assert out == text


def test_str_enum_member():
    class Mode(str, enum.Enum):
        FAST = "fast"
        SLOW_AND_STEADY = "slow-and-steady"

    assert roundtrip(Mode.FAST) == "fast"
    assert roundtrip(Mode.SLOW_AND_STEADY) == "slow-and-steady"


def test_bytes_subclass():
    out = roundtrip(MyBytes(b"abc\0defghijk"))
    assert type(out) is tvmffi.core.Bytes
    assert out == b"abc\0defghijk"


def test_list_and_dict_subclasses():
    class MyList(list):
        pass

    class MyDict(dict):
        pass

    arr = roundtrip(MyList([1, 2]))
    assert arr.type_key == "ffi.Array"
    assert array_items(arr) == [1, 2]
    m = roundtrip(MyDict(a=3))
    assert m.type_key == "ffi.Map"
    assert map_get(m, "a") == 3


# ---- many arguments (stack and heap packing paths) -----------------------------


def test_many_arguments_arrive_in_order():
    args = [*range(20), "s" * 20, b"b" * 3, None, 1.5, tvmffi.cpu(1)]

    def cb(*received):
        return list(received)

    out = testing.apply(cb, *args)
    assert out.type_key == "ffi.Array"
    assert array_items(out) == args


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 16, 64])
def test_arity(n):
    assert testing.apply(lambda *a: len(a), *range(n)) == n
    assert testing.apply(lambda *a: sum(a), *range(n)) == sum(range(n))


# ---- Object basics -------------------------------------------------------------


def test_object_identity_and_hash():
    arr = roundtrip([1])
    same = roundtrip(arr)
    other = roundtrip([1])
    assert arr.same_as(same)
    assert not arr.same_as(other)
    assert hash(arr) == hash(same)
    assert arr.type_index == same.type_index == other.type_index
    assert isinstance(arr.type_index, int)


def test_object_repr():
    obj = testing.make_unregistered_object()
    # No Python class registered for it: a generated one, as the official binding's fallback.
    assert type(obj).__name__ == "TestUnregisteredObject" and isinstance(obj, tvmffi.Object)
    r = repr(obj)
    assert "testing.TestUnregisteredObject" in r
    assert "%" not in r
    fn_repr = repr(tvmffi.convert_func(lambda: None))
    assert "Function" in fn_repr
    assert "%" not in fn_repr
    assert "%" not in repr(roundtrip([1, 2]))
    assert "%" not in repr(roundtrip({"a": 1}))


def test_list_of_objects_converts_without_a_snapshot_and_keeps_identity():
    # Objects of a class deriving from Object directly convert by reading their
    # handle (no Python code), so a list of them (alone or with plain values) is
    # read in place, without a snapshot tuple.
    import tvmffi.testing as testing

    base = [testing.create_object("testing.TestObjectBase", v_i64=i) for i in range(3)]
    back = testing.echo(base)
    assert [o.same_as(b) for o, b in zip(back, base, strict=True)] == [True, True, True]
    assert [o.v_i64 for o in back] == [0, 1, 2]
    mixed = [base[0], 1, "s", None]
    out = testing.echo(mixed)
    assert out[0].same_as(base[0]) and list(out)[1:] == [1, "s", None]
    assert testing.echo({"k": base[1]})["k"].same_as(base[1])


def test_shape_argument_passes_its_object_each_call():
    import tvmffi.testing as testing

    s = tvmffi.Shape([2, 3, 4])
    for _ in range(3):
        back = testing.echo(s)
        assert tuple(back) == (2, 3, 4)
        assert back._tvm_ffi_cached_object.same_as(s._tvm_ffi_cached_object)


@pytest.mark.parametrize(
    "value",
    [
        "float32(1.5)", "float32(nan)", "float32(-inf)", "float32(3.4e38)", "int8(-5)",
        "int16(-300)", "int32(-2**31)", "int64(-2**63)", "int64(2**63-1)", "uint8(255)",
        "uint16(65535)", "uint32(2**32-1)", "uint64(2**63-1)", "uint64(2**63)",
        "uint64(2**64-1)", "longlong(7)", "ulonglong(9)", "intc(-3)", "uintc(4)",
    ],
)
def test_numpy_scalars_convert_to_their_python_value(value):
    # NumPy scalars are read in place (csrc/numpy_scalar.c); what arrives must be
    # exactly float(x) / operator.index(x), a uint64 beyond int64 a big int.
    import math
    import operator

    np = pytest.importorskip("numpy")
    import tvmffi.testing as testing

    name, arg = value.split("(", 1)
    arg = arg[:-1]
    x = getattr(np, name)(float(arg) if name.startswith("float") else eval(arg))
    expected = float(x) if name.startswith("float") else operator.index(x)
    for _ in range(3):  # the first value of a type is also checked the generic way
        got = testing.echo(x)
        assert type(got) is type(expected)
        assert got == expected or (math.isnan(got) and math.isnan(expected))
