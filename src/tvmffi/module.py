"""Modules: libraries of FFI functions loaded from shared objects or the system library.

A :class:`Module` wraps an ``ffi.Module`` object of the runtime. Functions are
looked up by name (``mod["f"]``, ``mod.f``, :meth:`Module.get_function`) and the
result is cached.

Caching policy: the cache lives on the Python wrapper (one dict per wrapper, and
functions found by attribute access are stored in the wrapper's instance
``__dict__`` so that the next ``mod.f`` is a plain attribute hit). Two wrappers of
the same runtime module (e.g. a module returned again by an FFI call) have
separate caches; each looks a name up at most once. A global cache keyed by the
handle address was rejected: addresses are reused once a module is freed, which
would hand out functions of a dead module's successor. Cached functions keep the
module alive (the runtime's library functions hold a strong reference to their
module), so a cached entry never dangles.
"""

from __future__ import annotations

import hashlib
import os
import weakref
from enum import IntEnum
from os import PathLike
from typing import TYPE_CHECKING, Any, ClassVar

from . import _core, _function_doc, _lib, _runtime_guard
from ._core import Function, Object
from .function import _cached_global_func
from .object import _decode_type_schema, _json_object, register_object

if TYPE_CHECKING:
    from . import _elf

__all__ = [
    "Module",
    "ModulePropertyMask",
    "load_module",
    "system_lib",
]


class ModulePropertyMask(IntEnum):
    """Bits of :meth:`Module.get_property_mask` (``Module::ModulePropertyMask`` in C++)."""

    BINARY_SERIALIZABLE = 0b001
    RUNNABLE = 0b010
    COMPILATION_EXPORTABLE = 0b100


_CACHE_KEY = "_tvmffi_function_cache"


