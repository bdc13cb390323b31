"""AddressLookupTable leaves the transactions app for lookup_tables (lookup_tables/models.py); the table stays."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('transactions', '0091_managed_keys_in_custody'),
        ('lookup_tables', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The table stays as it is (transactions_addresslookuptable): only Django's idea of
            # which app owns the model changes.
            state_operations=[
                migrations.DeleteModel(
                    name='AddressLookupTable',
                ),
            ],
            database_operations=[],
        ),
    ]
