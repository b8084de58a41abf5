"""Build errors lead with their cause: the first line says what is wrong (issue 21, item 8).

The command and the tool's full output follow; real compilers and linkers are run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import tvmffi.cpp
from tvmffi import codegen
from tvmffi._build import CompileError
from tvmffi._build.errors import first_error_line
from tvmffi.codegen import Scalar, Signature


def _first_line(err: BaseException) -> str:
    return str(err).splitlines()[0]


def test_missing_kernel_symbol_leads_the_message(tmp_path: Path) -> None:
    with pytest.raises(CompileError) as info:
        codegen.build(
            [(Signature("fill", [Scalar("v", "int32")]), "fill_kernal")],
            sources=["int fill_kernel(int v) { return v; }"],
            name="fill",
            output_dir=tmp_path,
        )
    message = str(info.value)
    assert _first_line(info.value).startswith("undefined symbol: fill_kernal")
    assert "fill_kernal: not defined" in message[:400]
    # The step, the command and the linker's own output follow.
    step = message.index("linking ")
    assert message.index("undefined symbol: fill_kernal") < step < message.index("$ ")
    assert info.value.output.strip() in message


def test_compile_error_leads_with_the_compilers_first_error(tmp_path: Path) -> None:
    with pytest.raises(CompileError) as info:
        codegen.inline(
            Signature("broken", [Scalar("v", "int32")]), "v = undefined_name;", output_dir=tmp_path
        )
    first = _first_line(info.value)
    assert "error:" in first and "undefined_name" in first
    assert "$ " in str(info.value) and not first.startswith("$")


def test_cpp_build_errors_lead_with_their_cause(tmp_path: Path) -> None:
    src = tmp_path / "b.c"
    src.write_text("int v(void) { return 1; }\n")
    with pytest.raises(CompileError) as info:
        tvmffi.cpp.build(
            "badflag", sources=str(src), extra_cflags=["--no-such-flag-xyz"],
            build_directory=str(tmp_path / "o"),
        )  # fmt: skip
    assert "error:" in _first_line(info.value) and "--no-such-flag-xyz" in _first_line(info.value)
    with pytest.raises(CompileError) as info:
        tvmffi.cpp.build(
            "nolib", sources=str(src), extra_ldflags=["-lno_such_library_xyz"],
            build_directory=str(tmp_path / "p"),
        )  # fmt: skip
    # The linker's own line, not the driver's "collect2: error: ld returned 1".
    assert "no_such_library_xyz" in _first_line(info.value)
    assert "collect2" not in _first_line(info.value)


_TOOL_OUTPUTS = [
    ("x.c: In function 'f':\nx.c:3:5: error: 'y' undeclared\nnote: here\n", "x.c:3:5: error"),
    (
        "/usr/bin/ld: cannot find -lfoo\ncollect2: error: ld returned 1 exit status\n",
        "/usr/bin/ld:",
    ),
    ('k.cu(4): error: identifier "q" is undefined\n', "k.cu(4): error:"),
    (
        "In file included from a.h:1,\n/p/b.h:2:10: fatal error: c.h: no file\n",
        "/p/b.h:2:10: fatal",
    ),
    ("\n  something odd happened\nmore\n", "something odd happened"),
]


@pytest.mark.parametrize(("output", "start"), _TOOL_OUTPUTS)
def test_first_error_line(output: str, start: str) -> None:
    line = first_error_line(output)
    assert line.startswith(start) and line in output
    assert first_error_line("") == ""
