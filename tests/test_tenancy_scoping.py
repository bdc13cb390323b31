"""Tenancy by construction (docs/style.md, "One tenant door"): a tenant-owned model's default API manager
cannot be queried without a tenant, views read through TenantScopedViewSet.get_queryset(),
raw SQL fast paths bind the tenant, and only workers and the admin use ``unscoped``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.apps import apps
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory, force_authenticate

from accounts.lookup import display_account, lookup_scope
from accounts.models import Account
from accounts.selectors import account_list
from accounts.tests.factories import AccountFactory
from instruments.models import FinancialInstrument
from instruments.selectors import instrument_list
from tenancy.viewsets import TenantScopedViewSet
from tenancy.scoping import TenantOwnedModel, UnscopedQueryError
from tenancy.tests.factories import issue_key
from transactions.models import Transaction
from transactions.selectors import transaction_get
from positions.models import Position as _Position
from positions.selectors import position_list as _position_list
from marketdata.models import OnchainDataSource as _OnchainDataSource
from marketdata.selectors import data_source_list as _data_source_list

ROOT = Path(__file__).resolve().parent.parent
#: Every tenant-owned model, found rather than listed: a new one is covered as it lands.
TENANT_OWNED = sorted((m for m in apps.get_models() if issubclass(m, TenantOwnedModel)), key=lambda m: m._meta.label)


def test_the_tenant_owned_models_are_found():
    assert {Account, FinancialInstrument, Transaction} <= set(TENANT_OWNED)


@pytest.mark.parametrize("model", TENANT_OWNED, ids=lambda m: m.__name__)
@pytest.mark.parametrize("call", [
    lambda m: m.objects.all(),
    lambda m: m.objects.filter(pk=1),
    lambda m: m.objects.get(pk=1),
    lambda m: m.objects.count(),
    lambda m: m.objects.create(),
    lambda m: m.objects.select_for_update(),
    lambda m: m.objects.values(),
    lambda m: m.objects.filter(pk=1).update(comments="x"),
], ids=["all", "filter", "get", "count", "create", "select_for_update", "values", "update"])
def test_objects_refuses_every_query_without_a_tenant(db, model, call):
    with pytest.raises(UnscopedQueryError, match=rf"{model.__name__}\.objects cannot be queried without a tenant"):
        call(model)


@pytest.mark.parametrize("model", TENANT_OWNED, ids=lambda m: m.__name__)
def test_for_tenant_and_visible_to_refuse_none(db, model):
    for door in (model.objects.for_tenant, model.objects.visible_to, model.unscoped.for_tenant, model.unscoped.visible_to):
        with pytest.raises(UnscopedQueryError):
            door(None)


@pytest.mark.parametrize("model", TENANT_OWNED, ids=lambda m: m.__name__)
def test_admin_and_related_managers_use_the_unscoped_manager(model):
    # The admin, related managers and validate_unique use the default manager: it must not
    # need a tenant (they act for no tenant), and it is the explicit one.
    assert model._default_manager is model.unscoped
    assert model._base_manager.all().model is model  # builds a queryset: no tenant needed


def test_scoped_querysets_keep_their_tenant(tenant, other_tenant):
    mine, theirs = AccountFactory(tenant=tenant), AccountFactory(tenant=other_tenant, shared_across_tenants=True)
    queryset = Account.objects.for_tenant(tenant).filter(cluster="CHAIN_LOCALNET").order_by("pk")
    assert queryset.scoped_tenant == tenant and list(queryset) == [mine]
    assert set(Account.objects.visible_to(tenant)) == {mine, theirs}
    assert Account.unscoped.filter(pk=mine.pk).scoped_tenant is None


# A minimal view, as a new endpoint would be written.
class _RowsView(TenantScopedViewSet):
    model = Account
    uses_cluster = False

    def through_the_door(self, request):
        return Response(sorted(a.name for a in self.get_queryset()))

    def around_the_door(self, request):
        return Response(sorted(a.name for a in Account.objects.all()))


class _WideningView(TenantScopedViewSet):
    model = Account
    uses_cluster = False

    def scoped_queryset(self, queryset):
        return Account.unscoped.all()

    def rows(self, request):
        return Response([a.name for a in self.get_queryset()])


def _call(view_class, action, api_key):
    request = APIRequestFactory().post("/probe", {}, format="json")
    force_authenticate(request, user=api_key)
    return view_class.as_view({"post": action})(request)


def test_a_view_reaches_rows_only_through_the_scoped_door(tenant, other_tenant, caplog):
    AccountFactory(tenant=tenant, name="mine")
    AccountFactory(tenant=other_tenant, name="theirs")
    key = issue_key(tenant).api_key

    assert _call(_RowsView, "through_the_door", key).data == ["mine"]

    response = _call(_RowsView, "around_the_door", key)
    assert response.status_code == 500 and "theirs" not in str(response.data)
    assert any(r.exc_info and r.exc_info[0] is UnscopedQueryError for r in caplog.records)


def test_scoped_queryset_may_not_widen_the_door(tenant, other_tenant, caplog):
    AccountFactory(tenant=other_tenant, name="theirs")
    response = _call(_WideningView, "rows", issue_key(tenant).api_key)
    assert response.status_code == 500 and "theirs" not in str(response.data)
    assert any(r.exc_info and r.exc_info[0] is UnscopedQueryError for r in caplog.records)


#: Ways to combine a scoped queryset with one that is not scoped to the same tenant: none
#: of them may keep the tag, and every selector and the view's door must refuse them.
WIDENINGS = {
    "or_unscoped": lambda t, o: Account.objects.for_tenant(t) | Account.unscoped.all(),
    "unscoped_or": lambda t, o: Account.unscoped.all() | Account.objects.for_tenant(t),
    "or_other_tenant": lambda t, o: Account.objects.for_tenant(t) | Account.objects.for_tenant(o),
    "xor_unscoped": lambda t, o: Account.objects.for_tenant(t) ^ Account.unscoped.all(),
    "union_unscoped": lambda t, o: Account.objects.for_tenant(t).order_by().union(Account.unscoped.order_by()),
    "union_other_tenant": lambda t, o: Account.objects.for_tenant(t).order_by().union(Account.objects.for_tenant(o).order_by()),
    "unscoped_union": lambda t, o: Account.unscoped.order_by().union(Account.objects.for_tenant(t).order_by()),
    "unscoped_difference": lambda t, o: Account.unscoped.order_by().difference(Account.objects.for_tenant(t).order_by()),
    "tag_copied_onto_unscoped": lambda t, o: _tagged(Account.unscoped.all(), t),
    "where_cleared": lambda t, o: _where_cleared(Account.objects.for_tenant(t)),
    "or_shared": lambda t, o: Account.objects.for_tenant(t) | Account.objects.visible_to(t),
}


def _tagged(queryset, tenant):
    queryset.scoped_tenant = tenant
    return queryset


def _where_cleared(queryset):
    queryset.query.where = type(queryset.query.where)()
    return queryset


@pytest.mark.parametrize("widen", WIDENINGS.values(), ids=WIDENINGS.keys())
def test_combining_with_an_unscoped_queryset_loses_the_scope(tenant, other_tenant, widen):
    from tenancy.scoping import scoped_tenant

    AccountFactory(tenant=other_tenant, shared_across_tenants=True)
    queryset = widen(tenant, other_tenant)
    with pytest.raises(UnscopedQueryError):
        scoped_tenant(queryset, own=True)
    assert queryset.model is Account and any(a.tenant_id == other_tenant.pk for a in queryset)  # it did widen


@pytest.mark.parametrize("widen", [w for k, w in WIDENINGS.items() if k != "or_shared"], ids=[k for k in WIDENINGS if k != "or_shared"])
def test_selectors_refuse_a_widened_queryset(tenant, other_tenant, widen):
    with pytest.raises(UnscopedQueryError):
        account_list(queryset=widen(tenant, other_tenant), cluster="CHAIN_LOCALNET", item_query=None)


@pytest.mark.parametrize("combine", [
    lambda t, o: Account.objects.for_tenant(t) | Account.objects.for_tenant(t).filter(name="x"),
    lambda t, o: Account.objects.for_tenant(t) & Account.unscoped.filter(name="mine"),
    lambda t, o: Account.unscoped.filter(name="mine") & Account.objects.for_tenant(t),
    lambda t, o: Account.objects.for_tenant(t).order_by().union(Account.objects.for_tenant(t).filter(name="x").order_by()),
    lambda t, o: Account.objects.for_tenant(t).order_by().intersection(Account.unscoped.order_by()),
    lambda t, o: Account.objects.for_tenant(t).order_by().difference(Account.unscoped.filter(name="x").order_by()),
    lambda t, o: Account.objects.for_tenant(t) | Account.unscoped.none(),
    lambda t, o: Account.objects.for_tenant(t).filter(name="mine").exclude(name="x").all(),
    lambda t, o: (Account.objects.for_tenant(t) | Account.unscoped.all()).for_tenant(t),
], ids=["or_same", "and_unscoped", "unscoped_and", "union_same", "intersection_unscoped", "difference", "or_none", "narrowed", "re_narrowed"])
def test_narrowing_combinations_keep_the_scope(tenant, other_tenant, combine):
    from tenancy.scoping import scoped_tenant

    mine = AccountFactory(tenant=tenant, name="mine")
    AccountFactory(tenant=other_tenant, name="mine")
    queryset = combine(tenant, other_tenant)
    assert scoped_tenant(queryset, own=True) == tenant
    assert {a.pk for a in queryset} <= {mine.pk}


@pytest.mark.parametrize("widen", ["or_unscoped", "union_unscoped", "or_other_tenant", "tag_copied_onto_unscoped", "where_cleared", "or_shared"])
def test_scoped_queryset_may_not_widen_by_combining(tenant, other_tenant, caplog, widen):
    AccountFactory(tenant=other_tenant, name="theirs", shared_across_tenants=True)

    class _CombiningView(_WideningView):
        def scoped_queryset(self, queryset):
            return WIDENINGS[widen](self.tenant, other_tenant)

    response = _call(_CombiningView, "rows", issue_key(tenant).api_key)
    assert response.status_code == 500 and "theirs" not in str(response.data)
    assert any(r.exc_info and r.exc_info[0] is UnscopedQueryError for r in caplog.records)


def test_a_view_may_not_override_get_queryset():
    with pytest.raises(TypeError, match="may not override get_queryset"):
        type("Sneaky", (TenantScopedViewSet,), {"get_queryset": lambda self: Account.unscoped.all()})


@pytest.mark.parametrize("page", [
    lambda qs: account_list(queryset=qs(Account), cluster="CHAIN_LOCALNET", item_query=None),
    lambda qs: instrument_list(queryset=qs(FinancialInstrument), cluster="CHAIN_LOCALNET", item_query=None),
    lambda qs: transaction_get(queryset=qs(Transaction), offchain_id="00000000-0000-0000-0000-000000000000"),
    lambda qs: _position_list(queryset=qs(_Position), tenant=None, cluster="CHAIN_LOCALNET", item_query=None),
    lambda qs: _data_source_list(queryset=qs(_OnchainDataSource), cluster="CHAIN_LOCALNET", item_query=None),
], ids=["account_list", "instrument_list", "transaction_get", "position_list", "data_source_list"])
def test_selectors_refuse_an_unscoped_queryset(db, page):
    with pytest.raises(UnscopedQueryError):
        page(lambda model: model.unscoped.all())


@pytest.mark.parametrize("lookup", [{"onchainId": "11111111111111111111111111111111"}, {"offchainId": "00000000-0000-0000-0000-000000000000"}, {"offchainReferences": {"code": "X"}}])
def test_raw_sql_and_lookups_cannot_run_without_a_tenant(db, lookup):
    # display_account's fast path is raw SQL: the tenant is a bound parameter, never optional.
    with pytest.raises(UnscopedQueryError):
        display_account(None, "CHAIN_LOCALNET", lookup, field="itemData")
    with pytest.raises(UnscopedQueryError):
        lookup_scope(Account, None, "CHAIN_LOCALNET", lookup, "itemData", writable=False)


def test_raw_sql_fast_path_binds_the_tenant(tenant, other_tenant):
    from accounts.lookup import _display_sql

    theirs = AccountFactory(tenant=other_tenant)
    mine = AccountFactory(tenant=tenant)
    assert re.search(r"WHERE .*tenant_id\W*\s*=\s*%s", _display_sql("address"))  # bound, never interpolated
    assert display_account(tenant, "CHAIN_LOCALNET", {"onchainId": mine.address}, field="itemData").pk == mine.pk
    from ledger_project.api.errors import NotFoundError

    with pytest.raises(NotFoundError):
        display_account(tenant, "CHAIN_LOCALNET", {"onchainId": theirs.address}, field="itemData")


def test_row_locks_and_writes_take_the_tenant(tenant, other_tenant):
    from django.db import transaction

    from accounts.locks import lock_account, lock_visible_account
    from instruments.locks import lock_instrument
    from instruments.tests.factories import FinancialInstrumentFactory
    from marketdata.locks import lock_source
    from marketdata.tests.factories import make_source
    from positions.locks import lock_position
    from positions.tests.test_api_bulk import make_position

    mine, shared = AccountFactory(tenant=tenant), AccountFactory(tenant=other_tenant, shared_across_tenants=True)
    instrument = FinancialInstrumentFactory(tenant=tenant)
    held = make_position(tenant, instrument)
    priced = make_source(tenant, instrument=instrument)
    with transaction.atomic():
        assert lock_source(priced.pk, tenant=tenant).pk == priced.pk
        assert lock_account(mine.pk, tenant=tenant).pk == mine.pk
        assert lock_position(held.pk, tenant=tenant).pk == held.pk
        assert lock_instrument(instrument.pk, tenant=tenant).pk == instrument.pk
        assert lock_visible_account(shared.pk, tenant=tenant).pk == shared.pk  # a shared funder: re-checks only
        for lock in (lambda: lock_account(mine.pk, tenant=other_tenant), lambda: lock_instrument(instrument.pk, tenant=other_tenant),
                     lambda: lock_account(shared.pk, tenant=tenant), lambda: lock_visible_account(mine.pk, tenant=other_tenant),
                     lambda: lock_position(held.pk, tenant=other_tenant), lambda: lock_source(priced.pk, tenant=other_tenant)):
            with pytest.raises(LookupError):
                lock()


#: Request-path modules: they act for a tenant, so they use the unscoped manager only inside
#: functions marked @worker_only (called by workers, reconciliation, the admin, commands) or
#: @cross_tenant_aggregate (a number over every tenant's rows, e.g. a shared funder's limits).
REQUEST_PATH_MODULES = [
    "ledger_project/api/*.py", "*/views.py", "*/endpoints.py", "*/selectors.py", "*/lookup.py", "*/serializers.py", "*/render.py",
    "*/services.py", "*/lifecycle.py", "*/limits.py", "*/locks.py", "*/webhooks.py", "*/movement.py", "*/transfers.py",
    "lookup_tables/*.py",
    "tenancy/idempotency.py", "tenancy/viewsets.py", "tenancy/permissions.py", "tenancy/authentication.py", "tenancy/throttling.py",
    "loans/services/*.py",
    "*/nonces.py",
    "transactions/withdrawals.py",
]
UNSCOPED = re.compile(r"\.unscoped\b|_default_manager|_base_manager")


def _unscoped_uses_outside_worker_only(source: str) -> list[int]:
    """Lines of ``source`` that use the unscoped manager outside a marked function."""
    import ast

    tree = ast.parse(source)
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            getattr(d, "id", getattr(d, "attr", None)) in ("worker_only", "cross_tenant_aggregate")
            for d in node.decorator_list
        ):
            allowed.update(range(node.body[0].lineno, node.end_lineno + 1))
    return [number for number, line in enumerate(source.splitlines(), 1) if UNSCOPED.search(line.split("#")[0]) and number not in allowed]


def test_request_path_code_uses_the_unscoped_manager_only_in_worker_only_functions():
    offenders = []
    for pattern in REQUEST_PATH_MODULES:
        for path in ROOT.glob(pattern):
            if ".venv" in path.parts:
                continue
            lines = path.read_text().splitlines()
            offenders += [f"{path.relative_to(ROOT)}:{n}: {lines[n - 1].strip()}" for n in _unscoped_uses_outside_worker_only(path.read_text())]
    assert not offenders, "Request-path code reads without a tenant (scope it, or mark the function @worker_only / @cross_tenant_aggregate):\n" + "\n".join(offenders)


def test_the_worker_only_rule_sees_what_it_must():
    source = (
        "from tenancy.scoping import worker_only\n"
        "def view(t):\n    return Account.unscoped.get(pk=1)\n"
        "@worker_only  # a task\ndef task(pk):\n    return Account.unscoped.get(pk=pk)\n"
        "ROWS = Account._default_manager.all()\n"
        "@cross_tenant_aggregate  # a sum\ndef total(a):\n    return Account.unscoped.count()\n"
        "@other\ndef marked_otherwise():\n    return Account.unscoped.count()\n"
    )
    assert _unscoped_uses_outside_worker_only(source) == [3, 7, 13]
