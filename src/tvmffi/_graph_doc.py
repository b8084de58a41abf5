"""The check of a JSON graph document before the runtime's decoder reads it.

The runtime's ``ffi.FromJSONGraphString`` / ``ffi.FromJSONGraph`` trust the document:
a node index written as ``true`` reads as 1 (a node containing itself: the decoder
recurses until the C stack overflows), an out-of-range enum value decodes into an
object whose printer crashes, and its JSON parser recurses once per level of
nesting. So every document is treated as untrusted and checked here in one place,
whatever route it arrives by (:func:`tvmffi.serialization.from_json_graph_str`, the
global functions from ``get_global_func`` or ``_ffi_api``, ``pickle``): the text's
nesting, the JSON, the types of every field of every node the root reaches, node
indices, acyclicity, depth, and the ranges of integer and enum fields. The runtime
then reads the document exactly as checked: it is written again (nodes the root
does not reach as ``null``), so no difference between two JSON parsers (duplicate
keys, number syntax) can smuggle anything past the check.

Bad input raises ``TypeError`` (a field of the wrong JSON type) or ``ValueError``
(a value out of range, an unknown type, a cycle), ``RecursionError`` when nested
too deeply for this thread's stack; each names the node and field at fault.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from itertools import accumulate
from typing import Any

from . import _core
from .function import get_global_func
from .object import _type_info_by_index, get_fields

__all__ = ["checked_document", "checked_json_text", "checked_text"]

# Estimated C stack per level, about 2.5x the measured worst case: of the graph
# (the runtime's decoder recursing into a child) and of the JSON text (a parser's
# recursion into a nested array or object, CPython's or the runtime's).
DECODE_LEVEL_BYTES = 10240
_TEXT_LEVEL_BYTES = 2048
_PREFIX = "Invalid JSON Object Graph: "
_INT64 = (-(2**63), 2**63 - 1)
_INT_FIELD_RANGES = {1: (-(2**7), 2**7 - 1), 2: (-(2**15), 2**15 - 1), 4: (-(2**31), 2**31 - 1)}
# Enumerations stored in plain integer fields; reflection does not say which they are.
_ENUM_FIELDS: dict[tuple[str, str], tuple[int, int]] = {
    ("ffi.reflection.AccessStep", "kind"): (0, 5),  # AccessKind: kAttr .. kMapItemMissing
}
# Lengths of a chain of nodes: never more than the document has nodes.
_CHAIN_LENGTH_FIELDS = frozenset({("ffi.reflection.AccessPath", "depth")})
# Field static type indices the decoder reads inline (None, int, bool, float, DataType);
# fields of any other type hold a node index.
_INLINE_FIELD_TYPES = frozenset({0, 1, 2, 3, 5})
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(r"[\[\]{}]")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?\Z")
_DECIMAL = re.compile(r"-?[0-9]+\Z")


class _Node:
    """Where an error is: a node index and its type, for messages."""

    __slots__ = ("index", "key")

    def __init__(self, index: int, key: Any) -> None:
        self.index, self.key = index, key

    def error(self, cls: type[Exception], what: str) -> Exception:
        return cls(f"{_PREFIX}node {self.index} ({self.key}): {what}")


_TYPE_NAMES = {dict: "an object", list: "an array", str: "a string", int: "an integer",
               float: "a number", type(None): "null"}  # fmt: skip


def _json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _expect_int(node: _Node, what: str, value: Any, bounds: tuple[int, int] = _INT64) -> int:
    """``value`` as an integer within ``bounds`` (JSON true/false are not integers)."""
    if type(value) is not int:
        raise node.error(TypeError, f"{what} must be an integer, not {_json_type(value)}")
    if not bounds[0] <= value <= bounds[1]:
        raise node.error(ValueError, f"{what} = {value} is out of range [{bounds[0]}, {bounds[1]}]")
    return value


_KIND_NAMES = {bool: "true or false", str: "a string", list: "an array", dict: "an object"}


def _expect(node: _Node, what: str, value: Any, kind: type) -> Any:
    if type(value) is not kind:
        raise node.error(TypeError, f"{what} must be {_KIND_NAMES[kind]}, not {_json_type(value)}")
    return value


def _expect_number(node: _Node, what: str, value: Any) -> None:
    if type(value) is int:
        try:
            float(value)
        except OverflowError:
            raise node.error(ValueError, f"{what} is out of a double's range") from None
    elif type(value) is not float:
        raise node.error(TypeError, f"{what} must be a number, not {_json_type(value)}")


def _expect_index(node: _Node, what: str, value: Any, count: int) -> int:
    if type(value) is not int:
        raise node.error(TypeError, f"{what} must be a node index (an integer), not "
                                    f"{_json_type(value)}")  # fmt: skip
    if not 0 <= value < count:
        raise ValueError(f"{_PREFIX}invalid node index {value} (in node {node.index}, {what})")
    return value


# ---- per-type rules: check a node's "data", return the node indices it refers to ----
Rule = Callable[[_Node, Any, int], list[int]]


def _no_data(node: _Node, data: Any, count: int) -> list[int]:
    return []


def _scalar(kind: type) -> Rule:
    def rule(node: _Node, data: Any, count: int) -> list[int]:
        _expect(node, '"data"', data, kind)
        return []

    return rule


def _int_data(node: _Node, data: Any, count: int) -> list[int]:
    _expect_int(node, '"data"', data)
    return []


def _float_data(node: _Node, data: Any, count: int) -> list[int]:
    _expect_number(node, '"data"', data)
    return []


def _device_data(node: _Node, data: Any, count: int) -> list[int]:
    _expect(node, '"data"', data, list)
    if len(data) != 2:
        raise node.error(ValueError, f'"data" must be [device_type, device_id], not {data!r}')
    for i, part in enumerate(data):
        _expect_int(node, f'"data"[{i}]', part, _INT_FIELD_RANGES[4])
    return []


def _bytes_data(node: _Node, data: Any, count: int) -> list[int]:
    _expect(node, '"data"', data, str)
    if not _BASE64.match(data):
        raise node.error(ValueError, '"data" is not base64 text')
    return []


def _shape_data(node: _Node, data: Any, count: int) -> list[int]:
    _expect(node, '"data"', data, list)
    for i, dim in enumerate(data):
        _expect_int(node, f'"data"[{i}]', dim)
    return []


def _sequence_data(node: _Node, data: Any, count: int) -> list[int]:
    _expect(node, '"data"', data, list)
    return [_expect_index(node, f'"data"[{i}]', r, count) for i, r in enumerate(data)]


def _map_data(node: _Node, data: Any, count: int) -> list[int]:
    refs = _sequence_data(node, data, count)
    if len(refs) % 2:
        raise node.error(ValueError, "Map/Dict data must contain an even number of elements "
                                     "(key, value pairs)")  # fmt: skip
    return refs


def _bigint_data(node: _Node, data: Any, count: int) -> list[int]:
    _expect(node, '"data"', data, str)
    if not _DECIMAL.match(data):
        raise node.error(ValueError, '"data" must be a decimal integer')
    return []


_BUILTIN_RULES: dict[str, Rule] = {
    "None": _no_data,
    "bool": _scalar(bool),
    "int": _int_data,
    "float": _float_data,
    "DataType": _scalar(str),
    "Device": _device_data,
    "ffi.String": _scalar(str),
    "ffi.Bytes": _bytes_data,
    "ffi.Shape": _shape_data,
    "ffi.Array": _sequence_data,
    "ffi.List": _sequence_data,
    "ffi.Map": _map_data,
    "ffi.Dict": _map_data,
    "ffi.BigInt": _bigint_data,
}
# Static types past the rules above: plain values, and objects the decoder cannot make
# (Object, Error, Function, Tensor, Module, OpaquePyObject, ...): kTVMFFIStaticObjectEnd.
_STATIC_END = 79


def _field_rule(type_key: str, index: int) -> Rule:
    """The rule for the "data" of an object type decoded field by field."""
    fields = []
    for f in get_fields(type_key):
        bounds = _ENUM_FIELDS.get((type_key, f.name)) or _INT_FIELD_RANGES.get(f.size, _INT64)
        fields.append((f.name, f.static_type_index, bounds, (type_key, f.name)))

    def rule(node: _Node, data: Any, count: int) -> list[int]:
        _expect(node, '"data"', data, dict)
        refs = []
        for name, static, bounds, where in fields:
            if name not in data:
                continue  # the decoder uses the default, or reports the field missing
            value, what = data[name], f"field {name!r}"
            if where in _CHAIN_LENGTH_FIELDS:
                _expect_int(node, what, value, (0, count))
            elif static == 1:
                _expect_int(node, what, value, bounds)
            elif static == 2:
                _expect(node, what, value, bool)
            elif static == 3:
                _expect_number(node, what, value)
            elif static == 5:
                _expect(node, what, value, str)
            elif static not in _INLINE_FIELD_TYPES:
                refs.append(_expect_index(node, what, value, count))
        return refs

    return rule


def _enum_rule(int_index: bool) -> Rule:
    def rule(node: _Node, data: Any, count: int) -> list[int]:
        if int_index:
            _expect_int(node, '"data"', data)
        else:
            _expect(node, '"data"', data, str)
        return []

    return rule


def _is_subtype(index: int, ancestor_key: str) -> bool:
    ancestor = _core._type_key_to_index(ancestor_key)
    if ancestor is None:
        return False
    info: Any = _type_info_by_index(index)
    while info is not None:
        if info.type_index == ancestor:
            return True
        info = info.parent_type_info
    return False


def _rule_for(type_key: str) -> Rule:
    """How nodes of ``type_key`` are checked (ValueError for a type the decoder cannot make)."""
    rule = _BUILTIN_RULES.get(type_key)
    if rule is not None:
        return rule
    index = _core._type_key_to_index(type_key)
    if index is None:
        raise ValueError(f"{_PREFIX}unknown type key {type_key!r}")
    if _core._lookup_type_attr(index, "__data_from_json__") is not None:
        # The type reads its own data (a JSON value the text check bounds); static
        # types too: a client such as TVM teaches the runtime to read ffi.Module.
        return _no_data
    if index < _STATIC_END:
        raise ValueError(f"{_PREFIX}type {type_key!r} cannot be read from a JSON graph")
    if _is_subtype(index, "ffi.IntEnum"):
        return _enum_rule(True)
    if _is_subtype(index, "ffi.Enum"):
        return _enum_rule(False)
    return _field_rule(type_key, index)


# ---- the document ---------------------------------------------------------------------
def _check_nesting(text: str) -> None:
    """RecursionError unless the text's arrays and objects nest shallowly enough for a
    JSON parser (CPython's, then the runtime's) on this thread's stack."""
    brackets = _BRACKETS.findall(_STRINGS.sub("", text))
    deepest = max(accumulate(map(_STEP.__getitem__, brackets)), default=0)
    if deepest > _core._depth_limit(_TEXT_LEVEL_BYTES):
        raise RecursionError(f"JSON text nested too deeply ({deepest} levels) to parse "
                             "on this thread's stack")  # fmt: skip


