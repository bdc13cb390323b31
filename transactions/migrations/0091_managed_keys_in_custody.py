"""The engine's key references point at custody.ManagedKey (moved from accounts; no data moves)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('custody', '0001_initial'),
        ('transactions', '0090_metrics_indexes'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The table and its constraints stay as they are (accounts_managedkey): only Django's
            # idea of which app owns the model changes.
            state_operations=[
                migrations.AlterField(
                    model_name='addresslookuptable',
                    name='authority_key',
                    field=models.ForeignKey(blank=True, help_text='Its key, when the service holds it.', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='custody.managedkey'),
                ),
                migrations.AlterField(
                    model_name='nonceaccount',
                    name='account_key',
                    field=models.ForeignKey(blank=True, help_text="The nonce account's own key (signs its creation).", null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='custody.managedkey'),
                ),
                migrations.AlterField(
                    model_name='nonceaccount',
                    name='authority_key',
                    field=models.ForeignKey(blank=True, help_text="The authority's key when the service holds it.", null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='custody.managedkey'),
                ),
                migrations.AlterField(
                    model_name='platformfeepayer',
                    name='managed_key',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='custody.managedkey'),
                ),
                migrations.AlterField(
                    model_name='programdeployment',
                    name='program_key',
                    field=models.ForeignKey(blank=True, help_text="The program account's key (it signs the account's creation).", null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='custody.managedkey'),
                ),
                migrations.AlterField(
                    model_name='programdeployment',
                    name='upgrade_authority_key',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='custody.managedkey'),
                ),
            ],
            database_operations=[],
        ),
    ]
