"""Build C, C++ and CUDA sources into TVM FFI modules: ``load_inline``, ``build_inline``,
``build``, ``load``, with the official ``tvm_ffi.cpp`` signatures and behaviour.

Everything is compiled by :mod:`tvmffi._build` (the build system ``tvmffi.codegen``
uses too). What tvmffi adds on top of the official behaviour:

- an unchanged build is a load without starting any process (the official one
  runs ninja every time), also with an explicit ``build_directory``;
- a symbol left undefined by the link (a function declared but not defined, a
  library not linked, ``-fopenmp`` missing from ``extra_ldflags``) fails the build
  with a :class:`~tvmffi._build.CompileError` naming it, instead of failing at load
  time; pass ``extra_ldflags=["-Wl,-z,undefs"]`` for symbols that the process
  provides at load time (the Python C API, say);
- a failed build leaves nothing a later build would take for its result;
- a build longer than a second says what it compiles and where, on stderr
  (``TVMFFI_BUILD_VERBOSE=0`` silences it, ``=1`` shows every command);
- without a GPU (no ``nvidia-smi``) and without ``TVM_FFI_CUDA_ARCH_LIST``, CUDA
  sources compile for nvcc's default architecture instead of failing.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from .._build import LANG_OF_SUFFIX, Job, Unit
from .._build import build as _run_job
from ..module import Module, load_module

__all__ = ["build", "build_inline", "load", "load_inline"]

# Parameter types of the four entry points.
_Sources = Sequence[str] | str | None
_Flags = Sequence[str] | None
_Functions = Mapping[str, str] | Sequence[str] | str | None
_Cubins = Mapping[str, bytes] | None

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_HEADERS = (
    "#include <tvm/ffi/container/tensor.h>",
    "#include <tvm/ffi/dtype.h>",
    "#include <tvm/ffi/error.h>",
    "#include <tvm/ffi/extra/c_env_api.h>",
    "#include <tvm/ffi/function.h>",
)


def _as_list(value: Sequence[str] | str | None, what: str) -> list[str]:
    """``None`` -> [], a str -> [it], a sequence of str -> a list (flags stripped by callers)."""
    if value is None:
        return []
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    items = list(value)
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(f"{what} must be strings, got {type(item).__name__}: {item!r}")
    return [os.fspath(item) for item in items]


def _flags(value: Sequence[str] | None, what: str) -> list[str]:
    return [flag.strip() for flag in _as_list(value, what)]


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or "\0" in name:
        raise ValueError(f"module name must be a non-empty file name, got {name!r}")
    return name


def _check_backend(backend: str | None) -> None:
    if backend not in (None, "cuda", "hip"):
        raise ValueError(f"Invalid backend: {backend}. Supported backends are 'cuda' and 'hip'.")
    if backend == "hip":
        raise NotImplementedError("tvmffi builds CUDA sources with nvcc; HIP is not supported")


def _function_docs(functions: Mapping[str, str] | Sequence[str] | str | None) -> dict[str, str]:
    if functions is None:
        docs: dict[str, str] = {}
    elif isinstance(functions, str):
        docs = {functions: ""}
    elif isinstance(functions, Mapping):
        docs = {k: (v if v is not None else "") for k, v in functions.items()}
    else:
        docs = dict.fromkeys(functions, "")
    for name, doc in docs.items():
        if not isinstance(name, str) or not _IDENTIFIER.match(name):
            raise ValueError(f"function names must be C++ identifiers, got {name!r}")
        if not isinstance(doc, str):
            raise TypeError(f"the docstring of {name!r} must be a str, got {type(doc).__name__}")
    return docs


def _cpp_string(text: str) -> str:
    """``text`` as a C++ string literal: printable ASCII kept, every other byte escaped."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(f"docstring is not valid Unicode text: {err}") from err
    out = []
    for byte in data:
        ch = chr(byte)
        if ch in '"\\' or not 0x20 <= byte < 0x7F or ch == "?":  # "?": no trigraphs
            out.append(f"\\{byte:03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _exports(name: str, doc: str) -> list[str]:
    """The export macro of one function, and of its docstring when it has one."""
    macros = [f"TVM_FFI_DLL_EXPORT_TYPED_FUNC({name}, {name});"]
    if doc:
        macros.append(f"TVM_FFI_DLL_EXPORT_TYPED_FUNC_DOC({name}, {_cpp_string(doc)});")
    return macros


def _decorate(source: str, docs: Mapping[str, str]) -> str:
    """The source with the FFI headers before it and the functions' exports after it."""
    exports = [macro for name, doc in docs.items() for macro in _exports(name, doc)]
    return "\n".join([*_HEADERS, "", source, "", *exports, ""])


def _cache_root() -> str:
    env = os.environ.get("TVM_FFI_CACHE_DIR")
    return os.path.expanduser(env) if env else os.path.expanduser("~/.cache/tvm-ffi")


def _output_name(name: str, output: str | None) -> str:
    return Path(output).name if output is not None else f"{name}.so"


def _run(job: Job, build_directory: str | os.PathLike[str] | None) -> str:
    if build_directory is None:
        root = _cache_root()
        return _run_job(job, os.path.join(root, f"{job.name}_{job.key()[:16]}"), cache_root=root)
    return _run_job(job, os.path.abspath(os.fspath(build_directory)))


def build_inline(
    name: str,
    *,
    cpp_sources: _Sources = None,
    cuda_sources: _Sources = None,
    functions: _Functions = None,
    extra_cflags: _Flags = None,
    extra_cuda_cflags: _Flags = None,
    extra_ldflags: _Flags = None,
    extra_include_paths: _Flags = None,
    build_directory: str | None = None,
    embed_cubin: _Cubins = None,
    backend: str | None = None,
    output: str | None = None,
) -> str:
    """Compile C++ and/or CUDA source text into a shared library (or object file).

    Parameters
    ----------
    name : str
        The library's name (its file is ``<name>.so``).
    cpp_sources : str or sequence of str, optional
        C++ source text (several texts are joined). The TVM FFI headers
        (``tvm/ffi/function.h``, ``container/tensor.h``, ``dtype.h``, ``error.h``,
        ``extra/c_env_api.h``) are included before it.
    cuda_sources : str or sequence of str, optional
        CUDA source text, compiled by ``nvcc`` (``$NVCC``, ``PATH`` or
        ``$CUDA_HOME``) for the visible GPU's architecture
        (``$TVM_FFI_CUDA_ARCH_LIST`` overrides).
    functions : str, sequence of str or mapping of str to str, optional
        The functions to export as TVM FFI functions: a name, a list of names, or a
        mapping from name to docstring. They are declared or defined in
        ``cpp_sources`` when it is given, else in ``cuda_sources``; each becomes
        ``__tvm_ffi_<name>`` with its type schema (``TVM_FFI_DLL_EXPORT_TYPED_FUNC``),
        and a docstring becomes ``__tvm_ffi__doc_<name>``.
    extra_cflags : sequence of str, optional
        Flags for the C++ compiler (one flag per item; a ``str`` is one flag).
    extra_cuda_cflags : sequence of str, optional
        Flags for ``nvcc``.
    extra_ldflags : sequence of str, optional
        Flags for the link, e.g. ``["-lfoo"]``. Libraries link with
        ``-Wl,-z,defs``; pass ``-Wl,-z,undefs`` for symbols the loading process
        provides.
    extra_include_paths : sequence of str, optional
        Directories added to every compile's include path.
    build_directory : str, optional
        Where to build. Default: ``$TVM_FFI_CACHE_DIR`` (else ``~/.cache/tvm-ffi``),
        in a directory named after ``name`` and a digest of every input. A build whose
        inputs (headers included) are unchanged starts no process.
    embed_cubin : mapping of str to bytes, optional
        CUBIN images to embed, by the names ``TVM_FFI_EMBED_CUBIN`` uses in the source.
    backend : str, optional
        ``None`` or ``"cuda"``; ``"hip"`` raises ``NotImplementedError``.
    output : str, optional
        A file name ending in ``.o`` builds a relocatable object instead of a
        library (to link into a library of your own).

    Returns
    -------
    str
        The path of the built library (or object file).

    Raises
    ------
    CompileError
        A compile or link failed (a ``RuntimeError``): it carries the compiler's
        message, the command, the file and, for a link, the undefined symbols with
        their likely fix.
    ValueError
        No sources were given, or ``name`` is not a valid file name.
    TypeError
        A flag list is not a sequence of ``str``.

    Examples
    --------
    >>> import tvmffi, tvmffi.cpp
    >>> path = tvmffi.cpp.build_inline(
    ...     "doc_build_inline",
    ...     cpp_sources="int64_t mul(int64_t a, int64_t b) { return a * b; }",
    ...     functions={"mul": "Multiply two integers."})
    >>> tvmffi.load_module(path).mul(6, 7)
    42
    """
    name = _check_name(name)
    _check_backend(backend)
    cpp_list = _as_list(cpp_sources, "cpp_sources")
    cuda_list = _as_list(cuda_sources, "cuda_sources")
    with_cpp, with_cuda = bool(cpp_list), bool(cuda_list)
    cpp, cuda = "\n".join(cpp_list), "\n".join(cuda_list)
    if not with_cpp and not with_cuda:
        raise ValueError("build_inline needs cpp_sources or cuda_sources")
    docs = _function_docs(functions)
    generated: dict[str, str] = {}
    units: list[Unit] = []
    if with_cpp:
        generated["main.cpp"] = _decorate(cpp, docs)
        units.append(Unit("main.cpp", "c++"))
    if with_cuda:
        generated["cuda.cu"] = _decorate(cuda, {} if with_cpp else docs)
        units.append(Unit("cuda.cu", "cuda"))
    job = _job(
        name, units, extra_cflags, extra_cuda_cflags, extra_ldflags, extra_include_paths, output
    )
    job.generated = generated
    job.embed_cubin = _cubins(embed_cubin)
    job.note = ("source", "main.cpp" if with_cpp else "cuda.cu")
    return _run(job, build_directory)


def _cubins(embed_cubin: Mapping[str, bytes] | None) -> dict[str, bytes]:
    cubins = dict(embed_cubin or {})
    for key, data in cubins.items():
        if not isinstance(key, str) or not _IDENTIFIER.match(key):
            raise ValueError(f"embed_cubin names must be C identifiers, got {key!r}")
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"embed_cubin[{key!r}] must be bytes, got {type(data).__name__}")
        cubins[key] = bytes(data)
    return cubins


