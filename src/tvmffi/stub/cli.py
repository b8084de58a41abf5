"""The ``tvmffi-stubgen`` command (the official ``tvm-ffi-stubgen``).

It rewrites, in place, the generated blocks of the given files and directories
from the registry of the loaded libraries::

    # tvm-ffi-stubgen(begin): global/my_ext          function stubs of prefix my_ext
    # tvm-ffi-stubgen(end)
    # tvm-ffi-stubgen(begin): object/my_ext.Point    fields and methods of a type
    # tvm-ffi-stubgen(ty-map): my_ext.Point -> my_pkg.Point

Lines outside the blocks are never touched. ``--init-*`` scaffolds missing API
files for a package; ``--check`` reports stale files; ``--coverage-out``
writes which object layouts are reproducible from reflection.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ..core import _object_type_key_to_index
from . import consts as C
from .file_utils import CodeBlock, FileInfo, _collect_files, _write_atomic, syntax_for
from .generator import Generator, generator_names, get_generator
from .layout import classify, write_coverage_report
from .lib_state import (
    collect_global_funcs,
    collect_type_keys,
    object_info_from_type_key,
    toposort_objects,
)
from .utils import FuncInfo, InitConfig, Options

_T = TypeVar("_T")


def __main__() -> int:
    """Run ``tvmffi-stubgen`` with ``sys.argv``.

    Returns 0 on success, 2 when a file failed, 1 when ``--check`` found a
    stale file.
    """
    opt = _parse_args()
    generator = get_generator(opt.target)
    try:
        for name in opt.imports:
            importlib.import_module(name)
        dlls = [ctypes.CDLL(lib) for lib in opt.dlls]  # kept loaded for the run
    except (ImportError, OSError) as err:
        print(f"{C.TERM_RED}[Failed] cannot load what --imports/--dlls name: {err}{C.TERM_RESET}")
        return 2
    files, failed = _collect_files([Path(f) for f in opt.files], generator.source_exts)
    global_funcs = collect_global_funcs()
    init_path: Path | None = None
    if opt.files:
        init_path = Path(opt.files[0]).resolve()
        if init_path.is_file():
            init_path = init_path.parent

    ty_map = generator.default_ty_map()
    for file in files:
        failed += not _guarded(file, _stage_1, file, ty_map)[0]

    generated: set[str] = set()
    if opt.init is not None and init_path is not None:
        generated = _stage_2(files, ty_map, opt.init, init_path, global_funcs, generator)

    before = {f.path: generator.check_view(f.code_blocks) for f in files} if opt.check else {}
    failed += _roll_out_prefixes(files, generator)

    declared = _declared_objects(files)
    stale = 0
    for file in files:
        if opt.verbose:
            print(f"{C.TERM_CYAN}[File] {file.path}{C.TERM_RESET}")
        ok, changed = _guarded(file, _stage_3, file, opt, ty_map, global_funcs, generator, declared)
        if not ok:
            failed += 1
        elif opt.check and changed and generator.check_view(file.code_blocks) != before[file.path]:
            stale += 1
            print(f"{C.TERM_YELLOW}[Stale] {file.path}{C.TERM_RESET}")

    if generated and init_path is not None:
        generator.finalize_init(init_path, generated)
    if opt.coverage_out is not None:
        infos = {
            key: object_info_from_type_key(key)
            for keys in collect_type_keys().values()
            for key in keys
        }
        write_coverage_report(Path(opt.coverage_out), classify(infos))
    del dlls
    return 2 if failed else 1 if stale else 0


def _guarded(file: FileInfo, step: Callable[..., _T], *args: Any) -> tuple[bool, _T | None]:
    """``(True, step(*args))``, or ``(False, None)`` after reporting the failure naming ``file``."""
    try:
        return True, step(*args)
    except Exception:  # one bad file must not stop the others
        print(f'{C.TERM_RED}[Failed] File "{file.path}": {traceback.format_exc()}{C.TERM_RESET}')
        return False, None


def _stage_1(file: FileInfo, ty_map: dict[str, str]) -> None:
    """Add the file's ``ty-map`` directives (``A.B -> C.D``) to ``ty_map``."""
    for code in file.code_blocks:
        if code.kind != "directive" or code.param[0] != "ty-map":
            continue
        lhs, arrow, rhs = code.param[1].partition("->")
        if not arrow or "->" in rhs or not lhs.strip() or not rhs.strip():
            raise ValueError(
                f"Invalid ty_map format at line {code.lineno_start}. Example: `A.B -> C.D`"
            )
        ty_map[lhs.strip()] = rhs.strip()


