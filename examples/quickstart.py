"""A tour of tvmffi: runtime, devices, dtypes, functions, callbacks, errors.

Run with ``make demo``.
"""

from __future__ import annotations

import tvmffi
import tvmffi.testing as testing

print(f"tvmffi {tvmffi.__version__} on TVM FFI runtime {tvmffi.tvm_ffi_version()}")
print(f"runtime library: {tvmffi.lib_path()}")

# Devices and data types are plain values that cross the ABI unchanged.
dev = tvmffi.Device("cuda:1")
print(f"device {dev!s}: type={dev.type} index={dev.index} dlpack code={dev.dlpack_device_type}")
dt = tvmffi.DataType("float32x4")
print(f"dtype {dt}: code={dt.code} bits={dt.bits} lanes={dt.lanes} itemsize={dt.itemsize}")

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

print(f"{len(tvmffi.list_global_func_names())} global functions are registered")