def _job(
    name: str,
    units: list[Unit],
    extra_cflags: Sequence[str] | None,
    extra_cuda_cflags: Sequence[str] | None,
    extra_ldflags: Sequence[str] | None,
    extra_include_paths: Sequence[str] | None,
    output: str | None,
) -> Job:
    cflags = _flags(extra_cflags, "extra_cflags")
    return Job(
        name=name,
        units=units,
        output=_output_name(name, output),
        cflags=cflags,
        cxxflags=cflags,
        cuda_cflags=_flags(extra_cuda_cflags, "extra_cuda_cflags"),
        ldflags=_flags(extra_ldflags, "extra_ldflags"),
        include_paths=[
            str(Path(p).resolve()) for p in _as_list(extra_include_paths, "extra_include_paths")
        ],
    )


def load_inline(
    name: str,
    *,
    cpp_sources: _Sources = None,
    cuda_sources: _Sources = None,
    functions: _Functions = None,
    extra_cflags: _Flags = None,
    extra_cuda_cflags: _Flags = None,
    extra_ldflags: _Flags = None,
    extra_include_paths: _Flags = None,
    build_directory: str | None = None,
    embed_cubin: _Cubins = None,
    keep_module_alive: bool = True,
    backend: str | None = None,
) -> Module:
    """Compile C++ and/or CUDA source text and load it as a :class:`~tvmffi.Module`.

    :func:`build_inline` followed by :func:`tvmffi.load_module`. Built with
    ``-DTVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1`` (in ``extra_cflags``, or defined in the
    source), each exported function carries its type schema, and
    ``inspect.signature(mod.f)`` and ``help(mod.f)`` show it (off by default, as in the
    official binding).

    Parameters
    ----------
    name : str
        The library's name.
    cpp_sources : str or sequence of str, optional
        C++ source text (several texts are joined). The TVM FFI headers
        (``tvm/ffi/function.h``, ``container/tensor.h``, ``dtype.h``, ``error.h``,
        ``extra/c_env_api.h``) are included before it.
    cuda_sources : str or sequence of str, optional
        CUDA source text, compiled by ``nvcc`` (``$NVCC``, ``PATH`` or
        ``$CUDA_HOME``) for the visible GPU's architecture
        (``$TVM_FFI_CUDA_ARCH_LIST`` overrides).
    functions : str, sequence of str or mapping of str to str, optional
        The functions to export as TVM FFI functions: a name, a list of names, or a
        mapping from name to docstring. They are declared or defined in
        ``cpp_sources`` when it is given, else in ``cuda_sources``; each becomes
        ``__tvm_ffi_<name>`` with its type schema (``TVM_FFI_DLL_EXPORT_TYPED_FUNC``),
        and a docstring becomes ``__tvm_ffi__doc_<name>``.
    extra_cflags : sequence of str, optional
        Flags for the C++ compiler (one flag per item; a ``str`` is one flag).
    extra_cuda_cflags : sequence of str, optional
        Flags for ``nvcc``.
    extra_ldflags : sequence of str, optional
        Flags for the link, e.g. ``["-lfoo"]``. Libraries link with
        ``-Wl,-z,defs``; pass ``-Wl,-z,undefs`` for symbols the loading process
        provides.
    extra_include_paths : sequence of str, optional
        Directories added to every compile's include path.
    build_directory : str, optional
        Where to build. Default: ``$TVM_FFI_CACHE_DIR`` (else ``~/.cache/tvm-ffi``),
        in a directory named after ``name`` and a digest of every input. A build whose
        inputs (headers included) are unchanged starts no process.
    embed_cubin : mapping of str to bytes, optional
        CUBIN images to embed, by the names ``TVM_FFI_EMBED_CUBIN`` uses in the source.
    backend : str, optional
        ``None`` or ``"cuda"``; ``"hip"`` raises ``NotImplementedError``.
    keep_module_alive : bool
        Keep the library loaded for the rest of the process (the default), as
        :func:`tvmffi.load_module` does.

    Returns
    -------
    Module
        The loaded module; ``mod.<name>`` is each exported function.

    Raises
    ------
    CompileError
        A compile or link failed (a ``RuntimeError``): it carries the compiler's
        message, the command, the file and, for a link, the undefined symbols with
        their likely fix.
    ValueError
        No sources were given, or ``name`` is not a valid file name.
    TypeError
        A flag list is not a sequence of ``str``.

    Examples
    --------
    >>> import tvmffi.cpp
    >>> mod = tvmffi.cpp.load_inline(
    ...     name="hello",
    ...     cpp_sources="int add(int a, int b) { return a + b; }",
    ...     functions=["add"],
    ...     extra_cflags=["-DTVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"],
    ... )
    >>> mod.add(1, 2)
    3
    >>> import inspect; str(inspect.signature(mod.add))
    '(arg0: int, arg1: int, /) -> int'
    """
    options = dict(locals())  # exactly the parameters: build_inline's, and keep_module_alive
    keep = options.pop("keep_module_alive")
    return load_module(build_inline(**options), keep_module_alive=keep)


