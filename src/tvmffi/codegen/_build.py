"""Compile generated wrappers and kernel sources into a module library (or an object file).

Every translation unit is compiled on its own (``cc`` for C, ``c++`` for C++,
``nvcc`` for ``.cu``), in parallel, then linked against the runtime's
``libtvm_ffi``. Libraries are cached under ``output_dir`` by a hash of everything
that goes into them (generated code, kernel sources, flags, compilers, runtime
headers), so a second :func:`build` of the same inputs only loads the library.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from os import PathLike
from typing import Union

from .. import _lib
from ..function import Function
from ..module import Module, load_module
from ._emit import emit_c, kernel_prototype
from ._spec import Signature, check_identifier
from .library_bin import LibraryBin

__all__ = ["CompileError", "build", "export_object", "inline", "stats"]

SourceLike = Union[str, "PathLike[str]"]

# Compiler processes started by this module (tests use it to see a cache hit).
stats: dict[str, int] = {"compiler_runs": 0}

_LANGS = {".c": "c", ".cc": "c++", ".cpp": "c++", ".cxx": "c++", ".cu": "cuda"}
_CACHE_VERSION = "tvmffi.codegen/1"
_LIBRARY_BIN_SOURCE = "tvmffi_library_bin.c"


class CompileError(RuntimeError):
    """A compiler or linker failed; the message holds its output and the file it compiled."""

    def __init__(self, message: str, path: str, output: str):
        super().__init__(message)
        self.path = path
        self.output = output


@dataclass(frozen=True)
class _Source:
    filename: str  # name inside the build dir (or the user's own path)
    text: str
    lang: str
    user_path: str | None  # compiled in place, so its relative #includes work


def _wheel_dirs() -> tuple[str, str]:
    """(include dir, library dir) of the runtime in use."""
    lib_dir = os.path.dirname(_lib.lib_path())
    include = os.path.join(os.path.dirname(lib_dir), "include")
    if not os.path.isfile(os.path.join(include, "tvm", "ffi", "c_api.h")):
        include = str(_lib._libinfo().find_include_path())
    return include, lib_dir


def _tool(lang: str) -> str:
    names = {"c": ("cc", "gcc", "clang"), "c++": ("c++", "g++", "clang++"), "cuda": ("nvcc",)}
    env = {"c": "CC", "c++": "CXX", "cuda": "NVCC"}[lang]
    override = os.environ.get(env)
    if override:
        return override
    for name in names[lang]:
        found = shutil.which(name)
        if found:
            return found
    if lang == "cuda":
        for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
            if root and os.path.isfile(os.path.join(root, "bin", "nvcc")):
                return os.path.join(root, "bin", "nvcc")
    looked = ", ".join(names[lang])
    raise RuntimeError(f"no {lang} compiler found (looked for {looked}; set ${env})")


@functools.cache
def _tool_version(tool: str) -> str:
    proc = subprocess.run([tool, "--version"], capture_output=True, text=True)
    return proc.stdout.strip()


def _cache_root(output_dir: str | PathLike[str] | None) -> str:
    if output_dir is not None:
        return os.path.abspath(os.fspath(output_dir))
    env = os.environ.get("TVMFFI_CACHE_DIR")
    if env:
        return os.path.abspath(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.abspath(os.path.join(base, "tvmffi", "codegen"))


def _normalize_functions(functions: object) -> list[tuple[Signature, str]]:
    if isinstance(functions, (str, bytes)) or not isinstance(functions, Iterable):
        raise TypeError("functions must be a list of (Signature, kernel_name) pairs")
    out: list[tuple[Signature, str]] = []
    names: set[str] = set()
    for item in functions:
        if (
            not isinstance(item, tuple)
            or len(item) != 2
            or not isinstance(item[0], Signature)
            or not isinstance(item[1], str)
        ):
            raise TypeError(f"functions items must be (Signature, kernel_name) pairs, got {item!r}")
        sig, kernel = item
        if sig.name in names:
            raise ValueError(f"two functions are named {sig.name!r}")
        names.add(sig.name)
        out.append((sig, kernel))
    return out


def _read_sources(sources: Sequence[SourceLike]) -> list[_Source]:
    if isinstance(sources, (str, bytes, PathLike)):
        sources = [sources]
    out: list[_Source] = []
    for i, src in enumerate(sources):
        if isinstance(src, PathLike) or (
            isinstance(src, str) and "\n" not in src and os.path.splitext(src)[1] in _LANGS
        ):
            path = os.path.abspath(os.fspath(src))
            if not os.path.isfile(path):
                raise FileNotFoundError(f"kernel source not found: {path}")
            ext = os.path.splitext(path)[1]
            if ext not in _LANGS:
                raise ValueError(f"unknown source type {ext!r} for {path} (use .c, .cc, .cpp, .cu)")
            with open(path, encoding="utf-8") as f:
                text = f.read()
            out.append(_Source(os.path.basename(path), text, _LANGS[ext], path))
        elif isinstance(src, str):
            out.append(_Source(f"source{i}.c", src, "c", None))
        else:
            raise TypeError(f"sources must be C source strings or paths, got {type(src).__name__}")
    return out


def _flags(lang: str, include: str, extra: Sequence[str]) -> list[str]:
    # Hidden visibility: only the symbols marked for export (the __tvm_ffi_ ones)
    # leave the library, and calls from a wrapper to its kernel skip the PLT.
    if lang == "cuda":
        base = ["-O2", "-Xcompiler", "-fPIC,-fvisibility=hidden", "-std=c++17"]
    else:
        base = ["-O2", "-fPIC", "-fvisibility=hidden", "-std=c11" if lang == "c" else "-std=c++17"]
    return [*base, "-I", include, *extra]


def _link_command(tools: dict[str, str], out: str, objects: list[str], lib_dir: str) -> list[str]:
    """The link command for objects compiled by ``tools`` (language -> compiler)."""
    if "cuda" in tools:
        return [tools["cuda"], "-shared", "-o", out, *objects, f"-L{lib_dir}", "-ltvm_ffi",
                "-Xlinker", f"-rpath,{lib_dir}"]
    tool = tools["c++" if "c++" in tools else "c"]
    return [tool, "-shared", "-o", out, *objects, f"-L{lib_dir}", "-ltvm_ffi",
            f"-Wl,-rpath,{lib_dir}"]


def _run_all(commands: list[tuple[list[str], str]], note: str = "") -> None:
    """Run compiler commands in parallel; raise CompileError for the first that fails.

    ``note`` (when given) ends the error message on a line of its own.
    """
    procs = []
    for cmd, path in commands:
        stats["compiler_runs"] += 1
        procs.append((subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True), cmd, path))
    failure: CompileError | None = None
    for proc, cmd, path in procs:
        output, _ = proc.communicate()
        if proc.returncode != 0 and failure is None:
            failure = CompileError(
                f"compiling {path} failed (exit {proc.returncode}):\n"
                f"$ {' '.join(cmd)}\n{output.strip()}" + (f"\n{note}" if note else ""),
                path,
                output,
            )
    if failure is not None:
        raise failure


def _wrapper_note(wrapper_path: str) -> str:
    return f"(generated wrapper: {wrapper_path})"


class _Plan:
    """Everything one build compiles: the generated wrapper file and the kernel sources."""

    def __init__(
        self,
        functions: object,
        sources: Sequence[SourceLike],
        extra_cflags: Sequence[str],
        embed: Sequence[str | PathLike[str]],
    ):
        self.functions = _normalize_functions(functions)
        wrapper = "\n".join(emit_c(sig, kernel) for sig, kernel in self.functions)
        self.sources = [_Source("tvmffi_wrappers.c", wrapper, "c", None), *_read_sources(sources)]
        if isinstance(extra_cflags, str):
            raise TypeError("extra_cflags must be a sequence of strings, not a str")
        self.extra = [str(f) for f in extra_cflags]
        # Embedded libraries: the digest hashes their payload bytes; the C array
        # (about four characters per byte) is rendered only when compiling, so a
        # change to how it is rendered must bump _CACHE_VERSION.
        self.embedded: LibraryBin | None = None
        self.embedded_bytes = b""
        self.embedded_note = ""
        embed_paths = [os.path.abspath(os.fspath(p)) for p in embed]
        if embed_paths:
            from ._embed import embed_library_bin

            self.embedded = embed_library_bin(embed_paths)
            self.embedded_bytes = self.embedded.to_bytes()
            names = ", ".join(os.path.basename(p) for p in embed_paths)
            self.embedded_note = f"embeds: {names}"
        self.include, self.lib_dir = _wheel_dirs()
        # Compilers are resolved once ($CC/$CXX/$NVCC or a PATH search), so the one
        # the digest hashes is the one that runs. The embedded array is C, like the
        # wrapper, so it adds no language.
        langs = {s.lang for s in self.sources}
        self.tools = {lang: _tool(lang) for lang in sorted(langs)}

    def digest(self) -> str:
        h = hashlib.sha256()

        def put(text: str | bytes) -> None:
            data = text.encode("utf-8") if isinstance(text, str) else text
            h.update(len(data).to_bytes(8, "little"))
            h.update(data)

        put(_CACHE_VERSION)
        for tool in self.tools.values():
            put(tool)
            put(_tool_version(tool))
        put(self.include)
        put(self.lib_dir)
        with open(os.path.join(self.include, "tvm", "ffi", "c_api.h"), "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
        for flag in self.extra:
            put(flag)
        for src in self.sources:
            put(src.filename)
            put(src.lang)
            put(src.text)
        if self.embedded is not None:
            put(_LIBRARY_BIN_SOURCE)
            put(self.embedded_note)
            put(self.embedded_bytes)
        return h.hexdigest()[:20]

    def all_sources(self) -> list[_Source]:
        """The sources to compile, with the embedded libraries rendered as a C array last."""
        if self.embedded is None:
            return self.sources
        from ._embed import library_bin_to_c

        text = library_bin_to_c(self.embedded, comment=self.embedded_note)
        return [*self.sources, _Source(_LIBRARY_BIN_SOURCE, text, "c", None)]

    def compile_objects(self, work: str) -> tuple[list[str], str]:
        """Write the generated files into ``work`` and compile every source to an object."""
        commands: list[tuple[list[str], str]] = []
        objects: list[str] = []
        wrapper_path = ""
        for i, src in enumerate(self.all_sources()):
            path = src.user_path
            if path is None:
                path = os.path.join(work, src.filename)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(src.text)
            if i == 0:
                wrapper_path = path
            obj = os.path.join(work, f"{i}_{os.path.splitext(src.filename)[0]}.o")
            cmd = [self.tools[src.lang], *_flags(src.lang, self.include, self.extra), "-c", path,
                   "-o", obj]
            commands.append((cmd, path))
            objects.append(obj)
        _run_all(commands, _wrapper_note(wrapper_path))
        return objects, wrapper_path


def build(
    functions: Sequence[tuple[Signature, str]],
    *,
    sources: Sequence[SourceLike] = (),
    name: str,
    output_dir: str | PathLike[str] | None = None,
    extra_cflags: Sequence[str] = (),
    embed: Sequence[str | PathLike[str]] = (),
) -> Module:
    """Compile validated wrappers for ``functions`` plus ``sources`` into a library and load it.

    ``functions`` is a list of ``(Signature, kernel_name)``; ``sources`` are C
    source strings or paths of ``.c``/``.cc``/``.cpp``/``.cu`` files that define the
    kernels (with C linkage). ``extra_cflags`` go to every compiler invocation.
    ``embed`` lists other module libraries to embed as custom modules
    (``__tvm_ffi__library_bin``). The library is cached in ``output_dir``
    (default ``$TVMFFI_CACHE_DIR`` or ``~/.cache/tvmffi/codegen``) under a hash of all
    inputs: building the same inputs again only loads it. Compiler failures raise
    :class:`CompileError` (a ``RuntimeError``) with the compiler's output and the
    path of the file it was compiling.
    """
    check_identifier(name, "library name")
    plan = _Plan(functions, sources, extra_cflags, embed)
    root = _cache_root(output_dir)
    final_dir = os.path.join(root, f"{name}-{plan.digest()}")
    lib_path = os.path.join(final_dir, f"lib{name}.so")
    if not os.path.isfile(lib_path):
        _build_into(plan, root, final_dir, name)
    return load_module(lib_path)


def _build_into(plan: _Plan, root: str, final_dir: str, name: str) -> None:
    os.makedirs(root, exist_ok=True)
    # Build in a private directory and rename it into place, so a concurrent
    # build or an interrupted one never leaves a half-written library at the
    # cached path. A failed build keeps its directory: the error names files in it.
    work = tempfile.mkdtemp(prefix=f".{name}-", dir=root)
    objects, wrapper_path = plan.compile_objects(work)
    out = os.path.join(work, f"lib{name}.so")
    cmd = _link_command(plan.tools, out, objects, plan.lib_dir)
    _run_all([(cmd, out)], _wrapper_note(wrapper_path))
    for obj in objects:
        os.remove(obj)
    try:
        os.rename(work, final_dir)
    except OSError:
        # Another process finished the same build first; its result is identical.
        shutil.rmtree(work, ignore_errors=True)


def export_object(
    functions: Sequence[tuple[Signature, str]],
    *,
    sources: Sequence[SourceLike] = (),
    path: str | PathLike[str],
    extra_cflags: Sequence[str] = (),
) -> str:
    """Compile the wrappers and ``sources`` into one relocatable object file at ``path``.

    For linking into your own library (which must link ``libtvm_ffi``); the
    object exports ``__tvm_ffi_<name>`` plus its metadata and doc symbols.
    Returns the path written.
    """
    plan = _Plan(functions, sources, extra_cflags, ())
    out = os.path.abspath(os.fspath(path))
    work = tempfile.mkdtemp(prefix=".tvmffi-export-")
    objects, _ = plan.compile_objects(work)
    if len(objects) == 1:
        shutil.copyfile(objects[0], out)
    else:
        ld = shutil.which("ld") or "ld"
        _run_all([([ld, "-r", "-o", out, *objects], out)])
    shutil.rmtree(work, ignore_errors=True)
    return out


def inline(
    signature: Signature,
    body: str,
    *,
    output_dir: str | PathLike[str] | None = None,
    extra_cflags: Sequence[str] = (),
) -> Function:
    """Build ``signature`` with a kernel written as a C function body and return the function.

    Inside ``body`` the parameters carry their own names: tensors are typed data
    pointers, scalars C values, symbolic Vars ``int64_t`` and EnvStreams
    ``void*``. The body may ``return`` a non-zero value after raising an error
    with ``TVMFFIErrorSetRaisedFromCStr``; falling off its end returns 0.
    """
    if not isinstance(signature, Signature):
        raise TypeError(f"inline expects a Signature, not {type(signature).__name__}")
    if not isinstance(body, str):
        raise TypeError(f"inline expects the kernel body as a str, not {type(body).__name__}")
    kernel = f"{signature.name}_kernel"
    # A parameter may share its name with a macro of these headers (INT32_MAX,
    # DLPACK_MAJOR_VERSION): inside the body the name means the parameter.
    names = [p.name for p in signature.params] + [v.name for v in signature.vars]
    undefs = [f"#ifdef {n}\n#undef {n}\n#endif" for n in names]
    source = "\n".join([
        "#include <stdbool.h>",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "#include <tvm/ffi/c_api.h>",
        *undefs,
        "",
        f"{kernel_prototype(signature, kernel)} {{",
        body,
        "  return 0;",
        "}",
        "",
    ])
    mod = build([(signature, kernel)], sources=[source], name=signature.name,
                output_dir=output_dir, extra_cflags=extra_cflags)
    return mod[signature.name]
