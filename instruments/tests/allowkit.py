"""What the allow-list tests share: an allow-list hook instrument, its list through the
API and decoded from the account's bytes with the layout of docs/programs.md."""

from __future__ import annotations

import struct

from solders.pubkey import Pubkey

import programs

HOOK = Pubkey.from_string(programs.LOCALNET_PROGRAM_IDS["allowlist_hook"])
BASE = "/api/v1/financial-instruments/allow-list"
HEADER = 112  # kind, version, bump, validation_bump, count u32 @4, capacity u32 @8, pad, mint @16, authority @48, validation @80


def allow_list_address(mint: str) -> Pubkey:
    return Pubkey.find_program_address([b"allow-list", bytes(Pubkey.from_string(mint))], HOOK)[0]


def decoded_from_bytes(chain, mint: str) -> dict:
    """The allow-list account read from the node and decoded by hand from the documented layout."""
    data = bytes(chain.get_account_info(allow_list_address(mint)).value.data)
    kind, version, _, _, count, capacity = struct.unpack_from("<BBBBII", data, 0)
    assert (kind, version) == (1, 1)
    owners = [str(Pubkey.from_bytes(data[HEADER + 32 * i:HEADER + 32 * (i + 1)])) for i in range(count)]
    return {"capacity": capacity, "mint": str(Pubkey.from_bytes(data[16:48])), "authority": str(Pubkey.from_bytes(data[48:80])), "owners": owners}


def hooked_instrument(api, *, authority: dict, **extra) -> dict:
    from positions.tests.kit import instrument

    return instrument(api, authority=authority, version="TOKEN_2022", transferHookAuthority=authority, transferHookProgram={"onchainId": str(HOOK), "offPlatform": True}, **extra)


def change(api, action: str, instrument: dict, owners: list[dict], *, wait: bool = True, request_id=None, **item):
    return api.call("patch", f"{BASE}/{action}" + ("?wait=confirmed" if wait else ""), {"itemData": {"financialInstrument": instrument, "owners": owners, **item}}, request_id=request_id)


def landed(response, status: int = 200) -> dict:
    assert response.status_code == status, (response.status_code, response.json())
    body = response.json()
    results = body.get("svmTransactions") or [body.get("svmTransaction")]
    assert all(r["status"] in ("CONFIRMED", "FINALIZED") for r in results), body
    return body


def validation_address(mint: str) -> Pubkey:
    return Pubkey.find_program_address([b"extra-account-metas", bytes(Pubkey.from_string(mint))], HOOK)[0]


def fetch_response(api, instrument: dict, **query):
    return api.call("post", f"{BASE}/single", {"itemData": {"financialInstrument": instrument}, **({"itemQuery": query} if query else {})})


def fetch(api, instrument: dict, **query) -> dict:
    response = fetch_response(api, instrument, **query)
    assert response.status_code == 200, response.json()
    return response.json()


def address_of(api, lookup: dict) -> str:
    return api.call("post", "/api/v1/accounts/single", {"itemData": lookup}).json()["onchain"]["id"]
