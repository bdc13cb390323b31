"""The linker (programs/toolchain/link.py): the ELF it writes meets every rule of the SBPF
v0 loader (docs/programs.md, "Toolchain"), the loader runs it, and what it must refuse it
refuses with a message that says why."""

from __future__ import annotations

import struct

import pytest
from solders.instruction import Instruction
from solders.pubkey import Pubkey

from programs.tests.objects import ObjectBuilder, call, exit_, insn, jmp32_eq, lddw, mov_imm
from programs.tests.svmkit import Chain
from programs.toolchain import elf as E
from programs.toolchain.link import SYSCALLS, LinkError, link

STRING = b"hi from rodata\0"


def sample(name: str = "sample.o") -> ObjectBuilder:
    """entrypoint: log the string through a pointer table, call the global helper (which
    logs it again), return 0."""
    o = ObjectBuilder(name)
    code = (
        lddw(1, 0)                 # 0: r1 = &table (R_BPF_64_64, .rodata + 0)
        + insn(0x79, 1, 1, 0, 0)   # 16: r1 = *(u64 *)(r1 + 0): the pointer in the table
        + mov_imm(2, len(STRING) - 1)  # 24
        + call()                   # 32: sol_log_
        + call()                   # 40: helper
        + mov_imm(0, 0)            # 48
        + exit_()                  # 56
        + lddw(1, 8)               # 64 helper: r1 = .rodata + 8 (the string)
        + mov_imm(2, len(STRING) - 1)  # 80
        + call()                   # 88: sol_log_
        + exit_()                  # 96
    )
    text = o.text(code)
    rodata = o.rodata(struct.pack("<Q", 8) + STRING)  # table[0] = .rodata + 8 (ABS64, addend in place)
    o.symbol("entrypoint", text, 0, size=64)
    o.symbol("helper", text, 64, size=40)
    o.symbol("sol_log_", 0, 0, type=E.STT_NOTYPE)
    o.reloc(text, 0, E.R_BPF_64_64, f"<section {rodata}>")
    o.reloc(text, 32, E.R_BPF_64_32, "sol_log_")
    o.reloc(text, 40, E.R_BPF_64_32, "helper")
    o.reloc(text, 64, E.R_BPF_64_64, f"<section {rodata}>")
    o.reloc(text, 88, E.R_BPF_64_32, "sol_log_")
    o.reloc(rodata, 0, E.R_BPF_64_ABS64, f"<section {rodata}>")
    return o


def assert_sbpf_v0(data: bytes) -> E.ElfFile:
    """Every rule of solana-sbpf's lenient parser (e_flags 0) that the linker is there to meet."""
    so = E.parse(data, "out.so")
    h = so.header
    assert h["ident"][:4] == E.ELFMAG and h["ident"][4] == E.ELFCLASS64 and h["ident"][5] == E.ELFDATA2LSB
    assert h["ident"][6] == E.EV_CURRENT and h["ident"][7] == E.ELFOSABI_NONE and h["ident"][8:] == bytes(8)
    assert (h["type"], h["machine"], h["version"], h["flags"]) == (E.ET_DYN, E.EM_BPF, E.EV_CURRENT, 0)
    assert (h["ehsize"], h["phentsize"], h["shentsize"]) == (E.EHDR.size, E.PHDR.size, E.SHDR.size)
    assert h["shstrndx"] < h["shnum"] and so.sections[0].type == E.SHT_NULL
    texts = [s for s in so.sections if s.name == ".text"]
    assert len(texts) == 1
    text = texts[0]
    assert text.addr == text.offset and text.offset % 8 == 0 and text.size % 8 == 0
    assert text.addr <= h["entry"] < text.addr + text.size and (h["entry"] - text.addr) % 8 == 0
    # Sections ascend in the file without overlapping the headers or each other.
    headers = [(0, E.EHDR.size), (h["phoff"], h["phoff"] + h["phnum"] * E.PHDR.size), (h["shoff"], h["shoff"] + h["shnum"] * E.SHDR.size)]
    end = 0
    for s in so.sections[1:]:
        assert s.offset >= end, f"{s.name} is out of order"
        end = s.offset + s.size
        assert len(s.name) <= 16
        for a, b in headers:
            assert end <= a or b <= s.offset, f"{s.name} overlaps a header table"
        if s.alloc:
            assert s.addr == s.offset, f"{s.name}: address != file offset"
            assert not s.writable, f"{s.name} is writable"
        assert not s.name.startswith(".bss") and not (s.name.startswith(".data") and not s.name.startswith(".data.rel"))
        if s.type in (E.SHT_DYNAMIC, E.SHT_DYNSYM, E.SHT_REL):
            assert s.offset % 8 == 0
    ro = [s.name for s in so.sections if s.name in (".text", ".rodata", ".data.rel.ro", ".eh_frame")]
    assert ro in ([".text"], [".text", ".rodata"])
    # Program headers: ascending PT_LOADs; PT_DYNAMIC is the .dynamic section.
    loads = [p for p in so.program_headers if p["type"] == E.PT_LOAD]
    assert [p["vaddr"] for p in loads] == sorted(p["vaddr"] for p in loads)
    dynamic = so.section(".dynamic")
    (pt_dynamic,) = [p for p in so.program_headers if p["type"] == E.PT_DYNAMIC]
    assert (pt_dynamic["offset"], pt_dynamic["filesz"]) == (dynamic.offset, dynamic.size)
    tags = {}
    for i in range(0, dynamic.size, E.DYN.size):
        tag, value = E.DYN.unpack_from(dynamic.data, i)
        if tag == E.DT_NULL:
            break
        tags[tag] = value
    dynsym, dynstr = so.section(".dynsym"), so.section(".dynstr")
    assert tags[E.DT_SYMTAB] == dynsym.addr and dynsym.type == E.SHT_DYNSYM
    assert tags[E.DT_STRTAB] == dynstr.addr and tags[E.DT_STRSZ] == dynstr.size and dynstr.type == E.SHT_STRTAB
    symbols = so.dynamic_symbols()
    rel = so.section(".rel.dyn")
    calls = [i for i in range(0, text.size, 8) if text.data[i] == 0x85 and struct.unpack_from("<i", text.data, i + 4)[0] == -1]
    if rel is None:
        assert E.DT_REL not in tags and not calls
        return so
    assert (tags[E.DT_REL], tags[E.DT_RELSZ], tags[E.DT_RELENT]) == (rel.addr, rel.size, E.REL.size)
    relocs = so.relocations(rel)
    # Every syscall: a `call -1` in .text with a type-10 relocation naming a known syscall.
    assert sorted(r.offset - text.offset for r in relocs) == calls
    for r in relocs:
        assert r.type == E.R_BPF_64_32
        sym = symbols[r.symbol]
        assert sym.name in SYSCALLS and not sym.defined and sym.bind == E.STB_GLOBAL
    return so


