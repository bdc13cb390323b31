"""Price-feed authority keys point at custody.ManagedKey (moved from accounts; no data moves)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('custody', '0001_initial'),
        ('marketdata', '0001_data_sources'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The table and its constraints stay as they are (accounts_managedkey): only Django's
            # idea of which app owns the model changes.
            state_operations=[
                migrations.AlterField(
                    model_name='onchaindatasource',
                    name='authority_key',
                    field=models.ForeignKey(blank=True, help_text="The authority's key when the service generated it (no account record).", null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='custody.managedkey'),
                ),
            ],
            database_operations=[],
        ),
    ]
