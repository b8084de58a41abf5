"""register_op's eager kernel is C++ (issue 35): no Python, no GIL, the same errors.

The kernel library (src/tvmffi/_torch_kernel/kernel.cc) is built once per torch
and cached by tvmffi.cpp under $TVM_FFI_CACHE_DIR: the first test session pays
its compile (about half a minute of one core), later ones load it.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tvmffi
import tvmffi.cpp
from tvmffi import codegen
from tvmffi.codegen import Scalar, Signature, Tensor

torch = pytest.importorskip("torch")
from ops_kernels import AXPBY_BODY, N, axpby_signature, cpp_axpby_source  # noqa: E402

import tvmffi.torch  # noqa: E402  (needs torch)
from tvmffi import _torch_kernel  # noqa: E402

AXPBY = axpby_signature("k_axpby")
CPP_AXPBY = axpby_signature("k_cpp_axpby")
# test_eager_call_completes_while_another_thread_holds_the_gil: the operator's
# FFI function waits (at most a minute) for `flag` to become 1, then sets it to 2.
# `probe_start` makes the flag tensor in C through torch's C API (it has no
# Python object, so releasing it needs no GIL either) and calls the operator on
# it from a new thread through aoti_torch_call_dispatcher; `report` receives the
# call's status, 1 once it returned, and the flag's address. The torch C
# functions come in as addresses.
PROBE = Signature("gil_probe", [Tensor("flag", [1], "int32", inout=True)])
START = Signature(
    "probe_start",
    [Tensor("report", [3], "int64")]
    + [Scalar(name, "int64") for name in ("call", "empty", "data_ptr", "dtype", "device")],
)
JOIN = Signature("probe_join", [Tensor("report", [3], "int64")])
PROBE_SOURCE = r"""
#include <pthread.h>
#include <stdint.h>
#include <time.h>
int gil_probe_k(int32_t* flag) {
  time_t end = time(NULL) + 60;
  while (__atomic_load_n(flag, __ATOMIC_SEQ_CST) == 0) {
    if (time(NULL) > end) return 0;
  }
  __atomic_store_n(flag, 2, __ATOMIC_SEQ_CST);
  return 0;
}
typedef int32_t (*CallDispatcher)(const char*, const char*, uint64_t*);
typedef int32_t (*EmptyStrided)(int64_t, const int64_t*, const int64_t*, int32_t, int32_t,
                                int32_t, void**);
