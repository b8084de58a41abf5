"""Names, docs and signatures of FFI functions, from their type schemas.

A :class:`~tvmffi.Function` knows only its handle. Where it came from says what
it is called and what it takes: a global function's registry entry carries
``type_schema`` metadata, a module function has ``__tvm_ffi__metadata_<name>``
and ``__tvm_ffi__doc_<name>`` symbols (written by the runtime's export macros,
:mod:`tvmffi.cpp` and :mod:`tvmffi.codegen`), and a reflected method has the
metadata of its type's method table. The Function type's ``__name__``,
``__qualname__``, ``__doc__`` and ``__signature__`` (``csrc/function_doc.c``)
call :func:`describe` the first time one is read; the four values are then
cached in the function's instance dict. Calls and lookups never pay for this.

Origins are found as follows:

- reflected methods and module functions are noted when their class or module
  wrapper is set up (:func:`note_method`, :func:`note_module_functions`);
- global functions are found by handle in the registry, whose reverse index is
  built on the first question and rebuilt when the registry has grown.
"""

from __future__ import annotations

import inspect
import keyword
import weakref
from collections.abc import Iterable
from typing import Any

from ._core import KwargsWrapper
from .function import (
    _cached_global_func,
    get_global_func,
    get_global_func_metadata,
    list_global_func_names,
)
from .type_schema import TypeSchema

__all__ = ["describe", "kwargs_binder", "note_method", "note_module_functions"]

_ATTRS = ("__name__", "__qualname__", "__doc__", "__signature__")


class _Origin:
    """Where a function came from: its names and how to fetch its doc and metadata."""

    __slots__ = ("doc", "metadata", "module", "name", "qualname", "self_param")

    def __init__(
        self,
        name: str,
        qualname: str,
        doc: str | None = None,
        metadata: dict[str, Any] | None = None,
        module: Any = None,
        self_param: bool = False,
    ) -> None:
        self.name = name
        self.qualname = qualname
        self.doc = doc
        self.metadata = metadata
        self.module = module  # an Array holding the module to ask, or None
        self.self_param = self_param

    def fetch(self) -> tuple[str | None, dict[str, Any]]:
        """The doc text and metadata, asking the module when there is one.

        A library's symbols are not trusted to be well formed: a doc that is not
        text, metadata that is not a JSON object (or too deep to decode) count as
        absent, so that the name still answers and only the signature is missing.
        """
        if self.module is not None:
            module = self.module[0]  # a fresh wrapper of the module
            doc = _or_none(module.get_function_doc, self.name)
            meta = _or_none(module.get_function_metadata, self.name)
        else:
            doc, meta = self.doc, self.metadata
        return (doc if isinstance(doc, str) else None), (meta if isinstance(meta, dict) else {})


def _or_none(read: Any, name: str) -> Any:
    """``read(name)``, or ``None`` when the library's answer cannot be read."""
    try:
        return read(name)
    except Exception:  # malformed JSON, a non-text doc, RecursionError on deep nesting
        return None


# Reflected methods live in their type's method table for the whole process, so
# their handles identify them for good.
_METHODS: dict[int, _Origin] = {}
# Module functions die with their last wrapper: keyed by id, dropped by a weakref callback.
_MODULE_FUNCS: dict[int, tuple[weakref.ref[Any], _Origin]] = {}
# Reverse index of the global registry: handle -> name, and the name count it was built at.
_GLOBALS: dict[int, str] = {}
_GLOBALS_SIZE = -1


def note_method(
    func: Any, owner: str, name: str, doc: str, metadata: dict[str, Any], is_static: bool
) -> None:
    """Remember that ``func`` is the reflected method ``owner.name`` (``owner``: a type key)."""
    handle = func.__chandle__()
    if handle and handle not in _METHODS:
        # A method's qualified name is its class's name and its own (Python's convention,
        # as the official binding's methods answer): ``TestIntPair.sum``.
        qualname = f"{owner.rsplit('.', 1)[-1]}.{name}"
        origin = _Origin(name, qualname, doc or None, metadata, None, not is_static)
        _METHODS[handle] = origin


