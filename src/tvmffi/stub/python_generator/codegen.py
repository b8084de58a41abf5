"""The Python stub text of each block kind, and the scaffolding of ``--init`` files."""

from __future__ import annotations

from .. import consts as C
from ..file_utils import CodeBlock
from ..utils import FuncInfo, InitConfig, ObjectInfo, Options
from . import consts as PC
from .utils import (
    ImportItem,
    TyMap,
    render_func_signature,
    render_object_ffi_init,
    render_object_fields,
    render_object_init,
    render_object_methods,
)

__all__ = [
    "generate_python_all",
    "generate_python_export",
    "generate_python_ffi_api",
    "generate_python_global_funcs",
    "generate_python_import_section",
    "generate_python_init",
    "generate_python_object",
    "render_func_signature",
    "render_object_ffi_init",
    "render_object_fields",
    "render_object_init",
    "render_object_methods",
]


def _recording_ty_map(
    ty_map: dict[str, str], imports: list[ImportItem], func_names: set[str] | None = None
) -> TyMap:
    """A name mapper that imports each dotted name it maps (type-checking only).

    It returns the last component, or ``_<name>`` where that would shadow a
    function of the same block.
    """

    def name_of(name: str) -> str:
        full = ty_map.get(name, name)
        short = full.rsplit(".", 1)[-1]
        if "." not in full:
            return short
        alias = f"_{short}" if func_names and short in func_names else None
        imports.append(ImportItem(full, type_checking_only=True, alias=alias))
        return alias or short

    return name_of


def _input_ty_map(ty_map: dict[str, str]) -> dict[str, str]:
    """``ty_map`` with the parameter-side defaults where the user did not map the origin."""
    out = dict(ty_map)
    for origin, input_name in PC.TY_MAP_INPUT_DEFAULTS.items():
        default = PC.TY_MAP_DEFAULTS.get(origin)
        if ty_map.get(origin, default) == default:
            out[origin] = input_name
    return out


def _replace_body(code: CodeBlock, body: list[str]) -> None:
    """Put ``body`` between the block's markers, at the indentation of its begin marker."""
    pad = " " * code.indent
    code.lines = [code.lines[0], *(pad + line for line in body), code.lines[-1]]


def _check_block(code: CodeBlock) -> None:
    if len(code.lines) < 2:
        raise ValueError(f"block at line {code.lineno_start} has no begin/end markers")


def generate_python_global_funcs(
    code: CodeBlock,
    global_funcs: list[FuncInfo],
    ty_map: dict[str, str],
    imports: list[ImportItem],
    opt: Options,
) -> None:
    """Fill a ``global/<prefix>[@<module>]`` block with the prefix's function stubs.

    ``<module>`` (default ``tvm_ffi``) is where ``init_ffi_api`` is imported from.
    """
    _check_block(code)
    if not global_funcs:
        return
    prefix, import_from = code.param[0], code.param[1]
    imports.append(ImportItem(f"{import_from or 'tvm_ffi'}.init_ffi_api", alias="_FFI_INIT_FUNC"))
    imports.append(ImportItem("typing.TYPE_CHECKING"))
    names = {f.schema.name.rsplit(".", 1)[-1] for f in global_funcs}
    out_map = _recording_ty_map(ty_map, imports, names)
    in_map = _recording_ty_map(_input_ty_map(ty_map), imports, names)
    _replace_body(
        code,
        [
            "# fmt: off",
            f'_FFI_INIT_FUNC("{prefix}", __name__)',
            "if TYPE_CHECKING:",
            *(render_func_signature(f, out_map, opt.indent, in_map) for f in global_funcs),
            "# fmt: on",
        ],
    )


def generate_python_object(
    code: CodeBlock,
    ty_map: dict[str, str],
    imports: list[ImportItem],
    opt: Options,
    obj_info: ObjectInfo,
) -> None:
    """Fill an ``object/<type_key>`` block: field annotations, then init and method stubs."""
    _check_block(code)
    names = {m.schema.name.rsplit(".", 1)[-1] for m in obj_info.methods}
    out_map = _recording_ty_map(ty_map, imports, names)
    if obj_info.has_overloaded_methods():
        imports.append(ImportItem("typing.overload", type_checking_only=True))
    in_map = _recording_ty_map(_input_ty_map(ty_map), imports, names)
    stubs = [
        *render_object_init(obj_info, out_map, opt.indent, in_map),
        *render_object_ffi_init(obj_info, out_map, opt.indent, in_map),
        *render_object_methods(obj_info, out_map, opt.indent, in_map),
    ]
    body = ["# fmt: off", *render_object_fields(obj_info, out_map, 0)]
    if stubs:
        imports.append(ImportItem("typing.TYPE_CHECKING"))
        body += ["if TYPE_CHECKING:", *stubs]
    body.append("# fmt: on")
    _replace_body(code, body)


