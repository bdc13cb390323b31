"""Withdraw Transaction (PATCH /api/v1/transactions/withdraw, our extension of the spec) on the
local node: a PARTIALLY_SIGNED transaction whose signatures will not come is withdrawn — it
takes no signature any more, its threshold signing sessions end, and it ends CANCELLED once it
can never execute (at once when the service advances its durable nonce). Chain state is read
back with an unmodified solana-py client (docs/transactions.md, "Withdraw Transaction")."""

from __future__ import annotations

import pytest
from solana.rpc.core import RPCException
from solana.rpc.types import TxOpts
from solders.message import from_bytes_versioned
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.transaction import VersionedTransaction

from accounts.mpc.models import NonceStatus, SigningNonce, SigningSession
from accounts.models import Account, AccountStatus
from conftest import assert_error, make_client
from positions.tests.test_api_transfer_network_currency import account, off_platform, transfer
from tenancy.roles import Role
from tenancy.tests.factories import issue_key
from transactions import fee_payers, settlement
from transactions.chain.rpc import rpc_for
from transactions.models import NonceAccount, Transaction, TransactionEvent, TransactionStatus
from transactions.tests.chainkit import funded, nonce_value
from transactions.tests.test_api_sign import AMOUNT, CLUSTER, SOL, held_transfer, message_of, sign, signed_by, stored

pytestmark = pytest.mark.chain
WITHDRAW = "/api/v1/transactions/withdraw"
SUBMIT = "/api/v1/transactions/submit"


@pytest.fixture(autouse=True)
def localnet_airdrop_funding(settings):
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True


def withdraw(client, held: dict, *, reason: str | None = None, request_id=None, **envelope):
    item = {"transaction": {"offchainId": held["offchainId"]}, **({"reason": reason} if reason is not None else {})}
    return client.call("patch", WITHDRAW, {"itemData": item, **envelope}, request_id=request_id)


def balance(chain, address: str) -> int:
    return chain.get_balance(Pubkey.from_string(address)).value


def blockhash_expired(held: dict) -> None:
    """What a minute of slots does to a RECENT_BLOCKHASH transaction (as test_api_sign.py)."""
    Transaction.unscoped.filter(offchain_id=held["offchainId"]).update(last_valid_block_height=rpc_for(CLUSTER).block_height() - 1)


def reconcile(held: dict) -> str | None:
    """What reconcile_inflight does for a held transaction, run here."""
    return settlement.transaction_expire_held(transaction_id=Transaction.unscoped.get(offchain_id=held["offchainId"]).pk)


def fully_signed(held: dict, extra: dict[str, str]) -> VersionedTransaction:
    """The held message with every signature: the service's (read from its row) and ``extra``
    (signer → signature made off platform), assembled with solders alone."""
    message = from_bytes_versioned(message_of(held))
    signatures = {**Transaction.unscoped.get(offchain_id=held["offchainId"]).signatures, **extra}
    signers = message.account_keys[:message.header.num_required_signatures]
    return VersionedTransaction.populate(message, [Signature.from_string(signatures[str(key)]) for key in signers])


# --- multi-party, RECENT_BLOCKHASH ------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_withdrawn_multi_party_transfer_takes_no_signature_and_ends_cancelled_without_landing(api, chain, celery_worker_process):
    owner = funded(chain, SOL)
    destination = account(api)
    held = held_transfer(api, owner, destination)
    before = balance(chain, destination["onchainId"])

    first = withdraw(api, held, reason="the owner will not sign", request_id="0b6c4a1e-7a8f-4b7e-9d52-3c1e2f4a5b60")
    assert first.status_code == 200, first.json()
    result = first.json()
    # The fee payer's signature (onchainId) is out, so until its blockhash expires the owner could
    # still complete it off platform: PARTIALLY_SIGNED, withdrawn, saying when it ends.
    assert result["status"] == "PARTIALLY_SIGNED" and result["offchainId"] == held["offchainId"]
    assert result["errorMessage"].startswith("Withdrawn by ") and "the owner will not sign" in result["errorMessage"]
    assert "ends CANCELLED once its blockhash expires" in result["errorMessage"]

    # The same x-request-id replays the stored answer; nothing runs twice.
    replay = withdraw(api, held, reason="the owner will not sign", request_id="0b6c4a1e-7a8f-4b7e-9d52-3c1e2f4a5b60")
    assert replay.status_code == 200 and replay.content == first.content and replay["x-idempotent-replay"] == "true"
    tx = Transaction.unscoped.get(offchain_id=held["offchainId"])
    assert TransactionEvent.objects.filter(transaction=tx, kind="WITHDRAWN").count() == 1

    # A later signature is refused, and so is Submit; nothing is stored.
    frozen = stored(held)
    body = assert_error(sign(api, held, off=[signed_by(owner, held)]), 400, "INVALID_TRANSACTION_STATE", "itemData.transaction")
    assert "withdrawn" in body["errors"][0]["message"]
    assert_error(api.call("patch", SUBMIT, {"itemData": {"transaction": {"offchainId": held["offchainId"]}}}), 400, "INVALID_TRANSACTION_STATE", "itemData.transaction")
    # Withdrawn already (a new request): 400, nothing changes.
    body = assert_error(withdraw(api, held), 400, "INVALID_TRANSACTION_STATE", "itemData.transaction")
    assert "withdrawn already" in body["errors"][0]["message"]
    assert stored(held) == frozen

    # Within its lifetime the reconciliation leaves it; once its blockhash expired it ends CANCELLED
    # (not EXPIRED), failure effects once, and it never landed.
    assert reconcile(held) is None
    blockhash_expired(held)
    assert reconcile(held) == TransactionStatus.CANCELLED
    status = api.call("post", "/api/v1/transactions/single/status", {"itemData": {"transaction": {"offchainId": held["offchainId"]}}}).json()
    assert status["status"] == "CANCELLED" and status["success"] is False
    assert status["errorMessage"].startswith("Withdrawn by ") and status["errorMessage"].endswith("nothing was executed.")
    assert TransactionEvent.objects.filter(transaction=tx, kind="FAILURE_EFFECTS_APPLIED").count() == 1
    assert chain.get_signature_statuses([Signature.from_string(held["onchainId"])]).value[0] is None
    assert balance(chain, destination["onchainId"]) == before


