"""Keyword arguments for callables that take positional arguments only.

:func:`make_kwargs_wrapper` describes the parameters a wrapper should accept (names,
defaults, keyword-only ones, those whose dataclass values become tuples) and returns a
C callable (``tvmffi.core.KwargsWrapper``, ``csrc/kwargs_binder.c``) that binds each
call to that table the way Python binds a ``def``'s parameters, with the same errors,
and calls the target with every value positional. Nothing is generated or executed:
defaults are held as values, never written into source. Calling a
:class:`tvmffi.Function` target goes from the wrapper straight to the FFI call.

The wrapper takes the prototype's ``__name__``, ``__qualname__``, ``__doc__``,
``__module__``, ``__annotations__`` and ``__wrapped__`` (as ``functools.wraps`` gives
them), reports its own parameters to :func:`inspect.signature` (their real defaults,
the prototype's annotations), binds as a method when stored in a class, and pickles
when its target does.
"""

from __future__ import annotations

import functools
import inspect
import keyword
import pickle
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .._core import KwargsWrapper
from ..core import MISSING

__all__ = ["MISSING", "make_kwargs_wrapper", "make_kwargs_wrapper_from_signature"]

# Names the official wrapper reserves for itself; refused here too, so that a
# signature accepted by one binding is accepted by the other.
_RESERVED = frozenset({"__i_target_func", "__i_MISSING", "__i_unpack"})

_STARS: dict[Any, str] = {
    inspect.Parameter.VAR_POSITIONAL: "*args",
    inspect.Parameter.VAR_KEYWORD: "**kwargs",
}


# The official binding's wording of each problem of a parameter table.
_PROBLEMS: dict[str, tuple[type[Exception], str]] = {
    "repeat": (ValueError, "Duplicate {what} names found in: {names!r}"),
    "not_str": (TypeError, "{label} name must be a string, got {tname}: {name!r}"),
    "not_ident": (ValueError, "Invalid {what} name: {name!r} is not a valid Python identifier"),
    "keyword": (
        ValueError,
        "Invalid {what} name: {name!r} is a Python keyword and cannot be used as a parameter name",
    ),
    "defaults_type": (TypeError, "arg_defaults must be a tuple, got {tname}"),
    "defaults_len": (
        ValueError,
        "arg_defaults has {count} values but only {npos} positional arguments",
    ),
    "stray": (ValueError, "Default provided for '{name}' which is not in kwonly_names: {names!r}"),
    "both": (ValueError, "Arguments cannot be both positional and keyword-only: {names!r}"),
    "reserved": (
        ValueError,
        "Argument names conflict with internal names: {names!r}. "
        'Please avoid using names starting with "__i_"',
    ),
}


def _problem(key: str, **fields: Any) -> Exception:
    cls, template = _PROBLEMS[key]
    return cls(template.format(**fields))


def _repeats(names: list[Any]) -> bool:
    """Whether a name occurs twice (unhashable names are left to the type check)."""
    hashable = [n for n in names if getattr(type(n), "__hash__", None) is not None]
    return len(set(hashable)) != len(hashable)


def _name_kind(name: Any) -> str | None:
    if not isinstance(name, str):
        return "not_str"
    if not name.isidentifier():
        return "not_ident"
    return "keyword" if keyword.iskeyword(name) else None


def _table_errors(
    pos: list[Any], defaults: Any, kwonly: list[Any], kw_defaults: dict[Any, Any]
) -> Iterator[Exception]:
    """The problems of a parameter table, lazily, in the order the official binding
    reports them (the first one is raised)."""
    groups = (("argument", pos), ("keyword-only argument", kwonly))
    yield from (_problem("repeat", what=w, names=ns) for w, ns in groups if _repeats(ns))
    for what, names in groups:
        for name in names:
            kind = _name_kind(name)
            if kind is not None:
                label = what[:1].upper() + what[1:]
                yield _problem(kind, what=what, label=label, name=name, tname=type(name).__name__)
    if not isinstance(defaults, tuple):
        yield _problem("defaults_type", tname=type(defaults).__name__)
    elif len(defaults) > len(pos):
        yield _problem("defaults_len", count=len(defaults), npos=len(pos))
    for key in (k for k in kw_defaults if k not in kwonly):
        yield _problem("stray", name=key, names=kwonly)
    shared = set(pos) & set(kwonly)
    taken = {*pos, *kwonly} & _RESERVED
    yield from [_problem("both", names=shared)] if shared else []
    yield from [_problem("reserved", names=taken)] if taken else []


