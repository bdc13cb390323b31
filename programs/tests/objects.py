"""Relocatable BPF objects built in Python for the linker's unit tests: the same ELF
structures clang writes (sections, a symbol table, REL relocations), assembled from a
few BPF instructions, so the tests state exactly which relocations the linker sees and
need no compiler."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from programs.toolchain import elf as E


def insn(opcode: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhI", opcode, (src << 4) | dst, off, imm & 0xFFFFFFFF)


def lddw(dst: int, addend: int = 0) -> bytes:
    """``dst = address`` (the address comes from an R_BPF_64_64 relocation; ``addend``
    is its implicit addend, in the first slot's imm as clang writes it)."""
    return insn(0x18, dst, 0, 0, addend) + insn(0)


def mov_imm(dst: int, imm: int) -> bytes:
    return insn(0xB7, dst, 0, 0, imm)


def call(imm: int = -1) -> bytes:
    return insn(0x85, 0, 1, 0, imm)


def exit_() -> bytes:
    return insn(0x95)


def jmp32_eq(dst: int, imm: int, off: int) -> bytes:
    return insn(0x16, dst, 0, off, imm)  # BPF_JMP32 | BPF_JEQ | BPF_K


@dataclass
class _Sym:
    name: str
    section: int  # 0: undefined
    value: int
    size: int
    bind: int
    type: int


@dataclass
class ObjectBuilder:
    name: str = "test.o"
    sections: list[tuple[str, int, int, int, bytes]] = field(default_factory=list)  # name, type, flags, align, data
    symbols: list[_Sym] = field(default_factory=list)
    relocs: dict[int, list[tuple[int, int, str]]] = field(default_factory=dict)  # section → (offset, type, symbol name)

    def section(self, name: str, data: bytes, *, flags: int, align: int = 8, type: int = E.SHT_PROGBITS) -> int:
        self.sections.append((name, type, flags, align, data))
        return len(self.sections)  # index 0 is the null section

    def text(self, code: bytes, name: str = ".text") -> int:
        return self.section(name, code, flags=E.SHF_ALLOC | E.SHF_EXECINSTR)

    def rodata(self, data: bytes, name: str = ".rodata") -> int:
        return self.section(name, data, flags=E.SHF_ALLOC)

    def symbol(self, name: str, section: int = 0, value: int = 0, *, size: int = 0, bind: int = E.STB_GLOBAL, type: int = E.STT_FUNC) -> None:
        self.symbols.append(_Sym(name, section, value, size, bind, type))

    def reloc(self, section: int, offset: int, type: int, symbol: str) -> None:
        self.relocs.setdefault(section, []).append((offset, type, symbol))

    def build(self) -> bytes:
        # Symbols: null, then a section symbol per section, then locals, then globals.
        section_syms = [_Sym(f"<section {i}>", i, 0, 0, E.STB_LOCAL, E.STT_SECTION) for i in range(1, len(self.sections) + 1)]
        ordered = [*section_syms, *[s for s in self.symbols if s.bind == E.STB_LOCAL], *[s for s in self.symbols if s.bind != E.STB_LOCAL]]
        first_global = 1 + sum(1 for s in ordered if s.bind == E.STB_LOCAL)
        strtab = bytearray(b"\0")
        sym_index: dict[str, int] = {}
        symtab = bytearray(E.SYM.size)
        for i, s in enumerate(ordered, start=1):
            name_off = 0
            if s.type != E.STT_SECTION:
                name_off = len(strtab)
                strtab.extend(s.name.encode() + b"\0")
            sym_index[s.name] = i
            symtab.extend(E.SYM.pack(name_off, (s.bind << 4) | s.type, 0, s.section, s.value, s.size))
        all_sections = list(self.sections)
        rel_sections = []
        for target, entries in sorted(self.relocs.items()):
            data = b"".join(E.REL.pack(off, (sym_index[name] << 32) | typ) for off, typ, name in entries)
            rel_sections.append((".rel" + self.sections[target - 1][0], E.SHT_REL, 0, 8, data, target))
        symtab_index = len(all_sections) + len(rel_sections) + 1
        strtab_index = symtab_index + 1
        shstrtab_index = strtab_index + 1
        names = [s[0] for s in all_sections] + [r[0] for r in rel_sections] + [".symtab", ".strtab", ".shstrtab"]
        shstrtab = bytearray(b"\0")
        name_offsets = []
        for n in names:
            name_offsets.append(len(shstrtab))
            shstrtab.extend(n.encode() + b"\0")
        out = bytearray(E.EHDR.size)
        headers = [E.SHDR.pack(0, 0, 0, 0, 0, 0, 0, 0, 0, 0)]

        def place(data: bytes, align: int) -> int:
            out.extend(bytes(-len(out) % max(align, 1)))
            at = len(out)
            out.extend(data)
            return at

        k = 0
        for name, typ, flags, align, data in all_sections:
            at = place(b"" if typ == E.SHT_NOBITS else data, align)  # NOBITS: size only
            headers.append(E.SHDR.pack(name_offsets[k], typ, flags, 0, at, len(data), 0, 0, align, 0))
            k += 1
        for name, typ, flags, align, data, target in rel_sections:
            at = place(data, 8)
            headers.append(E.SHDR.pack(name_offsets[k], typ, flags, 0, at, len(data), symtab_index, target, 8, E.REL.size))
            k += 1
        at = place(bytes(symtab), 8)
        headers.append(E.SHDR.pack(name_offsets[k], E.SHT_SYMTAB, 0, 0, at, len(symtab), strtab_index, first_global, 8, E.SYM.size))
        at = place(bytes(strtab), 1)
        headers.append(E.SHDR.pack(name_offsets[k + 1], E.SHT_STRTAB, 0, 0, at, len(strtab), 0, 0, 1, 0))
        at = place(bytes(shstrtab), 1)
        headers.append(E.SHDR.pack(name_offsets[k + 2], E.SHT_STRTAB, 0, 0, at, len(shstrtab), 0, 0, 1, 0))
        shoff = place(b"".join(headers), 8)
        ident = E.ELFMAG + bytes([E.ELFCLASS64, E.ELFDATA2LSB, E.EV_CURRENT, 0]) + bytes(8)
        E.EHDR.pack_into(out, 0, ident, E.ET_REL, E.EM_BPF, E.EV_CURRENT, 0, 0, shoff, 0, E.EHDR.size, 0, 0, E.SHDR.size, len(headers), shstrtab_index)
        return bytes(out)
