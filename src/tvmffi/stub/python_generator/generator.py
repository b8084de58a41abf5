"""``PythonGenerator``: the Python target of the stub pipeline."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .. import consts as C
from ..file_utils import CodeBlock
from ..utils import FuncInfo, InitConfig, ObjectInfo, Options
from . import codegen as G
from . import consts as PC
from .utils import ImportItem, PythonImports


class PythonGenerator:
    """Writes Python type stubs (``.py``/``.pyi`` files, ``#`` markers)."""

    name = "python"
    syntax = C.PYTHON_SYNTAX
    source_exts = frozenset({".py", ".pyi"})
    directive_kinds: frozenset[str] = frozenset({"import-object"})

    def default_ty_map(self) -> dict[str, str]:
        """Schema origin -> Python name defaults."""
        return dict(PC.TY_MAP_DEFAULTS)

    def new_imports(self) -> PythonImports:
        """An empty import collector for one file."""
        return PythonImports()

    def add_directive(self, imports: PythonImports, name: str, payload: str, lineno: int) -> None:
        """Record ``import-object: <full.name>[;<type_checking_only>[;<alias>]]``."""
        if name != "import-object":
            raise ValueError(f"Unknown directive `{name}` at line {lineno}")
        parts = [p.strip() for p in payload.split(";")]
        if not parts[0] or len(parts) > 3:
            raise ValueError(
                f"Invalid import-object directive at line {lineno}: {payload!r} "
                "(expected `full.name;True|False;alias`)"
            )
        full_name, checking, alias = (*parts, "", "")[:3]
        imports.items.append(
            ImportItem(
                full_name, type_checking_only=checking.lower() == "true", alias=alias or None
            )
        )
        if alias == "_FFI_LOAD_LIB" or full_name.endswith("libinfo.load_lib_module"):
            imports.has_lib_load = True

    def canonical_type_name(self, type_key: str) -> str:
        """The full Python name a type key is imported by."""
        return ImportItem(type_key).full_name

    def extra_export_names(self, imports: PythonImports) -> set[str]:
        """``LIB`` when the file loads its library."""
        return {"LIB"} if imports.has_lib_load else set()

    def is_builtin(self, type_key: str) -> bool:
        """Whether the runtime package itself binds ``type_key``."""
        return type_key in C.BUILTIN_TYPE_KEYS

    def check_view(self, code_blocks: list[CodeBlock]) -> tuple[str, ...]:
        """What ``--check`` compares: the whole text."""
        return tuple(line for code in code_blocks for line in code.lines)

    def generate_global_funcs_block(
        self,
        code: CodeBlock,
        global_funcs: list[FuncInfo],
        ty_map: dict[str, str],
        imports: PythonImports,
        opt: Options,
    ) -> None:
        """Fill a ``global/`` block."""
        G.generate_python_global_funcs(code, global_funcs, ty_map, imports.items, opt)

    def generate_object_block(
        self,
        code: CodeBlock,
        ty_map: dict[str, str],
        imports: PythonImports,
        opt: Options,
        obj_info: ObjectInfo,
        declared: Mapping[str, Path],
    ) -> None:
        """Fill an ``object/`` block."""
        del declared
        G.generate_python_object(code, ty_map, imports.items, opt, obj_info)

    def generate_import_section_block(
        self, code: CodeBlock, imports: PythonImports, opt: Options, defined_types: set[str]
    ) -> None:
        """Fill the ``import-section`` block, leaving out the types the file defines."""
        kept = [i for i in imports.items if i.full_name not in defined_types]
        G.generate_python_import_section(code, kept, opt)

    def generate_all_block(self, code: CodeBlock, names: set[str], opt: Options) -> None:
        """Fill the ``__all__`` block."""
        G.generate_python_all(code, names, opt)

    def generate_export_block(self, code: CodeBlock) -> None:
        """Fill an ``export/`` block."""
        G.generate_python_export(code)

    def generate_helpers_block(self, code: CodeBlock, opt: Options) -> None:
        """Python files have no helpers block."""

    def api_filename(self) -> str:
        """The scaffolded API file: ``_ffi_api.py``."""
        return "_ffi_api.py"

    def init_filename(self) -> str:
        """The scaffolded package entry: ``__init__.py``."""
        return "__init__.py"

    def generate_api_file(
        self,
        code_blocks: list[CodeBlock],
        ty_map: dict[str, str],
        module_name: str,
        object_infos: list[ObjectInfo],
        init_cfg: InitConfig,
        is_root: bool,
    ) -> str:
        """Text appended to a scaffolded ``_ffi_api.py``."""
        return G.generate_python_ffi_api(
            code_blocks, ty_map, module_name, object_infos, init_cfg, is_root, self.syntax
        )

    def generate_init_file(
        self, code_blocks: list[CodeBlock], module_name: str, submodule: str
    ) -> str:
        """Text appended to a scaffolded ``__init__.py``."""
        return G.generate_python_init(code_blocks, module_name, submodule, self.syntax)

    def finalize_init(self, init_path: Path, generated_prefixes: set[str]) -> None:
        """Python packages need no wiring after ``--init``."""