def _check_table(
    arg_names: list[str],
    arg_defaults: Any,
    kwonly_names: list[str],
    kwonly_defaults: dict[str, Any],
) -> None:
    """Refuse a parameter table no ``def`` could have."""
    for error in _table_errors(arg_names, arg_defaults, kwonly_names, kwonly_defaults):
        raise error


def _annotations_of(prototype: Any) -> tuple[dict[str, Any], Any]:
    """Per-parameter annotations and the return annotation the prototype declares."""
    try:
        sig = inspect.signature(prototype)
    except (TypeError, ValueError):
        return {}, inspect.Signature.empty
    notes = {p.name: p.annotation for p in sig.parameters.values()}
    return notes, sig.return_annotation


def _signature_of(wrapper: Any, source: inspect.Signature | None, prototype: Any) -> Any:
    """The signature the wrapper binds by: its own parameters and real defaults, the
    annotations of ``source`` (a signature given) or of the prototype."""
    _, names, n_pos, defaults, _ = wrapper._table
    if source is not None:
        notes = {p.name: p.annotation for p in source.parameters.values()}
        ret = source.return_annotation
    elif prototype is not None:
        notes, ret = _annotations_of(prototype)
    else:
        notes, ret = {}, inspect.Signature.empty
    params = []
    for i, name in enumerate(names):
        kind = (
            inspect.Parameter.POSITIONAL_OR_KEYWORD if i < n_pos else inspect.Parameter.KEYWORD_ONLY
        )
        params.append(
            inspect.Parameter(
                name,
                kind,
                default=defaults.get(name, inspect.Parameter.empty),
                annotation=notes.get(name, inspect.Parameter.empty),
            )
        )
    return inspect.Signature(params, return_annotation=ret)


def _build(
    target_func: Callable[..., Any],
    arg_names: list[str],
    arg_defaults: tuple[Any, ...],
    kwonly_names: list[str],
    kwonly_defaults: dict[str, Any],
    prototype: Callable[..., Any] | None,
    map_dataclass_to_tuple: Iterable[str] | None,
    source: inspect.Signature | None,
) -> Callable[..., Any]:
    names = tuple(arg_names) + tuple(kwonly_names)
    defaults = dict(zip(arg_names[len(arg_names) - len(arg_defaults) :], arg_defaults, strict=True))
    defaults.update(kwonly_defaults)
    unpack = tuple(n for n in (map_dataclass_to_tuple or ()) if n in names)
    wrapper = KwargsWrapper(target_func, names, len(arg_names), defaults, unpack)
    if prototype is not None:
        functools.update_wrapper(wrapper, prototype)
    else:  # what a def named ``wrapper`` reports
        wrapper.__name__ = wrapper.__qualname__ = "wrapper"
        wrapper.__doc__ = None
        wrapper.__module__ = None  # type: ignore[assignment]
        wrapper.__annotations__ = {}
    wrapper.__signature__ = _signature_of(wrapper, source, prototype)
    result: Callable[..., Any] = wrapper
    return result


def make_kwargs_wrapper(
    target_func: Callable[..., Any],
    arg_names: list[str],
    arg_defaults: tuple[Any, ...] = (),
    kwonly_names: list[str] | None = None,
    kwonly_defaults: dict[str, Any] | None = None,
    prototype: Callable[..., Any] | None = None,
    map_dataclass_to_tuple: list[str] | None = None,
) -> Callable[..., Any]:
    """Create a wrapper with kwargs support for a function that only accepts positional arguments.

    The wrapper accepts ``arg_names`` positionally or by keyword and ``kwonly_names`` by
    keyword only, fills in the defaults, and calls ``target_func`` with every value
    positional, in the order ``arg_names`` then ``kwonly_names``. Binding is done in C
    from a table built here once; the errors of a bad call are Python's for a ``def``
    of the same signature (missing, unexpected or duplicate arguments name the
    parameter).

    Parameters
    ----------
    target_func
        The callable the wrapper calls, with positional arguments only.
    arg_names
        The names of all positional parameters, in order. Must not overlap with
        ``kwonly_names``.
    arg_defaults
        Default values of the last ``len(arg_defaults)`` positional parameters
        (right-aligned, as a function's ``__defaults__``). A tuple.
    kwonly_names
        Names of the keyword-only parameters; those without an entry in
        ``kwonly_defaults`` are required.
    kwonly_defaults
        Default values of keyword-only parameters, by name (a subset of
        ``kwonly_names``).
    prototype
        A function whose ``__name__``, ``__qualname__``, ``__doc__``, ``__module__`` and
        ``__annotations__`` the wrapper takes (with ``__wrapped__`` set to it).
    map_dataclass_to_tuple
        Names of parameters whose values are converted by
        :func:`~tvmffi.utils.unpack_dataclass.unpack_dataclass_to_tuple` before the
        call: dataclass instances become tuples of their fields (nested dataclasses
        recursively, by the fields' annotations), lists and tuples are rebuilt element
        by element, dicts on their values; other values pass unchanged (not copied).

    Returns
    -------
        The wrapper, a ``tvmffi.core.KwargsWrapper``.

    Examples
    --------
    >>> from tvmffi.utils.kwargs_wrapper import make_kwargs_wrapper
    >>> w = make_kwargs_wrapper(lambda *a: a, ["x", "y"], (10,), ["scale"], {"scale": 2})
    >>> w(1)
    (1, 10, 2)
    >>> w(1, scale=3, y=4)
    (1, 4, 3)

    """
    kw_names = list(kwonly_names) if kwonly_names is not None else []
    kw_defaults = dict(kwonly_defaults) if kwonly_defaults is not None else {}
    names = list(arg_names)
    _check_table(names, arg_defaults, kw_names, kw_defaults)
    return _build(
        target_func,
        names,
        arg_defaults,
        kw_names,
        kw_defaults,
        prototype,
        map_dataclass_to_tuple,
        None,
    )


