"""A shared build cache is used only when private to this user (issue 32, item 11).

Libraries in the cache are loaded without a rebuild when their stamp says they are
current, so whoever can write there can run code as this user: like ssh with a loose
key file, a cache directory, stamp or library owned by another user or writable by
group or others is refused with an error naming it and the fix.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

import tvmffi.cpp
from tvmffi import codegen
from tvmffi._build import UnsafeCacheError
from tvmffi.codegen import Scalar, Signature

SOURCE = "int64_t twice(int64_t x) { return 2 * x; }"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "cache"
    monkeypatch.setenv("TVM_FFI_CACHE_DIR", str(root))
    old = os.umask(0o002)  # a common umask: what tvmffi writes must still pass its check
    try:
        yield root
    finally:
        os.umask(old)


def _load() -> tvmffi.Module:
    return tvmffi.cpp.load_inline("cache_twice", cpp_sources=SOURCE, functions=["twice"])


def _add_mode(path: Path, bits: int) -> None:
    path.chmod(stat.S_IMODE(path.stat().st_mode) | bits)


def test_a_cache_tvmffi_made_is_private_and_reused(cache: Path) -> None:
    assert _load().twice(4) == 8
    (build_dir,) = cache.iterdir()
    for path in (cache, build_dir, *build_dir.glob("*.so"), *build_dir.glob(".*.stamp")):
        assert not path.stat().st_mode & (stat.S_IWGRP | stat.S_IWOTH), path
    assert _load().twice(5) == 10  # the stamp is trusted: loaded, not refused


@pytest.mark.parametrize("bits", [stat.S_IWOTH, stat.S_IWGRP])
def test_a_cache_directory_writable_by_others_is_refused(cache: Path, bits: int) -> None:
    cache.mkdir(mode=0o700)
    _add_mode(cache, bits)
    with pytest.raises(UnsafeCacheError, match=r"cache directory .* writable by .*chmod go-w"):
        _load()


def test_a_loose_build_directory_stamp_or_library_is_refused(cache: Path) -> None:
    _load()
    (build_dir,) = cache.iterdir()
    (lib,) = build_dir.glob("*.so")
    (stamp,) = build_dir.glob(".*.stamp")
    for path, what in ((build_dir, "directory"), (stamp, "stamp"), (lib, "library")):
        mode = stat.S_IMODE(path.stat().st_mode)
        _add_mode(path, stat.S_IWOTH)
        with pytest.raises(UnsafeCacheError, match=f"build cache {what} .*writable by others"):
            _load()
        path.chmod(mode)
    assert _load().twice(1) == 2


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")
def test_a_cache_owned_by_another_user_is_refused(cache: Path) -> None:
    _load()
    (build_dir,) = cache.iterdir()
    (lib,) = build_dir.glob("*.so")
    os.chown(lib, 4321, -1)
    with pytest.raises(UnsafeCacheError, match=r"build cache library .*owned by uid 4321"):
        _load()
    os.chown(lib, os.getuid(), -1)
    os.chown(cache, 4321, -1)
    with pytest.raises(UnsafeCacheError, match=r"build cache directory .*owned by uid 4321"):
        _load()


def test_codegen_cache_is_checked_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "codegen-cache"
    root.mkdir(mode=0o700)
    _add_mode(root, stat.S_IWOTH)
    monkeypatch.setenv("TVMFFI_CACHE_DIR", str(root))
    sig = Signature("ident", [Scalar("v", "int32")])
    with pytest.raises(UnsafeCacheError, match="writable by others"):
        codegen.build(
            [(sig, "ident_kernel")],
            sources=["int ident_kernel(int v) { return v; }"],
            name="ident",
        )


def test_a_directory_the_caller_names_is_theirs(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    _add_mode(out, stat.S_IWGRP)
    mod = tvmffi.cpp.load_inline(
        "cache_named", cpp_sources=SOURCE, functions=["twice"], build_directory=str(out)
    )
    assert mod.twice(3) == 6


def test_the_suite_builds_into_a_temporary_cache_never_home(session_cache_dir: str) -> None:
    """conftest points every build cache at one temporary directory (issue 43): a test
    run never writes the user's ~/.cache."""
    from tvmffi import _pickle
    from tvmffi.codegen import _library
    from tvmffi.cpp import extension

    home_cache = os.path.join(os.path.expanduser("~"), ".cache")
    for root in (extension._cache_root(), _library._cache_root(None), _pickle._cache_dir()):
        assert os.path.commonpath([root, session_cache_dir]) == session_cache_dir, root
        assert not root.startswith(home_cache + os.sep), root
