"""Webhook subscriptions, events, attempts and network-event cursors, moved here from the
transactions app: their tables already exist."""

import django.db.models.deletion
import django.db.models.manager
import uuid
from django.db import migrations, models

from ledger_project.migration_ops import move_content_types


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('tenancy', '0002_a_idempotency_response_bytes'),
        ('transactions', '0092_lookup_tables_app'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The tables stay as they are (transactions_webhook*, transactions_networkeventcursor):
            # only Django's idea of which app owns the models changes.
            state_operations=[
                migrations.CreateModel(
                    name='NetworkEventCursor',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('cluster', models.CharField(max_length=40)),
                        ('address', models.CharField(max_length=44)),
                        ('last_signature', models.CharField(blank=True, max_length=100)),
                        ('last_slot', models.BigIntegerField(blank=True, null=True)),
                        ('since', models.DateTimeField()),
                        ('polled_at', models.DateTimeField(blank=True, null=True)),
                    ],
                    options={
                        'db_table': 'transactions_networkeventcursor',
                        'constraints': [models.UniqueConstraint(fields=('cluster', 'address'), name='whk_cursor_address')],
                    },
                ),
                migrations.CreateModel(
                    name='WebhookSubscription',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('cluster', models.CharField(max_length=40)),
                        ('offchain_id', models.UUIDField(default=uuid.uuid4, editable=False, unique=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('name', models.CharField(max_length=200)),
                        ('endpoint_url', models.CharField(max_length=500)),
                        ('source', models.CharField(choices=[('REGISTRY', 'Registry'), ('FINANCIAL_INSTRUMENT', 'Financial Instrument')], default='REGISTRY', max_length=30)),
                        ('status', models.CharField(choices=[('ACTIVE', 'Active'), ('DISABLED', 'Disabled'), ('REMOVED', 'Removed')], default='ACTIVE', max_length=10)),
                        ('status_reason', models.CharField(blank=True, max_length=300)),
                        ('instrument_offchain_id', models.UUIDField(blank=True, null=True)),
                        ('instrument_address', models.CharField(blank=True, max_length=44)),
                        ('pre_submit', models.BooleanField(default=False)),
                        ('post_submit', models.BooleanField(default=False)),
                        ('network_event', models.BooleanField(default=False)),
                        ('auth', models.JSONField(blank=True, default=dict, help_text='apiKeyAuthConfig / oauth2AuthConfig; secrets sealed (webhooks/services.py).')),
                        ('timeout_seconds', models.PositiveIntegerField(blank=True, null=True)),
                        ('signing_secret', models.JSONField(default=dict, help_text='Sealed HMAC key.')),
                        ('previous_signing_secret', models.JSONField(blank=True, help_text='Sealed; also signs until previous_valid_until (rotation).', null=True)),
                        ('previous_valid_until', models.DateTimeField(blank=True, null=True)),
                        ('signing_secret_rotated_at', models.DateTimeField(blank=True, null=True)),
                        ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='tenancy.tenantorganization')),
                    ],
                    options={
                        'db_table': 'transactions_webhooksubscription',
                    },
                    managers=[
                        ('unscoped', django.db.models.manager.Manager()),
                    ],
                ),
                migrations.CreateModel(
                    name='WebhookEvent',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('cluster', models.CharField(max_length=40)),
                        ('offchain_id', models.UUIDField(default=uuid.uuid4, editable=False, unique=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('event_id', models.UUIDField()),
                        ('event_type', models.CharField(choices=[('transaction.pre_submit', 'Pre Submit'), ('transaction.post_submit', 'Post Submit'), ('account.network_event', 'Network Event')], max_length=40)),
                        ('subject', models.CharField(max_length=120)),
                        ('body', models.TextField()),
                        ('occurred_at', models.DateTimeField()),
                        ('status', models.CharField(choices=[('PENDING', 'Pending'), ('DELIVERING', 'Delivering'), ('DELIVERED', 'Delivered'), ('DEAD', 'Dead'), ('CANCELLED', 'Cancelled')], default='PENDING', max_length=12)),
                        ('attempts', models.PositiveIntegerField(default=0)),
                        ('next_attempt_at', models.DateTimeField(help_text='PENDING: when it is due; DELIVERING: when the claim lapses.')),
                        ('retry_from', models.DateTimeField(help_text='The retry window (LEDGER_WEBHOOK_RETRY_WINDOW_SECONDS) runs from here: recorded, or redelivered.')),
                        ('claim_token', models.CharField(blank=True, max_length=32)),
                        ('delivered_at', models.DateTimeField(blank=True, null=True)),
                        ('dead_at', models.DateTimeField(blank=True, null=True)),
                        ('last_status_code', models.PositiveIntegerField(blank=True, null=True)),
                        ('last_error', models.TextField(blank=True)),
                        ('replays', models.PositiveIntegerField(default=0)),
                        ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='tenancy.tenantorganization')),
                        ('subscription', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='events', to='webhooks.webhooksubscription')),
                    ],
                    options={
                        'db_table': 'transactions_webhookevent',
                    },
                    managers=[
                        ('unscoped', django.db.models.manager.Manager()),
                    ],
                ),
                migrations.CreateModel(
                    name='WebhookAttempt',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('number', models.PositiveIntegerField()),
                        ('started_at', models.DateTimeField()),
                        ('latency_ms', models.PositiveIntegerField()),
                        ('status_code', models.PositiveIntegerField(blank=True, null=True)),
                        ('error', models.TextField(blank=True)),
                        ('response_excerpt', models.TextField(blank=True)),
                        ('event', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='attempt_log', to='webhooks.webhookevent')),
                    ],
                    options={
                        'db_table': 'transactions_webhookattempt',
                        'ordering': ['event', 'number'],
                        'indexes': [models.Index(fields=['event', 'number'], name='whk_attempt_event'), models.Index(fields=['started_at'], name='whk_attempt_started')],
                    },
                ),
                migrations.AddIndex(
                    model_name='webhooksubscription',
                    index=models.Index(fields=['tenant', 'cluster', 'status'], name='whk_sub_tenant'),
                ),
                migrations.AddIndex(
                    model_name='webhooksubscription',
                    index=models.Index(fields=['instrument_offchain_id'], name='whk_sub_instrument'),
                ),
                migrations.AddConstraint(
                    model_name='webhooksubscription',
                    constraint=models.CheckConstraint(condition=models.Q(models.Q(('instrument_offchain_id__isnull', True), ('source', 'REGISTRY')), models.Q(('instrument_offchain_id__isnull', False), ('source', 'FINANCIAL_INSTRUMENT')), _connector='OR'), name='whk_sub_source_instrument', violation_error_message="An instrument's webhook names its instrument; a registry webhook none."),
                ),
                migrations.AddIndex(
                    model_name='webhookevent',
                    index=models.Index(fields=['status', 'next_attempt_at'], name='whk_event_due'),
                ),
                migrations.AddIndex(
                    model_name='webhookevent',
                    index=models.Index(fields=['subscription', 'subject', 'id'], name='whk_event_order'),
                ),
                migrations.AddIndex(
                    model_name='webhookevent',
                    index=models.Index(fields=['subscription', 'occurred_at'], name='whk_event_time'),
                ),
                migrations.AddIndex(
                    model_name='webhookevent',
                    index=models.Index(fields=['event_id'], name='whk_event_id'),
                ),
                migrations.AddIndex(
                    model_name='webhookevent',
                    index=models.Index(fields=['subject'], name='whk_event_subject'),
                ),
                migrations.AddConstraint(
                    model_name='webhookevent',
                    constraint=models.UniqueConstraint(fields=('subscription', 'event_id'), name='whk_event_once_per_subscription'),
                ),
            ],
            database_operations=[],
        ),
        move_content_types("transactions", "webhooks", ("webhooksubscription", "webhookevent", "webhookattempt", "networkeventcursor")),
    ]
