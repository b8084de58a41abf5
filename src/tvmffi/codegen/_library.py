"""Compile generated wrappers and kernel sources into a module library (or an object file).

This is codegen's front end to :mod:`tvmffi._build`, the one build system of the
package (the one ``tvmffi.cpp`` uses): it turns ``(Signature, kernel)`` pairs and
kernel sources into a build job. The wrappers are C; kernel sources may be C
text, C++ or CUDA text, or ``.c``/``.cc``/``.cpp``/``.cu`` files (compiled where they
lie, so their relative ``#include``\\ s work). Libraries are cached under
``output_dir`` in a directory named after the library and a digest of the inputs,
so a second :func:`build` of the same inputs only loads the library; a kernel
that the link cannot find (misspelled, or defined in C++ without ``extern "C"``)
fails the build with a :class:`~tvmffi._build.CompileError` naming it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Sequence
from os import PathLike
from typing import Union

from .. import _build
from .._build import CompileError, Job, Unit
from ..function import Function
from ..module import Module, load_module
from ._emit import emit_c, kernel_prototype
from ._spec import Signature, check_identifier

__all__ = ["CompileError", "build", "export_object", "inline", "signature_of"]

SourceLike = Union[str, "PathLike[str]"]

_WRAPPERS = "tvmffi_wrappers.c"
_LIBRARY_BIN_SOURCE = "tvmffi_library_bin.c"
_FILE_LANGS = {".c": "c", ".cc": "c++", ".cpp": "c++", ".cxx": "c++", ".cu": "cuda"}
_TEXT_SUFFIX = {"c": ".c", "c++": ".cc", "cuda": ".cu"}
# Only the __tvm_ffi_ symbols leave the library; wrapper-to-kernel calls skip the PLT.
_HIDDEN = "-fvisibility=hidden"


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


def _is_path(src: object) -> bool:
    return isinstance(src, PathLike) or (
        isinstance(src, str) and "\n" not in src and os.path.splitext(src)[1] in _FILE_LANGS
    )


def _sources(
    sources: Sequence[SourceLike],
    lang: str,
    what: str,
    generated: dict[str, str],
    units: list[Unit],
) -> None:
    """Add ``sources`` (text in ``lang``, or files by suffix) to the job's units."""
    if isinstance(sources, (str, bytes, PathLike)):
        sources = [sources]
    for src in sources:
        if _is_path(src):
            path = os.path.abspath(os.fspath(src))
            if not os.path.isfile(path):
                raise FileNotFoundError(f"kernel source not found: {path}")
            ext = os.path.splitext(path)[1]
            if ext not in _FILE_LANGS:
                raise ValueError(f"unknown source type {ext!r} for {path} (use .c, .cc, .cpp, .cu)")
            units.append(Unit(path, _FILE_LANGS[ext]))
        elif isinstance(src, str):
            name = f"source{len(units)}{_TEXT_SUFFIX[lang]}"
            generated[name] = src
            units.append(Unit(name, lang))
        else:
            raise TypeError(f"{what} must be source strings or paths, got {type(src).__name__}")


def _strings(flags: Sequence[str], what: str) -> list[str]:
    if isinstance(flags, str):
        raise TypeError(f"{what} must be a sequence of strings, not a str")
    out = [str(f) for f in flags]
    return out


def _job(
    name: str,
    functions: object,
    sources: Sequence[SourceLike],
    cpp_sources: Sequence[str],
    cuda_sources: Sequence[str],
    extra_cflags: Sequence[str],
    extra_cuda_cflags: Sequence[str],
    extra_ldflags: Sequence[str],
    extra_include_paths: Sequence[str | PathLike[str]],
    output: str,
    verbose: bool | None,
) -> Job:
    pairs = _normalize_functions(functions)
    generated = {_WRAPPERS: "\n".join(emit_c(sig, kernel) for sig, kernel in pairs)}
    units = [Unit(_WRAPPERS, "c")]
    _sources(sources, "c", "sources", generated, units)
    _sources(cpp_sources, "c++", "cpp_sources", generated, units)
    _sources(cuda_sources, "cuda", "cuda_sources", generated, units)
    cflags = _strings(extra_cflags, "extra_cflags")
    return Job(
        name=name,
        units=units,
        output=output,
        generated=generated,
        cflags=[_HIDDEN, "-std=c11", *cflags],
        cxxflags=[_HIDDEN, *cflags],
        cuda_cflags=["-Xcompiler", _HIDDEN, *_strings(extra_cuda_cflags, "extra_cuda_cflags")],
        ldflags=_strings(extra_ldflags, "extra_ldflags"),
        include_paths=[os.path.abspath(os.fspath(p)) for p in extra_include_paths],
        note=("wrapper", _WRAPPERS),
        verbose=verbose,
    )


