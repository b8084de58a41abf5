"""Rust bindings of reflected objects, one ``object/<key>`` block each.

Each object gets a ``#[repr(C)]`` object struct ``<Leaf>Obj``, a reference
wrapper ``<Leaf>``, ``Deref`` impls and upcasts along its ancestor chain. What
the struct holds follows :mod:`tvmffi.stub.layout`:

- complete: every field at its native offset and width, pinned by size and
  alignment assertions, with allocators (``<Leaf>Obj::new``, public unless the
  type is final, and the wrapper's ``new``, or ``from_fields`` under
  ``custom-new``); a non-final type whose ancestors are all generated also gets
  ``ShallowCopy`` and ``UnsafeInit`` so Rust-defined subtypes can extend it.
- opaque: the parent alone, and one accessor per field through the C ABI getter.

A field with no Rust mirror makes its type opaque (read as ``Any``). A builtin
parent other than ``ffi.Object`` gets a header-only stand-in in the import
section and keeps its subtypes opaque. Every type key a binding refers to must
be provided in the run (the crate for ``ffi.*``, a ``ty-map`` to a hand-written
binding, or an ``object/`` block); otherwise the block is an error naming them.
A generated type is spelled from the module of the file holding its block.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path

from .. import consts as C
from ..file_utils import CodeBlock, _write_atomic
from ..layout import Verdict, classify
from ..lib_state import object_info_from_type_key
from ..utils import InitConfig, NamedTypeSchema, ObjectInfo, Options
from . import consts as RC
from .directives import EnumSpec
from .utils import (
    RustImports,
    builtin_mirror_name,
    is_crate_type_key,
    render_rust_type,
    rust_ident,
)


def _call_lines(open_: str, items: list[str], close: str) -> list[str]:
    """``open_ items close`` on one line, else wrapped as rustfmt wraps it.

    A ``let`` first moves its call to the next line; otherwise, or when that
    still overflows, one item per line.
    """
    line = f"{open_}{', '.join(items)}{close}"
    if len(line) <= RC.RUST_MAX_WIDTH:
        return [line]
    indent = open_[: len(open_) - len(open_.lstrip())]
    let, eq, call = open_.partition(" = ")
    moved = f"{indent}    {call}{', '.join(items)}{close}"
    if eq and len(moved) <= RC.RUST_MAX_WIDTH:
        return [f"{let} =", moved]
    return [open_.rstrip(), *(f"{indent}    {item}," for item in items), indent + close.lstrip()]


def _param_type(rust_type: str) -> str:
    """A wrapper allocator parameter: a scalar as itself, anything else ``impl Into``."""
    return rust_type if rust_type in RC.RUST_EXACT_PARAMS else f"impl Into<{rust_type}>"


def _forward(ident: str, rust_type: str) -> str:
    return ident if rust_type in RC.RUST_EXACT_PARAMS else f"{ident}.into()"


def _check_width(target: str, field: NamedTypeSchema, rust_type: str, width: int) -> None:
    if field.size is not None and field.size != width:
        raise ValueError(
            f"Directive on `{target}` maps a {field.size}-byte field to `{rust_type}` "
            f"({width} bytes)"
        )


def _allow_non_snake_case(idents: Iterable[str]) -> list[str]:
    bare = [i.removeprefix("r#") for i in idents]
    return ["#[allow(non_snake_case)]"] if any(b != b.lower() for b in bare) else []


def _by_offset(fields: list[NamedTypeSchema]) -> list[NamedTypeSchema]:
    return sorted(fields, key=lambda f: f.offset or 0)


def _join_sections(sections: list[list[str]]) -> list[str]:
    lines: list[str] = []
    for i, section in enumerate(sections):
        if i:
            lines.append("")
        lines += section
    return lines


@dataclasses.dataclass
class _ObjectRenderer:
    """The Rust text of one ``object/<key>`` block."""

    info: ObjectInfo
    imports: RustImports
    ty_map: dict[str, str]
    module: tuple[str, ...]
    """Module of the file the block is in."""
    declared: Mapping[str, tuple[str, ...]]
    """Type keys with an ``object/`` block in the run -> the module of its file."""
    missing: set[str] = dataclasses.field(default_factory=set)
    """Referenced type keys nothing in the run provides."""

    @property
    def type_key(self) -> str:
        """The object's type key."""
        assert self.info.type_key is not None
        return self.info.type_key

    @property
    def leaf(self) -> str:
        """The wrapper's name."""
        return self.type_key.rsplit(".", 1)[-1]

    @property
    def obj_struct(self) -> str:
        """The object struct's name."""
        return self.leaf + "Obj"

    # ---- names --------------------------------------------------------------
    def _provider(self, type_key: str) -> str | None:
        """``crate``, ``mapped`` (ty-map) or ``generated``; None (recorded missing) otherwise."""
        if is_crate_type_key(type_key):
            return "crate"
        if type_key in self.ty_map:
            return "mapped"
        if type_key in self.declared:
            return "generated"
        self.missing.add(type_key)
        return None

    def _spell(self, type_key: str) -> str:
        """A generated type from this file: the leaf in its own module, else a crate path."""
        if type_key.partition(".")[0] in RC.RUST_MOD_MAP:
            return type_key
        leaf = type_key.rpartition(".")[2]
        module = self.declared.get(type_key)
        if module is None or module == self.module:
            return leaf
        return "::".join((*module, leaf))

    def _record_mapped(self, path: str, imports: RustImports) -> str:
        """A ``ty-map`` target; one in this file's own module is in scope already."""
        module, _, name = path.rpartition("::")
        return name if module == "::".join(self.module) else imports.record(path)

    def _resolve(
        self, origin: str, imports: RustImports, type_key: str | None = None
    ) -> str | None:
        """The Rust name of a leaf origin (its ``use`` recorded), or None.

        A ``ty-map`` entry of the key the schema was parsed from wins.
        """
        key = type_key if type_key in self.ty_map else origin
        mapped = self.ty_map.get(key)
        if mapped is not None:
            return self._record_mapped(mapped, imports)
        if "." not in origin or origin.startswith("ctypes."):
            return None
        if self._provider(origin) == "crate":
            return None  # an ffi.* key off the default map: no crate type
        return imports.record(self._spell(origin))

    def _record_use(self, name: str) -> str:
        return self.imports.record(name) if "::" in name else name

    def _base_type(self) -> tuple[str, bool]:
        """The embedded ``base`` and whether it is a generated or ty-mapped parent."""
        parent = self.info.parent_type_key
        if parent is not None:
            provider = self._provider(parent)
            if provider == "mapped":
                return self._record_mapped(self.ty_map[parent] + "Obj", self.imports), True
            if provider != "crate":
                return self.imports.record(self._spell(parent) + "Obj"), True
        chain = [k for k in self.info.ancestors if k != RC.RUST_ROOT_TYPE_KEY]
        if parent is not None and parent not in (RC.RUST_ROOT_TYPE_KEY, *chain):
            chain.append(parent)
        return self.imports.record_builtin_base(chain), False

    # ---- layout -------------------------------------------------------------
    def classify(self) -> Verdict:
        """The layout verdict of the object under this file's directives."""
        infos = {key: object_info_from_type_key(key) for key in self.info.ancestors}
        infos[self.type_key] = self.info
        owner = {id(f): key for key, info in infos.items() for f in info.fields}
        scratch = RustImports()
        unmirrored = {
            k
            for k in self.info.ancestors
            if k != RC.RUST_ROOT_TYPE_KEY and self._provider(k) == "crate"
        }
        return classify(
            infos,
            forced_opaque=self.imports.directives.opaque,
            unmirrored=unmirrored,
            field_renderable=lambda f: self._mirror(owner[id(f)], f, scratch) is not None,
        )[self.type_key]

    # ---- field types --------------------------------------------------------
    def _mirror(self, owner: str, field: NamedTypeSchema, imports: RustImports) -> str | None:
        """The in-struct Rust type of a field, or None when it has none.

        Directives first; then an ``Optional`` by its C++ layout, a scalar by
        its reflected width, anything else by its schema.
        """
        directives = self.imports.directives
        target = f"{owner}.{field.name}"
        enum = directives.enums.get(target)
        if enum is not None:
            _check_width(target, field, enum.repr, RC.RUST_SCALAR_WIDTHS[enum.repr])
            return enum.name
        override = directives.field_types.get(target)
        mirror: str | None
        if override is not None:
            width = RC.RUST_SCALAR_WIDTHS.get(override)
            if width is not None:
                _check_width(target, field, override, width)
            mirror = imports.record(override) if "::" in override else override
        elif field.origin == "Optional":
            mirror = self._optional_mirror(field, imports)
        else:
            narrowed = None
            if field.size is not None:
                narrowed = RC.RUST_SCALAR_BY_SIZE.get((field.origin, field.size))
            mirror = narrowed or render_rust_type(field, lambda o, k: self._resolve(o, imports, k))
        if mirror is None:
            return None
        if target in directives.nullable and not mirror.startswith("Option<"):
            if field.size not in (None, RC.RUST_POINTER_SIZE):
                raise ValueError(
                    f"`nullable` directive on `{target}`: the field is {field.size} bytes, "
                    "not a pointer-sized object reference"
                )
            mirror = f"Option<{mirror}>"
        return mirror

    def _optional_mirror(self, field: NamedTypeSchema, imports: RustImports) -> str | None:
        """An object payload is a nullable pointer; any other a 16-byte ``TVMFFIAny`` cell."""
        if not field.args:
            return None
        payload = field.args[0]
        if payload.origin == "Any":
            return None
        inner = render_rust_type(payload, lambda o, k: self._resolve(o, imports, k))
        if inner is None:
            return None
        cell = (
            payload.origin in RC.RUST_ANY_BACKED_OPTIONAL_PAYLOADS or payload.origin == "Optional"
        )
        size = RC.RUST_OPTIONAL_FIELD_SIZE if cell else RC.RUST_OBJECT_OPTIONAL_FIELD_SIZE
        if field.size not in (None, size):
            return None
        if cell:
            return f"{imports.record(RC.RUST_OPTIONAL_PATH)}<{inner}>"
        return f"Option<{inner}>"

    # ---- pieces -------------------------------------------------------------
    def _accessor(self, field: NamedTypeSchema) -> list[str]:
        """``pub fn <field>(&self) -> Result<T>`` through the C ABI getter (``Any`` without T)."""
        directives = self.imports.directives
        target = f"{self.type_key}.{field.name}"
        name = rust_ident(field.name)
        getter = f'FieldGetter::new(Self::type_index(), "{field.name}")?'
        allow = _allow_non_snake_case([name])
        enum = directives.enums.get(target)
        if enum is not None:
            return [
                *allow,
                f"pub fn {name}(&self) -> Result<{enum.name}> {{",
                f"    let raw: i64 = {getter}.get(self)?;",
                f"    {enum.name}::try_from(raw)",
                "}",
            ]
        override = directives.field_types.get(target)
        rust_type: str | None
        if override is not None:
            rust_type = self._record_use(override)
        elif field.origin == "Any":
            rust_type = None  # FieldGetter::get does not take Any -> Any
        else:
            rust_type = render_rust_type(field, lambda o, k: self._resolve(o, self.imports, k))
        if rust_type is None:
            any_type = self.imports.record("tvm_ffi::Any")
            return [
                *allow,
                f"pub fn {name}(&self) -> Result<{any_type}> {{",
                f"    {getter}.get_any(self)",
                "}",
            ]
        if target in directives.nullable and not rust_type.startswith("Option<"):
            rust_type = f"Option<{rust_type}>"
        return [
            *allow,
            f"pub fn {name}(&self) -> Result<{rust_type}> {{",
            f"    {getter}.get(self)",
            "}",
        ]

    def _enum(self, spec: EnumSpec) -> list[str]:
        """The open integer newtype an ``enum`` directive declares."""
        error = self.imports.record("tvm_ffi::Error")
        value_error = self.imports.record("tvm_ffi::VALUE_ERROR")
        result = self.imports.record("tvm_ffi::Result")
        message = f'&format!("{spec.name} value {{value}} does not fit {spec.repr}")'
        return [
            "#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]",
            "#[repr(transparent)]",
            f"pub struct {spec.name}({spec.repr});",
            "",
            "#[allow(non_upper_case_globals)]",
            f"impl {spec.name} {{",
            *(f"    pub const {member}: Self = Self({value});" for member, value in spec.members),
            f"    pub const fn from_raw(value: {spec.repr}) -> Self {{",
            "        Self(value)",
            "    }",
            f"    pub const fn as_raw(self) -> {spec.repr} {{",
            "        self.0",
            "    }",
            "}",
            "",
            f"impl TryFrom<i64> for {spec.name} {{",
            f"    type Error = {error};",
            f"    fn try_from(value: i64) -> {result}<Self> {{",
            f"        {spec.repr}::try_from(value).map(Self).map_err(|_| {{",
            f'            {error}::new({value_error}, {message}, "")',
            "        })",
            "    }",
            "}",
        ]

    @staticmethod
    def _deref(source: str, target: str) -> list[str]:
        return [
            f"impl Deref for {source} {{",
            f"    type Target = {target};",
            f"    fn deref(&self) -> &{target} {{",
            "        &self.base",
            "    }",
            "}",
        ]

    def _upcasts(self) -> list[str]:
        """``impl_object_upcast!`` to each ancestor's wrapper and each ``upcast`` view."""
        targets: list[str] = []
        for key in self.info.ancestors:
            provider = self._provider(key)
            if provider == "mapped":
                targets.append(self._record_mapped(self.ty_map[key], self.imports))
            elif provider != "crate":
                targets.append(self.imports.record(self._spell(key)))
        targets += [
            self._record_use(v) for v in self.imports.directives.upcasts.get(self.type_key, [])
        ]
        if not targets:
            return []
        pairs = ", ".join(f"{self.leaf} => {t}" for t in targets)
        return [f"tvm_ffi::impl_object_upcast!({pairs});"]

    def _struct(self, verdict: Verdict, base: str) -> list[str]:
        head = [
            "#[repr(C)]",
            "#[derive(tvm_ffi::derive::Object)]",
            f'#[type_key = "{self.type_key}"]',
            *(["#[type_final]"] if self.info.is_final else []),
            f"pub struct {self.obj_struct} {{",
            f"    base: {base},",
        ]
        if not verdict.is_complete:
            doc = f"/// Opaque: {verdict.detail}. Fields are read through the C ABI getters."
            return [doc, *head, "}"]
        members = []
        for field in _by_offset(self.info.fields):
            mirror = self._mirror(self.type_key, field, self.imports)
            assert mirror is not None  # the verdict checked every field
            members.append(f"    pub {rust_ident(field.name)}: {mirror},")
        return [
            f"/// Complete: {verdict.detail}.",
            *_allow_non_snake_case(rust_ident(f.name) for f in self.info.fields),
            *head,
            *members,
            "}",
            "",
            "const _: () = {",
            f"    assert!(::core::mem::size_of::<{self.obj_struct}>() == {verdict.total_size});",
            f"    assert!(::core::mem::align_of::<{self.obj_struct}>() == {verdict.alignment});",
            "};",
        ]

    # ---- allocators ---------------------------------------------------------
    def _chain_params(self, key: str, info: ObjectInfo) -> list[tuple[str, str]]:
        """``(field, type)`` of every field root to leaf, as ``<key>Obj::new`` takes them."""
        parent = info.parent_type_key
        inherited: list[tuple[str, str]] = []
        if parent is not None and self._provider(parent) != "crate":
            inherited = self._chain_params(parent, object_info_from_type_key(parent))
        return self._level_params(key, info, inherited)

    def _level_params(
        self, key: str, info: ObjectInfo, inherited: list[tuple[str, str]]
    ) -> list[tuple[str, str]]:
        """The parent's parameters (a ``field`` directive narrows one) and ``key``'s own."""
        params = []
        for name, rust_type in inherited:
            override = self.imports.directives.field_types.get(f"{key}.{name}")
            params.append((name, rust_type if override is None else self._record_use(override)))
        for field in _by_offset(info.fields):
            mirror = self._mirror(key, field, self.imports)
            assert mirror is not None  # complete along the chain
            params.append((field.name, mirror))
        return params

    @staticmethod
    def _fn(
        head: str,
        params: list[tuple[str, str]],
        call: tuple[str, list[str]],
        init: list[str],
        generic: bool = False,
    ) -> list[str]:
        plist = [f"{rust_ident(n)}: {_param_type(t) if generic else t}" for n, t in params]
        binding, args = call
        return [
            *(f"    {line}" for line in _allow_non_snake_case(rust_ident(n) for n, _ in params)),
            *_call_lines(f"    {head}(", plist, ") -> Self {"),
            *_call_lines(f"        let {binding}(", args, ");"),
            *_call_lines("        Self { ", init, " }"),
            "    }",
        ]

    def _allocators(self, base: str, has_parent: bool) -> list[list[str]]:
        """``<Leaf>Obj::new`` (each field as its own type) and the wrapper's ``new``."""
        inherited: list[tuple[str, str]] = []
        if has_parent:
            parent = self.info.parent_type_key
            assert parent is not None
            inherited = self._chain_params(parent, object_info_from_type_key(parent))
        params = self._level_params(self.type_key, self.info, inherited)
        to_parent = [
            rust_ident(n) if t == parent_t else f"{rust_ident(n)}.into()"
            for (n, t), (_, parent_t) in zip(params[: len(inherited)], inherited, strict=True)
        ]
        own = [rust_ident(n) for n, _ in params[len(inherited) :]]
        visibility = "pub(crate) fn new" if self.info.is_final else "pub fn new"
        custom = self.type_key in self.imports.directives.custom_new
        return [
            [
                f"impl {self.obj_struct} {{",
                *self._fn(visibility, params, (f"base = {base}::new", to_parent), ["base", *own]),
                "}",
            ],
            [
                f"impl {self.leaf} {{",
                "    /// Lossless complete-field allocation.",
                *self._fn(
                    "pub fn from_fields" if custom else "pub fn new",
                    params,
                    (
                        f"obj = {self.obj_struct}::new",
                        [_forward(rust_ident(n), t) for n, t in params],
                    ),
                    ["base: ObjectArc::new(obj)"],
                    generic=True,
                ),
                "}",
            ],
        ]

    def _extensible(self) -> bool:
        """Non-final with every ancestor below ``ffi.Object`` generated: Rust may subclass it."""
        return not self.info.is_final and all(
            self._provider(k) == "generated"
            for k in self.info.ancestors
            if k != RC.RUST_ROOT_TYPE_KEY
        )

    def _shallow_copy(self) -> list[str]:
        trait = self.imports.record("tvm_ffi::ShallowCopy")
        init = [
            f"base: {trait}::shallow_copy(&self.base)",
            *(
                f"{n}: Clone::clone(&self.{n})"
                for n in (rust_ident(f.name) for f in _by_offset(self.info.fields))
            ),
        ]
        return [
            f"impl {trait} for {self.obj_struct} {{",
            "    fn shallow_copy(&self) -> Self {",
            *_call_lines("        Self { ", init, " }"),
            "    }",
            "}",
        ]

    def _unsafe_init(self) -> list[str]:
        """Drop the defined fields of an all-zero object, the parent's first.

        A ``TVMFFIAny`` cell drops as is (zero bytes are None); an enum has
        nothing to drop; anything else goes through ``drop_if_defined``.
        """
        trait = self.imports.record("tvm_ffi::UnsafeInit")
        addr = self.imports.record("std::ptr::addr_of_mut")
        directives = self.imports.directives
        drops = [f"{trait}::drop_defined_fields({addr}!((*this).base));"]
        for field in _by_offset(self.info.fields):
            target = f"{self.type_key}.{field.name}"
            if target in directives.enums:
                continue
            mirror = self._mirror(self.type_key, field, self.imports)
            assert mirror is not None
            cell = target not in directives.field_types and (
                field.origin == "Any"
                or (field.origin == "Optional" and not mirror.startswith("Option<"))
            )
            drop = self.imports.record(
                "std::ptr::drop_in_place" if cell else "tvm_ffi::reflection::drop_if_defined"
            )
            drops.append(f"{drop}({addr}!((*this).{rust_ident(field.name)}));")
        return [
            f"unsafe impl {trait} for {self.obj_struct} {{",
            "    unsafe fn drop_defined_fields(this: *mut Self) {",
            "        unsafe {",
            *(f"            {line}" for line in drops),
            "        }",
            "    }",
            "}",
        ]

    def body(self) -> list[str]:
        """The block's Rust lines."""
        self.imports.reserved.update((self.leaf, self.obj_struct))
        verdict = self.classify()
        self.imports.record("std::ops::Deref")
        self.imports.record("tvm_ffi::ObjectArc")
        base, has_parent = self._base_type()
        fields = self.info.fields
        accessors = bool(fields) and not verdict.is_complete
        if accessors:
            for name in ("tvm_ffi::ObjectCore", "tvm_ffi::FieldGetter", "tvm_ffi::Result"):
                self.imports.record(name)
        enums = self.imports.directives.enums
        sections = [
            self._enum(enums[f"{self.type_key}.{f.name}"])
            for f in fields
            if f"{self.type_key}.{f.name}" in enums
        ]
        sections.append(self._struct(verdict, base))
        sections.append(
            [
                "#[repr(C)]",
                "#[derive(tvm_ffi::derive::ObjectRef, Clone)]",
                f"pub struct {self.leaf} {{",
                f"    base: ObjectArc<{self.obj_struct}>,",
                "}",
            ]
        )
        sections.append(self._deref(self.leaf, self.obj_struct))
        if has_parent:
            sections.append(self._deref(self.obj_struct, base))
        if accessors:
            lines = _join_sections([self._accessor(f) for f in fields])
            sections.append(
                [f"impl {self.obj_struct} {{", *(f"    {x}" if x else "" for x in lines), "}"]
            )
        elif verdict.is_complete:
            sections += self._allocators(base, has_parent)
            if self._extensible():
                sections.append(self._shallow_copy())
                sections.append(self._unsafe_init())
        upcasts = self._upcasts()
        if upcasts:
            sections.append(upcasts)
        return _join_sections(sections)