def generate_python_import_section(
    code: CodeBlock, imports: list[ImportItem], opt: Options
) -> None:
    """Fill an ``import-section`` block: runtime imports, then ``if TYPE_CHECKING:`` ones."""
    runtime: dict[str, set[str]] = {}
    checking: dict[str, set[str]] = {}
    for item in imports:
        table = checking if item.type_checking_only else runtime
        table.setdefault(item.mod, set()).add(item.name_with_alias)
    if checking:
        runtime.setdefault("typing", set()).add("TYPE_CHECKING")
    if not runtime and not checking:
        return

    def line(mod: str, names: set[str], indent: int) -> str:
        joined = ", ".join(sorted(names))
        pad = " " * indent
        return f"{pad}from {mod} import {joined}" if mod else f"{pad}import {joined}"

    body = [line(mod, runtime[mod], 0) for mod in sorted(runtime)]
    if checking:
        body.append("if TYPE_CHECKING:")
        body += [line(mod, checking[mod], opt.indent) for mod in sorted(checking)]
    code.lines = [
        code.lines[0],
        "# fmt: off",
        "# isort: off",
        "from __future__ import annotations",
        *body,
        "# isort: on",
        "# fmt: on",
        code.lines[-1],
    ]


def _all_sort_key(name: str) -> tuple[int, str]:
    """isort's order: CONSTANTS, then Classes, then everything else."""
    if name.isupper():
        return (0, name)
    if name[:1].isupper() and "_" not in name:
        return (1, name)
    return (2, name)


def generate_python_all(code: CodeBlock, names: set[str], opt: Options) -> None:
    """Fill an ``__all__`` block with the last components of ``names``, isort-ordered."""
    del opt
    _check_block(code)
    if not names:
        return
    short = {n.rsplit(".", 1)[-1] for n in names}
    pad = " " * code.indent
    code.lines = [
        code.lines[0],
        *(f'{pad}"{n}",' for n in sorted(short, key=_all_sort_key)),
        code.lines[-1],
    ]


def generate_python_export(code: CodeBlock) -> None:
    """Fill an ``export/<submodule>`` block: re-export the submodule's ``__all__``."""
    _check_block(code)
    mod = code.param
    code.lines = [
        code.lines[0],
        "# fmt: off",
        "# isort: off",
        f"from .{mod} import *  # noqa: F403",
        f"from .{mod} import __all__ as {mod}__all__",
        'if "__all__" not in globals():',
        "    __all__ = []",
        f"__all__.extend({mod}__all__)",
        "# isort: on",
        "# fmt: on",
        code.lines[-1],
    ]


def _import_object_directive(full_name: str, alias: str, syntax: C.MarkerSyntax) -> str:
    return f"{syntax.import_object} {full_name};False;{alias}\n"


def generate_python_ffi_api(
    code_blocks: list[CodeBlock],
    ty_map: dict[str, str],
    module_name: str,
    object_infos: list[ObjectInfo],
    init_cfg: InitConfig,
    is_root: bool,
    syntax: C.MarkerSyntax,
) -> str:
    """The text ``--init`` appends to a module's ``_ffi_api.py`` (blocks it lacks).

    The root module loads the package's library; every object type gets a
    registered class whose parent is imported when another module defines it.
    """
    out: list[str] = []
    if not code_blocks:
        out.append(f'"""FFI API bindings for {module_name}."""\n')
    if not any(c.kind == "import-section" for c in code_blocks):
        out.append(f"\n{syntax.begin} import-section\n{syntax.end}\n")
    if is_root:
        out.append(
            _import_object_directive("tvm_ffi.libinfo.load_lib_module", "_FFI_LOAD_LIB", syntax)
        )
        out.append(f'LIB = _FFI_LOAD_LIB("{init_cfg.pkg}", "{init_cfg.shared_target}")\n')
    if not any(c.kind == "global" for c in code_blocks):
        out.append(f"{syntax.begin} global/{module_name}\n{syntax.end}\n")
    if object_infos:
        out.append(_import_object_directive("tvm_ffi.register_object", "_FFI_REG_OBJ", syntax))
    local = {ty_map.get(i.type_key, i.type_key) for i in object_infos if i.type_key}
    for info in object_infos:
        if info.type_key is None:
            continue
        key = ty_map.get(info.type_key, info.type_key)
        parent = info.parent_type_key
        parent_name = "Object"
        if parent:
            parent = ty_map.get(parent, parent)
            parent_name = parent.rsplit(".", 1)[-1]
            if parent not in local:
                parent_name = "_" + parent.replace(".", "_")
                out.append(_import_object_directive(parent, parent_name, syntax))
        out.append(
            f'@_FFI_REG_OBJ("{key}")\n'
            f"class {key.rsplit('.', 1)[-1]}({parent_name}):\n"
            f'    """FFI binding for `{key}`."""\n\n'
            f"    {syntax.begin} object/{key}\n"
            f"    {syntax.end}\n\n"
        )
    if not any(c.kind == "__all__" for c in code_blocks):
        out.append(f"\n__all__ = [\n    {syntax.begin} __all__\n    {syntax.end}\n]\n")
    return "".join(out)


def generate_python_init(
    code_blocks: list[CodeBlock], module_name: str, submodule: str, syntax: C.MarkerSyntax
) -> str:
    """The text ``--init`` appends to a module's ``__init__.py``: an ``export/`` block if absent."""
    block = f"\n{syntax.begin} export/{submodule}\n{syntax.end}\n"
    if not code_blocks:
        return f'"""Package {module_name}."""\n' + block
    if any(c.kind == "export" for c in code_blocks):
        return ""
    return block
