"""Dataclass benchmark: a ``@py_class`` with four typed fields, tvmffi vs tvm_ffi.

Run: ``python benchmarks/bench_dataclasses.py``. Each side defines the same class
``P(a: int, b: float, c: str, d: int = 7)`` through its own ``py_class`` and the
rows time the dataclass machinery: construction, a field read and write, ``==``,
``hash``, ``repr`` and ``copy.copy`` (min over interleaved repeats, one process).
"""

from __future__ import annotations

import copy
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import tvm_ffi
import tvm_ffi.dataclasses
from _harness import Case, report

import tvmffi
import tvmffi.dataclasses


@tvmffi.dataclasses.py_class("bench.tvmffi.DataclassP", eq=True, unsafe_hash=True)
class OurP(tvmffi.Object):
    """Our side: four typed fields, one with a default."""

    a: int
    b: float
    c: str
    d: int = 7


@tvm_ffi.dataclasses.py_class("bench.tvm_ffi.DataclassP", eq=True, unsafe_hash=True)
class TheirP(tvm_ffi.Object):
    """The same class through the official binding."""

    a: int
    b: float
    c: str
    d: int = 7


CASES = [
    Case("P(1, 2.0, 's')", "o_cls(1, 2.0, 's')", "t_cls(1, 2.0, 's')"),
    Case("p.a", "o_p.a", "t_p.a"),
    Case("p.a = 3", "o_p.a = 3", "t_p.a = 3"),
    Case("p == q", "o_p == o_q", "t_p == t_q"),
    Case("hash(p)", "hash(o_p)", "hash(t_p)"),
    Case("repr(p)", "repr(o_p)", "repr(t_p)"),
    Case("copy.copy(p)", "copy(o_p)", "copy(t_p)"),
]


def main() -> None:
    """Measure and print the table."""
    env = {
        "copy": copy.copy,
        "o_cls": OurP,
        "t_cls": TheirP,
        "o_p": OurP(1, 2.0, "s"),
        "o_q": OurP(1, 2.0, "s"),
        "t_p": TheirP(1, 2.0, "s"),
        "t_q": TheirP(1, 2.0, "s"),
    }
    report(CASES, env)


if __name__ == "__main__":
    main()
