"""The target-language generators of the stub pipeline, and the protocol they implement.

The pipeline (:mod:`.cli`) reads the registry and the marked files; a
:class:`Generator` turns metadata into one language's text and keeps that
language's imports in a collector the pipeline never looks inside.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from . import consts as C
from .file_utils import CodeBlock
from .python_generator import PythonGenerator
from .rust_generator import RustGenerator
from .utils import FuncInfo, InitConfig, ObjectInfo, Options


class Generator(Protocol):
    """What the pipeline needs from a target language.

    ``*_block`` methods rewrite ``code.lines`` in place (markers kept);
    ``generate_*_file`` return text ``--init`` appends to a new file.
    """

    name: str
    source_exts: frozenset[str]
    syntax: C.MarkerSyntax
    directive_kinds: frozenset[str]

    def default_ty_map(self) -> dict[str, str]:
        """Schema origin -> target type name defaults."""
        ...

    def new_imports(self) -> Any:
        """A fresh import collector for one file."""
        ...

    def add_directive(self, imports: Any, name: str, payload: str, lineno: int) -> None:
        """Record one of the generator's own one-line directives."""
        ...

    def canonical_type_name(self, type_key: str) -> str:
        """The name a locally defined type is known by (import filtering, exports)."""
        ...

    def extra_export_names(self, imports: Any) -> set[str]:
        """Export names implied by the collected imports."""
        ...

    def is_builtin(self, type_key: str) -> bool:
        """Whether the target's runtime binds ``type_key`` itself (no block for it)."""
        ...

    def check_view(self, code_blocks: list[CodeBlock]) -> object:
        """What ``--check`` compares before and after a run."""
        ...

    def generate_global_funcs_block(
        self,
        code: CodeBlock,
        global_funcs: list[FuncInfo],
        ty_map: dict[str, str],
        imports: Any,
        opt: Options,
    ) -> None:
        """Fill a ``global/`` block."""
        ...

    def generate_object_block(
        self,
        code: CodeBlock,
        ty_map: dict[str, str],
        imports: Any,
        opt: Options,
        obj_info: ObjectInfo,
        declared: Mapping[str, Path],
    ) -> None:
        """Fill an ``object/`` block; ``declared`` maps every block's type key to its file."""
        ...

    def generate_import_section_block(
        self, code: CodeBlock, imports: Any, opt: Options, defined_types: set[str]
    ) -> None:
        """Fill the ``import-section`` block."""
        ...

    def generate_all_block(self, code: CodeBlock, names: set[str], opt: Options) -> None:
        """Fill the public-export block."""
        ...

    def generate_export_block(self, code: CodeBlock) -> None:
        """Fill an ``export/`` block."""
        ...

    def generate_helpers_block(self, code: CodeBlock, opt: Options) -> None:
        """Fill a per-file helpers block, for targets that have one."""
        ...

    def api_filename(self) -> str:
        """File name of a scaffolded API file."""
        ...

    def init_filename(self) -> str:
        """File name of a scaffolded package entry."""
        ...

    def generate_api_file(
        self,
        code_blocks: list[CodeBlock],
        ty_map: dict[str, str],
        module_name: str,
        object_infos: list[ObjectInfo],
        init_cfg: InitConfig,
        is_root: bool,
    ) -> str:
        """Text appended to a scaffolded API file."""
        ...

    def generate_init_file(
        self, code_blocks: list[CodeBlock], module_name: str, submodule: str
    ) -> str:
        """Text appended to a scaffolded package entry."""
        ...

    def finalize_init(self, init_path: Path, generated_prefixes: set[str]) -> None:
        """Wire the scaffolded tree together after ``--init`` wrote it."""
        ...


_GENERATORS: dict[str, Generator] = {
    "python": PythonGenerator(),
    "rust": RustGenerator(),
}


def generator_names() -> list[str]:
    """The ``--target`` choices, sorted."""
    return sorted(_GENERATORS)


def get_generator(target: str) -> Generator:
    """The generator of ``target``; ``ValueError`` naming the known ones otherwise."""
    found = _GENERATORS.get(target)
    if found is None:
        known = ", ".join(generator_names())
        raise ValueError(f"Unknown stubgen generator: {target!r}. Known generators: {known}")
    return found
