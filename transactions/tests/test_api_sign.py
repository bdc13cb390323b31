"""Sign Transaction (PATCH /api/v1/transactions/sign) on the local node: signatures made off
platform by the test with solders, on-platform signing with keys the caller may use, and
every refusal with its exact status and code, the database unchanged (docs/transactions.md,
"Sign Transaction and Submit Transaction"). Chain effects are read back with an unmodified
solana-py client."""

from __future__ import annotations

import base64
from datetime import timedelta

import pytest
from django.db.models import F
from solders.keypair import Keypair
from solders.message import to_bytes_versioned
from solders.pubkey import Pubkey
from solders.signature import Signature

from conftest import assert_error, make_client
from positions.tests.test_api_transfer_network_currency import account, off_platform, transfer, watched
from tenancy.roles import Role
from tenancy.tests.factories import issue_key
from transactions import nonce_pool, settlement
from chain import builder
from chain.rpc import rpc_for
from transactions.models import NonceAccount, Transaction, TransactionEvent, TransactionStatus
from transactions.responses import wait_for
from transactions.tests.chainkit import funded

pytestmark = pytest.mark.chain
CLUSTER = "CHAIN_LOCALNET"
SIGN = "/api/v1/transactions/sign"
SOL = 10**9
AMOUNT = 10_000_000  # over the rent-exempt minimum: the destination need not exist yet
LANDED = ("CONFIRMED", "FINALIZED")


@pytest.fixture(autouse=True)
def localnet_airdrop_funding(settings):
    """Seeds of the test's managed wallets are paid by the localnet airdrop funder
    (docs/accounts.md, "Who pays"), as in positions/tests/conftest.py."""
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True


# --- helpers (test_api_submit.py uses them too) ----------------------------------------------


def held_transfer(api, owner: Keypair, destination: dict | None = None, **envelope) -> dict:
    """Transfer Network Currency from an account whose key the service does not hold
    (``owner``'s, recorded NON_MANAGED) to a managed account: the transaction result,
    PARTIALLY_SIGNED (no debit limit applies to a managed destination)."""
    source = watched(api, str(owner.pubkey()))
    response = transfer(api, source, destination or account(api), {"lamports": AMOUNT}, wait=False, **envelope)
    assert response.status_code == 200, response.json()
    held = response.json()["svmTransaction"]
    assert held["status"] == "PARTIALLY_SIGNED", held
    return held


def message_of(held: dict) -> bytes:
    return base64.b64decode(held["serializedMessage"])


def signed_by(keypair: Keypair, held: dict, **extra) -> dict:
    """An offPlatformSigning entry: ``keypair``'s signature of the serializedMessage bytes."""
    return {"account": {"onchainId": str(keypair.pubkey())}, "signature": str(keypair.sign_message(message_of(held))), **extra}


def sign(client, held: dict, *, off=(), on=(), wait: str | None = None, request_id=None, **item):
    body = {"itemData": {"transaction": {"offchainId": held["offchainId"]}, **({"offPlatformSigning": list(off)} if off else {}),
                         **({"onPlatformSigning": list(on)} if on else {}), **item}}
    return client.call("patch", SIGN + (f"?wait={wait}" if wait else ""), body, request_id=request_id)


def stored(held: dict) -> tuple:
    """Everything a refusal must leave as it was: the row and its events."""
    tx = Transaction.unscoped.get(offchain_id=held["offchainId"])
    return Transaction.unscoped.values().get(pk=tx.pk), list(TransactionEvent.objects.filter(transaction=tx).values_list("kind", "detail"))


def landed_on_chain(chain, signature: str, message: bytes, signers: list[Keypair]):
    """The transaction as the node serves it (solana-py): no error, the very message
    stored, each off-platform signature in place."""
    found = chain.get_transaction(Signature.from_string(signature), encoding="base64", max_supported_transaction_version=0).value
    assert found is not None and found.transaction.meta.err is None
    landed = found.transaction.transaction
    assert to_bytes_versioned(landed.message) == message
    for keypair in signers:
        assert keypair.sign_message(message) in landed.signatures
    return landed


