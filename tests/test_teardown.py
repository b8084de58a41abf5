"""Freeing deep values (csrc/teardown.c): dropping the last reference to a chain of
200 000 nested containers or py_class objects must neither overflow the C stack (the
runtime's deleters recurse once per level: a segfault at ~100 000 levels) nor leak, and
the iterative free must never touch a value someone else still references."""

from __future__ import annotations

import json
import os
import random
from typing import Any

import pytest
from conftest import run_python
from hypothesis import given, settings
from hypothesis import strategies as st

import tvmffi
import tvmffi.dataclasses
from tvmffi import _core

DEPTH = 200_000

# Each case: code that defines `build()` (returns the head of a fresh deep chain, the
# only reference to it) and `drop(head)` (drops that reference the case's way).
_PRELUDE = """
import json, os, threading
from typing import Any, Optional
import tvmffi as M
import tvmffi.dataclasses

@M.dataclasses.py_class("test_teardown.Node")
class Node(M.Object):
    nxt: Optional[M.Object]
    i: int = 0

@M.dataclasses.py_class("test_teardown.AnyNode")
class AnyNode(M.Object):
    nxt: Any

def drop(head):
    del head

echo = M.get_global_func("testing.echo")

def B(name):
    return M.get_global_func("ffi." + name)

def list_chain():
    a = M.List([])
    for _ in range(N):
        a = M.List([a])
    return a
"""

CASES = {
    "array": "def build():\n    a = M.Array([])\n"
    "    for i in range(N): a = M.Array([i, a])\n    return a",
    "list": "build = list_chain",
    # appended level by level, only the head kept
    "list_append": "def build():\n    h = c = M.List()\n    for _ in range(N):\n"
    "        n = M.List(); c.append(n); c = n\n    return h",
    "map": "def build():\n    a = M.Map({})\n    for i in range(N): a = M.Map({'k': a, 'i': i})\n"
    "    return a",
    # past the small layout: the dense one
    "map_dense": "def build():\n    a = M.Map({})\n"
    "    for i in range(N // 4): a = M.Map({**{j: j for j in range(8)}, 'k': a})\n    return a",
    "dict": "def build():\n    a = M.Dict({})\n    for i in range(N): a = M.Dict({'k': a})\n"
    "    return a",
    "py_class": "def build():\n    a = None\n    for i in range(N): a = Node(a, i)\n    return a",
    "py_class_any_field": "def build():\n    a = None\n"
    "    for i in range(N): a = AnyNode(a)\n    return a",
    # Array inside py_class inside List inside Dict ...
    "mixed": "def build():\n    a = None\n    for i in range(N // 4):\n"
    "        a = M.Dict({'k': M.List([AnyNode(M.Array([a]))])})\n    return a",
    # the runtime drops the chain: each mutation leaves the last reference with tvmffi
    **{
        name: f"def build():\n    return {container}\ndef drop(h):\n    {stmt}"
        for name, container, stmt in [
            ("list_setitem", "M.List([list_chain()])", "h[0] = None"),
            ("list_clear", "M.List([1, list_chain()])", "h.clear()"),
            ("list_delitem", "M.List([1, list_chain()])", "del h[1]"),
            ("list_del_slice", "M.List([1, list_chain(), 2])", "del h[::-1]"),
            ("list_set_slice", "M.List([1, list_chain()])", "h[0:2] = []"),
            ("dict_setitem", "M.Dict({'k': list_chain()})", "h['k'] = 1"),
            ("dict_delitem", "M.Dict({'k': list_chain()})", "del h['k']"),
            ("dict_clear", "M.Dict({'k': list_chain()})", "h.clear()"),
            # the runtime's mutation builtins called directly hold what they drop too
            ("builtin_list_setitem", "M.List([1, list_chain()])", "B('ListSetItem')(h, 1, 0)"),
            ("builtin_list_erase", "M.List([list_chain(), 1])", "B('ListErase')(h, 0)"),
            (
                "builtin_list_erase_range",
                "M.List([1, list_chain()])",
                "B('ListEraseRange')(h, 0, 2)",
            ),
            (
                "builtin_list_replace_slice",
                "M.List([list_chain()])",
                "B('ListReplaceSlice')(h, 0, 1, M.List([1, 2]))",
            ),
            ("builtin_list_clear", "M.List([list_chain()])", "B('ListClear')(h)"),
            ("builtin_dict_setitem", "M.Dict({'k': list_chain()})", "B('DictSetItem')(h, 'k', 1)"),
            ("builtin_dict_erase", "M.Dict({'k': list_chain()})", "B('DictErase')(h, 'k')"),
            ("builtin_dict_clear", "M.Dict({1: list_chain()})", "B('DictClear')(h)"),
            ("typed_field_set", "Node(list_chain())", "h.nxt = None"),
            ("any_field_set", "AnyNode(list_chain())", "h.nxt = None"),
            # a call's result holding the last reference
            ("call_result", "M.List([list_chain()])", "r = echo(h[0]); h.clear(); del r"),
            # the last reference dropped on another thread (its own, smaller stack)
            (
                "other_thread",
                "[list_chain()]",
                "t = threading.Thread(target=h.clear); t.start(); t.join()",
            ),
        ]
    },
}

