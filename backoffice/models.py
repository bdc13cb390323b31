"""Back office records: the staff audit, sign-in failures (lockout), heartbeats, and the
permissions of staff actions (docs/admin.md)."""

from __future__ import annotations

from axes.models import AccessAttempt
from django.db import models
from django.utils import timezone


class AuditImmutable(Exception):
    """An audit entry was about to be changed or deleted: the audit is append-only."""


class AuditQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AuditImmutable("Staff audit entries cannot be changed.")

    def delete(self):
        raise AuditImmutable("Staff audit entries cannot be deleted.")

    def bulk_update(self, objs, fields, batch_size=None):
        raise AuditImmutable("Staff audit entries cannot be changed.")


class AuditKind(models.TextChoices):
    ADD = "ADD"
    CHANGE = "CHANGE"
    DELETE = "DELETE"
    ACTION = "ACTION"  # an admin action (approve, revoke, pause...) or a back-office view's button
    LOGIN = "LOGIN"
    LOGIN_FAILED = "LOGIN_FAILED"
    LOCKED_OUT = "LOCKED_OUT"
    LOGOUT = "LOGOUT"


class StaffAuditEntry(models.Model):
    """One staff action in the back office: who (user id and name at the time, address),
    what (kind, action, model, objects), when, and the objects' fields before and after.

    Append-only: the model refuses to save an existing row or delete one (and its queryset
    refuses update/delete), the admin grants nobody change or delete — not even superusers
    — and on PostgreSQL a trigger refuses UPDATE and DELETE (migration 0050_admin_initial).
    The actor is not a foreign key: deleting a user never touches the audit."""

    at = models.DateTimeField(default=timezone.now, db_index=True)
    actor_id = models.BigIntegerField(null=True, blank=True, help_text="The staff user's id (the user may since be deleted).")
    actor = models.CharField(max_length=150, blank=True, help_text="The username at the time.")
    ip = models.GenericIPAddressField(null=True, blank=True)
    kind = models.CharField(max_length=16, choices=AuditKind.choices)
    action = models.CharField(max_length=100, blank=True, help_text="The admin action or view, e.g. approve_held.")
    description = models.CharField(max_length=300, blank=True)
    model = models.CharField(max_length=100, blank=True, help_text="app_label.model of the objects.")
    object_ids = models.JSONField(default=list, blank=True)
    object_count = models.PositiveIntegerField(default=0)
    object_repr = models.CharField(max_length=300, blank=True)
    before = models.JSONField(null=True, blank=True, help_text="Changed fields before, by object id (the whole object for a deletion).")
    after = models.JSONField(null=True, blank=True, help_text="Changed fields after, by object id (the whole object for an addition).")
    outcome = models.JSONField(default=list, blank=True, help_text="What the staff user was told (messages), or the error.")
    request_id = models.CharField(max_length=64, blank=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-pk"]
        verbose_name = "staff audit entry"
        verbose_name_plural = "staff audit"
        indexes = [models.Index(fields=["model", "-at"], name="audit_model_at"), models.Index(fields=["actor", "-at"], name="audit_actor_at")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor} {self.kind} {self.action} {self.model}".strip()

    def save(self, *args, **kwargs):
        # Append-only is the model's invariant (docs/style.md, "Models state invariants"), so it is stated here.
        if not self._state.adding:
            raise AuditImmutable("Staff audit entries cannot be changed.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AuditImmutable("Staff audit entries cannot be deleted.")


class LoginFailure(AccessAttempt):
    """Failed staff sign-ins of one username (lower-cased) from one address: django-axes'
    AccessAttempt, shown in the back office under this name (backoffice/lockout.py). At
    LEDGER_ADMIN_LOCKOUT_FAILURES ``failures_since_start`` the pair is locked until
    LEDGER_ADMIN_LOCKOUT_SECONDS after ``attempt_time`` (the last failure); a successful
    sign-in deletes the row; deleting it in the admin unlocks."""

    class Meta:
        proxy = True
        verbose_name = "login failure"
        ordering = ["-attempt_time"]

    def __str__(self) -> str:
        return f"{self.username} from {self.ip_address}: {self.failures_since_start}"


class Heartbeat(models.Model):
    """The last sign of life of a process kind: ``beat`` (stamped when beat publishes the
    heartbeat task) and ``worker`` (stamped by the worker that runs it). The dashboard
    calls one stale past LEDGER_ADMIN_HEARTBEAT_STALE_SECONDS."""

    name = models.CharField(max_length=40, unique=True)
    at = models.DateTimeField()
    detail = models.CharField(max_length=200, blank=True, help_text="Which process: host and pid.")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} at {self.at:%H:%M:%S}"


class StaffAction(models.Model):
    """No table: carries the permissions of staff actions that are not add/change/delete
    of a model, so the roles (backoffice/roles.py) grant them like any permission."""

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [
            ("inactivate_account", "Can inactivate accounts (closing them on the network)"),
            ("pause_instrument", "Can pause and unpause financial instruments"),
            ("sync_instrument", "Can re-read financial instruments from the network"),
            ("freeze_position", "Can freeze and unfreeze positions"),
            ("revoke_api_key", "Can revoke API keys"),
            ("rotate_master_key", "Can rotate the custody master key"),
            ("unlock_login", "Can unlock staff sign-ins locked after failures"),
            ("submit_transaction", "Can submit held transactions and resubmit or reconcile stuck ones"),
            ("cancel_transaction", "Can cancel transactions not yet submitted"),
            ("redeliver_webhook", "Can redeliver webhook events and disable or enable webhooks"),
        ]


class BalanceAccount(models.TextChoices):
    FEE_PAYER = "fee_payer"  # the platform fee payer of the cluster (PlatformFeePayer)
    NONCE_POOL = "nonce_pool"  # the lamports the platform's durable nonce pool holds


class BalanceSample(models.Model):
    """A platform balance as the worker read it (``ledger.backoffice.sample_balances``,
    every LEDGER_BALANCE_SAMPLE_SECONDS): /metrics reports the latest, the dashboard plots
    the last day, and neither calls a cluster. Kept LEDGER_BALANCE_SAMPLE_RETENTION_HOURS."""

    cluster = models.CharField(max_length=40)
    account = models.CharField(max_length=12, choices=BalanceAccount.choices)
    lamports = models.DecimalField(max_digits=20, decimal_places=0)
    at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["cluster", "account", "-at"], name="balance_sample_latest"), models.Index(fields=["at"], name="balance_sample_at")]

    def __str__(self) -> str:
        return f"{self.cluster} {self.account} {self.lamports} at {self.at:%H:%M:%S}"