# --- the whole path ----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_transfer_from_an_unmanaged_owner_completes_with_a_signature_made_off_platform(api, celery_worker_process, chain):
    owner = funded(chain, SOL)
    destination = account(api)
    held = held_transfer(api, owner, destination)
    assert held["onchainId"]  # the platform fee payer signed when it was built
    tx = Transaction.unscoped.get(offchain_id=held["offchainId"])
    assert tx.missing_signers == [str(owner.pubkey())]

    entry = signed_by(owner, held)
    first = sign(api, held, off=[entry], request_id="8d0a3f43-5f0c-4d5b-9c51-3f2d7a8e1b01")
    assert first.status_code == 200, first.json()
    assert first.json()["status"] == "SIGNED" and first.json()["onchainId"] == held["onchainId"]
    # The same x-request-id replays the stored answer; nothing runs twice.
    # (The pump may record the submission meanwhile: only the signing events are compared.)
    def signing_events():
        return [(kind, detail) for kind, detail in stored(held)[1] if kind == "SIGNATURES_ADDED"]

    events = signing_events()
    replay = sign(api, held, off=[entry], request_id="8d0a3f43-5f0c-4d5b-9c51-3f2d7a8e1b01")
    assert replay.status_code == 200 and replay.content == first.content and replay["x-idempotent-replay"] == "true"
    assert signing_events() == events and len(events) == 1

    assert wait_for(tx, "confirmed").status in LANDED
    landed_on_chain(chain, held["onchainId"], message_of(held), [owner])
    assert chain.get_balance(Pubkey.from_string(destination["onchainId"])).value == AMOUNT

    # Signing it again once it was submitted: 400, the exact state named, nothing changes.
    before = stored(held)
    again = sign(api, held, off=[entry])
    body = assert_error(again, 400, "INVALID_TRANSACTION_STATE", "itemData.transaction")
    assert "was submitted" in body["errors"][0]["message"]
    assert stored(held) == before


@pytest.mark.django_db(transaction=True)
def test_three_signers_of_a_durable_nonce_transaction_sign_hours_apart(api, celery_worker_process, chain):
    """Fee payer and source sign off platform, hours apart; the platform's nonce authority
    signed when it was built. A RECENT_BLOCKHASH twin built at the same time is long dead
    by then; the nonce is still valid."""
    nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=4)  # stays above the low-water mark: no fill queued
    payer, owner = funded(chain, SOL), funded(chain, SOL)
    watched(api, str(payer.pubkey()))
    destination = account(api)
    config = {"feePayer": {"onchainId": str(payer.pubkey())}}
    held = held_transfer(api, owner, destination, svmTransactionConfig={**config, "messageLifetimeStrategy": "DURABLE_NONCE"})
    twin = transfer(api, {"onchainId": str(owner.pubkey())}, destination, {"lamports": AMOUNT}, wait=False, svmTransactionConfig=config).json()["svmTransaction"]
    tx = Transaction.unscoped.get(offchain_id=held["offchainId"])
    lease = NonceAccount.objects.get(leased_by=tx)
    authority = lease.authority_key.public_key
    assert tx.required_signers[0] == str(payer.pubkey()) and set(tx.required_signers) == {str(payer.pubkey()), str(owner.pubkey()), authority}
    assert list(tx.signatures) == [authority] and held["onchainId"] is None  # the fee payer's signature is the id: not known yet

    # Call 1, right away: the source's signature. Still PARTIALLY_SIGNED.
    first = sign(api, held, off=[signed_by(owner, held)])
    assert first.status_code == 200 and first.json()["status"] == "PARTIALLY_SIGNED", first.json()

    # Hours pass: what they do to both transactions' stored times, and to the twin's blockhash.
    hours = timedelta(hours=6)
    Transaction.unscoped.filter(offchain_id__in=[held["offchainId"], twin["offchainId"]]).update(txn_timestamp=F("txn_timestamp") - hours, updated_at=F("updated_at") - hours)
    Transaction.unscoped.filter(offchain_id=twin["offchainId"]).update(last_valid_block_height=rpc_for(CLUSTER).block_height() - 1)
    before_twin = stored(twin)
    assert_error(sign(api, twin, off=[signed_by(owner, twin), signed_by(payer, twin)]), 400, "TRANSACTION_EXPIRED", "itemData.transaction")
    assert stored(twin) == before_twin
    # Reconciliation looks at the held one: its nonce is unchanged and its window (24 h) not over.
    assert settlement.transaction_expire_held(transaction_id=tx.pk) is None
    tx.refresh_from_db()
    assert tx.status == TransactionStatus.PARTIALLY_SIGNED
    assert str(builder.nonce_value(rpc_for(CLUSTER), Pubkey.from_string(lease.address))) == tx.blockhash

    # Call 2: the source's signature again — idempotent, nothing changes.
    before = stored(held)
    again = sign(api, held, off=[signed_by(owner, held)])
    assert again.status_code == 200 and again.json()["status"] == "PARTIALLY_SIGNED"
    assert stored(held) == before

    # Call 3: the fee payer's. Every signature is in: submitted, landed.
    last = sign(api, held, off=[signed_by(payer, held)], wait="confirmed")
    assert last.status_code == 200 and last.json()["status"] in LANDED, last.json()
    assert last.json()["onchainId"] == str(payer.sign_message(message_of(held)))
    landed = landed_on_chain(chain, last.json()["onchainId"], message_of(held), [payer, owner])
    assert len(landed.signatures) == 3
    assert chain.get_balance(Pubkey.from_string(destination["onchainId"])).value == AMOUNT
    assert str(builder.nonce_value(rpc_for(CLUSTER), Pubkey.from_string(lease.address))) != tx.blockhash  # the nonce moved on


