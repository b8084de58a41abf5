"""tvmffi.codegen: specs, generated wrappers (every check and message), build, cache, export.

Most tests share one library (module-scoped fixture) holding many generated
functions, so the whole file compiles only a handful of times.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import tvmffi
from tvmffi import _build, codegen, libinfo
from tvmffi._build import toolchain
from tvmffi.codegen import EnvStream, Scalar, Signature, Tensor, Var, emit_c

INCLUDE, LIB_DIR = libinfo.find_include_path(), toolchain.lib_dir()

DTYPE_CASES: dict[str, Any] = {
    "bool": np.bool_,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float32": np.float32,
    "float64": np.float64,
}
CTYPES = {name: codegen._spec.DTYPES[name].ctype for name in DTYPE_CASES}

# ---- the shared library -----------------------------------------------------------------
n, m, k = Var("n"), Var("m"), Var("k")
d4 = Var("d4", divisibility=4)
s0 = Var("s0")
a0, a1, a2, a3 = Var("a0"), Var("a1"), Var("a2"), Var("a3")

SIGS: dict[str, Signature] = {
    "axpy": Signature(
        "axpy",
        [Tensor("x", [n], "float32"), Tensor("y", [n], "float32"), Scalar("alpha", "float32")],
    ),
    "matvec": Signature(
        "matvec",
        [
            Tensor("a", [m, 4], "float32"),
            Tensor("b", [4, k], "float32"),
            Tensor("c", [m, k], "float32"),
        ],
    ),
    "zerod": Signature("zerod", [Tensor("x", [], "float64"), Tensor("y", [], "float64")]),
    "sum4d": Signature(
        "sum4d", [Tensor("x", [a0, a1, a2, a3], "int32"), Tensor("out", [1], "int64")]
    ),
    "div4": Signature("div4", [Tensor("x", [d4], "float32")]),
    "strided": Signature(
        "strided", [Tensor("x", [m, n], "float32", strides=[s0, 1]), Tensor("out", [3], "int64")]
    ),
    "aligned": Signature("aligned", [Tensor("x", [n], "uint8", data_alignment=64)]),
    "small": Signature("small", [Tensor("x", [Var("w", "int8")], "float32")]),
    "scalars": Signature(
        "scalars",
        [
            Tensor("out", [5], "float64"),
            Scalar("i", "int32"),
            Scalar("j", "int64"),
            Scalar("f", "float32"),
            Scalar("g", "float64"),
            Scalar("b", "bool"),
        ],
    ),
    "stream": Signature("stream", [Tensor("out", [1], "int64"), EnvStream("strm")]),
    "fails": Signature("fails", [Scalar("code", "int64")], doc="Raise from the kernel."),
    "nothing": Signature("nothing", []),
    "mixed": Signature(
        "mixed", [Tensor("x", [n], "float32"), Tensor("y", [n], "float32", device="cuda")]
    ),
    "scale_first": Signature(
        "scale_first",
        [
            Scalar("alpha", "float64"),
            Tensor("x", [n], "float64"),
            Tensor("y", [n], "float64"),
            EnvStream("s"),
        ],
    ),
}
for _name in DTYPE_CASES:
    SIGS[f"copy_{_name}"] = Signature(
        f"copy_{_name}", [Tensor("x", [n], _name), Tensor("y", [n], _name)]
    )

KERNELS = r"""
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <tvm/ffi/c_api.h>