# Three rounds: a leak grows the resident size by a whole chain per round, a clean free
# lets the allocator reuse the first round's memory.
_ROUNDS = """
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
base = rss()
h = build(); peak = rss(); drop(h); del h
h = build(); drop(h); del h
after2 = rss()
h = build(); drop(h); del h
after3 = rss()
print(json.dumps({"chain": peak - base, "growth": after3 - after2}))
"""


@pytest.mark.parametrize("case", sorted(CASES))
def test_deep_chain_is_freed_without_crash_or_leak(case: str) -> None:
    code = f"N = {DEPTH}\n{_PRELUDE}\n{CASES[case]}\n{_ROUNDS}"
    # Under AddressSanitizer freed blocks sit in a quarantine instead of being reused:
    # without one, the resident size says the same there.
    env = {}
    if "libasan" in os.environ.get("LD_PRELOAD", ""):
        asan = os.environ.get("ASAN_OPTIONS", "")
        env["ASAN_OPTIONS"] = f"{asan}:quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
    proc = run_python(code, timeout=300, env_extra=env)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    sizes = json.loads(proc.stdout.strip().splitlines()[-1])
    # the chain itself takes megabytes; another round of it must not stay resident
    assert sizes["chain"] > 4 << 20, sizes
    assert sizes["growth"] < sizes["chain"] // 2, sizes


def test_layouts_verified_at_import() -> None:
    # The container layouts were read back correctly from values the runtime built, and
    # the py_class deleter is known once a py_class exists: every kind is freed
    # iteratively. A runtime whose layout changed would turn one of these off.
    @tvmffi.dataclasses.py_class("test_teardown.Probe")
    class Probe(tvmffi.Object):
        x: int

    assert _core._teardown_layouts() == (1, 1, 1)


# ---- the iterative free never takes what someone else still holds -----------------------
@tvmffi.dataclasses.py_class("test_teardown.Link")
class Link(tvmffi.Object):
    nxt: tvmffi.Object | None
    i: int = 0


def _array_levels(a: Any) -> list[int]:
    out = []
    while len(a) == 2:
        out.append(a[0])
        a = a[1]
    return out


def test_shared_middle_of_array_chain_survives() -> None:
    a: Any = tvmffi.Array([])
    mid = None
    for i in range(1000):
        a = tvmffi.Array([i, a])
        if i == 499:
            mid = a
    del a
    assert _array_levels(mid) == list(range(499, -1, -1))


def test_shared_middle_of_py_class_chain_survives() -> None:
    a: Any = None
    mid = None
    for i in range(1000):
        a = Link(a, i)
        if i == 499:
            mid = a
    del a
    got = []
    while mid is not None:
        got.append(mid.i)
        mid = mid.nxt
    assert got == list(range(499, -1, -1))