def _embed(job: Job, embed: Sequence[str | PathLike[str]]) -> None:
    """Add the embedded libraries' ``__tvm_ffi__library_bin`` array as one more C source."""
    paths = [os.path.abspath(os.fspath(p)) for p in embed]
    if not paths:
        return
    from ._embed import embed_library_bin, library_bin_to_c

    tree = embed_library_bin(paths)
    note = "embeds: " + ", ".join(os.path.basename(p) for p in paths)
    # The C array holds about four characters per embedded byte; the key hashes the
    # bytes and the array is rendered only when compiling.
    payload = tree.to_bytes()
    job.deferred[_LIBRARY_BIN_SOURCE] = (
        hashlib.sha256(note.encode() + payload).digest(),
        lambda: library_bin_to_c(tree, comment=note),
    )
    job.units.append(Unit(_LIBRARY_BIN_SOURCE, "c"))


def build(
    functions: Sequence[tuple[Signature, str]],
    *,
    sources: Sequence[SourceLike] = (),
    name: str,
    output_dir: str | PathLike[str] | None = None,
    extra_cflags: Sequence[str] = (),
    embed: Sequence[str | PathLike[str]] = (),
    cpp_sources: Sequence[str] = (),
    cuda_sources: Sequence[str] = (),
    extra_cuda_cflags: Sequence[str] = (),
    extra_ldflags: Sequence[str] = (),
    extra_include_paths: Sequence[str | PathLike[str]] = (),
    verbose: bool | None = None,
) -> Module:
    """Compile validated wrappers for ``functions`` plus kernel sources into a library; load it.

    ``functions`` is a list of ``(Signature, kernel_name)``. Kernels (with C
    linkage) come from ``sources`` (C source text, or paths of
    ``.c``/``.cc``/``.cpp``/``.cu`` files), ``cpp_sources`` (C++ text) and
    ``cuda_sources`` (CUDA text, compiled by nvcc). ``extra_cflags`` go to the C and
    C++ compilers, ``extra_cuda_cflags`` to nvcc, ``extra_ldflags`` to the link (e.g.
    ``-fopenmp``, ``-lfoo``), ``extra_include_paths`` to every compile. ``embed``
    lists other module libraries to embed as custom modules
    (``__tvm_ffi__library_bin``). The library is cached in ``output_dir`` (default
    ``$TVMFFI_CACHE_DIR`` or ``~/.cache/tvmffi/codegen``) under a digest of all
    inputs: building the same inputs again only loads it. ``verbose``: ``True``
    prints each command, ``False`` nothing, ``None`` (default) one line when a
    build takes over a second (``$TVMFFI_BUILD_VERBOSE`` decides when set).
    Failures raise :class:`CompileError` (a ``RuntimeError``) with the compiler's
    output, the command, the file and the generated wrapper's path; a kernel the
    link cannot find is named.
    """
    check_identifier(name, "library name")
    pairs = _normalize_functions(functions)
    job = _job(
        name,
        pairs,
        sources,
        cpp_sources,
        cuda_sources,
        extra_cflags,
        extra_cuda_cflags,
        extra_ldflags,
        extra_include_paths,
        f"lib{name}.so",
        verbose,
    )
    _embed(job, embed)
    root = _cache_root(output_dir)
    build_dir = os.path.join(root, f"{name}-{job.key()[:20]}")
    # The shared cache must be private to this user; a directory the caller named is theirs.
    mod = load_module(_build.build(job, build_dir, cache_root=root if output_dir is None else None))
    for sig, _ in pairs:
        # The module caches its functions: `mod.name` / `mod["name"]` give these objects.
        _BUILT[mod[sig.name]] = sig
    return mod


# Functions this process built, with the signature their wrapper checks (weak:
# an entry goes with its function).
_BUILT: weakref.WeakKeyDictionary[Function, Signature] = weakref.WeakKeyDictionary()


