"""ELF64 little-endian structures: reading clang's relocatable BPF objects (and, in the
tests, the shared objects link.py writes). Only what the linker needs; standard library
only."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

# --- constants (ELF gABI, BPF psABI) ----------------------------------------------------------
ELFMAG = b"\x7fELF"
ELFCLASS64 = 2
ELFDATA2LSB = 1
EV_CURRENT = 1
ELFOSABI_NONE = 0
ET_REL = 1
ET_DYN = 3
EM_BPF = 247

SHT_NULL = 0
SHT_PROGBITS = 1
SHT_SYMTAB = 2
SHT_STRTAB = 3
SHT_RELA = 4
SHT_DYNAMIC = 6
SHT_NOBITS = 8
SHT_REL = 9
SHT_DYNSYM = 11

SHF_WRITE = 0x1
SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4

PT_LOAD = 1
PT_DYNAMIC = 2
PF_X = 1
PF_W = 2
PF_R = 4

SHN_UNDEF = 0
SHN_ABS = 0xFFF1
SHN_COMMON = 0xFFF2

STB_LOCAL = 0
STB_GLOBAL = 1
STB_WEAK = 2
STT_NOTYPE = 0
STT_OBJECT = 1
STT_FUNC = 2
STT_SECTION = 3
STT_FILE = 4

DT_NULL = 0
DT_STRTAB = 5
DT_SYMTAB = 6
DT_STRSZ = 10
DT_SYMENT = 11
DT_REL = 17
DT_RELSZ = 18
DT_RELENT = 19
DT_TEXTREL = 22

# BPF relocation types (LLVM's ELFRelocs/BPF.def).
R_BPF_NONE = 0
R_BPF_64_64 = 1  # lddw: the 64-bit immediate split over two instruction slots
R_BPF_64_ABS64 = 2  # 64-bit data word
R_BPF_64_ABS32 = 3  # 32-bit data word (debug info)
R_BPF_64_NODYLD32 = 4  # 32-bit data word in .BTF.ext
R_BPF_64_32 = 10  # call imm; in a shared object: a call to the named syscall

EHDR = struct.Struct("<16sHHIQQQIHHHHHH")  # 64 bytes
PHDR = struct.Struct("<IIQQQQQQ")  # 56 bytes
SHDR = struct.Struct("<IIQQQQIIQQ")  # 64 bytes
SYM = struct.Struct("<IBBHQQ")  # 24 bytes
REL = struct.Struct("<QQ")  # 16 bytes
DYN = struct.Struct("<qQ")  # 16 bytes

# MM_REGION_SIZE: read-only data and text are mapped at 1 << 32 + their file offset.
RODATA_VADDR = 1 << 32


class ElfError(ValueError):
    """The input is not an ELF file this toolchain understands."""


@dataclass
class Section:
    index: int
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    addralign: int
    entsize: int
    data: bytes = b""

    @property
    def alloc(self) -> bool:
        return bool(self.flags & SHF_ALLOC)

    @property
    def writable(self) -> bool:
        return bool(self.flags & SHF_WRITE)


@dataclass
class Symbol:
    index: int
    name: str
    value: int
    size: int
    bind: int
    type: int
    shndx: int
    other: int = 0

    @property
    def defined(self) -> bool:
        return self.shndx != SHN_UNDEF


@dataclass
class Relocation:
    offset: int
    type: int
    symbol: int


@dataclass
class ElfFile:
    name: str
    header: dict
    sections: list[Section]
    symbols: list[Symbol] = field(default_factory=list)
    program_headers: list[dict] = field(default_factory=list)

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)

    def relocations(self, section: Section) -> list[Relocation]:
        if section.type == SHT_RELA:
            raise ElfError(f"{self.name}: section {section.name} holds RELA relocations; BPF objects use REL")
        out = []
        for i in range(0, len(section.data), REL.size):
            offset, info = REL.unpack_from(section.data, i)
            out.append(Relocation(offset, info & 0xFFFFFFFF, info >> 32))
        return out

    def dynamic_symbols(self) -> list[Symbol]:
        dynsym = next((s for s in self.sections if s.type == SHT_DYNSYM), None)
        return _symbols(self.sections, dynsym) if dynsym else []


def _cstr(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    if end < 0:
        raise ElfError(f"string at {offset} is not terminated")
    return table[offset:end].decode("utf-8", "replace")


def _symbols(sections: list[Section], table: Section) -> list[Symbol]:
    names = sections[table.link].data
    out = []
    for i in range(0, len(table.data), SYM.size):
        st_name, info, other, shndx, value, size = SYM.unpack_from(table.data, i)
        out.append(Symbol(i // SYM.size, _cstr(names, st_name), value, size, info >> 4, info & 0xF, shndx, other))
    return out


def parse(data: bytes, name: str = "<input>") -> ElfFile:
    if len(data) < EHDR.size or data[:4] != ELFMAG:
        raise ElfError(f"{name}: not an ELF file")
    ident, e_type, machine, version, entry, phoff, shoff, flags, ehsize, phentsize, phnum, shentsize, shnum, shstrndx = EHDR.unpack_from(data, 0)
    if ident[4] != ELFCLASS64 or ident[5] != ELFDATA2LSB:
        raise ElfError(f"{name}: not a 64-bit little-endian ELF file")
    header = {
        "ident": ident, "type": e_type, "machine": machine, "version": version, "entry": entry,
        "phoff": phoff, "shoff": shoff, "flags": flags, "ehsize": ehsize, "phentsize": phentsize,
        "phnum": phnum, "shentsize": shentsize, "shnum": shnum, "shstrndx": shstrndx,
    }
    raw = []
    for i in range(shnum):
        raw.append(SHDR.unpack_from(data, shoff + i * SHDR.size))
    sections = []
    for i, (sh_name, sh_type, sh_flags, addr, offset, size, link, info, align, entsize) in enumerate(raw):
        body = b"" if sh_type == SHT_NOBITS else data[offset:offset + size]
        if sh_type != SHT_NOBITS and len(body) != size:
            raise ElfError(f"{name}: section {i} runs past the end of the file")
        sections.append(Section(i, "", sh_type, sh_flags, addr, offset, size, link, info, align, entsize, body))
    if shnum:
        names = sections[shstrndx].data
        for section, r in zip(sections, raw):
            section.name = _cstr(names, r[0])
    phdrs = []
    for i in range(phnum):
        p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align = PHDR.unpack_from(data, phoff + i * PHDR.size)
        phdrs.append({"type": p_type, "flags": p_flags, "offset": p_offset, "vaddr": p_vaddr, "paddr": p_paddr, "filesz": p_filesz, "memsz": p_memsz, "align": p_align})
    elf = ElfFile(name, header, sections, program_headers=phdrs)
    symtab = next((s for s in sections if s.type == SHT_SYMTAB), None)
    if symtab is not None:
        elf.symbols = _symbols(sections, symtab)
    return elf