@register_object("ffi.Module")
class Module(Object):
    """A runtime module: a named collection of FFI functions plus imported modules.

    ``mod["name"]``, ``mod.name`` and :meth:`get_function` return the function
    ``name`` and raise ``AttributeError`` when the module does not have it (as
    the official binding does); ``mod(*args)`` calls the entry function
    (:attr:`entry_name`, ``"main"``). Looked-up functions are cached per wrapper.
    """

    entry_name: ClassVar[str] = "main"

    def _cache(self) -> dict[str, Function]:
        d = self.__dict__
        cache: dict[str, Function] | None = d.get(_CACHE_KEY)
        if cache is None:
            cache = d[_CACHE_KEY] = {}
        return cache

    @property
    def kind(self) -> str:
        """The module kind, e.g. ``"library"`` for shared libraries and the system library."""
        kind: str = _cached_global_func("ffi.ModuleGetKind")(self)
        return kind

    def get_property_mask(self) -> int:
        """Bit mask of :class:`ModulePropertyMask` flags of this module."""
        mask: int = _cached_global_func("ffi.ModuleGetPropertyMask")(self)
        return mask

    @property
    def property_mask(self) -> int:
        """tvmffi's earlier spelling of :meth:`get_property_mask`."""
        return self.get_property_mask()

    def is_binary_serializable(self) -> bool:
        """Whether the module can be serialized to bytes."""
        return bool(self.get_property_mask() & ModulePropertyMask.BINARY_SERIALIZABLE)

    def is_runnable(self) -> bool:
        """Whether functions can be looked up in the module (``get_function``)."""
        return bool(self.get_property_mask() & ModulePropertyMask.RUNNABLE)

    def is_compilation_exportable(self) -> bool:
        """Whether ``write_to_file`` can write the module as an object or source file."""
        return bool(self.get_property_mask() & ModulePropertyMask.COMPILATION_EXPORTABLE)

    def __call__(self, *args: Any) -> Any:
        """Call the module's entry function (:attr:`entry_name`)."""
        return self[self.entry_name](*args)

    @property
    def imports(self) -> list[Module]:
        """The modules imported by this module, in import order."""
        raw: Any = self.imports_  # the reflected field (a data descriptor: never shadowed)
        return list(raw)

    def import_module(self, other: Module) -> None:
        """Import ``other`` so that lookups with ``query_imports=True`` search it.

        Raises ``RuntimeError`` if the import would create a cycle.
        """
        if not isinstance(other, Module):
            raise TypeError(f"import_module expects a Module, not {type(other).__name__}")
        _cached_global_func("ffi.ModuleImportModule")(self, other)

    def clear_imports(self) -> None:
        """Remove all imported modules."""
        _cached_global_func("ffi.ModuleClearImports")(self)

    def get_function(self, name: str, query_imports: bool = False) -> Function:
        """Return the module's function ``name``.

        Parameters
        ----------
        name : str
            The function's name (the ``<name>`` of its ``__tvm_ffi_<name>`` symbol).
        query_imports : bool
            Also search the imported modules, depth first.

        Returns
        -------
        Function
            The function. Results found without ``query_imports`` are cached on this
            module wrapper.

        Raises
        ------
        AttributeError
            The module (and, with ``query_imports``, its imports) has no such function.
        TypeError
            ``name`` is not a ``str``.

        Examples
        --------
        >>> import tvmffi, tvmffi.cpp
        >>> mod = tvmffi.cpp.load_inline(
        ...     "doc_get_function", cpp_sources="int64_t twice(int64_t x) { return 2 * x; }",
        ...     functions=["twice"])
        >>> mod.get_function("twice")(4)
        8
        >>> mod["twice"] is mod.get_function("twice")
        True
        """
        func = self._find_function(name, query_imports)
        if func is None:
            raise AttributeError(f"Module has no function {name!r} (module kind {self.kind!r})")
        return func

    def _find_function(self, name: str, query_imports: bool = False) -> Function | None:
        """The function ``name``, or ``None`` when the module does not have it."""
        if not isinstance(name, str):
            raise TypeError(f"function name must be a str, not {type(name).__name__}")
        if not query_imports:
            cache = self._cache()
            func: Function | None = cache.get(name)
            if func is not None:
                return func
            func = _cached_global_func("ffi.ModuleGetFunction")(self, name, False)
            if func is not None:
                cache[name] = func
                _function_doc.note_module_functions(self, [(name, func)])
            return func
        found: Function | None = _cached_global_func("ffi.ModuleGetFunction")(self, name, True)
        return found

    def __getitem__(self, name: str) -> Function:
        cache: dict[str, Function] | None = self.__dict__.get(_CACHE_KEY)
        if cache is not None:
            hit = cache.get(name)
            if hit is not None:
                return hit
        if not isinstance(name, str):
            raise ValueError("Can only take string as function name")
        return self.get_function(name)

    if TYPE_CHECKING:

        def __getattr__(self, name: str) -> Function: ...

    def __tvm_ffi_getattr__(self, name: str) -> Function:
        """``mod.name``: called by the Object attribute hook for names the class lacks.

        (Not ``__getattr__``: a Python ``__getattr__`` would route every attribute
        access, including cache hits, through a slower slot wrapper.)
        """
        func = self.get_function(name)
        # Next `mod.name` is an instance-dict hit; this hook only runs for names the
        # class does not define, so this never shadows a method or property.
        self.__dict__[name] = func
        return func

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.implements_function(name)

    def implements_function(self, name: str, query_imports: bool = False) -> bool:
        """Return whether the module implements function ``name``.

        Parameters
        ----------
        name : str
            The function's name.
        query_imports : bool
            Also search the imported modules.

        Returns
        -------
        bool
            ``True`` if a lookup of ``name`` would succeed. ``name in mod`` is the same
            test without ``query_imports``.

        Examples
        --------
        >>> import tvmffi
        >>> tvmffi.system_lib().implements_function("no_such_function")
        False
        """
        implements = _cached_global_func("ffi.ModuleImplementsFunction")
        result: bool = implements(self, name, query_imports)
        return result

    def get_function_doc(self, name: str, query_imports: bool = False) -> str | None:
        """Return the docstring the module's library exports for ``name``, if any.

        Libraries export it as ``__tvm_ffi__doc_<name>``
        (``TVM_FFI_DLL_EXPORT_TYPED_FUNC_DOC``, the ``functions`` mapping of
        :func:`tvmffi.cpp.load_inline`, the ``doc`` of a :mod:`tvmffi.codegen`
        signature). The function's own ``__doc__`` includes it after its signature.

        Parameters
        ----------
        name : str
            The function's name.
        query_imports : bool
            Also search the imported modules.

        Returns
        -------
        str or None
            The docstring, or ``None`` when the library exports none.

        Examples
        --------
        >>> import tvmffi.cpp
        >>> mod = tvmffi.cpp.load_inline(
        ...     "doc_function_doc", cpp_sources="int64_t inc(int64_t x) { return x + 1; }",
        ...     functions={"inc": "Add one."},
        ...     extra_cflags=["-DTVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"])
        >>> mod.get_function_doc("inc")
        'Add one.'
        """
        doc: str | None = _cached_global_func("ffi.ModuleGetFunctionDoc")(self, name, query_imports)
        return doc

    def get_function_metadata(
        self, name: str, query_imports: bool = False
    ) -> dict[str, Any] | None:
        """Return the metadata the module's library exports for ``name``, decoded.

        Libraries export it as ``__tvm_ffi__metadata_<name>``: the runtime's export
        macros write ``{"type_schema": "<JSON>"}`` (when built with
        ``TVM_FFI_DLL_EXPORT_INCLUDE_METADATA``);
        :mod:`tvmffi.codegen` adds the parameters' specs. As in the official binding the
        values stay as the library wrote them: ``TypeSchema.from_json_str`` reads the
        ``type_schema`` text.

        Parameters
        ----------
        name : str
            The function's name.
        query_imports : bool
            Also search the imported modules.

        Returns
        -------
        dict or None
            The decoded metadata, or ``None`` when the library exports none.

        Raises
        ------
        ValueError
            The exported text is not a JSON object.

        Examples
        --------
        >>> import tvmffi.cpp
        >>> mod = tvmffi.cpp.load_inline(
        ...     "doc_function_meta", cpp_sources="int64_t inc(int64_t x) { return x + 1; }",
        ...     functions=["inc"],
        ...     extra_cflags=["-DTVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"])
        >>> sorted(mod.get_function_metadata("inc"))
        ['type_schema']
        >>> mod.get_function_signature("inc")
        '(int) -> int'
        """
        get_metadata = _cached_global_func("ffi.ModuleGetFunctionMetadata")
        text: str | None = get_metadata(self, name, query_imports)
        if text is None:
            return None
        return _json_object(text)

    def get_function_signature(self, name: str, query_imports: bool = False) -> str | None:
        """A readable signature ``(int, int) -> int`` from the function's metadata, if any."""
        meta = self.get_function_metadata(name, query_imports)
        if meta is None:
            return None
        return _signature_from_schema(_decode_type_schema(meta.get("type_schema")))

    def inspect_source(self, fmt: str = "") -> str:
        """The module's source in format ``fmt`` (empty when the kind keeps none)."""
        src: str = _cached_global_func("ffi.ModuleInspectSource")(self, fmt)
        return src

    def get_write_formats(self) -> list[str]:
        """File formats :meth:`write_to_file` supports for this module."""
        return list(_cached_global_func("ffi.ModuleGetWriteFormats")(self))

    def write_to_file(self, path: str | PathLike[str], fmt: str = "") -> None:
        """Write the module to ``path`` in format ``fmt``.

        The module's own writer decides (as on the official binding, a module listing no
        write formats, such as TVM's llvm modules, may still write itself); the runtime's
        error when it cannot. ``ValueError`` for a format missing from a non-empty
        :meth:`get_write_formats`.
        """
        file_name = os.fspath(path)
        formats = self.get_write_formats()
        if formats and fmt and fmt not in formats:
            raise ValueError(
                f"module of kind {self.kind!r} cannot be written as {fmt!r}; "
                f"supported formats: {formats}"
            )
        _cached_global_func("ffi.ModuleWriteToFile")(self, file_name, fmt)

    def __repr__(self) -> str:
        return f"<tvmffi.Module kind={self.kind!r} at {self.__chandle__():#x}>"


