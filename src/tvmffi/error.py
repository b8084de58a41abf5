"""Errors crossing the FFI boundary.

An FFI error has a *kind* (a string such as ``"ValueError"``), a message and a
backtrace. Coming into Python it becomes an exception whose class is chosen by
kind; every such class is also a :class:`tvmffi.Error`. Going out of Python (an
exception raised in a callback) it keeps the exception's kind, message and
traceback, and the exception object itself travels with the error so the same
exception is raised again when the error comes back to Python.

Every exception coming from the FFI carries the runtime's error object as
``__tvm_ffi_error__`` (a :class:`ErrorObject`, ``tvmffi.core.Error``, with
``kind``, ``message`` and ``backtrace``), as in the official binding.
"""

from __future__ import annotations

import builtins
import contextlib
import re
import traceback
import weakref
from types import TracebackType
from typing import Any

from . import _core
from ._core import Object
from .object import register_object

__all__ = ["Error", "ErrorObject", "register_error"]


class Error(Exception):
    """Base class of exceptions raised for errors coming from the TVM FFI.

    ``kind`` holds the FFI error kind, e.g. ``"ValueError"``.
    """

    kind: str = "Error"


@register_object("ffi.Error")
class ErrorObject(Object):
    """The runtime's error object (``ffi.Error``); ``tvmffi.core.Error`` in official terms.

    ``ErrorObject(kind, message, backtrace)`` makes one. An exception raised by
    an FFI call holds its error object as ``__tvm_ffi_error__``.
    """

    def __init__(self, kind: str, message: str, backtrace: str) -> None:
        _core._error_init(self, kind, message, backtrace)

    @property
    def kind(self) -> str:
        """The error kind, e.g. ``"ValueError"``."""
        kind: str = _core._error_fields(self)[0]
        return kind

    @property
    def message(self) -> str:
        """The error message."""
        message: str = _core._error_fields(self)[1]
        return message

    @property
    def backtrace(self) -> str:
        """The backtrace, innermost frame first (the runtime's convention)."""
        backtrace: str = _core._error_fields(self)[2]
        return backtrace

    @property
    def extra_context(self) -> Any:
        """The payload attached to the error (e.g. the Python exception it came from), or None."""
        return _core._error_extra_context(self)

    def update_backtrace(self, backtrace: str) -> None:
        """Replace the stored backtrace with ``backtrace``."""
        _core._error_update_backtrace(self, backtrace)

    def py_error(self) -> BaseException:
        """The Python exception for this error (its class chosen by kind)."""
        return _from_ffi(self, None)

    def __reduce__(self) -> tuple[Any, ...]:
        # By value: an error is its three strings (extra_context is dropped).
        if self.__chandle__() == 0:
            return (_empty_error, ())
        return (ErrorObject, _core._error_fields(self))


def _empty_error() -> ErrorObject:
    return ErrorObject.__new__(ErrorObject)


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


def _bind_kind(kind: str | None, klass: Any) -> Any:
    """Make ``klass`` the exception of FFI errors of ``kind`` (its name when ``None``)."""
    if not (isinstance(klass, type) and issubclass(klass, BaseException)):
        raise TypeError(f"register_error expects an exception class, got {klass!r}")
    kind = klass.__name__ if kind is None else kind
    _KIND_TO_CLASS[kind] = klass
    _CLASS_TO_KIND[klass] = kind
    # A subclass seen before may now resolve to this kind: forget what was cached.
    _CLASS_FACTS.clear()
    return klass


def register_error(name_or_cls: Any = None, cls: Any = None) -> Any:
    """Raise ``cls`` for FFI errors of a kind, and send ``cls`` out as that kind.

    Three spellings, as in the official binding: ``@register_error`` (the kind is the
    class name), ``@register_error("Kind")``, and ``register_error("Kind", cls)``, which
    returns ``cls``. Anything but an exception class raises ``TypeError``.
    """
    if isinstance(name_or_cls, type):
        return _bind_kind(None, name_or_cls)
    if name_or_cls is not None and not (isinstance(name_or_cls, str) and name_or_cls):
        raise TypeError(f"register_error expects a kind name or a class, got {name_or_cls!r}")
    if cls is not None:
        return _bind_kind(name_or_cls, cls)
    return lambda klass: _bind_kind(name_or_cls, klass)


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

# An unknown kind raises a RuntimeError, as in the official binding (here also
# a tvmffi.Error whose .kind is the unknown kind).
_UNKNOWN_KIND: type[BaseException] = _KIND_TO_CLASS["RuntimeError"]


