"""The platform's own keys sign only what the platform authored (docs/custody.md,
"Platform keys and the roles they sign in").

An outside probe recorded the platform fee payer's public address as an account of its
own and then moved its lamports with Transfer Network Currency: the engine signed the
message with the fee payer's key as fee payer, and that one signature also authorized the
System transfer whose source was the same address. These tests run that probe and its
relatives through the API on the local node, and read the platform's balances back with
an unmodified solana-py client.
"""

from __future__ import annotations

import copy
import itertools

import pytest
from django.apps import apps as django_apps
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from accounts.models import Account, AccountStatus, AccountType
from tenancy.context import OperationContext
from transactions.tests.chainkit import wallet
from conftest import assert_error, make_client
from scripts.schemathesis_hooks import lookup_paths
from tenancy.tests.factories import issue_key
from transactions import fee_payers, nonce_pool, platform_keys
from chain import builder
from chain.rpc import rpc_for
from transactions.models import NonceAccount, Transaction
from transactions.services import SignerSpec, TxConfig, transaction_build

pytestmark = pytest.mark.chain
CLUSTER = "CHAIN_LOCALNET"
SOL = 10**9


@pytest.fixture(autouse=True)
def localnet_airdrop_funding(settings):
    """Seeds and rent with no funding account come from the localnet airdrop funder (docs/accounts.md, "Who pays")."""
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True


def _platform() -> dict[str, str]:
    """name → address of the platform keys a tenant can learn (the fee payer names itself in
    every Fetch Transaction Details; a pool nonce's authority in every durable-nonce message)."""
    payer = fee_payers.platform_fee_payer(CLUSTER)
    nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=1)
    pool = NonceAccount.objects.filter(cluster=CLUSTER, tenant__isnull=True).exclude(state="CLOSED").order_by("pk").first()
    return {"fee payer": str(payer.pubkey), "pool nonce authority": pool.authority, "pool nonce account": pool.address}


def _lamports(chain, addresses) -> dict[str, int]:
    return {a: chain.get_balance(Pubkey.from_string(a)).value for a in addresses}


def _legacy_record(tenant, address: str) -> Account:
    """An account at a platform address as a tenant could record it before this rule (the
    migration inactivates such rows; the engine's own check must hold without it)."""
    return Account.unscoped.create(tenant=tenant, cluster=CLUSTER, address=address, managed=False, type=AccountType.WALLET, status=AccountStatus.ACTIVE, code="legacy")


# --- the reproduction ---------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_fee_payer_cannot_be_recorded_nor_spent(api, tenant, celery_worker_process, chain):
    fee_payer = _platform()["fee payer"]
    mine = wallet(api)
    before = _lamports(chain, [fee_payer])[fee_payer]
    # 1. Recording the fee payer's address, in every way an account is recorded, is refused.
    for item in (
        {"managed": False, "onchainId": fee_payer, "alreadyOnchain": True, "offchainReferences": {"type": "WALLET", "code": "fp"}},
        {"managed": False, "onchainId": fee_payer, "alreadyOnchain": True, "skipBlockchainExistenceVerification": True, "offchainReferences": {"type": "WALLET"}},
        {"managed": False, "onchainId": fee_payer, "offchainReferences": {"type": "WALLET"}},
    ):
        assert_error(api.call("post", "/api/v1/accounts", {"itemData": item}), 400, code="PLATFORM_ADDRESS_NOT_ALLOWED", field="itemData.onchainId")
    assert not Account.unscoped.filter(address=fee_payer).exists()
    # 2. A record made before the rule (or by any other door) still cannot make the engine
    # sign: the fee payer's key signs only in the fee-payer slot.
    _legacy_record(tenant, fee_payer)
    transactions = Transaction.unscoped.count()
    body = {"itemData": {"source": {"onchainId": fee_payer}, "destination": {"onchainId": mine["onchainId"]}, "value": {"lamports": 1_000_000}}}
    assert_error(api.call("post", "/api/v1/positions/transfer-network-currency?wait=confirmed", body), 400, code="PLATFORM_KEY_NOT_ALLOWED", field="itemData.source")
    assert Transaction.unscoped.count() == transactions  # nothing stored, nothing sent
    after = _lamports(chain, [fee_payer])[fee_payer]
    assert after >= before - 10 * 5_000, (before, after)  # at most the fees of the account's own creation


