"""What the stub generator reads from the runtime's registry (functions and object types)."""

from __future__ import annotations

import functools
import heapq

from ..core import TypeSchema, _lookup_or_register_type_info_from_type_key
from ..registry import get_global_func_metadata, get_registered_type_keys, list_global_func_names
from . import consts as C
from .utils import FuncInfo, NamedTypeSchema, ObjectInfo


@functools.cache
def object_info_from_type_key(type_key: str) -> ObjectInfo:
    """The :class:`ObjectInfo` of registered type ``type_key`` (``ValueError`` when unknown)."""
    info = _lookup_or_register_type_info_from_type_key(str(type_key))
    return ObjectInfo.from_type_info(info)


def collect_global_funcs() -> dict[str, list[FuncInfo]]:
    """Global functions with a type schema, grouped by prefix (the name up to its last dot).

    A name without a dot, or a function without a schema, is reported and skipped.
    """
    funcs: dict[str, list[FuncInfo]] = {}
    for name in list_global_func_names():
        prefix, dot, _ = name.rpartition(".")
        if not dot:
            print(f"{C.TERM_YELLOW}[Skipped] Invalid name in global function: {name}{C.TERM_RESET}")
            continue
        try:
            info = _func_info_from_global_name(name)
        except (KeyError, TypeError, ValueError):
            print(f"{C.TERM_YELLOW}[Skipped] Function has no type schema: {name}{C.TERM_RESET}")
            continue
        funcs.setdefault(prefix, []).append(info)
    for group in funcs.values():
        group.sort(key=lambda f: f.schema.name)
    return funcs


def collect_type_keys() -> dict[str, list[str]]:
    """Registered object type keys, grouped by prefix and sorted; dotless keys are left out."""
    keys: dict[str, list[str]] = {}
    for key in get_registered_type_keys():
        prefix, dot, _ = key.rpartition(".")
        if dot:
            keys.setdefault(prefix, []).append(key)
    for group in keys.values():
        group.sort()
    return keys


def toposort_objects(type_keys: list[str]) -> list[ObjectInfo]:
    """The :class:`ObjectInfo` of each key, parents before children, otherwise by key."""
    infos = {key: object_info_from_type_key(key) for key in dict.fromkeys(type_keys)}
    children: dict[str, list[str]] = {key: [] for key in infos}
    pending: dict[str, int] = dict.fromkeys(infos, 0)
    for key, info in infos.items():
        if info.parent_type_key in infos:
            children[info.parent_type_key].append(key)
            pending[key] = 1
    ready = [key for key, n in pending.items() if n == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        key = heapq.heappop(ready)
        order.append(key)
        for child in children[key]:
            heapq.heappush(ready, child)
    return [infos[key] for key in order]


@functools.cache
def _func_info_from_global_name(name: str) -> FuncInfo:
    schema = TypeSchema.from_json_str(get_global_func_metadata(name)["type_schema"])
    return FuncInfo(schema=NamedTypeSchema(name, schema), is_member=False)
