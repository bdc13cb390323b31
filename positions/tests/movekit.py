"""API-driven helpers for the movement tests (Mint, Burn, Transfer, Trade) on the local
node; chain balances are read with an unmodified solana-py client."""

from __future__ import annotations

from solders.pubkey import Pubkey

BASE = "/api/v1/positions"


def _call(api, operation: str, item: dict, *, wait: bool, request_id=None, **envelope):
    return api.call("post", f"{BASE}/{operation}" + ("?wait=confirmed" if wait else ""), {"itemData": item, **envelope}, request_id=request_id)


def mint(api, position: dict, value: dict, *, wait: bool = True, request_id=None, **item):
    return _call(api, "mint", {"position": position, "value": value, **item}, wait=wait, request_id=request_id)


def burn(api, position: dict, value: dict, *, wait: bool = True, request_id=None, **item):
    return _call(api, "burn", {"position": position, "value": value, **item}, wait=wait, request_id=request_id)


def transfer(api, source: dict, destination: dict, value: dict, *, wait: bool = True, request_id=None, **item):
    return _call(api, "transfer", {"source": source, "destination": destination, "value": value, **item}, wait=wait, request_id=request_id)


def trade(api, legs: list[dict], *, wait: bool = True, request_id=None):
    return _call(api, "trade", {"legs": legs}, wait=wait, request_id=request_id)


def settled(response, status: int = 200) -> dict:
    """The body of a movement answered ``status`` whose transaction confirmed."""
    assert response.status_code == status, (response.status_code, response.json())
    body = response.json()
    assert body["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED"), body
    return body


def balance(chain, address: str) -> int:
    """Base units of a token account, as the node reports them."""
    return int(chain.get_token_account_balance(Pubkey.from_string(address)).value.amount)


def at(lookup: dict) -> dict:
    """A Position lookup by the position's identifiers."""
    return {"position": {"offchainId": lookup["offchainId"]}}
