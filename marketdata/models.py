"""Onchain market data sources (spec: "Market data"; docs/marketdata.md).

A data source is a feed account of the price_feed program (programs/price_feed) that the
service refreshes: a job definition says how a value is obtained (tasks in the style oracle
networks use, marketdata/jobs), the worker evaluates it on a schedule or on demand and
sends an Update signed by the data source's authority. Every evaluation is recorded
(``DataSourceEvaluation``), whether it wrote a value or not.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from programs.price_feed.abi import MAX_EXPONENT, MIN_EXPONENT
from tenancy.scoping import TenantOwnedModel

DEFI_PROTOCOL = "PARTNER_ORACLE"
ORACLE_KINDS = ("QUOTES",)
DATA_KINDS = ("PRICE",)


class DataSourceStatus(models.TextChoices):
    PENDING = "PENDING"  # the feed's creation has not confirmed yet
    ACTIVE = "ACTIVE"  # refreshed on its schedule and on demand
    INACTIVE = "INACTIVE"  # kept, not refreshed (Update Oracle Data Source Definition, status)
    FAILED = "FAILED"  # the creation failed or expired: no feed exists on chain


#: States that count as the instrument's live source: one per (tenant, instrument, kind).
LIVE_STATUSES = (DataSourceStatus.PENDING, DataSourceStatus.ACTIVE)
#: What Update Oracle Data Source Definition may set.
SETTABLE_STATUSES = (DataSourceStatus.ACTIVE, DataSourceStatus.INACTIVE)


class OnchainDataSource(TenantOwnedModel):
    """A feed account of the price_feed program pricing one financial instrument.

    Invariants: ``address`` is the feed account (a keypair account owned by
    ``program_address``), its ``mint_address`` the instrument's mint and its authority
    ``authority_address`` — an account of the organization (``authority_account``) or a
    key the service generated and holds (``authority_key``); either way the service signs
    its updates unattended. ``job_hash`` is the SHA-256 of ``job_definition``, as the feed
    states it once the definition's transaction confirmed. At most one live (PENDING or
    ACTIVE) source per organization, instrument and ``data_kind``. ``last_round`` is the
    last round handed out (under this row's lock, in order, past the chain's
    ``onchain_round``); at most one transaction changes the feed at a time
    (``pending_transaction``). The ``onchain_*`` fields copy the feed after each confirmed
    change (``synced_slot``: an older read never overwrites a newer one).
    """

    address = models.CharField(max_length=44, help_text="The feed account.")
    program_address = models.CharField(max_length=44)
    instrument = models.ForeignKey("instruments.FinancialInstrument", on_delete=models.PROTECT, related_name="+")
    mint_address = models.CharField(max_length=44, help_text="The mint the feed prices (recorded on chain).")
    authority_address = models.CharField(max_length=44, help_text="Signs Update, SetJobHash, SetAuthority and Close.")
    authority_account = models.ForeignKey("accounts.Account", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    authority_key = models.ForeignKey("custody.ManagedKey", null=True, blank=True, on_delete=models.PROTECT, related_name="+",
                                      help_text="The authority's key when the service generated it (no account record).")
    oracle_kind = models.CharField(max_length=20, default="QUOTES")
    data_kind = models.CharField(max_length=20, default="PRICE")
    rating_provider = models.CharField(max_length=100, blank=True)
    job_definition = models.TextField()
    job_hash = models.CharField(max_length=64, help_text="SHA-256 (hex) of job_definition.")
    exponent = models.SmallIntegerField()
    max_staleness_seconds = models.PositiveIntegerField()
    # The refresh schedule is a django-celery-beat periodic task (operators see and change it
    # in the admin); the API's refreshIntervalSeconds reads and writes its interval.
    schedule = models.OneToOneField("django_celery_beat.PeriodicTask", null=True, blank=True, on_delete=models.SET_NULL, related_name="data_source")
    status = models.CharField(max_length=10, choices=DataSourceStatus.choices, default=DataSourceStatus.PENDING)
    was_onchain_already = models.BooleanField(default=False)
    last_round = models.PositiveBigIntegerField(default=0, help_text="The last round handed out to an update.")
    onchain_round = models.PositiveBigIntegerField(default=0)
    onchain_value = models.DecimalField(max_digits=20, decimal_places=0, default=0, help_text="The mantissa: value = onchain_value × 10^exponent.")
    onchain_observed_at = models.DateTimeField(null=True, blank=True)
    onchain_updated_at = models.DateTimeField(null=True, blank=True, help_text="The chain's clock at the last accepted update.")
    onchain_slot = models.BigIntegerField(null=True, blank=True)
    onchain_job_hash = models.CharField(max_length=64, blank=True)
    synced_slot = models.BigIntegerField(null=True, blank=True)
    last_evaluation = models.ForeignKey("marketdata.DataSourceEvaluation", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    rent_payer_address = models.CharField(max_length=44, blank=True)
    creation_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    last_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    pending_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-pk"]
        indexes = [
            models.Index(fields=["tenant", "cluster", "instrument"], name="md_source_instrument"),
            models.Index(fields=["tenant", "cluster", "onchain_updated_at"], name="md_source_updated"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "instrument", "data_kind"], condition=Q(status__in=["PENDING", "ACTIVE"]), name="md_one_live_source",
                violation_error_message="The organization already has an active data source of this kind for this instrument.",
            ),
            models.UniqueConstraint(fields=["tenant", "cluster", "address"], name="md_source_address_once",
                                    violation_error_message="The organization already has a data source for this feed account."),
            models.CheckConstraint(condition=Q(exponent__gte=MIN_EXPONENT) & Q(exponent__lte=MAX_EXPONENT), name="md_exponent_range",
                                   violation_error_message="A feed's exponent is between -18 and 18."),
        ]
        permissions = [("refresh_onchaindatasource", "Can refresh onchain data sources now (evaluate and send an update)")]

    def __str__(self) -> str:
        return f"data source {self.address} [{self.status}]"


class EvaluationTrigger(models.TextChoices):
    SCHEDULE = "SCHEDULE"  # the source's periodic task (beat)
    API = "API"  # Refresh Oracle Data Source
    ADMIN = "ADMIN"  # the back office's "refresh now"


class EvaluationStatus(models.TextChoices):
    REQUESTED = "REQUESTED"  # asked for (API, admin): queued for the worker
    EVALUATING = "EVALUATING"  # a worker claimed it (until ``claimed_until``) and is evaluating
    FAILED = "FAILED"  # the job did not produce a value: nothing was sent
    REJECTED = "REJECTED"  # a value, but the update was refused before sending (simulation: the program's error)
    SUBMITTED = "SUBMITTED"  # the update transaction is recorded and on its way
    CONFIRMED = "CONFIRMED"  # the feed holds the value
    NOT_LANDED = "NOT_LANDED"  # the update transaction failed or expired: the feed kept its value


#: Evaluations not done yet: at most one per data source (one refresh of a feed at a time).
IN_PROGRESS = (EvaluationStatus.REQUESTED, EvaluationStatus.EVALUATING)


def joined_errors(errors: list[str]) -> str:
    """A failed evaluation's ``error``: its record's errors in one line (render.evaluation
    does not list it again beside them)."""
    return "; ".join(errors)[:2000]


class DataSourceEvaluation(TenantOwnedModel):
    """One evaluation of a data source's job: what each source answered, the result or the
    errors (``record``, marketdata.jobs Evaluation.to_record()), and what became of it.
    A FAILED evaluation wrote nothing; ``mantissa`` (× 10^the source's exponent) is what
    the update carried, ``round`` its round, ``transaction`` the update.

    Invariants: at most one REQUESTED or EVALUATING evaluation per data source (a refresh
    asked for while one is under way is refused; a beat tick skips); a worker evaluates
    only after claiming the row (a conditional UPDATE to EVALUATING with ``claimed_until``,
    so a task delivered twice evaluates once, and a claim whose worker died lapses).
    """

    data_source = models.ForeignKey("marketdata.OnchainDataSource", on_delete=models.CASCADE, related_name="evaluations")
    trigger = models.CharField(max_length=10, choices=EvaluationTrigger.choices)
    status = models.CharField(max_length=12, choices=EvaluationStatus.choices)
    job_hash = models.CharField(max_length=64)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    # The value written is mantissa × 10^exponent (the source's): exact, whatever the
    # database (SQLite keeps wide decimals as doubles); the job's own result is in ``record``.
    mantissa = models.DecimalField(max_digits=20, decimal_places=0, null=True, blank=True)
    round = models.PositiveBigIntegerField(null=True, blank=True)
    observed_at = models.DateTimeField(null=True, blank=True)
    record = models.JSONField(default=dict, help_text="Inputs, each source's answer, the result and the errors.")
    error = models.TextField(blank=True)
    transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    requested_by = models.CharField(max_length=150, blank=True, help_text="The staff user of a back-office refresh.")

    class Meta:
        ordering = ["-pk"]
        indexes = [models.Index(fields=["data_source", "-created_at"], name="md_evaluation_source")]
        constraints = [
            models.UniqueConstraint(fields=["data_source"], condition=Q(status__in=["REQUESTED", "EVALUATING"]), name="md_one_refresh_at_a_time",
                                    violation_error_message="A refresh of this data source is queued or running."),
        ]

    def __str__(self) -> str:
        return f"evaluation {self.offchain_id} [{self.status}]"
