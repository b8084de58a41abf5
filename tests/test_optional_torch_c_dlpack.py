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
