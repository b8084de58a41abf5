"""Reader and writer of the ``__tvm_ffi__library_bin`` layout (custom modules in one library).

A shared library may export a byte array named ``__tvm_ffi__library_bin``. When
the runtime loads such a library (``ffi.Module.load_from_file.so``) it does not
return the library module directly; it rebuilds a tree of modules from the
array (``ProcessLibraryBin`` in ``src/ffi/extra/library_module.cc`` of
apache-tvm-ffi)::

    <nbytes: u64> <indptr: vec<u64>> <child_indices: vec<u64>>
    <key_0: str> [<val_0: bytes>] <key_1: str> [<val_1: bytes>] ...

* Every integer is a little-endian ``u64``. ``nbytes`` counts the bytes after
  itself. ``vec<u64>`` is ``<count: u64>`` followed by ``count`` u64 values;
  ``str`` and ``bytes`` are ``<size: u64>`` followed by ``size`` raw bytes.
* There is one ``key`` per module: ``len(indptr) - 1`` modules. The key ``"_lib"``
  (no ``val``) stands for the library itself (its ``__tvm_ffi_<name>`` symbols);
  any other key is a module *kind*, followed by that module's serialized bytes,
  which the runtime turns into a module by calling the global function
  ``ffi.Module.load_from_bytes.<kind>(bytes) -> Module``.
* The import tree is in CSR form: module ``i`` imports the modules
  ``child_indices[indptr[i]:indptr[i + 1]]``, in that order.
* Module 0 is the root: the module ``load_module`` returns.

The runtime trusts the array: an empty tree, an out-of-range index or an import
cycle make it read out of bounds or recurse forever. :class:`LibraryBin`
therefore validates all of that both when it is built and when it is parsed,
raising ``ValueError`` that names the field (and, when parsing, the byte
offset).

:data:`DSO_KIND` is the kind tvmffi registers a loader for: its payload is the
complete file of another module library (see :mod:`tvmffi._embedded_loader`).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

from .. import _elf
from .._embedded_loader import DSO_KIND
from ..module import _LIBRARY_BIN_SYMBOL, _open_file

__all__ = [
    "DSO_KIND",
    "LIB_KEY",
    "SYMBOL",
    "LibraryBin",
    "LibraryBinEntry",
    "find_library_bin",
    "read_library_bin",
]

SYMBOL = _LIBRARY_BIN_SYMBOL
"""Name of the exported byte-array symbol the runtime looks for."""

LIB_KEY = "_lib"
"""Key of the entry that stands for the library's own ``__tvm_ffi_<name>`` symbols."""


_U64 = struct.Struct("<Q")
_U64_MAX = (1 << 64) - 1


@dataclass(frozen=True)
class LibraryBinEntry:
    """One module of a library bin: ``kind`` and, unless it is ``"_lib"``, its bytes."""

    kind: str
    payload: bytes | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or not self.kind:
            raise ValueError(f"module kind must be a non-empty str, not {self.kind!r}")
        try:
            self.kind.encode("utf-8")  # the array stores it as UTF-8
        except UnicodeEncodeError:
            raise ValueError(f"module kind {self.kind!r} is not valid Unicode text") from None
        if self.kind == LIB_KEY:
            if self.payload is not None:
                raise ValueError(f"the {LIB_KEY!r} entry carries no payload")
            return
        if not isinstance(self.payload, (bytes, bytearray, memoryview)):
            raise ValueError(
                f"module of kind {self.kind!r} needs a bytes payload, "
                f"not {type(self.payload).__name__}"
            )
        object.__setattr__(self, "payload", bytes(self.payload))

    @property
    def is_lib(self) -> bool:
        """True for the ``"_lib"`` placeholder (the library's own functions)."""
        return self.kind == LIB_KEY


