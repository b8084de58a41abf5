"""Command line tools: ``python -m tvmffi inspect PATH`` and ``python -m tvmffi config ...``."""

from __future__ import annotations

import argparse
import sys

from . import _elf
from .module import _exported_function_names, _load_module, _open_module_file


def _inspect(path: str) -> int:
    try:
        # Opened once (a regular file, read in bounded pieces); each step uses it.
        with _open_module_file(path) as source:
            return _inspect_file(path, source)
    except Exception as err:  # a command line tool reports, it does not print tracebacks
        print(f"error: {err}", file=sys.stderr)
        return 1


def _inspect_file(path: str, source: _elf.FileSource) -> int:
    file_name = source.name
    mod = _load_module(file_name, source)
    print(f"module: {path}")
    print(f"kind: {mod.kind}")
    names = _exported_function_names(file_name, source)
    if names is None:
        print("functions: (symbol table not readable)")
        names = []
    else:
        print(f"functions ({len(names)}):")
    for name in names:
        sig = mod.get_function_signature(name)
        print(f"  {name}{sig if sig is not None else ''}")
        doc = mod.get_function_doc(name)
        if doc:
            for line in doc.strip().splitlines():
                print(f"      {line}")
    imports = mod.imports
    print(f"imports ({len(imports)}):")
    for sub in imports:
        print(f"  {sub.kind}")
    _print_library_bin(file_name, source)
    return 0


def _print_library_bin(file_name: str, data: _elf.Source) -> None:
    """The module tree embedded in the file's ``__tvm_ffi__library_bin``, if any."""
    from .codegen.library_bin import SYMBOL, _read_library_bin

    try:
        tree = _read_library_bin(file_name, data)
    except ValueError as err:
        print(f"embedded modules: unreadable ({err})")
        return
    if tree is not None:
        print(f"embedded modules ({len(tree.entries)} in {SYMBOL}):")
        for line in tree.describe().splitlines():
            print(f"  {line}")


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m tvmffi``."""
    parser = argparse.ArgumentParser(prog="python -m tvmffi")
    sub = parser.add_subparsers(dest="command", required=True)
    p_inspect = sub.add_parser("inspect", help="show a module library's kind, functions, imports")
    p_inspect.add_argument("path")
    # `config` takes the options of python -m tvmffi.config (tvmffi/config.py parses them).
    sub.add_parser(
        "config", help="print include/library paths and flags (--help for options)", add_help=False
    )
    args, rest = parser.parse_known_args(argv)
    if args.command == "config":
        from .config import main as config_main

        config_main(rest)
        return 0
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.command == "inspect":
        return _inspect(args.path)
    return 2  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
