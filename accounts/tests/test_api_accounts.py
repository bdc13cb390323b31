"""Blockchain accounts API: every endpoint, its errors, tenancy and chain effects."""

from __future__ import annotations

import uuid

import pytest
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from accounts.models import Account, AccountStatus, BalanceSnapshot, PrivateKeyDisclosure
from accounts.tests.factories import AccountFactory
from conftest import assert_error, make_client
from ledger_project.base58 import b58decode
from tenancy.roles import Role
from tenancy.tests.factories import issue_key
from transactions.tests.chainkit import funded

ACCOUNTS = "/api/v1/accounts"
pytestmark = pytest.mark.chain


@pytest.fixture(autouse=True)
def localnet_airdrop_funding(settings):
    """Seeds and rent with no funding account are paid by the localnet airdrop funder
    (opt-in, docs/accounts.md "Who pays"); tests of the refusal turn it off."""
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True


def create(client, item, *, wait=False, request_id=None, **extra):
    path = ACCOUNTS + ("?wait=confirmed" if wait else "")
    return client.call("post", path, {"itemData": item, **extra}, request_id=request_id)


def details(client, lookup):
    return client.call("post", ACCOUNTS + "/single", {"itemData": lookup})


# --- Create Account --------------------------------------------------------------------


@pytest.mark.django_db
def test_create_managed_account_without_seed_needs_no_transaction(api, localnet_url):
    response = create(api, {"managed": True, "offchainReferences": {"type": "WALLET", "code": "W1", "name": "Ops wallet"}})
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["svmTransaction"] is None
    account = Account.unscoped.get(offchain_id=body["newAccount"]["offchainId"])
    assert account.address == body["newAccount"]["onchainId"] and account.managed and account.status == "ACTIVE"
    assert account.managed_key.public_key == account.address


@pytest.mark.django_db(transaction=True)
def test_create_with_seed_funds_the_account_on_chain(api, celery_worker_process, chain):
    response = create(api, {"managed": True, "seed": {"lamports": 2_000_000}, "offchainReferences": {"type": "WALLET", "code": "SEEDED"}}, wait=True)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED") and body["svmTransaction"]["success"] is True
    address = Pubkey.from_string(body["newAccount"]["onchainId"])
    assert chain.get_balance(address).value == 2_000_000
    account = Account.unscoped.get(address=str(address))
    assert account.status == AccountStatus.ACTIVE and int(account.lamports_balance) == 2_000_000
    assert account.creation_transaction_at is not None
    assert BalanceSnapshot.objects.filter(account=account, lamports=2_000_000).exists()
    shown = details(api, {"onchainId": str(address)}).json()
    assert shown["onchain"]["creationTransactionId"] == body["svmTransaction"]["onchainId"]
    assert shown["offchain"]["creationTransactionId"] == body["svmTransaction"]["offchainId"]
    assert shown["offchain"]["lamportsBalance"] == 2_000_000


@pytest.mark.django_db(transaction=True)
def test_data_length_allocates_space_and_locks_the_seed(api, celery_worker_process, chain):
    response = create(api, {"managed": True, "dataLength": 100, "offchainReferences": {"type": "WALLET", "code": "SPACE"}}, wait=True)
    assert response.status_code == 201, response.json()
    onchain = chain.get_account_info(Pubkey.from_string(response.json()["newAccount"]["onchainId"])).value
    assert len(onchain.data) == 100 and str(onchain.owner) == "11111111111111111111111111111111"
    assert onchain.lamports == chain.get_minimum_balance_for_rent_exemption(100).value
    refused = api.call("patch", ACCOUNTS + "/inactivate", {"itemData": {"account": {"offchainId": response.json()["newAccount"]["offchainId"]}, "refundDestination": {"onchainId": str(Keypair().pubkey()), "offPlatform": True}}})
    assert_error(refused, 400, "NOT_CLOSABLE", "itemData.account")


@pytest.mark.django_db
def test_seed_below_rent_is_400(api, localnet_url):
    assert_error(create(api, {"managed": True, "seed": {"lamports": 10}}), 400, "SEED_BELOW_RENT", "itemData.seed")
    assert_error(create(api, {"managed": True, "dataLength": 50, "seed": {"lamports": 10}}), 400, "SEED_BELOW_RENT", "itemData.seed")
    assert Account.unscoped.count() == 0


