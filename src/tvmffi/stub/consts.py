"""Marker syntax and the constants the stub generator shares across target languages."""

from __future__ import annotations

import dataclasses
from typing import Literal, TypeAlias


@dataclasses.dataclass(frozen=True)
class MarkerSyntax:
    """The stub markers of one comment syntax (``#`` for Python, ``//`` for Rust).

    Every marker is a line comment ``<comment> tvm-ffi-stubgen(<name>)...``:
    ``begin): <kind>/<param>`` and ``end)`` delimit a generated block, and
    ``<name>): <payload>`` is a one-line directive.
    """

    comment: str
    """The line-comment token of the language."""

    @property
    def prefix(self) -> str:
        """What every marker line starts with."""
        return f"{self.comment} tvm-ffi-stubgen("

    @property
    def begin(self) -> str:
        """The marker opening a generated block."""
        return self.prefix + "begin):"

    @property
    def end(self) -> str:
        """The marker closing a generated block."""
        return self.prefix + "end)"

    @property
    def ty_map(self) -> str:
        """The ``ty-map`` directive marker (``A.B -> C.D``)."""
        return self.directive("ty-map")

    @property
    def import_object(self) -> str:
        """The ``import-object`` directive marker (``full.name;type_checking_only;alias``)."""
        return self.directive("import-object")

    @property
    def skip_file(self) -> str:
        """The marker that excludes a whole file from generation."""
        return self.prefix + "skip-file)"

    def directive(self, name: str) -> str:
        """The marker of the one-line directive ``name``."""
        return f"{self.prefix}{name}):"


PYTHON_SYNTAX = MarkerSyntax(comment="#")
RUST_SYNTAX = MarkerSyntax(comment="//")

SYNTAX_BY_EXT: dict[str, MarkerSyntax] = {
    ".py": PYTHON_SYNTAX,
    ".pyi": PYTHON_SYNTAX,
    ".rs": RUST_SYNTAX,
}

#: One-line directives the pipeline itself consumes; the others belong to a generator.
PIPELINE_DIRECTIVE_KINDS: frozenset[str] = frozenset({"ty-map", "prefix", "skip"})

STUB_BLOCK_KINDS: TypeAlias = Literal[
    "global", "object", "import-section", "directive", "export", "__all__", None
]

TERM_RESET = "\033[0m"
TERM_BOLD = "\033[1m"
TERM_BLACK = "\033[30m"
TERM_RED = "\033[31m"
TERM_GREEN = "\033[32m"
TERM_YELLOW = "\033[33m"
TERM_BLUE = "\033[34m"
TERM_MAGENTA = "\033[35m"
TERM_CYAN = "\033[36m"
TERM_WHITE = "\033[37m"
DOC_URL = "https://tvm.apache.org/ffi/packaging/stubgen.html"

#: Renames applied to reflected method names.
FN_NAME_MAP: dict[str, str] = {}

#: Object types the binding's own runtime package defines (no generated class for them).
BUILTIN_TYPE_KEYS = frozenset(
    {
        "ffi.BigInt",
        "ffi.Bytes",
        "ffi.Error",
        "ffi.Function",
        "ffi.Object",
        "ffi.OpaquePyObject",
        "ffi.SmallBytes",
        "ffi.SmallStr",
        "ffi.String",
        "ffi.Tensor",
    }
)
