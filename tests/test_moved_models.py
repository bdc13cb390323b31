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