def _signature_from_schema(schema: Any) -> str | None:
    if not isinstance(schema, dict) or schema.get("type") != "ffi.Function":
        return None
    named = schema.get("named_args")
    if isinstance(named, dict):
        # Runtime export macros: {"return": [ret], "params": [p0, p1, ...]}.
        rets = named.get("return") or [{"type": "Any"}]
        args = [rets[0], *(named.get("params") or [])]
    else:
        # Reflection style: {"args": [ret, p0, p1, ...]}.
        args = schema.get("args") or []
    if not args:
        return None

    def show(s: Any) -> str:
        if not isinstance(s, dict):
            return str(s)
        inner = s.get("args")
        name = str(s.get("type", "?"))
        if inner:
            return f"{name}[{', '.join(show(a) for a in inner)}]"
        return name

    ret, params = args[0], args[1:]
    return f"({', '.join(show(p) for p in params)}) -> {show(ret)}"


# ---- ELF dynamic symbol table ------------------------------------------------
_SYMBOL_PREFIX = "__tvm_ffi_"
"""Prefix of every symbol a TVM FFI module library exports for the runtime."""
_LIBRARY_BIN_SYMBOL = "__tvm_ffi__library_bin"
"""The embedded module tree (public as ``tvmffi.codegen.library_bin.SYMBOL``)."""
_INTERNAL_PREFIXES = (
    "__tvm_ffi__doc_",
    "__tvm_ffi__metadata_",
    _LIBRARY_BIN_SYMBOL,
    "__tvm_ffi__library_ctx",
)


