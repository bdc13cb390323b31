"""Back-office for market data (docs/marketdata.md, "Back office"): data sources and every
evaluation, read-only — the feed's copy is chain truth, the rest changes through the API.
"Refresh now" goes through the same service as ``PATCH
/api/v1/market-data/onchain-data-source/refresh`` (``refresh.data_source_refresh``: the job
evaluated, the update signed by the feed's authority), recorded with the staff user. A
source's schedule is its periodic task (linked), which operators change under Periodic
tasks.

Records link both ways (docs/admin.md): a source's instrument, authority and
transactions are links, its page lists its recent evaluations and links to all of them and
to the transactions its authority signs (its updates); an evaluation links to its source and
its update transaction, and an instrument's or a transaction's page links back ("Related
records"). "Open on the chain" reads the feed account, decoded by
programs/price_feed/client.decode_feed next to the raw answer."""

from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from backoffice.chainview import ChainRecord, chain_record_register
from backoffice.records import related_link_register
from programs.price_feed.client import decode_feed
from ledger_project.api.errors import LedgerError
from chain.errors import ChainError
from ledger_project.staff import staff_action
from tenancy.context import OperationContext

from .models import DataSourceEvaluation, EvaluationTrigger, OnchainDataSource
from .onchain import price
from .refresh import data_source_refresh
from .schedule import interval_of

chain_record_register("marketdata.onchaindatasource", ChainRecord("account", lambda s: s.address, decode=decode_feed))
related_link_register("marketdata.onchaindatasource", lambda source: [
    ("transactions.transaction", "transactions (signed by the feed's authority: its updates)", {"signer": source.authority_address}),
] if source.authority_address else [])

RECENT = 10


