"""Object benchmark: fields, methods, echo(obj), structural equal/hash — tvmffi vs tvm_ffi.

Run: ``python benchmarks/bench_objects.py``. Both sides use their own registered
class for ``testing.TestObjectBase``.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import tvm_ffi
import tvm_ffi.dataclasses
import tvm_ffi.testing
from _harness import Case, own_cost_table, report, runtime_call_ns

import tvmffi
import tvmffi.dataclasses
import tvmffi.testing


@tvmffi.register_object("testing.TestObjectBase")
class TestObjectBase(tvmffi.Object):
    """Our class for the testing type."""

    __slots__ = ()


@tvmffi.register_object("testing.TestObjectDerived")
class TestObjectDerived(TestObjectBase):
    """Our class for the derived testing type (it has object-valued fields)."""

    __slots__ = ()


@tvmffi.dataclasses.py_class("bench.tvmffi.Point", eq=True)
class OurPoint(tvmffi.Object):
    """A Python-defined type on our side (typed fields: int64 and double in place)."""

    x: int
    y: float = 0.0


@tvm_ffi.dataclasses.py_class("bench.tvm_ffi.Point", eq=True)
class TheirPoint(tvm_ffi.Object):
    """The same type defined through the official binding."""

    x: int
    y: float = 0.0


_DERIVED = {"v_i64": 1, "v_f64": 2.0, "v_str": "s", "v_map": {"a": 1}, "v_array": [1, 2]}


def _env() -> dict[str, object]:
    return {
        "o_obj": TestObjectBase(v_i64=1),
        "t_obj": tvm_ffi.testing.TestObjectBase(v_i64=1),
        "o_der": TestObjectDerived(**_DERIVED),
        "t_der": tvm_ffi.testing.TestObjectDerived(**_DERIVED),
        "o_echo": tvmffi.get_global_func("testing.echo"),
        "t_echo": tvm_ffi.get_global_func("testing.echo"),
        "o_arr": tvmffi.Array([1, 2, 3]),
        "t_arr": tvm_ffi.Array([1, 2, 3]),
        # structural: a small nested value and an equal copy (ours checks both for
        # cycles and depth before the runtime's recursive comparison)
        "o_s1": tvmffi.convert([1, "s", {"k": [2, 3]}]),
        "o_s2": tvmffi.convert([1, "s", {"k": [2, 3]}]),
        "t_s1": tvm_ffi.convert([1, "s", {"k": [2, 3]}]),
        "t_s2": tvm_ffi.convert([1, "s", {"k": [2, 3]}]),
        "o_pcls": OurPoint,
        "t_pcls": TheirPoint,
        "o_pt": OurPoint(1, 2.0),
        "t_pt": TheirPoint(1, 2.0),
        "o_pt2": OurPoint(1, 2.0),
        "t_pt2": TheirPoint(1, 2.0),
        "o_seq": tvmffi.structural_equal,
        "t_seq": tvm_ffi.structural_equal,
        "o_shash": tvmffi.structural_hash,
        "t_shash": tvm_ffi.structural_hash,
    }


OBJECT_CASES = [
    Case("obj.v_i64", "o_obj.v_i64", "t_obj.v_i64"),
    Case("obj.v_i64 = 2", "o_obj.v_i64 = 2", "t_obj.v_i64 = 2"),
    Case("obj.add_i64(1)", "o_obj.add_i64(1)", "t_obj.add_i64(1)"),
    Case("echo(obj)", "o_echo(o_obj)", "t_echo(t_obj)"),
    Case("obj.v_array [new wrapper each read]", "o_der.v_array", "t_der.v_array"),
    Case("arr[1]", "o_arr[1]", "t_arr[1]"),
    Case("len(arr)", "len(o_arr)", "len(t_arr)"),
    Case("py_class Point(1, 2.0)", "o_pcls(1, 2.0)", "t_pcls(1, 2.0)"),
    Case("py_class p.x", "o_pt.x", "t_pt.x"),
    Case("py_class p.x = 3 [converted]", "o_pt.x = 3", "t_pt.x = 3"),
    Case("py_class p == q [eq=True]", "o_pt == o_pt2", "t_pt == t_pt2"),
    Case("structural_equal(small nested)", "o_seq(o_s1, o_s2)", "t_seq(t_s1, t_s2)"),
    Case("structural_hash(small nested)", "o_shash(o_s1)", "t_shash(t_s1)"),
]


def main() -> None:
    """Measure and print the table, then the own costs of the rows with runtime work."""
    env = _env()

    def runtime_floors() -> tuple[float, float, float]:
        return (
            runtime_call_ns("ffi.RecursiveEq", env["o_pt"], env["o_pt2"]),
            runtime_call_ns("ffi.StructuralEqual", env["o_s1"], env["o_s2"], False, False),
            runtime_call_ns("ffi.StructuralHash", env["o_s1"], False, False),
        )

    # The floors are taken before and after the rows (min of both): the VM has slow phases.
    before = runtime_floors()
    rows = report(OBJECT_CASES, env)
    eq, seq, shash = (min(a, b) for a, b in zip(before, runtime_floors(), strict=True))
    floors = {
        "py_class p == q [eq=True]": (eq, eq),
        "structural_equal(small nested)": (seq, seq),
        "structural_hash(small nested)": (shash, shash),
    }
    print("\nRows whose runtime function does real work: its cost called from C++, and each")
    print("binding's own cost (the row minus it)")
    print(own_cost_table(rows, floors))


if __name__ == "__main__":
    main()
