"""AddressLookupTable, moved here from the transactions app: the table (transactions_addresslookuptable) already exists."""

import django.db.models.deletion
import django.db.models.manager
import uuid
from django.db import migrations, models

from ledger_project.migration_ops import move_content_types


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('accounts', '0010_managed_keys_in_custody'),
        ('custody', '0001_initial'),
        ('tenancy', '0002_a_idempotency_response_bytes'),
        ('transactions', '0091_managed_keys_in_custody'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The table stays as it is (transactions_addresslookuptable): only Django's idea of
            # which app owns the model changes.
            state_operations=[
                migrations.CreateModel(
                    name='AddressLookupTable',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('cluster', models.CharField(max_length=40)),
                        ('offchain_id', models.UUIDField(default=uuid.uuid4, editable=False, unique=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('address', models.CharField(max_length=44)),
                        ('state', models.CharField(choices=[('CREATING', 'Creating'), ('ACTIVE', 'Active'), ('FROZEN', 'Frozen'), ('DEACTIVATED', 'Deactivated'), ('CLOSED', 'Closed'), ('FAILED', 'Failed')], default='CREATING', max_length=12)),
                        ('authority', models.CharField(help_text="The table's authority (signs extend, freeze, deactivate, close).", max_length=44)),
                        ('addresses', models.JSONField(blank=True, default=list, help_text='The addresses stored on chain, in table order.')),
                        ('addresses_count', models.PositiveSmallIntegerField(default=0)),
                        ('last_extended_slot', models.BigIntegerField(blank=True, null=True)),
                        ('last_extended_start_index', models.PositiveSmallIntegerField(default=0)),
                        ('deactivation_slot', models.BigIntegerField(blank=True, null=True)),
                        ('synced_slot', models.BigIntegerField(blank=True, help_text='Slot of the chain read the row reflects.', null=True)),
                        ('closed_at', models.DateTimeField(blank=True, null=True)),
                        ('authority_account', models.ForeignKey(blank=True, help_text='The tenant account named as authority, if any.', null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='accounts.account')),
                        ('authority_key', models.ForeignKey(blank=True, help_text='Its key, when the service holds it.', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='custody.managedkey')),
                        ('creation_transaction', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='transactions.transaction')),
                        ('last_transaction', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='transactions.transaction')),
                        ('pending_transaction', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='transactions.transaction')),
                        ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='tenancy.tenantorganization')),
                    ],
                    options={
                        'db_table': 'transactions_addresslookuptable',
                        'ordering': ['-pk'],
                        'indexes': [models.Index(fields=['tenant', 'cluster', 'state'], name='alt_tenant_state'), models.Index(fields=['authority'], name='alt_authority')],
                        'constraints': [models.UniqueConstraint(fields=('cluster', 'address'), name='alt_unique_address_per_cluster', violation_error_message='This lookup table is already recorded.'), models.CheckConstraint(condition=models.Q(('addresses_count__lte', 256)), name='alt_at_most_256_addresses', violation_error_message='A lookup table holds at most 256 addresses.')],
                    },
                    managers=[
                        ('unscoped', django.db.models.manager.Manager()),
                    ],
                ),
            ],
            database_operations=[],
        ),
        move_content_types("transactions", "lookup_tables", ("addresslookuptable",)),
    ]
