"""Instructions per call of the tensor-argument rows, counted by callgrind.

Run: ``python benchmarks/callgrind_tensors.py [N]`` (needs valgrind and a C
compiler). One process runs under ``valgrind --tool=callgrind``; for each row
it warms the row's loop up, zeroes callgrind's counters, runs a loop of N
calls and dumps the counters (client requests from a small C helper compiled
on the spot, called through ctypes). The count divided by N is the cost of one
loop iteration, the Python loop included (the ``pass`` row). Unlike timings,
the counts do not move with the load of a shared machine, so a before/after
comparison of one path holds to a few instructions.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

ROWS = {
    "pass (the loop alone)": "pass",
    "nop(x) [NumPy]": "o_nop(x)",
    "nop(x, x, x) [NumPy]": "o_nop(x, x, x)",
    "nop(a, b, c) [3 NumPy arrays]": "o_nop(x, x2, x3)",
    "nop(y) [torch contiguous]": "o_nop(y)",
    "nop(y.t()) [torch transposed]": "o_nop(yt)",
    "nop(a, b, c) [3 distinct torch]": "o_nop(y, y2, y3)",
    "nop(t) [official tvm_ffi Tensor]": "o_nop(tt)",
    "nop(t, t, t) [official tvm_ffi Tensors]": "o_nop(tt, tt, tt)",
    "nop(v) [tvmffi TensorView]": "o_nop(v)",
    "nop(t) [tvmffi Tensor]": "o_nop(ot)",
    "echo(x) [NumPy -> Tensor]": "o_echo(x)",
}

_HELPER = r"""
#include <valgrind/callgrind.h>
void cg_zero(void) { CALLGRIND_ZERO_STATS; }
void cg_dump(const char* name) { CALLGRIND_DUMP_STATS_AT(name); }
"""

# What the rows' statements use (the default setup of count()).
_SETUP = r"""
import numpy as np, torch, tvm_ffi, tvmffi
f = tvmffi.get_global_func
o_nop, o_echo = f("testing.nop"), f("testing.echo")
o_nop.release_gil = False
o_echo.release_gil = False
x, x2, x3 = (np.zeros((16, 16), dtype="float32") for _ in range(3))
y, y2, y3 = (torch.zeros(16, 16) for _ in range(3))
yt = y.t()
tt = tvm_ffi.from_dlpack(x)
ot = tvmffi.from_dlpack(x)
v = tvmffi.TensorView(x)
"""

# Runs each statement in a loop between zeroing and dumping callgrind's counters.
_LOOP = r"""
import ctypes, sys
cg = ctypes.CDLL(sys.argv[1])
cg.cg_dump.argtypes = [ctypes.c_char_p]
N = int(sys.argv[2])
for i, stmt in enumerate(sys.argv[3:]):
    exec("def run():\n    for _ in range(N):\n        " + stmt + "\n")
    run()  # warm: type caches, free lists
    cg.cg_zero()
    run()
    cg.cg_dump(b"row%d" % i)
"""


def count(stmts: list[str], n: int, setup: str = _SETUP) -> list[float]:
    """Instructions per iteration of a loop of each statement, in one process.

    ``setup`` is the Python code that defines the names the statements use.
    """
    with tempfile.TemporaryDirectory() as tmp:
        helper = os.path.join(tmp, "cg.so")
        src = os.path.join(tmp, "cg.c")
        with open(src, "w") as fh:
            fh.write(_HELPER)
        subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", helper, src], check=True)
        out = os.path.join(tmp, "cg.out")
        subprocess.run(
            [
                "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                sys.executable, "-c", setup + _LOOP, helper, str(n), *stmts,
            ],
            check=True, capture_output=True,
        )
        counts: dict[str, int] = {}
        for name in os.listdir(tmp):
            if not name.startswith("cg.out."):
                continue
            with open(os.path.join(tmp, name)) as fh:
                text = fh.read()
            trigger = re.search(r"^desc: Trigger: Client Request: (row\d+)", text, re.M)
            total = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.M)
            if trigger and total:
                counts[trigger.group(1)] = int(total.group(1))
        return [counts[f"row{i}"] / n for i in range(len(stmts))]


def main() -> None:
    """Print one markdown row per case."""
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed")
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    print(f"| row (N = {n}) | instructions per iteration |\n| --- | ---: |")
    # The first dump also counts callgrind's own start-up of the counters: a
    # throw-away row takes it.
    counts = count(["pass", *ROWS.values()], n)[1:]
    for name, c in zip(ROWS, counts, strict=True):
        print(f"| `{name}` | {c:.0f} |")


if __name__ == "__main__":
    main()