def _open_file(file_name: str) -> _elf.FileSource:
    """``file_name`` opened for bounded reads; it must be a regular file.

    FIFOs, sockets and devices (``/dev/zero``) raise ``ValueError`` at once
    instead of blocking or being read without end.
    """
    from . import _elf  # import-time: ~0.5 ms more for `import tvmffi`; on first use

    return _elf.open_regular_file(file_name)


def _elf_dynamic_symbols(path: str, data: bytes | _elf.Source | None = None) -> list[str] | None:
    """Names of defined symbols in an ELF file's ``.dynsym``; ``None`` if not ELF.

    ``data``: the file's contents (bytes) or the opened file, when the caller
    has them already.
    """
    from . import _elf  # import-time: as in _open_file above

    if data is None:
        with _open_file(path) as source:
            return _elf_dynamic_symbols(path, source)
    try:
        elf = _elf.parse(data)
        if elf is None:
            return None
        return [s.name.decode("utf-8", "replace") for s in elf.defined_symbols(_elf.SHT_DYNSYM)]
    except _elf.ElfError:
        return None


def _exported_function_names(
    path: str, data: bytes | _elf.Source | None = None
) -> list[str] | None:
    """Names ``<name>`` of the ``__tvm_ffi_<name>`` functions a library exports."""
    symbols = _elf_dynamic_symbols(path, data)
    return None if symbols is None else _function_names(symbols)


def _function_names(symbols: list[str]) -> list[str]:
    """The ``<name>`` of each ``__tvm_ffi_<name>`` function among a library's ``symbols``."""
    out = []
    for sym in symbols:
        if sym.startswith(_SYMBOL_PREFIX) and not sym.startswith(_INTERNAL_PREFIXES):
            out.append(sym[len(_SYMBOL_PREFIX) :])
    return sorted(set(out))


def _require_ffi_symbols(file_name: str, symbols: list[str]) -> None:
    """Raise ``ValueError`` unless ``symbols`` (of ``file_name``) include a ``__tvm_ffi_`` one.

    Every TVM FFI module library exports at least one such symbol.
    """
    if not any(s.startswith(_SYMBOL_PREFIX) for s in symbols):
        raise ValueError(
            f"{file_name} exports no {_SYMBOL_PREFIX} symbols; it is not a TVM FFI module library"
        )


