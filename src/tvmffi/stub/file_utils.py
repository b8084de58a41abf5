"""Reading source files into marked blocks, and writing them back.

A file is a sequence of :class:`CodeBlock`: plain lines (``kind`` None), one-line
directives, and ``begin``/``end`` blocks whose body the generator owns. Writing
a file back joins the blocks, so every line outside a generated block comes
back byte for byte; the write is atomic (a temporary file renamed over it).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import sys
import tempfile
import traceback
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path

from . import consts as C

_BLOCK_KINDS = frozenset({"global", "object", "import-section", "directive", "export", "__all__"})


def syntax_for(path: Path) -> C.MarkerSyntax:
    """The marker syntax of a file, chosen by its extension (Python's by default)."""
    return C.SYNTAX_BY_EXT.get(path.suffix.lower(), C.PYTHON_SYNTAX)


@dataclasses.dataclass
class CodeBlock:
    """One block of a file: plain lines, a directive, or a generated block with its markers."""

    kind: C.STUB_BLOCK_KINDS
    param: str | tuple[str, ...]
    lineno_start: int
    lineno_end: int | None
    lines: list[str]

    def __post_init__(self) -> None:
        """Reject a kind the pipeline does not know."""
        if self.kind is not None and self.kind not in _BLOCK_KINDS:
            raise ValueError(f"unknown code block kind {self.kind!r}")

    @property
    def indent(self) -> int:
        """Indentation (spaces) of the block's first line."""
        if not self.lines:
            return 0
        first = self.lines[0]
        return len(first) - len(first.lstrip(" "))

    @staticmethod
    def from_begin_line(lineo: int, line: str, syntax: C.MarkerSyntax) -> CodeBlock:
        """Parse a marker line (already stripped): a ``begin`` marker or a one-line directive.

        A ``begin`` block comes back without lines and open (``lineno_end`` None);
        a directive comes back closed, its ``param`` ``(name, payload)``.
        Anything else raises ``ValueError`` naming the line.
        """
        if line.startswith(syntax.begin):
            return _begin_block(lineo, line[len(syntax.begin) :].strip())
        name, sep, payload = line[len(syntax.prefix) :].partition("):")
        if not sep or not name or not name.replace("-", "_").isidentifier():
            raise ValueError(f"Unknown stub type at line {lineo}: {line}")
        return CodeBlock("directive", (name, payload.strip()), lineo, lineo, [])


def _begin_block(lineo: int, stub: str) -> CodeBlock:
    kind, slash, rest = stub.partition("/")
    param: str | tuple[str, ...]
    if slash and kind == "global":
        rest = rest.strip()
        param = tuple(rest.split("@")) if "@" in rest else (rest, "")
    elif slash and kind in ("object", "export"):
        param = rest.strip()
    elif stub in ("import-section", "__all__"):
        kind, param = stub, ""
    else:
        raise ValueError(f"Unknown stub type `{stub}` at line {lineo}")
    return CodeBlock(kind, param, lineo, None, [])  # type: ignore[arg-type]


@dataclasses.dataclass
class FileInfo:
    """A parsed file: its lines as read and its blocks (which generation rewrites)."""

    path: Path
    lines: tuple[str, ...]
    code_blocks: list[CodeBlock]
    syntax: C.MarkerSyntax

    def update(self, verbose: bool, dry_run: bool) -> bool:
        """Write the blocks back when they changed the text; return whether they did.

        ``verbose`` prints a unified diff; ``dry_run`` only records the new text.
        """
        new_lines = tuple(line for block in self.code_blocks for line in block.lines)
        if new_lines == self.lines:
            if verbose:
                print(f"{C.TERM_CYAN}-----> Unchanged{C.TERM_RESET}")
            return False
        if verbose:
            _print_diff(self.lines, new_lines)
        self.lines = new_lines
        if not dry_run:
            _write_atomic(self.path, "\n".join(new_lines) + "\n")
        return True

    @staticmethod
    def from_file(
        file: Path, include_empty: bool = False, syntax: C.MarkerSyntax | None = None
    ) -> FileInfo | None:
        """Parse ``file`` into blocks.

        Returns ``None`` for a file with a ``skip-file`` marker, and for one with
        no marker at all unless ``include_empty``. A misplaced marker raises
        ``ValueError`` naming the file and line.
        """
        if not file.is_file():
            raise ValueError(f"not a file: {file}")
        file = file.resolve()
        syntax = syntax or syntax_for(file)
        lines = file.read_text(encoding="utf-8").splitlines()
        stripped = [line.strip() for line in lines]
        if any(s.startswith(syntax.skip_file) for s in stripped):
            return None
        if not include_empty and not any(s.startswith(syntax.prefix) for s in stripped):
            return None
        try:
            blocks = _parse_blocks(lines, syntax)
        except ValueError as err:
            raise ValueError(f"{file}: {err}") from None
        return FileInfo(path=file, lines=tuple(lines), code_blocks=blocks, syntax=syntax)

    def reload(self) -> None:
        """Parse the blocks again from disk, keeping ``lines`` (the text before this run)."""
        source = FileInfo.from_file(self.path, include_empty=True, syntax=self.syntax)
        if source is None:
            raise ValueError(f"{self.path}: the file opted out of stub generation (skip-file)")
        self.code_blocks = source.code_blocks


def _parse_blocks(lines: list[str], syntax: C.MarkerSyntax) -> list[CodeBlock]:
    blocks: list[CodeBlock] = []
    open_block: CodeBlock | None = None
    for lineno, line in enumerate(lines, 1):
        s = line.strip()
        if s.startswith(syntax.begin):
            if open_block is not None:
                raise ValueError(
                    f"Nested stub not permitted at line {lineno} (the block at line "
                    f"{open_block.lineno_start} is not closed)"
                )
            open_block = CodeBlock.from_begin_line(lineno, s, syntax)
            open_block.lines.append(line)
        elif s.startswith(syntax.end):
            if open_block is None:
                raise ValueError(f"Unmatched `{syntax.end}` found at line {lineno}")
            open_block.lineno_end = lineno
            open_block.lines.append(line)
            blocks.append(open_block)
            open_block = None
        elif s.startswith(syntax.prefix):
            if open_block is not None:
                # Inside a block it would be regenerated away (the official tool
                # hoists it above the block): the user is told instead.
                raise ValueError(
                    f"Stub directive at line {lineno} inside the block opened at line "
                    f"{open_block.lineno_start}: move it outside the block"
                )
            directive = CodeBlock.from_begin_line(lineno, s, syntax)
            directive.lines.append(line)
            blocks.append(directive)
        elif open_block is not None:
            open_block.lines.append(line)
        else:
            blocks.append(CodeBlock(None, "", lineno, lineno, [line]))
    if open_block is not None:
        raise ValueError(
            f"Unclosed stub block at end of file (opened at line {open_block.lineno_start})"
        )
    return blocks


def _write_atomic(path: Path, text: str) -> None:
    """Replace ``path``'s content with ``text`` so that no reader sees a partial file.

    The text goes to a temporary file beside it, renamed over it; the file keeps
    its mode (a new one gets the usual ``0o666 & ~umask``). A symlink is written
    through, not replaced.
    """
    path = Path(os.path.realpath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _print_diff(old: tuple[str, ...], new: tuple[str, ...]) -> None:
    colors = {"-": C.TERM_RED, "+": C.TERM_GREEN, "?": C.TERM_YELLOW}
    for line in difflib.unified_diff(old, new, lineterm=""):
        if line.startswith(("---", "+++")):
            continue
        color = colors.get(line[:1])
        print(f"{color}{line}{C.TERM_RESET}" if color else line)


def collect_files(paths: list[Path], source_exts: Collection[str]) -> list[FileInfo]:
    """Parse the marked files among ``paths``, sorted by path.

    A file named explicitly is always read; a directory is walked recursively
    for files whose lower-cased extension is in ``source_exts``. A file that
    fails to parse is reported on stdout, naming it, and left out.
    """
    return _collect_files(paths, source_exts)[0]


def _collect_files(paths: list[Path], source_exts: Collection[str]) -> tuple[list[FileInfo], int]:
    """:func:`collect_files`, and how many files failed to parse."""
    exts = {e.lower() for e in source_exts}
    found: list[Path] = []
    for p in paths:
        if p.is_file():
            found.append(p)
            continue
        for root, _dirs, names in path_walk(p, on_error=_report_error):
            found.extend(root / n for n in names if Path(n).suffix.lower() in exts)
    files: list[FileInfo] = []
    failed = 0
    for path in sorted(found, key=str):
        try:
            info = FileInfo.from_file(path)
        except (ValueError, OSError) as err:  # a bad marker, bad UTF-8, unreadable
            failed += 1
            print(f'{C.TERM_RED}[Failed] File "{path}": {err}{C.TERM_RESET}', flush=True)
        except Exception as err:  # reported; the run goes on
            failed += 1
            _report_error(err)
        else:
            if info is not None:
                files.append(info)
    return files, failed


def _report_error(err: BaseException) -> None:
    text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    print(f"{C.TERM_RED}[Error]\n{text}{C.TERM_RESET}", end="", flush=True)


def path_walk(
    p: Path,
    *,
    top_down: bool = True,
    on_error: Callable[[Exception], None] | None = None,
    follow_symlinks: bool = False,
) -> Iterable[tuple[Path, list[str], list[str]]]:
    """``Path.walk`` (3.12+) for every supported Python; nothing for a missing path."""
    if not p.exists():
        return iter(())
    return _walk(p, top_down, on_error, follow_symlinks)


def _walk(
    p: Path,
    top_down: bool,
    on_error: Callable[[Exception], None] | None,
    follow_symlinks: bool,
) -> Iterator[tuple[Path, list[str], list[str]]]:
    if sys.version_info >= (3, 12):
        yield from p.walk(top_down=top_down, on_error=on_error, follow_symlinks=follow_symlinks)
        return
    for root, dirs, names in os.walk(
        p, topdown=top_down, onerror=on_error, followlinks=follow_symlinks
    ):
        yield Path(root), dirs, names
