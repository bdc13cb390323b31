"""The back office's operations in headless chromium (issue 18, phase B): an operator
resubmits a stuck transaction and reconciles it to confirmation, then reads its page — the
message decoded, its signatures; an operator redelivers a dead-lettered webhook event from
the dashboard and sees it delivered; a viewer sees the same pages and is offered none of
it. Screenshots go to var/screenshots/ (docs/screenshots/ holds the README's copies)."""

from __future__ import annotations

import pytest
from django.db import transaction as db_transaction
from solders.signature import Signature

from accounts.models import Account
from backoffice.models import AuditKind, StaffAuditEntry
from backoffice.tests.staff import PASSWORD, staff_user
from tests.workers import paused_workers
from transactions.models import Transaction, TransactionStatus
from webhooks.tests.webhookkit import Receiver, emit, recorded_transaction, subscribe
from webhooks.models import DeliveryStatus, WebhookEvent


@pytest.mark.chain
@pytest.mark.django_db(transaction=True)
def test_an_operator_resubmits_and_reconciles_a_stuck_transaction_and_reads_it_decoded(page, api, chain, settings):
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True
    operator, viewer = staff_user("operator"), staff_user("viewer")
    with paused_workers():  # no pump: the transaction stays where the request left it
        created = api.call("post", "/api/v1/accounts", {"itemData": {"managed": True, "seed": {"lamports": 4_000_000}, "offchainReferences": {"type": "WALLET"}}})
        assert created.status_code == 201, created.json()
        stuck = Transaction.unscoped.get(offchain_id=created.json()["svmTransaction"]["offchainId"])
        assert stuck.status == TransactionStatus.SIGNED
        listing = f"/admin/transactions/transaction/?status__exact=SIGNED&q={stuck.onchain_id}"

        # The viewer sees it stuck, and its decoded page, and is offered nothing to do.
        page.sign_in(viewer.username, PASSWORD)
        page.open(listing)
        rows = page.all("#result_list tbody tr")
        assert len(rows) == 1 and "accounts.create" in rows[0].text and not page.all("select[name=action]")
        page.open(f"/admin/transactions/transaction/{stuck.pk}/change/")
        assert page.all(".instruction-row") and not page.all("input[name=_save]")

        # The operator resubmits it: the same signed bytes go to the cluster now.
        page.sign_in(operator.username, PASSWORD)
        page.open(listing)
        assert {"resubmit", "reconcile", "cancel_unsubmitted"} <= set(page.options("select[name=action]"))
        confirmation = page.run_action("resubmit", rows=[str(stuck.pk)])
        assert "Resubmit stuck transactions" in confirmation and "Nothing is ever signed again." in confirmation and stuck.onchain_id in confirmation
        page.screenshot("confirm-resubmit")
        page.click("#confirm-action")
        assert "SIGNED → SUBMITTED" in page.find(".messagelist").text
        assert chain.get_signature_statuses([Signature.from_string(stuck.onchain_id)]).value[0] is not None  # the cluster has it

        # Reconcile: followed on the cluster, confirmed, its effects applied once.
        page.open(f"/admin/transactions/transaction/?q={stuck.onchain_id}")
        page.run_action("reconcile", rows=[str(stuck.pk)])
        page.click("#confirm-action")
        told = page.find(".messagelist").text
        assert "SUBMITTED → CONFIRMED" in told or "SUBMITTED → FINALIZED" in told
        status = page.find("#result_list tbody tr").text
        assert "Confirmed" in status or "Finalized" in status  # the status column shows the label
        page.screenshot("transaction-reconciled")

        # Its page: the message decoded, every signature, the records it wrote linked.
        page.click("#result_list tbody tr th a")
        decoded = page.find("#transaction-decoded").text
        assert "system" in decoded and stuck.onchain_id in page.find("#decoded-signatures").text
        types = [e.text for e in page.all(".instruction-type")]
        assert types and "(not decoded)" not in types
        account = Account.unscoped.get(creation_transaction=stuck)
        assert account.status == "ACTIVE" and page.all(f"#operation-records a[href$='/admin/accounts/account/{account.pk}/change/']")
        page.driver.execute_script("arguments[0].scrollIntoView()", page.find("#transaction-decoded"))
        page.screenshot("transaction-decoded")
    stuck.refresh_from_db()
    assert stuck.status in (TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED)
    assert [e.action for e in StaffAuditEntry.objects.filter(kind=AuditKind.ACTION).order_by("pk")] == ["resubmit", "reconcile"]
    assert set(StaffAuditEntry.objects.filter(kind=AuditKind.ACTION).values_list("actor", flat=True)) == {operator.username}


@pytest.mark.django_db(transaction=True)
def test_an_operator_redelivers_a_dead_lettered_webhook_and_sees_it_delivered(page, tenant, settings, celery_worker_process):
    settings.LEDGER_OUTBOUND_ALLOW_HTTP = True  # the receiver listens on this machine (the worker is started so too)
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    operator, viewer = staff_user("operator"), staff_user("viewer")
    with Receiver() as receiver:
        subscribe(tenant, receiver.url("/hook"))
        with db_transaction.atomic():  # dead before anyone could try them (the kick runs after this commit)
            events = emit([recorded_transaction(tenant) for _ in range(2)])
            WebhookEvent.unscoped.filter(pk__in=[e.pk for e in events]).update(status=DeliveryStatus.DEAD, attempts=20, last_status_code=503, last_error="HTTP 503")
        dead = events[0]

        page.sign_in(viewer.username, PASSWORD)
        assert page.find("#webhook-dead").text == "2"
        page.click("#ops-webhooks a.warn")
        assert len(page.all("#result_list tbody tr")) == 2 and not page.all("select[name=action]")

        dashboard = page.sign_in(operator.username, PASSWORD)
        assert "Dead letters" in dashboard and page.find("#webhook-dead").text == "2"
        page.screenshot("dashboard-webhooks")
        page.click("#ops-webhooks a.warn")
        confirmation = page.run_action("redeliver", rows=[str(dead.pk)])
        assert "Redeliver" in confirmation and "same event id and body" in confirmation
        page.screenshot("confirm-redeliver")
        page.click("#confirm-action")
        assert "1 event(s) due again." in page.find(".messagelist").text

        page.open(f"/admin/webhooks/webhookevent/{dead.pk}/change/")
        page.wait_text_in(".field-status .readonly", "Delivered", timeout=60)  # the event's own status (the label): the worker's delivery loop, to the receiver
        attempts = page.find("#attempt_log-group")
        assert "200" in attempts.text
        page.driver.execute_script("arguments[0].scrollIntoView()", attempts)
        page.screenshot("webhook-redelivered")
        assert receiver.delivered_ids() == [str(dead.event_id)]
    assert WebhookEvent.unscoped.get(pk=events[1].pk).status == DeliveryStatus.DEAD
    entry = StaffAuditEntry.objects.get(kind=AuditKind.ACTION, action="redeliver")
    assert entry.actor == operator.username and entry.before[str(dead.pk)]["status"] == "DEAD" and entry.after[str(dead.pk)]["status"] in ("PENDING", "DELIVERING", "DELIVERED")
