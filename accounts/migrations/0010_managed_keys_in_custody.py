"""ManagedKey leaves the accounts app for custody (custody/models.py); the table stays."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0009_inactivate_platform_addresses'),
        ('custody', '0001_initial'),
        ('marketdata', '0002_managed_keys_in_custody'),
        ('transactions', '0091_managed_keys_in_custody'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The table and its constraints stay as they are (accounts_managedkey): only Django's
            # idea of which app owns the model changes.
            state_operations=[
                migrations.AlterField(
                    model_name='account',
                    name='managed_key',
                    field=models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='account', to='custody.managedkey'),
                ),
                migrations.DeleteModel(
                    name='ManagedKey',
                ),
            ],
            database_operations=[],
        ),
    ]