def _parse(text: str) -> Any:
    _check_nesting(text)
    try:
        return json.loads(text)
    except RecursionError as err:
        raise RecursionError("JSON graph text nested too deeply to parse") from err
    except ValueError as err:
        raise ValueError(f"Invalid JSON graph text: {err}") from err


def _reachable_refs(nodes: list[Any], root: int) -> dict[int, list[int]]:
    """Every node ``root`` reaches, checked by its type's rule, with the indices it refers to."""
    count = len(nodes)
    rules: dict[str, Rule] = {}
    refs: dict[int, list[int]] = {}
    todo = [root]
    while todo:
        i = todo.pop()
        if i in refs:
            continue
        raw = nodes[i]
        if type(raw) is not dict:
            raise TypeError(f"{_PREFIX}node {i} must be an object, not {_json_type(raw)}")
        key = raw.get("type")
        node = _Node(i, key)
        if type(key) is not str:
            raise TypeError(f'{_PREFIX}node {i}: "type" must be a string, not {_json_type(key)}')
        rule = rules.get(key)
        if rule is None:
            rule = rules[key] = _rule_for(key)
        if "data" not in raw and rule is not _no_data:
            raise node.error(TypeError, 'missing "data"')
        kids = refs[i] = rule(node, raw.get("data"), count)
        todo.extend(kids)
    return refs