def _fill(code: CodeBlock, body: list[str]) -> None:
    if len(code.lines) < 2:
        raise ValueError(f"block at line {code.lineno_start} has no begin/end markers")
    pad = " " * code.indent
    code.lines = [code.lines[0], *(pad + x if x else "" for x in body), code.lines[-1]]


def generate_rust_object(
    code: CodeBlock,
    ty_map: dict[str, str],
    imports: RustImports,
    opt: Options,
    obj_info: ObjectInfo,
    declared: Mapping[str, tuple[str, ...]],
) -> None:
    """Fill an ``object/<key>`` block with the Rust binding of ``obj_info``.

    ``declared`` maps each type key with a block in the run (this one's too)
    to its file's module. ``ValueError`` when the binding refers to a type key
    the run does not provide.
    """
    del opt
    if obj_info.type_key is None:
        raise ValueError(f"block at line {code.lineno_start}: the object has no type key")
    renderer = _ObjectRenderer(
        info=obj_info,
        imports=imports,
        ty_map=ty_map,
        module=declared[obj_info.type_key],
        declared=declared,
    )
    body = renderer.body()
    if renderer.missing:
        keys = ", ".join(f"`{k}`" for k in sorted(renderer.missing))
        raise ValueError(
            f"`{obj_info.type_key}` (line {code.lineno_start}) depends on {keys}, which this run "
            "does not ask for: add an `object/<key>` block or a `ty-map` directive for each"
        )
    _fill(code, body)


