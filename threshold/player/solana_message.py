"""What a player is asked to sign: a Solana transaction message, decoded without any Solana
library (legacy and v0 formats), so the external player can show it and refuse what it does
not expect before signing (RFC 9591 section 7.7: a player must not be a signing oracle).

``decode`` returns the message's parts; ``describe`` a few lines for people, naming the
System, SPL Token / Token-2022, Associated Token Account and Compute Budget instructions
(amounts, accounts), and any other program by its address and data size.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..messages import base58

_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


class MessageDecodeError(ValueError):
    """Not a Solana transaction message."""


def b58decode(text: str) -> bytes:
    n = 0
    for char in text:
        n = n * 58 + _ALPHABET.index(char)
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return b"\0" * (len(text) - len(text.lstrip("1"))) + raw


SYSTEM = "11111111111111111111111111111111"
TOKEN = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
TOKEN_2022 = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"
ASSOCIATED_TOKEN = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL"
COMPUTE_BUDGET = "ComputeBudget111111111111111111111111111111"


@dataclass
class Instruction:
    program: str
    accounts: list[str]
    data: bytes


@dataclass
class Message:
    version: str  # "legacy" or "v0"
    required_signatures: int
    readonly_signed: int
    readonly_unsigned: int
    account_keys: list[str]
    recent_blockhash: str
    instructions: list[Instruction] = field(default_factory=list)
    lookups: list[tuple[str, list[int], list[int]]] = field(default_factory=list)

    @property
    def signers(self) -> list[str]:
        return self.account_keys[: self.required_signatures]

    @property
    def fee_payer(self) -> str:
        return self.account_keys[0]


class _Reader:
    def __init__(self, raw: bytes):
        self.raw, self.at = raw, 0

    def take(self, size: int) -> bytes:
        if self.at + size > len(self.raw):
            raise MessageDecodeError("the message ends early")
        out = self.raw[self.at:self.at + size]
        self.at += size
        return out

    def byte(self) -> int:
        return self.take(1)[0]

    def compact_u16(self) -> int:
        value = 0
        for shift in (0, 7, 14):
            b = self.byte()
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
        raise MessageDecodeError("a compact-u16 is longer than 3 bytes")


def decode(raw: bytes) -> Message:
    r = _Reader(bytes(raw))
    version = "legacy"
    if raw and raw[0] & 0x80:
        number = r.byte() & 0x7F
        if number != 0:
            raise MessageDecodeError(f"message version {number} is unknown")
        version = "v0"
    header = (r.byte(), r.byte(), r.byte())
    keys = [base58(r.take(32)) for _ in range(r.compact_u16())]
    if not keys or header[0] == 0 or header[0] > len(keys):
        raise MessageDecodeError("the header does not fit the account keys")
    blockhash = base58(r.take(32))
    raw_instructions = []
    for _ in range(r.compact_u16()):
        program = r.byte()
        accounts = list(r.take(r.compact_u16()))
        data = r.take(r.compact_u16())
        raw_instructions.append((program, accounts, data))
    lookups = []
    if version == "v0":
        for _ in range(r.compact_u16()):
            table = base58(r.take(32))
            writable = list(r.take(r.compact_u16()))
            readonly = list(r.take(r.compact_u16()))
            lookups.append((table, writable, readonly))
    if r.at != len(r.raw):
        raise MessageDecodeError("bytes follow the message")
    loaded = [f"{table}[{i}]" for table, writable, _ in lookups for i in writable] + [f"{table}[{i}]" for table, _, readonly in lookups for i in readonly]
    every = keys + loaded

    def name(index: int) -> str:
        if index >= len(every):
            raise MessageDecodeError("an instruction names an account the message does not have")
        return every[index]

    instructions = [Instruction(name(p), [name(a) for a in accounts], data) for p, accounts, data in raw_instructions]
    return Message(version, *header, keys, blockhash, instructions, lookups)


def _u64(data: bytes, at: int) -> int:
    return int.from_bytes(data[at:at + 8], "little")


def _lamports(n: int) -> str:
    return f"{n} lamports ({n / 1e9:.9f} SOL)"


def describe_instruction(ix: Instruction) -> str:
    d, a = ix.data, ix.accounts
    try:
        if ix.program == SYSTEM and len(d) >= 4:
            kind = int.from_bytes(d[:4], "little")
            if kind == 2 and len(d) >= 12:
                return f"System transfer: {_lamports(_u64(d, 4))} from {a[0]} to {a[1]}"
            if kind == 0 and len(d) >= 52:
                return f"System create account {a[1]} funded by {a[0]}: {_lamports(_u64(d, 4))}, {_u64(d, 12)} bytes, owner {base58(d[20:52])}"
            if kind == 4:
                return f"System advance durable nonce {a[0]} (authority {a[2]})"
        if ix.program in (TOKEN, TOKEN_2022) and d:
            which = "Token-2022" if ix.program == TOKEN_2022 else "Token"
            if d[0] == 3 and len(d) >= 9:
                return f"{which} transfer: {_u64(d, 1)} base units from {a[0]} to {a[1]} (owner {a[2]})"
            if d[0] == 12 and len(d) >= 10:
                return f"{which} transferChecked: {_u64(d, 1)} base units ({d[9]} decimals) of mint {a[1]} from {a[0]} to {a[2]} (owner {a[3]})"
            if d[0] == 7 and len(d) >= 9:
                return f"{which} mintTo: {_u64(d, 1)} base units of mint {a[0]} to {a[1]}"
            if d[0] == 8 and len(d) >= 9:
                return f"{which} burn: {_u64(d, 1)} base units from {a[0]}"
            if d[0] == 9:
                return f"{which} close account {a[0]}, rent to {a[1]}"
            return f"{which} instruction {d[0]} on {', '.join(a)}"
        if ix.program == ASSOCIATED_TOKEN:
            return f"Associated token account for {a[2]} of mint {a[3]} (payer {a[0]})"
        if ix.program == COMPUTE_BUDGET and d:
            if d[0] == 2 and len(d) >= 5:
                return f"Compute unit limit {int.from_bytes(d[1:5], 'little')}"
            if d[0] == 3 and len(d) >= 9:
                return f"Compute unit price {_u64(d, 1)} micro-lamports"
    except IndexError:
        pass
    return f"Program {ix.program}: {len(d)} bytes of data, accounts {', '.join(a) or 'none'}"


def describe(msg: Message) -> str:
    durable = bool(msg.instructions) and msg.instructions[0].program == SYSTEM and msg.instructions[0].data[:4] == (4).to_bytes(4, "little")
    lines = [
        f"Solana {msg.version} message: fee payer {msg.fee_payer}; signers {', '.join(msg.signers)}",
        f"Lifetime: {'durable nonce ' + msg.instructions[0].accounts[0] + ' (value ' + msg.recent_blockhash + ')' if durable else 'recent blockhash ' + msg.recent_blockhash}",
    ]
    lines += [f"  {i + 1}. {describe_instruction(ix)}" for i, ix in enumerate(msg.instructions)]
    return "\n".join(lines)


def check_signer(msg: Message, address: str) -> None:
    """Refuse to sign a message that does not need ``address``'s signature."""
    if address not in msg.signers:
        raise MessageDecodeError(f"{address} is not a signer of this message (its signers: {', '.join(msg.signers)})")
