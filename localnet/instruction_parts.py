"""What every `jsonParsed` instruction parser shares (instructions.py dispatches to the
System, ATA, Memo, lookup-table and loader parsers it holds, and to the token parsers of
token_instructions.py and token_extensions.py): the refusal that renders an instruction
raw, the account-count check and the ``{"type", "info"}`` shape. Here, below all of them,
so the token parsers need not import the dispatcher that calls them."""

from __future__ import annotations


class NotParsable(Exception):
    """The reference's InstructionNotParsable / InstructionKeyMismatch: render raw."""


def need(accounts: list[str], count: int) -> None:
    """check_num_accounts: fewer accounts than the variant names is a key mismatch."""
    if len(accounts) < count:
        raise NotParsable


def typed(kind: str, info: dict) -> dict:
    return {"type": kind, "info": info}