def build(
    name: str,
    *,
    sources: _Sources = None,
    cpp_files: _Sources = None,
    cuda_files: _Sources = None,
    extra_cflags: _Flags = None,
    extra_cuda_cflags: _Flags = None,
    extra_ldflags: _Flags = None,
    extra_include_paths: _Flags = None,
    build_directory: str | None = None,
    backend: str | None = None,
    output: str | None = None,
) -> str:
    """Compile source files into a shared library (or object file) and return its path.

    The files export their functions themselves (``TVM_FFI_DLL_EXPORT_TYPED_FUNC``).
    The language follows each file's suffix: ``.c`` (C compiler), ``.cu`` (nvcc),
    ``.o``/``.obj`` (linked as they are), anything else C++.

    Parameters
    ----------
    name : str
        The library's name.
    sources : str or sequence of str, optional
        Source file paths.
    cpp_files, cuda_files : str or sequence of str, optional
        Aliases of ``sources`` (the official parameter names).
    extra_cflags : sequence of str, optional
        Flags for the C and C++ compilers.
    extra_cuda_cflags, extra_ldflags, extra_include_paths, build_directory, backend
        As for :func:`build_inline`.
    output : str, optional
        A file name ending in ``.o`` builds an object file.

    Returns
    -------
    str
        The path of the built library (or object file). Unchanged files (headers
        included) and options only return the path.

    Raises
    ------
    FileNotFoundError
        A source file does not exist.
    CompileError
        A compile or link failed.
    ValueError
        No source file was given.

    Examples
    --------
    >>> import os, tempfile, tvmffi, tvmffi.cpp
    >>> src = os.path.join(tempfile.mkdtemp(), "neg.cc")
    >>> with open(src, "w") as f:
    ...     _ = f.write("#include <tvm/ffi/function.h>\\n"
    ...                 "int64_t neg(int64_t x) { return -x; }\\n"
    ...                 "TVM_FFI_DLL_EXPORT_TYPED_FUNC(neg, neg);\\n")
    >>> tvmffi.load_module(tvmffi.cpp.build("doc_build", sources=[src])).neg(5)
    -5
    """
    name = _check_name(name)
    _check_backend(backend)
    paths = [
        *_as_list(sources, "sources"),
        *_as_list(cpp_files, "cpp_files"),
        *_as_list(cuda_files, "cuda_files"),
    ]
    if not paths:
        raise ValueError("build needs at least one source file")
    units = []
    for path in paths:
        full = str(Path(path).resolve())
        if not os.path.isfile(full):
            raise FileNotFoundError(f"source file not found: {full}")
        units.append(Unit(full, LANG_OF_SUFFIX.get(Path(full).suffix.lower(), "c++")))
    job = _job(
        name, units, extra_cflags, extra_cuda_cflags, extra_ldflags, extra_include_paths, output
    )
    return _run(job, build_directory)


