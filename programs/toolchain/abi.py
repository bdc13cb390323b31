"""Program ABIs defined once, in Python: account layouts, instructions (their data layout
and account list), custom errors and constants. The C side gets a header generated from
the same definition (``abi.h`` beside each program, written by build.py), so the program
and its Python client cannot drift apart; the programs' tests hold the two together
(Python encodes, the program decodes and acts; the program writes, Python decodes).

Layout rules (checked here, so the C structs need no packing): every field sits at an
offset that is a multiple of its alignment (u16 2, u32 and i32 4, u64, i64 and pubkeys 8), and a
struct's size is a multiple of its largest alignment. The loader hands a program its
instruction data and account data 8-byte aligned, so the C structs overlay them directly.

Standard library only: build.py runs with any python3.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

# type name → (size, alignment, C type, struct format or None for byte strings)
_SCALARS = {
    "u8": (1, 1, "u8", "B"),
    "u16": (2, 2, "u16", "H"),
    "u32": (4, 4, "u32", "I"),
    "u64": (8, 8, "u64", "Q"),
    "i32": (4, 4, "i32", "i"),
    "i64": (8, 8, "i64", "q"),
    "pubkey": (32, 8, "SolPubkey", None),
}
_ARRAY = re.compile(r"^u8\[(\d+)\]$")


class AbiError(ValueError):
    """A definition the generated C could not mirror exactly, or a value that does not fit."""


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # u8 u16 u32 u64 i32 i64 pubkey u8[N]
    offset: int
    size: int
    align: int

    @property
    def padding(self) -> bool:
        return self.name.startswith("_")


def _type_info(type_: str) -> tuple[int, int]:
    if type_ in _SCALARS:
        size, align, _, _ = _SCALARS[type_]
        return size, align
    m = _ARRAY.match(type_)
    if m:
        return int(m.group(1)), 1
    raise AbiError(f"unknown field type {type_}")


class Struct:
    """A fixed layout. ``fields``: ``[(name, type)]``; names starting with ``_`` are
    padding (zero when packed, ignored when unpacked)."""

    def __init__(self, name: str, fields: list[tuple[str, str]], doc: str = ""):
        self.name = name
        self.doc = doc
        self.fields: list[Field] = []
        offset = 0
        max_align = 1
        for fname, ftype in fields:
            size, align = _type_info(ftype)
            if offset % align:
                raise AbiError(f"{name}.{fname} ({ftype}) at offset {offset} is not {align}-aligned: add padding before it")
            self.fields.append(Field(fname, ftype, offset, size, align))
            offset += size
            max_align = max(max_align, align)
        if offset % max_align:
            raise AbiError(f"{name} is {offset} bytes, not a multiple of its alignment {max_align}: add tail padding")
        self.size = offset
        self.align = max_align
        self._by_name = {f.name: f for f in self.fields}

    def field(self, name: str) -> Field:
        return self._by_name[name]

    def offset(self, name: str) -> int:
        return self._by_name[name].offset

    def pack(self, **values) -> bytes:
        out = bytearray(self.size)
        names = {f.name for f in self.fields if not f.padding}
        unknown = set(values) - names
        if unknown:
            raise AbiError(f"{self.name} has no field {', '.join(sorted(unknown))}")
        for f in self.fields:
            if f.padding:
                continue
            if f.name not in values:
                raise AbiError(f"{self.name}.{f.name} is missing")
            out[f.offset:f.offset + f.size] = _encode(self.name, f, values[f.name])
        return bytes(out)

    def unpack(self, data: bytes, offset: int = 0) -> dict:
        if len(data) < offset + self.size:
            raise AbiError(f"{self.name} needs {self.size} bytes, got {len(data) - offset}")
        out = {}
        for f in self.fields:
            if f.padding:
                continue
            raw = bytes(data[offset + f.offset:offset + f.offset + f.size])
            fmt = _SCALARS.get(f.type, (0, 0, "", None))[3]
            out[f.name] = struct.unpack("<" + fmt, raw)[0] if fmt else raw
        return out

    def c_definition(self) -> str:
        lines = []
        if self.doc:
            lines.append(f"/* {self.doc} */")
        lines.append("typedef struct {")
        for f in self.fields:
            m = _ARRAY.match(f.type)
            if m:
                lines.append(f"  u8 {f.name}[{m.group(1)}];")
            else:
                lines.append(f"  {_SCALARS[f.type][2]} {f.name};")
        lines.append(f"}} {self.name};")
        lines.append(f'_Static_assert(sizeof({self.name}) == {self.size}, "{self.name} size");')
        for f in self.fields:
            lines.append(f'_Static_assert(offsetof({self.name}, {f.name}) == {f.offset}, "{self.name}.{f.name}");')
        return "\n".join(lines)


def _encode(struct_name: str, f: Field, value) -> bytes:
    m = _ARRAY.match(f.type)
    if f.type == "pubkey" or m:
        raw = bytes(value)
        if len(raw) != f.size:
            raise AbiError(f"{struct_name}.{f.name} takes {f.size} bytes, got {len(raw)}")
        return raw
    size, _, _, fmt = _SCALARS[f.type]
    if not isinstance(value, int):
        raise AbiError(f"{struct_name}.{f.name} takes an integer")
    low, high = (-(1 << (8 * size - 1)), 1 << (8 * size - 1)) if fmt.islower() else (0, 1 << (8 * size))
    if not low <= int(value) < high:
        raise AbiError(f"{struct_name}.{f.name} = {value} does not fit in {f.type}")
    return struct.pack("<" + fmt, int(value))


@dataclass(frozen=True)
class Account:
    name: str
    writable: bool = False
    signer: bool = False
    doc: str = ""


@dataclass(frozen=True)
class Instruction:
    """One instruction: its data layout (``args``, whose first field is the selector: a
    ``tag`` u8 or a ``discriminator`` u8[8]) and its accounts in order. ``rest`` documents
    accounts that may follow the fixed ones."""

    name: str
    selector: int | bytes
    args: Struct
    accounts: tuple[Account, ...]
    doc: str = ""
    rest: str = ""

    def encode(self, **values) -> bytes:
        first = self.args.fields[0].name
        return self.args.pack(**{first: self.selector}, **values)

    def decode(self, data: bytes) -> dict:
        if len(data) != self.args.size:
            raise AbiError(f"{self.name} data is {self.args.size} bytes, got {len(data)}")
        values = self.args.unpack(data)
        first = self.args.fields[0].name
        if values.pop(first) != self.selector:
            raise AbiError(f"not a {self.name} instruction")
        return values

    def account_index(self, name: str) -> int:
        return next(i for i, a in enumerate(self.accounts) if a.name == name)


@dataclass(frozen=True)
class Error:
    name: str
    code: int
    message: str


def _snake_upper(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


@dataclass
class ProgramAbi:
    name: str  # folder and .so name
    prefix: str  # C identifier prefix
    doc: str
    constants: dict[str, int | bytes] = field(default_factory=dict)
    structs: list[Struct] = field(default_factory=list)
    instructions: list[Instruction] = field(default_factory=list)
    errors: list[Error] = field(default_factory=list)

    def __post_init__(self) -> None:
        codes = [e.code for e in self.errors]
        if len(set(codes)) != len(codes):
            raise AbiError(f"{self.name}: duplicate error codes")
        if any(not 0 < c < 1 << 32 for c in codes):
            raise AbiError(f"{self.name}: custom error codes are 1..2^32-1")
        selectors = [i.selector for i in self.instructions]
        if len(set(selectors)) != len(selectors):
            raise AbiError(f"{self.name}: duplicate instruction selectors")

    def error(self, name: str) -> Error:
        return next(e for e in self.errors if e.name == name)

    def error_by_code(self, code: int) -> Error | None:
        return next((e for e in self.errors if e.code == code), None)

    def instruction(self, name: str) -> Instruction:
        return next(i for i in self.instructions if i.name == name)

    def c_header(self) -> str:
        p = self.prefix
        out = [
            f"/* Generated from programs/{self.name}/abi.py by programs/toolchain/build.py: do not edit. */",
            f"/* {self.doc} */",
            f"#ifndef {p}_ABI_H",
            f"#define {p}_ABI_H",
            '#include "sbf.h"',
            "",
            "/* --- constants --- */",
        ]
        for cname, value in self.constants.items():
            if isinstance(value, bytes):
                body = ", ".join(f"0x{b:02x}" for b in value)
                out.append(f"static const u8 {p}_{cname}[{len(value)}] __attribute__((aligned(8), unused)) = {{{body}}};")
                out.append(f"#define {p}_{cname}_LEN {len(value)}")
            else:
                out.append(f"#define {p}_{cname} {value}ULL")
        out += ["", "/* --- account layouts --- */"]
        for s in self.structs:
            out += [s.c_definition(), ""]
        out.append("/* --- instructions: selector, data layout, accounts in order --- */")
        for ix in self.instructions:
            key = _snake_upper(ix.name)
            if isinstance(ix.selector, bytes):
                body = ", ".join(f"0x{b:02x}" for b in ix.selector)
                out.append(f"static const u8 {p}_IX_{key}[8] __attribute__((aligned(8), unused)) = {{{body}}};")
            else:
                out.append(f"#define {p}_IX_{key} {ix.selector}")
            out.append(ix.args.c_definition())
            names = [f"  {p}_{key}_{a.name.upper()} = {i}," for i, a in enumerate(ix.accounts)]
            out += ["enum {", *names, f"  {p}_{key}_ACCOUNTS = {len(ix.accounts)},", "};", ""]
        out.append("/* --- custom errors (Custom(code)) --- */")
        for e in self.errors:
            out.append(f"#define {p}_ERR_{_snake_upper(e.name)} {e.code} /* {e.message} */")
        out += ["", f"#endif /* {p}_ABI_H */", ""]
        return "\n".join(out)
