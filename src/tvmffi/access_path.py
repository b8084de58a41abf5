"""Access paths (``ffi.reflection.AccessPath``): how to reach a value inside an object graph.

Mirrors the official ``tvm_ffi.access_path``: an ``AccessPath`` is built from
``AccessPath.root()`` by ``attr``, ``array_item`` and ``map_item`` steps (and their
``*_missing`` forms), and is reported by structural comparisons.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from typing import Any

from ._core import Object
from .object import register_object

__all__ = ["AccessKind", "AccessPath", "AccessStep"]


class AccessKind(IntEnum):
    """What one access step reaches (the runtime's enum values).

    A field, a sequence item or a map item (0-2); the ``*_MISSING`` kinds (3-5) are
    the same three steps to something one side of a comparison does not have.
    """

    ATTR, ARRAY_ITEM, MAP_ITEM = 0, 1, 2
    ATTR_MISSING, ARRAY_ITEM_MISSING, MAP_ITEM_MISSING = 3, 4, 5


@register_object("ffi.reflection.AccessStep", init=False)
class AccessStep(Object):
    """One step of an access path (fields ``kind`` and ``key``)."""

    __slots__ = ()


_START_FROM_ROOT = "Use AccessPath.root() to create a path to the root object"


@register_object("ffi.reflection.AccessPath", init=False)
class AccessPath(Object):
    """A path from a root object to a nested attribute or item."""

    __slots__ = ()

    def __init__(self) -> None:
        # Paths are values the runtime makes; only root() starts one.
        raise ValueError(f"AccessPath can't be initialized directly. {_START_FROM_ROOT}")

    @classmethod
    def root(cls) -> AccessPath:
        """The path of the root object."""
        return cls._root()  # type: ignore[attr-defined, no-any-return]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AccessPath) and bool(self._path_equal(other))  # type: ignore[attr-defined]

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = Object.__hash__

    def is_prefix_of(self, other: AccessPath) -> bool:
        """True if this path is a prefix of ``other``."""
        return bool(self._is_prefix_of(other))  # type: ignore[attr-defined]

    def attr(self, attr_key: str) -> AccessPath:
        """This path extended by attribute ``attr_key``."""
        return self._attr(attr_key)  # type: ignore[attr-defined, no-any-return]

    def attr_missing(self, attr_key: str) -> AccessPath:
        """This path extended by a missing attribute ``attr_key``."""
        return self._attr_missing(attr_key)  # type: ignore[attr-defined, no-any-return]

    def array_item(self, index: int) -> AccessPath:
        """This path extended by array item ``index``."""
        return self._array_item(index)  # type: ignore[attr-defined, no-any-return]

    def array_item_missing(self, index: int) -> AccessPath:
        """This path extended by a missing array item ``index``."""
        return self._array_item_missing(index)  # type: ignore[attr-defined, no-any-return]

    def map_item(self, key: Any) -> AccessPath:
        """This path extended by map item ``key``."""
        return self._map_item(key)  # type: ignore[attr-defined, no-any-return]

    def map_item_missing(self, key: Any) -> AccessPath:
        """This path extended by a missing map item ``key``."""
        return self._map_item_missing(key)  # type: ignore[attr-defined, no-any-return]

    def to_steps(self) -> Sequence[AccessStep]:
        """The steps from the root to here."""
        return self._to_steps()  # type: ignore[attr-defined, no-any-return]