# --- durable nonce -------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_withdrawing_a_durable_nonce_transaction_advances_its_nonce_so_its_signed_bytes_fail(api, chain, celery_worker_process):
    fee_payers.nonce_pool_fill(cluster=CLUSTER, target=4)
    owner = funded(chain, SOL)
    destination = account(api)
    held = held_transfer(api, owner, destination, svmTransactionConfig={"messageLifetimeStrategy": "DURABLE_NONCE"})
    tx = Transaction.unscoped.get(offchain_id=held["offchainId"])
    lease = NonceAccount.objects.get(leased_by=tx)
    assert str(nonce_value(chain, Pubkey.from_string(lease.address))) == tx.blockhash
    before = balance(chain, destination["onchainId"])

    response = withdraw(api, held)
    assert response.status_code == 200, response.json()
    # The service holds the nonce authority: advanced (and landed) before the answer, so CANCELLED now.
    assert response.json()["status"] == "CANCELLED" and response.json()["success"] is False, response.json()
    assert response.json()["errorMessage"].endswith("nothing was executed.")
    assert str(nonce_value(chain, Pubkey.from_string(lease.address))) != tx.blockhash
    lease.refresh_from_db()
    assert lease.leased_by_id is None  # the nonce was spent: free for another transaction

    # The owner's signature made afterwards completes the old bytes; sent by anyone, they fail on chain.
    late = fully_signed(held, {str(owner.pubkey()): str(owner.sign_message(message_of(held)))})
    with pytest.raises(RPCException):
        chain.send_raw_transaction(bytes(late), opts=TxOpts(skip_preflight=False, preflight_commitment="processed"))
    assert chain.get_signature_statuses([late.signatures[0]]).value[0] is None
    assert balance(chain, destination["onchainId"]) == before
    assert_error(sign(api, held, off=[signed_by(owner, held)]), 400, "INVALID_TRANSACTION_STATE", "itemData.transaction")


# --- threshold signing --------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_withdrawing_ends_the_transactions_threshold_signing_sessions(api, chain, celery_worker_process):
    from accounts.tests.dkg_kit import ApiPlayer
    from transactions.tests.test_api_sign_dkg import held_transfer as dkg_transfer, make_account, open_session, partial, signing_status, until

    external = ApiPlayer(3, "CLIENT_X", api)
    address = make_account(api, chain, external)
    held = dkg_transfer(api, address)
    # One session has its signing package and the backend share; another waits for commitments.
    signing = open_session(api, held, address, ["BACKEND_A", "CLIENT_X"]).json()["sessionId"]
    external.commit_to(signing)
    state = until(api, signing, lambda s: s["signingPackage"] is not None and s["players"][0]["partialSignatureReceived"], "the backend share")
    committing = open_session(api, held, address, ["BACKEND_B", "CLIENT_X"]).json()["sessionId"]
    until(api, committing, lambda s: s["players"][0]["committed"], "the backend commitment")
    assert SigningNonce.objects.filter(session__offchain_id=committing, status=NonceStatus.FRESH).count() == 1

    response = withdraw(api, held)
    assert response.status_code == 200 and response.json()["status"] == "PARTIALLY_SIGNED", response.json()
    for session_id in (signing, committing):
        ended = signing_status(api, session_id)
        assert ended["status"] == "CANCELLED" and "withdrawn" in ended["errorMessage"], ended
    assert not SigningNonce.objects.filter(session__offchain_id=committing, status=NonceStatus.FRESH).exists()  # unused nonces dropped
    tx = Transaction.unscoped.get(offchain_id=held["offchainId"])
    assert TransactionEvent.objects.get(transaction=tx, kind="WITHDRAWN").detail["sessions_ended"] == 2

    # The external player's share (valid for the package) is refused, and no new session opens.
    share = external.share_for(state["signingPackage"])
    assert_error(partial(api, held, address, signing, "CLIENT_X", share), 400, "INVALID_TRANSACTION_STATE", "itemData.transaction")
    assert_error(open_session(api, held, address, ["BACKEND_A", "BACKEND_B"]), 400, "INVALID_TRANSACTION_STATE", "itemData.transaction")
    assert SigningSession.unscoped.filter(transaction=tx).count() == 2
    blockhash_expired(held)
    assert reconcile(held) == TransactionStatus.CANCELLED
    assert Transaction.unscoped.get(pk=tx.pk).signatures.get(address) is None


