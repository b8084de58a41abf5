"""``RustGenerator``: the Rust target of the stub pipeline (``.rs`` files, ``//`` markers)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from .. import consts as C
from ..file_utils import CodeBlock
from ..utils import FuncInfo, InitConfig, ObjectInfo, Options
from . import consts as RC
from .codegen import (
    finalize_rust_module_tree,
    generate_rust_api_file,
    generate_rust_import_section,
    generate_rust_object,
)
from .utils import RustImports, RustUse, check_tokens, is_crate_type_key, rust_module_path


class _DeclaredModules(Mapping[str, tuple[str, ...]]):
    """The run's ``object/`` blocks by type key -> the module of the file each is in."""

    def __init__(self, files: Mapping[str, Path]) -> None:
        self._files = files

    def __getitem__(self, type_key: str) -> tuple[str, ...]:
        return rust_module_path(self._files[type_key])

    def __contains__(self, type_key: object) -> bool:
        return type_key in self._files

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)


class RustGenerator:
    """Writes Rust bindings of reflected objects (see :mod:`.codegen`)."""

    name = "rust"
    syntax = C.RUST_SYNTAX
    source_exts = frozenset({".rs"})
    directive_kinds = RC.RUST_DIRECTIVE_KINDS

    def default_ty_map(self) -> dict[str, str]:
        """Schema origin / builtin key -> Rust type defaults."""
        return dict(RC.RUST_TY_MAP_DEFAULTS)

    def new_imports(self) -> RustImports:
        """An empty per-file collector."""
        return RustImports()

    def add_directive(self, imports: RustImports, name: str, payload: str, lineno: int) -> None:
        """``import-object`` becomes a ``use`` of its first ``;`` field; the rest are parsed."""
        if name == "import-object":
            imports.record(payload.split(";", 1)[0].strip())
        else:
            imports.directives.add(name, payload, lineno)

    def canonical_type_name(self, type_key: str) -> str:
        """The Rust path of a defined type key."""
        return RustUse(type_key).path

    def extra_export_names(self, imports: RustImports) -> set[str]:
        """Rust has no export list."""
        return set()

    def is_builtin(self, type_key: str) -> bool:
        """Every ``ffi.*`` key is bound by the crate."""
        return is_crate_type_key(type_key)

    def check_view(self, code_blocks: list[CodeBlock]) -> dict[tuple[str, object], tuple[str, ...]]:
        """What the ``object/`` blocks and the import section define, not how it is spelled."""
        view: dict[tuple[str, object], tuple[str, ...]] = {}
        for code in code_blocks:
            if code.kind in ("object", "import-section"):
                tokens = check_tokens(code.lines[1:-1])
                if tokens:  # `use` lines alone define nothing
                    view[code.kind, code.param] = tokens
        return view

    def generate_global_funcs_block(
        self,
        code: CodeBlock,
        global_funcs: list[FuncInfo],
        ty_map: dict[str, str],
        imports: RustImports,
        opt: Options,
    ) -> None:
        """Nothing: Rust reaches global functions through ``cached_global_func!``."""

    def generate_object_block(
        self,
        code: CodeBlock,
        ty_map: dict[str, str],
        imports: RustImports,
        opt: Options,
        obj_info: ObjectInfo,
        declared: Mapping[str, Path],
    ) -> None:
        """Fill an ``object/`` block; types are spelled from their blocks' modules."""
        generate_rust_object(code, ty_map, imports, opt, obj_info, _DeclaredModules(declared))

    def generate_import_section_block(
        self, code: CodeBlock, imports: RustImports, opt: Options, defined_types: set[str]
    ) -> None:
        """Fill the ``import-section`` block."""
        generate_rust_import_section(code, imports, opt, defined_types)

    def generate_all_block(self, code: CodeBlock, names: set[str], opt: Options) -> None:
        """Nothing: Rust re-exports are not generated."""

    def generate_export_block(self, code: CodeBlock) -> None:
        """Nothing: submodule re-exports are not generated."""

    def generate_helpers_block(self, code: CodeBlock, opt: Options) -> None:
        """Nothing: the bindings need no per-file support code."""

    def api_filename(self) -> str:
        """One ``mod.rs`` per prefix."""
        return "mod.rs"

    def init_filename(self) -> str:
        """The API file is the module entry."""
        return "mod.rs"

    def generate_api_file(
        self,
        code_blocks: list[CodeBlock],
        ty_map: dict[str, str],
        module_name: str,
        object_infos: list[ObjectInfo],
        init_cfg: InitConfig,
        is_root: bool,
    ) -> str:
        """Text appended to a scaffolded ``mod.rs``."""
        return generate_rust_api_file(
            code_blocks, ty_map, module_name, object_infos, init_cfg, is_root, self.syntax
        )

    def generate_init_file(
        self, code_blocks: list[CodeBlock], module_name: str, submodule: str
    ) -> str:
        """Nothing: the API file is the module entry."""
        return ""

    def finalize_init(self, init_path: Path, generated_prefixes: set[str]) -> None:
        """Declare each generated module with ``pub mod`` in its parent."""
        finalize_rust_module_tree(init_path, generated_prefixes)
