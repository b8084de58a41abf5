"""Imports flow down: the package's layers (docs/guide/development.md, "Layers").

Every module of ``src/tvmffi`` belongs to one layer. A module may import modules of
its own layer and of the layers below; importing a higher layer is a violation, at
module level and inside functions alike (a function-level import is still a
dependency, only a later one). Imports under ``if TYPE_CHECKING:`` are left out:
they never run.

A deferred (function-level) import stays only for a reason, so the import graph is
what a reader sees at the top of each file:
- an optional third-party package (torch, jax, numpy, ...): deferred by design;
- a measured import-time cost or a platform-only module, named in a comment on the
  import's line or the comment lines right above it, containing ``import-time:`` or
  ``platform:``
  (e.g. ``# import-time: ~20 ms (email.*), only this lookup needs it``).

The allow-lists below hold the violations known when the layers were written down,
each in a file another change was rewriting at the time (issue 39): the test fails on
any violation not listed, and on a listed one that is gone (shrink the list).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "tvmffi"

# Lowest first. A name covers that module, or that package and everything under it
# unless a longer name places a submodule elsewhere.
LAYERS: list[tuple[str, list[str]]] = [
    # No tvmffi imports (or only each other): the extension, paths, pure tools.
    (
        "foundation",
        [
            "_core",
            "_lib",
            "_runtime_guard",
            "_version",
            "_elf",
            "hosting",
            "_build.errors",
            "_build.private",
            "cpp.dtype",
            "utils.lockfile",
            "stub",
        ],
    ),
    # Value types over the extension's own classes.
    ("values", ["function", "device", "dtype", "_dtype", "stream", "tensor", "_strings"]),
    # Type schemas: parse and render (the converter sits above the containers).
    ("schema", ["type_schema", "_annotation"]),
    # The object model: type info, reflection, repr, errors.
    (
        "objects",
        ["_lineage", "_dunder", "_function_doc", "_repr", "object", "error", "access_path"],
    ),
    # Containers and the object dunders they share with dataclasses.
    ("containers", ["container", "_convert", "_tensor"]),
    # Checking and converting values against a TypeSchema.
    ("converter", ["_type_converter"]),
    # Python-defined and C-defined classes.
    ("dataclasses", ["dataclasses"]),  # gen_abi_cpp included (dataclasses/__init__ exports it)
    # The registries' public API (global functions, register_object, type keys).
    ("registry", ["registry", "_ffi_api", "testing"]),
    # Services on objects: JSON graphs, pickling, structural algorithms, modules, C++
    # generation from the registry.
    (
        "services",
        [
            "_graph_doc",
            "serialization",
            "structural",
            "module",
            "_embedded_loader",
            "codegen.library_bin",
            "libinfo",
            "config",
            "core",
            "utils",  # kwargs_wrapper and unpack_dataclass take MISSING and calls from core
        ],
    ),
    # Building and generating code.
    (
        "build",
        [
            "_build",
            "utils.embed_cubin",
            "cpp",
            "codegen",
            "_optional_torch_c_dlpack",
        ],
    ),
    # Framework front ends.
    ("frameworks", ["_torch_kernel", "_torch_autograd", "torch", "_jax_partition", "jax"]),
    # Pickling reaches every kind of value (codegen-built functions included).
    ("pickling", ["_pickle", "pickling", "_pickle_hooks"]),
    # The package itself and its command line.
    ("package", ["", "__main__"]),
]

# Third-party packages a feature may use without tvmffi requiring them.
OPTIONAL_PACKAGES = {
    "torch",
    "jax",
    "jaxlib",
    "jax_tvm_ffi",
    "numpy",
    "ml_dtypes",
    "pytest",
    "cuda",
}
REASON_MARKERS = ("import-time:", "platform:")

# ---- known violations, 2026-12-02 (issue 39): the lists only shrink ----
# Pairs (importing module, imported module), relative to tvmffi ("" = the package).
#
# Upward imports: none is left (the last ones went with issue 39's rewrites); keep it so.
UPWARD_ALLOWED: set[tuple[str, str]] = set()
# Deferred imports without an import-time: or platform: reason.
DEFERRED_ALLOWED: set[tuple[str, str]] = {
    # -- a cycle inside one layer, not yet untangled --
    ("_repr", "object"),  # object imports _repr (print_graph) at its top
    ("module", "codegen.library_bin"),  # library_bin imports module
    ("_build.engine", "utils.embed_cubin"),  # embed_cubin imports _build
    ("codegen._library", "codegen._embed"),
    # -- downward, deferred with no reason written yet (not examined on 2026-12-02) --
    ("__main__", "codegen.library_bin"),
    ("__main__", "config"),
    ("_optional_torch_c_dlpack", "_build.private"),
    ("_optional_torch_c_dlpack", "_lib"),
    ("_torch_kernel", "cpp"),
    ("jax", "_jax_partition"),
    ("torch", "_torch_autograd"),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> int:
    best, best_len = -1, -1
    for index, (_, names) in enumerate(LAYERS):
        for name in names:
            covers = module == name or (
                (name == "" and module == "") or (name != "" and module.startswith(name + "."))
            )
            if covers and len(name) > best_len:
                best, best_len = index, len(name)
    if best < 0:
        raise AssertionError(f"tvmffi.{module} is in no layer: add it to LAYERS")
    return best


class _Import:
    def __init__(self, target: str, line: int, deferred: bool) -> None:
        self.target, self.line, self.deferred = target, line, deferred


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if module else []
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(path: Path, as_module: str | None = None) -> list[_Import]:
    """Every import of ``path`` outside ``if TYPE_CHECKING:``, as absolute names
    (``as_module``: read it as that tvmffi module, for a file outside the package)."""
    module = module_name(path) if as_module is None else as_module
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[_Import] = []

    def visit(node: ast.AST, deferred: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for sub in child.orelse:
                    visit_one(sub, deferred)
                continue
            visit_one(child, deferred)

    def visit_one(child: ast.AST, deferred: bool) -> None:
        if isinstance(child, ast.Import):
            found.extend(_Import(a.name, child.lineno, deferred) for a in child.names)
        elif isinstance(child, ast.ImportFrom):
            base = _absolute((module and f"tvmffi.{module}") or "tvmffi", is_package, child)
            if child.level == 0 and not base.startswith("tvmffi"):
                found.append(_Import(base, child.lineno, deferred))
                return
            # ``from . import x``: x may be a submodule; ``from .m import name``: module m.
            for alias in child.names:
                candidate = f"{base}.{alias.name}"
                sub = _module_path(candidate)
                found.append(_Import(candidate if sub else base, child.lineno, deferred))
        else:
            inner = deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            visit(child, inner)

    visit(tree, False)
    return found


def _module_path(dotted: str) -> Path | None:
    if not dotted.startswith("tvmffi"):
        return None
    if dotted == "tvmffi":
        return PACKAGE / "__init__.py"
    rel = Path(*dotted.split(".")[1:])
    # A Python module, a package, or the extension (known by its stub, _core.pyi).
    for suffix in (".py", ".pyi"):
        if (PACKAGE / rel).with_suffix(suffix).is_file():
            return (PACKAGE / rel).with_suffix(suffix)
    return PACKAGE / rel / "__init__.py" if (PACKAGE / rel / "__init__.py").is_file() else None


def _local(dotted: str) -> str:
    return "" if dotted == "tvmffi" else dotted.removeprefix("tvmffi.")


def _has_reason(lines: list[str], line: int) -> bool:
    """A marker on the import's line or in the comment lines right above it."""
    text = [lines[line - 1]]
    above = line - 2
    while above >= 0 and lines[above].lstrip().startswith("#"):
        text.append(lines[above])
        above -= 1
    return any(marker in piece for piece in text for marker in REASON_MARKERS)


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def find_violations() -> tuple[set[tuple[str, str]], set[tuple[str, str]], list[str]]:
    upward: set[tuple[str, str]] = set()
    unexplained: set[tuple[str, str]] = set()
    where: list[str] = []
    for path in _sources():
        check_module(path, module_name(path), upward, unexplained, where)
    return upward, unexplained, where