def insn_at(so: E.ElfFile, offset: int) -> tuple[int, int]:
    text = so.section(".text")
    local = offset - text.offset
    return text.data[local], struct.unpack_from("<i", text.data, local + 4)[0]


def lddw_value(so: E.ElfFile, offset: int) -> int:
    text = so.section(".text")
    local = offset - text.offset
    lo, hi = struct.unpack_from("<I", text.data, local + 4)[0], struct.unpack_from("<I", text.data, local + 12)[0]
    return hi << 32 | lo


def test_the_written_elf_meets_the_loader_rules():
    so = assert_sbpf_v0(link([("sample.o", sample().build())]))
    text, rodata = so.section(".text"), so.section(".rodata")
    assert so.header["entry"] == text.offset  # entrypoint is the first function
    assert rodata.data[8:8 + len(STRING)] == STRING


def test_addresses_of_read_only_data_are_resolved_to_where_the_loader_maps_them():
    so = E.parse(link([("sample.o", sample().build())]))
    text, rodata = so.section(".text"), so.section(".rodata")
    assert lddw_value(so, text.offset) == E.RODATA_VADDR + rodata.offset  # the table
    assert lddw_value(so, text.offset + 64) == E.RODATA_VADDR + rodata.offset + 8  # the string, addend kept
    assert struct.unpack_from("<Q", rodata.data, 0)[0] == E.RODATA_VADDR + rodata.offset + 8  # the pointer in the table