@pytest.mark.django_db
def test_seed_amount_and_lamports_must_agree(api, localnet_url):
    assert_error(create(api, {"managed": True, "seed": {"amount": 0.5, "lamports": 1}}), 400, "VALUE_MISMATCH", "itemData.seed.amount")
    response = create(api, {"managed": True, "seed": {"amount": 0.001}})
    assert response.status_code == 201


@pytest.mark.django_db
def test_import_private_key(api, localnet_url):
    keypair = Keypair()
    response = create(api, {"managed": True, "onchainId": str(keypair.pubkey()), "privateKeyDetails": {"location": ["SECRETS"], "privateKey": str(keypair)}})
    assert response.status_code == 201, response.json()
    account = Account.unscoped.get(address=str(keypair.pubkey()))
    assert account.private_key_location == ["SECRETS"]
    wrong = create(api, {"managed": True, "privateKeyDetails": {"publickKey": str(Keypair().pubkey()), "privateKey": str(Keypair())}})
    assert_error(wrong, 400, "INVALID_PRIVATE_KEY", "itemData.privateKeyDetails.privateKey")
    assert_error(create(api, {"managed": True, "privateKeyDetails": {"privateKey": "not-base58-0OIl"}}), 400, "INVALID_PRIVATE_KEY")


@pytest.mark.django_db
@pytest.mark.parametrize("location", ["DATABASE", "SECRETS"])
def test_importing_a_held_key_again_is_409_naming_the_record(api, other_api, localnet_url, location):
    keypair = Keypair()
    first = create(api, {"managed": True, "privateKeyDetails": {"location": [location], "privateKey": str(keypair)}})
    assert first.status_code == 201, first.json()
    offchain_id = first.json()["newAccount"]["offchainId"]
    again = create(api, {"managed": True, "privateKeyDetails": {"location": [location], "privateKey": str(keypair)}})
    body = assert_error(again, 409, "DUPLICATE_KEY", "itemData.privateKeyDetails.privateKey")
    message = body["errors"][0]["message"]
    assert offchain_id in message and str(keypair.pubkey()) in message
    # Another organization learns only that the service holds the key it presented.
    foreign = assert_error(create(other_api, {"managed": True, "privateKeyDetails": {"privateKey": str(keypair)}}), 409, "DUPLICATE_KEY")
    assert offchain_id not in foreign["errors"][0]["message"]
    assert Account.unscoped.count() == 1
    account = Account.unscoped.get()
    assert account.managed_key.public_key == str(keypair.pubkey())
    from custody.services import managed_key_export

    assert managed_key_export(key=account.managed_key) == str(keypair)  # the held key still opens


@pytest.mark.django_db
def test_onboard_existing_onchain_account(api, chain):
    existing = funded(chain, 3_000_000)
    response = create(api, {"managed": False, "alreadyOnchain": True, "onchainId": str(existing.pubkey()), "offchainReferences": {"type": "WALLET", "code": "EXT"}})
    assert response.status_code == 201 and response.json()["svmTransaction"] is None
    account = Account.unscoped.get(address=str(existing.pubkey()))
    assert not account.managed and account.was_onchain_already and int(account.lamports_balance) == 3_000_000
    missing = str(Keypair().pubkey())
    assert_error(create(api, {"managed": False, "alreadyOnchain": True, "onchainId": missing}), 404, "ACCOUNT_NOT_ONCHAIN", "itemData.onchainId")
    skipped = create(api, {"managed": False, "alreadyOnchain": True, "onchainId": missing, "skipBlockchainExistenceVerification": True})
    assert skipped.status_code == 201


@pytest.mark.django_db
@pytest.mark.parametrize("extra", [{"seed": {"lamports": 0}}, {"seed": {"amount": "0"}}, {"seed": {"lamports": 5}}], ids=["lamports0", "amount0", "lamports5"])
def test_seed_with_already_onchain_is_refused_whatever_its_value(api, chain, extra):
    """One rule: a given seed (0 included) does not apply to an account already on chain."""
    existing = funded(chain, 3_000_000)
    item = {"managed": False, "alreadyOnchain": True, "onchainId": str(existing.pubkey()), **extra}
    assert_error(create(api, item), 400, "INVALID", "itemData.seed")
    assert not Account.unscoped.filter(address=str(existing.pubkey())).exists()


