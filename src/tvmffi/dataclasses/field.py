"""Field descriptors of FFI dataclasses: :class:`Field`, :func:`field`, ``KW_ONLY``.

One field model serves both decorators: ``@py_class`` builds a :class:`Field` from
each annotation (or takes the one :func:`field` returned) and registers it with the
runtime; ``@c_class`` builds one from each C++-reflected field. Either way it ends
up as ``FieldInfo.dataclass_field`` of the type, which :func:`fields` returns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY
from typing import Any, Generic, TypeVar, overload

from ..object import MISSING

__all__ = ["KW_ONLY", "Field", "field", "init_property"]

_T = TypeVar("_T")


def _field_converter(value: Any) -> Any:
    """Marker for static analysis: field values are converted by the FFI."""
    return value


class Field:
    """One field of an FFI dataclass.

    :func:`field` returns one with ``name`` and ``_ty_schema`` unset; the decorator
    fills them (and ``type``, the resolved annotation) in. ``hash=None`` follows
    ``compare``; ``kw_only=None`` follows the decorator's ``kw_only``.
    ``structural_eq`` is ``None``, ``"ignore"``, ``"def"`` (= ``"def-pattern"``),
    ``"def-pattern"`` or ``"def-simple"``. Options a field-resolution hook is meant
    to consume are kept in ``extra_kwargs``.
    """

    __slots__ = (
        "_ty_schema",
        "compare",
        "converter",
        "default",
        "default_factory",
        "doc",
        "extra_kwargs",
        "frozen",
        "hash",
        "init",
        "kw_only",
        "metadata",
        "name",
        "repr",
        "structural_eq",
        "type",
    )

    name: str | None
    type: Any
    _ty_schema: Any
    default: Any
    default_factory: Any
    init: bool
    repr: bool
    compare: bool
    hash: bool | None
    kw_only: bool | None
    frozen: bool
    structural_eq: str | None
    metadata: dict[str, Any]
    doc: str | None
    converter: Callable[[Any], Any]
    extra_kwargs: dict[str, Any]

    def __init__(self, **options: Any) -> None:
        # Every slot from the options or _FIELD_DEFAULTS; a name that is no slot is kept
        # for a field-resolution hook (extra_kwargs).
        settings = {**_FIELD_DEFAULTS, **options}
        if settings["default_factory"] is None:
            settings["default_factory"] = MISSING
        _check_default_and_kind(
            settings["default"], settings["default_factory"], settings["structural_eq"]
        )
        metadata = settings.pop("metadata")
        self.metadata = {} if metadata is None else dict(metadata)
        self.extra_kwargs = {k: settings.pop(k) for k in list(settings) if k not in _SETTABLE}
        for slot, value in settings.items():
            setattr(self, slot, value)

    def __copy__(self) -> Field:
        """A copy with its own ``metadata`` and ``extra_kwargs`` dicts (values shared)."""
        twin = object.__new__(type(self))
        for slot in Field.__slots__:
            if hasattr(self, slot):
                setattr(twin, slot, getattr(self, slot))
        if hasattr(self, "__dict__"):  # a subclass without slots of its own
            vars(twin).update(vars(self))
        twin.metadata, twin.extra_kwargs = dict(self.metadata), dict(self.extra_kwargs)
        return twin

    def __repr__(self) -> str:
        shown = "name type default default_factory init repr hash compare kw_only frozen"
        return (
            "Field("
            + ", ".join(f"{k}={getattr(self, k)!r}" for k in [*shown.split(), "structural_eq"])
            + ")"
        )


# What a Field holds when not told otherwise (hash None: follows compare; kw_only None:
# follows the decorator).
_FIELD_DEFAULTS: dict[str, Any] = {
    "name": None,
    "type": None,
    "_ty_schema": None,
    "default": MISSING,
    "default_factory": MISSING,
    "init": True,
    "repr": True,
    "compare": False,  # a Field made directly compares only when told; field() says True
    "hash": None,
    "kw_only": None,
    "frozen": False,
    "structural_eq": None,
    "metadata": None,
    "doc": None,
    "converter": _field_converter,
}
_SETTABLE = frozenset(_FIELD_DEFAULTS) - {"metadata"}

_STRUCTURAL_EQ_CHOICES = (None, "def", "def-pattern", "def-simple", "ignore")


def _check_default_and_kind(default: Any, factory: Any, structural_eq: Any) -> None:
    """At most one of ``default`` / a callable ``default_factory``; a known
    ``structural_eq``."""
    if factory is not MISSING and default is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    if factory is not MISSING and not callable(factory):
        raise TypeError(f"default_factory must be a callable, got {type(factory).__name__}")
    if structural_eq not in _STRUCTURAL_EQ_CHOICES:
        raise ValueError(
            f"structural_eq must be one of {sorted(_STRUCTURAL_EQ_CHOICES, key=str)}, "
            f"got {structural_eq!r}"
        )


def field(
    *,
    default: object = MISSING,
    default_factory: Callable[[], object] | None = MISSING,
    init: bool = True,
    repr: bool = True,
    compare: bool = True,
    hash: bool | None = None,
    kw_only: bool | None = None,
    frozen: bool = False,
    structural_eq: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    doc: str | None = None,
    converter: Callable[[Any], Any] = _field_converter,
    **extra_kwargs: Any,
) -> Any:
    """Customize a field of a ``@py_class`` class (``x: int = field(default=0)``).

    Returns a :class:`Field` the decorator completes from the annotation. The
    options mean what :func:`dataclasses.field`'s do; ``frozen`` makes only this
    field read-only after ``__init__``, ``structural_eq`` annotates it for
    structural equality and hashing, ``doc`` documents it in the reflection data.
    """
    options = dict(locals())  # exactly the parameters: nothing is bound before this line
    if default_factory is None:  # Field(default_factory=None) means none; here it is a mistake
        raise TypeError("default_factory must be a callable, got NoneType")
    return Field(**options.pop("extra_kwargs"), **options)


class init_property(Generic[_T]):
    """A field computed from the other fields once, right after construction.

    ``@py_class`` registers it as ``field(init=False, repr=False, compare=False,
    hash=False, structural_eq="ignore")`` and stores ``func(self)`` into it after
    ``__ffi_init__``; reads come from the object's storage like any field. The
    return annotation of ``func`` is the field's type.
    """

    def __init__(self, func: Callable[[Any], _T]) -> None:
        self.func = func
        self.name: str | None = None
        self._return_annotation: Any = getattr(func, "__annotations__", {}).get("return")

    @overload
    def __get__(self, obj: None, objtype: type) -> init_property[_T]: ...
    @overload
    def __get__(self, obj: object, objtype: type) -> _T: ...
    def __get__(self, obj: object | None, objtype: type) -> Any:
        return self

    def __set_name__(self, owner: type, name: str) -> None:
        # The property is a field of the class: its annotation (the function's return
        # type, else Any) goes into the class body's own annotations, made if absent.
        self.name = name
        own = vars(owner).get("__annotations__")
        if own is None:
            own = owner.__annotations__ = {}
        own[name] = Any if self._return_annotation is None else self._return_annotation