# --- refusals -----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_refused_signatures_change_nothing(api, tenant, other_api, chain, celery_worker_process):
    owner = funded(chain, SOL)
    destination = account(api)
    held = held_transfer(api, owner, destination)
    before = stored(held)
    outsider = Keypair()
    forged = {"account": {"onchainId": str(owner.pubkey())}, "signature": str(outsider.sign_message(message_of(held)))}
    refusals = [
        # A signature that does not verify (another key's, garbage), even next to a good one.
        ({"off": [forged]}, 400, "INVALID_SIGNATURE", "itemData.offPlatformSigning[0].signature"),
        ({"off": [{**forged, "signature": "not-a-signature"}]}, 400, "INVALID_SIGNATURE", "itemData.offPlatformSigning[0].signature"),
        ({"off": [signed_by(owner, held), forged]}, 400, "INVALID_SIGNATURE", "itemData.offPlatformSigning[1].signature"),
        # Foreign signers: an address that signs nothing here (with its own valid signature), a recorded account that is not a signer.
        ({"off": [{**signed_by(outsider, held), "account": {"onchainId": str(outsider.pubkey()), "offPlatform": True}}]}, 400, "NOT_A_SIGNER", "itemData.offPlatformSigning[0].account"),
        ({"off": [{"account": {"offchainId": destination["offchainId"]}, "signature": forged["signature"]}]}, 400, "NOT_A_SIGNER", "itemData.offPlatformSigning[0].account"),
        # An address the service does not record, without offPlatform: true, names nothing.
        ({"off": [{**signed_by(outsider, held)}]}, 404, "NOT_FOUND", "itemData.offPlatformSigning[0].account"),
        # dkgSigning (threshold signing, transactions/tests/test_api_sign_dkg.py): not with signature; partial signatures
        # are for a DKG account's signing session, which this account has none of.
        ({"off": [{**signed_by(owner, held), "dkgSigning": {"sessionId": "s-1", "partialSignatures": [{"mpcPlayerCode": "P1", "partialSignature": "00" * 32}]}}]},
         400, "CONFLICTING_FIELDS", "itemData.offPlatformSigning[0].dkgSigning"),
        ({"off": [{"account": {"onchainId": str(owner.pubkey())}, "dkgSigning": {"sessionId": "s-1"}}]}, 400, "REQUIRED", "itemData.offPlatformSigning[0].dkgSigning.partialSignatures"),
        ({"off": [{"account": {"onchainId": str(owner.pubkey())}, "dkgSigning": {"sessionId": "s-1", "partialSignatures": [{"mpcPlayerCode": "P1", "partialSignature": "00" * 32}]}}]},
         400, "NOT_A_DKG_ACCOUNT", "itemData.offPlatformSigning[0].account"),
        ({"off": [{"account": {"onchainId": str(owner.pubkey())}}]}, 400, "REQUIRED", "itemData.offPlatformSigning[0].signature"),
        # onPlatformSigning of an account whose key the service does not hold.
        ({"on": [{"onchainId": str(owner.pubkey())}]}, 403, "SIGNER_NOT_ALLOWED", "itemData.onPlatformSigning[0]"),
        # A managed account the key may use, but not a signer of this transaction.
        ({"on": [{"offchainId": destination["offchainId"]}]}, 400, "NOT_A_SIGNER", "itemData.onPlatformSigning[0]"),
    ]
    for call, status, code, field in refusals:
        assert_error(sign(api, held, **call), status, code, field)
        assert stored(held) == before, (call, code)

    # A managed account whose debit API keys leave this key out: its key does not sign for it.
    keys_admin = make_client(issue_key(tenant, roles=[Role.PLATFORM_UPDATE_DEBIT_API_KEYS]).secret)
    restricted = account(keys_admin, networkCurrencyDebitApiKeys=["payments-bot"])
    assert_error(sign(api, held, on=[{"offchainId": restricted["offchainId"]}]), 403, "SIGNER_NOT_ALLOWED", "itemData.onPlatformSigning[0]")
    assert stored(held) == before

    # Unknown transactions, and another organization's, are 404 alike.
    unknown = {"offchainId": "6a1b0c9e-2f4d-4e8a-9b7c-5d3e1f2a4b6c"}
    missing = assert_error(sign(api, unknown, off=[signed_by(owner, held)]), 404, "NOT_FOUND", "itemData.transaction")
    theirs = held_transfer(other_api, funded(chain, SOL))
    hidden = assert_error(sign(api, theirs, off=[signed_by(owner, held)]), 404, "NOT_FOUND", "itemData.transaction")
    assert hidden["errors"] == missing["errors"]
    assert stored(held) == before

    # Nothing to add is not an error: the current result, nothing changes.
    empty = sign(api, held)
    assert empty.status_code == 200 and empty.json()["status"] == "PARTIALLY_SIGNED"
    assert stored(held) == before