@pytest.mark.django_db
def test_not_managed_needs_onchain_id(api, localnet_url):
    assert_error(create(api, {"managed": False}), 400, "REQUIRED", "itemData.onchainId")
    assert_error(create(api, {"managed": False, "onchainId": "nope"}), 400, "INVALID_ADDRESS", "itemData.onchainId")


@pytest.mark.django_db
def test_duplicates_are_409(api, localnet_url):
    address = str(Keypair().pubkey())
    assert create(api, {"managed": False, "onchainId": address, "offchainReferences": {"code": "C1"}}).status_code == 201
    assert_error(create(api, {"managed": False, "onchainId": address}), 409, "DUPLICATE_ACCOUNT")
    assert_error(create(api, {"managed": True, "offchainReferences": {"code": "C1"}}), 409, "DUPLICATE_REFERENCE", "itemData.offchainReferences.code")
    assert Account.unscoped.count() == 1


@pytest.mark.django_db
def test_same_address_in_two_tenants_is_allowed(api, other_api, localnet_url):
    address = str(Keypair().pubkey())
    assert create(api, {"managed": False, "onchainId": address}).status_code == 201
    assert create(other_api, {"managed": False, "onchainId": address}).status_code == 201


@pytest.mark.django_db
def test_specialized_types_point_to_their_endpoint(api, localnet_url):
    body = assert_error(create(api, {"managed": True, "offchainReferences": {"type": "NONCE"}}), 400, "USE_SPECIALIZED_ENDPOINT")
    assert "Create Durable Nonce Accounts" in body["errors"][0]["message"]
    assert_error(create(api, {"managed": True, "offchainReferences": {"type": "BANANA"}}), 400, "INVALID_ENUM", "itemData.offchainReferences.type")


@pytest.mark.django_db
def test_debit_api_keys_need_role(api, tenant, localnet_url):
    assert_error(create(api, {"managed": True, "networkCurrencyDebitApiKeys": ["ak_x"]}), 403, "MISSING_ROLE", "itemData.networkCurrencyDebitApiKeys")
    privileged = make_client(issue_key(tenant, roles=[Role.PLATFORM_UPDATE_DEBIT_API_KEYS]).secret)
    response = create(privileged, {"managed": True, "networkCurrencyDebitApiKeys": ["ak_x"], "tokenDebitApiKeys": ["ak_y"]})
    assert response.status_code == 201
    shown = details(privileged, {"offchainId": response.json()["newAccount"]["offchainId"]}).json()
    assert shown["solDebitApiKeys"] == ["ak_x"] and shown["tokenDebitApiKeys"] == ["ak_y"]


@pytest.mark.django_db
def test_debit_limits_replace_defaults_of_their_kind_only(api, localnet_url):
    limits = [{"destinationType": "OFF_PLATFORM", "limitType": "DURATION", "maxAmountWithoutApproval": 5_000_000}]
    response = create(api, {"managed": True, "offchainReferences": {"type": "ASSETS_WALLET"}, "tokenDebitLimits": limits})
    assert response.status_code == 201
    shown = details(api, {"offchainId": response.json()["newAccount"]["offchainId"]}).json()
    assert shown["tokenDebitLimits"] == [{"destinationType": "OFF_PLATFORM", "limitType": "DURATION", "maxAmountWithoutApproval": 5_000_000, "durationHours": 24}]
    assert len(shown["networkCurrencyDebitLimits"]) == 6  # the spec's defaults stay
    assert {"destinationType": "NON_MANAGED", "limitType": "PER_TRANSACTION", "maxAmountWithoutApproval": 10**9, "durationHours": None} in shown["networkCurrencyDebitLimits"]
    empty = create(api, {"managed": True, "networkCurrencyDebitLimits": []})
    assert details(api, {"offchainId": empty.json()["newAccount"]["offchainId"]}).json()["networkCurrencyDebitLimits"] == []


