"""Back-office for webhooks (docs/webhooks.md, "Operations"; docs/admin.md): subscriptions,
events (the outbox; DEAD are the dead letters) and attempts; redeliver one event, a
selection or a subscription's dead letters (in a time range), disable and enable
subscriptions — through the services the API uses (``services.webhook_redeliver``, which
Replay Webhook Events shares; ``services.webhook_set_status``, Update Webhook's). The
actions need ``backoffice.redeliver_webhook`` (the operator's). Secrets are never a field:
credentials show redacted."""

from __future__ import annotations

import json
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html

from ledger_project.staff import ReadOnlyAdmin, staff_action

from . import services
from .models import DeliveryStatus, WebhookAttempt, WebhookEvent, WebhookStatus, WebhookSubscription


class AttemptInline(admin.TabularInline):
    model = WebhookAttempt
    extra = 0
    can_delete = False
    fields = ("number", "started_at", "latency_ms", "status_code", "error", "response_excerpt")
    readonly_fields = fields
    max_num = 0


class _RedeliverPermission:
    def has_redeliver_permission(self, request) -> bool:
        return request.user.has_perm("backoffice.redeliver_webhook")


class DeadLetterRangeForm(forms.Form):
    since = forms.DateTimeField(required=False, label="Recorded from", help_text="Optional: only dead letters recorded at or after this time (UTC).")
    until = forms.DateTimeField(required=False, label="Recorded until", help_text="Optional: only dead letters recorded at or before this time (UTC).")

    def clean(self):
        data = super().clean()
        if data.get("since") and data.get("until") and data["until"] < data["since"]:
            raise forms.ValidationError("The end of the range is before its start.")
        return data


@admin.register(WebhookSubscription)
class WebhookSubscriptionAdmin(_RedeliverPermission, admin.ModelAdmin):
    list_display = ("name", "tenant", "cluster", "source", "status", "endpoint_url", "pre_submit", "post_submit", "resigned", "network_event", "created_at")
    list_filter = ("status", "source", "cluster", "tenant")
    search_fields = ("name", "endpoint_url", "offchain_id", "instrument_address")
    list_select_related = ("tenant",)
    fields = ("offchain_id", "tenant", "cluster", "name", "endpoint_url", "source", "status", "status_reason", "instrument_offchain_id", "instrument_address",
              "pre_submit", "post_submit", "resigned", "network_event", "credentials", "timeout_seconds", "signing_secret_rotated_at", "previous_valid_until", "created_at", "updated_at")
    readonly_fields = fields
    actions = ["disable", "enable", "redeliver_dead"]

    @admin.display(description="Credentials (redacted)")
    def credentials(self, obj) -> dict:
        return services.redacted_auth(obj)

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @staff_action(description="Disable (pause delivery; pending events wait)", permissions=["redeliver"],
                  confirm_note="No new events are recorded for these webhooks and pending ones are not attempted (so they do not dead-letter) until enabled again.")
    def disable(self, request, queryset):
        done = 0
        for sub in queryset.exclude(status=WebhookStatus.REMOVED):
            services.webhook_set_status(subscription=sub, status=WebhookStatus.DISABLED, reason=f"Disabled in the admin by {request.user}.")
            done += 1
        self.message_user(request, f"{done} webhook(s) disabled.", messages.SUCCESS)

    @staff_action(description="Enable (resume delivery)", permissions=["redeliver"], confirm_note="Pending events are delivered again, oldest first per subject.")
    def enable(self, request, queryset):
        done = 0
        for sub in queryset.exclude(status=WebhookStatus.REMOVED):
            services.webhook_set_status(subscription=sub, status=WebhookStatus.ACTIVE)
            done += 1
        self.message_user(request, f"{done} webhook(s) enabled.", messages.SUCCESS)

    @staff_action(description="Redeliver dead-lettered events", permissions=["redeliver"], confirm_form=DeadLetterRangeForm,
                  confirm_note="Every DEAD event of these webhooks (in the range, if given) is due again now: same event id and body, a new retry window.")
    def redeliver_dead(self, request, queryset, options=None):
        options = options or {}
        count = services.webhook_redeliver_dead(subscription_ids=list(queryset.values_list("pk", flat=True)), since=options.get("since"), until=options.get("until"))
        self.message_user(request, f"{count} dead-lettered event(s) due again.", messages.SUCCESS)


@admin.register(WebhookEvent)
class WebhookEventAdmin(_RedeliverPermission, admin.ModelAdmin):
    """The outbox. Filter by status (DEAD: the dead letters), the webhook's status (PENDING
    of a DISABLED webhook: paused, not late) and date, select, redeliver."""

    list_display = ("created_at", "event_type", "event_id", "subscription", "status", "attempts", "next_attempt_at", "last_status_code", "tenant")
    list_filter = ("status", ("subscription__status", admin.ChoicesFieldListFilter), "event_type", "cluster", "tenant")
    date_hierarchy = "created_at"
    search_fields = ("event_id", "subject", "subscription__name")
    list_select_related = ("subscription", "tenant")
    fields = ("event_id", "event_type", "subscription", "tenant", "cluster", "subject_link", "status", "attempts", "next_attempt_at", "retry_from",
              "delivered_at", "dead_at", "last_status_code", "last_error", "replays", "occurred_at", "created_at", "updated_at", "body_pretty")
    readonly_fields = [f.name for f in WebhookEvent._meta.fields] + ["subject_link", "body_pretty"]
    inlines = [AttemptInline]
    actions = ["redeliver"]

    def get_queryset(self, request):
        return super().get_queryset(request).defer("body")  # read on the event's page only

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="subject")
    def subject_link(self, event) -> str:
        """The transaction or account the event is about, linked to its record."""
        kind, _, value = event.subject.partition(":")
        query = {"transaction": ("transactions_transaction", {"offchain_id__exact": value}),
                 "account": ("accounts_account", {"address__exact": value, "cluster__exact": event.cluster})}.get(kind)
        if query is None:
            return event.subject
        try:
            url = f"{reverse(f'admin:{query[0]}_changelist')}?{urlencode(query[1])}"
        except NoReverseMatch:
            return event.subject
        return format_html('<a href="{}">{}</a>', url, event.subject)

    @admin.display(description="body (as sent and signed)")
    def body_pretty(self, event) -> str:
        try:
            text = json.dumps(json.loads(event.body), indent=2, sort_keys=True)
        except ValueError:
            text = event.body
        return format_html('<pre style="white-space: pre-wrap">{}</pre>', text)

    @staff_action(description="Redeliver (due now, same id and body; the retry window starts again)", permissions=["redeliver"],
                  confirm_note="Each event is due again now with the same event id and body (receivers deduplicate on the webhook and the id); its attempts so far "
                               "stay recorded. An event being delivered at this moment is left alone.")
    def redeliver(self, request, queryset):
        count = services.webhook_redeliver(event_ids=list(queryset.exclude(status=DeliveryStatus.DELIVERING).values_list("pk", flat=True)))
        self.message_user(request, f"{count} event(s) due again.", messages.SUCCESS)


@admin.register(WebhookAttempt)
class WebhookAttemptAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    list_display = ("started_at", "event", "number", "status_code", "latency_ms", "error")
    list_filter = ("status_code",)
    search_fields = ("event__event_id",)
    list_select_related = ("event",)
    date_hierarchy = "started_at"
    ordering = ("-pk",)  # newest first, off the primary key (attempts are appended in time order)
    readonly_fields = ("event", "number", "started_at", "latency_ms", "status_code", "error", "response_excerpt")

    def get_queryset(self, request):
        return super().get_queryset(request).defer("event__body")