@pytest.mark.django_db(transaction=True)
def test_on_platform_signing_uses_another_organizations_key_once_it_is_allowed(api, other_api, chain, celery_worker_process):
    """A shared managed account of another organization pays the fee; its key signs on
    platform only once that organization lists this one in orgsAllowedToSignWithPrivateKey
    (spec, Authentication 4)."""
    payer = funded(chain, SOL)
    created = other_api.call("post", "/api/v1/accounts", {"itemData": {
        "managed": True, "alreadyOnchain": True, "shareAcrossTenants": True, "privateKeyDetails": {"privateKey": str(payer)}, "offchainReferences": {"type": "WALLET"}}})
    assert created.status_code == 201, created.json()
    shared = {"onchainId": str(payer.pubkey()), "otherTenantOrganizationExternalId": "GLOBEX"}
    owner = funded(chain, SOL)
    destination = account(api)
    held = held_transfer(api, owner, destination, svmTransactionConfig={"feePayer": shared})
    assert Transaction.unscoped.get(offchain_id=held["offchainId"]).missing_signers == [str(payer.pubkey()), str(owner.pubkey())]

    before = stored(held)
    assert_error(sign(api, held, off=[signed_by(owner, held)], on=[shared]), 403, "SIGNER_NOT_ALLOWED", "itemData.onPlatformSigning[0]")
    assert stored(held) == before  # the good off-platform signature was not stored either

    allowed = other_api.call("patch", "/api/v1/accounts", {"itemData": {"account": {"onchainId": str(payer.pubkey())}, "orgsAllowedToSignWithPrivateKey": ["ACME"]}})
    assert allowed.status_code == 200, allowed.json()
    done = sign(api, held, off=[signed_by(owner, held)], on=[shared], wait="confirmed")
    assert done.status_code == 200 and done.json()["status"] in LANDED, done.json()
    landed_on_chain(chain, done.json()["onchainId"], message_of(held), [payer, owner])
    assert chain.get_balance(Pubkey.from_string(destination["onchainId"])).value == AMOUNT


@pytest.mark.django_db(transaction=True)
def test_signing_a_transaction_held_for_approval_or_ended_is_refused(api, chain, celery_worker_process):
    held = transfer(api, account(api, SOL), off_platform(), {"lamports": AMOUNT}, wait=False).json()["svmTransaction"]
    assert held["status"] == "PENDING_APPROVAL"  # over the default OFF_PLATFORM limit of 0
    before = stored(held)
    body = assert_error(sign(api, held, off=[signed_by(Keypair(), held)]), 400, "INVALID_TRANSACTION_STATE", "itemData.transaction")
    assert "awaits approval" in body["errors"][0]["message"]
    assert stored(held) == before

    ended = held_transfer(api, funded(chain, SOL))
    Transaction.unscoped.filter(offchain_id=ended["offchainId"]).update(last_valid_block_height=rpc_for(CLUSTER).block_height() - 1)
    tx = Transaction.unscoped.get(offchain_id=ended["offchainId"])
    assert settlement.transaction_expire_held(transaction_id=tx.pk) == TransactionStatus.EXPIRED  # its blockhash is past
    before = stored(ended)
    body = assert_error(sign(api, ended, off=[signed_by(Keypair(), ended)]), 400, "INVALID_TRANSACTION_STATE", "itemData.transaction")
    assert "ended" in body["errors"][0]["message"]
    assert stored(ended) == before