def _backtrace_note(backtrace: str) -> str | None:
    # The runtime stores the most recent call first; show it Python-style.
    lines = [line for line in backtrace.splitlines() if line.strip()]
    if not lines:
        return None
    return "FFI backtrace (most recent call last):\n" + "\n".join(reversed(lines))


# The FFI backtrace an exception was made with, before Python frames were added.
_BASE_BACKTRACE = "_tvmffi_ffi_backtrace"


# The runtime's argument-mismatch message names the FFI type a Python value became
# ("got `ffi.BigInt`" for 2**70, "`ffi.SmallStr`" for "abc"): the caller passed a Python
# int or str, so the message names that. Other type keys (`ffi.OpaquePyObject`, which the
# official tests pin, objects, tensors) are left as they are.
_PYTHON_NAMES = {
    "ffi.BigInt": "`int` beyond the int64 range",
    "ffi.SmallStr": "`str`",
    "ffi.String": "`str`",
    "ffi.SmallBytes": "`bytes`",
    "ffi.Bytes": "`bytes`",
}
_MISMATCH = re.compile(
    r"(?P<head>^Mismatched type on argument #\d+ when calling: .* but got )"
    r"`(?P<key>ffi\.(?:BigInt|SmallStr|String|SmallBytes|Bytes))`$",
    re.S,
)


def _python_type_message(kind: str, message: str) -> str:
    """The message with the FFI type of a converted Python value named as its Python type."""
    if kind != "TypeError":
        return message
    found = _MISMATCH.match(message)
    if found is None:
        return message
    return found.group("head") + _PYTHON_NAMES[found.group("key")]


def _from_ffi(error: ErrorObject, carried: BaseException | None) -> BaseException:
    """The Python exception for an FFI error object (called from C).

    ``carried`` is the exception a Python callback raised, when the error
    carries one: it is raised again as it is, its ``__tvm_ffi_error__`` (if
    any) taking the backtrace the error gathered on the way.
    """
    if carried is not None:
        ffi_error = getattr(carried, "__tvm_ffi_error__", None)
        if isinstance(ffi_error, ErrorObject) and not ffi_error.same_as(error):
            ffi_error.update_backtrace(error.backtrace)
        return carried
    kind, message, backtrace = _core._error_fields(error)
    message = _python_type_message(kind, message)
    exc = _instantiate(_KIND_TO_CLASS.get(kind, _UNKNOWN_KIND), kind, message)
    if isinstance(exc, Error):
        exc.kind = kind
    exc.__tvm_ffi_error__ = error  # type: ignore[attr-defined]
    setattr(exc, _BASE_BACKTRACE, backtrace)
    note = _backtrace_note(backtrace)
    if note is not None:
        _add_note(exc, note)
    return exc


def _instantiate(cls: type[BaseException], kind: str, message: str) -> BaseException:
    """``cls(message)``; a registered class that cannot be built from one message
    (or builds no exception) gives the unknown-kind error instead, so the
    error's kind and message still surface, with the failure as its cause."""
    failure: BaseException | None = None
    try:
        exc = cls(message)
    except Exception as e:
        failure = e
    else:
        if isinstance(exc, BaseException):
            return exc
        failure = TypeError(f"{cls.__qualname__}({message!r}) returned {type(exc).__name__}")
    fallback = _UNKNOWN_KIND(message)
    fallback.__cause__ = failure
    _add_note(
        fallback,
        f"error kind {kind!r} is registered to {cls.__module__}.{cls.__qualname__}, "
        "which could not be built from the message",
    )
    return fallback


def _add_note(exc: BaseException, note: str) -> None:
    # BaseException.add_note exists from Python 3.11; keep 3.10 working too.
    notes: list[str] | None = getattr(exc, "__notes__", None)
    if notes is None:
        setattr(exc, "__notes__", [note])  # noqa: B010
    else:
        notes.append(note)


# Per exception class other than tvmffi.Error's (whose kind is per instance) and with no
# __tvm_ffi_error__ of its own: its kind and whether it is a KeyError. Cleared whenever
# register_error changes _CLASS_TO_KIND. The C core reads it for a never-raised
# exception passed as an argument (error_object.c), so it is mutated, never rebound.
# A class made at run time (a heap type) must stay collectable: it is keyed by its
# canonical weak reference (``weakref.ref(cls)``, which CPython hands out again while it
# lives, so a lookup allocates nothing), and the third item, a weak reference with a
# callback, removes the entry when the class goes. Built-in classes (ValueError), which
# live as long as the interpreter, are keyed by themselves: their lookup stays a plain
# dict lookup.
_CLASS_FACTS: dict[Any, tuple[str, bool, Any]] = {}
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE


