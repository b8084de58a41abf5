"""Hosting (tvmffi.hosting) and the official private names clients reach (issue 22).

The switch changes the process's imports, so its tests run fresh interpreters; the
private names are thin entries into tvmffi's own machinery and are checked through it.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tvmffi
import tvmffi.testing as testing
from tvmffi import core, libinfo


def run_python(code: str, host: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("TVMFFI_HOST", None)
    if host is not None:
        env["TVMFFI_HOST"] = host
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


# ---- the switch -----------------------------------------------------------------------
NO_OFFICIAL_CODE = """
    import os, sys
    from tvmffi._lib import _package_dir
    # Under the official package's own directory: a path segment named tvm_ffi elsewhere
    # (a clone folder) is not official code.
    official_dir = os.path.realpath(_package_dir()) + os.sep
    official = [m.__file__ for m in list(sys.modules.values())
                if (getattr(m, "__file__", None) or "").endswith(".py")
                and os.path.realpath(m.__file__).startswith(official_dir)]
    assert not official, official
"""


def test_pth_file_is_installed_and_inactive_unless_set() -> None:
    pth = Path(sysconfig.get_paths()["purelib"]) / "tvmffi_host.pth"
    assert pth.is_file()
    # Unset, empty and "0": the official package answers `import tvm_ffi`.
    for value in (None, "", "0"):
        code = "import tvm_ffi, sys; print(tvm_ffi.__name__, 'tvmffi' in sys.modules)"
        out = ok(run_python(code, value))
        assert out.split() == ["tvm_ffi", "False"], (value, out)


def test_env_var_hosts_the_process_and_its_subprocesses() -> None:
    code = """
        import subprocess, sys
        import tvm_ffi, tvm_ffi.core, tvm_ffi._dtype
        assert tvm_ffi.__name__ == "tvmffi" and tvm_ffi.core.__name__ == "tvmffi.core"
        assert tvm_ffi.core.Object is __import__("tvmffi").Object
        child = subprocess.run([sys.executable, "-c", "import tvm_ffi; print(tvm_ffi.__name__)"],
                               capture_output=True, text=True, check=True)
        print(child.stdout.strip())
    """
    code = textwrap.dedent(code) + textwrap.dedent(NO_OFFICIAL_CODE)
    assert ok(run_python(code, "1")).split() == ["tvmffi"]


def test_a_module_tvmffi_lacks_is_not_found_under_its_official_name() -> None:
    code = """
        try:
            import tvm_ffi.cython
        except ModuleNotFoundError as e:
            print(e.name)
    """
    assert ok(run_python(code, "1")).strip() == "tvm_ffi.cython"


def test_hosted_modules_keep_package_specs_resources_and_reload() -> None:
    # Issue 32: the hosted spec had no search locations and replaced tvmffi's own, so
    # tvm_ffi was no package to importlib (pip install . failed under TVMFFI_HOST=1),
    # importlib.resources raised TypeError and importlib.reload renamed tvmffi tvm_ffi.
    code = """
        import importlib, importlib.resources, importlib.util
        spec = importlib.util.find_spec("tvm_ffi")
        assert spec.submodule_search_locations, spec
        import tvmffi, tvmffi.core
        own, own_core = tvmffi.__spec__, tvmffi.core.__spec__
        import tvm_ffi, tvm_ffi.core
        assert tvm_ffi is tvmffi and tvmffi.__spec__ is own and tvmffi.core.__spec__ is own_core
        assert own.name == "tvmffi" and own.submodule_search_locations
        for name in ("tvmffi", "tvm_ffi"):
            assert importlib.resources.files(name).joinpath("__init__.py").is_file()
        assert importlib.reload(tvm_ffi) is tvmffi and tvmffi.__name__ == "tvmffi"
        assert tvmffi.__spec__.name == "tvmffi"
        import tvm_ffi.cpp
        assert tvm_ffi.cpp.__name__ == "tvmffi.cpp" and tvm_ffi.cpp.__spec__.name == "tvmffi.cpp"
        print("ok")
    """
    assert ok(run_python(code, "1")).strip() == "ok"


def test_host_call_hosts_then_is_idempotent() -> None:
    code = """
        import os, tvmffi
        from tvmffi import hosting
        assert not hosting.is_hosted()
        tvmffi.host()
        tvmffi.host()
        import tvm_ffi
        assert tvm_ffi is tvmffi and hosting.is_hosted()
        print(os.environ["TVMFFI_HOST"])
    """
    code = textwrap.dedent(code) + textwrap.dedent(NO_OFFICIAL_CODE)
    assert ok(run_python(code)).strip() == "1"


def test_host_refuses_once_the_official_package_was_imported() -> None:
    code = """
        import tvm_ffi, tvmffi
        try:
            tvmffi.host()
        except RuntimeError as e:
            print(e)
    """
    out = ok(run_python(code))
    assert "official tvm_ffi package was already imported" in out
    assert "(tvm_ffi" in out and "TVMFFI_HOST=1" in out


# ---- names clients import -----------------------------------------------------------
def test_dtype_module_and_codes() -> None:
    from tvmffi import _dtype

    assert _dtype.dtype is tvmffi.dtype and _dtype.float32 == "float32"
    for name, code in [("int8", 0), ("uint8", 1), ("float32", 2), ("bfloat16", 4), ("bool", 6)]:
        assert tvmffi.dtype(name).type_code == _dtype.DataTypeCode[
            {0: "INT", 1: "UINT", 2: "FLOAT", 4: "BFLOAT", 6: "BOOL"}[code]
        ]


def test_dtype_class_takes_attributes_and_the_numpy_table_converts_first() -> None:
    table = tvmffi.dtype._NUMPY_DTYPE_TO_STR  # type: ignore[attr-defined]
    assert table[np.dtype("float32")] == "float32" and table[np.dtype("bool")] == "bool"
    tvmffi.dtype.client_attr = 7  # type: ignore[attr-defined]
    try:
        assert tvmffi.dtype("int8").client_attr == 7  # type: ignore[attr-defined]
    finally:
        del tvmffi.dtype.client_attr  # type: ignore[attr-defined]
    # What a client adds wins over the built-in mapping.
    table[np.dtype("float16")] = "bfloat16"
    try:
        assert tvmffi.dtype(np.dtype("float16")) == "bfloat16"
    finally:
        table[np.dtype("float16")] = "float16"
    assert tvmffi.dtype(np.dtype("float16")) == "float16"


SET_CLASS_DEVICE = """
    import numpy as np, tvmffi
    from tvmffi import core, testing
    class MyDevice(tvmffi.Device):
        def __device_type_name__(self):
            return "my" + super().__device_type_name__()
    core._set_class_device(MyDevice)
    assert core._CLASS_DEVICE is MyDevice
    dev = tvmffi.device("cpu", 1)
    t = tvmffi.from_dlpack(np.zeros(2))
    got = [type(x) for x in (dev, tvmffi.cpu(), testing.echo(dev), t.device,
                             tvmffi.Array([dev])[0], tvmffi.Map({"d": dev})["d"])]
    assert all(c is MyDevice for c in got), got
    assert str(dev) == "mycpu:1" and repr(dev) == "device(type='mycpu', index=1)"
    try:
        core._set_class_device(int)
    except TypeError as e:
        print(e)
    core._set_class_device(tvmffi.Device)
    assert type(testing.echo(dev)) is tvmffi.Device and str(dev) == "mycpu:1"
