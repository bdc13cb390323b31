"""alId sequences per organization and cluster (issue 9, item 10).

The global rows are dropped: each organization's sequence starts at 0 and skips every
number its instruments and accounts already use (instruments/alid.py), so no alId can be
issued twice and no number reflects another organization's issuance.
"""

import django.db.models.deletion
from django.db import migrations, models


def drop_global_sequences(apps, schema_editor):
    apps.get_model("instruments", "AlIdSequence").objects.all().delete()


class Migration(migrations.Migration):

    dependencies = [
        ("instruments", "0001_financial_instruments"),
        ("tenancy", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(drop_global_sequences, migrations.RunPython.noop),
        migrations.RemoveConstraint(model_name="alidsequence", name="alid_sequence_unique"),
        migrations.AddField(
            model_name="alidsequence",
            name="tenant",
            field=models.ForeignKey(default=1, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="tenancy.tenantorganization"),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="alidsequence",
            name="cluster",
            field=models.CharField(default="CHAIN_LOCALNET", max_length=40),
            preserve_default=False,
        ),
        migrations.AddConstraint(
            model_name="alidsequence",
            constraint=models.UniqueConstraint(fields=("tenant", "cluster", "category", "instrument_type"), name="alid_sequence_unique_per_tenant"),
        ),
    ]