def _facts_key(cls: type) -> Any:
    return weakref.ref(cls) if cls.__flags__ & _HEAPTYPE else cls


def _remember_facts(cls: type, facts: tuple[str, bool]) -> None:
    key = _facts_key(cls)
    drop = None
    if isinstance(key, weakref.ref):
        drop = weakref.ref(cls, lambda _gone: _CLASS_FACTS.pop(key, None))
    _CLASS_FACTS[key] = (*facts, drop)


def _kind_and_message(exc: BaseException) -> tuple[str, str]:
    """The FFI error kind and message of a Python exception."""
    known = _CLASS_FACTS.get(_facts_key(type(exc)))
    if known is not None:
        kind, keyerror = known[0], known[1]
    else:
        kind, keyerror = _kind_of(exc), isinstance(exc, builtins.KeyError)
        if not isinstance(exc, Error) and not hasattr(type(exc), "__tvm_ffi_error__"):
            _remember_facts(type(exc), (kind, keyerror))
    # KeyError's str() is the repr of its key; the FFI message is the key text.
    if keyerror and len(exc.args) == 1:
        return kind, str(exc.args[0])
    return kind, str(exc)


def _kind_of(exc: BaseException) -> str:
    if isinstance(exc, Error):
        return exc.kind
    for klass in type(exc).__mro__:
        kind = _CLASS_TO_KIND.get(klass)
        if kind is not None:
            return kind
    return type(exc).__name__


# On an exception: (the traceback entry formatted last, its text), so that an exception
# crossing the FFI at every level of a deep callback chain formats each frame once. (An
# attribute, not a weak-key table: the traceback's frames refer to the exception.)
_FORMATTED_TB = "_tvmffi_formatted_tb"


def _format_backtrace(tb: TracebackType | None, exc: BaseException | None = None) -> str:
    # Same line format the runtime and the official binding use, most recent
    # call first, so either binding can rebuild a Python traceback from it.
    # Frames a propagating exception gains come first in its traceback chain:
    # only those are formatted, before the text of the chain formatted last.
    if tb is None:  # a fresh exception (raised nowhere yet): nothing to format
        return ""
    seen = getattr(exc, _FORMATTED_TB, None) if exc is not None else None
    new: list[TracebackType] = []
    rest = ""
    while tb is not None:
        if seen is not None and tb is seen[0]:
            rest = seen[1]
            break
        new.append(tb)
        tb = tb.tb_next
    walk = ((t.tb_frame, t.tb_lineno) for t in new)
    frames = traceback.StackSummary.extract(walk, lookup_lines=False)
    text = rest + "".join(
        f'  File "{f.filename}", line {f.lineno}, in {f.name}\n' for f in reversed(frames)
    )
    if exc is not None and new:
        with contextlib.suppress(AttributeError, TypeError):  # one that takes no attributes
            setattr(exc, _FORMATTED_TB, (new[0], text))
    return text


def _to_ffi(exc: BaseException, native: str = "") -> tuple[str, str, str]:
    """Describe a Python exception as (kind, message, backtrace) (called from C).

    The backtrace is, innermost first, that of the FFI error the exception came
    from (as it was then), the exception's whole Python traceback and
    ``native``, the native stack where it enters the FFI (taken by the caller).
    Recomputing it from those parts at every crossing keeps each frame once.
    """
    ffi_error = getattr(exc, "__tvm_ffi_error__", None)
    backtrace = _format_backtrace(exc.__traceback__, exc) + native
    if isinstance(ffi_error, ErrorObject):
        kind, message, current = _core._error_fields(ffi_error)
        backtrace = getattr(exc, _BASE_BACKTRACE, current) + backtrace
        ffi_error.update_backtrace(backtrace)
        return kind, message, backtrace
    return (*_kind_and_message(exc), backtrace)


def _convert_to_ffi_error(exc: BaseException) -> ErrorObject:
    """The FFI error object of a Python exception, its traceback added to the backtrace.

    An exception that came from the FFI gives its own ``__tvm_ffi_error__``
    (updated); any other a new error of the exception's kind and message.
    """
    ffi_error = getattr(exc, "__tvm_ffi_error__", None)
    py_backtrace = _format_backtrace(exc.__traceback__, exc)
    if isinstance(ffi_error, ErrorObject):
        ffi_error.update_backtrace(ffi_error.backtrace + py_backtrace)
        return ffi_error
    made: ErrorObject = _core._error_new(*_kind_and_message(exc), py_backtrace)
    return made


_core.set_error_hooks(_from_ffi, _to_ffi)