@dataclass(frozen=True)
class LibraryBin:
    """The decoded ``__tvm_ffi__library_bin`` array: modules plus their import tree (CSR).

    ``entries[0]`` is the root module. Module ``i`` imports
    ``child_indices[indptr[i]:indptr[i + 1]]``. Construction validates the tree:
    at least one module, ``len(indptr) == len(entries) + 1``, ``indptr`` starts
    at 0, never decreases and ends at ``len(child_indices)``, every child index
    names a module, and there is no import cycle.
    """

    entries: tuple[LibraryBinEntry, ...]
    indptr: tuple[int, ...]
    child_indices: tuple[int, ...] = field(default=())

    def __post_init__(self) -> None:
        entries = tuple(self.entries)
        for i, entry in enumerate(entries):
            if not isinstance(entry, LibraryBinEntry):
                raise ValueError(
                    f"entries[{i}] must be a LibraryBinEntry, not {type(entry).__name__}"
                )
        object.__setattr__(self, "entries", entries)
        object.__setattr__(self, "indptr", _int_tuple("indptr", self.indptr))
        object.__setattr__(self, "child_indices", _int_tuple("child_indices", self.child_indices))
        _check_tree(len(entries), self.indptr, self.child_indices)

    # ---- construction helpers ----------------------------------------------
    @classmethod
    def from_imports(
        cls, entries: Sequence[LibraryBinEntry], imports: Sequence[Sequence[int]]
    ) -> LibraryBin:
        """Build from per-module import lists: ``imports[i]`` are the modules ``i`` imports.

        ``imports`` may be shorter than ``entries``; missing lists are empty.
        """
        if len(imports) > len(entries):
            raise ValueError(
                f"imports has {len(imports)} lists but there are only {len(entries)} modules"
            )
        indptr = [0]
        children: list[int] = []
        for i in range(len(entries)):
            if i < len(imports):
                children.extend(imports[i])
            indptr.append(len(children))
        return cls(tuple(entries), tuple(indptr), tuple(children))

    def imports_of(self, index: int) -> tuple[int, ...]:
        """Indices of the modules that module ``index`` imports, in import order."""
        if not 0 <= index < len(self.entries):
            raise IndexError(f"module index {index} out of range 0..{len(self.entries) - 1}")
        return self.child_indices[self.indptr[index] : self.indptr[index + 1]]

    @property
    def root(self) -> LibraryBinEntry:
        """The module ``load_module`` returns (entry 0)."""
        return self.entries[0]

    # ---- serialization -------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The full array as the runtime reads it, ``nbytes`` header included."""
        parts: list[bytes] = []
        for vec in (self.indptr, self.child_indices):
            parts.append(_U64.pack(len(vec)))
            parts.append(struct.pack(f"<{len(vec)}Q", *vec))
        for entry in self.entries:
            kind = entry.kind.encode("utf-8")
            parts.append(_U64.pack(len(kind)))
            parts.append(kind)
            if entry.payload is not None:
                parts.append(_U64.pack(len(entry.payload)))
                parts.append(entry.payload)
        body = b"".join(parts)
        return _U64.pack(len(body)) + body

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> LibraryBin:
        """Parse a whole array (``nbytes`` header included; nothing may follow it).

        Raises ``ValueError`` naming the field and byte offset of the first problem.
        """
        reader = _Reader(bytes(data))
        nbytes = reader.u64("nbytes")
        if nbytes != len(reader.data) - 8:
            raise ValueError(
                f"library bin: nbytes at offset 0 says {nbytes} bytes follow, "
                f"but {len(reader.data) - 8} do"
            )
        indptr = reader.vec_u64("import tree indptr")
        if not indptr:
            raise ValueError("library bin: import tree indptr at offset 8 is empty (no modules)")
        children = reader.vec_u64("import tree child_indices")
        entries: list[LibraryBinEntry] = []
        for i in range(len(indptr) - 1):
            at = reader.pos
            raw_kind = reader.sized(f"key of module {i}")
            try:
                kind = raw_kind.decode("utf-8")
            except UnicodeDecodeError as err:
                raise ValueError(
                    f"library bin: key of module {i} at offset {at} is not UTF-8: {err}"
                ) from None
            if not kind:
                raise ValueError(f"library bin: key of module {i} at offset {at} is empty")
            payload = None if kind == LIB_KEY else reader.sized(f"payload of module {i} ({kind})")
            entries.append(LibraryBinEntry(kind, payload))
        if reader.pos != len(reader.data):
            raise ValueError(
                f"library bin: {len(reader.data) - reader.pos} unread bytes at offset "
                f"{reader.pos} after the last module"
            )
        try:
            return cls(tuple(entries), tuple(indptr), tuple(children))
        except ValueError as err:
            raise ValueError(f"library bin: {err}") from None

    def describe(self) -> str:
        """A readable multi-line summary: one line per module with kind, size and imports."""
        lines = []
        for i, entry in enumerate(self.entries):
            size = "library symbols" if entry.payload is None else f"{len(entry.payload)} bytes"
            imports = ", ".join(str(c) for c in self.imports_of(i)) or "-"
            root = " (root)" if i == 0 else ""
            # One line per module, whatever the kind holds (newlines, controls).
            kind = entry.kind if entry.kind.isprintable() else repr(entry.kind)
            lines.append(f"[{i}] {kind}: {size}; imports {imports}{root}")
        return "\n".join(lines)