def check_module(
    path: Path,
    module: str,
    upward: set[tuple[str, str]],
    unexplained: set[tuple[str, str]],
    where: list[str],
) -> None:
    """Add the violations of one file, read as tvmffi module ``module``."""
    stdlib = set(sys.stdlib_module_names)
    mine = layer_of(module)
    lines = path.read_text(encoding="utf-8").splitlines()
    shown = path.name if PACKAGE not in path.parents else path.relative_to(PACKAGE)
    for imp in imports_of(path, module):
        top = imp.target.split(".")[0]
        if top == "tvmffi":
            target = _local(imp.target)
            if layer_of(target) > mine:
                upward.add((module, target))
                where.append(f"{shown}:{imp.line} imports tvmffi.{target}")
        elif top not in stdlib and top != "typing_extensions":
            if top not in OPTIONAL_PACKAGES:
                where.append(f"{shown}:{imp.line}: unknown package {top}")
            continue  # an optional third-party package: deferred by design
        else:
            target = imp.target
        if imp.deferred and not _has_reason(lines, imp.line):
            unexplained.add((module, target))
            where.append(f"{shown}:{imp.line} defers {imp.target}")


def test_every_module_has_a_layer() -> None:
    for path in _sources():
        layer_of(module_name(path))


def test_imports_flow_down() -> None:
    upward, _, where = find_violations()
    new = sorted(upward - UPWARD_ALLOWED)
    assert not new, "imports from a lower layer to a higher one:\n" + "\n".join(
        line for line in where if any(f"tvmffi.{t}" in line for _, t in new)
    )
    gone = sorted(UPWARD_ALLOWED - upward)
    assert not gone, f"fixed, remove from UPWARD_ALLOWED: {gone}"


