"""Back-office for webhooks (docs/webhooks.md, "Operations"): subscriptions, events and
attempts; redeliver one event or a dead-letter range, disable and enable subscriptions —
through the services the API uses. Secrets are never a field: credentials show redacted."""

from __future__ import annotations

from django.contrib import admin, messages

from . import webhooks
from .webhook_models import DeliveryStatus, WebhookAttempt, WebhookEvent, WebhookStatus, WebhookSubscription


class AttemptInline(admin.TabularInline):
    model = WebhookAttempt
    extra = 0
    can_delete = False
    fields = ("number", "started_at", "latency_ms", "status_code", "error", "response_excerpt")
    readonly_fields = fields
    max_num = 0


@admin.register(WebhookSubscription)
class WebhookSubscriptionAdmin(admin.ModelAdmin):
    list_display = ("name", "tenant", "cluster", "source", "status", "endpoint_url", "pre_submit", "post_submit", "network_event", "created_at")
    list_filter = ("status", "source", "cluster", "tenant")
    search_fields = ("name", "endpoint_url", "offchain_id", "instrument_address")
    list_select_related = ("tenant",)
    fields = ("offchain_id", "tenant", "cluster", "name", "endpoint_url", "source", "status", "status_reason", "instrument_offchain_id", "instrument_address",
              "pre_submit", "post_submit", "network_event", "credentials", "timeout_seconds", "signing_secret_rotated_at", "previous_valid_until", "created_at", "updated_at")
    readonly_fields = fields
    actions = ["disable", "enable", "redeliver_dead"]

    @admin.display(description="Credentials (redacted)")
    def credentials(self, obj) -> dict:
        return webhooks.redacted_auth(obj)

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Disable (pause delivery; pending events wait)")
    def disable(self, request, queryset):
        for sub in queryset.exclude(status=WebhookStatus.REMOVED):
            webhooks.webhook_set_status(subscription=sub, status=WebhookStatus.DISABLED, reason=f"Disabled in the admin by {request.user}.")
        self.message_user(request, "Disabled.", messages.SUCCESS)

    @admin.action(description="Enable (resume delivery)")
    def enable(self, request, queryset):
        for sub in queryset.exclude(status=WebhookStatus.REMOVED):
            webhooks.webhook_set_status(subscription=sub, status=WebhookStatus.ACTIVE)
        self.message_user(request, "Enabled.", messages.SUCCESS)

    @admin.action(description="Redeliver every dead-lettered event")
    def redeliver_dead(self, request, queryset):
        count = webhooks.webhook_redeliver_dead(subscription_ids=list(queryset.values_list("pk", flat=True)))
        self.message_user(request, f"{count} dead-lettered event(s) due again.", messages.SUCCESS)


@admin.register(WebhookEvent)
class WebhookEventAdmin(admin.ModelAdmin):
    """The outbox. Filter by status (DEAD: the dead letters) and date, select, redeliver."""

    list_display = ("created_at", "event_type", "event_id", "subscription", "status", "attempts", "next_attempt_at", "last_status_code", "tenant")
    list_filter = ("status", "event_type", "cluster", "tenant")
    date_hierarchy = "created_at"
    search_fields = ("event_id", "subject", "subscription__name")
    list_select_related = ("subscription", "tenant")
    readonly_fields = [f.name for f in WebhookEvent._meta.fields]
    inlines = [AttemptInline]
    actions = ["redeliver"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Redeliver (due now, same id and body; the retry window starts again)")
    def redeliver(self, request, queryset):
        count = webhooks.webhook_redeliver(event_ids=list(queryset.exclude(status=DeliveryStatus.DELIVERING).values_list("pk", flat=True)))
        self.message_user(request, f"{count} event(s) due again.", messages.SUCCESS)


@admin.register(WebhookAttempt)
class WebhookAttemptAdmin(admin.ModelAdmin):
    list_display = ("started_at", "event", "number", "status_code", "latency_ms", "error")
    list_filter = ("status_code",)
    search_fields = ("event__event_id",)
    list_select_related = ("event",)
    readonly_fields = ("event", "number", "started_at", "latency_ms", "status_code", "error", "response_excerpt")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