def _new_blocks(syntax: C.MarkerSyntax, lineno: int, stub: str) -> list[CodeBlock]:
    """A blank line and an empty ``begin``/``end`` block for ``stub``."""
    begin = f"{syntax.begin} {stub}"
    block = CodeBlock.from_begin_line(lineno, begin, syntax)
    block.lineno_end = lineno
    block.lines = [begin, syntax.end]
    return [CodeBlock(None, "", lineno, lineno, [""]), block]


def _roll_out_prefixes(files: list[FileInfo], generator: Generator) -> int:
    """Give a file with a ``prefix`` directive an ``object/`` block per type of that prefix.

    Types with a block anywhere in the run, named by a ``skip`` directive, or
    bound by the target's runtime are left out; blocks of types no longer
    registered are dropped. Returns the number of files in error.
    """
    defined = {c.param for f in files for c in f.code_blocks if c.kind == "object"}
    registry = collect_type_keys()
    owners: dict[str, Path] = {}
    failed = 0
    for file in files:
        directives = [c for c in file.code_blocks if c.kind == "directive"]
        heads = [c for c in directives if c.param[0] == "prefix"]
        if not heads:
            continue
        head = heads[0]
        prefix = head.param[1].rstrip(".")
        error = ""
        if len(heads) > 1:
            error = f"more than one `prefix` directive (line {heads[1].lineno_start})"
        elif owners.setdefault(prefix, file.path) != file.path:
            error = f"prefix `{prefix}` is already declared by {owners[prefix]}"
        if error:
            failed += 1
            print(f'{C.TERM_RED}[Failed] File "{file.path}": {error}{C.TERM_RESET}')
            continue
        _drop_unregistered(file, prefix, registry.get(prefix, []))
        if prefix not in registry:
            note = f"[Skipped] No registered object under prefix `{prefix}`"
            print(f"{C.TERM_YELLOW}{note}{C.TERM_RESET}")
            continue
        skipped = {c.param[1].strip() for c in directives if c.param[0] == "skip"}
        keys = [
            k
            for k in registry[prefix]
            if k not in defined and k not in skipped and not generator.is_builtin(k)
        ]
        blocks = file.code_blocks
        if not any(c.kind == "import-section" for c in blocks):
            at = blocks.index(head) + 1
            blocks[at:at] = _new_blocks(file.syntax, head.lineno_start, "import-section")
        at = 1 + max(i for i, c in enumerate(blocks) if c.kind in ("object", "import-section"))
        blocks[at:at] = [
            block
            for info in toposort_objects(keys)
            for block in _new_blocks(file.syntax, head.lineno_start, f"object/{info.type_key}")
        ]
    return failed


def _drop_unregistered(file: FileInfo, prefix: str, registered: list[str]) -> None:
    """Remove each ``object/`` block directly under ``prefix`` whose type is not registered."""
    kept: list[CodeBlock] = []
    for code in file.code_blocks:
        stale = (
            code.kind == "object"
            and isinstance(code.param, str)
            and code.param.rpartition(".")[0] == prefix
            and code.param not in registered
        )
        if not stale:
            kept.append(code)
            continue
        print(
            f'{C.TERM_YELLOW}[Removed] File "{file.path}": `object/{code.param}` '
            f"(line {code.lineno_start}): the type is no longer registered{C.TERM_RESET}"
        )
        if kept and kept[-1].kind is None and kept[-1].lines == [""]:
            kept.pop()  # the blank line a roll-out put before the block
    file.code_blocks[:] = kept