class _Reader:
    """Bounds-checked cursor over a library bin; errors name the field and offset."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, size: int, what: str) -> bytes:
        left = len(self.data) - self.pos
        if size > left:
            raise ValueError(
                f"library bin: truncated {what} at offset {self.pos}: "
                f"needs {size} bytes, {left} left"
            )
        out = self.data[self.pos : self.pos + size]
        self.pos += size
        return out

    def u64(self, what: str) -> int:
        value: int = _U64.unpack(self.take(8, what))[0]
        return value

    def vec_u64(self, what: str) -> list[int]:
        count = self.u64(f"length of {what}")
        raw = self.take(_checked_size(count, 8, self, what), what)
        return list(struct.unpack(f"<{count}Q", raw))

    def sized(self, what: str) -> bytes:
        size = self.u64(f"length of {what}")
        return self.take(_checked_size(size, 1, self, what), what)


def _checked_size(count: int, item: int, reader: _Reader, what: str) -> int:
    """Reject a declared length longer than the rest of the array before allocating it."""
    left = len(reader.data) - reader.pos
    if count * item > left:
        raise ValueError(
            f"library bin: {what} at offset {reader.pos - 8} declares {count} "
            f"{'u64 values' if item == 8 else 'bytes'} but only {left} bytes are left"
        )
    return count * item


def _int_tuple(name: str, values: Sequence[int]) -> tuple[int, ...]:
    out = tuple(values)
    for i, v in enumerate(out):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= _U64_MAX:
            raise ValueError(f"{name}[{i}] must be an int in [0, 2**64), not {v!r}")
    return out


def _check_tree(num: int, indptr: tuple[int, ...], children: tuple[int, ...]) -> None:
    if num == 0:
        raise ValueError("a library bin needs at least one module (the root)")
    if len(indptr) != num + 1:
        raise ValueError(f"indptr has {len(indptr)} items; {num} modules need {num + 1}")
    if indptr[0] != 0:
        raise ValueError(f"indptr[0] must be 0, not {indptr[0]}")
    for i in range(num):
        if indptr[i + 1] < indptr[i]:
            raise ValueError(f"indptr decreases at {i + 1}: {indptr[i]} -> {indptr[i + 1]}")
    if indptr[-1] != len(children):
        raise ValueError(f"indptr[-1] is {indptr[-1]} but there are {len(children)} child_indices")
    for j, c in enumerate(children):
        if c >= num:
            raise ValueError(f"child_indices[{j}] = {c} names no module (there are {num})")
    _check_acyclic(num, indptr, children)


def _check_acyclic(num: int, indptr: tuple[int, ...], children: tuple[int, ...]) -> None:
    """Iterative DFS: the runtime's import lookup recurses, so a cycle would never end."""
    state = [0] * num  # 0 unseen, 1 on the current path, 2 done
    for start in range(num):
        if state[start]:
            continue
        stack = [(start, indptr[start])]
        state[start] = 1
        while stack:
            node, j = stack[-1]
            if j == indptr[node + 1]:
                state[node] = 2
                stack.pop()
                continue
            stack[-1] = (node, j + 1)
            child = children[j]
            if state[child] == 1:
                raise ValueError(f"import cycle: module {node} imports module {child}")
            if state[child] == 0:
                state[child] = 1
                stack.append((child, indptr[child]))


