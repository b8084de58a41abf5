"""Keyword-argument front ends for functions that take positional arguments only.

FFI functions take positional arguments; :func:`make_kwargs_wrapper` builds a
Python function with a real signature (names, defaults, keyword-only
parameters) that binds its arguments and calls the target positionally. The
wrapper is generated source compiled once, so a call costs what a hand-written
forwarding function costs. Names are validated before any code is generated,
and default values never appear in the source: ``None``, ``True`` and
``False`` are written literally, every other default is looked up at call
time behind a private sentinel.
"""

from __future__ import annotations

import dataclasses
import inspect
import keyword
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["make_kwargs_wrapper", "make_kwargs_wrapper_from_signature"]

_TARGET = "__i_target_func"
_MISSING_NAME = "__i_MISSING"
_DEFAULTS = "__i_arg_defaults"
_UNPACK = "__i_unpack"
_RESERVED = frozenset({_TARGET, _MISSING_NAME, _DEFAULTS, _UNPACK})


class _Missing:
    """The sentinel standing for "argument not given" in generated wrappers."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


_MISSING = _Missing()


def _unpack(value: Any) -> Any:
    """A dataclass instance as a tuple of its fields, recursively (lists, tuples, dict values)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return tuple(_unpack(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, (list, tuple)):
        return type(value)(_unpack(v) for v in value)
    if isinstance(value, dict):
        return {k: _unpack(v) for k, v in value.items()}
    return value


def _name_error(name: Any) -> Exception | None:
    """Why ``name`` cannot be a parameter of the generated wrapper (``None``: it can)."""
    if not isinstance(name, str):
        return TypeError(f"Argument name must be a string, got {type(name).__name__}: {name!r}")
    if not name.isidentifier():
        return ValueError(f"{name!r} is not a valid Python identifier")
    if keyword.iskeyword(name):
        return ValueError(f"{name!r} is a Python keyword and cannot be used as a parameter name")
    return None


def _check_names(names: list[str], what: str) -> None:
    """Refuse repeated names, then the first name that cannot be a parameter."""
    if len(set(names)) != len(names):
        raise ValueError(f"Duplicate {what} names found in: {names}")
    problem = next(filter(None, map(_name_error, names)), None)
    if problem is not None:
        raise problem


def _validate(
    arg_names: list[str],
    arg_defaults: tuple[Any, ...],
    kwonly_names: list[str],
    kwonly_defaults: dict[str, Any],
) -> None:
    _check_names(arg_names, "argument")
    _check_names(kwonly_names, "keyword-only argument")
    if not isinstance(arg_defaults, tuple):
        raise TypeError(f"arg_defaults must be a tuple, got {type(arg_defaults).__name__}")
    positional, kwonly = set(arg_names), set(kwonly_names)
    both, unknown = sorted(positional & kwonly), sorted(set(kwonly_defaults) - kwonly)
    reserved = sorted((positional | kwonly) & _RESERVED)
    counts = f"arg_defaults has {len(arg_defaults)} values but only {len(arg_names)}"
    for wrong, message in (
        (len(arg_defaults) > len(arg_names), f"{counts} positional arguments"),
        (both, f"Arguments cannot be both positional and keyword-only: {both}"),
        (unknown, f"kwonly_defaults keys {unknown} not in kwonly_names"),
        (reserved, f"Argument names {reserved} conflict with internal names"),
    ):
        if wrong:
            raise ValueError(message)


def _param(name: str, has_default: bool, default: Any, body: list[str]) -> str:
    """One parameter of the generated signature; adds default resolution to ``body``."""
    if not has_default:
        return name
    if default is None or isinstance(default, bool):
        return f"{name}={default!r}"
    body.append(f"    if {name} is {_MISSING_NAME}: {name} = {_DEFAULTS}[{name!r}]")
    return f"{name}={_MISSING_NAME}"


def make_kwargs_wrapper(
    target_func: Callable[..., Any],
    arg_names: list[str],
    arg_defaults: tuple[Any, ...] = (),
    kwonly_names: list[str] | None = None,
    kwonly_defaults: dict[str, Any] | None = None,
    prototype: Callable[..., Any] | None = None,
    map_dataclass_to_tuple: list[str] | None = None,
) -> Callable[..., Any]:
    """A ``wrapper(arg_names..., *, kwonly_names...)`` that calls ``target_func`` positionally.

    ``arg_defaults`` are the defaults of the last positional parameters
    (right-aligned, as ``__defaults__``); ``kwonly_defaults`` those of
    keyword-only parameters (the others are required). ``target_func`` is
    called with all positional arguments, then all keyword-only ones, in
    order. With ``prototype`` the wrapper takes its ``__name__``, ``__doc__``,
    ``__module__``, ``__qualname__`` and ``__annotations__``. Arguments named in
    ``map_dataclass_to_tuple`` are passed as tuples of their dataclass fields
    (nested dataclasses, list/tuple items and dict values recursively).
    """
    kwonly_names = list(kwonly_names or [])
    kwonly_defaults = dict(kwonly_defaults or {})
    arg_names = list(arg_names)
    _validate(arg_names, arg_defaults, kwonly_names, kwonly_defaults)
    to_tuple = set(map_dataclass_to_tuple or ())

    defaults: dict[str, Any] = {}
    body: list[str] = []
    params: list[str] = []
    first_default = len(arg_names) - len(arg_defaults)
    for i, name in enumerate(arg_names):
        has = i >= first_default
        if has:
            defaults[name] = arg_defaults[i - first_default]
        params.append(_param(name, has, defaults.get(name), body))
    if kwonly_names:
        params.append("*")
        for name in kwonly_names:
            has = name in kwonly_defaults
            if has:
                defaults[name] = kwonly_defaults[name]
            params.append(_param(name, has, defaults.get(name), body))
    call_args = [f"{_UNPACK}({n})" if n in to_tuple else n for n in (*arg_names, *kwonly_names)]
    source = "\n".join(
        [
            f"def wrapper({', '.join(params)}):",
            *body,
            f"    return {_TARGET}({', '.join(call_args)})",
        ]
    )
    namespace: dict[str, Any] = {
        _TARGET: target_func,
        _MISSING_NAME: _MISSING,
        _DEFAULTS: defaults,
        _UNPACK: _unpack,
    }
    exec(
        compile(source, "<kwargs_wrapper>", "exec"), namespace
    )  # names validated above; defaults stay out of the source
    wrapper: Callable[..., Any] = namespace["wrapper"]
    if prototype is not None:
        for attr in ("__name__", "__doc__", "__module__", "__qualname__", "__annotations__"):
            if hasattr(prototype, attr):
                setattr(wrapper, attr, getattr(prototype, attr))
    return wrapper


def make_kwargs_wrapper_from_signature(
    target_func: Callable[..., Any],
    signature: inspect.Signature,
    prototype: Callable[..., Any] | None = None,
    exclude_arg_names: Iterable[str] | None = None,
    map_dataclass_to_tuple: list[str] | None = None,
) -> Callable[..., Any]:
    """:func:`make_kwargs_wrapper` with the parameters of ``signature``.

    Parameters named in ``exclude_arg_names`` are left out (names the
    signature lacks are ignored). ``*args`` and ``**kwargs`` raise
    ``ValueError``.
    """
    excluded = set(exclude_arg_names or ())
    arg_names: list[str] = []
    arg_defaults: list[Any] = []
    kwonly_names: list[str] = []
    kwonly_defaults: dict[str, Any] = {}
    for name, param in signature.parameters.items():
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            raise ValueError("*args not supported in wrapper generation")
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            raise ValueError("**kwargs not supported in wrapper generation")
        if name in excluded:
            continue
        has_default = param.default is not inspect.Parameter.empty
        if param.kind is inspect.Parameter.KEYWORD_ONLY:
            kwonly_names.append(name)
            if has_default:
                kwonly_defaults[name] = param.default
            continue
        arg_names.append(name)
        if has_default:
            arg_defaults.append(param.default)
        elif arg_defaults:
            raise ValueError(
                f"Required positional parameter {name!r} cannot follow parameters with defaults"
            )
    return make_kwargs_wrapper(
        target_func,
        arg_names,
        tuple(arg_defaults),
        kwonly_names,
        kwonly_defaults,
        prototype,
        map_dataclass_to_tuple,
    )


#: The "argument not given" sentinel under the official module's name.
MISSING = _MISSING
