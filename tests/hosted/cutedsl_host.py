"""CuTe DSL (nvidia-cutlass-dsl) host functions compiled with ``--enable-tvm-ffi``, on the CPU.

Run plain (the official binding) or hosted (``TVMFFI_HOST=1``): the same script, the
same checks. Host-only ``@cute.jit`` functions (no kernel launch) are compiled by CuTe
DSL into TVM FFI functions and called with scalars, tensors (torch, NumPy, and
``tvm_ffi.from_dlpack`` tensors), a ``Shape``, defaults and keywords (CuTe DSL wraps
those with ``tvm_ffi.utils.kwargs_wrapper``), no argument at all (a ``tvm_ffi.Function``
subclass that takes over its function with ``__move_handle_from__``), and wrong
arguments. One function is exported to an object file and loaded back twice: by CuTe
DSL's ``load_module`` (``Function.__from_extern_c__``) and, linked into a shared
library against ``libinfo.find_libtvm_ffi()``, by ``tvm_ffi.load_module``.

Prints one ``RESULT <json>`` line (what the test compares between the modes) and OK;
prints ``SKIP: <why>`` instead when CuTe DSL cannot compile here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import torch
import tvm_ffi

OPT = "--enable-tvm-ffi"
HOSTED = os.environ.get("TVMFFI_HOST", "") not in ("", "0")

try:
    import cutlass
    import cutlass.cute as cute

    @cute.jit
    def probe(out: cute.Tensor) -> None:
        out[0] = cutlass.Float32(1.0)

    _t = torch.zeros(1)
    cute.compile(probe, cute.runtime.from_dlpack(_t, enable_tvm_ffi=True), options=OPT)(_t)
except Exception as err:  # any failure to compile here means: cannot run
    print(f"SKIP: CuTe DSL cannot compile a host function here: {type(err).__name__}: {err}")
    sys.exit(0)


@cute.jit
def scale_into(out: cute.Tensor, a: cutlass.Int32, b: cutlass.Float32) -> None:
    for i in cutlass.range(cute.size(out)):
        out[i] = cutlass.Float32(a) * b + out[i]


@cute.jit
def add3(x: cute.Tensor, y: cute.Tensor, z: cute.Tensor) -> None:
    for i in cutlass.range(cute.size(z)):
        z[i] = x[i] + y[i]


@cute.jit
def noarg() -> None:
    cute.printf("noarg ran\n")


@cute.jit
def with_default(out: cute.Tensor, v: cutlass.Float32 = 1.5) -> None:
    for i in cutlass.range(cute.size(out)):
        out[i] = v


@cute.jit
def shape_size(out: cute.Tensor, s: cute.Shape) -> None:
    out[0] = cutlass.Float32(cute.size(s))


def dyn(t: Any) -> Any:
    return cute.runtime.from_dlpack(t, enable_tvm_ffi=True).mark_layout_dynamic()


def builtin_type(err: BaseException) -> str:
    """The builtin exception class an error is (both bindings subclass them)."""
    return next(t.__name__ for t in type(err).__mro__ if t.__module__ == "builtins")


res: dict[str, Any] = {}
x = torch.zeros(4, dtype=torch.float32)

# scalars, then a tvm_ffi tensor made by from_dlpack
f = cute.compile(scale_into, dyn(x), 1, 1.0, options=OPT)
f(x, 3, 0.5)
res["scalars"] = x.tolist()
f(tvm_ffi.from_dlpack(x), 2, 0.25)
res["from_dlpack"] = x.tolist()
assert res["scalars"] == [1.5] * 4 and res["from_dlpack"] == [2.0] * 4, res

# NumPy arrays, and a mix of torch, NumPy-backed and tvm_ffi tensors
a, b, c = np.arange(4, dtype="float32"), np.ones(4, dtype="float32"), np.zeros(4, dtype="float32")
g = cute.compile(add3, dyn(a), dyn(b), dyn(c), options=OPT)
g(a, b, c)
res["numpy"] = c.tolist()
g(tvm_ffi.from_dlpack(torch.ones(4)), torch.ones(4), torch.from_numpy(c))
res["mixed"] = c.tolist()
assert res["numpy"] == [1.0, 2.0, 3.0, 4.0] and res["mixed"] == [2.0] * 4, res

# no argument: a tvm_ffi.Function subclass holding the moved-in function
h = cute.compile(noarg, options=OPT)
assert isinstance(h, tvm_ffi.Function) and h.__chandle__() != 0
res["noarg"] = repr(h())

# defaults and keywords (kwargs_wrapper), a Shape
k = cute.compile(with_default, dyn(x), options=OPT)
k(x)
res["default"] = x.tolist()
k(x, v=2.5)
res["keyword"] = x.tolist()
one = torch.zeros(1)
s = cute.compile(
    shape_size, cute.runtime.from_dlpack(one), (cutlass.Int32(2), cutlass.Int32(3)), options=OPT
)
s(one, (4, 5))
res["shape_tuple"] = one.tolist()
s(one, tvm_ffi.Shape([6, 7]))
res["shape_ffi"] = one.tolist()
assert res["default"] == [1.5] * 4 and res["keyword"] == [2.5] * 4, res
assert res["shape_tuple"] == [20.0] and res["shape_ffi"] == [42.0], res

# wrong arguments: the same error class and message from both bindings
errors = []
for call in (
    lambda: f(x, "a", 1.0),
    lambda: f(x, 1),
    lambda: f(torch.zeros(4, dtype=torch.int32), 1, 1.0),
    lambda: f(torch.zeros(2, 2), 1, 1.0),
    lambda: k(x, w=1.0),
    lambda: h(1),
):
    try:
        call()
        errors.append(["no error"])
    except Exception as err:
        errors.append([builtin_type(err), str(err)])
res["errors"] = errors
assert all(e[0] in ("TypeError", "ValueError") for e in errors), errors

# export to an object file; load it with CuTe DSL, and as a shared library with tvm_ffi
work = tempfile.mkdtemp()
obj = os.path.join(work, "add3.o")
g.export_to_c(obj, function_name="add3")
z = torch.zeros(4)
loaded = cute.runtime.load_module(obj, enable_tvm_ffi=True).add3
assert type(loaded) is tvm_ffi.Function
loaded(torch.arange(4.0), torch.ones(4), z)
res["load_object"] = z.tolist()
lib = os.path.join(work, "add3.so")
libdir = os.path.dirname(str(tvm_ffi.libinfo.find_libtvm_ffi()))
subprocess.run(["gcc", "-shared", "-o", lib, obj, f"-L{libdir}", "-ltvm_ffi"], check=True)
mod = tvm_ffi.load_module(lib)
z.zero_()
mod.add3(torch.ones(4), torch.ones(4), z)
res["load_module"] = z.tolist()
assert res["load_object"] == [1.0, 2.0, 3.0, 4.0] and res["load_module"] == [2.0] * 4, res

if HOSTED:
    from _common import check_hosted

    check_hosted()
    assert tvm_ffi.__name__ == "tvmffi"
print("RESULT " + json.dumps(res, sort_keys=True), flush=True)
print("OK", flush=True)
