"""API-driven helpers for positions tests: wallets, instruments and positions created
through the real endpoints on the local node (confirmed with ?wait=confirmed)."""

from __future__ import annotations

from solders.keypair import Keypair

BASE = "/api/v1/positions"


def wallet(api, keypair: Keypair | None = None, *, managed: bool = True, address: str | None = None, **item) -> dict:
    """A WALLET account: managed (generated, or ``keypair`` imported so the test can sign
    directly), or not managed at ``address``. Returns its lookup ``{offchainId}``."""
    data = {"managed": managed, "offchainReferences": {"type": "WALLET"}, **item}
    if keypair is not None:
        data["privateKeyDetails"] = {"privateKey": str(keypair)}
    if not managed:
        data["onchainId"] = address
        data["alreadyOnchain"] = True
        data["skipBlockchainExistenceVerification"] = True
    response = api.call("post", "/api/v1/accounts", {"itemData": data})
    assert response.status_code == 201, response.json()
    return {"offchainId": response.json()["newAccount"]["offchainId"]}


def instrument(api, *, authority: dict, version: str = "SPL", decimals: int = 2, kind: str = "CORPORATE_BOND", **extra) -> dict:
    """A confirmed instrument whose mint and freeze authority is ``authority``."""
    item = {"version": version, "offchainReferences": {"newAlId": {"financialInstrumentType": kind}}, "mintAuthority": authority,
            "freezeAuthority": authority, "onchainData": {"name": "Test", "symbol": "TST", "decimals": decimals}, **extra}
    response = api.call("post", "/api/v1/financial-instruments?wait=confirmed", {"itemData": item})
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED"), body
    return {"offchainId": body["newFinancialInstrument"]["offchainId"], "onchainId": body["newFinancialInstrument"]["onchainId"]}


def initialize(api, owner: dict, instrument_lookup: dict, *, wait: bool = True, request_id=None, **item):
    return api.call("post", BASE + ("?wait=confirmed" if wait else ""), {"itemData": {"owner": owner, "financialInstrument": instrument_lookup, **item}}, request_id=request_id)


def position(api, owner: dict, instrument_lookup: dict, **item) -> dict:
    response = initialize(api, owner, instrument_lookup, **item)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED"), body
    return body["newPosition"]


def details(api, lookup: dict):
    return api.call("post", BASE + "/single", {"itemData": lookup})
