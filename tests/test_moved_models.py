"""Models that moved between apps kept their tables (no data moved) and their content types
(permissions, staff roles and admin history follow them): docs/architecture.md."""

import pytest
from django.apps import apps
from django.contrib.contenttypes.models import ContentType

MOVED = {
    ("custody", "ManagedKey"): "accounts_managedkey",
    ("lookup_tables", "AddressLookupTable"): "transactions_addresslookuptable",
    ("webhooks", "WebhookSubscription"): "transactions_webhooksubscription",
    ("webhooks", "WebhookEvent"): "transactions_webhookevent",
    ("webhooks", "WebhookAttempt"): "transactions_webhookattempt",
    ("webhooks", "NetworkEventCursor"): "transactions_networkeventcursor",
}


@pytest.mark.parametrize(("label", "table"), MOVED.items(), ids=[f"{a}.{m}" for a, m in MOVED])
def test_a_moved_model_keeps_its_table(label, table):
    assert apps.get_model(*label)._meta.db_table == table


@pytest.mark.django_db
def test_moved_models_content_types_belong_to_their_new_apps():
    for app_label, model in MOVED:
        content_type = ContentType.objects.get_for_model(apps.get_model(app_label, model))
        assert content_type.app_label == app_label
    assert not ContentType.objects.filter(app_label__in=("accounts", "transactions"), model__in=[m.lower() for _, m in MOVED]).exists()


@pytest.mark.django_db(transaction=True)
def test_an_upgraded_database_moves_the_models_content_types_with_their_permissions():
    """From before the moves to now: the content type rows (and so the permissions that
    point at them) are renamed, not replaced, and the tables are untouched."""
    from django.contrib.auth.models import Permission
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [("accounts", "0009_inactivate_platform_addresses"), ("transactions", "0090_metrics_indexes"), ("marketdata", "0001_data_sources"),
              ("custody", None), ("lookup_tables", None), ("webhooks", None)]
    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    executor.migrate(before)
    old = {"managedkey": "accounts", "addresslookuptable": "transactions", "webhooksubscription": "transactions", "webhookevent": "transactions",
           "webhookattempt": "transactions", "networkeventcursor": "transactions"}
    permission_ids = {}
    for model, app_label in old.items():
        ContentType.objects.filter(model=model).delete()
        content_type = ContentType.objects.create(app_label=app_label, model=model)
        permission_ids[model] = Permission.objects.create(content_type=content_type, codename=f"view_{model}", name=f"Can view {model}").pk
    ContentType.objects.clear_cache()

    executor = MigrationExecutor(connection)
    executor.migrate(leaves)

    tables = set(connection.introspection.table_names())
    for (app_label, model), table in MOVED.items():
        assert table in tables
        permission = Permission.objects.select_related("content_type").get(pk=permission_ids[model.lower()])
        assert permission.content_type.app_label == app_label
    assert not ContentType.objects.filter(app_label__in=("accounts", "transactions"), model__in=list(old)).exists()
