# The back office's lookups (docs/admin.md, "Lists at scale"): a transaction's or an account's
# webhook events by subject; nonce accounts and lookup tables by authority (an address typed
# in the search box).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0008_threshold_keys'),
        ('tenancy', '0002_a_idempotency_response_bytes'),
        ('transactions', '0062_merge_webhooks'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='addresslookuptable',
            index=models.Index(fields=['authority'], name='alt_authority'),
        ),
        migrations.AddIndex(
            model_name='nonceaccount',
            index=models.Index(fields=['authority'], name='nonce_authority'),
        ),
        migrations.AddIndex(
            model_name='webhookevent',
            index=models.Index(fields=['subject'], name='whk_event_subject'),
        ),
    ]
