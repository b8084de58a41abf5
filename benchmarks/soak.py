"""Soak: every kind of value and call path, a million times each, must leak nothing.

``make soak`` (not part of ``make test``: it takes minutes). For each case below the
step is run ``--warmup`` times (caches fill, free lists settle), then the
process's resident set size and the reference counts of every object the case
holds (``sys.getrefcount``, and ``object_use_count`` of the FFI objects) are taken,
the step runs ``--calls`` times (default 1,000,000), and both are taken again.
A reference count that moved, or an RSS that grew by more than ``--rss-slack-mib``
(default 4 MiB: a leak of 8 bytes per call over a million calls is 8 MiB), fails
the case. The script prints one line per case and exits non-zero, naming every
failed case, if any failed. ``--self-test`` checks the checks: three deliberately
leaking cases (Python references, memory, FFI object references) must be flagged.

Cases: ints (small, large, negative), floats, bools and None, strs (short and
long), bytes, FFI objects, Python containers converted to Array/Map, tvmffi
List/Dict mutation, Python callbacks called from C, errors raised in C and in a
Python callback, NumPy arrays and torch tensors (DLPack) as arguments and
results, ``from_dlpack``, devices and dtypes, and a module built by
``tvmffi.codegen``: function lookup and calls through it.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import tvmffi
import tvmffi.testing
from tvmffi import codegen
from tvmffi._core import object_use_count

try:
    import torch
except ImportError:  # the soak runs without torch, minus its cases
    torch = None


def rss_bytes() -> int:
    """Current resident set size (Linux: /proc/self/statm; else the peak from getrusage)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


class Case:
    """A named step and the objects whose reference counts must not move."""

    def __init__(self, name: str, step: Callable[[], Any], *held: Any) -> None:
        self.name = name
        self.step = step
        self.held = held

    def counts(self) -> list[tuple[str, int]]:
        out = []
        for i, obj in enumerate(self.held):
            out.append((f"getrefcount(held[{i}]: {type(obj).__name__})", sys.getrefcount(obj)))
            if isinstance(obj, tvmffi.Object):
                out.append((f"object_use_count(held[{i}])", object_use_count(obj)))
        return out


def build_module(tmp: str) -> tvmffi.Module:
    sig = codegen.Signature(
        "scale",
        [codegen.Tensor("x", [codegen.Var("n")], "float32"), codegen.Scalar("a", "float32")],
    )
    source = (
        "#include <stdint.h>\n"
        "int scale_kernel(float* x, float a, int64_t n) {\n"
        "  for (int64_t i = 0; i < n; ++i) x[i] *= a;\n"
        "  return 0;\n"
        "}\n"
    )
    return codegen.build([(sig, "scale_kernel")], sources=[source], name="soak", output_dir=tmp)