typedef int32_t (*DataPtr)(void*, void**);
static pthread_t thread;
static CallDispatcher call_fn;
static uint64_t stack[1];
static int64_t* result;
static void* run(void* arg) {
  (void)arg;
  result[0] = call_fn("tvmffi_kernel_test::gil_probe", "", stack);
  __atomic_store_n(&result[1], 1, __ATOMIC_SEQ_CST);
  return NULL;
}
int probe_start_k(int64_t* report, int64_t call, int64_t empty, int64_t data_ptr,
                  int64_t dtype, int64_t device) {
  int64_t size = 1, stride = 1;
  void* flag = NULL;
  void* data = NULL;
  if (((EmptyStrided)(intptr_t)empty)(1, &size, &stride, (int32_t)dtype, (int32_t)device, 0,
                                      &flag) != 0) {
    return -1;
  }
  if (((DataPtr)(intptr_t)data_ptr)(flag, &data) != 0) return -1;
  *(int32_t*)data = 0;
  result = report;
  report[0] = -1;
  report[1] = 0;
  report[2] = (int64_t)(intptr_t)data;
  call_fn = (CallDispatcher)(intptr_t)call;
  stack[0] = (uint64_t)(uintptr_t)flag; /* the dispatcher call takes the handle over */
  return pthread_create(&thread, NULL, run, NULL) == 0 ? 0 : -1;
}
int probe_join_k(int64_t* report) {
  (void)report;
  pthread_join(thread, NULL);
  return 0;
}
"""


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ops-torch-kernel")


@pytest.fixture(scope="module")
def axpby(cache: Path) -> Any:
    fn = codegen.inline(AXPBY, AXPBY_BODY, output_dir=cache)
    return tvmffi.torch.register_op("tvmffi_kernel_test::axpby", fn)


@pytest.fixture(scope="module")
def cpp_axpby(cache: Path) -> Any:
    mod = tvmffi.cpp.load_inline(
        "ops_kernel_cpp_axpby",
        cpp_sources=cpp_axpby_source("k_cpp_axpby"),
        functions=["k_cpp_axpby"],
        build_directory=str(cache / "cpp"),
    )
    return tvmffi.torch.register_op("tvmffi_kernel_test::cpp_axpby", mod.k_cpp_axpby, CPP_AXPBY)


def _msg(sig: Signature, text: str) -> str:
    return f"{text} when calling: `{sig}`"


def test_the_kernel_is_registered_from_cpp(axpby: Any, cpp_axpby: Any) -> None:
    assert _torch_kernel.library() is not None
    for name in ("axpby", "cpp_axpby"):
        dump = torch._C._dispatch_dump(f"tvmffi_kernel_test::{name}")
        line = next(x for x in dump.splitlines() if x.startswith("CompositeExplicitAutograd"))
        assert "kernel.cc" in line, dump


def test_no_python_frame_in_an_eager_call(axpby: Any) -> None:
    x, y = torch.arange(4, dtype=torch.float32), torch.ones(4)
    axpby(x, y, 2.0)  # warm
    calls: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            calls.append(f"{frame.f_code.co_filename}:{frame.f_code.co_name}")

    sys.setprofile(profile)
    try:
        out = torch.ops.tvmffi_kernel_test.axpby(x, y, 2.0)
    finally:
        sys.setprofile(None)
    torch.testing.assert_close(out, 2 * x + y)
    # torch.ops' own __call__ (torch/_ops.py) and nothing of tvmffi's (the Python
    # kernel was a frame `<tvmffi.torch op k_axpby>`, torch.empty_like its call).
    assert calls, "the profiler saw no call at all"
    assert all(c.replace(os.sep, "/").split(":")[0].endswith("torch/_ops.py") for c in calls), calls


def test_eager_call_completes_while_another_thread_holds_the_gil(cache: Path) -> None:
    # A thread without the GIL calls the operator (through the dispatcher's C
    # entry point) while this test's holder thread keeps the GIL (a switch
    # interval of 1000 s, no blocking call) until the call has returned, or a
    # minute passes: a call that needs the GIL anywhere (the Python kernel, or
    # the kernel's own work) cannot return before the holder gives up.
    mod = codegen.build(
        [(PROBE, "gil_probe_k"), (START, "probe_start_k"), (JOIN, "probe_join_k")],
        sources=[PROBE_SOURCE],
        name="ops_gil_probe",
        output_dir=cache,
    )
    op = tvmffi.torch.register_op("tvmffi_kernel_test::gil_probe", mod.gil_probe)
    flag = torch.ones(1, dtype=torch.int32)
    op(flag)  # flag is 1: the kernel answers at once
    assert flag.item() == 2
    libtorch = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
    libtorch.aoti_torch_dtype_int32.restype = ctypes.c_int32
    libtorch.aoti_torch_device_type_cpu.restype = ctypes.c_int32
    addresses = [
        ctypes.cast(getattr(libtorch, f"aoti_torch_{name}"), ctypes.c_void_p).value
        for name in ("call_dispatcher", "empty_strided", "get_data_ptr")
    ]
    codes = [libtorch.aoti_torch_dtype_int32(), libtorch.aoti_torch_device_type_cpu()]
    report = torch.zeros(3, dtype=torch.int64)
    cells = (ctypes.c_int64 * 3).from_address(report.data_ptr())
    start = mod.probe_start
    start.release_gil = False  # the holder keeps the GIL while it starts the caller
    go = threading.Event()
    outcome: list[str] = []

    def holder() -> None:
        go.wait()
        start(report, *addresses, *codes)
        ctypes.c_int32.from_address(cells[2]).value = 1
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if cells[1] == 1:
                outcome.append("returned while the GIL was held")
                break
        else:
            outcome.append("no return")
        mod.probe_join(report)  # releases the GIL: a waiting call can finish

    old = sys.getswitchinterval()
    thread = threading.Thread(target=holder)
    thread.start()
    sys.setswitchinterval(1000.0)
    try:
        go.set()
    finally:
        thread.join()
        sys.setswitchinterval(old)
    assert outcome == ["returned while the GIL was held"]
    assert cells[0] == 0  # the dispatcher call succeeded


BAD_CALLS = [
    ("y shape", lambda: (torch.ones(4), torch.ones(5))),
    ("x ndim", lambda: (torch.ones(2, 2), torch.ones(2))),
    ("x 0-d", lambda: (torch.tensor(1.0), torch.ones(2))),
    ("y dtype", lambda: (torch.ones(4), torch.ones(4, dtype=torch.float16))),
    ("y complex", lambda: (torch.ones(4), torch.ones(4, dtype=torch.complex64))),
    ("x strides", lambda: (torch.ones(8)[::2], torch.ones(4))),
    ("y bool", lambda: (torch.ones(3), torch.ones(3, dtype=torch.bool))),
]


@pytest.mark.parametrize("case", BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
@pytest.mark.parametrize("which", ["codegen", "load_inline"])
def test_eager_errors_are_the_signatures(
    axpby: Any, cpp_axpby: Any, which: str, case: tuple[str, Callable[[], Any]]
) -> None:
    # codegen's function checks itself (the kernel only reads sizes); the
    # load_inline one does not (the kernel checks, Python words the error).
    op = axpby if which == "codegen" else cpp_axpby
    x, y = case[1]()
    with pytest.raises(ValueError) as eager:
        op(x, y, 2.0)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode, pytest.raises(ValueError) as fake:
        op(mode.from_tensor(x), mode.from_tensor(y), 2.0)
    assert type(eager.value) is ValueError
    assert str(eager.value) == str(fake.value)
    sig = AXPBY if which == "codegen" else CPP_AXPBY
    assert str(eager.value).endswith(f" when calling: `{sig}`")


def test_ffi_error_kinds_reach_python() -> None:
    def fail(x: Any, k: int) -> None:
        if k == 0:
            raise TypeError("kernel says type")
        if k == 1:
            raise ValueError("kernel says value")
        raise KeyError("kernel says key")

    sig = Signature("kinds", [Tensor("x", [N], "float32"), Scalar("k", "int64")])
    op = tvmffi.torch.register_op("tvmffi_kernel_test::kinds", tvmffi.convert(fail), sig)
    x = torch.ones(2)
    with pytest.raises(TypeError) as info:
        op(x, 0)
    assert str(info.value) == "kernel says type"
    with pytest.raises(ValueError) as info2:
        op(x, 1)
    assert str(info2.value) == "kernel says value"
    # torch has no KeyError: a RuntimeError that names the kind
    with pytest.raises(RuntimeError, match=r"^KeyError: .*kernel says key"):
        op(x, 2)


def test_outputs_of_constant_and_bound_sizes(cache: Path) -> None:
    m, k = tvmffi.codegen.Var("m"), tvmffi.codegen.Var("k", "int32")
    sig = Signature(
        "rowsum",
        [
            Tensor("x", [m, k], "float64", strides=[k, 1]),
            Tensor("total", [m, 1], "float64", output=True),
            Tensor("count", [2], "int64", output=True),
        ],
    )
    body = """
    for (int64_t i = 0; i < m; ++i) {
      double s = 0;
      for (int64_t j = 0; j < k; ++j) s += x[i * k + j];
      total[i] = s;
    }
    count[0] = m; count[1] = k;
    """
    fn = codegen.inline(sig, body, output_dir=cache)
    op = tvmffi.torch.register_op("tvmffi_kernel_test::rowsum", fn)
    x = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    total, count = op(x)
    torch.testing.assert_close(total, x.sum(1, keepdim=True))
    assert count.tolist() == [2, 3] and count.dtype == torch.int64
    with pytest.raises(ValueError, match="expects strides"):
        op(x.t())


def test_python_kernel_on_request_and_without_a_compiler(tmp_path: Path) -> None:
    # No C++ compiler for the kernel library (a fresh cache, so it is not just
    # loaded): one warning, and the operators keep the Python kernel.
    code = textwrap.dedent(
        """
        import warnings
        import torch, tvmffi, tvmffi.torch
        from tvmffi.codegen import Signature, Tensor, Var
        n = Var("n")
        o = Tensor("o", [n], "float32", output=True)
        sig = Signature("f", [Tensor("x", [n], "float32"), o])
        fn = tvmffi.convert(lambda x, o: None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            a = tvmffi.torch.register_op("nocxx::a", fn, sig)
            b = tvmffi.torch.register_op("nocxx::b", fn, sig)
        print(len([w for w in caught if "could not be built" in str(w.message)]))
        print(a(torch.ones(3)).shape, b(torch.ones(2)).shape)
        print("kernel.cc" in torch._C._dispatch_dump("nocxx::a"))
        """
    )
    env = dict(os.environ, CXX="false", TVM_FFI_CACHE_DIR=str(tmp_path), TVMFFI_BUILD_VERBOSE="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == ["1", "torch.Size([3]) torch.Size([2])", "False"]
