from django.db import migrations, models


class Migration(migrations.Migration):
    """Replays send the stored bytes: a JSON column (jsonb) reorders the body's keys."""

    dependencies = [("tenancy", "0001_initial")]

    operations = [
        migrations.RemoveField(model_name="idempotencyrecord", name="response_body"),
        migrations.AddField(model_name="idempotencyrecord", name="response_bytes", field=models.BinaryField(null=True)),
    ]
