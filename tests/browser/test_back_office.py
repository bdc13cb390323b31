"""The back office as staff use it, in headless chromium (issue 18): each role signs in
through the form; an approver approves a held transfer and sees it confirm; a viewer finds
an account by address, opens it on the chain and can change nothing; an operator changes
a beat schedule; a security officer issues an API key whose secret is shown once and
revokes it; repeated failures lock a sign-in. Screenshots of the key pages are written to
var/screenshots/."""

from __future__ import annotations

import pytest
from django_celery_beat.models import IntervalSchedule, PeriodicTask
from solders.keypair import Keypair

from accounts.models import Account
from backoffice.models import AuditKind, Heartbeat, StaffAuditEntry
from backoffice.scheduling import beat_schedule_seed
from backoffice.tests.staff import PASSWORD, staff_user
from positions.tests.kit import instrument, position, wallet
from positions.tests.movekit import at, mint, settled, transfer
from tenancy.models import ApiKey
from transactions.models import NonceAccount, Transaction, TransactionApproval, TransactionStatus


@pytest.fixture(autouse=True)
def airdrop_funding(settings):
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True


def held_transfer(api) -> Transaction:
    """A transfer to an off-platform owner, over the source wallet's default debit limit:
    built, signed and held PENDING_APPROVAL (docs/positions.md, "Debit limits")."""
    authority, alice = wallet(api), wallet(api)
    bond = instrument(api, authority=authority)
    source = position(api, alice, bond)
    settled(mint(api, at(source), {"lamports": 10_000}))
    outsider = {"owner": {"onchainId": str(Keypair().pubkey()), "offPlatform": True}, "financialInstrument": bond}
    response = transfer(api, at(source), outsider, {"lamports": 7}, wait=False)
    assert response.status_code in (200, 201), response.json()
    assert response.json()["svmTransaction"]["status"] == "PENDING_APPROVAL"
    return Transaction.unscoped.get(offchain_id=response.json()["svmTransaction"]["offchainId"])


@pytest.mark.chain
@pytest.mark.django_db(transaction=True)
def test_an_approver_approves_a_held_transfer_and_sees_it_confirm(page, api, localnet_url, tmp_path):
    from tests.workers import wait_for, worker_with_beat

    approver = staff_user("approver")
    viewer = staff_user("viewer")
    # The schedule is the database's: the heartbeat and the nonce pool's fill run sooner here.
    beat_schedule_seed()
    soon = IntervalSchedule.objects.get_or_create(every=2, period=IntervalSchedule.SECONDS)[0]
    PeriodicTask.objects.filter(name__in=["staff-heartbeat", "fill-nonce-pools"]).update(interval=soon)
    with worker_with_beat(localnet_url, tmp_path):
        held = held_transfer(api)

        # A viewer sees it waiting but is offered no decision.
        page.sign_in(viewer.username, PASSWORD)
        assert page.find("#held-count").text == "1"
        page.open("/admin/transactions/transaction/?status__exact=PENDING_APPROVAL")
        rows = page.all("#result_list tbody tr")
        assert len(rows) == 1 and "positions.transfer" in rows[0].text and not page.all("select[name=action]")

        wait_for(lambda: Heartbeat.objects.filter(name__in=["beat", "worker"]).count() == 2 and NonceAccount.objects.filter(state="READY").exists(),
                 timeout=90, what="beat, the worker and a filled nonce pool")
        dashboard = page.sign_in(approver.username, PASSWORD)
        assert "Held for approval" in dashboard and page.find("#held-count").text == "1" and "stale" not in page.find("#ops-processes").text
        assert "healthy" in page.find("#ops-clusters").text
        page.screenshot("dashboard")
        page.click("#ops-held a")
        assert "approve_held" in page.options("select[name=action]")
        confirmation = page.run_action("approve_held", rows=[str(held.pk)])
        assert "Approve" in confirmation and held.operation in confirmation
        page.screenshot("confirm-approve")
        page.click("#confirm-action")
        assert "1 transaction(s) approved." in page.find(".messagelist").text

        page.open(f"/admin/transactions/transaction/{held.pk}/change/")
        page.wait_text_in(".field-status .readonly", ("Confirmed", "Finalized"), timeout=60)  # its own status (the label), not a related record's
        page.screenshot("transaction-confirmed")
    held.refresh_from_db()
    assert held.status in (TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED)
    decision = TransactionApproval.objects.get(transaction=held)
    assert decision.staff_user == approver and decision.decision == "APPROVED"
    assert StaffAuditEntry.objects.get(kind=AuditKind.ACTION, action="approve_held").actor == approver.username


