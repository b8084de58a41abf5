"""An advisory, exclusive lock on a file, held by one process at a time.

Build steps that write into one directory take it so that concurrent processes
building the same thing wait for each other instead of interleaving writes. The
lock is ``flock(2)`` on Unix (released by the kernel when the process dies, so a
crashed builder never leaves a stale lock) and ``msvcrt.locking`` on Windows.
"""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt
else:
    import fcntl


def _unlock(fd: int) -> None:
    """Give up the lock held through ``fd`` (the descriptor stays open)."""
    if sys.platform == "win32":  # pragma: no cover
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)


__all__ = ["FileLock"]


class FileLock:
    """An exclusive advisory lock on ``lock_file_path`` (created if missing).

    Use it as a context manager (which waits for the lock) or call
    :meth:`acquire` (which does not wait) and :meth:`release`. One instance holds
    the lock at most once: a second :meth:`acquire` on it returns ``False``.
    """

    def __init__(self, lock_file_path: str | os.PathLike[str]) -> None:
        """Describe a lock on ``lock_file_path``; nothing is opened until it is acquired."""
        self.lock_file_path = os.fspath(lock_file_path)
        self._file_descriptor: int | None = None

    def __enter__(self) -> FileLock:
        """Wait for the lock, then enter the guarded block."""
        self.blocking_acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        """Release the lock; exceptions from the block propagate."""
        self.release()

    def _try_lock(self, blocking: bool) -> bool:
        fd = os.open(self.lock_file_path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            if sys.platform == "win32":  # pragma: no cover
                msvcrt.locking(fd, msvcrt.LK_LOCK if blocking else msvcrt.LK_NBLCK, 1)
            else:
                fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            if blocking:
                raise
            return False
        self._file_descriptor = fd
        return True

    def acquire(self) -> bool:
        """Take the lock without waiting; return whether it was taken.

        ``False`` when another process (or another instance) holds it, or when this
        instance already holds it. Errors other than "held elsewhere" (a missing
        directory, no permission) raise ``RuntimeError``.
        """
        if self._file_descriptor is not None:
            return False
        try:
            return self._try_lock(blocking=False)
        except OSError as err:
            raise RuntimeError(f"cannot lock {self.lock_file_path!r}: {err}") from err

    def blocking_acquire(self, timeout: float | None = None, poll_interval: float = 0.1) -> bool:
        """Wait until the lock is taken and return ``True``.

        With ``timeout`` (seconds) it raises ``TimeoutError`` when the lock is still
        held elsewhere after that long, polling every ``poll_interval`` seconds;
        without it, it sleeps in the kernel until the holder releases the lock.
        Raises ``RuntimeError`` when this instance already holds the lock.
        """
        if self._file_descriptor is not None:
            raise RuntimeError(f"the lock {self.lock_file_path!r} is already held by this instance")
        if timeout is None and sys.platform != "win32":
            try:
                return self._try_lock(blocking=True)
            except OSError as err:
                raise RuntimeError(f"cannot lock {self.lock_file_path!r}: {err}") from err
        deadline = time.monotonic() + (timeout if timeout is not None else float("inf"))
        while not self.acquire():
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"could not lock {self.lock_file_path!r} within {timeout} seconds"
                )
            time.sleep(poll_interval)
        return True

    def release(self) -> None:
        """Release the lock if this instance holds it (otherwise do nothing)."""
        fd, self._file_descriptor = self._file_descriptor, None
        if fd is not None:
            try:
                _unlock(fd)
            finally:
                os.close(fd)
