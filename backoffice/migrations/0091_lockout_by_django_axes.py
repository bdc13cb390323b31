"""The sign-in lockout moves to django-axes (backoffice/lockout.py): the counters of
backoffice_loginfailure move into axes' AccessAttempt (failures and the last failure's
time, which is what axes counts from), the table goes, and LoginFailure stays as a view of
AccessAttempt under the same name — so its content type, the security officer's
permissions on it and the admin's address are unchanged. Reversible: going back copies
each username-and-address pair's count into the recreated table, locked if at the limit."""

from datetime import timedelta

from django.conf import settings
from django.db import migrations
from django.db.models import Max, Sum

LOGIN_PATH = "/admin/login/"


def failures_to_axes(apps, schema_editor):
    old = apps.get_model("backoffice", "LoginFailure")
    attempt = apps.get_model("axes", "AccessAttempt")
    for row in old.objects.iterator():
        # Idempotent (a database migrated back and forward again): one row per pair, the larger count.
        copy, _ = attempt.objects.get_or_create(username=row.username, ip_address=row.ip, user_agent="",
                                                defaults={"http_accept": "", "path_info": LOGIN_PATH, "get_data": "", "post_data": "", "failures_since_start": 0})
        # attempt_time is auto_now_add: an update sets it to the last failure's time.
        attempt.objects.filter(pk=copy.pk).update(failures_since_start=max(copy.failures_since_start, row.failures), attempt_time=row.last_failure_at)


def failures_from_axes(apps, schema_editor):
    old = apps.get_model("backoffice", "LoginFailure")
    attempt = apps.get_model("axes", "AccessAttempt")
    pairs = attempt.objects.exclude(username=None).exclude(ip_address=None).values("username", "ip_address").annotate(failures=Sum("failures_since_start"), last=Max("attempt_time"))
    cool_off = timedelta(seconds=settings.LEDGER_ADMIN_LOCKOUT_SECONDS)
    # The old table locks by locked_until alone: a pair at the limit keeps its lock.
    old.objects.bulk_create(old(username=pair["username"][:150], ip=pair["ip_address"], failures=pair["failures"], first_failure_at=pair["last"], last_failure_at=pair["last"],
                                locked_until=pair["last"] + cool_off if pair["failures"] >= settings.LEDGER_ADMIN_LOCKOUT_FAILURES else None)
                            for pair in pairs)


class Migration(migrations.Migration):

    dependencies = [
        ('axes', '0010_accessattemptexpiration'),
        ('backoffice', '0090_balance_samples'),
    ]

    operations = [
        migrations.RunPython(failures_to_axes, failures_from_axes),
        migrations.DeleteModel(
            name='LoginFailure',
        ),
        migrations.CreateModel(
            name='LoginFailure',
            fields=[
            ],
            options={
                'verbose_name': 'login failure',
                'ordering': ['-attempt_time'],
                'proxy': True,
                'indexes': [],
                'constraints': [],
            },
            bases=('axes.accessattempt',),
        ),
    ]