def load_module(path: str | PathLike[str], keep_module_alive: bool = True) -> Module:
    """Load a module from a file: a shared library, or a file of a registered format.

    Any library the runtime can load is accepted: one exporting TVM FFI functions
    (``__tvm_ffi_<name>`` symbols, as ``TVM_FFI_DLL_EXPORT_TYPED_FUNC``,
    :mod:`tvmffi.cpp` and :mod:`tvmffi.codegen` produce), one that only registers
    global functions and types from its static initializers, and files of other
    formats whose loader (``ffi.Module.load_from_file.<ext>``) is registered. A
    library's exported functions are resolved on first use and then cached, so
    ``mod.name`` is a plain attribute read. A library whose loading registered
    global functions or types stays loaded however it was loaded (their code must
    outlive any module reference; see docs/reliability.md).

    Parameters
    ----------
    path : str or os.PathLike
        The file. A name without a ``/`` goes to the dynamic loader's search path
        (``LD_LIBRARY_PATH``, the system directories), not to the current directory,
        as with the official binding.
    keep_module_alive : bool
        With ``True`` (the default) the module, and so its library, stays loaded
        for the rest of the process. With ``False`` the library is unloaded when the
        last reference to the module (or to one of its functions) goes, unless
        loading it registered global functions or types, whose code must outlive it.

    Returns
    -------
    Module
        The loaded module.

    Raises
    ------
    FileNotFoundError
        ``path`` (with a ``/``) does not exist.
    ValueError
        The file is not a regular file (a FIFO, a device), not a loadable library,
        or its embedded module tree (``__tvm_ffi__library_bin``) is malformed.
    TypeError
        ``path`` is not a ``str`` or path-like.

    Examples
    --------
    >>> import tvmffi, tvmffi.cpp
    >>> path = tvmffi.cpp.build_inline(
    ...     "doc_load_module", cpp_sources="int64_t inc(int64_t x) { return x + 1; }",
    ...     functions=["inc"])
    >>> mod = tvmffi.load_module(path)
    >>> mod.inc(1)
    2
    """
    file_name = os.fspath(path)
    if not isinstance(file_name, str):
        raise TypeError("load_module expects a str path")
    if file_name in _PINNED:
        # Mapped under this very name for good: the loader hands the runtime the
        # mapping checked then, without opening the file again.
        pinned = _load_with_runtime(file_name)
        if keep_module_alive:
            _cached_global_func("ffi.ModuleGlobalsAdd")(pinned)
        if os.sep in file_name and pinned.__chandle__() not in _SOURCES:
            # The mapping of the first load: that file's identity, not today's.
            _note_source(pinned, ("file", os.path.abspath(file_name)), True)
            _IDENTITIES[pinned.__chandle__()] = _PINNED_IDENTITIES.get(file_name, (-1, -1, -1, -1))
        return pinned
    if os.sep in file_name:
        _runtime_guard.check_file(_lib.lib_path(), file_name)  # a second runtime itself
    mod: Module | None = _load_probed(file_name)
    if mod is None:  # the loader would not map it: the checks below name the cause
        if os.sep not in file_name:
            mod = _load_with_runtime(file_name)  # the runtime reports the search's failure
        else:
            with _open_module_file(file_name) as source:
                mod = _load_module(source.name, source)
    if keep_module_alive:
        _cached_global_func("ffi.ModuleGlobalsAdd")(mod)
        _PINNED.add(file_name)
    if os.sep in file_name:
        _note_source(mod, ("file", os.path.abspath(file_name)), keep_module_alive)
        if keep_module_alive and mod.__chandle__() in _IDENTITIES:
            _PINNED_IDENTITIES.setdefault(file_name, _IDENTITIES[mod.__chandle__()])
    return mod


