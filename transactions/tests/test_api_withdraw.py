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
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import AdvanceNonceAccountParams, advance_nonce_account
from solders.signature import Signature
from solders.transaction import VersionedTransaction

from accounts.mpc.models import NonceStatus, SigningNonce, SigningSession, ThresholdKey
from accounts.models import Account, AccountStatus
from conftest import assert_error, make_client
from ledger_project.api.errors import LedgerError
from positions.tests.test_api_transfer_network_currency import account, off_platform, transfer
from tenancy.roles import Role
from tenancy.tests.factories import issue_key
from tests.workers import wait_for as wait_until
from transactions import dkg_signers, nonce_pool, settlement, signatures, staff, withdrawals
from chain.rpc import rpc_for
from transactions.models import NonceAccount, Transaction, TransactionEvent, TransactionStatus
from transactions.tests.chainkit import funded, nonce_value, send
from transactions.collecting import transaction_add_signatures
from transactions.tests.test_api_nonce_accounts import created, funder, row, source  # noqa: F401 - fixtures
from transactions.tests.test_api_nonce_accounts import transfer as nonce_transfer, watched as watched_key
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


@pytest.mark.django_db(transaction=True)
def test_a_retry_of_the_same_request_whose_answer_was_not_stored_carries_on(api, api_key, chain, celery_worker_process):
    """A crash after the mark committed, before the answer was stored: the same key and
    x-request-id again finds its own WITHDRAWN event; another request is refused."""
    held = held_transfer(api, funded(chain, SOL))
    tx = Transaction.unscoped.get(offchain_id=held["offchainId"])
    request_id = "5d2f1e0a-3b4c-4d5e-8f60-718293a4b5c6"
    first = withdrawals.transaction_withdraw(transaction=tx, api_key=api_key.api_key, request_id=request_id)
    again = withdrawals.transaction_withdraw(transaction=tx, api_key=api_key.api_key, request_id=request_id)
    assert first.withdrawn_at == again.withdrawn_at and again.status == TransactionStatus.PARTIALLY_SIGNED
    assert TransactionEvent.objects.filter(transaction=tx, kind="WITHDRAWN").count() == 1
    other = issue_key(tx.tenant).api_key
    for key, rid in ((api_key.api_key, "7e3a2b1c-0d9e-4f8a-9b7c-6d5e4f3a2b1c"), (api_key.api_key, None), (other, request_id)):
        with pytest.raises(LedgerError) as refused:
            withdrawals.transaction_withdraw(transaction=tx, api_key=key, request_id=rid)
        assert refused.value.code == "INVALID_TRANSACTION_STATE"


@pytest.mark.django_db(transaction=True)
def test_staff_reconcile_ends_a_withdrawn_transaction_once_its_blockhash_expired(api, chain, celery_worker_process):
    held = held_transfer(api, funded(chain, SOL))
    assert withdraw(api, held).status_code == 200
    tx = Transaction.unscoped.get(offchain_id=held["offchainId"])
    assert staff.transaction_reconcile(transaction_id=tx.pk).done == "still within its lifetime: left held"
    blockhash_expired(held)
    outcome = staff.transaction_reconcile(transaction_id=tx.pk)
    assert (outcome.before, outcome.after) == ("PARTIALLY_SIGNED", "CANCELLED") and "withdrawn" in outcome.done, outcome


# --- durable nonce -------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_withdrawing_a_durable_nonce_transaction_advances_its_nonce_so_its_signed_bytes_fail(api, chain, celery_worker_process):
    nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=4)
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


@pytest.mark.django_db(transaction=True)
def test_a_withdrawn_transaction_whose_nonce_authority_signs_off_platform_ends_when_the_authority_advances_it(api, funder, source, chain, celery_worker_process):
    authority = Keypair()
    [ids] = created(api, 1, funder, authority=watched_key(api, authority))
    held = nonce_transfer(api, source, wait=None, durableNonceAccount=ids).json()["svmTransaction"]
    assert held["status"] == "PARTIALLY_SIGNED", held
    tx = Transaction.unscoped.get(offchain_id=held["offchainId"])

    response = withdraw(api, held)
    # The service cannot advance this nonce: whoever holds the authority's key could still complete it.
    assert response.status_code == 200 and response.json()["status"] == "PARTIALLY_SIGNED", response.json()
    assert "AdvanceNonceAccount" in response.json()["errorMessage"]
    assert row(ids).leased_by_id == tx.pk
    assert reconcile(held) is None  # the nonce has not moved: it stays withdrawn, the lease kept
    assert_error(sign(api, held, off=[signed_by(authority, held)]), 400, "INVALID_TRANSACTION_STATE", "itemData.transaction")

    # The authority advances the nonce itself: the reconciliation ends it CANCELLED and frees the account.
    send(chain, funded(chain, 10**8), [advance_nonce_account(AdvanceNonceAccountParams(nonce_pubkey=Pubkey.from_string(ids["onchainId"]), authorized_pubkey=authority.pubkey()))], [authority])
    assert reconcile(held) == TransactionStatus.CANCELLED
    assert row(ids).leased_by_id is None and not tx.events.filter(kind="NONCE_LEASE_KEPT").exists()