# --- who may withdraw what ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_another_organizations_transaction_is_404_like_a_missing_one_and_overriding_needs_the_role(api, other_api, other_tenant, chain, celery_worker_process):
    owner = funded(chain, SOL)
    held = held_transfer(api, owner)
    before = stored(held)
    missing = assert_error(withdraw(other_api, {"offchainId": "6a1b0c9e-2f4d-4e8a-9b7c-5d3e1f2a4b6c"}), 404, "NOT_FOUND", "itemData.transaction")
    hidden = assert_error(withdraw(other_api, held), 404, "NOT_FOUND", "itemData.transaction")
    assert hidden["errors"] == missing["errors"]
    # Acting for the transaction's organization needs PLATFORM_CROSS_TENANT_ACCESS (403 before anything is looked up).
    override = {"tenancyConfig": {"overrideOrganizationExternalId": "ACME"}}
    assert_error(withdraw(other_api, held, **override), 403, "MISSING_ROLE", "tenancyConfig.overrideOrganizationExternalId")
    assert stored(held) == before
    operator = make_client(issue_key(other_tenant, roles=[Role.PLATFORM_CROSS_TENANT_ACCESS]).secret)
    done = withdraw(operator, held, **override)
    assert done.status_code == 200 and done.json()["errorMessage"].startswith("Withdrawn by "), done.json()


@pytest.mark.django_db(transaction=True)
def test_only_a_partially_signed_transaction_can_be_withdrawn(api, chain, celery_worker_process):
    # Held for approval (a transfer off platform over the default limit of 0): the approver's Reject is its way out.
    pending = transfer(api, account(api, SOL), off_platform(), {"lamports": AMOUNT}, wait=False).json()["svmTransaction"]
    assert pending["status"] == "PENDING_APPROVAL"
    before = stored(pending)
    body = assert_error(withdraw(api, pending), 400, "INVALID_TRANSACTION_STATE", "itemData.transaction")
    assert "Reject Transaction" in body["errors"][0]["message"]
    assert stored(pending) == before
    # Submitted (every signature was there): refused.
    sent = transfer(api, account(api, SOL), account(api), {"lamports": AMOUNT}, wait="confirmed").json()["svmTransaction"]
    assert sent["status"] in ("CONFIRMED", "FINALIZED"), sent
    body = assert_error(withdraw(api, sent), 400, "INVALID_TRANSACTION_STATE", "itemData.transaction")
    assert "submitted" in body["errors"][0]["message"]
    # Ended: refused.
    ended = held_transfer(api, funded(chain, SOL))
    blockhash_expired(ended)
    assert reconcile(ended) == TransactionStatus.EXPIRED
    assert "ended" in assert_error(withdraw(api, ended), 400, "INVALID_TRANSACTION_STATE")["errors"][0]["message"]


@pytest.mark.django_db(transaction=True)
def test_a_withdrawn_account_creation_fails_its_pending_account_once(api, chain, celery_worker_process):
    """Failure effects, as for any cancel: the PENDING account the operation recorded becomes FAILED."""
    fee_payers.nonce_pool_fill(cluster=CLUSTER, target=4)
    payer = funded(chain, SOL)
    assert api.call("post", "/api/v1/accounts", {"itemData": {"managed": False, "alreadyOnchain": True, "onchainId": str(payer.pubkey())}}).status_code == 201
    created = api.call("post", "/api/v1/accounts", {"itemData": {"managed": True, "seed": {"lamports": 1_000_000}, "offchainReferences": {"code": "WITHDRAWN"}},
                                                    "svmTransactionConfig": {"feePayer": {"onchainId": str(payer.pubkey())}, "messageLifetimeStrategy": "DURABLE_NONCE"}})
    assert created.status_code == 201, created.json()
    held = created.json()["svmTransaction"]
    assert held["status"] == "PARTIALLY_SIGNED"
    response = withdraw(api, held)
    assert response.status_code == 200 and response.json()["status"] == "CANCELLED", response.json()
    record = Account.unscoped.get(offchain_id=created.json()["newAccount"]["offchainId"])
    assert record.status == AccountStatus.FAILED
    assert balance(chain, created.json()["newAccount"]["onchainId"]) == 0