@pytest.mark.django_db
def test_debit_limits_only_for_wallet_types(api, localnet_url):
    response = create(api, {"managed": True, "offchainReferences": {"type": "TOKEN_MANAGEMENT_AUTHORITY"}, "networkCurrencyDebitLimits": [{"destinationType": "MANAGED", "limitType": "PER_TRANSACTION", "maxAmountWithoutApproval": 1}]})
    assert_error(response, 400, "LIMITS_NOT_APPLICABLE", "itemData.networkCurrencyDebitLimits")
    bad = create(api, {"managed": True, "networkCurrencyDebitLimits": [{"destinationType": "MARS", "limitType": "PER_TRANSACTION"}]})
    assert_error(bad, 400, "INVALID_ENUM", "itemData.networkCurrencyDebitLimits[0].destinationType")


@pytest.mark.django_db
def test_create_replay_returns_same_account(api, localnet_url):
    rid = uuid.uuid4()
    first = create(api, {"managed": True, "offchainReferences": {"code": "IDEM"}}, request_id=rid)
    second = create(api, {"managed": True, "offchainReferences": {"code": "IDEM"}}, request_id=rid)
    assert first.status_code == second.status_code == 201 and first.json() == second.json()
    assert Account.unscoped.count() == 1


@pytest.mark.django_db
def test_dkg_keys_need_their_session(api, localnet_url):
    # Threshold keys: accounts/tests/test_api_dkg.py.
    response = create(api, {"managed": True, "privateKeyDetails": {"dkgKeys": [{"keyUsage": "SIGN"}]}})
    assert_error(response, 400, "REQUIRED", "itemData.privateKeyDetails.dkgKeys[0].session")


# --- Fetch Account Details / lookups ---------------------------------------------------


@pytest.mark.django_db
def test_details_has_every_spec_field(api, tenant, localnet_url):
    account = AccountFactory(tenant=tenant, code="D1", al_id="", account_number="123", organization_external_id="ACME")
    response = details(api, {"onchainId": account.address})
    assert response.status_code == 200
    body = response.json()
    assert set(body["onchain"]) == {"id", "lastTransactionId", "lastTransactionAt", "creationTransactionId", "creationTransactionAt"}
    assert set(body["offchain"]) == {"id", "type", "code", "alId", "organizationExternalId", "accountNumber", "name", "lamportsBalance", "tokenBalance", "tokenDecimals", "lastTransactionId", "creationTransactionId"}
    for name in ("managed", "status", "privateKeyLocation", "isDerived", "comments", "subscribeToNetworkEvents", "sharedAcrossTenants", "wasOnchainAlready",
                 "canPayFees", "globalFeePayerForOrgs", "solDebitApiKeys", "tokenDebitApiKeys", "domain", "tenantOrganizationId"):
        assert name in body
    assert body["tenantOrganizationId"] == "ACME" and body["offchain"]["code"] == "D1"


@pytest.mark.django_db
def test_lookup_by_references(api, tenant, localnet_url):
    account = AccountFactory(tenant=tenant, code="REF", account_number="42", organization_external_id="ACME", al_id="ALFXFC00000001")
    for lookup in ({"offchainReferences": {"code": "REF"}}, {"offchainReferences": {"accountNumber": "42", "organizationExternalId": "ACME"}},
                   {"offchainReferences": {"alId": "ALFXFC00000001"}}, {"offchainId": str(account.offchain_id), "onchainId": account.address}):
        response = details(api, lookup)
        assert response.status_code == 200 and response.json()["offchain"]["id"] == str(account.offchain_id), lookup


@pytest.mark.django_db
def test_conflicting_lookup_is_400(api, tenant, localnet_url):
    a, b = AccountFactory(tenant=tenant), AccountFactory(tenant=tenant)
    assert_error(details(api, {"onchainId": a.address, "offchainId": str(b.offchain_id)}), 404, "CONFLICTING_LOOKUP")
    assert_error(details(api, {}), 400, "INVALID_LOOKUP")
    assert_error(details(api, {"offchainReferences": {"name": "x"}}), 400, "INVALID_LOOKUP")