def signature_of(fn: object) -> Signature | None:
    """The :class:`Signature` whose checks ``fn`` runs, if :func:`build`/:func:`inline` made it.

    ``None`` for any other function (and for the same library loaded another
    way): its caller cannot count on the checks being made.
    """
    return _BUILT.get(fn) if isinstance(fn, Function) else None


def op_signature(fn: object, sig: object, op_name: str) -> Signature:
    """The signature an operator made of ``fn`` follows: ``sig``, else ``fn``'s own.

    For ``tvmffi.torch.register_op`` and ``tvmffi.jax.register_op``: ``TypeError``
    when neither is a :class:`Signature`.
    """
    if sig is None:
        sig = signature_of(fn)
        if sig is None:
            raise TypeError(
                f"register_op({op_name!r}) needs the signature of a function "
                "tvmffi.codegen did not build"
            )
    if not isinstance(sig, Signature):
        raise TypeError(f"sig must be a tvmffi.codegen.Signature, not {type(sig).__name__}")
    return sig


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
    out = os.path.abspath(os.fspath(path))
    job = _job("export", functions, sources, (), (), extra_cflags, (), (), (), "export.o", None)
    # A private directory: the error of a failed build names files in it, so it stays then.
    work = tempfile.mkdtemp(prefix=".tvmffi-export-")
    shutil.copyfile(_build.build(job, work), out)
    shutil.rmtree(work, ignore_errors=True)
    return out


def inline(
    signature: Signature,
    body: str,
    *,
    output_dir: str | PathLike[str] | None = None,
    extra_cflags: Sequence[str] = (),
    extra_ldflags: Sequence[str] = (),
) -> Function:
    """Build ``signature`` with a kernel written as a C function body; return the function.

    tvmffi generates the ``__tvm_ffi_<name>`` wrapper that checks every argument
    against ``signature`` (count, kinds, ranks, shapes and symbolic dimensions,
    dtypes, devices, strides, alignment) and then runs ``body`` as a C11 function,
    compiles both with the system C compiler and loads the library (cached: the
    same inputs load without compiling).

    Parameters
    ----------
    signature : Signature
        The parameters. Inside ``body`` they carry their own names: each tensor is
        its typed data pointer (byte offset applied; ``uint16_t*`` for float16 and
        bfloat16), each scalar its C value, each :class:`Var` an ``int64_t`` and each
        :class:`EnvStream` a ``void*``.
    body : str
        The kernel's C statements. It may ``return`` non-zero after raising an
        error with ``TVMFFIErrorSetRaisedFromCStr``; falling off the end returns 0.
    output_dir : str or os.PathLike, optional
        The cache directory (default ``$TVMFFI_CACHE_DIR``, else
        ``~/.cache/tvmffi/codegen``).
    extra_cflags, extra_ldflags : sequence of str
        Flags for the compile and the link (``["-lm"]`` for ``<math.h>`` functions).

    Returns
    -------
    Function
        The FFI function ``signature.name``; its ``inspect.signature`` names the
        parameters and its ``__doc__`` shows their shapes and dtypes.

    Raises
    ------
    TypeError
        ``signature`` is not a :class:`Signature` or ``body`` not a ``str``.
    CompileError
        The body does not compile or link (the message names the generated file).

    Examples
    --------
    >>> import numpy as np
    >>> from tvmffi import codegen
    >>> from tvmffi.codegen import Scalar, Signature, Tensor, Var
    >>> n = Var("n")
    >>> sig = Signature("doc_scale", [Tensor("x", [n], "float32"), Scalar("k", "float32")])
    >>> scale = codegen.inline(sig, "for (int64_t i = 0; i < n; ++i) x[i] *= k;")
    >>> x = np.ones(3, dtype=np.float32)
    >>> scale(x, 2.5)
    >>> x.tolist()
    [2.5, 2.5, 2.5]
    >>> try:
    ...     scale(np.ones((2, 2), dtype=np.float32), 1.0)
    ... except ValueError as err:
    ...     print(str(err).split(" when calling")[0])
    Parameter `x` expects ndim=1 but got ndim=2
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
    source = "\n".join(
        [
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
        ]
    )
    mod = build(
        [(signature, kernel)],
        sources=[source],
        name=signature.name,
        output_dir=output_dir,
        extra_cflags=extra_cflags,
        extra_ldflags=extra_ldflags,
    )
    return mod[signature.name]
