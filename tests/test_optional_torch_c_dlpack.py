"""tvmffi._optional_torch_c_dlpack: torch's DLPack C exchange API, as the official module has it."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import pytest

from tvmffi import _optional_torch_c_dlpack as tcd


def _fake_torch(available: bool, cuda: str | None, hip: str | None) -> SimpleNamespace:
    return SimpleNamespace(
        cuda=SimpleNamespace(is_available=lambda: available),
        version=SimpleNamespace(cuda=cuda, hip=hip),
    )


def test_extension_device() -> None:
    assert tcd._torch_extension_device(_fake_torch(False, "12.8", None)) == "cpu"
    assert tcd._torch_extension_device(_fake_torch(True, "12.8", None)) == "cuda"
    assert tcd._torch_extension_device(_fake_torch(True, None, "7.2")) == "rocm"
    assert tcd._torch_extension_device(_fake_torch(True, None, None)) == "cuda"


def test_legacy_attribute_is_carried_over() -> None:
    api = object()

    class Legacy:
        __c_dlpack_exchange_api__ = api

    class Neither:
        pass

    assert tcd._check_and_update_dlpack_c_exchange_api(Legacy)
    assert Legacy.__dlpack_c_exchange_api__ is api  # type: ignore[attr-defined]
    assert not tcd._check_and_update_dlpack_c_exchange_api(Neither)
    assert not hasattr(Neither, "__dlpack_c_exchange_api__")


def test_legacy_address_becomes_a_named_capsule() -> None:
    buf = ctypes.create_string_buffer(8)
    address = ctypes.addressof(buf)

    class Legacy:
        __c_dlpack_exchange_api__ = address

    assert tcd._check_and_update_dlpack_c_exchange_api(Legacy)
    capsule = Legacy.__dlpack_c_exchange_api__  # type: ignore[attr-defined]
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    assert get(capsule, b"dlpack_exchange_api") == address
    with pytest.raises(ValueError, match="nonzero DLPack exchange API address"):
        tcd._create_dlpack_exchange_api_capsule(0)


def test_load_gives_torch_the_api() -> None:
    torch = pytest.importorskip("torch")
    assert tcd.load_torch_c_dlpack_extension() is None
    assert hasattr(torch.Tensor, "__dlpack_c_exchange_api__")


# ---- torch without the API (torch < 2.10): this torch, or simulated on it --------------
# torch >= 2.10 keeps the API in torch.Tensor's class dict: deleting it gives what an older
# torch looks like to tvmffi; an older torch is run as it is. A fresh interpreter, since
# the C core decides once.
OLD_TORCH = """
import sys, torch, tvmffi
from tvmffi import _core
if hasattr(torch.Tensor, "__dlpack_c_exchange_api__"):
    sys.tvmffi_test_api = torch.Tensor.__dlpack_c_exchange_api__
    del torch.Tensor.__dlpack_c_exchange_api__
t = torch.arange(4.0)
echo = tvmffi.get_global_func("testing.echo")
assert torch.equal(torch.from_dlpack(echo(t)), t)
# Whatever the route: a tensor that requires grad crosses (torch's Python __dlpack__
# refuses it; its C-level export, which the protocol route uses for torch, does not),
# and a lazy conjugate is refused.
w = torch.ones(3, requires_grad=True)
back = echo(w)
back = back if isinstance(back, torch.Tensor) else torch.from_dlpack(back)
assert back.tolist() == [1.0, 1.0, 1.0]
try:
    echo(torch.zeros(2, dtype=torch.complex64).conj())
    raise AssertionError("a lazy conjugate crossed")
except ValueError:
    pass
print(_core._tensor_route(torch.Tensor)[0], sys.modules.get("torch_c_dlpack_ext") is not None)
"""
# As if torch-c-dlpack-ext were not installed (an installed one may have a build for an
# older torch, and would supply the API before any build is tried).
WITHOUT_ADDON_PACKAGE = 'import sys\nsys.modules["torch_c_dlpack_ext"] = None\n'


def _torch_has_its_own_api() -> bool:
    """Whether torch itself has the DLPack C exchange API (torch >= 2.10)."""
    torch = pytest.importorskip("torch")
    major, minor = (int(p) for p in torch.__version__.split(".")[:2])
    return (major, minor) >= (2, 10)


def _run_old_torch(
    pythonpath: str | None = None, without_package: bool = False, **env_vars: str
) -> list[str]:
    import os
    import subprocess
    import sys

    pytest.importorskip("torch")
    env = dict(os.environ, **env_vars)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    script = (WITHOUT_ADDON_PACKAGE if without_package else "") + OLD_TORCH
    proc = subprocess.run(
        [sys.executable, "-W", "always", "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.split() + (["warned"] if "RuntimeWarning" in proc.stderr else [])


def test_torch_without_the_api_and_the_switch_off_keeps_the_python_protocol() -> None:
    # TVM_FFI_DISABLE_TORCH_C_DLPACK (the official switch): no addon is looked for or
    # built; tensors still cross, through torch's __dlpack__.
    assert _run_old_torch(TVM_FFI_DISABLE_TORCH_C_DLPACK="1") == ["protocol", "False"]


@pytest.mark.slow  # compiles a torch C++ extension (minutes on two cores)
def test_torch_without_the_api_builds_the_addon_once_into_the_cache(tmp_path: object) -> None:
    # No addon package build for this torch: the addon is compiled against the installed
    # torch by the official build script, into the cache under the official name, and
    # supplies the API; a second process loads the cached build instead of compiling.
    import pathlib

    cache = pathlib.Path(str(tmp_path))
    got = _run_old_torch(without_package=True, TVM_FFI_CACHE_DIR=str(cache))
    assert got == ["exchange", "False"]
    (built,) = cache.glob("libtorch_c_dlpack_addon_torch*-cpu-*.so")
    stamp = built.stat().st_mtime_ns
    got = _run_old_torch(without_package=True, TVM_FFI_CACHE_DIR=str(cache))
    assert got == ["exchange", "False"]
    assert built.stat().st_mtime_ns == stamp


def test_torch_without_the_api_and_a_failed_build_warns_and_keeps_the_protocol(
    tmp_path: object,
) -> None:
    # The cache directory cannot be made (a file is in the way): the build fails, a
    # RuntimeWarning says so, and tensors take torch's __dlpack__.
    import pathlib

    blocker = pathlib.Path(str(tmp_path)) / "not-a-dir"
    blocker.write_text("")
    got = _run_old_torch(without_package=True, TVM_FFI_CACHE_DIR=str(blocker / "cache"))
    assert got == ["protocol", "False", "warned"]


def test_torch_without_the_api_gets_it_from_the_addon_package(tmp_path: object) -> None:
    # The addon package, where it has a build for the torch in use, sets the API on
    # torch.Tensor when imported. tvmffi imports it the first time it meets a torch
    # tensor without the API. The package here stands in for such a build (this venv's
    # torch has none) by setting torch's own API back.
    import pathlib

    if not _torch_has_its_own_api():
        pytest.skip("the stand-in package sets torch's own API back, which torch < 2.10 lacks")

    pkg = pathlib.Path(str(tmp_path)) / "torch_c_dlpack_ext"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import sys, torch\ntorch.Tensor.__dlpack_c_exchange_api__ = sys.tvmffi_test_api\n"
    )
    assert _run_old_torch(str(tmp_path)) == ["exchange", "True"]
