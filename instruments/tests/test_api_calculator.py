"""Token Extensions Calculator: its size equals, byte for byte, the mint the service
creates for the same extensions and metadata (swept over combinations on the local node)."""

from __future__ import annotations

import random

import pytest
from solders.pubkey import Pubkey

from conftest import assert_error
from instruments.tests.test_api_instruments import BASE, BOND, _b64, created, localnet_airdrop_funding, wallet  # noqa: F401 (autouse fixture)

CALC = BASE + "/token-extensions-calculator"
pytestmark = pytest.mark.chain


def _fields(extension: str, authority: dict) -> dict:
    return {
        "PERMANENT_DELEGATE": {"permanentDelegateAuthority": authority},
        "MINT_CLOSE_AUTHORITY": {"closingAuthority": authority},
        "PAUSABLE": {"pausableAuthority": authority},
        "DEFAULT_ACCOUNT_STATE": {"defaultPositionState": "INITIALIZED"},
        "SCALED_UI_AMOUNT": {"scaledUiAmountMultiplier": 3.0},
        "TRANSFER_HOOK": {"transferHookAuthority": authority},
        "CONFIDENTIAL_TRANSFER": {"confidentialTransfer": {"autoApproveNewPositions": False}},
        "CONFIDENTIAL_MINT_BURN": {"confidentialTransfer": {}, "confidentialMintBurn": {"supplyElgamalPubkey": _b64(32), "decryptableSupply": _b64(36)}},
    }[extension]


FIXED = ["PERMANENT_DELEGATE", "MINT_CLOSE_AUTHORITY", "PAUSABLE", "DEFAULT_ACCOUNT_STATE", "SCALED_UI_AMOUNT", "TRANSFER_HOOK", "CONFIDENTIAL_TRANSFER", "CONFIDENTIAL_MINT_BURN"]
_rng = random.Random(2026)
COMBOS = [tuple(sorted(_rng.sample(FIXED, k))) for k in (0, 1, 2, 2, 3, 3, 4, 5)]
METADATA = [None, {"name": "Bond", "symbol": "B"}, {"name": "Ünïcode ✓ name", "symbol": "UNI", "uri": "https://x.example/m.json", "simpleCustomMetadata": {"isin": "US0000000001", "k": ""}}]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("combo, metadata", [(c, METADATA[i % len(METADATA)]) for i, c in enumerate(COMBOS)], ids=lambda v: "+".join(v) if isinstance(v, tuple) else ("meta" if v else "nometa"))
def test_calculator_size_equals_the_created_mint(api, celery_worker_process, chain, combo, metadata):
    authority = wallet(api)
    item = {**BOND, "mintAuthority": authority}
    for extension in combo:
        item.update(_fields(extension, authority))
    if metadata:
        item["onchainData"] = metadata
    extensions = set(combo) | ({"CONFIDENTIAL_TRANSFER"} if "CONFIDENTIAL_MINT_BURN" in combo else set()) | ({"METADATA_POINTER", "TOKEN_METADATA"} if metadata else set())
    body = created(api, item)
    info = chain.get_account_info(Pubkey.from_string(body["newFinancialInstrument"]["onchainId"])).value
    calc = api.call("post", CALC, {"extensions": sorted(extensions), **({"metadata": metadata} if metadata else {})})
    assert calc.status_code == 200, calc.json()
    assert calc.json()["mintAccountSize"] == len(info.data)
    rent = chain.get_minimum_balance_for_rent_exemption(len(info.data)).value
    assert calc.json()["estimatedRent"] == {"amount": rent / 10**9, "lamports": rent} and calc.json()["estimatedRentAmount"] == rent / 10**9
    assert info.lamports >= rent


@pytest.mark.django_db
def test_calculator_errors(api, localnet_url):
    assert api.call("post", CALC, {"extensions": []}).json()["mintAccountSize"] == 82
    assert_error(api.call("post", CALC, {"extensions": ["TOKEN_METADATA"]}), 400, "EXTENSION_REQUIRES", "extensions")
    assert_error(api.call("post", CALC, {"extensions": ["CONFIDENTIAL_MINT_BURN"]}), 400, "EXTENSION_REQUIRES")
    assert_error(api.call("post", CALC, {"extensions": ["PAUSABLE"], "metadata": {"name": "x"}}), 400, "EXTENSION_REQUIRES", "metadata")
    assert_error(api.call("post", CALC, {"extensions": ["INTEREST_BEARING"]}), 400, None, "extensions[0]")
    assert_error(api.call("post", CALC, {"extensions": "PAUSABLE"}), 400, None, "extensions")
    assert_error(api.call("post", CALC, {}), 400, None, "extensions")
    assert_error(api.call("post", CALC, {"extensions": ["METADATA_POINTER", "TOKEN_METADATA"], "metadata": {"simpleCustomMetadata": {"k": 1}}}), 400)


def test_responses_match_the_documented_schema():
    from types import SimpleNamespace

    from instruments import render
    from instruments.serializers import InstrumentOutput

    row = SimpleNamespace(
        address="M", last_tx_signature=None, last_transaction_at=None, creation_tx_signature=None, creation_transaction_at=None, offchain_id="00000000-0000-0000-0000-000000000001",
        al_id="ALFICBD00000001", al_category="FIXED_INCOME", al_type="CORPORATE_BOND", last_tx_offchain=None, creation_tx_offchain=None, mint_account_id=None, version="SPL",
        name="", symbol="", uri="", onchain_metadata={}, decimals=0, paused=None, scaled_ui_multiplier=None, extensions=[], default_position_state="INITIALIZED", supply_onchain=0,
        offchain_data={}, transfer_hook_program_address="", transfer_hook_program_offchain_id=None, status="ACTIVE", managed=True, was_onchain_already=False,
        shared_across_tenants=False, comments="", tenant_external_id="T", data_length=82,
        **{f"{c}_authority_id": None for c in ("mint", "update", "freeze", "permanent_delegate", "closing", "pausable", "scaled_ui_amount", "transfer_hook", "confidential_transfer", "confidential_mint_burn")},
        **{f"{c}_authority_address": "" for c in ("mint", "update", "freeze", "permanent_delegate", "closing", "pausable", "scaled_ui_amount", "transfer_hook", "confidential_transfer", "confidential_mint_burn")},
    )
    assert set(render.instrument_detailed(row, {})) == set(InstrumentOutput().fields)