int axpy_k(float* x, float* y, float alpha, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
  return 0;
}
int matvec_k(float* a, float* b, float* c, int64_t m, int64_t k) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < k; ++j) {
      float s = 0;
      for (int64_t l = 0; l < 4; ++l) s += a[i * 4 + l] * b[l * k + j];
      c[i * k + j] = s;
    }
  return 0;
}
int zerod_k(double* x, double* y) { *y = *x * 2; return 0; }
int sum4d_k(int32_t* x, int64_t* out, int64_t a0, int64_t a1, int64_t a2, int64_t a3) {
  int64_t s = 0;
  for (int64_t i = 0; i < a0 * a1 * a2 * a3; ++i) s += x[i];
  out[0] = s;
  return 0;
}
int div4_k(float* x, int64_t d4) { (void)x; (void)d4; return 0; }
int strided_k(float* x, int64_t* out, int64_t m, int64_t n, int64_t s0) {
  (void)x; out[0] = m; out[1] = n; out[2] = s0; return 0;
}
int aligned_k(uint8_t* x, int64_t n) { (void)x; (void)n; return 0; }
int small_k(float* x, int64_t w) { (void)x; (void)w; return 0; }
int scalars_k(double* out, int32_t i, int64_t j, float f, double g, bool b) {
  out[0] = i; out[1] = (double)j; out[2] = f; out[3] = g; out[4] = b ? 1.0 : 0.0;
  return 0;
}
int stream_k(int64_t* out, void* strm) { out[0] = (int64_t)(intptr_t)strm; return 0; }
int fails_k(int64_t code) {
  if (code != 0) {
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", "kernel failed on purpose");
    return -1;
  }
  return 0;
}
int nothing_k(void) { return 0; }
int mixed_k(float* x, float* y, int64_t n) { (void)x; (void)y; (void)n; return 0; }
int scale_first_k(double alpha, double* x, double* y, int64_t n, void* s) {
  (void)s;
  for (int64_t i = 0; i < n; ++i) y[i] = alpha * x[i];
  return 0;
}
"""
for _name, _ct in CTYPES.items():
    KERNELS += (
        f"int copy_{_name}_k({_ct}* x, {_ct}* y, int64_t n) "
        f"{{ memcpy(y, x, (size_t)n * sizeof({_ct})); return 0; }}\n"
    )

FUNCTIONS = [(sig, f"{name}_k") for name, sig in SIGS.items()]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("codegen_cache"))


@pytest.fixture(scope="module")
def mod(cache_dir: str) -> tvmffi.Module:
    return codegen.build(FUNCTIONS, sources=[KERNELS], name="cgtest", output_dir=cache_dir)


def sig_text(name: str | Signature) -> str:
    return f" when calling: `{SIGS[name] if isinstance(name, str) else name}`"


@contextlib.contextmanager
def raises(exc: type[Exception], text: str, name: str | Signature) -> Iterator[None]:
    """Expect ``exc`` whose message is exactly ``text`` + the signature suffix of ``name``.

    (Not ``pytest.raises(match=...)``: that also searches the FFI backtrace note.)
    """
    with pytest.raises(exc) as info:
        yield
    assert str(info.value) == text + sig_text(name)


# ---- specs --------------------------------------------------------------------------------
def test_signature_str() -> None:
    sig = Signature("f", [Tensor("x", [n], "float32"), Scalar("alpha", "float32")])
    assert str(sig) == "f(x: Tensor([n], float32), alpha: float32)"
    sig = Signature(
        "my_kernel",
        [Tensor("a", [Var("n0"), 256], "float32", device="cuda"), EnvStream("s")],
    )
    assert str(sig) == "my_kernel(a: Tensor([n0, 256], float32, cuda))"
    assert sig.vars == (Var("n0"),)
    assert sig.doc == str(sig)


@pytest.mark.parametrize(
    ("make", "text"),
    [
        (lambda: Signature("f", [Tensor("x", [1], "float32"), Scalar("x", "int32")]), "duplicate"),
        (lambda: Signature("f", [Tensor("n", [n], "float32")]), "duplicate name 'n'"),
        (
            lambda: Signature(
                "f", [Tensor("x", [Var("n")], "float32"), Tensor("y", [Var("n", "int32")], "int8")]
            ),
            "duplicate name 'n'",
        ),
        (lambda: Var("n", "float32"), "integer dtype"),
        (lambda: Var("n", divisibility=0), "divisibility"),
        (lambda: Var("n", divisibility=True), "divisibility"),
        (lambda: Var("n", divisibility=-2), "divisibility must be a positive int"),
        (lambda: Var("n", divisibility="2"), "divisibility must be a positive int"),
        (lambda: Var("int"), "reserved"),
        (lambda: Var("1n"), "C identifier"),
        (lambda: Var("__n"), "must not start"),
        (lambda: Tensor("x", [n], "float128"), "dtype"),
        (lambda: Tensor("x", [n], "float32", device="tpu"), "device"),
        (lambda: Tensor("x", [-1], "float32"), ">= 0"),
        (lambda: Tensor("x", [1.5], "float32"), "ints or Vars"),
        (lambda: Tensor("x", ["n"], "float32"), "ints or Vars"),
        (lambda: Tensor("x", [True], "float32"), "ints or Vars"),
        (lambda: Tensor("x", "n", "float32"), "sequence"),
        (lambda: Tensor("x", [2**63], "float32"), "int64"),
        (lambda: Tensor("x", [n, 2], "float32", strides=[1]), "strides"),
        (lambda: Tensor("x", [n], "float32", data_alignment=3), "power of two"),
        (lambda: Tensor("x", [n], "float32", data_alignment=0), "power of two"),
        (lambda: Tensor("x", [n], "float32", data_alignment=-4), "power of two"),
        (lambda: Tensor("x", [n], "float32", data_alignment=True), "power of two"),
        (lambda: Tensor("x", [n], "float32", data_alignment=4.0), "power of two"),
        (lambda: Tensor("x-y", [n], "float32"), "C identifier"),
        (lambda: Tensor("int64_t", [n], "float32"), "reserved"),
        (lambda: Scalar("s", "int8"), "dtype"),
        (lambda: Scalar("s", "float16"), "dtype"),
        (lambda: Signature("f", [EnvStream("s")]), "EnvStream"),
        (lambda: Signature("f g", []), "C identifier"),
        (lambda: Signature("f", [1]), "Tensor, Scalar or EnvStream"),
        (lambda: Signature("f", "x"), "sequence"),
        # Values the generated int64_t C cannot hold (2**70 used to reach the compiler).
        (lambda: Var("n", divisibility=2**70), "below 2**63"),
        (lambda: Var("n", divisibility=2**63), "below 2**63"),
        (lambda: Tensor("x", [n], "float32", data_alignment=2**63), "below 2**63"),
        (lambda: Tensor("x", [n], "float32", data_alignment=2**70), "below 2**63"),
        (lambda: Tensor("x", [n], "float32", strides=[2**63]), "int64"),
        (lambda: Tensor("x", [n], "float32", strides=[-(2**63) - 1]), "int64"),
        (lambda: emit_c(Signature("f", []), "not valid"), "C identifier"),
    ],
)
def test_bad_specs_raise_value_error(make: Any, text: str) -> None:
    with pytest.raises(ValueError, match=re.escape(text)):
        make()


def test_emitted_c_is_warning_free(tmp_path: Any) -> None:
    """Every signature of the shared library, plus odd ones, compiles with -Wall -Wextra -Werror."""
    odd = [
        Signature("big", [Tensor("x", [0, 2**62, Var("v", "uint32")], "bool")]),
        Signature("neg", [Tensor("x", [n, n], "float32", strides=[-(2**63), n])]),
        Signature(
            "quoted",
            [Tensor("x", [n], "float32", device="rocm")],
            doc='a "doc" with \\ and \n newlines, ?? trigraphs and ünïcode',
        ),
    ]
    text = "\n".join(
        [*(emit_c(s, f"{s.name}_k") for s in SIGS.values()), *(emit_c(s) for s in odd)]
    )
    src = tmp_path / "all.c"
    src.write_text(text)
    for compiler, flags in (("cc", ["-std=c11"]), ("c++", ["-std=c++17", "-x", "c++"])):
        proc = subprocess.run(
            [
                compiler,
                *flags,
                "-Wall",
                "-Wextra",
                "-Werror",
                "-c",
                str(src),
                "-I",
                INCLUDE,
                "-o",
                str(tmp_path / "all.o"),
            ],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr


# ---- calls and every check ---------------------------------------------------------------
def test_axpy_numpy_and_tensorview(mod: tvmffi.Module) -> None:
    x = np.arange(5, dtype=np.float32)
    y = np.ones(5, dtype=np.float32)
    assert mod.axpy(x, y, 2.0) is None
    np.testing.assert_array_equal(y, 1 + 2 * x)
    mod.axpy(tvmffi.TensorView(x), tvmffi.TensorView(y), 1)  # DLTensor* arguments, int alpha
    np.testing.assert_array_equal(y, 1 + 3 * x)
    t = tvmffi.from_dlpack(y)
    mod.axpy(x, t, -3.0)  # a pre-converted Tensor object
    np.testing.assert_array_equal(y, np.ones(5, np.float32))


def test_torch_tensors_zero_copy(mod: tvmffi.Module) -> None:
    torch = pytest.importorskip("torch")
    x = torch.arange(6, dtype=torch.float32)
    y = torch.zeros(6, dtype=torch.float32)
    mod.axpy(x, y, 0.5)
    assert y.tolist() == [0.5 * i for i in range(6)]
    with raises(ValueError, "Parameter `x` expects dtype=float32 but got dtype=float64", "axpy"):
        mod.axpy(x.double(), y, 1.0)


@pytest.mark.parametrize("dtype", list(DTYPE_CASES))
def test_each_dtype(mod: tvmffi.Module, dtype: str) -> None:
    np_dtype = DTYPE_CASES[dtype]
    x = (np.arange(7) % 2 == 1) if dtype == "bool" else np.arange(7).astype(np_dtype)
    y = np.zeros(7, dtype=np_dtype)
    mod[f"copy_{dtype}"](x, y)
    assert y.dtype == np.dtype(np_dtype)
    np.testing.assert_array_equal(y.view(np.uint8), x.view(np.uint8))
    other = "int8" if dtype != "int8" else "uint8"
    wrong = np.zeros(7, dtype=DTYPE_CASES[other])
    with raises(
        ValueError,
        f"Parameter `y` expects dtype={dtype} but got dtype={other}",
        f"copy_{dtype}",
    ):
        mod[f"copy_{dtype}"](x, wrong)


def test_argument_count(mod: tvmffi.Module) -> None:
    x = np.zeros(3, np.float32)
    with raises(TypeError, "Expects 3 arguments but got 2", "axpy"):
        mod.axpy(x, x)
    with raises(TypeError, "Expects 3 arguments but got 4", "axpy"):
        mod.axpy(x, x, 1.0, 1.0)
    with raises(TypeError, "Expects 0 arguments but got 1", "nothing"):
        mod.nothing(1)
    assert mod.nothing() is None


def test_non_tensor_arguments(mod: tvmffi.Module) -> None:
    x = np.zeros(3, np.float32)
    for value, shown in (
        (1, "int"),
        (1.5, "float"),
        (None, "None"),
        ("s", "str"),
        ("a long string", "str"),
        (True, "bool"),
        ([1], "ffi.Array"),
    ):
        with raises(TypeError, f"Parameter `y` expects Tensor but got {shown}", "axpy"):
            mod.axpy(x, value, 1.0)


def test_scalars(mod: tvmffi.Module) -> None:
    out = np.zeros(5)
    mod.scalars(out, -7, 2**40, 1.5, 2.25, True)
    np.testing.assert_array_equal(out, [-7, 2**40, 1.5, 2.25, 1.0])
    mod.scalars(out, True, 3, 2, 4, 0)  # bool -> int, int -> float, int -> bool
    np.testing.assert_array_equal(out, [1, 3, 2, 4, 0])
    with raises(TypeError, "Parameter `i` expects int32 but got float", "scalars"):
        mod.scalars(out, 1.0, 1, 1.0, 1.0, True)
    with raises(TypeError, "Parameter `j` expects int64 but got str", "scalars"):
        mod.scalars(out, 1, "1", 1.0, 1.0, True)
    with raises(TypeError, "Parameter `f` expects float32 but got None", "scalars"):
        mod.scalars(out, 1, 1, None, 1.0, True)
    with raises(TypeError, "Parameter `g` expects float64 but got bool", "scalars"):
        mod.scalars(out, 1, 1, 1.0, False, True)
    with raises(TypeError, "Parameter `b` expects bool but got float", "scalars"):
        mod.scalars(out, 1, 1, 1.0, 1.0, 1.0)
    with raises(
        ValueError, "Parameter `i` expects an int32 but got 2147483648 (out of range)", "scalars"
    ):
        mod.scalars(out, 2**31, 1, 1.0, 1.0, True)
    with raises(TypeError, "Parameter `out` expects Tensor but got int", "scalars"):
        mod.scalars(1, 1, 1, 1.0, 1.0, True)


def test_ndim_and_constant_dims(mod: tvmffi.Module) -> None:
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    b = np.arange(12, dtype=np.float32).reshape(4, 3)
    c = np.zeros((2, 3), np.float32)
    mod.matvec(a, b, c)
    np.testing.assert_allclose(c, a @ b)
    with raises(ValueError, "Parameter `a` expects ndim=2 but got ndim=3", "matvec"):
        mod.matvec(a.reshape(2, 2, 2), b, c)
    with raises(ValueError, "Parameter `a` expects shape[1]=4 but got shape[1]=2", "matvec"):
        mod.matvec(a.reshape(4, 2), b, c)
    with raises(ValueError, "Parameter `b` expects shape[0]=4 but got shape[0]=3", "matvec"):
        mod.matvec(a, np.zeros((3, 4), np.float32), c)


def test_symbolic_dims_shared(mod: tvmffi.Module) -> None:
    a = np.zeros((2, 4), np.float32)
    b = np.zeros((4, 3), np.float32)
    with raises(
        ValueError,
        "Parameter `c` expects shape[0]=m=2 (bound by `a`.shape[0]) but got shape[0]=5",
        "matvec",
    ):
        mod.matvec(a, b, np.zeros((5, 3), np.float32))
    with raises(
        ValueError,
        "Parameter `c` expects shape[1]=k=3 (bound by `b`.shape[1]) but got shape[1]=2",
        "matvec",
    ):
        mod.matvec(a, b, np.zeros((2, 2), np.float32))
    x = np.zeros(4, np.float32)
    with raises(
        ValueError,
        "Parameter `y` expects shape[0]=n=4 (bound by `x`.shape[0]) but got shape[0]=3",
        "axpy",
    ):
        mod.axpy(x, np.zeros(3, np.float32), 1.0)


def test_zero_d(mod: tvmffi.Module) -> None:
    x = np.array(21.0)
    y = np.array(0.0)
    mod.zerod(x, y)
    assert float(y) == 42.0
    with raises(ValueError, "Parameter `x` expects ndim=0 but got ndim=1", "zerod"):
        mod.zerod(np.zeros(1), y)


def test_four_d(mod: tvmffi.Module) -> None:
    x = np.arange(2 * 3 * 4 * 5, dtype=np.int32).reshape(2, 3, 4, 5)
    out = np.zeros(1, np.int64)
    mod.sum4d(x, out)
    assert out[0] == x.sum()
    with raises(ValueError, "Parameter `x` expects dtype=int32 but got dtype=int64", "sum4d"):
        mod.sum4d(x.astype(np.int64), out)
    with raises(ValueError, "Parameter `out` expects shape[0]=1 but got shape[0]=2", "sum4d"):
        mod.sum4d(x, np.zeros(2, np.int64))


def test_divisibility(mod: tvmffi.Module) -> None:
    mod.div4(np.zeros(8, np.float32))
    mod.div4(np.zeros(0, np.float32))
    with raises(
        ValueError,
        "Parameter `x` expects shape[0]=d4 to be divisible by 4 but got shape[0]=6",
        "div4",
    ):
        mod.div4(np.zeros(6, np.float32))


def test_var_dtype_range(mod: tvmffi.Module) -> None:
    mod.small(np.zeros(127, np.float32))
    with raises(
        ValueError, "Parameter `x` expects shape[0]=w to fit in int8 but got shape[0]=128", "small"
    ):
        mod.small(np.zeros(128, np.float32))


def test_compact_strides(mod: tvmffi.Module) -> None:
    base = np.zeros((4, 6), np.float32)
    mod.matvec(np.zeros((3, 4), np.float32), base[:, :5].copy(), np.zeros((3, 5), np.float32))
    with raises(
        ValueError,
        "Parameter `b` expects compact row-major strides, strides[0]=5, but got strides[0]=6",
        "matvec",
    ):
        mod.matvec(np.zeros((3, 4), np.float32), base[:, :5], np.zeros((3, 5), np.float32))
    with raises(
        ValueError,
        "Parameter `y` expects compact row-major strides, strides[0]=1, but got strides[0]=2",
        "axpy",
    ):
        mod.axpy(np.zeros(3, np.float32), np.zeros(6, np.float32)[::2], 1.0)
    # Size-1 dimensions may have any stride; tensors without elements any strides.
    odd = np.lib.stride_tricks.as_strided(np.zeros(4, np.float32), shape=(1, 4), strides=(400, 4))
    mod.matvec(odd, np.zeros((4, 2), np.float32), np.zeros((1, 2), np.float32))
    empty = np.lib.stride_tricks.as_strided(np.zeros(4, np.float32), shape=(0, 4), strides=(4, 8))
    mod.matvec(empty, np.zeros((4, 2), np.float32), np.zeros((0, 2), np.float32))


def test_explicit_strides(mod: tvmffi.Module) -> None:
    out = np.zeros(3, np.int64)
    base = np.zeros((5, 10), np.float32)
    mod.strided(base[:, :7], out)
    assert out.tolist() == [5, 7, 10]
    mod.strided(np.zeros((2, 3), np.float32), out)  # compact: strides (3, 1)
    assert out.tolist() == [2, 3, 3]
    with raises(ValueError, "Parameter `x` expects strides[1]=1 but got strides[1]=2", "strided"):
        mod.strided(base[:, ::2], out)


def test_alignment(mod: tvmffi.Module) -> None:
    buf = np.zeros(256, np.uint8)
    offset = (-buf.ctypes.data) % 64
    mod.aligned(buf[offset : offset + 64])
    with raises(
        ValueError,
        "Parameter `x` expects data_alignment=64 but got a data address that is 3 mod 64",
        "aligned",
    ):
        mod.aligned(buf[offset + 3 : offset + 64])


def test_device_type(mod: tvmffi.Module, cache_dir: str) -> None:
    sig = Signature("on_cuda", [Tensor("x", [n], "float32", device="cuda")])
    f = codegen.inline(sig, "(void)x; (void)n;", output_dir=cache_dir)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "Parameter `x` expects device_type=cuda but got device_type=cpu when calling: "
            "`on_cuda(x: Tensor([n], float32, cuda))`"
        ),
    ):
        f(np.zeros(2, np.float32))


class _OnDevice:
    """A NumPy array re-exported through DLPack as if it lived on another device."""

    def __init__(self, array: np.ndarray, device_id: int, device_type: int = 1, shift: int = 0):
        self.array, self.device_id, self.device_type = array, device_id, device_type
        self.shift = shift  # move `shift` bytes from the data pointer into byte_offset

    def __dlpack_device__(self) -> tuple[int, int]:
        return (self.device_type, self.device_id)

    def __dlpack__(self, **kwargs: Any) -> Any:
        capsule = self.array.__dlpack__()
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        ptr = get(capsule, b"dltensor")
        ctypes.c_int32.from_address(ptr + 8).value = self.device_type  # DLTensor.device
        ctypes.c_int32.from_address(ptr + 12).value = self.device_id
        ctypes.c_uint64.from_address(ptr).value -= self.shift  # DLTensor.data
        ctypes.c_uint64.from_address(ptr + 40).value += self.shift  # DLTensor.byte_offset
        return capsule


def test_device_id_mismatch(mod: tvmffi.Module) -> None:
    x = np.zeros(3, np.float32)
    moved = tvmffi.from_dlpack(_OnDevice(np.zeros(3, np.float32), 1))
    assert moved.device == tvmffi.Device("cpu:1")
    with raises(
        ValueError,
        "Parameter `y` expects device_id=0 (the device of `x`) but got device_id=1",
        "axpy",
    ):
        mod.axpy(x, moved, 1.0)
    # The first tensor need not be the first argument.
    y = np.zeros(3)
    mod.scale_first(2.0, np.arange(3.0), y)
    assert y.tolist() == [0.0, 2.0, 4.0]
    with raises(
        ValueError,
        "Parameter `y` expects device_id=0 (the device of `x`) but got device_id=1",
        "scale_first",
    ):
        mod.scale_first(1.0, np.zeros(3), tvmffi.from_dlpack(_OnDevice(np.zeros(3), 1)))
    # A tensor expected on another device type than the first one.
    with raises(
        ValueError, "Parameter `y` expects device_type=cuda but got device_type=cpu", "mixed"
    ):
        mod.mixed(x, x)
    with raises(
        ValueError, "Parameter `x` expects device_type=cpu but got device_type=cuda", "mixed"
    ):
        # (host memory labelled cuda:0; never dereferenced, the check fails first)
        mod.mixed(tvmffi.from_dlpack(_OnDevice(np.zeros(3, np.float32), 0, device_type=2)), x)
    # The right device type, but not the first tensor's device id.
    with raises(
        ValueError,
        "Parameter `y` expects device_id=0 (the device of `x`) but got device_id=1",
        "mixed",
    ):
        mod.mixed(x, tvmffi.from_dlpack(_OnDevice(np.zeros(3, np.float32), 1, device_type=2)))


def test_byte_offset_applied(mod: tvmffi.Module) -> None:
    x = np.arange(5, dtype=np.float32)
    shifted = tvmffi.from_dlpack(_OnDevice(x, 0, shift=16))
    dl = shifted.__chandle__() + 24  # the DLTensor after the 24-byte object header
    assert ctypes.c_uint64.from_address(dl + 40).value == 16  # byte_offset kept, not folded
    y = np.zeros(5, np.float32)
    mod.copy_float32(shifted, y)
    np.testing.assert_array_equal(y, x)
    buf = np.zeros(256, np.uint8)
    offset = (-buf.ctypes.data) % 64
    mod.aligned(tvmffi.from_dlpack(_OnDevice(buf[offset : offset + 64], 0, shift=64)))
    with raises(
        ValueError,
        "Parameter `x` expects data_alignment=64 but got a data address that is 8 mod 64",
        "aligned",
    ):
        mod.aligned(tvmffi.from_dlpack(_OnDevice(buf[offset + 8 : offset + 64], 0, shift=8)))


def test_env_stream(mod: tvmffi.Module) -> None:
    out = np.zeros(1, np.int64)
    mod.stream(out)
    assert out[0] == 0
    with tvmffi.use_raw_stream(tvmffi.cpu(0), 0x1234):
        mod.stream(out)
    assert out[0] == 0x1234


def test_kernel_error_propagates(mod: tvmffi.Module) -> None:
    mod.fails(0)
    with pytest.raises(RuntimeError) as info:
        mod.fails(1)
    assert str(info.value) == "kernel failed on purpose"


def test_doc_and_metadata(mod: tvmffi.Module) -> None:
    assert mod.get_function_doc("fails") == "Raise from the kernel."
    assert mod.get_function_doc("axpy") == str(SIGS["axpy"])
    meta = mod.get_function_metadata("axpy")
    assert meta is not None
    assert meta["signature"] == str(SIGS["axpy"])
    assert meta["kernel"] == "int axpy_k(float* x, float* y, float alpha, int64_t n)"
    assert meta["params"][0] == {
        "name": "x",
        "kind": "tensor",
        "shape": ["n"],
        "dtype": "float32",
        "device": "cpu",
        "strides": None,
        "data_alignment": None,
        "output": False,
        "inout": False,
    }
    assert meta["vars"] == [{"name": "n", "dtype": "int64", "divisibility": None}]
    assert mod.get_function_signature("axpy") == "(DLTensor*, DLTensor*, float) -> None"
    assert mod.get_function_signature("scalars") == (
        "(DLTensor*, int, int, float, float, bool) -> None"
    )


def test_official_binding_loads_built_library(mod: tvmffi.Module, cache_dir: str) -> None:
    path = os.path.join(
        cache_dir,
        next(d for d in os.listdir(cache_dir) if d.startswith("cgtest-")),
        "libcgtest.so",
    )
    code = (
        "import sys, numpy as np, tvm_ffi\n"
        "m = tvm_ffi.load_module(sys.argv[1])\n"
        "x = np.arange(3, dtype=np.float32); y = np.zeros(3, dtype=np.float32)\n"
        "m['axpy'](x, y, 2.0)\n"
        "assert y.tolist() == [0.0, 2.0, 4.0], y\n"
        "try:\n"
        "    m['axpy'](x, np.zeros(2, np.float32), 1.0)\n"
        "except ValueError as e:\n"
        "    print(str(e).splitlines()[0])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        "Parameter `y` expects shape[0]=n=3 (bound by `x`.shape[0]) but got shape[0]=2"
        + sig_text("axpy")
    )


# ---- build, cache, errors, export ---------------------------------------------------------
def test_second_build_is_a_load(tmp_path: Any) -> None:
    sig = Signature("twice", [Tensor("x", [n], "int64")])
    body = "for (int64_t i = 0; i < n; ++i) x[i] = i * 3;"
    runs = _build.stats["compiler_runs"]
    f1 = codegen.inline(sig, body, output_dir=tmp_path)
    assert _build.stats["compiler_runs"] > runs
    (lib_dir,) = [d for d in os.listdir(tmp_path) if d.startswith("twice-")]
    lib = tmp_path / lib_dir / "libtwice.so"
    mtime = lib.stat().st_mtime_ns
    runs = _build.stats["compiler_runs"]
    f2 = codegen.inline(sig, body, output_dir=tmp_path)
    assert _build.stats["compiler_runs"] == runs
    assert lib.stat().st_mtime_ns == mtime
    x = np.zeros(4, np.int64)
    f2(x)
    assert x.tolist() == [0, 3, 6, 9]
    f1(x)
    # A different body is a different library; both stay usable in one process
    # (each wrapper calls its own library's kernel).
    f3 = codegen.inline(sig, body.replace("3", "5"), output_dir=tmp_path)
    assert len([d for d in os.listdir(tmp_path) if d.startswith("twice-")]) == 2
    f3(x)
    assert x.tolist() == [0, 5, 10, 15]
    f1(x)
    assert x.tolist() == [0, 3, 6, 9]


def test_default_cache_dir_from_env(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TVMFFI_CACHE_DIR", str(tmp_path / "envcache"))
    f = codegen.inline(Signature("envcached", [Scalar("v", "int64")]), "(void)v;")
    f(1)
    assert any(d.startswith("envcached-") for d in os.listdir(tmp_path / "envcache"))


def test_kernel_compile_error(tmp_path: Any) -> None:
    sig = Signature("broken", [Tensor("x", [n], "float32")])
    with pytest.raises(_build.CompileError) as info:
        codegen.inline(sig, "x[0] = undefined_name;", output_dir=tmp_path)
    err = info.value
    assert isinstance(err, RuntimeError)
    message = str(err)
    assert "undefined_name" in message and "error" in message
    assert os.path.isfile(err.path)
    assert err.path in message
    with open(err.path) as f:
        assert "undefined_name" in f.read()
    assert "generated wrapper: " in message
    wrapper = message.rsplit("generated wrapper: ", 1)[1].rstrip(")")
    with open(wrapper) as f:
        assert "__tvm_ffi_broken" in f.read()


def test_link_error_names_the_library_and_wrapper(tmp_path: Any) -> None:
    """Two sources defining the kernel compile but fail to link: the error says so."""
    kernel = "int twice_k(void) { return 0; }\n"
    with pytest.raises(_build.CompileError) as info:
        codegen.build(
            [(Signature("twice", []), "twice_k")],
            sources=[kernel, kernel],
            name="twice",
            output_dir=tmp_path,
        )
    message = str(info.value)
    assert info.value.path.endswith("libtwice.so") and info.value.path in message
    assert "twice_k" in info.value.output
    wrapper = message.rsplit("\n(generated wrapper: ", 1)[1].rstrip(")")
    with open(wrapper) as f:
        assert "__tvm_ffi_twice" in f.read()


def test_build_argument_errors(tmp_path: Any) -> None:
    sig = Signature("dup", [])
    with pytest.raises(ValueError, match="two functions are named 'dup'"):
        codegen.build([(sig, "a"), (sig, "b")], name="dup", output_dir=tmp_path)
    with pytest.raises(TypeError, match="pairs"):
        codegen.build([sig], name="dup", output_dir=tmp_path)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="library name"):
        codegen.build([], name="no/slash", output_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"missing\.c"):
        codegen.build([], sources=[str(tmp_path / "missing.c")], name="x", output_dir=tmp_path)


def test_sources_from_files_and_cpp(tmp_path: Any) -> None:
    (tmp_path / "k.h").write_text("#define FACTOR 7\n")
    (tmp_path / "k.cc").write_text(
        '#include <cstdint>\n#include "k.h"\n'
        'extern "C" int scale_k(int64_t* x, int64_t n) {\n'
        "  for (int64_t i = 0; i < n; ++i) x[i] *= FACTOR;\n  return 0;\n}\n"
    )
    sig = Signature("scale7", [Tensor("x", [n], "int64")])
    m = codegen.build(
        [(sig, "scale_k")],
        sources=[tmp_path / "k.cc"],
        name="scale7",
        output_dir=tmp_path / "cache",
    )
    x = np.arange(3, dtype=np.int64)
    m.scale7(x)
    assert x.tolist() == [0, 7, 14]


def test_export_object(tmp_path: Any) -> None:
    sig = Signature("exported", [Tensor("x", [n], "float32"), Scalar("v", "float32")])
    kernel = (
        "#include <stdint.h>\n"
        "int fill_k(float* x, float v, int64_t n) "
        "{ for (int64_t i = 0; i < n; ++i) x[i] = v; return 0; }\n"
    )
    obj = codegen.export_object([(sig, "fill_k")], sources=[kernel], path=tmp_path / "e.o")
    assert obj == str(tmp_path / "e.o") and os.path.isfile(obj)
    so = str(tmp_path / "libexported.so")
    subprocess.run(
        ["cc", "-shared", "-o", so, obj, f"-L{LIB_DIR}", "-ltvm_ffi", f"-Wl,-rpath,{LIB_DIR}"],
        check=True,
    )
    m = tvmffi.load_module(so)
    x = np.zeros(3, np.float32)
    m.exported(x, 2.5)
    assert x.tolist() == [2.5] * 3
    assert m.get_function_doc("exported") == str(sig)


def test_build_embeds_module_library(tmp_path: Any) -> None:
    """build(embed=[...]): the outer library's module imports the embedded one."""
    inner_sig = Signature("inner_fill", [Tensor("x", [n], "int32"), Scalar("v", "int32")])
    codegen.build(
        [(inner_sig, "fill")],
        sources=[
            "#include <stdint.h>\n"
            "int fill(int32_t* x, int32_t v, int64_t n) "
            "{ for (int64_t i = 0; i < n; ++i) x[i] = v; return 0; }\n"
        ],
        name="inner",
        output_dir=tmp_path,
    )
    (inner_dir,) = [d for d in os.listdir(tmp_path) if d.startswith("inner-")]
    inner_path = str(tmp_path / inner_dir / "libinner.so")
    outer_args: dict[str, Any] = {
        "sources": ["int outer_k(void) { return 0; }"],
        "name": "outer",
        "output_dir": tmp_path,
        "embed": [inner_path],
    }
    outer = codegen.build([(Signature("outer_nop", []), "outer_k")], **outer_args)
    (outer_dir,) = [d for d in os.listdir(tmp_path) if d.startswith("outer-")]
    with open(tmp_path / outer_dir / "tvmffi_library_bin.c") as f:
        assert "embeds: libinner.so" in f.read()
    # The same inputs again (embedded bytes included) are a cache hit.
    runs = _build.stats["compiler_runs"]
    codegen.build([(Signature("outer_nop", []), "outer_k")], **outer_args)
    assert _build.stats["compiler_runs"] == runs
    assert len(outer.imports) == 1
    with pytest.raises(AttributeError):  # missing: AttributeError, as official
        outer.get_function("inner_fill")
    f = outer.get_function("inner_fill", query_imports=True)
    assert f is not None
    x = np.zeros(3, np.int32)
    f(x, 9)
    assert x.tolist() == [9, 9, 9]
    with raises(TypeError, "Parameter `v` expects int32 but got str", inner_sig):
        f(x, "9")


