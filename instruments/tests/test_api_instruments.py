"""Financial instruments API on the local node: create (every extension), read, update,
pause, close; mints are read back over RPC and decoded independently of the encoders."""

from __future__ import annotations

import base64
import uuid

import pytest
from solana.rpc.core import RPCException
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, create_account
from spl.token.instructions import BurnCheckedParams, MintToCheckedParams, TransferCheckedParams, burn_checked, create_associated_token_account, get_associated_token_address, mint_to_checked, transfer_checked

from conftest import assert_error
from instruments.models import AlIdSequence, FinancialInstrument, InstrumentStatus
from instruments.token2022 import instructions as t22
from instruments.token2022.constants import TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID, ExtensionType
from instruments.token2022.sizes import mint_size, mint_space
from instruments.token2022.tlv import decode_mint
from instruments.webhooks import opened
from transactions.tests.chainkit import funded, send

BASE = "/api/v1/financial-instruments"


@pytest.fixture(autouse=True)
def localnet_airdrop_funding(settings):
    """Seeds and rent with no funding account are paid by the localnet airdrop funder
    (opt-in, docs/accounts.md "Who pays"); tests of the refusal turn it off."""
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True
pytestmark = pytest.mark.chain
BOND = {"offchainReferences": {"newAlId": {"financialInstrumentType": "CORPORATE_BOND"}}}


def wallet(api, keypair: Keypair | None = None, **refs) -> dict:
    """A managed account to act as an authority; with ``keypair`` its key is imported so the
    test can sign with it directly."""
    item = {"managed": True, "offchainReferences": {"type": "WALLET", **refs}}
    if keypair is not None:
        item["privateKeyDetails"] = {"privateKey": str(keypair)}
    response = api.call("post", "/api/v1/accounts", {"itemData": item})
    assert response.status_code == 201, response.json()
    return {"offchainId": response.json()["newAccount"]["offchainId"]}


def create(api, item: dict, *, wait: bool = True, request_id=None):
    return api.call("post", BASE + ("?wait=confirmed" if wait else ""), {"itemData": item}, request_id=request_id)


def created(api, item: dict) -> dict:
    response = create(api, item)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED"), body
    return body


def onchain(chain, address: str):
    info = chain.get_account_info(Pubkey.from_string(address)).value
    return info, decode_mint(bytes(info.data))


def details(api, lookup: dict):
    return api.call("post", BASE + "/single", {"itemData": lookup})


# --- Create: every extension ------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_create_token2022_with_metadata_pointer_pausable_delegate_and_close_authority(api, celery_worker_process, chain):
    authority = wallet(api)
    body = created(api, {
        **BOND, "version": "TOKEN_2022", "mintAuthority": authority, "freezeAuthority": authority, "permanentDelegateAuthority": authority,
        "closingAuthority": authority, "pausableAuthority": authority,
        "onchainData": {"name": "Acme Bond 2030", "symbol": "ACB30", "decimals": 2, "uri": "https://acme.example/acb30.json", "simpleCustomMetadata": {"isin": "US0000000001"}},
        "offchainData": {"description": "5y senior unsecured", "logo": {"copyFromUri": "https://acme.example/logo.png", "type": "LOGO"}},
    })
    mint = body["newFinancialInstrument"]["onchainId"]
    info, decoded = onchain(chain, mint)
    assert info.owner == TOKEN_2022_PROGRAM_ID and decoded.decimals == 2 and decoded.supply == 0
    address = FinancialInstrument.unscoped.get(address=mint).mint_authority_address
    assert decoded.mint_authority == decoded.freeze_authority == address
    ext = decoded.extensions
    assert ext["METADATA_POINTER"] == {"authority": address, "metadataAddress": mint}
    assert ext["TOKEN_METADATA"]["name"] == "Acme Bond 2030" and ext["TOKEN_METADATA"]["additionalMetadata"] == {"isin": "US0000000001"}
    assert ext["PAUSABLE"] == {"authority": address, "paused": False}
    assert ext["PERMANENT_DELEGATE"] == {"delegate": address} and ext["MINT_CLOSE_AUTHORITY"] == {"closeAuthority": address}
    assert set(ext) == {"METADATA_POINTER", "TOKEN_METADATA", "PAUSABLE", "PERMANENT_DELEGATE", "MINT_CLOSE_AUTHORITY"}

    shown = details(api, {"onchainId": mint}).json()
    assert shown["version"] == "TOKEN_2022" and shown["status"] == "ACTIVE" and shown["alId"].startswith("ALFICBD")
    assert shown["onchainData"] == {"symbol": "ACB30", "name": "Acme Bond 2030", "decimals": 2, "uri": "https://acme.example/acb30.json", "simpleCustomMetadata": {"isin": "US0000000001"}}
    assert shown["offchainData"]["description"] == "5y senior unsecured"
    for role in ("mintAuthority", "updateAuthority", "freezeAuthority", "permanentDelegateAuthority", "closingAuthority", "pausableAuthority"):
        assert shown[role]["onchain"]["id"] == address and shown[role]["offchain"]["id"] == authority["offchainId"]
    assert shown["scaledUiAmountAuthority"] is None and shown["paused"] is False
    assert shown["mintAccount"]["onchain"]["id"] == mint and shown["mintAccount"]["offchain"]["type"] == "ASSET_TOKEN"
    assert shown["mintAccountSize"] == len(info.data) and shown["defaultPositionState"] == "INITIALIZED"
    assert shown["onchain"]["creationTransactionId"] == body["svmTransaction"]["onchainId"]