"""


def test_set_class_device_makes_the_class_what_comes_back_everywhere() -> None:
    out = ok(run_python(SET_CLASS_DEVICE))
    assert "is not a subclass of tvmffi.Device" in out


def test_set_class_tensor_makes_the_class_what_comes_back() -> None:
    code = """
        import numpy as np, tvmffi
        from tvmffi import core, testing
        class MyTensor(tvmffi.Tensor):
            pass
        core._set_class_tensor(MyTensor)
        assert core._CLASS_TENSOR is MyTensor
        t = tvmffi.from_dlpack(np.arange(3.0))
        assert type(t) is MyTensor and type(testing.echo(t)) is MyTensor
        assert type(tvmffi.Array([t])[0]) is MyTensor
        try:
            core._set_class_tensor(tvmffi.Device)
        except TypeError as e:
            print(e)
    """
    assert "is not a subclass of tvmffi.Tensor" in ok(run_python(code))


def test_device_class_default_and_name_table() -> None:
    assert core._CLASS_DEVICE is tvmffi.Device
    assert type(tvmffi.device("cuda:1")) is tvmffi.Device
    assert tvmffi.Device._DEVICE_TYPE_TO_NAME[2] == "cuda"  # type: ignore[attr-defined]


def test_resolve_and_validate(tmp_path: Path) -> None:
    f = tmp_path / "lib.so"
    f.write_bytes(b"")
    missing = tmp_path / "nope"
    assert libinfo._resolve_and_validate([missing, f], Path.is_file) == str(f.resolve())
    assert libinfo._resolve_and_validate([missing], Path.is_file) is None
    other = tmp_path / "other"
    assert libinfo._resolve_and_validate([f], lambda p: other) == str(other)

    def boom(p: Path) -> bool:
        raise AssertionError("skipped")

    assert libinfo._resolve_and_validate([f], boom) is None
    with pytest.raises(ValueError):
        libinfo._resolve_and_validate([f], lambda p: (_ for _ in ()).throw(ValueError("x")))


def test_ffi_api_is_reached_as_an_attribute_of_the_package() -> None:
    # Clients write tvm_ffi._ffi_api.X after a bare `import tvm_ffi` (orcjit's
    # keep_module_alive path): the attribute loads it on first use, not the import.
    code = (
        "import sys, tvmffi; before = 'tvmffi._ffi_api' in sys.modules; "
        "f = tvmffi._ffi_api.ModuleGlobalsAdd; print(before, callable(f))"
    )
    assert ok(run_python(code)).strip() == "False True"
    assert callable(tvmffi._ffi_api.ModuleGlobalsAdd)  # type: ignore[attr-defined]


def _own_version() -> str:
    """pyproject.toml's version: the one place tvmffi's number is written."""
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if pyproject.is_file():  # a checkout or an unpacked sdist
        for line in pyproject.read_text(encoding="utf-8").splitlines():
            if line.startswith("version = "):
                return line.split('"')[1]
    return importlib.metadata.version("tvmffi")


def test_version_is_tvmffis_own_unhosted() -> None:
    assert tvmffi.__version__ == tvmffi.__tvmffi_version__ == _own_version()  # type: ignore[attr-defined]
    assert tvmffi.__version__ == importlib.metadata.version("tvmffi")
    assert tvmffi.__version_tuple__[:2] == tuple(int(p) for p in _own_version().split(".")[:2])  # type: ignore[attr-defined]


def test_version_is_the_runtime_package_version_hosted() -> None:
    # Clients compare tvm_ffi.__version__ with the runtime they were built for.
    code = """
        import importlib.metadata, tvm_ffi, tvmffi
        runtime = importlib.metadata.version("apache-tvm-ffi")
        assert tvm_ffi.__version__ == tvmffi.__version__ == runtime, tvm_ffi.__version__
        assert tvm_ffi._version.__version__ == runtime
        assert tvmffi.__tvmffi_version__ == importlib.metadata.version("tvmffi")
        print("OK")
    """
    assert ok(run_python(code, "1")).strip() == "OK"


def test_reflected_methods_have_names() -> None:
    pair = testing.TestIntPair(1, 2)  # type: ignore[attr-defined]
    method = pair.sum
    assert method.__name__ == "sum" and method() == 3
    assert type(pair).sum.__name__ == "sum"
    assert type(pair).sum.__qualname__ == "TestIntPair.sum"


def test_skip_unknown_objects_switch() -> None:
    from tvmffi import registry

    class Unknown(tvmffi.Object):
        pass

    with pytest.raises(ValueError, match="unknown FFI type key"):
        tvmffi.register_object("no.such.Type")(Unknown)
    registry._SKIP_UNKNOWN_OBJECTS = True  # TVM's runtime-only mode sets it
    try:
        assert tvmffi.register_object("no.such.Type")(Unknown) is Unknown
        assert "__tvm_ffi_type_index__" not in Unknown.__dict__
    finally:
        registry._SKIP_UNKNOWN_OBJECTS = False
