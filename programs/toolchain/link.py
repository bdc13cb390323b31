"""A linker from clang's relocatable BPF objects to an SBPF v0 shared object.

Neither stock linker can produce what the Solana loader accepts (ld.lld rejects the BPF
relocations in a shared object; GNU bpf-ld has no -shared), so the project links its
programs itself. What the loader (solana-sbpf's lenient parser, e_flags 0) requires, and
how this linker meets it (docs/programs.md, "Toolchain"):

- ELF64 little-endian, ET_DYN, EM_BPF (247), e_flags 0 (SBPF v0);
- exactly one ``.text`` section whose address equals its file offset, with ``e_entry``
  (the global function ``entrypoint``) inside it. Every input ``.text`` is concatenated;
- read-only data only in ``.rodata`` (also at address == offset): clang's ``.rodata*``
  sections (``.rodata.str1.1``, ``.rodata.cst16``…) and ``.data.rel.ro*`` are merged into
  it. Text and rodata are mapped at ``1 << 32`` + file offset, so ``lddw`` of an address
  (R_BPF_64_64) and pointers in rodata (R_BPF_64_ABS64) are resolved here, statically;
- no writable data: any allocated writable section (``.data``, ``.bss``, ``COMMON``) is an
  error naming the symbols in it;
- calls: clang resolves calls to static functions itself (pc-relative imm); calls to
  global functions carry R_BPF_64_32 and get the pc-relative offset written here; calls to
  undefined names are syscalls: ``call -1`` stays, with a dynamic relocation of type 10
  against a ``.dynsym`` entry named after the syscall (``.dynsym``/``.dynstr``/
  ``.rel.dyn``/``.dynamic``, PT_DYNAMIC). The loader murmur3-hashes the name and refuses
  unknown ones, so unknown names are refused here first;
- sections ascend in the file without overlapping the headers; tables are 8-aligned.

The output is a pure function of the inputs (no timestamps, names sorted), so a rebuild
is byte-identical.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from . import elf as E

#: Syscalls the Solana runtime registers for SBPF v0 programs (agave's
#: create_program_runtime_environment_v1). An undefined name outside this set is a
#: link error rather than a program the loader refuses at deployment.
SYSCALLS = frozenset({
    "abort", "sol_panic_", "sol_log_", "sol_log_64_", "sol_log_compute_units_", "sol_log_pubkey",
    "sol_log_data", "sol_create_program_address", "sol_try_find_program_address", "sol_sha256",
    "sol_keccak256", "sol_blake3", "sol_secp256k1_recover", "sol_poseidon", "sol_big_mod_exp",
    "sol_curve_validate_point", "sol_curve_group_op", "sol_curve_multiscalar_mul",
    "sol_alt_bn128_group_op", "sol_alt_bn128_compression", "sol_get_clock_sysvar",
    "sol_get_epoch_schedule_sysvar", "sol_get_rent_sysvar", "sol_get_last_restart_slot",
    "sol_get_epoch_rewards_sysvar", "sol_get_sysvar", "sol_get_epoch_stake", "sol_memcpy_",
    "sol_memmove_", "sol_memset_", "sol_memcmp_", "sol_invoke_signed_c", "sol_invoke_signed_rust",
    "sol_set_return_data", "sol_get_return_data", "sol_get_processed_sibling_instruction",
    "sol_get_stack_height", "sol_remaining_compute_units",
})

ENTRY = "entrypoint"
_CALL = 0x85
_LDDW = 0x18
_BPF_JMP32 = 0x06  # instruction class of the 32-bit jumps -mcpu=v3 emits


class LinkError(Exception):
    """The objects cannot become a program the SBPF v0 loader accepts; the message says why."""


@dataclass
class _Input:
    elf: E.ElfFile
    text: dict[int, int]  # input section index → output .text offset (relative)
    rodata: dict[int, int]  # input section index → output .rodata offset (relative)


def _align(value: int, alignment: int) -> int:
    alignment = max(alignment, 1)
    return (value + alignment - 1) // alignment * alignment


def _is_text(s: E.Section) -> bool:
    return s.alloc and bool(s.flags & E.SHF_EXECINSTR)


def _is_rodata(s: E.Section) -> bool:
    return s.alloc and not s.writable and not (s.flags & E.SHF_EXECINSTR) and (s.name.startswith(".rodata") or s.name.startswith(".data.rel.ro"))


def _writable_data_error(obj: E.ElfFile, sections: list[E.Section]) -> LinkError:
    parts = []
    for s in sections:
        names = sorted({sym.name for sym in obj.symbols if sym.shndx == s.index and sym.name and sym.type in (E.STT_OBJECT, E.STT_NOTYPE)})
        held = ", ".join(names) if names else "unnamed data"
        parts.append(f"{s.name} ({s.size} bytes: {held})")
    return LinkError(
        f"{obj.name}: writable data is not supported by the SBPF v0 loader: {'; '.join(parts)}. "
        "Make it const (read-only data), or keep state in account data; no mutable globals or statics."
    )


def _collect(objects: list[tuple[str, bytes]]) -> tuple[list[_Input], bytearray, bytearray]:
    inputs: list[_Input] = []
    text = bytearray()
    rodata = bytearray()
    rodata_align = 1
    for name, data in objects:
        obj = E.parse(data, name)
        h = obj.header
        if h["machine"] != E.EM_BPF:
            raise LinkError(f"{name}: e_machine {h['machine']} is not EM_BPF (247); compile with --target=bpfel")
        if h["type"] != E.ET_REL:
            raise LinkError(f"{name}: not a relocatable object (e_type {h['type']})")
        common = [sym.name for sym in obj.symbols if sym.shndx == E.SHN_COMMON]
        if common:
            raise LinkError(f"{name}: writable data is not supported by the SBPF v0 loader: common symbols {', '.join(sorted(common))}. Make them const, or keep state in account data.")
        writable = [s for s in obj.sections if s.alloc and (s.writable or s.type == E.SHT_NOBITS) and s.size > 0]
        if writable:
            raise _writable_data_error(obj, writable)
        entry = _Input(obj, {}, {})
        for s in obj.sections:
            if not s.alloc or s.size == 0:
                continue
            if _is_text(s):
                if s.name != ".text" and not s.name.startswith(".text."):
                    raise LinkError(f"{name}: executable section {s.name} is not text")
                text.extend(bytes(_align(len(text), max(s.addralign, 8)) - len(text)))
                entry.text[s.index] = len(text)
                text.extend(s.data)
            elif _is_rodata(s):
                rodata_align = max(rodata_align, s.addralign)
                rodata.extend(bytes(_align(len(rodata), s.addralign) - len(rodata)))
                entry.rodata[s.index] = len(rodata)
                rodata.extend(s.data)
            else:
                raise LinkError(f"{name}: section {s.name} cannot be loaded (only .text, .rodata* and .data.rel.ro* are)")
        inputs.append(entry)
    if len(text) % 8:
        raise LinkError("the text is not a whole number of 8-byte instructions")
    return inputs, text, rodata


@dataclass
class _Layout:
    text_off: int
    rodata_off: int

    def address(self, inp: _Input, shndx: int, value: int) -> int:
        """File offset of ``value`` in input section ``shndx``."""
        if shndx in inp.text:
            return self.text_off + inp.text[shndx] + value
        if shndx in inp.rodata:
            return self.rodata_off + inp.rodata[shndx] + value
        raise LinkError(f"{inp.elf.name}: a relocation refers to section {inp.elf.sections[shndx].name}, which is not loaded")


def _globals(inputs: list[_Input]) -> dict[str, tuple[_Input, E.Symbol]]:
    table: dict[str, tuple[_Input, E.Symbol]] = {}
    for inp in inputs:
        for sym in inp.elf.symbols:
            if sym.bind not in (E.STB_GLOBAL, E.STB_WEAK) or not sym.defined:
                continue
            seen = table.get(sym.name)
            if seen is None or (seen[1].bind == E.STB_WEAK and sym.bind == E.STB_GLOBAL):
                table[sym.name] = (inp, sym)
            elif seen[1].bind == E.STB_GLOBAL and sym.bind == E.STB_GLOBAL:
                raise LinkError(f"symbol {sym.name} is defined in both {seen[0].elf.name} and {inp.elf.name}")
    return table


def _check_instructions(text: bytearray, syscall_calls: set[int]) -> None:
    """No 32-bit jumps; every ``call`` lands in the text or is a relocated syscall
    (``syscall_calls``: their offsets in the text)."""
    count = len(text) // 8
    i = 0
    while i < count:
        opcode = text[i * 8]
        if opcode & 0x07 == _BPF_JMP32:
            raise LinkError(f"instruction {i} is a 32-bit jump (opcode {opcode:#04x}), which SBPF v0 rejects; compile with -mcpu=v2")
        if opcode == _CALL:
            (imm,) = struct.unpack_from("<i", text, i * 8 + 4)
            if imm == -1 and i * 8 not in syscall_calls:
                raise LinkError(f"call -1 at instruction {i} has no relocation naming its target")
            if imm != -1 and not 0 <= i + 1 + imm < count:
                raise LinkError(f"call at instruction {i} jumps outside the text")
        i += 2 if opcode == _LDDW else 1


def link(objects: list[tuple[str, bytes]]) -> bytes:
    """Link ``[(name, relocatable object bytes)]`` into an SBPF v0 shared object."""
    if not objects:
        raise LinkError("nothing to link")
    inputs, text, rodata = _collect(objects)
    if not text:
        raise LinkError("the objects hold no code")
    table = _globals(inputs)
    entry = table.get(ENTRY)
    if entry is None or entry[1].type != E.STT_FUNC or entry[1].shndx not in entry[0].text:
        raise LinkError(f"no global function named {ENTRY}")

    # File layout: header, 3 program headers, .text, .rodata, then the dynamic tables.
    text_off = E.EHDR.size + 3 * E.PHDR.size
    rodata_off = _align(text_off + len(text), 16)
    layout = _Layout(text_off, rodata_off)
    syscalls: dict[str, None] = {}
    dyn_relocs: list[tuple[int, str]] = []  # (file offset of the call, syscall name)

    for inp in inputs:
        obj = inp.elf
        for rel_section in obj.sections:
            if rel_section.type not in (E.SHT_REL, E.SHT_RELA):
                continue
            target = rel_section.info
            if target not in inp.text and target not in inp.rodata:
                continue  # relocations of sections not loaded (debug info, addrsig)
            in_text = target in inp.text
            for rel in obj.relocations(rel_section):
                sym = obj.symbols[rel.symbol]
                place = layout.address(inp, target, rel.offset)
                local = place - (text_off if in_text else rodata_off)
                buf = text if in_text else rodata
                if rel.type == E.R_BPF_NONE:
                    continue
                resolved: int | None = None
                if sym.defined:
                    resolved = layout.address(inp, sym.shndx, sym.value) if sym.type != E.STT_SECTION else layout.address(inp, sym.shndx, 0)
                elif sym.name in table:
                    owner, gsym = table[sym.name]
                    resolved = layout.address(owner, gsym.shndx, gsym.value)
                if rel.type == E.R_BPF_64_64:
                    if not in_text or buf[local] != _LDDW:
                        raise LinkError(f"{obj.name}: R_BPF_64_64 at {rel.offset:#x} is not on an lddw instruction")
                    if resolved is None:
                        raise LinkError(f"{obj.name}: undefined symbol {sym.name} (loaded by address)")
                    (addend,) = struct.unpack_from("<I", buf, local + 4)
                    value = E.RODATA_VADDR + resolved + addend
                    struct.pack_into("<I", buf, local + 4, value & 0xFFFFFFFF)
                    struct.pack_into("<I", buf, local + 12, value >> 32)
                elif rel.type == E.R_BPF_64_ABS64:
                    if resolved is None:
                        raise LinkError(f"{obj.name}: undefined symbol {sym.name} (pointer in read-only data)")
                    (addend,) = struct.unpack_from("<Q", buf, local)
                    struct.pack_into("<Q", buf, local, E.RODATA_VADDR + resolved + addend)
                elif rel.type == E.R_BPF_64_32:
                    if not in_text or buf[local] != _CALL:
                        raise LinkError(f"{obj.name}: R_BPF_64_32 at {rel.offset:#x} is not on a call instruction")
                    if sym.type == E.STT_SECTION:
                        raise LinkError(f"{obj.name}: call through a section symbol at {rel.offset:#x}; do not compile with -ffunction-sections")
                    if resolved is not None:
                        delta = resolved - (place + 8)
                        struct.pack_into("<i", buf, local + 4, delta // 8)
                    elif sym.name in SYSCALLS:
                        struct.pack_into("<i", buf, local + 4, -1)
                        syscalls[sym.name] = None
                        dyn_relocs.append((place, sym.name))
                    else:
                        raise LinkError(f"{obj.name}: undefined function {sym.name}: not defined in any object and not a syscall the runtime provides")
                else:
                    raise LinkError(f"{obj.name}: unsupported relocation type {rel.type} at {rel.offset:#x} in {obj.sections[target].name}")

    _check_instructions(text, {place - text_off for place, _ in dyn_relocs})
    entry_addr = layout.address(entry[0], entry[1].shndx, entry[1].value)
    return _write(text, rodata, layout, sorted(syscalls), sorted(dyn_relocs), entry_addr)


def _strtab(names: list[str]) -> tuple[bytes, dict[str, int]]:
    out = bytearray(b"\0")
    index = {"": 0}
    for n in names:
        if n not in index:
            index[n] = len(out)
            out.extend(n.encode() + b"\0")
    return bytes(out), index


def _write(text: bytearray, rodata: bytearray, layout: _Layout, syscalls: list[str], relocs: list[tuple[int, str]], entry: int) -> bytes:
    out = bytearray(layout.text_off)
    out.extend(text)
    if rodata:
        out.extend(bytes(layout.rodata_off - len(out)))
        out.extend(rodata)
    # The dynamic tables, in the order the section headers list them.
    dynstr, dynstr_index = _strtab(syscalls)
    dynsym = bytearray(E.SYM.size)  # index 0: the null symbol
    sym_index = {}
    for i, name in enumerate(syscalls, start=1):
        sym_index[name] = i
        dynsym.extend(E.SYM.pack(dynstr_index[name], (E.STB_GLOBAL << 4) | E.STT_NOTYPE, 0, E.SHN_UNDEF, 0, 0))
    reldyn = b"".join(E.REL.pack(place, (sym_index[name] << 32) | E.R_BPF_64_32) for place, name in relocs)

    def place(blob: bytes, alignment: int = 8) -> int:
        out.extend(bytes(_align(len(out), alignment) - len(out)))
        at = len(out)
        out.extend(blob)
        return at

    dynamic_entries = 6 + (4 if reldyn else 0)
    dynamic_off = place(bytes(dynamic_entries * E.DYN.size))
    dynsym_off = place(bytes(dynsym))
    dynstr_off = place(dynstr, 1)
    reldyn_off = place(reldyn) if reldyn else 0
    dyn = [(E.DT_SYMTAB, dynsym_off), (E.DT_STRTAB, dynstr_off), (E.DT_STRSZ, len(dynstr)), (E.DT_SYMENT, E.SYM.size)]
    if reldyn:
        dyn += [(E.DT_REL, reldyn_off), (E.DT_RELSZ, len(reldyn)), (E.DT_RELENT, E.REL.size), (E.DT_TEXTREL, 0)]
    dyn += [(E.DT_NULL, 0), (E.DT_NULL, 0)]
    out[dynamic_off:dynamic_off + len(dyn) * E.DYN.size] = b"".join(E.DYN.pack(t, v) for t, v in dyn)
    dyn_end = len(out)

    section_names = [".text", ".rodata", ".dynamic", ".dynsym", ".dynstr", ".rel.dyn", ".shstrtab"]
    shstrtab, shname = _strtab(section_names)
    shstrtab_off = place(shstrtab, 1)

    # Section headers: (name, type, flags, offset, size, link, info, align, entsize).
    sections = [("", E.SHT_NULL, 0, 0, 0, 0, 0, 0, 0)]
    sections.append((".text", E.SHT_PROGBITS, E.SHF_ALLOC | E.SHF_EXECINSTR, layout.text_off, len(text), 0, 0, 8, 0))
    if rodata:
        sections.append((".rodata", E.SHT_PROGBITS, E.SHF_ALLOC, layout.rodata_off, len(rodata), 0, 0, 16, 0))
    dynsym_index = len(sections) + 1
    dynstr_index_ = len(sections) + 2
    sections.append((".dynamic", E.SHT_DYNAMIC, E.SHF_ALLOC, dynamic_off, len(dyn) * E.DYN.size, dynstr_index_, 0, 8, E.DYN.size))
    sections.append((".dynsym", E.SHT_DYNSYM, E.SHF_ALLOC, dynsym_off, len(dynsym), dynstr_index_, 1, 8, E.SYM.size))
    sections.append((".dynstr", E.SHT_STRTAB, E.SHF_ALLOC, dynstr_off, len(dynstr), 0, 0, 1, 0))
    if reldyn:
        sections.append((".rel.dyn", E.SHT_REL, E.SHF_ALLOC, reldyn_off, len(reldyn), dynsym_index, 0, 8, E.REL.size))
    shstrndx = len(sections)
    sections.append((".shstrtab", E.SHT_STRTAB, 0, shstrtab_off, len(shstrtab), 0, 0, 1, 0))
    shoff = _align(len(out), 8)
    out.extend(bytes(shoff - len(out)))
    for name, typ, flags, off, size, link_, info, align, entsize in sections:
        addr = off if flags & E.SHF_ALLOC else 0  # loaded sections: address == file offset
        out.extend(E.SHDR.pack(shname[name], typ, flags, addr, off, size, link_, info, align, entsize))

    # Program headers: text+rodata (R+X), the dynamic tables (R), PT_DYNAMIC.
    code_end = layout.rodata_off + len(rodata) if rodata else layout.text_off + len(text)
    phdrs = [
        (E.PT_LOAD, E.PF_R | E.PF_X, layout.text_off, code_end - layout.text_off),
        (E.PT_LOAD, E.PF_R, dynamic_off, dyn_end - dynamic_off),
        (E.PT_DYNAMIC, E.PF_R, dynamic_off, len(dyn) * E.DYN.size),
    ]
    for i, (typ, flags, off, size) in enumerate(phdrs):
        struct.pack_into("<IIQQQQQQ", out, E.EHDR.size + i * E.PHDR.size, typ, flags, off, off, off, size, size, 8)
    ident = E.ELFMAG + bytes([E.ELFCLASS64, E.ELFDATA2LSB, E.EV_CURRENT, E.ELFOSABI_NONE]) + bytes(8)
    E.EHDR.pack_into(out, 0, ident, E.ET_DYN, E.EM_BPF, E.EV_CURRENT, entry, E.EHDR.size, shoff, 0, E.EHDR.size, E.PHDR.size, len(phdrs), E.SHDR.size, len(sections), shstrndx)
    return bytes(out)