# ---- reading the array out of a library file ----------------------------------
def find_library_bin(path: str | os.PathLike[str]) -> bytes | None:
    """The raw ``__tvm_ffi__library_bin`` array (header included) of an ELF file, or None.

    Works on shared libraries and object files (``.so``/``.o``) of either ELF
    class and byte order, without loading them; only the headers, one symbol
    table and the array itself are read. Mach-O and PE files are not parsed:
    they raise ``ValueError`` like any non-ELF file (and like a FIFO or device).
    """
    file_name = os.fspath(path)
    with _open_file(file_name) as source:
        return _find_library_bin(file_name, source)


def read_library_bin(path: str | os.PathLike[str]) -> LibraryBin | None:
    """Parse the ``__tvm_ffi__library_bin`` of a library file; None when it has none."""
    file_name = os.fspath(path)
    with _open_file(file_name) as source:
        return _read_library_bin(file_name, source)


def _find_library_bin(file_name: str, data: bytes | _elf.Source) -> bytes | None:
    """:func:`find_library_bin` of ``file_name``, whose contents the caller has (or has open)."""
    elf = _elf.parse(data)
    if elf is None:
        raise ValueError(f"{file_name} is not an ELF file")
    try:
        found = _find_symbol(elf, SYMBOL)
        if found is None:
            return None
        sec, sym = found
        offset, room = _symbol_extent(sec, sym, file_name)
        nbytes = _U64.unpack(elf.read(offset, 8))[0]
        if 8 + nbytes > room:
            raise ValueError(
                f"{file_name}: {SYMBOL} says {nbytes} bytes follow its header but the "
                f"symbol holds {max(room - 8, 0)} (file offset {offset})"
            )
        # Bounded by the symbol's (or its section's) size, itself within the file.
        return elf.read(offset, 8 + nbytes)
    except _elf.ElfError as err:
        raise ValueError(f"{file_name}: malformed ELF headers ({err})") from None


def _read_library_bin(file_name: str, data: bytes | _elf.Source) -> LibraryBin | None:
    """:func:`read_library_bin` of ``file_name``, whose contents the caller has (or has open)."""
    raw = _find_library_bin(file_name, data)
    if raw is None:
        return None
    try:
        return LibraryBin.from_bytes(raw)
    except ValueError as err:
        raise ValueError(f"{file_name}: {err}") from None


_SHN_LORESERVE = 0xFF00


def _find_symbol(elf: _elf.ElfFile, name: str) -> tuple[_elf.Section, _elf.Symbol] | None:
    """The section and entry of defined symbol ``name`` (dynamic table first); None if absent."""
    wanted = name.encode()
    for table in (_elf.SHT_DYNSYM, _elf.SHT_SYMTAB):
        for sym in elf.defined_symbols(table):
            if sym.name == wanted:
                if sym.shndx >= _SHN_LORESERVE or sym.shndx >= len(elf.sections):
                    raise _elf.ElfError(
                        f"{SYMBOL} is not in a regular section (index {sym.shndx:#x})"
                    )
                return elf.sections[sym.shndx], sym
    return None


def _symbol_extent(sec: _elf.Section, sym: _elf.Symbol, file_name: str) -> tuple[int, int]:
    """(file offset, bytes it may span) of the array: the symbol must lie in its section."""
    if sec.type == _elf.SHT_NOBITS:
        raise ValueError(f"{file_name}: {SYMBOL} is in a zero-filled (NOBITS) section")
    # Shared libraries: value is a virtual address; objects: an offset (sh_addr is 0).
    start = sym.value - sec.addr
    if start < 0 or start + max(sym.size, 8) > sec.size:
        raise ValueError(
            f"{file_name}: {SYMBOL} (value {sym.value:#x}, {sym.size} bytes) lies outside "
            f"its section ({sec.size} bytes at address {sec.addr:#x})"
        )
    room = sym.size if sym.size else sec.size - start
    return sec.offset + start, room