@pytest.mark.django_db
def test_a_lookup_naming_nothing_is_refused_where_the_operation_does_not_use_it(api, localnet_url):
    # Found by schemathesis (ST201): an unfunded Create Account never resolves its feePayer,
    # and a lookup whose offchainReferences name nothing (the OpenAPI refuses it) was accepted.
    for fee_payer, field in (({"offchainReferences": {"accountNumber": None}}, "svmTransactionConfig.feePayer"),
                             ({"onchainId": None, "offchainReferences": {}}, "svmTransactionConfig.feePayer"),
                             ({"onchainId": str(Keypair().pubkey()), "offchainReferences": {"type": "WALLET"}}, "svmTransactionConfig.feePayer.offchainReferences")):
        response = create(api, {"managed": True}, svmTransactionConfig={"feePayer": fee_payer})
        assert_error(response, 400, "INVALID_LOOKUP", field)
    assert Account.unscoped.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize("offchain_id", [False, 0, 12, "0" * 32, "{00000000-0000-0000-0000-000000000000}", "urn:uuid:00000000-0000-0000-0000-000000000000"])
def test_an_offchain_id_is_a_uuid_string_in_its_canonical_form(api, localnet_url, offchain_id):
    # Found by schemathesis (ST201): DRF's UUIDField took false as UUID 0 (and bare hex,
    # braces, urn:uuid:), which the OpenAPI's format uuid refuses.
    response = create(api, {"managed": True}, svmTransactionConfig={"feePayer": {"offchainId": offchain_id}})
    assert_error(response, 400, "INVALID", "svmTransactionConfig.feePayer.offchainId")
    assert Account.unscoped.count() == 0


@pytest.mark.django_db
def test_a_specialized_type_is_neither_given_nor_left_by_update(api, tenant, localnet_url):
    # Found by schemathesis: the OpenAPI admits type NONCE in Update Account (the type enum is
    # shared), so the refusal is a rule of the record, not a malformed field (was INVALID).
    wallet = AccountFactory(tenant=tenant, type="WALLET")
    nonce = AccountFactory(tenant=tenant, type="NONCE")
    to_nonce = api.call("patch", ACCOUNTS, {"itemData": {"account": {"offchainId": str(wallet.offchain_id)}, "offchainReferences": {"type": "NONCE"}}})
    assert_error(to_nonce, 400, "USE_SPECIALIZED_ENDPOINT", "itemData.offchainReferences.type")
    from_nonce = api.call("patch", ACCOUNTS, {"itemData": {"account": {"offchainId": str(nonce.offchain_id)}, "offchainReferences": {"type": "WALLET"}}})
    assert_error(from_nonce, 400, "IMMUTABLE", "itemData.offchainReferences.type")
    same = api.call("patch", ACCOUNTS, {"itemData": {"account": {"offchainId": str(nonce.offchain_id)}, "offchainReferences": {"type": "NONCE"}, "comments": "kept"}})
    assert same.status_code == 200, same.json()
    wallet.refresh_from_db()
    assert wallet.type == "WALLET"


@pytest.mark.django_db
def test_other_tenants_account_is_indistinguishable_from_missing(api, other_tenant, localnet_url):
    theirs = AccountFactory(tenant=other_tenant)
    hidden = details(api, {"offchainId": str(theirs.offchain_id)})
    missing = details(api, {"offchainId": str(uuid.uuid4())})
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json()["errors"] == missing.json()["errors"]


@pytest.mark.django_db
def test_shared_account_is_visible_read_only(api, other_tenant, localnet_url):
    shared = AccountFactory(tenant=other_tenant, shared_across_tenants=True)
    assert details(api, {"onchainId": shared.address}).status_code == 200
    assert details(api, {"onchainId": shared.address, "otherTenantOrganizationExternalId": "GLOBEX"}).status_code == 200
    info = api.call("post", ACCOUNTS + "/single/tenant-info", {"itemData": {"onchainId": shared.address}}).json()
    assert info["tenantOrganizationId"] == "GLOBEX" and info["isOwnOrganization"] is False
    update = api.call("patch", ACCOUNTS, {"itemData": {"account": {"onchainId": shared.address}, "comments": "mine now"}})
    assert update.status_code == 404
    shared.refresh_from_db()
    assert shared.comments == ""