def _check_acyclic(refs: dict[int, list[int]], root: int, limit: int) -> None:
    """No cycle among the reached nodes, and no path from ``root`` longer than ``limit``."""
    height: dict[int, int] = {}  # of the nodes done
    on_path = {root}
    stack: list[tuple[int, int]] = [(root, 0)]  # (node, position of its next child)
    while stack:
        i, pos = stack[-1]
        kids = refs[i]
        if pos == len(kids):
            stack.pop()
            on_path.discard(i)
            height[i] = 1 + max((height[k] for k in kids), default=0)
            continue
        stack[-1] = (i, pos + 1)
        k = kids[pos]
        if k in on_path:
            raise ValueError(f"{_PREFIX}node {k} refers to itself (a cycle)")
        if k not in height:
            if len(stack) >= limit:
                raise RecursionError(
                    "JSON graph nested too deeply to decode on this thread's stack"
                )
            on_path.add(k)
            stack.append((k, 0))


def _checked(doc: Any) -> dict[str, Any]:
    """The document the runtime may read in ``doc``'s place (raises unless it is sound)."""
    if type(doc) is not dict:
        raise TypeError(f"{_PREFIX}the document must be an object, not {_json_type(doc)}")
    nodes, root = doc.get("nodes"), doc.get("root_index")
    if type(nodes) is not list:
        raise TypeError(f'{_PREFIX}"nodes" must be an array, not {_json_type(nodes)}')
    if type(root) is not int:
        raise TypeError(f'{_PREFIX}"root_index" must be an integer, not {_json_type(root)}')
    if not 0 <= root < len(nodes):
        raise ValueError(f"{_PREFIX}invalid node index {root} (root_index)")
    refs = _reachable_refs(nodes, root)
    _check_acyclic(refs, root, _core._depth_limit(DECODE_LEVEL_BYTES))
    return {"root_index": root, "nodes": [n if i in refs else None for i, n in enumerate(nodes)]}