@pytest.mark.django_db(transaction=True)
def test_the_migration_inactivates_records_of_platform_addresses(tenant):
    fee_payer = str(fee_payers.platform_fee_payer(CLUSTER).pubkey)
    record = _legacy_record(tenant, fee_payer)
    other = Account.unscoped.create(tenant=tenant, cluster=CLUSTER, address=str(Keypair().pubkey()), managed=False, type=AccountType.WALLET, status=AccountStatus.ACTIVE)
    migration = __import__("accounts.migrations.0009_inactivate_platform_addresses", fromlist=["inactivate"])
    migration.inactivate(django_apps, None)
    record.refresh_from_db()
    other.refresh_from_db()
    assert record.status == AccountStatus.INACTIVE and other.status == AccountStatus.ACTIVE


# --- the engine's check, whatever area built the message -----------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_engine_refuses_every_role_but_fee_payer_for_a_platform_key(tenant, localnet_url):
    from solders.system_program import TransferParams, transfer

    platform = _platform()
    payer = fee_payers.platform_fee_payer(CLUSTER)
    outsider = Keypair()
    rpc = rpc_for(CLUSTER)
    rpc.airdrop(outsider.pubkey(), SOL)
    for name, address in platform.items():
        key = Pubkey.from_string(address)
        for ix, signers in (
            (transfer(TransferParams(from_pubkey=key, to_pubkey=outsider.pubkey(), lamports=1)), [SignerSpec(key, None, field="itemData.source")]),
            (transfer(TransferParams(from_pubkey=outsider.pubkey(), to_pubkey=key, lamports=1)), [SignerSpec(outsider.pubkey(), keypair=outsider)]),
        ):
            with pytest.raises(platform_keys.PlatformKeyRefused) as refused:
                transaction_build(context=OperationContext.system(tenant=tenant, cluster=CLUSTER), operation="test", instructions=[ix], signers=signers, config=TxConfig(fee_payer=payer))
            assert address in refused.value.message, name
    # The fee payer in its own role only: a transfer between two others is signed.
    other = Keypair()
    ix = transfer(TransferParams(from_pubkey=outsider.pubkey(), to_pubkey=other.pubkey(), lamports=SOL // 10))
    prepared = transaction_build(context=OperationContext.system(tenant=tenant, cluster=CLUSTER), operation="test", instructions=[ix], signers=[SignerSpec(outsider.pubkey(), keypair=outsider)], config=TxConfig(fee_payer=payer))
    assert set(prepared.signatures) == {str(payer.pubkey), str(outsider.pubkey())}


@pytest.mark.django_db(transaction=True)
def test_a_platform_address_loaded_from_a_lookup_table_is_seen(tenant, localnet_url):
    """A V0 message can name an account through a lookup table instead of its static keys:
    the check reads the loaded addresses too."""
    from solders.address_lookup_table_account import AddressLookupTableAccount
    from solders.hash import Hash
    from solders.message import MessageV0
    from solders.system_program import TransferParams, transfer

    payer = fee_payers.platform_fee_payer(CLUSTER)
    fee_payer = payer.pubkey
    nonce = Pubkey.from_string(_platform()["pool nonce account"])
    outsider = Keypair()
    table = AddressLookupTableAccount(Pubkey.from_string(str(Keypair().pubkey())), [nonce])
    message = MessageV0.try_compile(fee_payer, [transfer(TransferParams(from_pubkey=outsider.pubkey(), to_pubkey=nonce, lamports=1))], [table], Hash.default())
    loaded = builder.loaded_addresses(message, [table])
    assert loaded == ((nonce,), ())
    with pytest.raises(platform_keys.PlatformKeyRefused):
        platform_keys.message_check(message, signing={str(fee_payer): payer, str(outsider.pubkey()): None}, loaded=loaded, platform_signers=[str(fee_payer)])


# --- shared keys (orgsAllowedToSignWithPrivateKey) -----------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_shared_key_signs_for_another_organization_only_under_its_debit_api_keys(tenant, other_tenant, celery_worker_process, chain):
    """Tenant ACME shares its funded account with GLOBEX but lets only its own API key
    debit it: GLOBEX may not make it pay anything, whichever field names it."""
    from tenancy.roles import Role

    acme_key = issue_key(tenant, roles=[Role.PLATFORM_UPDATE_DEBIT_API_KEYS])
    api = make_client(acme_key.secret)
    globex = make_client(issue_key(other_tenant).secret)
    shared = wallet(api, 2 * SOL, shareAcrossTenants=True, orgsAllowedToSignWithPrivateKey=["GLOBEX"], networkCurrencyDebitApiKeys=[acme_key.api_key.key_id])
    before = _lamports(chain, [shared["onchainId"]])
    # As svmTransactionConfig.feePayer of a transfer between GLOBEX's own accounts (the
    # field no debit rule looked at before): refused where the engine signs.
    source, destination = wallet(globex, SOL // 10), wallet(globex)
    transactions = Transaction.unscoped.count()
    body = {"itemData": {"source": source, "destination": destination, "value": {"lamports": 1_000_000}}, "svmTransactionConfig": {"feePayer": {"onchainId": shared["onchainId"]}}}
    assert_error(globex.call("post", "/api/v1/positions/transfer-network-currency?wait=confirmed", body), 403, code="SIGNER_NOT_ALLOWED", field="svmTransactionConfig.feePayer")
    assert Transaction.unscoped.count() == transactions
    assert _lamports(chain, [shared["onchainId"]]) == before
    # ACME's own key still uses it for its own transfer.
    mine, yours = wallet(api, SOL // 10), wallet(api)
    body = {"itemData": {"source": mine, "destination": yours, "value": {"lamports": 1_000_000}}, "svmTransactionConfig": {"feePayer": {"onchainId": shared["onchainId"]}}}
    response = api.call("post", "/api/v1/positions/transfer-network-currency?wait=confirmed", body)
    assert response.status_code == 200 and response.json()["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED"), response.json()


# --- property: every address field of every chain-changing operation ------------------------------


def _replaced(body, path, value):
    body = copy.deepcopy(body)
    target = body
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return body


@pytest.mark.django_db(transaction=True)
def test_no_address_field_of_any_operation_makes_a_platform_key_sign(api, tenant, celery_worker_process, chain):
    from positions.tests.kit import instrument, position

    platform = _platform()
    funder = wallet(api, 3 * SOL)
    other = wallet(api)
    token = instrument(api, authority={"offchainId": funder["offchainId"]})
    mine = position(api, {"offchainId": funder["offchainId"]}, token)
    theirs = position(api, {"offchainId": other["offchainId"]}, token)
    assert api.call("post", "/api/v1/positions/mint?wait=confirmed", {"itemData": {"position": {"position": {"offchainId": mine["offchainId"]}}, "value": {"amount": "10"}}}).status_code == 200
    # A record of the fee payer that predates the rule, to reach the engine through lookups too.
    legacy = {"offchainId": str(_legacy_record(tenant, platform["fee payer"]).offchain_id)}
    operations = [
        ("post", "/api/v1/accounts", {"itemData": {"managed": True, "offchainReferences": {"type": "WALLET"}, "seed": {"lamports": 1_000_000}},
                                      "svmTransactionConfig": {"feePayer": {"offchainId": funder["offchainId"]}}}),
        ("post", "/api/v1/positions/transfer-network-currency", {"itemData": {"source": {"offchainId": funder["offchainId"]}, "destination": {"offchainId": other["offchainId"]}, "value": {"lamports": 1_000}}}),
        ("post", "/api/v1/positions/transfer", {"itemData": {"source": {"position": {"offchainId": mine["offchainId"]}}, "destination": {"position": {"offchainId": theirs["offchainId"]}}, "value": {"amount": "1"}}}),
        ("post", "/api/v1/positions/mint", {"itemData": {"position": {"position": {"offchainId": mine["offchainId"]}}, "value": {"amount": "1"}}}),
        ("post", "/api/v1/positions", {"itemData": {"owner": {"offchainId": other["offchainId"]}, "financialInstrument": {"offchainId": token["offchainId"]}, "associated": False},
                                       "svmTransactionConfig": {"feePayer": {"offchainId": funder["offchainId"]}}}),
        ("post", "/api/v1/durable-nonce-accounts", {"itemData": {"nonceAuthority": {"offchainId": funder["offchainId"]}}, "svmTransactionConfig": {"feePayer": {"offchainId": funder["offchainId"]}}}),
        ("post", "/api/v1/address-lookup-tables", {"itemData": {"authority": {"offchainId": funder["offchainId"]}, "componentAddresses": [{"offchainId": other["offchainId"]}]},
                                                   "svmTransactionConfig": {"feePayer": {"offchainId": funder["offchainId"]}}}),
    ]
    watched = [*platform.values()]
    before = _lamports(chain, watched)
    fees = 0
    tried = 0
    refused: dict[str, int] = {}
    forms = [(name, {"onchainId": address}) for name, address in platform.items()]
    forms += [(name, {"onchainId": address, "offPlatform": True}) for name, address in platform.items()]
    forms += [("fee payer (recorded)", legacy)]
    for (method, path, body), (name, lookup) in itertools.product(operations, forms):
        for where in list(lookup_paths(body)):
            if True:
                tried += 1
                response = api.call(method, path + "?wait=confirmed", _replaced(body, where, lookup))
                if response.status_code >= 400:
                    assert response.status_code < 500, (path, where, name, response.json())
                    refused[response.json()["errors"][0]["code"]] = refused.get(response.json()["errors"][0]["code"], 0) + 1
                    continue
                # Accepted: the platform's only signature is the fee payer's, in its slot, and
                # no instruction names a platform address.
                tx = Transaction.unscoped.filter(tenant=tenant).order_by("-pk").first()
                message = builder.message_from_bytes(bytes(tx.message))
                keys = [str(k) for k in message.account_keys]
                for ix in message.instructions:
                    named = {keys[i] for i in bytes(ix.accounts) if i < len(keys)}
                    assert not named & set(platform.values()), (path, where, name)
                assert set(tx.signatures) & set(platform.values()) <= {platform["fee payer"]}, (path, where, name)
                assert set(keys[1:]) & set(platform.values()) == set(), (path, where, name)  # at most the fee-payer slot
                if platform["fee payer"] in tx.signatures and tx.status in ("CONFIRMED", "FINALIZED"):
                    fees += 5_000 * message.header.num_required_signatures
    assert tried > 50
    # The engine's own check answered where no earlier rule did (a lookup of the legacy record).
    assert refused.get("PLATFORM_KEY_NOT_ALLOWED", 0) > 0, refused
    after = _lamports(chain, watched)
    # The pool's accounts are untouched; the fee payer paid network fees and nothing else
    # (a localnet top-up by airdrop only ever adds).
    assert after[platform["pool nonce account"]] == before[platform["pool nonce account"]]
    assert after[platform["pool nonce authority"]] == before[platform["pool nonce authority"]]
    assert after[platform["fee payer"]] >= before[platform["fee payer"]] - fees - 50 * 5_000
