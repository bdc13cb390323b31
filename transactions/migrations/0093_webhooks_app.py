"""The webhook models leave the transactions app for webhooks (webhooks/models.py); the tables stay."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('transactions', '0092_lookup_tables_app'),
        ('webhooks', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The tables stay as they are (transactions_webhook*, transactions_networkeventcursor):
            # only Django's idea of which app owns the models changes.
            state_operations=[
                migrations.DeleteModel(
                    name='NetworkEventCursor',
                ),
                migrations.RemoveField(
                    model_name='webhookevent',
                    name='subscription',
                ),
                migrations.RemoveField(
                    model_name='webhookevent',
                    name='tenant',
                ),
                migrations.RemoveField(
                    model_name='webhooksubscription',
                    name='tenant',
                ),
                migrations.DeleteModel(
                    name='WebhookAttempt',
                ),
                migrations.DeleteModel(
                    name='WebhookEvent',
                ),
                migrations.DeleteModel(
                    name='WebhookSubscription',
                ),
            ],
            database_operations=[],
        ),
    ]