def make_cases(tmp: str) -> list[Case]:
    t = tvmffi.testing
    echo, apply, nop, raise_error = t.echo, t.apply, t.nop, t.test_raise_error
    big, neg, flt = 2**62 + 12345, -(2**40), 3.25
    short, long_s = "hi", "soak-" * 40
    blob = b"\x00\x01soak" * 30
    arr = tvmffi.convert([1, 2, 3])
    mapping = tvmffi.convert({"k": 1})
    pylist, pydict = [1, "two", 3.0, None], {"a": 1, "b": [2, 3]}
    lst, dct = tvmffi.List(), tvmffi.Dict()
    dev, dt = tvmffi.Device("cpu"), tvmffi.dtype("float32")
    nd = np.arange(16, dtype=np.float32)
    tensor = tvmffi.from_dlpack(nd)

    def callback(x: int) -> int:
        return x + 1

    def failing(x: int) -> int:
        raise KeyError(x)

    def list_step() -> None:
        lst.append(short)
        lst.append(big)
        lst.pop()
        lst.pop()

    def dict_step() -> None:
        dct[short] = arr
        del dct[short]

    def ffi_error() -> None:
        try:
            raise_error("ValueError", "soak")
        except ValueError:
            return
        raise AssertionError("testing.test_raise_error returned")

    def callback_error() -> None:
        try:
            apply(failing, 1)
        except KeyError:
            return
        raise AssertionError("the failing callback's error was lost")

    mod = build_module(tmp)
    scale = mod["scale"]
    small = np.ones(4, np.float32)

    nested = tvmffi.convert([1, "s", {"k": [2, 3]}])
    nested2 = tvmffi.convert([1, "s", {"k": [2, 3]}])
    growing = tvmffi.List([1, tvmffi.List([2])])

    def add_and_remove(v: int) -> None:
        inner = growing[1]
        inner.append(v)
        inner.pop()

    def walk_with_change() -> None:
        # each callback adds and removes an element: the root is checked again
        tvmffi.structural_walk(growing, (int, add_and_remove))

    def module_lookup() -> None:
        mod.get_function("scale")
        mod["scale"]

    # Issue 32's paths: a Shape/Bytes passes its cached object (held for the call), a
    # guarded builtin reached as an Array element, a moved-from Function, a never-raised
    # exception of a class made at run time.
    shape = tvmffi.Shape([2, 3, 4])
    ffi_bytes = echo(b"soak" * 16)
    shape_obj = shape._tvm_ffi_cached_object
    append_any = tvmffi.Array([tvmffi.get_global_func("ffi.ListAppend")])[0]
    pop_any = tvmffi.get_global_func("ffi.ListPop")
    scratch = tvmffi.List()
    moved = tvmffi.convert(lambda: None)
    echo(moved._move())
    made_error = type("SoakError", (ValueError,), {})

    def guarded_builtin() -> None:
        append_any(scratch, arr)
        pop_any(scratch, 0)

    def moved_function() -> None:
        try:
            moved()
        except ValueError:
            return
        raise AssertionError("a moved-from Function was called")

    cases = [
        Case("int small", lambda: echo(7)),
        Case(
            "Shape and Bytes (cached objects)",
            lambda: (nop(shape), echo(ffi_bytes)),
            shape,
            shape_obj,
            ffi_bytes,
        ),
        Case("guarded builtin as an Array element", guarded_builtin, scratch, arr),
        Case("moved-from Function", moved_function),
        Case("exception of a run-time class", lambda: echo(made_error("soak")), made_error),
        Case("int large", lambda: echo(big), big),
        Case("int negative", lambda: echo(neg), neg),
        Case("float", lambda: echo(flt), flt),
        Case("bool and None", lambda: (echo(True), echo(None))),
        Case("str short", lambda: echo(short), short),
        Case("str long", lambda: echo(long_s), long_s),
        Case("bytes", lambda: echo(blob), blob),
        Case("object (Array)", lambda: echo(arr), arr),
        Case("object (Map)", lambda: echo(mapping), mapping),
        Case("Python list -> Array", lambda: echo(pylist), pylist, *pylist[:3]),
        Case("Python dict -> Map", lambda: echo(pydict), pydict),
        Case("List append/pop", list_step, lst, short, big),
        Case("Dict set/del", dict_step, dct, arr),
        Case("Array index and len", lambda: (arr[1], len(arr)), arr),
        Case("callback from C", lambda: apply(callback, 1), callback),
        Case("error raised in C", ffi_error),
        Case("error raised in a callback", callback_error, failing),
        Case("device and dtype", lambda: (echo(dev), echo(dt)), dev, dt),
        Case("nop, 4 args", lambda: nop(1, flt, short, arr), arr),
        Case("numpy array -> Tensor", lambda: echo(nd), nd),
        Case("Tensor object", lambda: echo(tensor), tensor, nd),
        Case("from_dlpack(numpy)", lambda: tvmffi.from_dlpack(nd), nd),
        Case("module lookup", module_lookup, mod, scale),
        Case("module call (numpy)", lambda: scale(small, 1.0), mod, scale, small),
        Case(
            "structural equal/hash",
            lambda: (tvmffi.structural_equal(nested, nested2), tvmffi.structural_hash(nested)),
            nested,
            nested2,
        ),
        Case("structural walk with a change", walk_with_change, growing),
    ]
    if torch is not None:
        tt = torch.arange(16, dtype=torch.float32)
        t2, t3 = torch.ones(4, 4), torch.zeros(2, 3, 4)
        cases += [
            Case("torch tensor -> Tensor", lambda: echo(tt), tt),
            Case("module call (torch)", lambda: scale(tt, 1.0), scale, tt),
            Case("3 distinct torch tensors", lambda: nop(tt, t2, t3), tt, t2, t3),
        ]
    return cases