def _file_identity(st: os.stat_result) -> tuple[int, int, int, int]:
    """What tells a file from its rebuild: device, inode, size, modification time."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


# The identity of the file each loaded module's library came from (by handle, as
# _SOURCES): pickle sends the library's bytes only while the file is still that one.
_IDENTITIES: dict[int, tuple[int, int, int, int]] = {}
_PINNED_IDENTITIES: dict[str, tuple[int, int, int, int]] = {}  # by _PINNED name


def _loaded_identity(mod: Module) -> tuple[int, int, int, int] | None:
    return _IDENTITIES.get(mod.__chandle__())


def _loaded_from(path: str, digest: str) -> bool:
    """Whether a module this process loaded, and still holds, came from ``path`` with
    these bytes (its SHA-256 ``digest``), the file unchanged since."""
    for handle, (source, keeper) in list(_SOURCES.items()):
        if source != ("file", path) or (keeper is not None and keeper() is None):
            continue
        try:
            with open(path, "rb") as f:
                if _file_identity(os.fstat(f.fileno())) != _IDENTITIES.get(handle):
                    return False
                return hashlib.sha256(f.read()).hexdigest() == digest
        except OSError:
            return False
    return False


# Where each module this process loaded came from (pickle sends a module as its
# library's bytes, or the system library's prefix): its handle -> (source, what
# proves the handle still means that module). A pinned module (in the runtime's
# globals) and the system library live for the process: None; otherwise a weak
# reference to its first wrapper, whose death may free the module and let its
# address be reused.
_SOURCES: dict[int, tuple[tuple[str, str], Any]] = {}


def _note_source(mod: Module, source: tuple[str, str], pinned: bool) -> None:
    handle = mod.__chandle__()
    if source[0] == "file" and (handle not in _SOURCES or _SOURCES[handle][0] != source):
        try:
            _IDENTITIES[handle] = _file_identity(os.stat(source[1]))
        except OSError:
            _IDENTITIES.pop(handle, None)
    if pinned:
        _SOURCES[handle] = (source, None)
        return

    def forget(_ref: Any, handle: int = handle) -> None:
        entry = _SOURCES.get(handle)
        if entry is not None and entry[1] is _ref:
            del _SOURCES[handle]
            _IDENTITIES.pop(handle, None)

    _SOURCES[handle] = (source, weakref.ref(mod, forget))


def _source_of(mod: Module) -> tuple[str, str] | None:
    """``("file", path)`` or ``("system", prefix)`` for a module this process loaded."""
    entry = _SOURCES.get(mod.__chandle__())
    if entry is None:
        return None
    source, keeper = entry
    if isinstance(keeper, weakref.ref) and keeper() is None:
        return None
    return source


_PINNED: set[str] = set()
"""Paths ``load_module`` loaded into the runtime's globals: mapped until the process ends.

The dynamic loader matches a later ``dlopen`` of the same string against the
mapped library by name, so the file is not opened again: its checks (a regular
file, a valid embedded module tree) still hold for what the runtime gets.
"""


def _load_probed(file_name: str) -> Module | None:
    """``load_module`` once the dynamic loader has mapped ``file_name``; ``None`` if it would not.

    The loader tells whether the library defines an embedded module tree (its
    hash table answers at once, where the file's symbol table would have to be
    read whole), and which file it picked for a bare name; only a library with
    a tree has its file read, to validate the tree before the runtime reads it.
    The probe's reference is held until the runtime has its own, so the
    library's static initializers run once. Functions are resolved on first
    use (``mod.name`` then stays in the instance dict).
    """
    probe = _core._library_probe(file_name)
    if probe is None:
        return None
    handle, picked, library_bin = probe
    try:
        # A library linked to another runtime mapped it: refused before any use.
        _runtime_guard.check(_lib.lib_path(), RuntimeError, picked or file_name)
        if isinstance(library_bin, bytes):
            # The tree as mapped: what the runtime will walk, even when the path was
            # mapped earlier and the file replaced since (the loader reuses the mapping).
            _check_mapped_library_bin(picked or file_name, library_bin)
        elif library_bin:  # mapped, but its extent unknown to the loader: read the file
            with _open_file(picked or file_name) as source:
                _check_library_bin(source.name, source)
        return _load_with_runtime(file_name)
    finally:
        _core._library_release(handle)


def _open_module_file(path: str | PathLike[str]) -> _elf.FileSource:
    """``load_module``'s checks of ``path``, then the opened file (a context manager)."""
    file_name = os.fspath(path)
    if not isinstance(file_name, str):
        raise TypeError("load_module expects a str path")
    if not os.path.exists(file_name):
        raise FileNotFoundError(f"module file not found: {file_name}")
    if os.path.isdir(file_name):
        raise IsADirectoryError(f"module path is a directory: {file_name}")
    return _open_file(file_name)


