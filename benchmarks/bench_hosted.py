"""Apache TVM hosted on tvmffi vs on the official binding: an FFI-heavy TVM workload.

Run: ``make bench`` (or ``python benchmarks/bench_hosted.py [--repeats R]``).

The same workload runs in fresh interpreters, alternately plain (TVM on the official
binding) and hosted (``TVMFFI_HOST=1``: every ``import tvm_ffi`` answers tvmffi), and
each phase's best time over the repeats is reported:

- ``parse``: TVMScript parse of ``--funcs`` small TIR functions (the parser calls the
  FFI for every node it builds);
- ``print``: TVMScript print of each (a second pass: the first fills TVM's printer
  tables);
- ``structural_equal``: each function against its re-parsed copy, ten times over;
- ``vm_calls``: ``--calls`` calls of a Relax VM function on one small tensor.

The worker (``--worker``) times the phases after TVM is imported and the VM built, so
start-up and compilation are not in the figures.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from _harness import machine

PHASES = ("parse", "print", "structural_equal", "vm_calls")

TIR_TEMPLATE = '''
@T.prim_func(s_tir=True)
def f{i}(a: T.handle, b: T.handle):
    A = T.match_buffer(a, ({n},), "float32")
    B = T.match_buffer(b, ({n},), "float32")
    for i in range({n}):
        if i % {m} == 0:
            B[i] = A[i] * T.float32({i}) + T.float32(1)
        else:
            B[i] = T.max(A[i], T.float32({m}))
'''


def worker(funcs: int, calls: int) -> dict[str, float]:
    """Run the workload in this process; seconds per phase."""
    import numpy as np
    import tvm
    from tvm import relax
    from tvm.script import ir as I
    from tvm.script import relax as R
    from tvm.script import tirx as T

    sources = [
        TIR_TEMPLATE.format(i=i, n=8 + i % 5, m=2 + i % 3)
        for i in range(funcs)
    ]

    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            y = R.add(x, x)
            return y

    vm = relax.VirtualMachine(relax.build(Mod, target="llvm"), tvm.cpu())
    main = vm["main"]
    x = tvm.runtime.tensor(np.arange(4, dtype="float32"))
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    parsed = [tvm.script.from_source(s, extra_vars={"T": T}) for s in sources]
    out["parse"] = time.perf_counter() - t0
    texts = [f.script() for f in parsed]  # the first print fills TVM's printer tables
    t0 = time.perf_counter()
    texts = [f.script() for f in parsed]
    out["print"] = time.perf_counter() - t0
    again = [tvm.script.from_source(t, extra_vars={"T": T}) for t in texts]
    t0 = time.perf_counter()
    for _ in range(10):
        for a, b in zip(parsed, again, strict=True):
            tvm.ir.assert_structural_equal(a, b)
    out["structural_equal"] = time.perf_counter() - t0
    main(x)
    t0 = time.perf_counter()
    for _ in range(calls):
        main(x)
    out["vm_calls"] = time.perf_counter() - t0
    np.testing.assert_array_equal(main(x).numpy(), 2 * np.arange(4, dtype="float32"))
    return out


def run(mode: str, funcs: int, calls: int) -> dict[str, float]:
    env = dict(os.environ)
    env.pop("TVMFFI_HOST", None)
    if mode == "hosted":
        env["TVMFFI_HOST"] = "1"
    cmd = [sys.executable, __file__, "--worker", "--funcs", str(funcs), "--calls", str(calls)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{mode} worker failed:\n{proc.stderr[-4000:]}")
    res: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--funcs", type=int, default=200)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(worker(a.funcs, a.calls)))
        return 0
    best: dict[str, dict[str, float]] = {"plain": {}, "hosted": {}}
    for _ in range(a.repeats):  # interleaved: plain, hosted, plain, ...
        for mode in ("plain", "hosted"):
            for phase, s in run(mode, a.funcs, a.calls).items():
                best[mode][phase] = min(s, best[mode].get(phase, float("inf")))
    import tvm

    print(
        f"{datetime.date.today()} on {machine()}; apache-tvm {tvm.__version__}, "
        f"{a.funcs} functions, {a.calls} VM calls, best of {a.repeats}"
    )
    print("| phase | plain (s) | hosted (s) | ratio hosted/plain |")
    print("| --- | ---: | ---: | ---: |")
    for phase in (*PHASES, "total"):
        if phase == "total":
            p, h = (sum(best[m][q] for q in PHASES) for m in ("plain", "hosted"))
        else:
            p, h = best["plain"][phase], best["hosted"][phase]
        print(f"| `{phase}` | {p:.3f} | {h:.3f} | {h / p:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