def test_calls_to_global_functions_are_pc_relative_and_syscalls_stay_relocations():
    so = E.parse(link([("sample.o", sample().build())]))
    text = so.section(".text")
    assert insn_at(so, text.offset + 40) == (0x85, 64 // 8 - (40 // 8 + 1))  # to helper
    assert insn_at(so, text.offset + 32) == (0x85, -1)
    relocs = so.relocations(so.section(".rel.dyn"))
    names = [so.dynamic_symbols()[r.symbol].name for r in relocs]
    assert [(r.offset - text.offset, n) for r, n in zip(relocs, names)] == [(32, "sol_log_"), (88, "sol_log_")]
    assert [s.name for s in so.dynamic_symbols()] == ["", "sol_log_"]  # one symbol per syscall


def test_linking_is_deterministic():
    assert link([("sample.o", sample().build())]) == link([("sample.o", sample().build())])


def run(program: bytes) -> list[str]:
    chain = Chain()
    program_id = Pubkey.new_unique()
    chain.svm.add_program(program_id, program)
    outcome = chain.ok([Instruction(program_id, b"", [])])
    return [line for line in outcome.logs if line.startswith("Program log:")]


def test_the_loader_runs_what_it_links():
    assert run(link([("sample.o", sample().build())])) == ["Program log: hi from rodata"] * 2


def test_objects_are_linked_together_with_their_own_read_only_data():
    a = ObjectBuilder("a.o")
    text = a.text(call() + mov_imm(0, 0) + exit_())
    a.symbol("entrypoint", text, 0)
    a.symbol("say", 0, 0, type=E.STT_NOTYPE)
    a.reloc(text, 0, E.R_BPF_64_32, "say")
    b = ObjectBuilder("b.o")
    words = b"from b.o\0"
    btext = b.text(lddw(1, 3) + mov_imm(2, len(words) - 1) + call() + exit_())
    brodata = b.rodata(b"xyz" + words, name=".rodata.str1.1")
    b.symbol("say", btext, 0)
    b.symbol("sol_log_", 0, 0, type=E.STT_NOTYPE)
    b.reloc(btext, 0, E.R_BPF_64_64, f"<section {brodata}>")
    b.reloc(btext, 24, E.R_BPF_64_32, "sol_log_")
    program = link([("a.o", a.build()), ("b.o", b.build())])
    assert_sbpf_v0(program)
    assert run(program) == ["Program log: from b.o"]


def test_a_strong_definition_overrides_a_weak_one_and_two_strong_ones_conflict():
    def obj(name: str, bind: int, value: int) -> bytes:
        o = ObjectBuilder(name)
        text = o.text(mov_imm(0, value) + exit_())
        o.symbol("helper", text, 0, bind=bind)
        return o.build()

    main = ObjectBuilder("main.o")
    text = main.text(call() + exit_())
    main.symbol("entrypoint", text, 0)
    main.symbol("helper", 0, 0, type=E.STT_NOTYPE)
    main.reloc(text, 0, E.R_BPF_64_32, "helper")
    so = E.parse(link([("main.o", main.build()), ("weak.o", obj("weak.o", E.STB_WEAK, 1)), ("strong.o", obj("strong.o", E.STB_GLOBAL, 2))]))
    text_section = so.section(".text")
    # The text: main.o's (16 bytes), weak.o's helper (16), strong.o's helper (16); the call
    # at instruction 0 lands on strong.o's.
    assert text_section.data[32:40] == mov_imm(0, 2)
    assert 8 * (1 + insn_at(so, text_section.offset)[1]) == 32
    with pytest.raises(LinkError, match="helper is defined in both"):
        link([("main.o", main.build()), ("a.o", obj("a.o", E.STB_GLOBAL, 1)), ("b.o", obj("b.o", E.STB_GLOBAL, 2))])


def with_data(section: str, *, flags: int, type: int = E.SHT_PROGBITS) -> bytes:
    o = sample("counter.o")
    data = o.section(section, bytes(8), flags=flags, type=type)
    o.symbol("counter", data, 0, size=8, bind=E.STB_LOCAL, type=E.STT_OBJECT)
    return o.build()


@pytest.mark.parametrize("section,flags,type", [
    (".data", E.SHF_ALLOC | E.SHF_WRITE, E.SHT_PROGBITS),
    (".bss", E.SHF_ALLOC | E.SHF_WRITE, E.SHT_NOBITS),
    (".data.counter", E.SHF_ALLOC | E.SHF_WRITE, E.SHT_PROGBITS),
])
def test_writable_data_is_refused_with_the_symbols_that_hold_it(section, flags, type):
    with pytest.raises(LinkError) as exc:
        link([("counter.o", with_data(section, flags=flags, type=type))])
    message = str(exc.value)
    assert "writable data is not supported" in message and section in message and "counter" in message
    assert "const" in message  # and says what to do instead


def test_an_undefined_function_that_is_no_syscall_is_refused():
    o = sample()
    o.symbols = [s for s in o.symbols if s.name != "helper"]
    o.symbol("helper", 0, 0, type=E.STT_NOTYPE)
    with pytest.raises(LinkError, match="undefined function helper: not defined in any object and not a syscall"):
        link([("sample.o", o.build())])


def test_thirty_two_bit_jumps_are_refused_with_the_flag_that_avoids_them():
    o = ObjectBuilder()
    text = o.text(jmp32_eq(1, 0, 0) + mov_imm(0, 0) + exit_())
    o.symbol("entrypoint", text, 0)
    with pytest.raises(LinkError, match="-mcpu=v2"):
        link([("v3.o", o.build())])


def test_a_call_without_a_target_is_refused():
    o = ObjectBuilder()
    text = o.text(call() + mov_imm(0, 0) + exit_())  # call -1, no relocation
    o.symbol("entrypoint", text, 0)
    with pytest.raises(LinkError, match="call -1 at instruction 0 has no relocation"):
        link([("orphan.o", o.build())])


def test_an_object_without_entrypoint_is_refused():
    o = ObjectBuilder()
    text = o.text(mov_imm(0, 0) + exit_())
    o.symbol("main", text, 0)
    with pytest.raises(LinkError, match="no global function named entrypoint"):
        link([("main.o", o.build())])


def test_an_allocated_section_other_than_text_and_read_only_data_is_refused():
    o = sample()
    o.section(".init_array", struct.pack("<Q", 0), flags=E.SHF_ALLOC)
    with pytest.raises(LinkError, match=r"section \.init_array cannot be loaded"):
        link([("sample.o", o.build())])


@pytest.mark.parametrize("name", ["allowlist_hook", "loan_vault", "price_feed"])
def test_the_committed_programs_meet_the_loader_rules(name):
    from programs.tests.svmkit import program_bytes

    so = assert_sbpf_v0(program_bytes(name))
    assert so.section(".rel.dyn") is not None