def test_shared_values_of_maps_survive() -> None:
    kept = tvmffi.List([1, tvmffi.List([2])])
    inner = tvmffi.Map({"k": kept, "d": tvmffi.Dict({"x": kept})})
    dense = tvmffi.Dict({**{i: tvmffi.Array([i]) for i in range(20)}, "inner": inner})
    del inner, dense
    assert list(kept) == [1, kept[1]] and list(kept[1]) == [2]


def test_mutations_keep_shared_values_and_results() -> None:
    chain = tvmffi.List([tvmffi.List([7])])
    lst = tvmffi.List([chain, chain, 3])
    lst[0] = None
    del lst[1]
    assert list(lst) == [None, 3] and list(chain[0]) == [7]
    d = tvmffi.Dict({"a": chain, "b": tvmffi.List([8])})
    d["a"] = 1
    popped = d.pop("b")
    assert list(popped) == [8] and dict(d.items()) == {"a": 1} and list(chain[0]) == [7]
    with pytest.raises(KeyError):
        del d["missing"]
    node = Link(chain, 1)
    node.nxt = None
    assert node.nxt is None and list(chain[0]) == [7]


def test_deep_value_returned_from_a_deep_free_is_intact() -> None:
    # a wrapper taken of an inner level keeps that level (and all below) alive
    head: Any = tvmffi.List([])
    for i in range(2000):
        head = tvmffi.List([i, head])
    inner = head[1][1]
    del head
    assert len(_array_levels(inner)) == 1998


# ---- property: dropping any DAG of containers keeps every value still referenced -------
def _to_py(v: Any) -> Any:
    if isinstance(v, (tvmffi.Array, tvmffi.List)):
        return [_to_py(x) for x in v]
    if isinstance(v, (tvmffi.Map, tvmffi.Dict)):
        return {k: _to_py(x) for k, x in v.items()}
    if isinstance(v, Link):
        return ("link", v.i, _to_py(v.nxt))
    return v


_KINDS = ("array", "list", "map", "dict", "link")


@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(_KINDS),
            st.lists(st.integers(min_value=-3, max_value=40), max_size=4),
            st.booleans(),
        ),
        min_size=1,
        max_size=40,
    ),
    rnd=st.randoms(use_true_random=False),
)
@settings(max_examples=150, deadline=None)
def test_dropping_a_dag_keeps_what_is_still_held(
    ops: list[tuple[str, list[int], bool]], rnd: random.Random
) -> None:
    # Value n's children are earlier values (by index, so shared freely) or, for a
    # negative or forward index, the int itself. Flagged values stay referenced from
    # Python; the other wrappers are dropped in a random order (a child's wrapper
    # before its parent's leaves the parent's slot the child's only reference: the
    # case the iterative free takes apart).
    built: list[Any] = []
    expected: list[Any] = []
    kept: list[tuple[Any, Any]] = []
    objs: list[Any] = []
    for n, (kind, picks, keep) in enumerate(ops):
        children = [(built[i], expected[i]) if 0 <= i < n else (i, i) for i in picks]
        values = [c[0] for c in children]
        want = [c[1] for c in children]
        if kind == "array":
            value, exp = tvmffi.Array(values), want
        elif kind == "list":
            value, exp = tvmffi.List(values), want
        elif kind in ("map", "dict"):
            cls = tvmffi.Map if kind == "map" else tvmffi.Dict
            value = cls({f"k{j}": v for j, v in enumerate(values)})
            exp = {f"k{j}": w for j, w in enumerate(want)}
        else:  # a Link's field holds objects only: its first earlier value, or None
            objs = [c for i, c in zip(picks, children, strict=True) if 0 <= i < n]
            value = Link(objs[0][0] if objs else None, n)
            exp = ("link", n, objs[0][1] if objs else None)
        built.append(value)
        expected.append(exp)
        if keep:
            kept.append((value, exp))
    del value, values, children, objs
    order = list(range(len(built)))
    rnd.shuffle(order)
    for i in order:
        built[i] = None
    for value, exp in kept:
        assert _to_py(value) == exp
