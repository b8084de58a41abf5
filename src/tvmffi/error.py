"""Errors crossing the FFI boundary.

An FFI error has a *kind* (a string such as ``"ValueError"``), a message and a
backtrace. Coming into Python it becomes an exception whose class is chosen by
kind; every such class is also a :class:`tvmffi.Error`. Going out of Python (an
exception raised in a callback) it keeps the exception's kind, message and
traceback, and the exception object itself travels with the error so the same
exception is raised again when the error comes back to Python.
"""

from __future__ import annotations

import builtins
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import TypeVar

from . import _core

__all__ = ["Error", "register_error"]


class Error(Exception):
    """Base class of exceptions raised for errors coming from the TVM FFI.

    ``kind`` holds the FFI error kind, e.g. ``"ValueError"``.
    """

    kind: str = "Error"


_KIND_TO_CLASS: dict[str, type[BaseException]] = {}
_CLASS_TO_KIND: dict[type[BaseException], str] = {}

_BUILTIN_KINDS = (
    "ValueError",
    "TypeError",
    "IndexError",
    "KeyError",
    "AttributeError",
    "NotImplementedError",
    "AssertionError",
    "RuntimeError",
    "MemoryError",
)

_E = TypeVar("_E", bound=type[BaseException])


def register_error(
    kind: str, cls: type[BaseException] | None = None
) -> Callable[[_E], _E] | type[BaseException]:
    """Map the FFI error kind ``kind`` to the exception class ``cls``.

    Errors of that kind raised on the FFI side surface as ``cls``; ``cls``
    raised in a Python callback crosses as that kind. With ``cls`` omitted it is
    a class decorator.
    """
    if not isinstance(kind, str) or not kind:
        raise TypeError("error kind must be a non-empty str")

    def register(klass: _E) -> _E:
        if not (isinstance(klass, type) and issubclass(klass, BaseException)):
            raise TypeError(f"{klass!r} is not an exception class")
        _KIND_TO_CLASS[kind] = klass
        _CLASS_TO_KIND[klass] = kind
        return klass

    if cls is None:
        return register
    return register(cls)


def _make_builtin_subclass(name: str) -> type[Error]:
    base = getattr(builtins, name)
    cls = type(name, (Error, base), {"__module__": __name__, "kind": name})
    cls.__doc__ = f"FFI error of kind {name!r}: both a {name} and a tvmffi.Error."
    return cls


for _name in _BUILTIN_KINDS:
    _cls = _make_builtin_subclass(_name)
    globals()[_name] = _cls
    _KIND_TO_CLASS[_name] = _cls
    _CLASS_TO_KIND[getattr(builtins, _name)] = _name
    _CLASS_TO_KIND[_cls] = _name


def _backtrace_note(backtrace: str) -> str | None:
    # The runtime stores the most recent call first; show it Python-style.
    lines = [line for line in backtrace.splitlines() if line.strip()]
    if not lines:
        return None
    return "FFI backtrace (most recent call last):\n" + "\n".join(reversed(lines))


def _from_ffi(kind: str, message: str, backtrace: str) -> BaseException:
    """Build the Python exception for an FFI error (called from C)."""
    cls = _KIND_TO_CLASS.get(kind, Error)
    exc = cls(message)
    if cls is Error or isinstance(exc, Error):
        exc.kind = kind  # type: ignore[attr-defined]
    note = _backtrace_note(backtrace)
    if note is not None:
        _add_note(exc, note)
    return exc


def _add_note(exc: BaseException, note: str) -> None:
    # BaseException.add_note exists from Python 3.11; keep 3.10 working too.
    notes: list[str] | None = getattr(exc, "__notes__", None)
    if notes is None:
        setattr(exc, "__notes__", [note])  # noqa: B010
    else:
        notes.append(note)


def _kind_of(exc: BaseException) -> str:
    if isinstance(exc, Error):
        return exc.kind
    for klass in type(exc).__mro__:
        kind = _CLASS_TO_KIND.get(klass)
        if kind is not None:
            return kind
    return type(exc).__name__


def _format_backtrace(tb: TracebackType | None) -> str:
    # Same line format the runtime and the official binding use, most recent
    # call first, so either binding can rebuild a Python traceback from it.
    frames = traceback.extract_tb(tb)
    return "".join(
        f'  File "{f.filename}", line {f.lineno}, in {f.name}\n' for f in reversed(frames)
    )


def _to_ffi(exc: BaseException) -> tuple[str, str, str]:
    """Describe a Python exception as (kind, message, backtrace) (called from C)."""
    # KeyError's str() is the repr of its key; the FFI message is the key text.
    keyerror = isinstance(exc, builtins.KeyError) and len(exc.args) == 1
    message = str(exc.args[0]) if keyerror else str(exc)
    return _kind_of(exc), message, _format_backtrace(exc.__traceback__)


_core.set_error_hooks(_from_ffi, _to_ffi)
