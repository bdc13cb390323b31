# The pump in shards (docs/transactions.md, "Shards"): a shard bucket on every transaction
# (existing rows: bucket 0, pumped by shard 0 whatever the shard count), leases keyed by
# (cluster, shard) (the existing rows become shard 0 of their cluster: the table keeps its
# name and rows), and the members that share a cluster's shards.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tenancy', '0002_a_idempotency_response_bytes'),
        ('transactions', '0081_transaction_withdrawn_at'),
    ]

    operations = [
        migrations.CreateModel(
            name='PumpMember',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('cluster', models.CharField(max_length=40)),
                ('holder', models.CharField(max_length=200)),
                ('seen_until', models.DateTimeField()),
            ],
        ),
        migrations.RemoveIndex(
            model_name='transaction',
            name='txn_status_cluster',
        ),
        migrations.AddField(
            model_name='pumplease',
            name='shard',
            field=models.PositiveSmallIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='transaction',
            name='shard_key',
            field=models.PositiveSmallIntegerField(default=0, help_text="Pump shard bucket: a stable hash of the transaction's ordering key."),
        ),
        migrations.AlterField(
            model_name='pumplease',
            name='cluster',
            field=models.CharField(max_length=40),
        ),
        migrations.AddIndex(
            model_name='transaction',
            index=models.Index(fields=['status', 'cluster', 'shard_key'], name='txn_status_cluster_shard'),
        ),
        migrations.AddConstraint(
            model_name='pumplease',
            constraint=models.UniqueConstraint(fields=('cluster', 'shard'), name='pump_lease_cluster_shard'),
        ),
        migrations.AddConstraint(
            model_name='pumpmember',
            constraint=models.UniqueConstraint(fields=('cluster', 'holder'), name='pump_member_cluster_holder'),
        ),
    ]
