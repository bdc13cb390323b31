"""The areas of phase B in the back office (docs/admin.md): webhooks (dead letters on the
dashboard, redelivered by an operator to a real local receiver, a range of them by
subscription; a viewer cannot), nonce accounts, lookup tables and vaults (lists, detail
pages linked both ways, "open on the chain")."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.tests.factories import AccountFactory
from backoffice.models import AuditKind, StaffAuditEntry
from backoffice.records import records_at
from instruments.tests.factories import FinancialInstrumentFactory
from webhooks import delivery
from transactions.models import NonceAccount, NonceState
from lookup_tables.tests.factories import AddressLookupTableFactory
from webhooks.tests.webhookkit import Receiver, emit, recorded_transaction, subscribe
from webhooks.models import DeliveryStatus, WebhookEvent, WebhookStatus
from vaults.tests.factories import make_vault

from .staff import client_for, staff_user
from .test_transactions_admin import run

EVENTS, SUBSCRIPTIONS = "/admin/webhooks/webhookevent/", "/admin/webhooks/webhooksubscription/"


@pytest.fixture
def local_receivers(settings):
    settings.LEDGER_OUTBOUND_ALLOW_HTTP = True
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]


def dead_letters(tenant, url: str, count: int) -> list[WebhookEvent]:
    """Events past their retry window (what delivery.record does at the end of it)."""
    sub = subscribe(tenant, url)
    events = emit([recorded_transaction(tenant) for _ in range(count)])
    for age, event in enumerate(events):
        WebhookEvent.unscoped.filter(pk=event.pk).update(status=DeliveryStatus.DEAD, attempts=20, last_status_code=503,
                                                          dead_at=timezone.now(), created_at=timezone.now() - timedelta(days=age))
    return sub, events


@pytest.mark.django_db
def test_an_operator_redelivers_dead_letters_the_dashboard_counts_and_a_viewer_cannot(client, tenant, local_receivers):
    with Receiver() as receiver:
        sub, events = dead_letters(tenant, receiver.url("/hook"), 3)
        viewer = client_for(client, staff_user("viewer"))
        panel = viewer.get("/admin/").context["dashboard"]["webhooks"]
        assert (panel["dead"], panel["pending"], panel["loop"]) == (3, 0, "idle")
        assert 'id="webhook-dead">3<' in viewer.get("/admin/").content.decode()
        listing = viewer.get(f"{EVENTS}?status__exact=DEAD").content.decode()
        assert all(str(e.event_id) in listing for e in events) and 'name="action"' not in listing
        for url, action, pk in ((EVENTS, "redeliver", events[0].pk), (SUBSCRIPTIONS, "redeliver_dead", sub.pk), (SUBSCRIPTIONS, "disable", sub.pk)):
            viewer.post(url, {"action": action, "_selected_action": [pk], "_staff_confirmed": "yes", "index": "0"})
        sub.refresh_from_db()
        assert set(WebhookEvent.unscoped.values_list("status", flat=True)) == {DeliveryStatus.DEAD} and sub.status == WebhookStatus.ACTIVE
        assert not StaffAuditEntry.objects.filter(kind=AuditKind.ACTION).exists()

        client.logout()
        operator = client_for(client, staff_user("operator"))
        assert "1 event(s) due again." in run(operator, "redeliver", [events[0].pk], EVENTS)
        assert operator.get("/admin/").context["dashboard"]["webhooks"]["dead"] == 2
        delivery.deliver_due()
        assert receiver.delivered_ids() == [str(events[0].event_id)]
        page = operator.get(f"{EVENTS}{events[0].pk}/change/").content.decode()
        assert "DELIVERED" in page and "transaction:" in page and "/admin/transactions/transaction/?offchain_id__exact=" in page

        # By subscription, a range: the dead letter recorded two days ago stays dead.
        form = {"action": "redeliver_dead", "_selected_action": [sub.pk], "index": "0"}
        confirm = operator.post(SUBSCRIPTIONS, form).content.decode()
        assert 'name="since"' in confirm and "Recorded from" in confirm
        since = (timezone.now() - timedelta(hours=36)).strftime("%Y-%m-%d %H:%M:%S")
        done = operator.post(SUBSCRIPTIONS, {**form, "since": since, "_staff_confirmed": "yes"}, follow=True).content.decode()
        assert "1 dead-lettered event(s) due again." in done
        delivery.deliver_due()
    assert sorted(receiver.delivered_ids()) == sorted(str(e.event_id) for e in events[:2])
    assert WebhookEvent.unscoped.get(pk=events[2].pk).status == DeliveryStatus.DEAD
    audited = StaffAuditEntry.objects.filter(kind=AuditKind.ACTION, actor="operator").order_by("pk")
    assert [e.action for e in audited] == ["redeliver", "redeliver_dead"]
    assert audited[0].before[str(events[0].pk)]["status"] == "DEAD" and audited[0].after[str(events[0].pk)]["status"] == "PENDING"


@pytest.mark.django_db
def test_an_operator_disables_and_enables_a_webhook(client, tenant, local_receivers):
    sub = subscribe(tenant, "http://127.0.0.1:9/hook")
    operator = client_for(client, staff_user("operator"))
    assert "1 webhook(s) disabled." in run(operator, "disable", [sub.pk], SUBSCRIPTIONS)
    sub.refresh_from_db()
    assert sub.status == WebhookStatus.DISABLED and "by operator" in sub.status_reason
    assert operator.get("/admin/").context["dashboard"]["webhooks"]["disabled"] == 1
    assert "1 webhook(s) enabled." in run(operator, "enable", [sub.pk], SUBSCRIPTIONS)
    sub.refresh_from_db()
    assert sub.status == WebhookStatus.ACTIVE


@pytest.mark.django_db
def test_instruments_and_their_webhooks_link_both_ways(client, tenant, local_receivers):
    bond = FinancialInstrumentFactory(tenant=tenant)
    sub = subscribe(tenant, "http://127.0.0.1:9/hook")
    type(sub).unscoped.filter(pk=sub.pk).update(source="FINANCIAL_INSTRUMENT", instrument_offchain_id=bond.offchain_id, instrument_address=bond.address)
    viewer = client_for(client, staff_user("viewer"))
    page = viewer.get(f"/admin/instruments/financialinstrument/{bond.pk}/change/").content.decode()
    assert f"{SUBSCRIPTIONS}?instrument_offchain_id__exact={bond.offchain_id}" in page
    assert "receiver" in viewer.get(f"{SUBSCRIPTIONS}?instrument_offchain_id__exact={bond.offchain_id}").content.decode()
    back = viewer.get(f"{SUBSCRIPTIONS}{sub.pk}/change/").content.decode()
    assert f"/admin/instruments/financialinstrument/?offchain_id__exact={bond.offchain_id}" in back
    assert f"/admin/instruments/financialinstrument/{bond.pk}/change/" in viewer.get(f"/admin/instruments/financialinstrument/?offchain_id__exact={bond.offchain_id}").content.decode()


@pytest.mark.django_db
def test_nonce_accounts_lookup_tables_and_vaults_have_pages_linked_both_ways(client, tenant):
    viewer = client_for(client, staff_user("viewer"))
    # A tenant's nonce account is also its account record: each page links to the other.
    record = AccountFactory(tenant=tenant, type="NONCE")
    nonce = NonceAccount.objects.create(cluster="CHAIN_LOCALNET", address=record.address, tenant=tenant, account=record, authority=AccountFactory(tenant=tenant).address,
                                        state=NonceState.READY)
    nonce_page = viewer.get(f"/admin/transactions/nonceaccount/{nonce.pk}/change/").content.decode()
    assert f"/admin/accounts/account/{record.pk}/change/" in nonce_page and f"/admin/chain/transactions/nonceaccount/{nonce.pk}/" in nonce_page
    assert f"/admin/transactions/nonceaccount/?account__id__exact={record.pk}" in viewer.get(f"/admin/accounts/account/{record.pk}/change/").content.decode()
    assert nonce.address in viewer.get(f"/admin/transactions/nonceaccount/?q={nonce.address}").content.decode()

    table = AddressLookupTableFactory(tenant=tenant)
    table_page = viewer.get(f"/admin/lookup_tables/addresslookuptable/{table.pk}/change/").content.decode()
    assert "Open on the chain" in table_page and f"/admin/chain/lookup_tables/addresslookuptable/{table.pk}/" in table_page
    assert 'name="_save"' not in table_page

    vault = make_vault(tenant)
    vault_page = viewer.get(f"/admin/vaults/vault/{vault.pk}/change/").content.decode()
    assert f"/admin/positions/position/{vault.position_id}/change/" in vault_page and f"/admin/instruments/financialinstrument/{vault.loan_instrument_id}/change/" in vault_page
    assert f"/admin/chain/vaults/vault/{vault.pk}/" in vault_page
    position_page = viewer.get(f"/admin/positions/position/{vault.position_id}/change/").content.decode()
    assert f"/admin/vaults/vault/?position__id__exact={vault.position_id}" in position_page
    loan_page = viewer.get(f"/admin/instruments/financialinstrument/{vault.loan_instrument_id}/change/").content.decode()
    assert f"/admin/vaults/vault/?loan_instrument__id__exact={vault.loan_instrument_id}" in loan_page
    assert vault.token_address in viewer.get(f"/admin/vaults/vault/?loan_instrument__id__exact={vault.loan_instrument_id}").content.decode()

    # Addresses to records: one query per kind, only what the user may see.
    found = records_at(None, "CHAIN_LOCALNET", [record.address, table.address, vault.token_address])
    assert {link["label"] for link in found[record.address]} == {"account", "nonce account"}
    assert {link["label"] for link in found[vault.token_address]} == {"account", "position"} and [link["label"] for link in found[table.address]] == ["address lookup table"]
