"""Call-path benchmark: tvmffi vs the official tvm_ffi binding in one process.

Run: ``make bench`` (or ``python benchmarks/bench_calls.py``).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from _harness import Case, report, testing_funcs


def _env() -> dict[str, object]:
    # The og_/tg_ handles keep the GIL: the call path without the two GIL
    # transitions (~25-40 ns here) that both bindings pay by default.
    names = ("nop", "echo", "add_one", "apply")
    env = testing_funcs(names, gil_kept=names)
    env["s100"] = "x" * 100
    env["pyfunc"] = lambda x: x
    return env


CORE_CASES = [
    Case("nop()", "o_nop()", "t_nop()"),
    Case("add_one(1)", "o_add_one(1)", "t_add_one(1)"),
    Case("echo(1.5)", "o_echo(1.5)", "t_echo(1.5)"),
    Case('echo("hello")', 'o_echo("hello")', 't_echo("hello")'),
    Case("echo(<100-char str>)", "o_echo(s100)", "t_echo(s100)"),
    Case("echo(None)", "o_echo(None)", "t_echo(None)"),
    Case("apply(<python callable>, 1)", "o_apply(pyfunc, 1)", "t_apply(pyfunc, 1)"),
    Case("nop() [release_gil=False]", "og_nop()", "tg_nop()"),
    Case("add_one(1) [release_gil=False]", "og_add_one(1)", "tg_add_one(1)"),
    Case("echo(None) [release_gil=False]", "og_echo(None)", "tg_echo(None)"),
    Case(
        "apply(<python callable>, 1) [release_gil=False]",
        "og_apply(pyfunc, 1)",
        "tg_apply(pyfunc, 1)",
    ),
]


def main() -> None:
    """Measure and print the table."""
    report(CORE_CASES, _env())


if __name__ == "__main__":
    main()