def note_module_functions(module: Any, funcs: Iterable[tuple[str, Any]]) -> None:
    """Remember that each ``(name, func)`` is module ``module``'s function ``name``.

    ``module`` is kept by a runtime ``Array`` holding it, not by its Python
    wrapper, whose lookup cache holds the functions: no reference cycle forms
    through them, and the Array goes when the last noted function does.
    """
    holder = _cached_global_func("ffi.Array")(module)
    for name, func in funcs:
        key = id(func)

        def forget(_ref: Any, key: int = key) -> None:
            _MODULE_FUNCS.pop(key, None)

        _MODULE_FUNCS[key] = (weakref.ref(func, forget), _Origin(name, name, module=holder))


def _global_origin(func: Any) -> _Origin | None:
    global _GLOBALS_SIZE
    handle = func.__chandle__()
    names = None
    if handle not in _GLOBALS:
        names = list_global_func_names()
        if len(names) == _GLOBALS_SIZE:
            return None
        _GLOBALS.clear()
        for n in names:
            g = get_global_func(n, allow_missing=True)
            if g is not None:
                _GLOBALS.setdefault(g.__chandle__(), n)
        _GLOBALS_SIZE = len(names)
    name = _GLOBALS.get(handle)
    if name is None:
        return None
    current = get_global_func(name, allow_missing=True)
    if current is None or current.__chandle__() != handle:
        return None  # removed or replaced since the index was built
    meta = _or_none(get_global_func_metadata, name)
    if not isinstance(meta, dict):
        meta = {}
    short = name.rsplit(".", 1)[-1]
    return _Origin(short, name, meta.get("doc") or None, meta)


def _origin(func: Any) -> _Origin | None:
    handle = func.__chandle__()
    if not handle:
        return None
    method = _METHODS.get(handle)
    if method is not None:
        return method
    entry = _MODULE_FUNCS.get(id(func))
    if entry is not None and entry[0]() is func:
        return entry[1]
    return _global_origin(func)