def test_deferred_imports_name_their_reason() -> None:
    _, unexplained, where = find_violations()
    new = sorted(unexplained - DEFERRED_ALLOWED)
    assert not new, "deferred imports without an import-time: or platform: comment:\n" + "\n".join(
        line for line in where if "defers" in line and any(line.endswith(f" {t}") for _, t in new)
    )
    gone = sorted(DEFERRED_ALLOWED - unexplained)
    assert not gone, f"fixed, remove from DEFERRED_ALLOWED: {gone}"


def test_the_checker_sees_function_level_and_relative_imports(tmp_path: Path) -> None:
    # The reader itself: a function-level relative import is found, resolved, deferred.
    found = {(i.target, i.deferred) for i in imports_of(PACKAGE / "container.py")}
    assert ("tvmffi.object", False) in found
    sample = PACKAGE / "libinfo.py"
    assert any(i.deferred for i in imports_of(sample))
    assert layer_of("codegen._spec") > layer_of("module") > layer_of("container")
    with pytest.raises(AssertionError, match="no layer"):
        layer_of("no_such_module")


def test_a_new_upward_or_unexplained_import_is_caught(tmp_path: Path) -> None:
    source = tmp_path / "container.py"
    source.write_text(
        "from . import object\n"
        "def f():\n"
        "    from .registry import get_global_func\n"
        "    import json\n"
        "    # import-time: measured, say\n"
        "    import tempfile\n"
        "    import numpy\n"
    )
    upward: set[tuple[str, str]] = set()
    unexplained: set[tuple[str, str]] = set()
    check_module(source, "container", upward, unexplained, [])
    assert upward == {("container", "registry")}
    assert unexplained == {("container", "registry"), ("container", "json")}
