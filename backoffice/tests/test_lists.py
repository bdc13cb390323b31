"""Lists that stay fast at scale (docs/admin.md, "Lists at scale"): a page costs the same
queries whatever it shows (no N+1), no full count, identifiers looked up by equality, and
detail pages link related records both ways."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.utils import timezone
from solders.keypair import Keypair
from django.test.utils import CaptureQueriesContext

from accounts.tests.factories import AccountFactory
from backoffice.paginator import EstimatedCountPaginator
from instruments.tests.factories import FinancialInstrumentFactory
from positions.tests.test_api_bulk import make_position
from tenancy.tests.factories import issue_key
from transactions.models import NonceAccount, Transaction, TransactionStatus
from lookup_tables.tests.factories import AddressLookupTableFactory
from webhooks.models import WebhookAttempt, WebhookEvent
from vaults.tests.factories import make_vault

from .staff import client_for, staff_user

LISTS = {
    "/admin/accounts/account/": lambda t, i: AccountFactory(tenant=t),
    "/admin/positions/position/": lambda t, i: make_position(t, FinancialInstrumentFactory(tenant=t)),
    "/admin/instruments/financialinstrument/": lambda t, i: FinancialInstrumentFactory(tenant=t),
    "/admin/transactions/transaction/": lambda t, i: Transaction.unscoped.create(tenant=t, cluster="CHAIN_LOCALNET", operation="test.op", status=TransactionStatus.SUBMITTED,
                                                                                   message=b"", blockhash="x", fee_payer="x", onchain_id=f"sig{i}"),
    "/admin/tenancy/apikey/": lambda t, i: issue_key(t),
    "/admin/backoffice/staffauditentry/": lambda t, i: __import__("backoffice.models", fromlist=["x"]).StaffAuditEntry.objects.create(kind="ACTION", actor=f"u{i}"),
    "/admin/webhooks/webhookevent/": lambda t, i: make_event(t),
    "/admin/webhooks/webhookattempt/": lambda t, i: WebhookAttempt.objects.create(event=make_event(t), number=1, started_at=timezone.now(), latency_ms=5, status_code=503),
    "/admin/webhooks/webhooksubscription/": lambda t, i: subscription(t),
    "/admin/transactions/nonceaccount/": lambda t, i: NonceAccount.objects.create(cluster="CHAIN_LOCALNET", address=str(Keypair().pubkey()), tenant=t,
                                                                                  account=AccountFactory(tenant=t, type="NONCE"), authority=str(Keypair().pubkey()),
                                                                                  leased_by=Transaction.unscoped.create(tenant=t, cluster="CHAIN_LOCALNET", operation="test.op",
                                                                                                                        message=b"", blockhash="x", fee_payer="x")),
    "/admin/lookup_tables/addresslookuptable/": lambda t, i: AddressLookupTableFactory(tenant=t),
    "/admin/vaults/vault/": lambda t, i: make_vault(t),
}


def subscription(tenant):
    from webhooks.models import WebhookSubscription

    return WebhookSubscription.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", name="hook", endpoint_url="https://hooks.example/x", post_submit=True)


def make_event(tenant):
    now = timezone.now()
    return WebhookEvent.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", event_id=uuid.uuid4(), subscription=subscription(tenant), event_type="transaction.post_submit",
                                        subject=f"transaction:{uuid.uuid4()}", body="{}", occurred_at=now, next_attempt_at=now, retry_from=now, status="DEAD")


@pytest.mark.django_db
@pytest.mark.parametrize("url", list(LISTS))
def test_a_list_page_costs_the_same_queries_for_two_rows_or_twelve(client, tenant, url):
    c = client_for(client, staff_user(None, "root", superuser=True))
    make = LISTS[url]

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert c.get(url).status_code == 200
        return len(captured)

    for i in range(2):
        make(tenant, i)
    queries()  # fills the caches of filter values and the date hierarchy's first year
    few = queries()
    for i in range(2, 12):
        make(tenant, i)
    assert queries() == few


@pytest.mark.django_db
def test_an_address_typed_in_the_search_box_is_looked_up_by_equality(client, tenant):
    c = client_for(client, staff_user("viewer"))
    wanted, other = AccountFactory(tenant=tenant), AccountFactory(tenant=tenant)
    with CaptureQueriesContext(connection) as captured:
        page = c.get(f"/admin/accounts/account/?q={wanted.address}").content.decode()
    assert wanted.address in page and other.address not in page
    searched = [q["sql"] for q in captured if '"accounts_account"."address"' in q["sql"] and "LIKE" not in q["sql"].upper()]
    assert searched, "the address was not matched by equality"
    # A name is still found by substring.
    named = AccountFactory(tenant=tenant, name="Treasury desk")
    assert named.address in c.get("/admin/accounts/account/?q=treasury").content.decode()


@pytest.mark.django_db
def test_counts_are_estimated_above_the_limit_on_postgresql_and_exact_below(settings, tenant):
    for _ in range(3):
        AccountFactory(tenant=tenant)
    from accounts.models import Account

    settings.LEDGER_ADMIN_EXACT_COUNT_LIMIT = 10
    exact = EstimatedCountPaginator(Account.unscoped.order_by("pk"), 100)
    assert exact.count == 3 and not exact.estimated
    settings.LEDGER_ADMIN_EXACT_COUNT_LIMIT = -1
    paginator = EstimatedCountPaginator(Account.unscoped.filter(status="ACTIVE").order_by("pk"), 100)
    count = paginator.count
    if connection.vendor == "postgresql":
        assert paginator.estimated and count >= 0  # the planner's estimate, not a count
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE accounts_account")
        unfiltered = EstimatedCountPaginator(Account.unscoped.order_by("pk"), 100)
        assert unfiltered.count == 3 and unfiltered.estimated  # reltuples after ANALYZE
    else:
        assert count == 3 and not paginator.estimated  # SQLite counts


@pytest.mark.django_db
def test_detail_pages_link_related_records_both_ways(client, tenant):
    c = client_for(client, staff_user("viewer"))
    bond = FinancialInstrumentFactory(tenant=tenant, symbol="ACB30")
    owner = AccountFactory(tenant=tenant)
    position = make_position(tenant, bond, owner=owner)
    page = c.get(f"/admin/accounts/account/{owner.pk}/change/").content.decode()
    assert f"/admin/positions/position/?owner__id__exact={owner.pk}" in page  # to its positions
    assert c.get(f"/admin/positions/position/?owner__id__exact={owner.pk}").content.decode().count(position.address) >= 1
    detail = c.get(f"/admin/positions/position/{position.pk}/change/").content.decode()
    assert f"/admin/accounts/account/{owner.pk}/change/" in detail and f"/admin/instruments/financialinstrument/{bond.pk}/change/" in detail  # and back
    tenant_page = c.get(f"/admin/tenancy/tenantorganization/{tenant.pk}/change/").content.decode()
    assert f"/admin/accounts/account/?tenant__id__exact={tenant.pk}" in tenant_page and f"/admin/tenancy/apikey/?organization__id__exact={tenant.pk}" in tenant_page
    assert "Open on the chain" in page and f"/admin/chain/accounts/account/{owner.pk}/" in page