def make_kwargs_wrapper_from_signature(
    target_func: Callable[..., Any],
    signature: inspect.Signature,
    prototype: Callable[..., Any] | None = None,
    exclude_arg_names: Iterable[str] | None = None,
    map_dataclass_to_tuple: list[str] | None = None,
) -> Callable[..., Any]:
    """Create a wrapper with kwargs support for a function that only accepts positional arguments.

    The parameters are those of ``signature`` (positional-only ones become
    positional-or-keyword), less the names in ``exclude_arg_names`` (names it does not
    have are ignored); see :func:`make_kwargs_wrapper` for the rest.

    Parameters
    ----------
    target_func
        The callable the wrapper calls, with positional arguments only.
    signature
        The parameters the wrapper accepts (an :class:`inspect.Signature`).
    prototype
        A function whose metadata the wrapper takes (see :func:`make_kwargs_wrapper`).
    exclude_arg_names
        Names of parameters of ``signature`` the wrapper leaves out.
    map_dataclass_to_tuple
        Names of parameters whose dataclass values become tuples (see
        :func:`make_kwargs_wrapper`).

    Returns
    -------
        The wrapper, a ``tvmffi.core.KwargsWrapper``.

    Raises
    ------
    ValueError
        If the signature has a ``*args`` or ``**kwargs`` parameter.

    """
    skip = frozenset(exclude_arg_names or ())
    params = [p for p in signature.parameters.values() if p.name not in skip]
    for p in params:
        star = _STARS.get(p.kind)
        if star is not None:
            raise ValueError(f"{star} not supported in the wrapped signature ({p})")
    empty = inspect.Parameter.empty
    by_keyword = [p for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]
    by_position = [p for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    arg_names = [p.name for p in by_position]
    arg_defaults = tuple(p.default for p in by_position if p.default is not empty)
    kwonly_names = [p.name for p in by_keyword]
    kwonly_defaults = {p.name: p.default for p in by_keyword if p.default is not empty}
    _check_table(arg_names, arg_defaults, kwonly_names, kwonly_defaults)
    return _build(
        target_func,
        arg_names,
        arg_defaults,
        kwonly_names,
        kwonly_defaults,
        prototype,
        map_dataclass_to_tuple,
        signature,
    )


def _picklable(value: Any) -> bool:
    try:
        pickle.dumps(value)
    except Exception:  # any failure: the value stays behind
        return False
    return True


def _reduce_wrapper(wrapper: Any) -> tuple[Any, ...]:
    """``KwargsWrapper.__reduce__``: the table (the target must pickle) and the attributes
    that pickle (a prototype defined in a function, say, is left out)."""
    target = wrapper._table[0]
    if target is None:
        raise TypeError("cannot pickle a Function's own parameter table")
    state = {k: v for k, v in wrapper.__dict__.items() if _picklable(v)}
    return (_rebuild_wrapper, wrapper._table, state)


def _rebuild_wrapper(
    target: Any, names: tuple[str, ...], n_pos: int, defaults: dict[str, Any], unpack: list[str]
) -> Any:
    """The inverse of :func:`_reduce_wrapper` (its state is set by pickle afterwards)."""
    return KwargsWrapper(target, names, n_pos, defaults, tuple(unpack))
