"""ManagedKey, moved here from the accounts app: the table (accounts_managedkey) already exists."""

from django.db import migrations, models

from ledger_project.migration_ops import move_content_types


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('accounts', '0009_inactivate_platform_addresses'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The table and its constraints stay as they are (accounts_managedkey): only Django's
            # idea of which app owns the model changes.
            state_operations=[
                migrations.CreateModel(
                    name='ManagedKey',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('public_key', models.CharField(max_length=44, unique=True)),
                        ('location', models.CharField(choices=[('DATABASE', 'Database'), ('SECRETS', 'Secrets')], default='DATABASE', max_length=10)),
                        ('master_key_id', models.CharField(db_index=True, max_length=16)),
                        ('wrap_nonce', models.BinaryField(max_length=12)),
                        ('wrapped_dek', models.BinaryField(max_length=48)),
                        ('key_nonce', models.BinaryField(blank=True, max_length=12)),
                        ('ciphertext', models.BinaryField(blank=True, max_length=80)),
                        ('secret_ref', models.CharField(blank=True, max_length=100)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('rotated_at', models.DateTimeField(blank=True, null=True)),
                    ],
                    options={
                        'db_table': 'accounts_managedkey',
                        'constraints': [models.CheckConstraint(condition=models.Q(models.Q(('location', 'DATABASE'), ('secret_ref', '')), models.Q(('location', 'SECRETS'), models.Q(('secret_ref', ''), _negated=True)), _connector='OR'), name='managed_key_location_matches_storage', violation_error_message='DATABASE keys keep their ciphertext in the row; SECRETS keys name their file.')],
                    },
                ),
            ],
            database_operations=[],
        ),
        move_content_types("accounts", "custody", ("managedkey",)),
    ]