@pytest.mark.chain
@pytest.mark.django_db(transaction=True)
def test_a_viewer_finds_an_account_by_address_opens_it_on_the_chain_and_changes_nothing(page, api, celery_worker_process):
    viewer = staff_user("viewer")
    created = api.call("post", "/api/v1/accounts?wait=confirmed", {"itemData": {"managed": True, "seed": {"lamports": 5_000_000},
                                                                               "offchainReferences": {"type": "WALLET", "name": "Treasury"}}})
    assert created.status_code == 201, created.json()
    account = Account.unscoped.get(offchain_id=created.json()["newAccount"]["offchainId"])
    for _ in range(3):
        wallet(api)
    beat_schedule_seed()

    page.sign_in(viewer.username, PASSWORD)
    page.open("/admin/accounts/account/")
    assert not page.all("select[name=action]")  # no action for a viewer
    page.fill("#searchbar", account.address)
    page.click("#changelist-search input[type=submit]")
    rows = page.all("#result_list tbody tr")
    assert len(rows) == 1 and account.address in rows[0].text
    page.screenshot("account-search")
    page.click("#result_list tbody tr th a")
    detail = page.text()
    assert account.address in detail and "Related records" in detail and not page.all("input[name=_save]")  # read only
    page.screenshot("account")
    page.click("a.chainlink")
    answer = page.find("#chain-answer").text
    assert '"lamports": 5000000' in answer and account.address in page.find("#chain-locator").text
    page.screenshot("on-the-chain")

    # The schedule: visible, not changeable.
    page.open("/admin/django_celery_beat/periodictask/")
    page.click(f"#result_list a[href*='/{PeriodicTask.objects.get(name='watch-pumps').pk}/']")
    assert "watch-pumps" in page.text() and not page.all("input[name=_save]") and not page.all("select[name=interval]")
    assert not StaffAuditEntry.objects.filter(kind__in=[AuditKind.CHANGE, AuditKind.ACTION]).exists()


@pytest.mark.django_db(transaction=True)
def test_an_operator_changes_a_beat_schedule(page):
    operator = staff_user("operator")
    beat_schedule_seed()
    task = PeriodicTask.objects.get(name="watch-pumps")
    fifteen = IntervalSchedule.objects.get(every=15, period=IntervalSchedule.SECONDS)
    assert task.interval.every == 2

    page.sign_in(operator.username, PASSWORD)
    page.open("/admin/django_celery_beat/periodictask/")
    listing = page.text()
    assert "watch-pumps" in listing and "reconcile-inflight-transactions" in listing and "staff-heartbeat" in listing
    page.screenshot("periodic-tasks")
    page.open(f"/admin/django_celery_beat/periodictask/{task.pk}/change/")
    page.choose("select[name=interval]", value=str(fifteen.pk))
    page.click("input[name=_save]")
    assert "was changed successfully" in page.find(".messagelist").text
    task.refresh_from_db()
    assert task.interval_id == fifteen.pk
    entry = StaffAuditEntry.objects.get(kind=AuditKind.CHANGE, model="django_celery_beat.periodictask")
    assert entry.actor == operator.username and entry.after[str(task.pk)]["interval_id"] == fifteen.pk


@pytest.mark.django_db(transaction=True)
def test_a_security_officer_issues_an_api_key_shown_once_and_revokes_it(page, tenant):
    officer = staff_user("security officer", "officer")
    page.sign_in(officer.username, PASSWORD)
    page.open("/admin/tenancy/apikey/add/")
    page.choose("#id_organization", label=str(tenant))
    page.fill("#id_name", "payments robot")
    page.click("input[name=_save]")
    message = page.find(".messagelist").text
    key = ApiKey.objects.get(name="payments robot")
    assert "shown only now" in message and "lsk_" in message and key.key_id in message
    page.screenshot("api-key-created")
    page.open("/admin/tenancy/apikey/")
    assert "lsk_" not in page.text()  # shown once
    confirmation = page.run_action("revoke", rows=[str(key.pk)])
    assert key.key_id in confirmation and "cannot be undone" in confirmation
    page.click("#confirm-action")
    assert "Revoked 1 API key(s)." in page.find(".messagelist").text
    key.refresh_from_db()
    assert not key.is_active
    page.open("/admin/backoffice/staffauditentry/")
    audit = page.text()
    assert "revoke" in audit and "officer" in audit
    page.screenshot("audit")


@pytest.mark.django_db(transaction=True)
def test_repeated_failed_sign_ins_lock_the_account_out(page, settings):
    settings.LEDGER_ADMIN_LOCKOUT_FAILURES = 3
    viewer = staff_user("viewer")
    for _ in range(3):
        assert "Please enter the correct username and password" in page.sign_in(viewer.username, "not-the-password")
    refused = page.sign_in(viewer.username, PASSWORD)
    assert "Too many failed sign-ins" in refused and page.all("#id_password")  # still on the sign-in form
    page.screenshot("lockout")
    assert StaffAuditEntry.objects.filter(kind=AuditKind.LOCKED_OUT, actor=viewer.username).count() == 2
