"""Back-office for threshold keys (accounts/mpc): public facts only — group keys, players,
generations, sessions — never a sealed share or nonce. The refresh action calls the same
service as Refresh DKG Shares."""

from django.contrib import admin, messages

from ledger_project.api.errors import LedgerError
from chain.errors import ChainError
from tenancy.context import OperationContext

from .mpc import keygen
from .mpc.models import DkgSession, DkgStatus, SigningSession, ThresholdKey, ThresholdShare


class ShareInline(admin.TabularInline):
    model = ThresholdShare
    extra = 0
    can_delete = False
    max_num = 0
    fields = ("player_code", "identifier", "generation", "backend", "verifying_share", "key_id")
    readonly_fields = fields

    @admin.display(description="key-encryption key")
    def key_id(self, share):
        return (share.sealed or {}).get("kid", "") if share.backend else "(held by the player)"


@admin.register(ThresholdKey)
class ThresholdKeyAdmin(admin.ModelAdmin):
    list_display = ("account", "threshold", "generation", "key_usage", "is_default", "created_at", "refreshed_at")
    list_filter = ("threshold", "is_default")
    search_fields = ("account__address", "group_public_key", "key_usage")
    list_select_related = ("account",)
    fields = ("account", "group_public_key", "threshold", "generation", "key_usage", "is_default", "created_at", "refreshed_at")
    readonly_fields = fields
    inlines = [ShareInline]
    actions = ["refresh_shares"]

    def has_add_permission(self, request):
        return False  # keys are made by key generation (Create Account with dkgKeys)

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Refresh the shares (every player; the address does not change)")
    def refresh_shares(self, request, queryset):
        for key in queryset.select_related("account", "account__tenant"):
            try:
                session = keygen.refresh_start(OperationContext.system(tenant=key.account.tenant, cluster=key.account.cluster), account=key.account)
            except (LedgerError, ChainError) as exc:
                self.message_user(request, f"{key.account.address}: {exc.message}", messages.ERROR)
                continue
            if session.status == DkgStatus.COMPLETED:
                self.message_user(request, f"{key.account.address}: shares refreshed (generation {ThresholdKey.objects.get(pk=key.pk).generation}).")
            else:
                self.message_user(request, f"{key.account.address}: refresh session {session.session_id} opened; its external players take part with "
                                           "`python -m threshold.player api-dkg`.", messages.WARNING)


class _ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(DkgSession)
class DkgSessionAdmin(_ReadOnly):
    list_display = ("offchain_id", "kind", "status", "threshold", "tenant", "cluster", "culprit_code", "created_at", "completed_at")
    list_filter = ("kind", "status", "cluster")
    search_fields = ("offchain_id", "culprit_code")
    list_select_related = ("tenant",)
    exclude = ("account_data",)


@admin.register(SigningSession)
class SigningSessionAdmin(_ReadOnly):
    list_display = ("offchain_id", "status", "account", "transaction", "generation", "tenant", "created_at", "completed_at")
    list_filter = ("status", "cluster")
    search_fields = ("offchain_id", "account__address")
    list_select_related = ("tenant", "account", "transaction")
    exclude = ("package",)