def _stage_2(
    files: list[FileInfo],
    ty_map: dict[str, str],
    init_cfg: InitConfig,
    init_path: Path,
    global_funcs: dict[str, list[FuncInfo]],
    generator: Generator,
) -> set[str]:
    """``--init``: scaffold the API file and package entry of each prefix under ``init_cfg``.

    Only functions and types with no block in any file yet are scaffolded;
    the new text is appended to existing files. Returns the prefixes written.
    """
    defined_prefixes = {c.param[0] for f in files for c in f.code_blocks if c.kind == "global"}
    defined_objs = {c.param for f in files for c in f.code_blocks if c.kind == "object"}
    skipped = {
        c.param[1].strip()
        for f in files
        for c in f.code_blocks
        if c.kind == "directive" and c.param[0] == "skip"
    }
    wanted = init_cfg.prefix.strip()
    if wanted and not wanted.endswith("."):
        wanted += "."
    root = wanted.rstrip(".")
    prefixes = collect_type_keys()
    for prefix in global_funcs:
        prefixes.setdefault(prefix, [])
    written: set[str] = set()
    for prefix, keys in prefixes.items():
        if prefix != root and not prefix.startswith(wanted):
            continue
        funcs = [] if prefix in defined_prefixes else global_funcs.get(prefix, [])
        funcs = sorted(funcs, key=lambda f: f.schema.name)
        objs = sorted(k for k in set(keys) - defined_objs - skipped if not generator.is_builtin(k))
        infos = toposort_objects(objs)
        if not funcs and not infos:
            continue
        written.add(prefix)
        directory = init_path / prefix.replace(".", "/")
        directory.mkdir(parents=True, exist_ok=True)
        api = _file_for(files, directory / generator.api_filename())
        _append(
            api,
            generator.generate_api_file(
                api.code_blocks, ty_map, prefix, infos, init_cfg, is_root=prefix == root
            ),
        )
        submodule = generator.api_filename().rsplit(".", 1)[0]
        entry = _file_for(files, directory / generator.init_filename())
        _append(entry, generator.generate_init_file(entry.code_blocks, prefix, submodule))
    return written


def _file_for(files: list[FileInfo], path: Path) -> FileInfo:
    """The run's :class:`FileInfo` of ``path``, read (or started empty) and added if new."""
    if path.exists():
        for f in files:
            if path.samefile(f.path):
                return f
        found = FileInfo.from_file(path, include_empty=True)
        if found is None:
            raise ValueError(f"{path}: the file opted out of stub generation (skip-file)")
    else:
        found = FileInfo(path=path.resolve(), lines=(), code_blocks=[], syntax=syntax_for(path))
    files.append(found)
    return found


def _append(file: FileInfo, text: str) -> None:
    """Append ``text`` to the file on disk (atomically) and parse its blocks again."""
    old = file.path.read_text(encoding="utf-8") if file.path.exists() else ""
    _write_atomic(file.path, old + text)
    file.reload()


def _declared_objects(files: list[FileInfo]) -> dict[str, Path]:
    """Type key of every ``object/`` block of ``files`` -> the first file holding one."""
    declared: dict[str, Path] = {}
    for f in files:
        for c in f.code_blocks:
            if c.kind == "object" and isinstance(c.param, str):
                declared.setdefault(c.param, f.path)
    return declared


def _stage_3(
    file: FileInfo,
    opt: Options,
    ty_map: dict[str, str],
    global_funcs: dict[str, list[FuncInfo]],
    generator: Generator,
    declared: Mapping[str, Path] | None = None,
) -> bool:
    """Regenerate every block of ``file``; return whether its text changed.

    ``declared`` defaults to the file's own ``object/`` blocks. Blocks of
    types no longer registered are kept as they are and reported together,
    as a ``ValueError``, once the rest of the file is written.
    """
    if declared is None:
        declared = _declared_objects([file])
    imports = generator.new_imports()
    for code in file.code_blocks:
        if code.kind != "directive" or code.param[0] in C.PIPELINE_DIRECTIVE_KINDS:
            continue
        name, payload = code.param[0], code.param[1]
        if name not in generator.directive_kinds:
            raise ValueError(f"Unknown directive `{name}` at line {code.lineno_start}")
        generator.add_directive(imports, name, payload, code.lineno_start)
    func_names: set[str] = set()
    for code in file.code_blocks:
        if code.kind == "global":
            funcs = global_funcs.get(code.param[0], [])
            func_names.update(f.schema.name for f in funcs)
            generator.generate_global_funcs_block(code, funcs, ty_map, imports, opt)
    unregistered: list[str] = []
    type_names: set[str] = set()
    for code in file.code_blocks:
        if code.kind != "object":
            continue
        key = code.param
        assert isinstance(key, str)
        if _object_type_key_to_index(key) is None:
            unregistered.append(f"`object/{key}` (line {code.lineno_start})")
            continue
        info = object_info_from_type_key(key)
        type_names.add(generator.canonical_type_name(ty_map.get(key, key)))
        generator.generate_object_block(code, ty_map, imports, opt, info, declared)
    for code in file.code_blocks:
        if code.kind == "import-section":
            generator.generate_import_section_block(code, imports, opt, type_names)
            break  # one import section per file
    for code in file.code_blocks:
        if code.kind == "__all__":
            names = func_names | type_names | generator.extra_export_names(imports)
            generator.generate_all_block(code, names, opt)
            break  # one export list per file
    for code in file.code_blocks:
        if code.kind == "export":
            generator.generate_export_block(code)
    changed = file.update(verbose=opt.verbose, dry_run=opt.dry_run)
    if unregistered:
        raise ValueError(
            f"{file.path}: {', '.join(unregistered)}: the type is no longer registered; "
            "delete the block"
        )
    return changed