@admin.register(OnchainDataSource)
class OnchainDataSourceAdmin(admin.ModelAdmin):
    list_display = ("address", "instrument_label", "data_kind", "status", "value", "onchain_round", "onchain_updated_at", "evaluation_status", "refresh_every",
                    "tenant", "cluster", "created_at")
    list_filter = ("status", "data_kind", "was_onchain_already", "cluster", "tenant")
    date_hierarchy = "created_at"
    search_fields = ("address", "offchain_id", "authority_address", "mint_address", "instrument__al_id")
    list_select_related = ("tenant", "instrument", "last_evaluation", "schedule__interval")
    fieldsets = (
        (None, {"fields": ("offchain_id", "tenant", "cluster", "status", "instrument", "data_kind", "rating_provider", "oracle_kind", "was_onchain_already")}),
        ("Job", {"fields": ("job_definition", "job_hash", "exponent", "max_staleness_seconds")}),
        ("Refresh", {"fields": ("schedule_link", "last_round", "evaluations_recent")}),
        ("Feed (as of the last confirmed change)", {"fields": (
            "address", "program_address", "mint_address", "authority_address", "authority_account", "authority_key", "value", "onchain_round",
            "onchain_value", "onchain_observed_at", "onchain_updated_at", "onchain_slot", "onchain_job_hash", "synced_slot",
        )}),
        ("Transactions", {"fields": ("rent_payer_address", "creation_transaction", "last_transaction", "pending_transaction", "created_at", "updated_at")}),
    )
    readonly_fields = tuple(f for _, section in fieldsets for f in section["fields"])
    actions = ["refresh_now"]

    def has_add_permission(self, request):
        return False  # data sources are created through the API (a network transaction)

    def has_delete_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False  # every field is the chain's or the API's

    def has_refresh_permission(self, request) -> bool:
        return request.user.has_perm("marketdata.refresh_onchaindatasource")

    @admin.display(description="instrument")
    def instrument_label(self, source):
        return source.instrument.al_id or source.instrument.address

    @admin.display(description="value (feed)")
    def value(self, source):
        return price(source.onchain_value, source.exponent) if source.onchain_round else "—"

    @admin.display(description="last evaluation")
    def evaluation_status(self, source):
        return source.last_evaluation.status if source.last_evaluation is not None else "—"

    @admin.display(description="refresh every (s)")
    def refresh_every(self, source):
        return interval_of(source) or "on demand"

    @admin.display(description="schedule")
    def schedule_link(self, source):
        if source.schedule is None:
            return "none (refreshed on demand)"
        url = reverse("admin:django_celery_beat_periodictask_change", args=[source.schedule.pk])
        state = "enabled" if source.schedule.enabled else "disabled"
        return format_html('<a href="{}">{}</a> ({}, {})', url, source.schedule.name, source.schedule.schedule, state)

    @admin.display(description=f"recent evaluations (last {RECENT})")
    def evaluations_recent(self, source):
        rows = DataSourceEvaluation.unscoped.filter(data_source=source).order_by("-pk")[:RECENT]
        listing = reverse("admin:marketdata_datasourceevaluation_changelist") + f"?data_source__id__exact={source.pk}"
        body = format_html_join("", '<tr><td><a href="{}">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>', (
            (reverse("admin:marketdata_datasourceevaluation_change", args=[e.pk]), e.created_at.isoformat(timespec="seconds"), e.trigger, e.status,
             price(e.mantissa, source.exponent) if e.mantissa is not None else "—", e.round or "—", e.error[:120]) for e in rows))
        return format_html('<table><tr><th>requested</th><th>trigger</th><th>status</th><th>value</th><th>round</th><th>error</th></tr>{}</table>'
                           '<a href="{}">every evaluation</a>', body, listing)

    @staff_action(description="Refresh now: evaluate the job and send an update", permissions=["refresh"],
                  confirm_note="An evaluation of each source's job is queued for the worker: with a value, an Update of its feed signed by the feed's "
                               "authority is sent; a failed evaluation is recorded and writes nothing. Follow it under Data source evaluations.")
    def refresh_now(self, request, queryset):
        queued = 0
        for source in queryset.select_related("tenant", "pending_transaction"):
            try:
                data_source_refresh(OperationContext.system(tenant=source.tenant, cluster=source.cluster), source=source, trigger=EvaluationTrigger.ADMIN, requested_by=request.user.get_username())
                queued += 1
            except (LedgerError, ChainError) as exc:
                self.message_user(request, f"{source.address}: {exc.message}", messages.WARNING)
        if queued:
            self.message_user(request, f"{queued} data source(s): evaluation queued (its record shows the outcome).", messages.SUCCESS)


@admin.register(DataSourceEvaluation)
class DataSourceEvaluationAdmin(admin.ModelAdmin):
    list_display = ("offchain_id", "data_source", "status", "trigger", "created_at", "finished_at", "value", "round", "transaction", "requested_by", "tenant")
    list_filter = ("status", "trigger", ("transaction", admin.EmptyFieldListFilter), "cluster", "tenant")
    search_fields = ("offchain_id", "data_source__address", "data_source__offchain_id", "transaction__onchain_id", "requested_by", "error")
    date_hierarchy = "created_at"
    list_select_related = ("tenant", "data_source", "transaction")
    fields = ("offchain_id", "tenant", "cluster", "data_source", "trigger", "status", "job_hash", "created_at", "started_at", "finished_at", "claimed_until",
              "value", "mantissa", "round",
              "observed_at", "sources_table", "record", "error", "transaction", "requested_by", "updated_at")
    readonly_fields = fields

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="value written")
    def value(self, evaluation):
        return price(evaluation.mantissa, evaluation.data_source.exponent) if evaluation.mantissa is not None else "—"

    @admin.display(description="sources")
    def sources_table(self, evaluation):
        sources = (evaluation.record or {}).get("sources") or []
        body = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", (
            (s.get("path"), s.get("url"), s.get("statusCode") if s.get("statusCode") is not None else "—", s.get("value") or "—", s.get("error") or "",
             s.get("elapsedMs") if s.get("elapsedMs") is not None else "—") for s in sources))
        return format_html("<table><tr><th>task</th><th>url</th><th>status</th><th>value</th><th>error</th><th>ms</th></tr>{}</table>", body)