def checked_text(value: Any) -> Any:
    """What ``ffi.FromJSONGraphString`` may read for the argument ``value``: the checked
    document's text for a text (or a value whose ``__tvm_ffi_value__`` gives one); any
    other value as converted (the runtime reports its type)."""
    value = _core._graph_check(value, DECODE_LEVEL_BYTES, False)
    if not isinstance(value, str):
        return value
    doc = _checked(_parse(value))
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


def checked_json_text(value: Any) -> Any:
    """What ``ffi.json.Parse`` (which recurses once per level) may read for ``value``."""
    value = _core._graph_check(value, DECODE_LEVEL_BYTES, False)
    if isinstance(value, str):
        _check_nesting(value)
    return value


def checked_document(value: Any) -> Any:
    """What ``ffi.FromJSONGraph`` may read for the JSON value ``value`` (a dict or Map)."""
    value = _core._graph_check(value, DECODE_LEVEL_BYTES, False)
    if isinstance(value, str):
        return value  # not a document: the runtime reports it
    text = get_global_func("ffi.json.Stringify")(value, None)
    return _checked(_parse(str(text)))


# ---- the runtime's decoders, however they are reached ---------------------------------
_CHECKERS: dict[int, Callable[[Any], Any]] = {}


def _vet(function: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The builtin vetting hook: the arguments a guarded decoder may read instead."""
    check = _CHECKERS.get(function.__chandle__())
    if check is None or not args:
        return args
    return (check(args[0]), *args[1:])


def _guard_decoders() -> None:
    """Every Function for the runtime's decoders looked up from now on (``get_global_func``,
    ``_ffi_api``) vets its argument here before the runtime reads it."""
    names = {
        "ffi.FromJSONGraphString": checked_text,
        "ffi.FromJSONGraph": checked_document,
        "ffi.json.Parse": checked_json_text,
    }
    _core._set_builtin_vetting(_vet, frozenset(names))
    for name, check in names.items():
        function = _core.get_global_func(name, True)
        if function is not None:
            _CHECKERS[function.__chandle__()] = check


_guard_decoders()
