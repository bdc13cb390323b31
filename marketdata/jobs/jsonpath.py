"""The JSONPath subset of ``jsonParseTask.path`` (docs/marketdata.md, "JSON paths").

A path picks one value out of a JSON document by member names and array indices, in the
syntax of RFC 9535 (JSONPath) restricted to what a price lookup needs:

    $                 the whole document
    .name             a member whose name is an RFC 9535 shorthand name (letters, digits,
                      "_" and non-ASCII, not starting with a digit)
    ['any name']      any member name, quoted with ' or " (escapes: \\' \\" \\\\ \\/ \\b \\f
                      \\n \\r \\t \\u and four hex digits)
    [0]  [-1]         an array element; a negative index counts from the end

Wildcards (``*``), descendants (``..``), slices, unions and filters are refused when the
job is saved: each could select several values, and a job's step yields one number.
Written here (no dependency): the grammar is a dozen lines and its errors must say where.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_PATH_CHARS = 256
MAX_SEGMENTS = 32

Segment = str | int

_ESCAPES = {"'": "'", '"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_UNSUPPORTED = "wildcards, '..', slices, unions and filters are not supported (one value per path)"


class JsonPathSyntaxError(ValueError):
    """A path outside the subset; ``str()`` says what and at which character (0-based)."""


class JsonPathNoValue(LookupError):
    """The document has no value at the path; ``str()`` says which segment missed."""


@dataclass(frozen=True)
class JsonPath:
    text: str
    segments: tuple[Segment, ...]

    def find(self, document):
        """The value at this path in ``document`` (parsed JSON), or JsonPathNoValue."""
        value = document
        for number, segment in enumerate(self.segments):
            where = render(self.segments[:number]) or "$"
            if isinstance(segment, int):
                if not isinstance(value, list):
                    raise JsonPathNoValue(f"{where} is {json_type(value)}, not an array: no [{segment}]")
                if not -len(value) <= segment < len(value):
                    raise JsonPathNoValue(f"{where} has {len(value)} elements: no [{segment}]")
                value = value[segment]
            else:
                if not isinstance(value, dict):
                    raise JsonPathNoValue(f"{where} is {json_type(value)}, not an object: no member {segment!r}")
                if segment not in value:
                    raise JsonPathNoValue(f"{where} has no member {segment!r}")
                value = value[segment]
        return value


def json_type(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    return "a number"


def _shorthand_start(char: str) -> bool:
    return char == "_" or ("a" <= char.lower() <= "z") or ord(char) >= 0x80


def _shorthand_char(char: str) -> bool:
    return _shorthand_start(char) or char.isdigit() and char.isascii()


def parse(text: str) -> JsonPath:
    """``text`` as a JsonPath, or JsonPathSyntaxError naming the character."""
    if not isinstance(text, str) or not text:
        raise JsonPathSyntaxError("a JSON path is a non-empty string starting with '$'")
    if len(text) > MAX_PATH_CHARS:
        raise JsonPathSyntaxError(f"a JSON path has at most {MAX_PATH_CHARS} characters")
    if text[0] != "$":
        raise JsonPathSyntaxError("a JSON path starts with '$' (the document)")
    segments: list[Segment] = []
    i = 1
    while i < len(text):
        char = text[i]
        if char == ".":
            if text[i + 1:i + 2] in (".", "*"):
                raise JsonPathSyntaxError(f"at character {i}: {_UNSUPPORTED}")
            start = i + 1
            if start >= len(text) or not _shorthand_start(text[start]):
                raise JsonPathSyntaxError(f"at character {start}: a member name after '.' (use ['name'] for other names)")
            end = start + 1
            while end < len(text) and _shorthand_char(text[end]):
                end += 1
            segments.append(text[start:end])
            i = end
        elif char == "[":
            segment, i = _bracket(text, i + 1)
            segments.append(segment)
        else:
            raise JsonPathSyntaxError(f"at character {i}: expected '.' or '[', found {char!r}")
        if len(segments) > MAX_SEGMENTS:
            raise JsonPathSyntaxError(f"a JSON path has at most {MAX_SEGMENTS} segments")
    return JsonPath(text, tuple(segments))


def _bracket(text: str, i: int) -> tuple[Segment, int]:
    """The segment inside ``[...]`` starting at ``i`` and the index after ``]``."""
    if i >= len(text):
        raise JsonPathSyntaxError(f"at character {i}: unclosed '['")
    char = text[i]
    if char in "'\"":
        name, i = _quoted(text, i)
    elif char == "-" or char.isdigit() and char.isascii():
        end = i + 1
        while end < len(text) and text[end].isascii() and text[end].isdigit():
            end += 1
        digits = text[i:end]
        if digits in ("-", "-0") or (digits.lstrip("-").startswith("0") and digits.lstrip("-") != "0"):
            raise JsonPathSyntaxError(f"at character {i}: an index is an integer without leading zeros")
        name, i = int(digits), end
    else:
        raise JsonPathSyntaxError(f"at character {i}: {_UNSUPPORTED}" if char in "*?:," else f"at character {i}: expected a quoted name or an index")
    if i >= len(text) or text[i] != "]":
        found = repr(text[i]) if i < len(text) else "the end"
        raise JsonPathSyntaxError(f"at character {i}: expected ']', found {found}" + (f" ({_UNSUPPORTED})" if found in ("':'", "','") else ""))
    return name, i + 1


def _quoted(text: str, i: int) -> tuple[str, int]:
    quote = text[i]
    out = []
    i += 1
    while i < len(text):
        char = text[i]
        if char == quote:
            return "".join(out), i + 1
        if char == "\\":
            escape = text[i + 1:i + 2]
            if escape in _ESCAPES:
                out.append(_ESCAPES[escape])
                i += 2
                continue
            hex_digits = text[i + 2:i + 6]
            if escape == "u" and len(hex_digits) == 4 and all(c in "0123456789abcdefABCDEF" for c in hex_digits):
                out.append(chr(int(hex_digits, 16)))
                i += 6
                continue
            raise JsonPathSyntaxError(f"at character {i}: unknown escape in a quoted name")
        if ord(char) < 0x20:
            raise JsonPathSyntaxError(f"at character {i}: a control character in a quoted name")
        out.append(char)
        i += 1
    raise JsonPathSyntaxError(f"at character {i}: unclosed quoted name")


def render(segments) -> str:
    """Segments back as a path (for messages): shorthand where possible."""
    out = ["$"] if segments else []
    for segment in segments:
        if isinstance(segment, int):
            out.append(f"[{segment}]")
        elif segment and _shorthand_start(segment[0]) and all(_shorthand_char(c) for c in segment):
            out.append(f".{segment}")
        else:
            out.append("[" + repr(segment) + "]")
    return "".join(out)
