"""Parameter checks and errors shared by the JSON-RPC and PubSub methods."""

from __future__ import annotations

from solders.pubkey import Pubkey
from solders.signature import Signature

from .errors import RpcError
from .node import COMMITMENTS


class NotYet(Exception):
    """The answer depends on the block of the slot still open: the server holds the request
    until the slot ends and runs it again with ``params`` (docs/localnet.md, Blocks)."""

    def __init__(self, params: list):
        super().__init__("waiting for the open slot to end")
        self.params = params


def bad(message: str) -> RpcError:
    return RpcError(-32602, f"Invalid params: {message}")


def pubkey(value, what: str = "pubkey") -> Pubkey:
    try:
        return Pubkey.from_string(value)
    except (ValueError, TypeError):
        raise bad(f"invalid {what} {value!r}")


def param(params: list, index: int, default=None):
    return params[index] if len(params) > index and params[index] is not None else default


def signature(value, name: str = "signature") -> str:
    if not isinstance(value, str):
        raise RpcError(-32602, f"Invalid param: {name} must be a base-58 string")
    try:
        Signature.from_string(value)
    except ValueError as exc:
        # Agave's verify_signature: "Invalid param: {ParseSignatureError:?}" — WrongSize
        # (over 88 characters, or not 64 bytes decoded) or Invalid (not base 58)
        raise RpcError(-32602, "Invalid param: " + ("WrongSize" if "wrong size" in str(exc) else "Invalid"))
    return value


def config(params: list, index: int) -> dict:
    cfg = param(params, index, {})
    if not isinstance(cfg, dict):
        raise bad("configuration must be an object")
    return cfg


def commitment(cfg: dict) -> str:
    """The commitment a request asks for; `finalized` when it names none, as a validator
    defaults."""
    level = cfg.get("commitment")
    if level is None:
        return "finalized"
    if level not in COMMITMENTS:
        raise bad(f"unknown variant `{level}`, expected one of `processed`, `confirmed`, `finalized`")
    return level


def at_least_confirmed(level: str) -> None:
    if level == "processed":
        raise RpcError(-32602, "Method does not support commitment below `confirmed`")


def min_context(cfg: dict, slot: int) -> None:
    wanted = cfg.get("minContextSlot")
    if wanted is None:
        return
    if not isinstance(wanted, int) or isinstance(wanted, bool) or wanted < 0:
        raise bad("minContextSlot must be a slot number")
    if wanted > slot:
        raise RpcError(-32016, "Minimum context slot has not been reached", {"contextSlot": slot})


def slot_number(value, name: str = "slot") -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise bad(f"{name} must be an unsigned integer")
    return value
