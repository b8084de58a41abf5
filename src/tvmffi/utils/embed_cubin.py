"""Embed a CUBIN into an object file for ``TVM_FFI_EMBED_CUBIN(name)``.

The result holds the input object plus the CUBIN bytes between the symbols
``__tvm_ffi__cubin_<name>`` and ``__tvm_ffi__cubin_<name>_end``, local to the
object (so several objects may embed CUBINs under one name). Command line::

    python -m tvmffi.utils.embed_cubin --input-obj old.o --output-obj new.o \\
        --cubin kernels.cubin --name my_kernels [--verbose]

Needs a C compiler (for its assembler) and binutils' ``ld`` and ``objcopy``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .._build import toolchain
from .._build.errors import failure_message

__all__ = ["embed_cubin", "main"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _run(cmd: list[str], step: str, verbose: bool) -> None:
    if verbose:
        print(f"[{step}] {' '.join(cmd)}")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if verbose and (proc.stdout or proc.stderr):
        print((proc.stdout + proc.stderr).rstrip())
    if proc.returncode != 0:  # the cause first, then the command and the full output
        output = proc.stdout + proc.stderr
        raise RuntimeError(failure_message(step, "", proc.returncode, cmd, output))


def _asm_source(cubin: Path, name: str) -> str:
    # .incbin takes the bytes as they are: no intermediate copy and no symbol
    # names derived from the file name (what `ld -b binary` would produce).
    quoted = str(cubin).replace("\\", "\\\\").replace('"', '\\"')
    start, end = f"__tvm_ffi__cubin_{name}", f"__tvm_ffi__cubin_{name}_end"
    return (
        f'\t.section .rodata.tvm_ffi_cubin.{name},"a",@progbits\n'
        "\t.balign 64\n"
        f"\t.globl {start}\n\t.type {start}, @object\n{start}:\n"
        f'\t.incbin "{quoted}"\n'
        f"\t.globl {end}\n{end}:\n"
        "\t.byte 0\n"  # keeps the end symbol inside the section
        '\t.section .note.GNU-stack,"",@progbits\n'  # no executable stack
    )


def embed_cubin(
    cubin_path: Path, input_obj_path: Path, output_obj_path: Path, name: str, verbose: bool = False
) -> None:
    """Write ``output_obj_path``: ``input_obj_path`` plus the CUBIN at ``cubin_path``.

    ``name`` is the one given to ``TVM_FFI_EMBED_CUBIN(name)`` in the C++ source
    compiled into the input object. Raises ``FileNotFoundError`` for a missing
    input, ``ValueError`` for a name that is not a C identifier and
    ``RuntimeError`` (with the command and its output) when a tool fails.
    """
    cubin_path, input_obj_path = Path(cubin_path), Path(input_obj_path)
    output_obj_path = Path(output_obj_path)
    if not cubin_path.is_file():
        raise FileNotFoundError(f"CUBIN file not found: {cubin_path}")
    if not input_obj_path.is_file():
        raise FileNotFoundError(f"input object file not found: {input_obj_path}")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"CUBIN name must be a C identifier, got {name!r}")
    # The build system's tools ($CC, $LD, $OBJCOPY honoured), found in one place.
    cc = toolchain.compiler("c")
    ld, objcopy = toolchain.binutil("ld"), toolchain.binutil("objcopy")
    if verbose:
        print(
            f"embedding {cubin_path} ({cubin_path.stat().st_size} bytes) as {name!r} "
            f"into {input_obj_path} -> {output_obj_path}"
        )
    with tempfile.TemporaryDirectory(prefix="tvmffi-cubin-") as tmp:
        asm = Path(tmp) / "cubin.S"
        asm.write_text(_asm_source(cubin_path.resolve(), name))
        cubin_obj = Path(tmp) / "cubin.o"
        _run([cc, "-c", str(asm), "-o", str(cubin_obj)], "assemble the CUBIN", verbose)
        merged = Path(tmp) / "merged.o"
        _run(
            [ld, "-r", "-o", str(merged), str(input_obj_path), str(cubin_obj)],
            "merge the objects",
            verbose,
        )
        # Local only after the merge: the input's references resolve first.
        _run(
            [
                objcopy,
                "--localize-symbol",
                f"__tvm_ffi__cubin_{name}",
                "--localize-symbol",
                f"__tvm_ffi__cubin_{name}_end",
                str(merged),
            ],
            "localize the CUBIN symbols",
            verbose,
        )
        output_obj_path.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(merged), str(output_obj_path))
    if verbose:
        print(f"wrote {output_obj_path}")


def _parser() -> argparse.ArgumentParser:
    cli = argparse.ArgumentParser(
        prog="python -m tvmffi.utils.embed_cubin",
        description="Embed a CUBIN into an object file for TVM_FFI_EMBED_CUBIN(name).",
    )
    for flag, meaning in (
        ("--input-obj", "the object compiled from the source that uses TVM_FFI_EMBED_CUBIN"),
        ("--output-obj", "where to write the object with the CUBIN inside"),
        ("--cubin", "the CUBIN file"),
        ("--name", "the name given to TVM_FFI_EMBED_CUBIN (a C identifier)"),
    ):
        cli.add_argument(flag, required=True, help=meaning)
    cli.add_argument("--verbose", action="store_true", help="print each tool command")
    return cli


def main(argv: list[str] | None = None) -> int:
    """Command line entry; returns the exit status (1 with the reason on stderr on failure)."""
    opts = _parser().parse_args(argv)
    try:
        embed_cubin(
            Path(opts.cubin), Path(opts.input_obj), Path(opts.output_obj), opts.name, opts.verbose
        )
    except (OSError, ValueError, RuntimeError) as err:
        print(f"embed_cubin: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
