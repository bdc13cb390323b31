"""Back-office for accounts: searchable, chain fields read-only, no key material shown."""

from django.contrib import admin, messages

from .models import Account, AccountStatus, BalanceSnapshot, ManagedKey, PrivateKeyDisclosure


class BalanceInline(admin.TabularInline):
    model = BalanceSnapshot
    extra = 0
    can_delete = False
    fields = ("at", "lamports", "transaction")
    readonly_fields = fields
    ordering = ("-at",)
    max_num = 0


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    list_display = ("address", "type", "managed", "status", "tenant", "cluster", "code", "al_id", "lamports_balance", "created_at")
    list_filter = ("type", "managed", "status", "cluster", "tenant", "shared_across_tenants")
    search_fields = ("address", "al_id", "code", "account_number", "name", "offchain_id")
    list_select_related = ("tenant",)
    readonly_fields = (
        "offchain_id", "tenant", "cluster", "address", "managed", "private_key_location", "was_onchain_already", "data_length",
        "lamports_balance", "token_balance", "token_decimals", "creation_transaction", "creation_transaction_at",
        "last_transaction", "last_transaction_at", "status", "created_at", "updated_at",
    )
    exclude = ("managed_key",)
    inlines = [BalanceInline]
    actions = ["inactivate_offchain"]

    def has_add_permission(self, request):
        return False  # accounts are created through the API (keys, chain transactions)

    @admin.action(description="Mark inactive in the service (no network transaction)")
    def inactivate_offchain(self, request, queryset):
        count = queryset.exclude(status=AccountStatus.INACTIVE).update(status=AccountStatus.INACTIVE)
        self.message_user(request, f"{count} account(s) marked inactive. Lamports on chain were not moved.", messages.WARNING)


@admin.register(PrivateKeyDisclosure)
class PrivateKeyDisclosureAdmin(admin.ModelAdmin):
    list_display = ("at", "account", "api_key", "acting_tenant", "request_id")
    list_filter = ("acting_tenant",)
    search_fields = ("account__address", "api_key__key_id", "request_id")
    list_select_related = ("account", "api_key", "acting_tenant")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(ManagedKey)
class ManagedKeyAdmin(admin.ModelAdmin):
    """Public facts only: the encrypted material is never a field here."""

    list_display = ("public_key", "location", "master_key_id", "created_at", "rotated_at")
    list_filter = ("location", "master_key_id")
    search_fields = ("public_key",)
    fields = ("public_key", "location", "master_key_id", "created_at", "rotated_at")
    readonly_fields = fields

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

from . import admin_threshold  # noqa: E402,F401  (threshold keys' back-office)