# --- Private key -----------------------------------------------------------------------


@pytest.mark.django_db
def test_private_key_export_needs_role_and_is_audited(api, tenant, localnet_url):
    created = create(api, {"managed": True}).json()["newAccount"]
    assert_error(api.call("post", ACCOUNTS + "/single/private-key", {"itemData": {"offchainId": created["offchainId"]}}), 403, "MISSING_ROLE")
    assert PrivateKeyDisclosure.objects.count() == 0
    privileged = make_client(issue_key(tenant, roles=[Role.PLATFORM_SENSITIVE_DATA_ACCESS]).secret)
    response = privileged.call("post", ACCOUNTS + "/single/private-key", {"itemData": {"offchainId": created["offchainId"]}})
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    secret = response.json()["privateKey"]
    assert str(Keypair.from_bytes(b58decode(secret)).pubkey()) == created["onchainId"]
    assert PrivateKeyDisclosure.objects.filter(account__offchain_id=created["offchainId"]).count() == 1


@pytest.mark.django_db
def test_private_key_of_unmanaged_or_foreign_account(tenant, other_tenant, localnet_url):
    privileged = make_client(issue_key(tenant, roles=[Role.PLATFORM_SENSITIVE_DATA_ACCESS]).secret)
    mine = AccountFactory(tenant=tenant)
    assert_error(privileged.call("post", ACCOUNTS + "/single/private-key", {"itemData": {"onchainId": mine.address}}), 400, "NOT_MANAGED")
    theirs = AccountFactory(tenant=other_tenant, shared_across_tenants=True)
    assert privileged.call("post", ACCOUNTS + "/single/private-key", {"itemData": {"onchainId": theirs.address}}).status_code == 404


# --- Balance ---------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_balance_now_and_in_the_past(api, celery_worker_process, chain):
    import datetime

    before = datetime.datetime.now(datetime.timezone.utc)
    created = create(api, {"managed": True, "seed": {"lamports": 5_000_000}}, wait=True).json()
    lookup = {"offchainId": created["newAccount"]["offchainId"]}
    now = api.call("post", ACCOUNTS + "/single/balance", {"itemData": {"account": lookup}}).json()
    assert now["offchain"] == {"amount": 0.005, "lamports": 5_000_000} and now["onchain"]["lamports"] == 5_000_000 and now["at"] is None
    past = api.call("post", ACCOUNTS + "/single/balance", {"itemData": {"account": lookup, "at": before.isoformat()}}).json()
    assert past["offchain"]["lamports"] == 0 and past["onchain"] is None
    later = api.call("post", ACCOUNTS + "/single/balance", {"itemData": {"account": lookup, "at": "2999-01-01T00:00:00Z"}}).json()
    assert later["offchain"]["lamports"] == 5_000_000
    assert_error(api.call("post", ACCOUNTS + "/single/balance", {"itemData": {"account": lookup, "at": "yesterday"}}), 400, "INVALID", "itemData.at")


# --- Fetch Accounts --------------------------------------------------------------------


@pytest.mark.django_db
def test_bulk_filters_sorts_and_detail_levels(api, tenant, other_tenant, localnet_url):
    for i in range(5):
        AccountFactory(tenant=tenant, type="WALLET" if i % 2 else "ASSETS_WALLET", code=f"B{i}", lamports_balance=i * 100)
    AccountFactory(tenant=other_tenant, code="B9")
    query = {"itemQuery": {"filter": [{"fieldName": "type", "operator": "AND", "filterValues": [{"dataType": "TEXT", "filterType": "EQUALS", "valueString": "ASSETS_WALLET"}]}],
                           "sort": [{"fieldName": "lamportsBalance", "sortDirection": "DESC"}], "limit": 2}}
    body = api.call("post", ACCOUNTS + "/bulk/detailed", query).json()
    assert body["count"] == 3 and [i["offchain"]["code"] for i in body["items"]] == ["B4", "B2"]
    compact = api.call("post", ACCOUNTS + "/bulk/compact", query).json()["items"][0]
    assert set(compact) == {"onchain", "offchain", "managed", "status", "tenantOrganizationId"}
    ids = api.call("post", ACCOUNTS + "/bulk/identifiers", {}).json()
    assert ids["count"] == 5 and set(ids["items"][0]) == {"onchainId", "offchainId"}
    assert_error(api.call("post", ACCOUNTS + "/bulk/everything", {}), 400, "INVALID_ENUM", "detail-level")
    assert_error(api.call("post", ACCOUNTS + "/bulk/detailed", {"itemQuery": {"filter": [{"fieldName": "nope", "filterValues": [{"dataType": "TEXT", "valueString": "x"}]}]}}), 400, "UNKNOWN_FIELD_NAME")
    nulls = api.call("post", ACCOUNTS + "/bulk/identifiers", {"itemQuery": {"filter": [{"fieldName": "alId", "filterValues": [{"dataType": "TEXT", "filterType": "IS_NULL"}]}]}}).json()
    assert nulls["count"] == 5