def run_case(case: Case, calls: int, warmup: int, slack: int) -> str | None:
    """Run one case; None when it held steady, else what moved."""
    step = case.step
    for _ in range(warmup):
        step()
    gc.collect()
    before_counts = case.counts()
    before_rss = rss_bytes()
    start = time.perf_counter()
    for _ in range(calls):
        step()
    elapsed = time.perf_counter() - start
    gc.collect()
    grown = rss_bytes() - before_rss
    after_counts = case.counts()
    problems = [
        f"{what}: {a} -> {b}"
        for (what, a), (_, b) in zip(before_counts, after_counts, strict=True)
        if a != b
    ]
    if grown > slack:
        problems.append(f"RSS grew by {grown / 2**20:.1f} MiB (slack {slack / 2**20:.0f} MiB)")
    status = "FAIL" if problems else "ok"
    print(
        f"{status:4} {case.name:28} {calls:>9} calls {elapsed:7.2f} s "
        f"{elapsed / calls * 1e9:7.0f} ns/call  RSS {grown / 2**20:+6.2f} MiB",
        flush=True,
    )
    return "; ".join(problems) or None


def self_test(slack: int) -> int:
    """Check the checks: three deliberately leaking cases must each be flagged."""
    keep: list[Any] = []
    token, arr = object(), tvmffi.convert([1, 2])
    echo = tvmffi.testing.echo
    leaks = [
        Case("self-test: Python references", lambda: keep.append(token), token),
        Case("self-test: memory", lambda: keep.append(bytearray(64))),
        Case("self-test: FFI references", lambda: keep.append(echo(arr)), arr),
    ]
    missed = [c.name for c in leaks if run_case(c, 100_000, 100, slack) is None]
    keep.clear()
    print("self-test:", "every leak was flagged" if not missed else f"MISSED {missed}")
    return 1 if missed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--warmup", type=int, default=20_000)
    parser.add_argument("--rss-slack-mib", type=float, default=4.0)
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    parser.add_argument(
        "--self-test", action="store_true", help="only check that deliberate leaks are flagged"
    )
    args = parser.parse_args(argv)
    slack = int(args.rss_slack_mib * 2**20)
    if args.self_test:
        return self_test(slack)
    print(
        f"tvmffi soak: {args.calls} calls per case, python {sys.version.split()[0]}, "
        f"torch {'absent' if torch is None else torch.__version__}",
        flush=True,
    )
    failures = []
    with tempfile.TemporaryDirectory(prefix="tvmffi-soak-") as tmp:
        cases = [c for c in make_cases(tmp) if args.only in c.name]
        start = time.perf_counter()
        for case in cases:
            problem = run_case(case, args.calls, args.warmup, slack)
            if problem:
                failures.append(f"{case.name}: {problem}")
        total = time.perf_counter() - start
    print(
        f"{len(cases) - len(failures)} passed, {len(failures)} failed "
        f"({len(cases)} cases, {total:.0f} s)"
    )
    for failure in failures:
        print(f"FAILED {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
