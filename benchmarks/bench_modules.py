"""Module benchmark: function lookup and calls through a loaded module, tvmffi vs tvm_ffi.

Compiles the plain C fixture library (tests/module_fixtures/plain.c) into a
temporary directory and loads it with both bindings.
Run: ``python benchmarks/bench_modules.py``.
"""

from __future__ import annotations

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "module_fixtures"))

import fixture_build  # noqa: E402
import tvm_ffi  # noqa: E402
from _harness import Case, report  # noqa: E402

import tvmffi  # noqa: E402

CASES = [
    Case('mod["add_int"] (cached lookup)', 'o_mod["add_int"]', 't_mod["add_int"]'),
    Case("mod.add_int (cached attribute)", "o_mod.add_int", "t_mod.add_int"),
    Case("mod.add_int(1, 2)", "o_mod.add_int(1, 2)", "t_mod.add_int(1, 2)"),
    Case("f = mod.add_int; f(1, 2)", "o_f(1, 2)", "t_f(1, 2)"),
    Case("f = mod.add_int; f(1, 2) [release_gil=False]", "og_f(1, 2)", "tg_f(1, 2)"),
]


def main() -> None:
    """Build the fixture, measure and print the table."""
    with tempfile.TemporaryDirectory() as tmp:
        path = fixture_build.build("plain", tmp)
        o_mod = tvmffi.load_module(path)
        t_mod = tvm_ffi.load_module(path)
        env: dict[str, object] = {
            "o_mod": o_mod,
            "t_mod": t_mod,
            "o_f": o_mod.add_int,
            "t_f": t_mod.add_int,
            # Separate handles (tvmffi caches a module's functions) so that
            # release_gil = False does not reach the rows above.
            "og_f": tvmffi.load_module(path).get_function("add_int"),
            "tg_f": tvm_ffi.load_module(path).get_function("add_int"),
        }
        env["og_f"].release_gil = False  # type: ignore[attr-defined]
        env["tg_f"].release_gil = False  # type: ignore[attr-defined]
        report(CASES, env)


if __name__ == "__main__":
    main()