def _load_module(file_name: str, data: bytes | _elf.Source) -> Module:
    """``load_module`` for a file whose contents (``data``) the caller has (or has open)."""
    symbols = _elf_dynamic_symbols(file_name, data)
    if symbols is not None and _LIBRARY_BIN_SYMBOL in symbols:
        _check_library_bin(file_name, data)
    # The file checked is the file loaded: a bare name (`inspect libx.so`) would
    # send the dynamic loader down its search path instead.
    return _load_with_runtime(file_name if os.sep in file_name else os.path.join(".", file_name))


def _load_with_runtime(file_name: str) -> Module:
    """The runtime's ``ffi.ModuleLoadFromFile``, its load failures as ``ValueError``."""
    try:
        mod: Module = _cached_global_func("ffi.ModuleLoadFromFile")(file_name)
    except Exception as err:  # the runtime reports dlopen failures as InternalError
        raise ValueError(f"cannot load module from {file_name}: {err}") from err
    return mod


def _check_library_bin(file_name: str, data: bytes | _elf.Source) -> None:
    """Validate the embedded module tree with tvmffi's reader before the runtime reads it.

    The runtime trusts the array: an out-of-range child index or an import
    cycle would make it read out of bounds or recurse without end.
    """
    from .codegen.library_bin import _read_library_bin

    try:
        _read_library_bin(file_name, data)
    except ValueError as err:
        raise ValueError(f"cannot load module from {err}") from None


def _check_mapped_library_bin(file_name: str, raw: bytes) -> None:
    """:func:`_check_library_bin` of the array read from the mapped library."""
    from .codegen.library_bin import LibraryBin

    nbytes = int.from_bytes(raw[:8], "little") if len(raw) >= 8 else None
    if nbytes is None or nbytes > len(raw) - 8:
        # The probe copied the whole symbol when its header claims more than it holds.
        raise ValueError(
            f"cannot load module from {file_name}: {_LIBRARY_BIN_SYMBOL} says "
            f"{'no' if nbytes is None else nbytes} bytes follow its header but the symbol "
            f"holds {max(len(raw) - 8, 0)} (as mapped)"
        )
    try:
        LibraryBin.from_bytes(raw)
    except ValueError as err:
        raise ValueError(f"cannot load module from {file_name}: {err}") from None


def system_lib(symbol_prefix: str = "") -> Module:
    """Return the system library module: functions linked statically into the process.

    Code generators that link their kernels into the executable (or into a library
    loaded with ``RTLD_GLOBAL``) register them in the runtime's system library
    under ``<symbol_prefix><name>``; this module finds them by name, lazily.

    Parameters
    ----------
    symbol_prefix : str
        The prefix the kernels were registered with (``""`` for none).

    Returns
    -------
    Module
        The system library module (of kind ``"library"``), looked up by name on
        first use of each function.

    Raises
    ------
    RuntimeError
        The runtime has no system library support.

    Examples
    --------
    >>> import tvmffi
    >>> tvmffi.system_lib().kind
    'library'
    """
    if not isinstance(symbol_prefix, str):
        raise TypeError(f"symbol_prefix must be a str, not {type(symbol_prefix).__name__}")
    mod: Module = _cached_global_func("ffi.SystemLib")(symbol_prefix)
    if mod.__chandle__() not in _SOURCES:
        _note_source(mod, ("system", symbol_prefix), True)
    return mod
