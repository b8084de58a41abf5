"""Field descriptors of FFI dataclasses: :class:`Field`, :func:`field`, ``KW_ONLY``.

One field model serves both decorators: ``@py_class`` builds a :class:`Field` from
each annotation (or takes the one :func:`field` returned) and registers it with the
runtime; ``@c_class`` builds one from each C++-reflected field. Either way it ends
up as ``FieldInfo.dataclass_field`` of the type, which :func:`fields` returns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY
from typing import Any, ClassVar, Generic, TypeVar, overload

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

    _VALID_STRUCTURAL_EQ_VALUES: ClassVar[frozenset[str | None]] = frozenset(
        {None, "ignore", "def", "def-pattern", "def-simple"}
    )

    def __init__(
        self,
        name: str | None = None,
        _ty_schema: Any = None,
        *,
        default: object = MISSING,
        default_factory: Callable[[], object] | None = MISSING,
        frozen: bool = False,
        init: bool = True,
        repr: bool = True,
        hash: bool | None = True,
        compare: bool = False,
        kw_only: bool | None = False,
        metadata: Mapping[str, Any] | None = None,
        structural_eq: str | None = None,
        doc: str | None = None,
        converter: Callable[[Any], Any] = _field_converter,
        **extra_kwargs: Any,
    ) -> None:
        if default_factory is not MISSING:
            if default is not MISSING:
                raise ValueError("cannot specify both default and default_factory")
            if not callable(default_factory):
                raise TypeError(
                    f"default_factory must be a callable, got {type(default_factory).__name__}"
                )
        if structural_eq not in Field._VALID_STRUCTURAL_EQ_VALUES:
            raise ValueError(
                "structural_eq must be one of "
                f"{sorted(Field._VALID_STRUCTURAL_EQ_VALUES, key=str)}, got {structural_eq!r}"
            )
        self.name: str | None = name
        self._ty_schema = _ty_schema
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.frozen = frozen
        self.init = init
        self.repr = repr
        self.hash = hash
        self.compare = compare
        self.converter = converter
        self.kw_only = kw_only
        self.metadata: dict[str, Any] = dict(metadata) if metadata is not None else {}
        self.structural_eq = structural_eq
        self.doc = doc
        self.extra_kwargs: dict[str, Any] = dict(extra_kwargs)

    def __copy__(self) -> Field:
        """A copy with its own ``metadata`` and ``extra_kwargs`` dicts (values shared)."""
        result = object.__new__(type(self))
        for cls in type(self).__mro__:
            slots = cls.__dict__.get("__slots__", ())
            for slot in (slots,) if isinstance(slots, str) else slots:
                if slot not in ("__dict__", "__weakref__") and hasattr(self, slot):
                    setattr(result, slot, getattr(self, slot))
        if hasattr(self, "__dict__"):
            result.__dict__.update(self.__dict__)
        result.metadata = dict(self.metadata)
        result.extra_kwargs = dict(self.extra_kwargs)
        return result

    def __repr__(self) -> str:
        return (
            f"Field(name={self.name!r}, type={self.type!r}, default={self.default!r}, "
            f"default_factory={self.default_factory!r}, init={self.init!r}, "
            f"repr={self.repr!r}, hash={self.hash!r}, compare={self.compare!r}, "
            f"kw_only={self.kw_only!r}, frozen={self.frozen!r}, "
            f"structural_eq={self.structural_eq!r})"
        )


def field(
    *,
    default: object = MISSING,
    default_factory: Callable[[], object] | None = MISSING,
    frozen: bool = False,
    init: bool = True,
    repr: bool = True,
    hash: bool | None = None,
    compare: bool = True,
    kw_only: bool | None = None,
    metadata: Mapping[str, Any] | None = None,
    structural_eq: str | None = None,
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
    return Field(
        default=default,
        default_factory=default_factory,
        frozen=frozen,
        init=init,
        repr=repr,
        hash=hash,
        compare=compare,
        kw_only=kw_only,
        metadata=metadata,
        structural_eq=structural_eq,
        doc=doc,
        converter=converter,
        **extra_kwargs,
    )


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
        self.name = name
        annotation = self._return_annotation if self._return_annotation is not None else Any
        if "__annotations__" not in owner.__dict__:
            owner.__annotations__ = {}
        owner.__annotations__[name] = annotation