def _builtin_stand_in(type_key: str, base: str) -> list[str]:
    return [
        f"/// Header-only stand-in for the builtin `{type_key}`; "
        "it only carries the ancestor depth.",
        "#[allow(dead_code)]",
        "#[repr(C)]",
        "#[derive(tvm_ffi::derive::Object)]",
        f'#[type_key = "{type_key}"]',
        f"struct {builtin_mirror_name(type_key)} {{",
        f"    base: {base},",
        "}",
    ]


def generate_rust_import_section(
    code: CodeBlock, imports: RustImports, opt: Options, defined_types: set[str]
) -> None:
    """Fill the ``import-section``: sorted ``use`` lines, then the builtin stand-ins.

    Types the file defines are not imported.
    """
    del opt
    body = sorted({i.as_use_line() for i in imports.items if i.path not in defined_types})
    for type_key, base in imports.builtin_mirrors.items():
        body += ["", *_builtin_stand_in(type_key, base)]
    _fill(code, body)


def generate_rust_api_file(
    code_blocks: list[CodeBlock],
    ty_map: dict[str, str],
    module_name: str,
    object_infos: list[ObjectInfo],
    init_cfg: InitConfig,
    is_root: bool,
    syntax: C.MarkerSyntax,
) -> str:
    """The text ``--init`` appends to a prefix's ``mod.rs``: header, import section, blocks."""
    del ty_map, init_cfg, is_root
    out = []
    if not code_blocks:
        out.append("#![allow(dead_code, unused_imports)]\n")
        out.append(f"\n//! FFI bindings for `{module_name}` (generated by tvm-ffi-stubgen).\n\n")
    if not any(c.kind == "import-section" for c in code_blocks):
        out.append(f"{syntax.begin} import-section\n{syntax.end}\n\n")
    defined = {c.param for c in code_blocks if c.kind == "object"}
    for info in object_infos:
        if info.type_key is not None and info.type_key not in defined:
            out.append(f"{syntax.begin} object/{info.type_key}\n{syntax.end}\n\n")
    return "".join(out)


def finalize_rust_module_tree(init_path: Path, prefixes: set[str]) -> None:
    """Declare each generated prefix with ``pub mod`` in its parent's ``mod.rs``.

    Missing ``mod.rs`` files are created; existing declarations are kept.
    """
    children: dict[Path, set[str]] = {}
    for prefix in prefixes:
        parts = [p for p in prefix.split(".") if p]
        for i, part in enumerate(parts):
            children.setdefault(init_path.joinpath(*parts[:i]), set()).add(part)
    for parent, names in children.items():
        parent.mkdir(parents=True, exist_ok=True)
        mod_rs = parent / "mod.rs"
        text = mod_rs.read_text(encoding="utf-8") if mod_rs.exists() else ""
        new = [f"pub mod {n};" for n in sorted(names) if f"pub mod {n};" not in text]
        if not new:
            continue
        if text and not text.endswith("\n"):
            text += "\n"
        if text.strip():
            text += "\n"
        _write_atomic(mod_rs, text + "\n".join(new) + "\n")