# --- Update Account --------------------------------------------------------------------


@pytest.mark.django_db
def test_update_changes_only_present_fields(api, tenant, localnet_url):
    account = AccountFactory(tenant=tenant, comments="keep", domain="d.example", code="U1", name="before")
    response = api.call("patch", ACCOUNTS, {"itemData": {"account": {"offchainId": str(account.offchain_id)}, "domain": "new.example", "offchainReferences": {"name": "after"}}})
    assert response.status_code == 200 and response.json()["updatedAccount"]["offchainId"] == str(account.offchain_id)
    account.refresh_from_db()
    assert (account.comments, account.domain, account.code, account.name) == ("keep", "new.example", "U1", "after")
    assert_error(api.call("patch", ACCOUNTS, {"itemData": {"account": {"offchainId": str(account.offchain_id)}, "tokenDebitApiKeys": ["k"]}}), 403, "MISSING_ROLE")
    other = AccountFactory(tenant=tenant, code="U2")
    assert_error(api.call("patch", ACCOUNTS, {"itemData": {"account": {"offchainId": str(other.offchain_id)}, "offchainReferences": {"code": "U1"}}}), 409, "DUPLICATE_REFERENCE")


# --- Inactivate Account ----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_inactivate_moves_lamports_and_closes_the_account(api, celery_worker_process, chain):
    created = create(api, {"managed": True, "seed": {"lamports": 7_000_000}}, wait=True).json()["newAccount"]
    destination = create(api, {"managed": True}).json()["newAccount"]
    lookup = {"offchainId": created["offchainId"]}
    # refundDestination is optional (an account without lamports needs none): a rule, not a
    # missing field (schemathesis ST202 on a schema-valid request)
    assert_error(api.call("patch", ACCOUNTS + "/inactivate", {"itemData": {"account": lookup}}), 400, "REFUND_DESTINATION_REQUIRED", "itemData.refundDestination")
    response = api.call("patch", ACCOUNTS + "/inactivate?wait=confirmed", {"itemData": {"account": lookup, "refundDestination": {"offchainId": destination["offchainId"]}}})
    assert response.status_code == 200, response.json()
    assert response.json()["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED")
    assert chain.get_account_info(Pubkey.from_string(created["onchainId"])).value is None
    assert chain.get_balance(Pubkey.from_string(destination["onchainId"])).value == 7_000_000
    account = Account.unscoped.get(offchain_id=created["offchainId"])
    assert account.status == AccountStatus.INACTIVE
    # An inactive account is refused as a destination and cannot be inactivated again.
    other = create(api, {"managed": False, "onchainId": str(Keypair().pubkey())}).json()["newAccount"]
    assert_error(api.call("patch", ACCOUNTS + "/inactivate", {"itemData": {"account": lookup}}), 400, "ACCOUNT_INACTIVE")
    assert_error(api.call("patch", ACCOUNTS + "/inactivate", {"itemData": {"account": {"offchainId": destination["offchainId"]}, "refundDestination": lookup}}), 400, "ACCOUNT_INACTIVE")
    assert api.call("patch", ACCOUNTS + "/inactivate", {"itemData": {"account": {"offchainId": other["offchainId"]}}}).status_code == 200