# --- races and a transaction sent by its signers anyway -------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_withdrawal_committed_during_sign_transactions_read_phase_refuses_its_write_phase(api, api_key, chain, celery_worker_process, monkeypatch):
    owner = funded(chain, SOL)
    held = held_transfer(api, owner)
    tx = Transaction.unscoped.get(offchain_id=held["offchainId"])
    checked = signatures.lifetime_check

    def withdrawn_meanwhile(transaction):
        checked(transaction)  # the read phase passed: the signature verified, the lifetime is fine
        withdrawals.transaction_withdraw(transaction=tx, api_key=api_key.api_key)

    monkeypatch.setattr(signatures, "lifetime_check", withdrawn_meanwhile)
    body = assert_error(sign(api, held, off=[signed_by(owner, held)]), 400, "INVALID_TRANSACTION_STATE", "itemData.transaction")
    assert "withdrawn" in body["errors"][0]["message"]
    tx.refresh_from_db()
    assert str(owner.pubkey()) not in tx.signatures and tx.status == TransactionStatus.PARTIALLY_SIGNED and tx.withdrawn_at is not None


@pytest.mark.django_db(transaction=True)
def test_a_signature_committed_before_the_withdrawal_marks_wins_and_the_withdrawal_is_refused(api, chain, celery_worker_process, monkeypatch):
    owner = funded(chain, SOL)
    destination = account(api)
    held = held_transfer(api, owner, destination)
    tx = Transaction.unscoped.get(offchain_id=held["offchainId"])
    mark = withdrawals._mark

    def signed_meanwhile(transaction, **kwargs):
        transaction_add_signatures(transaction=tx, signatures={str(owner.pubkey()): str(owner.sign_message(message_of(held)))})
        mark(transaction, **kwargs)

    monkeypatch.setattr(withdrawals, "_mark", signed_meanwhile)
    body = assert_error(withdraw(api, held), 400, "INVALID_TRANSACTION_STATE", "itemData.transaction")
    assert "submitted" in body["errors"][0]["message"]
    tx.refresh_from_db()
    assert tx.withdrawn_at is None and not tx.events.filter(kind="WITHDRAWN").exists()


@pytest.mark.django_db(transaction=True)
def test_a_withdrawn_transaction_its_signers_sent_anyway_is_followed_never_cancelled(api, chain, celery_worker_process):
    """Withdrawing a RECENT_BLOCKHASH transaction cannot unsay the fee payer's signature (its
    onchainId): the owner completes the message and sends it before its blockhash expires.
    The service finds it landed and applies its effects; it never calls it CANCELLED."""
    owner = funded(chain, SOL)
    destination = account(api)
    held = held_transfer(api, owner, destination)
    before = balance(chain, destination["onchainId"])
    assert withdraw(api, held).json()["status"] == "PARTIALLY_SIGNED"

    complete = fully_signed(held, {str(owner.pubkey()): str(owner.sign_message(message_of(held)))})
    chain.send_raw_transaction(bytes(complete), opts=TxOpts(skip_preflight=False, preflight_commitment="processed"))
    assert str(complete.signatures[0]) == held["onchainId"]
    wait_until(lambda: chain.get_signature_statuses([complete.signatures[0]]).value[0], timeout=30, what="the transaction its signers sent")
    blockhash_expired(held)  # the reconciliation looks for it on chain once its lifetime is over
    assert reconcile(held) == TransactionStatus.SUBMITTED
    tx = Transaction.unscoped.get(offchain_id=held["offchainId"])
    assert tx.events.filter(kind="LANDED_UNSUBMITTED").exists()
    settlement.transaction_confirm(transaction_id=tx.pk)
    tx.refresh_from_db()
    assert tx.status in ("CONFIRMED", "FINALIZED") and tx.effects_applied_at is not None, (tx.status, tx.error_message)
    assert balance(chain, destination["onchainId"]) == before + AMOUNT


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
    # 2-of-3 with one external player: no signature under the account's key exists without a
    # backend player, and the service signs nothing more for it, so no complete set of
    # signatures can exist: CANCELLED at once, though its blockhash is still valid.
    assert response.status_code == 200 and response.json()["status"] == "CANCELLED", response.json()
    assert response.json()["errorMessage"].endswith("nothing was executed.")
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
    assert Transaction.unscoped.get(pk=tx.pk).signatures.get(address) is None
    assert chain.get_signature_statuses([Signature.from_string(held["onchainId"])]).value[0] is None

    # The rule that decided it: only the service's players can sign for this key ...
    assert dkg_signers.dkg_signers_service_only(transaction=tx) == [address]
    # ... unless its shares were ever refreshed (players it removed keep old shares that still sign under the address).
    ThresholdKey.objects.filter(group_public_key=bytes(Pubkey.from_string(address)).hex()).update(generation=2)
    assert dkg_signers.dkg_signers_service_only(transaction=tx) == []


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
    nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=4)
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