def _split_list(arg: str | None) -> list[str]:
    return [item.strip() for item in (arg or "").split(";") if item.strip()]


def _parse_args() -> Options:
    class Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawTextHelpFormatter):
        pass

    parser = argparse.ArgumentParser(
        prog="tvm-ffi-stubgen",
        description=(
            "Generate type stubs for TVM FFI extensions, in place, inside the "
            "`tvm-ffi-stubgen` blocks of the given files.\n"
            "- `--init-*` scaffolds missing API files (`_ffi_api.py`, `__init__.py`) for "
            "the registered functions and types of a prefix.\n"
            f"Documentation: {C.DOC_URL}."
        ),
        formatter_class=Formatter,
    )
    add = parser.add_argument
    add(
        "--imports",
        type=str,
        default="",
        metavar="IMPORTS",
        help="Python modules to import before generation, separated by ';'.",
    )
    add(
        "--dlls",
        type=str,
        default="",
        metavar="LIBS",
        help="Shared libraries to load before generation, separated by ';'.",
    )
    add(
        "--init-pypkg",
        type=str,
        default="",
        help="Python package to scaffold (with --init-lib and --init-prefix).",
    )
    add(
        "--init-lib",
        type=str,
        default="",
        help="Build target of the package's shared library (with --init-pypkg, --init-prefix).",
    )
    add(
        "--init-prefix",
        type=str,
        default="",
        help="Registry prefix to scaffold (with --init-pypkg and --init-lib).",
    )
    add(
        "--indent",
        type=int,
        default=4,
        help="Spaces added inside generated blocks, relative to their begin marker.",
    )
    add(
        "files",
        nargs="*",
        metavar="PATH",
        help="Files or directories (scanned recursively for the target's extensions).",
    )
    add(
        "--target",
        type=str,
        default="python",
        choices=generator_names(),
        help="Code generator target.",
    )
    add("--verbose", action="store_true", help="Print a diff of each file's changes.")
    add("--dry-run", action="store_true", help="Do not write the files.")
    add(
        "--check",
        action="store_true",
        help="Do not write; exit 1 when a file's stub blocks are out of date.",
    )
    add(
        "--coverage-out",
        type=str,
        default=None,
        metavar="JSON",
        help="Write a JSON report of which object layouts reflection reproduces.",
    )
    args = parser.parse_args()

    init_flags = [args.init_pypkg, args.init_lib, args.init_prefix]
    init: InitConfig | None = None
    if any(init_flags):
        if not all(init_flags):
            parser.error("--init-pypkg, --init-lib, and --init-prefix must be provided together")
        init = InitConfig(pkg=args.init_pypkg, shared_target=args.init_lib, prefix=args.init_prefix)
    if args.check and init is not None:
        parser.error("--check cannot be combined with --init-* flags")
    if not args.files and args.coverage_out is None:
        parser.print_help()
        sys.exit(1)
    return Options(
        imports=_split_list(args.imports),
        dlls=_split_list(args.dlls),
        init=init,
        indent=args.indent,
        files=args.files,
        verbose=args.verbose,
        dry_run=args.dry_run or args.check,
        check=args.check,
        target=args.target,
        coverage_out=args.coverage_out,
    )


if __name__ == "__main__":
    sys.exit(__main__())