class _Annotation:
    """An annotation shown as the schema's Python text (``Tensor``, ``list[int]``)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Annotation) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


_PLAIN: dict[str, Any] = {
    "int": int,
    "float": float,
    "bool": bool,
    "str": str,
    "bytes": bytes,
    "None": None,
}


def _annotation(schema: TypeSchema, is_input: bool) -> Any:
    text = schema.input_repr() if is_input else schema.output_repr()
    if text in _PLAIN:
        return _PLAIN[text]
    if text == "Any":
        return Any
    return _Annotation(text)


def _param_names(meta: dict[str, Any], count: int) -> list[str]:
    """Parameter names from metadata where it has them (codegen), else ``arg0``..."""
    names = _named_params(meta, count)
    return names if names is not None else [f"arg{i}" for i in range(count)]


def _usable_names(names: list[Any], count: int) -> bool:
    return (
        len(names) == count
        and len(set(names)) == count
        and all(isinstance(n, str) and n.isidentifier() and not keyword.iskeyword(n) for n in names)
    )


def _named_params(meta: dict[str, Any], count: int) -> list[str] | None:
    """The ``count`` parameter names the metadata gives (codegen's ``params``, or
    ``arg_names``), or ``None`` when it names none (or names them unusably)."""
    params = meta.get("params")
    if isinstance(params, list):
        names = [
            p["name"]
            for p in params
            if isinstance(p, dict)
            and p.get("kind") != "env_stream"
            and isinstance(p.get("name"), str)
        ]
        if _usable_names(names, count):
            return names
    arg_names = meta.get("arg_names")
    if isinstance(arg_names, list) and _usable_names(arg_names, count):
        return list(arg_names)
    return None


def _signature(meta: dict[str, Any], self_param: bool) -> inspect.Signature | None:
    """The signature the metadata's schema gives, or ``None`` when it gives none: a
    schema a library wrote wrongly (not JSON, not a callable's, nested too deep)
    leaves the function without a signature rather than breaking introspection."""
    try:
        return _schema_signature(meta, self_param)
    except Exception:  # ValueError, TypeError, KeyError, RecursionError from bad schemas
        return None


def _callable_schema(meta: dict[str, Any]) -> tuple[list[TypeSchema], TypeSchema] | None:
    """The parameter and return schemas of the metadata's ``type_schema``, if it has one."""
    raw = meta.get("type_schema")
    if isinstance(raw, str):
        try:
            schema = TypeSchema.from_json_str(raw)
        except (ValueError, TypeError):
            return None
    elif isinstance(raw, dict):
        schema = TypeSchema.from_json_obj(raw)
    else:
        return None
    named = schema.named_args
    if schema.origin != "Callable" or not named or "params" not in named:
        return None
    return list(named["params"]), named["return"][0]


def _schema_signature(meta: dict[str, Any], self_param: bool) -> inspect.Signature | None:
    found = _callable_schema(meta)
    if found is None:
        return None
    params, ret_schema = found
    named = _named_params(meta, len(params))
    names = named if named is not None else [f"arg{i}" for i in range(len(params))]
    if self_param and params:
        names[0] = "self"
    # Parameters the metadata names are bound by name too (kwargs_binder below).
    kind = (
        inspect.Parameter.POSITIONAL_ONLY
        if named is None
        else inspect.Parameter.POSITIONAL_OR_KEYWORD
    )
    parameters = [
        inspect.Parameter(n, kind, annotation=_annotation(p, True))
        for n, p in zip(names, params, strict=True)
    ]
    ret = _annotation(ret_schema, False)
    return inspect.Signature(parameters, return_annotation=ret)


def _compute(func: Any) -> dict[str, Any] | None:
    origin = _origin(func)
    if origin is None:
        return None
    doc, meta = origin.fetch()
    sig = _signature(meta, origin.self_param)
    head = f"{origin.name}{sig}" if sig is not None else f"{origin.name}(...)"
    parts = [head]
    if isinstance(meta.get("signature"), str):  # tvmffi.codegen: shapes and dtypes
        parts.append(f"Kernel signature: {meta['signature']}")
    if doc:
        parts.append(inspect.cleandoc(doc))
    text = "\n\n".join(parts)
    return {
        "__name__": origin.name,
        "__qualname__": origin.qualname,
        "__doc__": text,
        "__signature__": sig,
    }


def describe(func: Any, attr: str) -> Any:
    """The value of ``func.<attr>`` for one of the four documentation attributes.

    Computes all four from the function's origin and caches them in its
    instance dict (an attribute already set there, say ``__name__`` by
    ``init_ffi_api``, is kept). A function of unknown origin has no
    ``__name__``/``__qualname__`` (``AttributeError``) and its class's ``__doc__``.
    A function with no type schema (unknown origin, or metadata without one) has no
    ``__signature__``: reading it raises ``ValueError`` saying so, which
    ``inspect.signature`` passes on (as it raises ``ValueError`` for any callable
    whose signature is unknown); nothing is cached for it.
    """
    values = _compute(func)
    if values is None:
        if attr == "__doc__":
            return type(func).__doc__
        if attr == "__signature__":
            raise _no_schema(func)
        raise AttributeError(f"{type(func).__name__!r} object has no attribute {attr!r}")
    d = func.__dict__
    for key in _ATTRS:
        if values[key] is not None or key != "__signature__":
            d.setdefault(key, values[key])
    if attr == "__signature__" and attr not in d:
        raise _no_schema(func)
    return d[attr]


# The instance-dict key of a function's keyword table (csrc/kwargs_binder.c reads it).
_BINDER_KEY = "__tvmffi_kwargs_binder__"


def _binder_names(func: Any) -> tuple[list[str], str] | None:
    origin = _origin(func)
    if origin is None:
        return None
    _doc, meta = origin.fetch()
    try:
        found = _callable_schema(meta)
    except Exception:  # a malformed schema names nothing
        return None
    count = len(found[0]) if found is not None else None
    if count is None:  # no schema: the names alone, when the metadata has them
        listed = meta.get("arg_names")
        count = len(listed) if isinstance(listed, list) else -1
    names = _named_params(meta, count)
    if names is None:
        return None
    if origin.self_param and names:
        names[0] = "self"
    return names, origin.qualname


def kwargs_binder(func: Any) -> Any:
    """The keyword table of ``func`` (a ``KwargsWrapper`` without target), or ``None``
    when its metadata names no parameters; cached in its instance dict.

    ``csrc/kwargs_binder.c`` asks on a function's first call with keywords: the
    parameters the metadata names (codegen's ``params``, or ``arg_names``) are then
    bound by name, every one required, with Python's errors naming the function.
    """
    found = _binder_names(func)
    binder = None
    if found is not None:
        names, qualname = found
        binder = KwargsWrapper(None, tuple(names), len(names), {}, ())
        binder.__qualname__ = qualname
    func.__dict__[_BINDER_KEY] = binder
    return binder


def _no_schema(func: Any) -> ValueError:
    return ValueError(
        f"no signature for {func!r}: no type schema is recorded for it (a converted Python "
        "callable, or a C function exported or registered without one), so its parameters "
        "are unknown; call it with the arguments its author documents"
    )
