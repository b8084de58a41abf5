"""A small reader of ELF files held in memory: the section table and defined symbols.

It answers the two questions tvmffi asks of a library file without loading it:
which ``__tvm_ffi_`` symbols does it export (``load_module``'s check and
``python -m tvmffi inspect``), and where does the ``__tvm_ffi__library_bin``
array lie (:mod:`tvmffi.codegen.library_bin`). Both ELF classes (32 and 64
bit) and both byte orders are read; Mach-O and PE files are not ELF here.

It lives outside :mod:`tvmffi.codegen` so that ``import tvmffi`` does not
import the code generator.
"""

from __future__ import annotations

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


class ElfFile:
    """The header of the ELF file in ``data`` (see :func:`parse`) and its section table."""

    def __init__(self, data: bytes, layout: _Layout, order: str) -> None:
        self.data = data
        self._is64 = layout.header_size == 64
        self._symbol = struct.Struct(order + layout.symbol_fmt)
        self._section = struct.Struct(order + layout.section_fmt)
        self.type: int = struct.unpack_from(order + "H", data, 0x10)[0]
        """``e_type``: :data:`ET_DYN` for a shared library."""
        (self._shoff,) = struct.unpack_from(order + layout.shoff_fmt, data, layout.shoff_at)
        self._shentsize, self._shnum = struct.unpack_from(order + "HH", data, layout.shentsize_at)
        self._sections: list[Section] | None = None

    @property
    def sections(self) -> list[Section]:
        """The section headers, read on first use; :class:`ElfError` if outside the data."""
        if self._sections is None:
            at, step, unpack = self._shoff, self._shentsize, self._section.unpack_from
            try:
                raw = [unpack(self.data, at + i * step) for i in range(self._shnum)]
            except (struct.error, OverflowError) as err:  # outside the data, or past 2**63
                raise ElfError(str(err)) from None
            self._sections = [Section(s[1], s[3], s[4], s[5], s[6], s[9]) for s in raw]
        return self._sections

    def defined_symbols(self, sh_type: int) -> Iterator[Symbol]:
        """Defined symbols of every section of type ``sh_type``, section by section.

        Undefined (imported) symbols are skipped. Raises :class:`ElfError` when a
        table or a name lies outside the data.
        """
        for sec in self.sections:
            if sec.type == sh_type:
                yield from self._table(sec)

    def _table(self, sec: Section) -> Iterator[Symbol]:
        data = self.data
        entsize = sec.entsize or self._symbol.size
        try:
            strtab = self.sections[sec.link].offset  # the linked string table
            for i in range(1, sec.size // entsize):  # entry 0 is the reserved null symbol
                f = self._symbol.unpack_from(data, sec.offset + i * entsize)
                if self._is64:
                    name, shndx, value, size = f[0], f[3], f[4], f[5]
                else:
                    name, value, size, shndx = f[0], f[1], f[2], f[5]
                if shndx == _SHN_UNDEF:
                    continue
                start = strtab + name
                stop = data.find(b"\0", start)
                if stop < 0:
                    raise ElfError(f"symbol name at offset {start} is not NUL-terminated")
                yield Symbol(data[start:stop], shndx, value, size)
        except (struct.error, IndexError, OverflowError) as err:
            raise ElfError(str(err)) from None


def parse(data: bytes) -> ElfFile | None:
    """The :class:`ElfFile` in ``data``; ``None`` when ``data`` is not ELF.

    Not ELF: no ``\\x7fELF`` magic, an unknown class or byte order, or fewer bytes
    than the header of its class. Only the header is read here; the section table
    and symbols are read (and checked) when asked for.
    """
    if len(data) < 6 or data[:4] != _MAGIC:
        return None
    layout = _LAYOUTS.get(data[4])
    order = {1: "<", 2: ">"}.get(data[5])
    if layout is None or order is None or len(data) < layout.header_size:
        return None
    return ElfFile(data, layout, order)
