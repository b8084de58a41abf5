"""Build failures a user can act on: the compiler's own words, the command, the file.

Every message leads with its cause (:func:`failure_message`): the symbols a link
left undefined, with what usually causes each (see :func:`undefined_symbols_hint`),
or the tool's first ``error:`` line; the step, the command and the tool's full
output follow.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Sequence

__all__ = ["CompileError"]

# GNU ld: "undefined reference to `foo'"; lld: "undefined symbol: foo".
_UNDEFINED = re.compile(r"undefined reference to [`'\u2018]([^'`\u2019]+)['\u2019]"
                        r"|undefined symbol: (\S+)")
# gcc/clang "f.c:3:5: error: ...", "fatal error:", nvcc "f.cu(3): error: ...", ld's "ld: ...".
_ERROR_LINE = re.compile(r"\berror\b\s*:|^\S*\bld(?:\.\w+)?: ", re.IGNORECASE | re.MULTILINE)
# The linker driver's summary says only that the linker failed: never the cause.
_SUMMARY_LINE = re.compile(r"^(?:collect2|clang(?:\+\+)?|\S*gcc|\S*g\+\+): error: (?:ld|linker)")


class CompileError(RuntimeError):
    """A compile or link step failed.

    The message holds the command, the compiler's output, the file it was
    building and, for generated code, where that code was written. Attributes:
    ``path`` (the file compiled, or the library being linked), ``output`` (the
    tool's output), ``command`` (the argument list) and ``undefined_symbols``
    (names a link left undefined; empty otherwise).
    """

    def __init__(self, message: str, path: str, output: str, command: list[str] | None = None,
                 undefined_symbols: tuple[str, ...] = ()):
        super().__init__(message)
        self.path = path
        self.output = output
        self.command = list(command or [])
        self.undefined_symbols = undefined_symbols


def undefined_symbols(output: str) -> tuple[str, ...]:
    """The distinct symbol names a linker's output reports as undefined, in order."""
    seen: dict[str, None] = {}
    for match in _UNDEFINED.finditer(output):
        seen.setdefault(match.group(1) or match.group(2))
    return tuple(seen)


def _defined_mangled(objects: list[str]) -> set[str]:
    """Defined global symbols of ``objects`` (``nm``); empty when nm is unavailable."""
    try:
        proc = subprocess.run(["nm", "-P", "--defined-only", "-g", *objects],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return set()
    return {line.split()[0] for line in proc.stdout.splitlines() if line.split()}


def undefined_symbols_hint(names: tuple[str, ...], objects: list[str]) -> str:
    """Lines saying, for each undefined symbol, its likely cause and fix."""
    defined = _defined_mangled(objects) if objects else set()
    lines = [f"undefined symbol{'s' if len(names) > 1 else ''}: {', '.join(names)} "
             "(the library would fail to load or crash on its first call; a symbol that the "
             "loading process provides may be left to load time with -Wl,-z,undefs)"]
    for name in names:
        mangled = sorted(s for s in defined if s.startswith(f"_Z{len(name)}{name}"))
        if mangled:
            lines.append(f"  {name}: defined with C++ linkage ({mangled[0]}) but called with C "
                         f'linkage: declare it extern "C" in its C++/CUDA source')
        elif name.startswith(("GOMP_", "omp_", "__kmpc_")):
            lines.append(f"  {name}: OpenMP runtime: add -fopenmp to the linker flags "
                         "(extra_ldflags)")
        elif name.startswith(("cuda", "__cuda")):
            lines.append(f"  {name}: CUDA runtime: link it (extra_ldflags=['-lcudart'])")
        elif name.startswith(("__asan", "__ubsan", "__tsan")):
            lines.append(f"  {name}: sanitizer runtime: pass the -fsanitize flag to the linker "
                         "too (extra_ldflags)")
        elif name.startswith("Py"):
            lines.append(f"  {name}: provided by the Python process: link with -Wl,-z,undefs "
                         "(extra_ldflags) to leave it to load time")
        else:
            lines.append(f"  {name}: not defined by any source or library linked: check its "
                         "spelling, that its definition is compiled, and that its library is "
                         "linked (extra_ldflags, e.g. -lfoo)")
    return "\n".join(lines)


def first_error_line(output: str) -> str:
    """The tool's first line saying what went wrong (its first ``error:`` or linker line,
    else its first line); empty for no output."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if _ERROR_LINE.search(line) and not _SUMMARY_LINE.match(line):
            return line
    return lines[0] if lines else ""


def failure_message(what: str, path: str, returncode: int, command: list[str], output: str,
                    names: tuple[str, ...] = (), objects: Sequence[str] = (),
                    note: str = "") -> str:
    """The text of a failed build step's :class:`CompileError`, cause first: the undefined
    symbols and their likely fixes (a link), or the tool's first error line; then the step,
    the command, the tool's full output and ``note``."""
    step = f"{what} {path}".strip() + f" failed (exit {returncode})"
    cause = (undefined_symbols_hint(names, list(objects)) if names
             else first_error_line(output) or step)
    parts = [cause, f"{step}:", f"$ {command_text(command)}", output.strip(), note]
    return "\n".join(p for p in parts if p)


def command_text(cmd: list[str]) -> str:
    """A shell-pasteable rendering of ``cmd``."""
    return " ".join(shlex.quote(part) for part in cmd)
