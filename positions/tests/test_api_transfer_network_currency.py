"""Transfer Network Currency on the local node, with debit limits and approvals
(docs/positions.md, "Debit limits and approvals"; docs/transactions.md, "Held for
approval"). Chain effects are read back with an unmodified solana-py client."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.signature import Signature

from conftest import assert_error, make_client
from instruments.tests.test_races import inject_after_build
from positions import operations
from positions import transfers
from tenancy.roles import Role
from tenancy.tests.factories import issue_key
from transactions import collecting, settlement
from chain.rpc import rpc_for
from transactions.models import Transaction, TransactionApproval, TransactionEvent, TransactionStatus
from transactions.responses import wait_for
from transactions.tests.chainkit import funded

pytestmark = pytest.mark.chain
TRANSFER = "/api/v1/positions/transfer-network-currency"
SOL = 10**9
RENT = 890_880  # rent-exempt minimum of an account without data




def account(api, lamports: int | None = None, **item) -> dict:
    """A confirmed WALLET (managed unless told), seeded with ``lamports``."""
    data = {"managed": True, "offchainReferences": {"type": "WALLET"}, **item}
    if lamports:
        data["seed"] = {"lamports": lamports}
    response = api.call("post", "/api/v1/accounts?wait=confirmed", {"itemData": data})
    assert response.status_code == 201, response.json()
    if lamports:
        assert response.json()["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED"), response.json()
    return {"offchainId": response.json()["newAccount"]["offchainId"], "onchainId": response.json()["newAccount"]["onchainId"]}


def watched(api, address: str | None = None) -> dict:
    """A NON_MANAGED account: onboarded, its key not hosted."""
    return account(api, managed=False, onchainId=address or str(Keypair().pubkey()), alreadyOnchain=True, skipBlockchainExistenceVerification=True)


def off_platform() -> dict:
    return {"onchainId": str(Keypair().pubkey()), "offPlatform": True}


def transfer(api, source: dict, destination: dict, value: dict, *, wait: bool = True, **envelope):
    body = {"itemData": {"source": source, "destination": destination, "value": value}, **envelope}
    return api.call("post", TRANSFER + ("?wait=confirmed" if wait else ""), body)


def result(response) -> dict:
    assert response.status_code == 200, response.json()
    return response.json()["svmTransaction"]


def balance(chain, lookup: dict) -> int:
    return chain.get_balance(Pubkey.from_string(lookup["onchainId"])).value


def decide(client, verb: str, svm_transaction: dict, *, wait: bool = False, **item):
    path = f"/api/v1/transactions/{verb}" + ("?wait=confirmed" if wait else "")
    return client.call("patch", path, {"itemData": {"transaction": {"offchainId": svm_transaction["offchainId"]}, **item}})


# --- the default table, row by row -------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_managed_destination_is_unlimited_and_the_lamports_land(api, celery_worker_process, chain):
    source, destination = account(api, 6 * SOL), account(api)
    response = transfer(api, source, destination, {"amount": "4.5"})
    assert result(response)["status"] in ("CONFIRMED", "FINALIZED"), response.json()
    assert response.json()["destinationAccount"] == {"onchainId": destination["onchainId"], "offchainId": destination["offchainId"]}
    assert balance(chain, destination) == 4_500_000_000
    assert balance(chain, source) == 1_500_000_000  # the platform fee payer paid the fee
    tx = Transaction.unscoped.get(offchain_id=response.json()["svmTransaction"]["offchainId"])
    assert tx.effects["debits"] == [{"kind": "networkCurrency", "source": source["onchainId"], "amount": 4_500_000_000, "destinationType": "MANAGED"}]


@pytest.mark.django_db(transaction=True)
def test_off_platform_destination_is_held_by_the_zero_default_and_nothing_moves(api, celery_worker_process, chain):
    source, outside = account(api, 2 * SOL), off_platform()
    held = result(transfer(api, source, outside, {"lamports": RENT}))
    assert held["status"] == "PENDING_APPROVAL" and held["success"] is True
    assert "OFF_PLATFORM" in held["errorMessage"] and "PER_TRANSACTION" in held["errorMessage"]
    tx = Transaction.unscoped.get(offchain_id=held["offchainId"])
    assert tx.approval_required and tx.submitted_at is None and tx.submit_attempts == 0
    # Built and signed, never submitted; its signature is not disclosed while it is held.
    assert tx.onchain_id and held["onchainId"] is None and held["serializedMessage"]
    assert chain.get_signature_statuses([Signature.from_string(tx.onchain_id)]).value[0] is None
    assert balance(chain, outside) == 0 and balance(chain, source) == 2 * SOL


@pytest.mark.django_db(transaction=True)
def test_a_held_source_paying_its_own_fee_cannot_be_sent_around_the_approval(api, approver, celery_worker_process, chain):
    """The source is the only signer: its signature and the message would be a complete
    transaction. Neither the answer nor the status endpoint discloses the signature until
    approved, nor after a rejection."""
    source = account(api, SOL)
    held = result(transfer(api, source, off_platform(), {"lamports": RENT}, svmTransactionConfig={"feePayer": {"offchainId": source["offchainId"]}}))
    tx = Transaction.unscoped.get(offchain_id=held["offchainId"])
    assert tx.required_signers == [source["onchainId"]] and held["status"] == "PENDING_APPROVAL" and held["onchainId"] is None
    status = api.call("post", "/api/v1/transactions/single/status", {"itemData": {"transaction": {"offchainId": held["offchainId"]}}}).json()
    assert status["onchainId"] is None
    assert decide(approver, "reject", held).json()["onchainId"] is None


@pytest.mark.django_db(transaction=True)
def test_non_managed_destination_over_one_sol_is_held_and_up_to_one_sol_is_submitted(api, celery_worker_process, chain):
    source, outsider = account(api, 4 * SOL), watched(api)
    assert result(transfer(api, source, outsider, {"lamports": SOL}))["status"] in ("CONFIRMED", "FINALIZED")
    held = result(transfer(api, source, outsider, {"lamports": SOL + 1}))
    assert held["status"] == "PENDING_APPROVAL" and "NON_MANAGED" in held["errorMessage"]
    assert balance(chain, outsider) == SOL


# --- configured limits -------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_configured_limits_replace_the_defaults_of_their_kind(api, celery_worker_process, chain):
    limits = [{"destinationType": "OFF_PLATFORM", "limitType": "PER_TRANSACTION", "maxAmountWithoutApproval": 2 * SOL}]
    source, outside = account(api, 5 * SOL, networkCurrencyDebitLimits=limits), off_platform()
    assert result(transfer(api, source, outside, {"amount": "1.5"}))["status"] in ("CONFIRMED", "FINALIZED")
    assert result(transfer(api, source, outside, {"lamports": 2 * SOL + 1}))["status"] == "PENDING_APPROVAL"
    # No NON_MANAGED entry is left: the default 1 SOL no longer applies.
    assert result(transfer(api, source, watched(api), {"lamports": 2 * SOL}))["status"] in ("CONFIRMED", "FINALIZED")
    assert balance(chain, outside) == 1_500_000_000


@pytest.mark.django_db(transaction=True)
def test_an_empty_limits_array_means_no_limits(api, celery_worker_process, chain):
    source, outside = account(api, 3 * SOL, networkCurrencyDebitLimits=[]), off_platform()
    assert result(transfer(api, source, outside, {"lamports": 2 * SOL}))["status"] in ("CONFIRMED", "FINALIZED")
    assert balance(chain, outside) == 2 * SOL


@pytest.mark.django_db(transaction=True)
def test_the_rolling_window_counts_24_hours_of_debits_held_ones_included(api, approver, celery_worker_process, chain):
    limits = [{"destinationType": "MANAGED", "limitType": "DURATION", "maxAmountWithoutApproval": 5_000_000, "durationHours": 24}]
    source, destination = account(api, SOL, networkCurrencyDebitLimits=limits), account(api)
    first = result(transfer(api, source, destination, {"lamports": 3_000_000}))
    assert first["status"] in ("CONFIRMED", "FINALIZED")
    second = result(transfer(api, source, destination, {"lamports": 3_000_000}, wait=False))
    assert second["status"] == "PENDING_APPROVAL" and "DURATION" in second["errorMessage"]
    # The held 3_000_000 counts while it may still execute: 3 + 3 + 1 is over 5.
    assert result(transfer(api, source, destination, {"lamports": 1_000_000}, wait=False))["status"] == "PENDING_APPROVAL"
    # Rejected (CANCELLED) debits no longer count; debits older than 24 hours neither.
    for held in Transaction.unscoped.filter(status=TransactionStatus.PENDING_APPROVAL):
        assert decide(approver, "reject", {"offchainId": str(held.offchain_id)}).status_code == 200
    Transaction.unscoped.filter(offchain_id=first["offchainId"]).update(txn_timestamp=timezone.now() - timedelta(hours=24, minutes=1))
    assert result(transfer(api, source, destination, {"lamports": 5_000_000}))["status"] in ("CONFIRMED", "FINALIZED")
    assert balance(chain, destination) == 8_000_000


# --- approval and rejection --------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_approval_by_another_key_submits_it_and_the_lamports_land(api, api_key, approver, celery_worker_process, chain):
    source, outside = account(api, 2 * SOL), off_platform()
    held = result(transfer(api, source, outside, {"lamports": 5_000_000}))
    response = decide(approver, "approve", held, wait=True, reason="invoice 42")
    assert response.status_code == 200, response.json()
    assert response.json()["status"] in ("CONFIRMED", "FINALIZED") and response.json()["errorMessage"] == ""
    assert response.json()["onchainId"] == Transaction.unscoped.get(offchain_id=held["offchainId"]).onchain_id  # the very bytes signed before
    assert balance(chain, outside) == 5_000_000
    record = TransactionApproval.objects.get(transaction__offchain_id=held["offchainId"])
    assert (record.decision, record.reason, record.staff_user_id) == ("APPROVED", "invoice 42", None)
    assert record.api_key.roles == [Role.PLATFORM_APPROVE_TRANSACTIONS] and record.api_key_id != api_key.api_key.pk
    # Decided once: a second approval or a rejection now is a 400, changing nothing.
    assert_error(decide(approver, "approve", held), 400, "INVALID_TRANSACTION_STATE")
    assert_error(decide(approver, "reject", held), 400, "INVALID_TRANSACTION_STATE")
    assert TransactionApproval.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_the_requesting_key_cannot_approve_its_own_transaction(tenant, celery_worker_process, chain):
    both = make_client(issue_key(tenant, roles=[Role.PLATFORM_APPROVE_TRANSACTIONS]).secret)
    source = account(both, SOL)
    held = result(transfer(both, source, off_platform(), {"lamports": RENT}))
    assert_error(decide(both, "approve", held), 403, "SELF_APPROVAL_NOT_ALLOWED", "itemData.transaction")
    assert Transaction.unscoped.get(offchain_id=held["offchainId"]).status == TransactionStatus.PENDING_APPROVAL
    assert not TransactionApproval.objects.exists()
    # Withdrawing its own request moves nothing: allowed.
    assert decide(both, "reject", held).json()["status"] == "CANCELLED"


@pytest.mark.django_db(transaction=True)
def test_deciding_without_the_role_is_403_and_another_tenants_transaction_is_not_found(api, other_tenant, celery_worker_process, chain):
    source = account(api, SOL)
    held = result(transfer(api, source, off_platform(), {"lamports": RENT}))
    for verb in ("approve", "reject"):
        assert_error(decide(api, verb, held), 403, "MISSING_ROLE")
        stranger = make_client(issue_key(other_tenant, roles=[Role.PLATFORM_APPROVE_TRANSACTIONS]).secret)
        hidden, missing = decide(stranger, verb, held), decide(stranger, verb, {"offchainId": "6f1d2c3b-8a4e-4f00-9c1d-000000000001"})
        assert_error(hidden, 404) and hidden.json()["errors"] == missing.json()["errors"]
    assert Transaction.unscoped.get(offchain_id=held["offchainId"]).status == TransactionStatus.PENDING_APPROVAL


@pytest.mark.django_db(transaction=True)
def test_rejection_cancels_it_and_nothing_moves(api, approver, celery_worker_process, chain):
    source, outside = account(api, SOL), off_platform()
    held = result(transfer(api, source, outside, {"lamports": 2_000_000}))
    response = decide(approver, "reject", held, reason="unknown beneficiary")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["status"] == "CANCELLED" and body["success"] is False and "unknown beneficiary" in body["errorMessage"]
    tx = Transaction.unscoped.get(offchain_id=held["offchainId"])
    assert TransactionEvent.objects.filter(transaction=tx, kind="FAILURE_EFFECTS_APPLIED").count() == 1
    record = TransactionApproval.objects.get(transaction=tx)
    assert (record.decision, record.reason) == ("REJECTED", "unknown beneficiary")
    assert_error(decide(approver, "approve", held), 400, "INVALID_TRANSACTION_STATE")
    settlement.transaction_expire_held(transaction_id=tx.pk)  # reconciliation finds nothing to do
    assert balance(chain, outside) == 0 and balance(chain, source) == SOL


@pytest.mark.django_db(transaction=True)
def test_a_held_transaction_past_its_blockhash_cannot_be_approved(api, approver, celery_worker_process, chain):
    held = result(transfer(api, account(api, SOL), off_platform(), {"lamports": RENT}))
    # Move time on: its blockhash is now past its last valid block height (about a minute).
    Transaction.unscoped.filter(offchain_id=held["offchainId"]).update(last_valid_block_height=rpc_for("CHAIN_LOCALNET").block_height() - 1)
    assert_error(decide(approver, "approve", held), 400, "TRANSACTION_EXPIRED", "itemData.transaction")
    tx = Transaction.unscoped.get(offchain_id=held["offchainId"])
    assert tx.status == TransactionStatus.PENDING_APPROVAL and not TransactionApproval.objects.exists()
    assert settlement.transaction_expire_held(transaction_id=tx.pk) == TransactionStatus.EXPIRED


@pytest.mark.django_db(transaction=True)
def test_a_held_transfer_of_an_unmanaged_source_waits_for_its_signature_then_for_approval(api, approver, celery_worker_process, chain):
    owner = funded(chain, SOL)
    source, outside = watched(api, str(owner.pubkey())), off_platform()
    held = result(transfer(api, source, outside, {"lamports": RENT}))
    assert held["status"] == "PARTIALLY_SIGNED" and "OFF_PLATFORM" in held["errorMessage"]
    tx = Transaction.unscoped.get(offchain_id=held["offchainId"])
    signature = owner.sign_message(bytes(tx.message))
    tx = collecting.transaction_add_signatures(transaction=tx, signatures={str(owner.pubkey()): str(signature)})
    assert tx.status == TransactionStatus.PENDING_APPROVAL  # signed, still held: not submitted
    response = decide(approver, "approve", held, wait=True)
    assert response.json()["status"] in ("CONFIRMED", "FINALIZED"), response.json()
    assert balance(chain, outside) == RENT


# --- debit API keys, rent, values ------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_only_listed_keys_may_debit(api, tenant, celery_worker_process, chain):
    bot = issue_key(tenant, name="payments-bot")
    keys_admin = make_client(issue_key(tenant, roles=[Role.PLATFORM_UPDATE_DEBIT_API_KEYS]).secret)
    source, destination = account(api, SOL), account(api)
    assert keys_admin.call("patch", "/api/v1/accounts", {"itemData": {"account": source, "networkCurrencyDebitApiKeys": ["payments-bot"]}}).status_code == 200
    assert_error(transfer(api, source, destination, {"lamports": RENT}), 403, "DEBIT_NOT_ALLOWED", "itemData.source")
    assert not Transaction.unscoped.filter(operation=operations.TRANSFER_NETWORK_CURRENCY).exists()
    assert result(transfer(make_client(bot.secret), source, destination, {"lamports": RENT}))["status"] in ("CONFIRMED", "FINALIZED")


@pytest.mark.django_db(transaction=True)
def test_rent_exemption_guard(api, celery_worker_process, chain):
    source, destination = account(api, 10_000_000), account(api)
    assert_error(transfer(api, source, destination, {"lamports": 10_000_000 - RENT + 1}), 400, "SOURCE_BELOW_RENT", "itemData.value")
    assert_error(transfer(api, source, destination, {"lamports": 10_000_001}), 400, "INSUFFICIENT_FUNDS", "itemData.value")
    assert_error(transfer(api, source, destination, {"lamports": RENT - 1}), 400, "DESTINATION_BELOW_RENT", "itemData.value")
    assert not Transaction.unscoped.filter(operation=operations.TRANSFER_NETWORK_CURRENCY).exists()
    # Exactly everything: the source is emptied (and then no longer exists on chain).
    assert result(transfer(api, source, destination, {"lamports": 10_000_000}))["status"] in ("CONFIRMED", "FINALIZED")
    assert balance(chain, source) == 0 and balance(chain, destination) == 10_000_000
    # The source paying its own fee: the guard counts the fee.
    payer = account(api, 10_000_000)
    by_itself = {"svmTransactionConfig": {"feePayer": {"offchainId": payer["offchainId"]}}}
    assert_error(transfer(api, payer, destination, {"lamports": 10_000_000}, **by_itself), 400, "INSUFFICIENT_FUNDS")
    assert result(transfer(api, payer, destination, {"lamports": 10_000_000 - 5000}, **by_itself))["status"] in ("CONFIRMED", "FINALIZED")
    assert balance(chain, payer) == 0


@pytest.mark.django_db(transaction=True)
def test_value_rules_and_bad_destinations_are_400(api, celery_worker_process, chain):
    source = account(api, SOL)
    assert_error(transfer(api, source, account(api), {"amount": "0.001", "lamports": 2_000_000}), 400, "VALUE_MISMATCH")
    assert_error(transfer(api, source, account(api), {"amount": "0.0000000001"}), 400)
    assert_error(transfer(api, source, account(api), {"lamports": 0}), 400, "INVALID_AMOUNT")
    assert_error(transfer(api, source, source, {"lamports": RENT}), 400, "INVALID", "itemData.destination")
    assert_error(transfer(api, source, {"onchainId": str(Keypair().pubkey())}, {"lamports": RENT}), 404, "NOT_FOUND", "itemData.destination")
    assert not Transaction.unscoped.filter(operation=operations.TRANSFER_NETWORK_CURRENCY).exists()


# --- concurrency ---------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_concurrent_transfers_cannot_jointly_exceed_a_duration_limit(api, celery_worker_process, chain, monkeypatch):
    limits = [{"destinationType": "MANAGED", "limitType": "DURATION", "maxAmountWithoutApproval": 5_000_000, "durationHours": 24}]
    source, destination = account(api, SOL, networkCurrencyDebitLimits=limits), account(api)
    # The competing transfer runs after this request's read phase passed (3 of 5 used) and
    # before its write phase: the re-check under the source's row lock must see it.
    competing = inject_after_build(monkeypatch, transfers, lambda: transfer(api, source, destination, {"lamports": 3_000_000}, wait=False))
    first = result(transfer(api, source, destination, {"lamports": 3_000_000}, wait=False))
    assert result(competing[0])["status"] == "SIGNED"
    assert first["status"] == "PENDING_APPROVAL" and "DURATION" in first["errorMessage"]
    assert Transaction.unscoped.filter(operation=operations.TRANSFER_NETWORK_CURRENCY, status=TransactionStatus.PENDING_APPROVAL).count() == 1
    monkeypatch.undo()
    assert wait_for(Transaction.unscoped.get(offchain_id=competing[0].json()["svmTransaction"]["offchainId"]), "confirmed").status in ("CONFIRMED", "FINALIZED")
    assert balance(chain, destination) == 3_000_000


@pytest.mark.django_db(transaction=True)
def test_two_simultaneous_write_phases_serialize_on_the_source_lock(api_key, celery_worker_process, chain, monkeypatch):
    """Both requests pass their read phase before either writes (a barrier after the build):
    their write phases then meet at the source's row lock, and only one passes unheld."""
    import threading

    from django.db import connection

    api = make_client(api_key.secret)
    limits = [{"destinationType": "MANAGED", "limitType": "DURATION", "maxAmountWithoutApproval": 5_000_000, "durationHours": 24}]
    source, destination = account(api, SOL, networkCurrencyDebitLimits=limits), account(api)
    barrier, real, statuses = threading.Barrier(2, timeout=30), transfers.transaction_build, []

    def build_then_wait(**kwargs):
        prepared = real(**kwargs)
        barrier.wait()
        return prepared

    monkeypatch.setattr(transfers, "transaction_build", build_then_wait)

    def call():
        try:
            statuses.append(result(transfer(make_client(api_key.secret), source, destination, {"lamports": 3_000_000}, wait=False))["status"])
        finally:
            connection.close()

    threads = [threading.Thread(target=call) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(statuses) == ["PENDING_APPROVAL", "SIGNED"]


# --- the admin ---------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_staff_approve_and_reject_in_the_admin_through_the_same_services(api, admin_client, admin_user, celery_worker_process, chain):
    source = account(api, SOL)
    approved_to, rejected_to = off_platform(), off_platform()
    to_approve = Transaction.unscoped.get(offchain_id=result(transfer(api, source, approved_to, {"lamports": RENT}))["offchainId"])
    to_reject = Transaction.unscoped.get(offchain_id=result(transfer(api, source, rejected_to, {"lamports": RENT}))["offchainId"])
    page = admin_client.get("/admin/transactions/transaction/?approval_required__exact=1")
    assert page.status_code == 200 and str(to_approve.onchain_id) in page.content.decode()
    response = admin_client.post("/admin/transactions/transaction/", {"action": "approve_held", "_selected_action": [to_approve.pk], "_staff_confirmed": "yes"}, follow=True)
    assert "1 transaction(s) approved" in response.content.decode()
    response = admin_client.post("/admin/transactions/transaction/", {"action": "reject_held", "_selected_action": [to_reject.pk], "_staff_confirmed": "yes"}, follow=True)
    assert "1 transaction(s) rejected" in response.content.decode()
    # The generic cancel does not decide on held-for-approval transactions: nothing to do now.
    assert wait_for(to_approve, "confirmed").status in ("CONFIRMED", "FINALIZED")
    to_reject.refresh_from_db()
    assert to_reject.status == TransactionStatus.CANCELLED
    decisions = {r.transaction_id: r for r in TransactionApproval.objects.all()}
    assert decisions[to_approve.pk].decision == "APPROVED" and decisions[to_approve.pk].staff_user == admin_user
    assert decisions[to_reject.pk].decision == "REJECTED" and decisions[to_reject.pk].staff_user == admin_user
    assert balance(chain, approved_to) == RENT and balance(chain, rejected_to) == 0
    assert admin_client.get(f"/admin/transactions/transactionapproval/{decisions[to_approve.pk].pk}/change/").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_staff_without_the_approval_permission_get_no_approve_action(api, client, django_user_model, celery_worker_process, chain):
    from django.contrib.auth.models import Permission

    clerk = django_user_model.objects.create_user("clerk", password="x", is_staff=True)
    clerk.user_permissions.add(*Permission.objects.filter(codename__in=["view_transaction", "cancel_transaction"]))
    client.force_login(clerk)
    held = Transaction.unscoped.get(offchain_id=result(transfer(api, account(api, SOL), off_platform(), {"lamports": RENT}))["offchainId"])
    page = client.get("/admin/transactions/transaction/")
    assert page.status_code == 200 and "approve_held" not in page.content.decode() and "cancel_unsubmitted" in page.content.decode()
    client.post("/admin/transactions/transaction/", {"action": "approve_held", "_selected_action": [held.pk], "_staff_confirmed": "yes"}, follow=True)
    # The clerk's cancel refuses held-for-approval transactions: a decision is audited.
    response = client.post("/admin/transactions/transaction/", {"action": "cancel_unsubmitted", "_selected_action": [held.pk], "_staff_confirmed": "yes"}, follow=True)
    assert "reject it instead" in response.content.decode()
    held.refresh_from_db()
    assert held.status == TransactionStatus.PENDING_APPROVAL and not TransactionApproval.objects.exists()
