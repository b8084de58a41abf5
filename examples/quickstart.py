"""A tour of tvmffi: runtime, devices, dtypes, functions, callbacks, errors, and codegen.

Run with ``make demo``.
"""

from __future__ import annotations

from importlib.metadata import version

import tvmffi
import tvmffi.testing as testing

# tvmffi loads the runtime library of the installed apache-tvm-ffi wheel.
print(f"tvmffi {tvmffi.__version__} on the apache-tvm-ffi {version('apache-tvm-ffi')} runtime")
print(f"runtime library: {tvmffi.lib_path()}")

# Devices and data types are plain values that cross the ABI unchanged.
dev = tvmffi.device("cuda:1")
print(f"{dev!r}: type={dev.type} index={dev.index} dlpack code={dev.dlpack_device_type()}")
dt = tvmffi.float32.with_lanes(4)  # a dtype is a str: "float32x4"
print(f"{dt!r}: type_code={dt.type_code} bits={dt.bits} lanes={dt.lanes} itemsize={dt.itemsize}")

# Global functions registered by any library in the process are callable.
echo = tvmffi.get_global_func("testing.echo")
for value in (None, True, 42, 2**80, 1.5, "hi", "a longer string", b"\x00bytes", dev, dt):
    print(f"echo({value!r}) -> {echo(value)!r}")
print(f"testing.add_one(41) -> {testing.add_one(41)}")


# Python functions become FFI functions: registered, or passed as arguments.
@tvmffi.register_global_func("demo.scale")
def scale(x: float, factor: float) -> float:
    return x * factor


print(f"demo.scale through the registry -> {tvmffi.get_global_func('demo.scale')(3.0, 2.5)}")
print(f"testing.apply(lambda, 20) -> {testing.apply(lambda v: v + 22, 20)}")

# Errors cross in both directions with their kind, message and traceback.
try:
    testing.test_raise_error("ValueError", "raised in C++")
except ValueError as err:
    print(f"caught {type(err).__name__} (a tvmffi.Error: {isinstance(err, tvmffi.Error)}): {err}")


def failing(_: int) -> None:
    raise KeyError("raised in a Python callback")


try:
    testing.apply(failing, 1)
except KeyError as err:
    print(f"the callback's own exception came back through C++: {err!r}")

# The exception carries the runtime's error object, as with the official binding.
try:
    testing.test_raise_error("TypeError", "with its FFI error object")
except TypeError as err:
    ffi_error = err.__tvm_ffi_error__  # type: ignore[attr-defined]
    print(f"__tvm_ffi_error__: kind={ffi_error.kind!r} message={ffi_error.message!r}")

# Objects and containers, with the official binding's classes and semantics.
pair = testing.TestIntPair(1, 2)  # a registered class: fields, methods, __ffi_init__
print(f"{pair!r}: a + b = {pair.sum()}, same handle back: {echo(pair).is_(pair)}")
arr = tvmffi.Array([1, "two", [3.0]])
print(f"{arr!r}: arr[1:] is a list {arr[1:]!r}; arr + [4] -> {arr.__add__([4])!r}")
print(f"structural ==: {arr == tvmffi.Array([1, 'two', [3.0]])}, hashable: {hash(arr) != 0}")
d = tvmffi.Dict({"a": 1})
d["b"] = 2
print(f"{d!r}: pop('a') -> {d.pop('a')}, get('zz', 0) -> {d.get('zz', 0)}")
long_text = echo("a string longer than seven bytes")
print(f"heap strings come back as {type(long_text).__name__} keeping their FFI object")

# Explicit conversion, and the registry's metadata (type schemas of C++ functions).
print(f"convert([1, 2, 3]) -> {tvmffi.convert([1, 2, 3])!r}")
meta = tvmffi.get_global_func_metadata("testing.schema_id_int")
print(f"testing.schema_id_int: {tvmffi.core.TypeSchema.from_json_str(meta['type_schema'])}")
tvmffi.remove_global_func("demo.scale")
print(f"{len(tvmffi.registry.list_global_func_names())} global functions are registered")


# ---- tvmffi.codegen: a C kernel body -> a validated FFI function -------------------------
def codegen_demo() -> None:
    """Write a kernel as a C body, get a validated FFI function, call it zero-copy."""
    try:
        import numpy as np
    except ImportError:
        print("(numpy is not installed: skipping the codegen demo; `make test` installs it)")
        return
    from tvmffi import codegen

    # Describe the parameters, write the loop: tvmffi generates `__tvm_ffi_axpy`, which
    # checks every argument, compiles it with the system C compiler (cached under
    # ~/.cache/tvmffi/codegen or $TVMFFI_CACHE_DIR, so the next run only loads it).
    n = codegen.Var("n")
    sig = codegen.Signature(
        "axpy",
        [
            codegen.Tensor("x", [n], "float32"),
            codegen.Tensor("y", [n], "float32"),
            codegen.Scalar("alpha", "float32"),
        ],
    )
    axpy = codegen.inline(sig, "for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];")
    x = np.arange(4, dtype=np.float32)
    y = np.ones(4, dtype=np.float32)
    axpy(x, y, 2.0)  # zero-copy: the kernel writes into y's own buffer
    print(f"codegen: {sig}")
    print(f"axpy on NumPy arrays -> y = {y}")
    try:
        import torch
    except ImportError:
        print("(torch is not installed: skipping the torch call)")
    else:
        ty = torch.zeros(4)
        axpy(torch.arange(4.0), ty, 0.5)
        print(f"axpy on torch tensors -> y = {ty.tolist()}")
    try:
        axpy(x, np.ones(3, dtype=np.float32), 2.0)
    except ValueError as err:
        print(f"wrong shape -> ValueError: {err}")
    try:
        axpy(x.astype(np.float64), y, 2.0)
    except ValueError as err:
        print(f"wrong dtype -> ValueError: {err}")


codegen_demo()
