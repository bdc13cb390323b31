"""Bitcoin-alphabet base58, as Solana uses for keys and signatures (no checksum): the
``base58`` library, held to what an address or a signature may be.

The library's decoder strips trailing whitespace before decoding, so "abc " would decode as
"abc": an address with a stray space would be taken for another spelling of a valid one.
Here every character must be of the alphabet (ValueError otherwise), as before."""

from __future__ import annotations

import base58 as _base58


def b58encode(data: bytes) -> str:
    return _base58.b58encode(data).decode("ascii")


def b58decode(text: str) -> bytes:
    if text != text.rstrip():  # the library would strip it (above)
        raise ValueError(f"invalid base58 character {text[len(text.rstrip()):][:1]!r}")
    try:
        return _base58.b58decode(text)
    except UnicodeEncodeError as exc:  # a character outside ASCII: not of the alphabet either
        raise ValueError(f"invalid base58 character {text[exc.start]!r}") from None
