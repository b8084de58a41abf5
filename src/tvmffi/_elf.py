"""A small reader of ELF files: the section table and defined symbols.

It answers the two questions tvmffi asks of a library file without loading it:
which ``__tvm_ffi_`` symbols does it export (``load_module``'s check and
``python -m tvmffi inspect``), and where does the ``__tvm_ffi__library_bin``
array lie (:mod:`tvmffi.codegen.library_bin`). Both ELF classes (32 and 64
bit) and both byte orders are read; Mach-O and PE files are not ELF here.

The file is read on demand (:class:`FileSource`, positional reads of the
header, the section table and the one symbol table asked for, each bounded by
the file's size) or taken from memory (bytes), so a large library is never
read whole; :func:`open_regular_file` refuses FIFOs and devices before reading,
so a ``/dev/zero`` or a FIFO never hangs or exhausts memory.

It lives outside :mod:`tvmffi.codegen` so that ``import tvmffi`` does not
import the code generator.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Iterator
from typing import NamedTuple

SHT_SYMTAB = 2
SHT_NOBITS = 8
SHT_DYNSYM = 11
ET_DYN = 3
_SHN_UNDEF = 0

_MAGIC = b"\x7fELF"


class _Layout(NamedTuple):
    """Where the section table fields are, and the struct formats, per ELF class."""

    header_size: int
    shoff_at: int
    shoff_fmt: str
    shentsize_at: int
    section_fmt: str  # name type flags addr offset size link info align entsize
    symbol_fmt: str


_LAYOUTS = {
    1: _Layout(52, 0x20, "I", 0x2E, "IIIIIIIIII", "IIIBBH"),  # name value size info other shndx
    2: _Layout(64, 0x28, "Q", 0x3A, "IIQQQQIIQQ", "IBBHQQ"),  # name info other shndx value size
}


class ElfError(ValueError):
    """The data starts like an ELF file but a header or table points outside it."""


class Section(NamedTuple):
    """The fields of a section header that symbol lookups need."""

    type: int
    addr: int
    offset: int
    size: int
    link: int
    entsize: int


class Symbol(NamedTuple):
    """A defined symbol: raw name, section index, value (address or offset) and size."""

    name: bytes
    shndx: int
    value: int
    size: int


class BytesSource:
    """File contents held in memory, read like a :class:`FileSource`."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.size = len(data)

    def read(self, offset: int, size: int) -> bytes:
        """``size`` bytes at ``offset``; :class:`ElfError` if they lie outside the data."""
        _check_range(offset, size, self.size)
        return self.data[offset : offset + size]