# ---- CUDA ---------------------------------------------------------------------------------
CUDA_SIG = Signature(
    "cuda_scale",
    [Tensor("x", [n], "float32", device="cuda"), Scalar("alpha", "float32"), EnvStream("stream")],
)
CUDA_SOURCE = r"""
#include <cstdint>
#include <cuda_runtime.h>
#include <tvm/ffi/c_api.h>

__global__ void scale(float* x, float alpha, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) x[i] *= alpha;
}

extern "C" int cuda_scale_k(float* x, float alpha, int64_t n, void* stream) {
  if (n == 0) return 0;
  scale<<<(unsigned)((n + 255) / 256), 256, 0, (cudaStream_t)stream>>>(x, alpha, n);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", cudaGetErrorString(err));
    return -1;
  }
  return 0;
}
"""


def test_cuda_spec_emits_device_and_stream_checks() -> None:
    src = emit_c(CUDA_SIG, "cuda_scale_k")
    assert "device.device_type != 2" in src
    assert "TVMFFIEnvGetStream(t0->device.device_type, t0->device.device_id)" in src
    # The kernel is declared unnamed-parameter, under a mangled C name bound to its
    # symbol; the prototype with the user's names is the documented one (metadata).
    assert (
        "int tvmffi_cg_kernel_cuda_scale(float*, float, int64_t, void*) "
        'TVMFFI_CG_SYMBOL("cuda_scale_k");' in src
    )
    assert "int cuda_scale_k(float*, float, int64_t, void*);" in src  # no asm labels
    assert (
        codegen._emit.kernel_prototype(CUDA_SIG, "cuda_scale_k")
        == "int cuda_scale_k(float* x, float alpha, int64_t n, void* stream)"
    )


@pytest.fixture(scope="module")
def cuda_mod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tvmffi.Module]:
    try:
        toolchain.compiler("cuda")
    except RuntimeError:
        pytest.skip("nvcc not found")
    tmp = tmp_path_factory.mktemp("cuda")
    (tmp / "scale.cu").write_text(CUDA_SOURCE)
    yield codegen.build(
        [(CUDA_SIG, "cuda_scale_k")], sources=[tmp / "scale.cu"], name="cuda_scale", output_dir=tmp
    )


def test_cuda_source_compiles_with_nvcc(cuda_mod: tvmffi.Module) -> None:
    with pytest.raises(
        ValueError, match=re.escape("expects device_type=cuda but got device_type=cpu")
    ):
        cuda_mod.cuda_scale(np.zeros(4, np.float32), 2.0)


def test_cuda_kernel_runs_on_gpu(cuda_mod: tvmffi.Module) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    cuda_mod.cuda_scale(x, 3.0)
    torch.cuda.synchronize()
    assert x.cpu().tolist() == [3.0 * i for i in range(1000)]
    with raises(ValueError, "Parameter `x` expects dtype=float32 but got dtype=float64", CUDA_SIG):
        cuda_mod.cuda_scale(x.double(), 1.0)