def _b64(n: int) -> str:
    return base64.b64encode(bytes(range(1, n + 1))).decode()


# (request fields given an authority lookup, extension name on chain, its expected decoded value given the authority address)
EXTENSION_CASES = {
    "METADATA_POINTER+TOKEN_METADATA": (lambda a: {"onchainData": {"name": "N", "symbol": "S"}}, "TOKEN_METADATA", lambda addr, mint: {"updateAuthority": addr, "mint": mint, "name": "N", "symbol": "S", "uri": "", "additionalMetadata": {}}),
    "DEFAULT_ACCOUNT_STATE": (lambda a: {"defaultPositionState": "FROZEN", "freezeAuthority": a}, "DEFAULT_ACCOUNT_STATE", lambda addr, mint: {"state": "FROZEN"}),
    "PERMANENT_DELEGATE": (lambda a: {"permanentDelegateAuthority": a}, "PERMANENT_DELEGATE", lambda addr, mint: {"delegate": addr}),
    "MINT_CLOSE_AUTHORITY": (lambda a: {"closingAuthority": a}, "MINT_CLOSE_AUTHORITY", lambda addr, mint: {"closeAuthority": addr}),
    "PAUSABLE": (lambda a: {"pausableAuthority": a}, "PAUSABLE", lambda addr, mint: {"authority": addr, "paused": False}),
    "SCALED_UI_AMOUNT": (lambda a: {"scaledUiAmountAuthority": a, "scaledUiAmountMultiplier": 1.25}, "SCALED_UI_AMOUNT",
                         lambda addr, mint: {"authority": addr, "multiplier": 1.25, "newMultiplierEffectiveTimestamp": 0, "newMultiplier": 1.25}),
    "TRANSFER_HOOK": (lambda a: {"transferHookAuthority": a, "transferHookProgram": {"onchainId": str(TOKEN_PROGRAM_ID), "offPlatform": True}}, "TRANSFER_HOOK", lambda addr, mint: {"authority": addr, "programId": str(TOKEN_PROGRAM_ID)}),
    "CONFIDENTIAL_TRANSFER": (lambda a: {"confidentialTransferAuthority": a, "confidentialTransfer": {"autoApproveNewPositions": True}}, "CONFIDENTIAL_TRANSFER_MINT",
                              lambda addr, mint: {"authority": addr, "autoApproveNewAccounts": True, "auditorElgamalPubkey": None}),
    "CONFIDENTIAL_MINT_BURN": (lambda a: {"confidentialTransfer": {}, "confidentialMintBurn": {"supplyElgamalPubkey": _b64(32), "decryptableSupply": _b64(36)}},
                               "CONFIDENTIAL_MINT_BURN", lambda addr, mint: {"supplyElgamalPubkey": bytes(range(1, 33)).hex()}),
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("case", list(EXTENSION_CASES))
def test_each_extension_is_created_as_requested(api, celery_worker_process, chain, case):
    fields, name, expected = EXTENSION_CASES[case]
    authority = wallet(api)
    body = created(api, {**BOND, "mintAuthority": authority, **fields(authority)})
    mint = body["newFinancialInstrument"]["onchainId"]
    info, decoded = onchain(chain, mint)
    address = FinancialInstrument.unscoped.get(address=mint).mint_authority_address
    assert decoded.extensions[name] == expected(address, mint)
    shown = details(api, {"onchainId": mint}).json()
    assert shown["mintAccountSize"] == len(info.data)
    calc = api.call("post", BASE + "/token-extensions-calculator", {"extensions": shown["extensions"], "metadata": {"name": "N", "symbol": "S"} if "TOKEN_METADATA" in shown["extensions"] else None})
    assert calc.json()["mintAccountSize"] == len(info.data)
    assert calc.json()["estimatedRent"]["lamports"] == chain.get_minimum_balance_for_rent_exemption(len(info.data)).value


@pytest.mark.django_db(transaction=True)
def test_spl_mint_has_no_extensions_and_refuses_extension_fields(api, celery_worker_process, chain):
    authority = wallet(api)
    body = created(api, {**BOND, "version": "SPL", "mintAuthority": authority, "freezeAuthority": authority, "onchainData": {"name": "Plain", "symbol": "PLN", "decimals": 0}})
    info, decoded = onchain(chain, body["newFinancialInstrument"]["onchainId"])
    assert info.owner == TOKEN_PROGRAM_ID and len(info.data) == 82 and decoded.extensions == {}
    shown = details(api, {"offchainId": body["newFinancialInstrument"]["offchainId"]}).json()
    assert shown["onchainData"]["symbol"] == "PLN" and shown["extensions"] == [] and shown["version"] == "SPL"

    before = FinancialInstrument.unscoped.count()
    for extra, field in (({"pausableAuthority": authority}, "itemData.pausableAuthority"), ({"defaultPositionState": "FROZEN"}, "itemData.defaultPositionState"),
                         ({"onchainData": {"simpleCustomMetadata": {"k": "v"}}}, "itemData.onchainData.simpleCustomMetadata")):
        assert_error(create(api, {**BOND, "version": "SPL", "mintAuthority": authority, **extra}), 400, "SPL_NO_EXTENSIONS", field)
    assert FinancialInstrument.unscoped.count() == before


@pytest.mark.django_db(transaction=True)
def test_creation_too_large_for_one_transaction_names_both_workarounds(api, celery_worker_process):
    authority = wallet(api)
    many = {f"key{i:02d}": "v" * 40 for i in range(20)}
    response = create(api, {**BOND, "mintAuthority": authority, "freezeAuthority": authority, "permanentDelegateAuthority": authority, "closingAuthority": authority,
                            "pausableAuthority": authority, "scaledUiAmountAuthority": authority, "transferHookAuthority": authority,
                            "onchainData": {"name": "Big", "symbol": "BIG", "simpleCustomMetadata": many}})
    body = assert_error(response, 400, "TRANSACTION_TOO_LARGE", "itemData")
    message = body["errors"][0]["message"]
    assert "existingMintAccount" in message and "simpleCustomMetadata" in message
    assert FinancialInstrument.unscoped.count() == 0 and not AlIdSequence.objects.filter(last_value__gt=0).exists()


@pytest.mark.django_db(transaction=True)
def test_existing_mint_account_of_the_calculated_size(api, celery_worker_process, chain):
    authority = wallet(api)
    size = api.call("post", BASE + "/token-extensions-calculator", {"extensions": ["PAUSABLE", "MINT_CLOSE_AUTHORITY"]}).json()["mintAccountSize"]
    account = api.call("post", "/api/v1/accounts?wait=confirmed", {"itemData": {"managed": True, "dataLength": size, "tokenVersion": "TOKEN_2022", "offchainReferences": {"type": "ASSET_TOKEN"}}}).json()
    assert account["svmTransaction"]["status"] == "CONFIRMED", account
    existing = {"offchainId": account["newAccount"]["offchainId"]}
    wrong_size = assert_error(create(api, {**BOND, "existingMintAccount": existing, "mintAuthority": authority, "pausableAuthority": authority}), 400, "INVALID_MINT_ACCOUNT", "itemData.existingMintAccount")
    assert "need 2" in wrong_size["errors"][0]["message"]
    body = created(api, {**BOND, "existingMintAccount": existing, "mintAuthority": authority, "pausableAuthority": authority, "closingAuthority": authority})
    assert body["newFinancialInstrument"]["onchainId"] == account["newAccount"]["onchainId"]
    _, decoded = onchain(chain, body["newFinancialInstrument"]["onchainId"])
    assert set(decoded.extensions) == {"PAUSABLE", "MINT_CLOSE_AUTHORITY"} and decoded.is_initialized
    assert_error(create(api, {**BOND, "existingMintAccount": existing, "mintAuthority": authority, "pausableAuthority": authority, "closingAuthority": authority}), 409, "DUPLICATE_MINT")


# --- Onboarding -------------------------------------------------------------------------


def mint_outside_the_service(chain, extension: ExtensionType, init, decimals: int = 0) -> tuple[Keypair, Keypair]:
    """A Token-2022 mint with one extension, created directly on the node (the payer is
    every authority)."""
    payer, mint = funded(chain), Keypair()
    lamports = chain.get_minimum_balance_for_rent_exemption(mint_size({extension})).value
    send(chain, payer, [
        create_account(CreateAccountParams(from_pubkey=payer.pubkey(), to_pubkey=mint.pubkey(), lamports=lamports, space=mint_space({extension}), owner=TOKEN_2022_PROGRAM_ID)),
        init(mint.pubkey(), payer.pubkey()),
        t22.initialize_mint2(mint=mint.pubkey(), decimals=decimals, mint_authority=payer.pubkey(), freeze_authority=None),
    ], [mint])
    return payer, mint


@pytest.mark.django_db(transaction=True)
def test_already_onchain_mint_is_read_from_the_chain_without_a_transaction(api, celery_worker_process, chain):
    payer, mint = mint_outside_the_service(chain, ExtensionType.PAUSABLE, lambda m, p: t22.initialize_pausable(mint=m, authority=p), decimals=4)
    for spelling in ("alreadyOnChain", "alreadyOnchain"):
        FinancialInstrument.unscoped.all().delete()
        response = create(api, {**BOND, spelling: True, "mintAccount": {"onchainId": str(mint.pubkey())}}, wait=False)
        assert response.status_code == 201, response.json()
        assert response.json()["svmTransaction"] is None
    shown = details(api, {"onchainId": str(mint.pubkey())}).json()
    assert shown["managed"] is False and shown["wasAlreadyOnchain"] is True and shown["extensions"] == ["PAUSABLE"]
    assert shown["mintAccount"]["managed"] is False and shown["mintAccount"]["offchain"]["type"] == "ASSET_TOKEN"
    assert shown["onchainData"]["decimals"] == 4 and shown["pausableAuthority"]["onchain"]["id"] == str(payer.pubkey())
    assert shown["pausableAuthority"]["offchain"] is None  # not recorded in the service
    assert_error(create(api, {**BOND, "alreadyOnchain": True, "mintAccount": {"managed": False, "onchainId": str(mint.pubkey())}}), 409)
    assert_error(create(api, {**BOND, "alreadyOnchain": True, "version": "SPL", "mintAccount": {"managed": False, "onchainId": str(Keypair().pubkey())}}), 400, "MINT_NOT_ONCHAIN")
    assert_error(create(api, {**BOND, "alreadyOnchain": True, "alreadyOnChain": False, "mintAccount": {"managed": False, "onchainId": str(mint.pubkey())}}), 400, "CONFLICTING_FIELDS")


# --- Update, pause, close ---------------------------------------------------------------


@pytest.fixture
def issuer():
    return Keypair()


def _token_setup(chain, issuer: Keypair, mint: Pubkey, amount: int, decimals: int):
    payer = funded(chain)
    holder = Keypair()
    source = get_associated_token_address(issuer.pubkey(), mint, TOKEN_2022_PROGRAM_ID)
    dest = get_associated_token_address(holder.pubkey(), mint, TOKEN_2022_PROGRAM_ID)
    send(chain, payer, [create_associated_token_account(payer.pubkey(), issuer.pubkey(), mint, TOKEN_2022_PROGRAM_ID),
                        create_associated_token_account(payer.pubkey(), holder.pubkey(), mint, TOKEN_2022_PROGRAM_ID),
                        mint_to_checked(MintToCheckedParams(program_id=TOKEN_2022_PROGRAM_ID, mint=mint, dest=source, mint_authority=issuer.pubkey(), amount=amount, decimals=decimals))], [issuer])
    return payer, source, dest


@pytest.mark.django_db(transaction=True)
def test_pause_blocks_transfers_and_unpause_allows_them(api, celery_worker_process, chain, issuer):
    authority = wallet(api, issuer)
    body = created(api, {**BOND, "mintAuthority": authority, "pausableAuthority": authority, "onchainData": {"decimals": 0}})
    mint = Pubkey.from_string(body["newFinancialInstrument"]["onchainId"])
    lookup = {"onchainId": str(mint)}
    payer, source, dest = _token_setup(chain, issuer, mint, 100, 0)

    def move():
        send(chain, payer, [transfer_checked(TransferCheckedParams(program_id=TOKEN_2022_PROGRAM_ID, source=source, mint=mint, dest=dest, owner=issuer.pubkey(), amount=1, decimals=0))], [issuer])

    paused = api.call("patch", BASE + "/pause?wait=confirmed", {"itemData": {"financialInstrument": lookup}})
    assert paused.status_code == 200 and paused.json()["pausedFinancialInstrument"]["onchainId"] == str(mint), paused.json()
    assert onchain(chain, str(mint))[1].extensions["PAUSABLE"]["paused"] is True
    assert details(api, lookup).json()["paused"] is True and FinancialInstrument.unscoped.get(address=str(mint)).paused is True
    with pytest.raises(RPCException):
        move()
    assert_error(api.call("patch", BASE + "/pause", {"itemData": {"financialInstrument": lookup}}), 400, "ALREADY_PAUSED")
    resumed = api.call("patch", BASE + "/unpause?wait=confirmed", {"itemData": {"financialInstrument": lookup}})
    assert resumed.status_code == 200 and "unpausedFinancialInstrument" in resumed.json()
    move()
    assert chain.get_token_account_balance(dest).value.amount == "1"
    assert_error(api.call("patch", BASE + "/unpause", {"itemData": {"financialInstrument": lookup}}), 400, "NOT_PAUSED")


@pytest.mark.django_db(transaction=True)
def test_pause_needs_the_pausable_extension(api, celery_worker_process):
    authority = wallet(api)
    body = created(api, {**BOND, "mintAuthority": authority})
    assert_error(api.call("patch", BASE + "/pause", {"itemData": {"financialInstrument": {"offchainId": body["newFinancialInstrument"]["offchainId"]}}}), 400, "EXTENSION_MISSING")


@pytest.mark.django_db(transaction=True)
def test_update_metadata_offchain_data_authorities_and_multiplier(api, celery_worker_process, chain):
    authority, successor = wallet(api), wallet(api)
    body = created(api, {**BOND, "mintAuthority": authority, "closingAuthority": authority, "pausableAuthority": authority, "scaledUiAmountAuthority": authority,
                         "freezeAuthority": authority, "defaultPositionState": "INITIALIZED",
                         "onchainData": {"name": "Old", "symbol": "OLD", "simpleCustomMetadata": {"keep": "1", "drop": "2"}}})
    mint = body["newFinancialInstrument"]["onchainId"]
    lookup = {"onchainId": mint}
    response = api.call("patch", BASE + "?wait=confirmed", {"itemData": {
        "mintAccount": lookup,
        "onchainData": {"name": "A much longer instrument name than before", "simpleCustomMetadata": {"drop": None, "coupon": "4.25"}},
        "offchainData": {"description": "updated"},
        "newClosingAuthority": successor, "currentClosingAuthority": authority,
        "scaledUiAmountMultiplier": 2.5, "defaultPositionState": "FROZEN", "paused": True,
        "mintAccountOffchainReferences": {"code": "ACB-30"},
        "postTransactionSubmitWebhooks": [{"endpointUrl": "https://hooks.example/tx", "name": "ops", "apiKeyAuthConfig": {"httpHeaderName": "X-Key", "keyValue": "s3cret"}, "timeout": 10}],
    }})
    assert response.status_code == 200, response.json()
    assert response.json()["updatedFinancialInstrument"]["onchainId"] == mint and response.json()["svmTransaction"]["status"] == "CONFIRMED"
    info, decoded = onchain(chain, mint)
    meta = decoded.extensions["TOKEN_METADATA"]
    assert meta["name"] == "A much longer instrument name than before" and meta["additionalMetadata"] == {"keep": "1", "coupon": "4.25"}
    successor_address = FinancialInstrument.unscoped.get(address=mint).closing_authority_address
    assert decoded.extensions["MINT_CLOSE_AUTHORITY"]["closeAuthority"] == successor_address != decoded.mint_authority
    assert decoded.extensions["SCALED_UI_AMOUNT"]["newMultiplier"] == 2.5
    assert decoded.extensions["DEFAULT_ACCOUNT_STATE"] == {"state": "FROZEN"} and decoded.extensions["PAUSABLE"]["paused"] is True
    assert chain.get_balance(Pubkey.from_string(mint)).value >= chain.get_minimum_balance_for_rent_exemption(len(info.data)).value
    row = FinancialInstrument.unscoped.get(address=mint)
    assert row.name.startswith("A much longer") and row.scaled_ui_multiplier == 2.5 and row.default_position_state == "FROZEN" and row.paused is True
    assert row.closing_authority.offchain_id == uuid.UUID(successor["offchainId"]) and row.mint_account.code == "ACB-30"
    assert row.offchain_data == {"description": "updated"}
    stored = row.post_transaction_submit_webhooks[0]
    assert "s3cret" not in str(stored) and opened(stored, "apiKeyAuthConfig", "keyValue") == "s3cret"

    wrong = api.call("patch", BASE, {"itemData": {"mintAccount": lookup, "newClosingAuthority": authority, "currentClosingAuthority": authority}})
    assert_error(wrong, 400, "AUTHORITY_MISMATCH", "itemData.currentClosingAuthority")
    assert_error(api.call("patch", BASE, {"itemData": {"mintAccount": lookup, "transferHookProgram": {"onchainId": str(TOKEN_PROGRAM_ID), "offPlatform": True}}}), 400, "EXTENSION_MISSING")
    assert_error(api.call("patch", BASE, {"itemData": {"mintAccount": lookup, "onchainData": {"decimals": 9}}}), 400, "IMMUTABLE")
    assert_error(api.call("patch", BASE, {"itemData": {"mintAccount": lookup, "postTransactionSubmitWebhooks": [{"endpointUrl": "ftp://x", "name": "n"}]}}), 400)
    both = {"endpointUrl": "https://hooks.example/tx", "name": "n", "apiKeyAuthConfig": {"httpHeaderName": "X-Key", "keyValue": "k"},
            "oauth2AuthConfig": {"accessTokenUrl": "https://auth.example/token", "flowType": "CLIENT_CREDENTIALS", "clientId": "c", "clientSecret": "s"}}
    hooks = [both, {**both, "oauth2AuthConfig": None}]
    assert_error(api.call("patch", BASE, {"itemData": {"mintAccount": lookup, "postTransactionSubmitWebhooks": hooks}}), 400, "CONFLICTING_FIELDS", "itemData.postTransactionSubmitWebhooks[0].oauth2AuthConfig")
    assert opened(FinancialInstrument.unscoped.get(pk=row.pk).post_transaction_submit_webhooks[0], "apiKeyAuthConfig", "keyValue") == "s3cret"  # unchanged


@pytest.mark.django_db(transaction=True)
def test_close_only_at_zero_supply_and_rent_goes_to_the_refund_destination(api, celery_worker_process, chain, issuer):
    authority = wallet(api, issuer)
    body = created(api, {**BOND, "mintAuthority": authority, "closingAuthority": authority, "onchainData": {"decimals": 0}})
    mint = Pubkey.from_string(body["newFinancialInstrument"]["onchainId"])
    lookup = {"onchainId": str(mint)}
    payer, source, _ = _token_setup(chain, issuer, mint, 5, 0)
    supply = api.call("post", BASE + "/single/circulating-supply", {"itemData": lookup}).json()
    assert supply["onchain"] == {"amount": 5.0, "lamports": 5} and supply["offchain"]["lamports"] == 0 and supply["inAgreement"] is False
    refund = Keypair().pubkey()
    close_body = {"itemData": {"financialInstrumentToClose": lookup, "refundDestination": {"onchainId": str(refund), "offPlatform": True}}}
    assert_error(api.call("patch", BASE + "/close", close_body), 400, "SUPPLY_NOT_ZERO")

    send(chain, payer, [burn_checked(BurnCheckedParams(program_id=TOKEN_2022_PROGRAM_ID, account=source, mint=mint, owner=issuer.pubkey(), amount=5, decimals=0))], [issuer])
    rent = chain.get_balance(mint).value
    # The schema leaves refundDestination optional (an onboarded instrument closes without
    # one): a managed mint's rent needs it, a rule, not a missing field (schemathesis ST202).
    no_refund = api.call("patch", BASE + "/close", {"itemData": {"financialInstrumentToClose": lookup}})
    assert_error(no_refund, 400, "REFUND_DESTINATION_REQUIRED", "itemData.refundDestination")
    closed = api.call("patch", BASE + "/close?wait=confirmed", close_body)
    assert closed.status_code == 200, closed.json()
    assert closed.json()["closedFinancialInstrument"]["onchainId"] == str(mint) and closed.json()["svmTransaction"]["status"] == "CONFIRMED"
    assert chain.get_account_info(mint).value is None and chain.get_balance(refund).value == rent
    assert FinancialInstrument.unscoped.get(address=str(mint)).status == InstrumentStatus.CLOSED
    assert_error(api.call("patch", BASE + "/close", close_body), 400, "INSTRUMENT_CLOSED")


@pytest.mark.django_db(transaction=True)
def test_close_needs_a_close_authority(api, celery_worker_process):
    authority = wallet(api)
    body = created(api, {**BOND, "version": "SPL", "mintAuthority": authority})
    response = api.call("patch", BASE + "/close", {"itemData": {"financialInstrumentToClose": {"onchainId": body["newFinancialInstrument"]["onchainId"]}, "refundDestination": authority}})
    assert_error(response, 400, "NOT_CLOSABLE")


@pytest.mark.django_db(transaction=True)
def test_onboarded_instrument_closes_in_the_service_only(api, celery_worker_process, chain):
    _, mint = mint_outside_the_service(chain, ExtensionType.MINT_CLOSE_AUTHORITY, lambda m, p: t22.initialize_mint_close_authority(mint=m, close_authority=p))
    assert create(api, {**BOND, "alreadyOnchain": True, "mintAccount": {"managed": False, "onchainId": str(mint.pubkey())}}, wait=False).status_code == 201
    response = api.call("patch", BASE + "/close", {"itemData": {"financialInstrumentToClose": {"onchainId": str(mint.pubkey())}}})
    assert response.status_code == 200 and response.json()["svmTransaction"] is None, response.json()
    assert FinancialInstrument.unscoped.get(address=str(mint.pubkey())).status == InstrumentStatus.CLOSED
    assert chain.get_account_info(mint.pubkey()).value is not None  # untouched on the network


# --- Reads ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_bulk_filters_sorts_and_detail_levels(api, other_api, celery_worker_process):
    authority = wallet(api)
    spl = created(api, {**BOND, "version": "SPL", "mintAuthority": authority})
    t22_body = created(api, {**BOND, "mintAuthority": authority, "pausableAuthority": authority})
    created(other_api, {**BOND, "mintAuthority": wallet(other_api)})
    bulk = api.call("post", BASE + "/bulk/detailed", {}).json()
    assert bulk["count"] == 2 and [i["version"] for i in bulk["items"]] == ["TOKEN_2022", "SPL"]  # default sort: managed, version DESC
    assert bulk["items"][0]["pausableAuthority"]["offchain"]["id"] == authority["offchainId"]

    def query(*filters, sort=None, level="compact"):
        return api.call("post", BASE + f"/bulk/{level}", {"itemQuery": {"filter": list(filters), **({"sort": sort} if sort else {})}})

    paused_null = query({"fieldName": "paused", "operator": "AND", "filterValues": [{"dataType": "BOOLEAN", "filterType": "IS_NULL"}]}).json()
    assert [i["offchain"]["id"] for i in paused_null["items"]] == [spl["newFinancialInstrument"]["offchainId"]]
    by_authority = query({"fieldName": "pausableAuthorityOnchainId", "operator": "AND", "filterValues": [{"dataType": "ONCHAIN_ADDRESS_ID", "filterType": "IS_NOT_NULL"}]}, level="identifiers").json()
    assert by_authority == {"count": 1, "items": [t22_body["newFinancialInstrument"]]}
    misspelt = query({"fieldName": "udpateAuthorityOffchainId", "operator": "AND", "filterValues": [{"dataType": "OFFCHAIN_ID", "valueString": str(uuid.uuid4())}]}).json()
    assert misspelt["count"] == 0
    shared = query({"fieldName": "sharedAccrossTenants", "operator": "AND", "filterValues": [{"dataType": "BOOLEAN", "valueBoolean": False}]}, sort=[{"fieldName": "version", "sortDirection": "ASC"}]).json()
    assert [i["version"] for i in shared["items"]] == ["SPL", "TOKEN_2022"]
    mint_authority = query({"fieldName": "mintAuthorityOffchainId", "operator": "AND", "filterValues": [{"dataType": "OFFCHAIN_ID", "valueString": authority["offchainId"]}]}).json()
    assert mint_authority["count"] == 2
    assert_error(query({"fieldName": "supply", "operator": "AND", "filterValues": [{"dataType": "NUMBER", "valueNumber": 1}]}), 400, "UNKNOWN_FIELD_NAME")
    assert_error(query({"fieldName": "paused", "operator": "AND", "filterValues": [{"dataType": "TEXT", "valueString": "x"}]}), 400)
    assert_error(api.call("post", BASE + "/bulk/full", {}), 400, "INVALID_ENUM")


@pytest.mark.django_db
def test_details_of_a_missing_instrument_is_404(api, localnet_url):
    assert_error(details(api, {"offchainId": str(uuid.uuid4())}), 404, "NOT_FOUND", "itemData")
    assert_error(details(api, {}), 400, "INVALID_LOOKUP")


@pytest.mark.django_db(transaction=True)
def test_create_replays_with_the_same_request_id(api, celery_worker_process):
    authority = wallet(api)
    request_id = uuid.uuid4()
    first = create(api, {**BOND, "mintAuthority": authority}, wait=False, request_id=request_id)
    again = create(api, {**BOND, "mintAuthority": authority}, wait=False, request_id=request_id)
    assert first.status_code == again.status_code == 201
    assert first.json()["newFinancialInstrument"] == again.json()["newFinancialInstrument"]
    assert FinancialInstrument.unscoped.count() == 1 and AlIdSequence.objects.get().last_value == 1


@pytest.mark.django_db(transaction=True)
def test_create_errors(api, celery_worker_process):
    authority = wallet(api)
    assert_error(create(api, {**BOND}), 400, "REQUIRED", "itemData.mintAuthority")
    assert_error(create(api, {**BOND, "mintAuthority": authority, "defaultPositionState": "FROZEN"}), 400, "REQUIRES_FREEZE_AUTHORITY")
    assert_error(create(api, {**BOND, "mintAuthority": authority, "confidentialMintBurn": {"supplyElgamalPubkey": _b64(32), "decryptableSupply": _b64(36)}}), 400, "EXTENSION_REQUIRES")
    short = {"supplyElgamalPubkey": "short", "decryptableSupply": _b64(36)}
    assert_error(create(api, {**BOND, "mintAuthority": authority, "confidentialTransfer": {}, "confidentialMintBurn": short}), 400, "INVALID",
                 "itemData.confidentialMintBurn.supplyElgamalPubkey")
    assert_error(create(api, {**BOND, "mintAuthority": authority, "scaledUiAmountMultiplier": -1}), 400, "OUT_OF_RANGE")
    assert_error(create(api, {**BOND, "mintAuthority": authority, "scaledUiAmountMultiplier": "2"}), 400)
    assert_error(create(api, {**BOND, "mintAuthority": authority, "transferHookProgram": {"onchainId": str(Keypair().pubkey()), "offPlatform": True}}), 400, "NOT_A_PROGRAM")
    assert_error(create(api, {**BOND, "mintAuthority": {"offchainId": str(uuid.uuid4())}}), 404)
    assert_error(create(api, {**BOND, "mintAuthority": authority, "mintAccount": {"managed": False, "onchainId": str(Keypair().pubkey())}}), 400, "INVALID", "itemData.mintAccount.managed")
    assert_error(create(api, {**BOND, "mintAuthority": authority, "version": "TOKEN_2023"}), 400, None, "itemData.version")
    assert FinancialInstrument.unscoped.count() == 0


@pytest.mark.django_db(transaction=True)
def test_debit_keys_on_the_mint_account_need_their_role(api, celery_worker_process):
    authority = wallet(api)
    response = create(api, {**BOND, "mintAuthority": authority, "mintAccount": {"tokenDebitApiKeys": ["ak_x"]}})
    assert_error(response, 403, "MISSING_ROLE", "itemData.mintAccount.tokenDebitApiKeys")
    assert FinancialInstrument.unscoped.count() == 0


@pytest.mark.django_db(transaction=True)
def test_other_tenant_reads_a_shared_instrument_but_cannot_change_it(api, other_api, other_tenant, celery_worker_process):
    authority = wallet(api)
    body = created(api, {**BOND, "mintAuthority": authority, "pausableAuthority": authority, "mintAccount": {"shareAcrossTenants": True}})
    owner = FinancialInstrument.unscoped.get(offchain_id=body["newFinancialInstrument"]["offchainId"]).tenant.external_id
    shared = {"onchainId": body["newFinancialInstrument"]["onchainId"], "otherTenantOrganizationExternalId": owner}
    shown = other_api.call("post", BASE + "/single", {"itemData": shared})
    assert shown.status_code == 200 and shown.json()["tenantOrganizationId"] == owner
    # The owner's (unshared) authority account shows as an address only, its settings stay private.
    assert shown.json()["mintAuthority"]["offchain"] is None and shown.json()["mintAuthority"]["onchain"]["id"]
    assert api.call("post", BASE + "/single", {"itemData": {"onchainId": shared["onchainId"]}}).json()["mintAuthority"]["offchain"]["id"] == authority["offchainId"]
    assert_error(other_api.call("patch", BASE + "/pause", {"itemData": {"financialInstrument": shared}}), 400, "NOT_WRITABLE")
    assert_error(other_api.call("patch", BASE + "/pause", {"itemData": {"financialInstrument": {"onchainId": shared["onchainId"]}}}), 404, "NOT_FOUND")


@pytest.mark.django_db(transaction=True)
def test_authority_shared_by_another_organization_survives_chain_sync(api, other_api, tenant, other_tenant, celery_worker_process, chain):
    from accounts.models import Account

    shared = other_api.call("post", "/api/v1/accounts", {"itemData": {
        "managed": True, "offchainReferences": {"type": "WALLET"}, "shareAcrossTenants": True, "orgsAllowedToSignWithPrivateKey": [tenant.external_id],
    }})
    assert shared.status_code == 201, shared.json()
    authority_row = Account.unscoped.get(offchain_id=shared.json()["newAccount"]["offchainId"])
    lookup = {"onchainId": authority_row.address, "otherTenantOrganizationExternalId": other_tenant.external_id}
    body = created(api, {**BOND, "mintAuthority": lookup, "pausableAuthority": lookup})  # confirmed: the chain sync ran
    mint = body["newFinancialInstrument"]["onchainId"]
    row = FinancialInstrument.unscoped.get(address=mint)
    assert row.synced_at is not None
    assert row.pausable_authority_id == row.mint_authority_id == authority_row.pk  # still the shared record, not an address only

    paused = api.call("patch", BASE + "/pause?wait=confirmed", {"itemData": {"financialInstrument": {"onchainId": mint}}})
    assert paused.status_code == 200, paused.json()
    assert paused.json()["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED"), paused.json()  # signed on platform, not PARTIALLY_SIGNED
    assert onchain(chain, mint)[1].extensions["PAUSABLE"]["paused"] is True
    assert FinancialInstrument.unscoped.get(address=mint).pausable_authority_id == authority_row.pk