class FileSource:
    """An open regular file, read with positional reads of exactly the bytes asked for.

    ``size`` is the file's size when it was opened; a read past it raises
    :class:`ElfError` before anything is allocated, and a file that shrinks
    while it is read raises too (a mapping would crash with SIGBUS instead).
    """

    def __init__(self, fd: int, size: int, name: str) -> None:
        self.fd = fd
        self.size = size
        self.name = name

    def read(self, offset: int, size: int) -> bytes:
        """``size`` bytes at ``offset``; :class:`ElfError` if they lie outside the file."""
        _check_range(offset, size, self.size)
        parts: list[bytes] = []
        done = 0
        while done < size:
            if hasattr(os, "pread"):
                chunk = os.pread(self.fd, size - done, offset + done)
            else:  # Windows: no pread
                os.lseek(self.fd, offset + done, os.SEEK_SET)
                chunk = os.read(self.fd, size - done)
            if not chunk:
                raise ElfError(f"{self.name} shrank while it was read (at byte {offset + done})")
            parts.append(chunk)
            done += len(chunk)
        return b"".join(parts)

    def read_all(self) -> bytes:
        """The whole file (its size as opened)."""
        return self.read(0, self.size)

    def close(self) -> None:
        """Close the file descriptor (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> FileSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


Source = BytesSource | FileSource


def _check_range(offset: int, size: int, total: int) -> None:
    if offset < 0 or size < 0 or offset + size > total:
        raise ElfError(f"bytes {offset}..{offset + size} lie outside the {total}-byte file")


def open_regular_file(file_name: str) -> FileSource:
    """Open ``file_name`` for :class:`FileSource` reads; it must be a regular file.

    Raises ``FileNotFoundError``, ``IsADirectoryError``, or ``ValueError`` for a
    FIFO, socket or device. The open never blocks (``O_NONBLOCK``: opening a FIFO
    for reading would otherwise wait for a writer), and the check is made on the
    opened descriptor, so the file read is the file checked.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(file_name, flags | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(f"{file_name} is a directory")
        if not stat.S_ISREG(mode):
            raise ValueError(f"{file_name} is not a regular file (a FIFO, socket or device)")
        size = os.fstat(fd).st_size
    except BaseException:
        os.close(fd)
        raise
    return FileSource(fd, size, file_name)


class ElfFile:
    """The header of the ELF file in ``source`` (see :func:`parse`) and its section table."""

    def __init__(self, source: Source, header: bytes, layout: _Layout, order: str) -> None:
        self.source = source
        self._is64 = layout.header_size == 64
        self._symbol = struct.Struct(order + layout.symbol_fmt)
        self._section = struct.Struct(order + layout.section_fmt)
        self.type: int = struct.unpack_from(order + "H", header, 0x10)[0]
        """``e_type``: :data:`ET_DYN` for a shared library."""
        (self._shoff,) = struct.unpack_from(order + layout.shoff_fmt, header, layout.shoff_at)
        self._shentsize, self._shnum = struct.unpack_from(order + "HH", header, layout.shentsize_at)
        self._sections: list[Section] | None = None

    def read(self, offset: int, size: int) -> bytes:
        """``size`` bytes of the file at ``offset``; :class:`ElfError` if outside it."""
        return self.source.read(offset, size)

    @property
    def sections(self) -> list[Section]:
        """The section headers, read on first use; :class:`ElfError` if outside the file."""
        if self._sections is None:
            step, unpack = self._shentsize, self._section.unpack_from
            if self._shnum and step < self._section.size:
                raise ElfError(f"section header size {step} is below {self._section.size}")
            raw = self.read(self._shoff, self._shnum * step)
            fields = [unpack(raw, i * step) for i in range(self._shnum)]
            self._sections = [Section(s[1], s[3], s[4], s[5], s[6], s[9]) for s in fields]
        return self._sections

    def defined_symbols(self, sh_type: int) -> Iterator[Symbol]:
        """Defined symbols of every section of type ``sh_type``, section by section.

        Undefined (imported) symbols are skipped. Raises :class:`ElfError` when a
        table or a name lies outside the file or its string table.
        """
        for sec in self.sections:
            if sec.type == sh_type:
                yield from self._table(sec)

    def _table(self, sec: Section) -> Iterator[Symbol]:
        entsize = sec.entsize or self._symbol.size
        if entsize < self._symbol.size:
            raise ElfError(f"symbol entry size {entsize} is below {self._symbol.size}")
        if sec.link >= len(self.sections):
            raise ElfError(f"symbol table links to section {sec.link} of {len(self.sections)}")
        strsec = self.sections[sec.link]  # the linked string table
        count = sec.size // entsize
        # Each read is bounded by the section's size, itself bounded by the file's.
        table = self.read(sec.offset, count * entsize)
        strtab = self.read(strsec.offset, strsec.size) if count > 1 else b""
        unpack = self._symbol.unpack_from
        for i in range(1, count):  # entry 0 is the reserved null symbol
            f = unpack(table, i * entsize)
            if self._is64:
                name, shndx, value, size = f[0], f[3], f[4], f[5]
            else:
                name, value, size, shndx = f[0], f[1], f[2], f[5]
            if shndx == _SHN_UNDEF:
                continue
            stop = strtab.find(b"\0", name)
            if stop < 0:
                raise ElfError(f"symbol name at string table offset {name} is not NUL-terminated")
            yield Symbol(strtab[name:stop], shndx, value, size)


def parse(data: bytes | Source) -> ElfFile | None:
    """The :class:`ElfFile` in ``data`` (bytes or a source); ``None`` when it is not ELF.

    Not ELF: no ``\\x7fELF`` magic, an unknown class or byte order, or fewer bytes
    than the header of its class. Only the header is read here; the section table
    and symbols are read (and checked) when asked for.
    """
    source = BytesSource(data) if isinstance(data, bytes) else data
    head = source.read(0, min(source.size, 64))
    if len(head) < 6 or head[:4] != _MAGIC:
        return None
    layout = _LAYOUTS.get(head[4])
    order = {1: "<", 2: ">"}.get(head[5])
    if layout is None or order is None or len(head) < layout.header_size:
        return None
    return ElfFile(source, head, layout, order)