@pytest.mark.django_db
def test_inactivate_unfunded_account_is_immediate(api, tenant, localnet_url):
    account = AccountFactory(tenant=tenant)
    response = api.call("patch", ACCOUNTS + "/inactivate", {"itemData": {"account": {"onchainId": account.address}}})
    assert response.status_code == 200 and response.json()["svmTransaction"] is None
    account.refresh_from_db()
    assert account.status == AccountStatus.INACTIVE


# --- Fee payers and signing across organizations ---------------------------------------


@pytest.mark.django_db(transaction=True)
def test_fee_payer_from_svm_transaction_config(api, celery_worker_process, chain):
    payer = create(api, {"managed": True, "seed": {"lamports": 50_000_000}, "offchainReferences": {"code": "PAYER"}}, wait=True).json()["newAccount"]
    response = create(api, {"managed": True, "seed": {"lamports": 1_000_000}}, wait=True, svmTransactionConfig={"feePayer": {"offchainReferences": {"code": "PAYER"}}, "transactionVersion": "LEGACY"})
    assert response.status_code == 201, response.json()
    # The payer paid the seed (a plain transfer: only the payer signs) and its fee.
    assert chain.get_balance(Pubkey.from_string(payer["onchainId"])).value == 50_000_000 - 1_000_000 - 5_000


@pytest.mark.django_db(transaction=True)
def test_shared_key_signs_only_for_allowed_orgs(api, other_api, celery_worker_process, chain):
    allowed = create(api, {"managed": True, "seed": {"lamports": 50_000_000}, "shareAcrossTenants": True, "orgsAllowedToSignWithPrivateKey": ["GLOBEX"]}, wait=True).json()["newAccount"]
    private = create(api, {"managed": True, "seed": {"lamports": 50_000_000}, "shareAcrossTenants": True}, wait=True).json()["newAccount"]
    ok = create(other_api, {"managed": True, "seed": {"lamports": 1_000_000}}, wait=True, svmTransactionConfig={"feePayer": {"onchainId": allowed["onchainId"]}})
    assert ok.json()["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED")
    held = create(other_api, {"managed": True, "seed": {"lamports": 1_000_000}}, svmTransactionConfig={"feePayer": {"onchainId": private["onchainId"]}})
    assert held.status_code == 201 and held.json()["svmTransaction"]["status"] == "PARTIALLY_SIGNED"


@pytest.mark.django_db
def test_update_and_inactivate_replay(api, tenant, localnet_url):
    account = AccountFactory(tenant=tenant)
    rid = uuid.uuid4()
    body = {"itemData": {"account": {"offchainId": str(account.offchain_id)}, "comments": "once"}}
    first = api.call("patch", ACCOUNTS, body, request_id=rid)
    second = api.call("patch", ACCOUNTS, body, request_id=rid)
    assert first.status_code == second.status_code == 200 and second["x-idempotent-replay"] == "true"
    rid = uuid.uuid4()
    body = {"itemData": {"account": {"offchainId": str(account.offchain_id)}}}
    first = api.call("patch", ACCOUNTS + "/inactivate", body, request_id=rid)
    second = api.call("patch", ACCOUNTS + "/inactivate", body, request_id=rid)
    assert first.status_code == second.status_code == 200 and first.json() == second.json()
    assert api.call("patch", ACCOUNTS + "/inactivate", body).status_code == 400  # a new request: already inactive


@pytest.mark.django_db
def test_fast_renderers_match_the_documented_serializers(tenant):
    from accounts import render
    from accounts.selectors import for_display
    from accounts.serializers import AccountCompactOutput, AccountIdentifiersOutput, AccountOutput

    account = for_display(Account.unscoped.filter(pk=AccountFactory(tenant=tenant).pk)).get()
    for renderer, serializer in ((render.account_detailed, AccountOutput), (render.account_compact, AccountCompactOutput), (render.account_identifiers, AccountIdentifiersOutput)):
        fast, documented = renderer(account), serializer(account).data
        assert set(fast) == set(documented)
        for key, value in documented.items():
            if isinstance(value, dict):
                assert set(fast[key]) == set(value), key
    assert render.account_detailed(account)["onchain"] == dict(AccountOutput(account).data)["onchain"]
