"""ledger_project.statements: a queryset compiled once gives what ``list(queryset)`` gives."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.db.models import Count
from django.db.transaction import TransactionManagementError

from ledger_project.statements import Statement
from tenancy.models import ApiKey, TenantOrganization
from tenancy.tests.factories import TenantFactory, issue_key


def _fields(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}


@pytest.mark.django_db
def test_rows_and_their_select_related_objects_are_those_the_orm_builds(django_assert_num_queries):
    keys = [issue_key(TenantFactory(), roles=["PLATFORM_APPROVE_TRANSACTIONS"]).api_key for _ in range(3)]
    statement = Statement("test")

    def queryset(pks):
        return ApiKey.objects.filter(pk__in=pks).select_related("organization").order_by("pk")

    for pks in ([keys[0].pk, keys[2].pk], [keys[1].pk, keys[0].pk]):  # the second call reuses the plan
        fetched = statement.fetch(queryset(pks))
        expected = list(queryset(pks))
        assert [_fields(k) for k in fetched] == [_fields(k) for k in expected]
        assert fetched[0].roles == ["PLATFORM_APPROVE_TRANSACTIONS"]  # JSON decoded, datetimes aware
        assert fetched[0].created_at.tzinfo is not None
        with django_assert_num_queries(0):
            assert [k.organization.external_id for k in fetched] == [k.organization.external_id for k in expected]
    assert len(statement._plans) == 1


@pytest.mark.django_db
def test_each_shape_has_its_own_plan_and_an_empty_in_list_runs_no_query(django_assert_num_queries):
    tenants = [TenantFactory() for _ in range(3)]
    statement = Statement("test")
    assert [t.pk for t in statement.fetch(TenantOrganization.objects.filter(pk__in=[tenants[0].pk]).order_by("pk"))] == [tenants[0].pk]
    assert [t.pk for t in statement.fetch(TenantOrganization.objects.filter(pk__in=[t.pk for t in tenants]).order_by("pk"))] == [t.pk for t in tenants]
    assert [t.pk for t in statement.fetch(TenantOrganization.objects.filter(external_id=tenants[1].external_id))] == [tenants[1].pk]
    assert [t.pk for t in statement.fetch(TenantOrganization.objects.filter(pk__in=[t.pk for t in tenants]).order_by("-pk")[:2])] == [tenants[2].pk, tenants[1].pk]
    assert len(statement._plans) == 4
    with django_assert_num_queries(0):
        assert statement.fetch(TenantOrganization.objects.filter(pk__in=[])) == []


@pytest.mark.django_db
def test_querysets_it_does_not_compile_are_evaluated_the_ordinary_way():
    tenant = TenantFactory()
    issue_key(tenant)
    statement = Statement("test")
    annotated = statement.fetch(TenantOrganization.objects.filter(pk=tenant.pk).annotate(keys=Count("api_keys")))
    assert annotated[0].keys == 1
    assert statement.fetch(TenantOrganization.objects.filter(pk=tenant.pk).only("external_id"))[0].get_deferred_fields() == {"offchain_id", "name", "is_active", "created_at"}
    assert statement._plans == {}


@pytest.mark.django_db(transaction=True)
def test_a_compiled_select_for_update_is_refused_outside_a_transaction_as_django_refuses_it():
    """PostgreSQL: refused outside a transaction (TransactionManagementError), as Django
    refuses it; SQLite has no SELECT ... FOR UPDATE, so Django runs it as a plain read, and
    so does the compiled statement."""
    tenant = TenantFactory()
    statement = Statement("test")
    with transaction.atomic():
        assert [t.pk for t in statement.fetch(TenantOrganization.objects.filter(pk=tenant.pk).select_for_update())] == [tenant.pk]

    def outcome(read):
        try:
            return [t.pk for t in read()]
        except TransactionManagementError:
            return "refused"

    compiled = outcome(lambda: statement.fetch(TenantOrganization.objects.filter(pk=tenant.pk).select_for_update()))
    assert compiled == outcome(lambda: list(TenantOrganization.objects.filter(pk=tenant.pk).select_for_update()))
    assert compiled == ("refused" if connection.features.has_select_for_update else [tenant.pk])
    assert connection.get_autocommit()