def load(
    name: str,
    *,
    sources: _Sources = None,
    cpp_files: _Sources = None,
    cuda_files: _Sources = None,
    extra_cflags: _Flags = None,
    extra_cuda_cflags: _Flags = None,
    extra_ldflags: _Flags = None,
    extra_include_paths: _Flags = None,
    build_directory: str | None = None,
    keep_module_alive: bool = True,
    backend: str | None = None,
) -> Module:
    """Compile source files with :func:`build` and load the library as a :class:`~tvmffi.Module`.

    Parameters
    ----------
    name : str
        The library's name.
    sources, cpp_files, cuda_files, extra_cflags, extra_cuda_cflags, extra_ldflags
        As for :func:`build`.
    extra_include_paths, build_directory, backend
        As for :func:`build`.
    keep_module_alive : bool
        Keep the library loaded for the rest of the process (the default).

    Returns
    -------
    Module
        The loaded module.

    Raises
    ------
    FileNotFoundError
        A source file does not exist.
    CompileError
        A compile or link failed.
    """
    options = dict(locals())  # exactly the parameters: build's, and keep_module_alive
    keep = options.pop("keep_module_alive")
    return load_module(build(**options), keep_module_alive=keep)


#: Whether this is Windows (the official module's flag; tvmffi builds on POSIX only).
IS_WINDOWS = os.name == "nt"


def build_ninja(build_dir: str) -> None:
    """Run ``ninja`` on the ``build.ninja`` a client wrote into ``build_dir``.

    tvmffi's own builds do not go through ninja; this serves clients that generate
    a ninja file themselves. ``RuntimeError`` carries ninja's output when it fails or
    cannot be started.
    """
    try:
        proc = subprocess.run(
            ["ninja", "-C", os.fspath(build_dir)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
    except OSError as err:
        raise RuntimeError(f"build_ninja: cannot run ninja: {err}") from None
    if proc.returncode != 0:
        raise RuntimeError(f"ninja failed in {build_dir} (exit {proc.returncode}):\n{proc.stdout}")
