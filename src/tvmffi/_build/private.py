"""Build caches are trusted only when private to this user, as ssh trusts a key file.

A build cache directory (``$TVM_FFI_CACHE_DIR``, ``$TVMFFI_CACHE_DIR`` or the
default under ``~/.cache``) holds libraries that tvmffi loads into the process
without rebuilding them when their stamp says they are current. Anyone who can
write there can therefore run code as this user: a directory, stamp or library
owned by another user, or writable by group or others, is refused with
:class:`UnsafeCacheError` naming the path and the fix, instead of being used.

What tvmffi creates there itself it creates private (directories ``0o700``;
stamps and libraries lose group and other write bits whatever the umask), so a
cache it made is never refused.
"""

from __future__ import annotations

import os
import stat

__all__ = ["UnsafeCacheError", "check_private", "make_private_dir", "strip_shared_write"]

_SHARED_WRITE = stat.S_IWGRP | stat.S_IWOTH


class UnsafeCacheError(RuntimeError):
    """A build cache path is not private to this user: it is not used."""


def check_private(path: str | os.PathLike[str], what: str) -> None:
    """Raise :class:`UnsafeCacheError` unless ``path`` is owned by this user and not
    writable by group or others. ``what`` names it in the message ("directory")."""
    st = os.stat(path)
    getuid = getattr(os, "getuid", None)
    if getuid is not None and st.st_uid != getuid():
        raise UnsafeCacheError(
            f"tvmffi: refusing the build cache {what} {os.fspath(path)!r}: it is owned by "
            f"uid {st.st_uid}, not by this user (uid {getuid()}); another user's files could "
            "run as you. Remove it, or point TVM_FFI_CACHE_DIR at a directory of your own."
        )
    if st.st_mode & _SHARED_WRITE:
        who = (
            "group and others"
            if st.st_mode & _SHARED_WRITE == _SHARED_WRITE
            else ("group" if st.st_mode & stat.S_IWGRP else "others")
        )
        raise UnsafeCacheError(
            f"tvmffi: refusing the build cache {what} {os.fspath(path)!r}: it is writable by "
            f"{who} (mode {stat.S_IMODE(st.st_mode):#o}), who could replace what is loaded "
            f"from it. Run: chmod go-w {os.fspath(path)!r}"
        )


def make_private_dir(path: str | os.PathLike[str]) -> None:
    """Create ``path`` (and missing parents) if needed, the last level ``0o700``; then
    :func:`check_private` it."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    check_private(path, "directory")


def strip_shared_write(path: str | os.PathLike[str]) -> None:
    """Drop group and other write bits from a file tvmffi just wrote (a umask of 002
    would leave them), so that it passes :func:`check_private` later."""
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode & _SHARED_WRITE:
        os.chmod(path, mode & ~_SHARED_WRITE)
