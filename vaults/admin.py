"""Back-office for loan remittance vaults: listed, searched and filtered, every field
read-only (the chain's, or changed through the API: create, whitelist, repayment and close
are transactions signed by the vault's admin, which the back office does not hold)."""

from django.contrib import admin

from positions.values import display

from .models import Vault, VaultDestination


class DestinationInline(admin.TabularInline):
    model = VaultDestination
    extra = 0
    can_delete = False
    fields = ("index", "address", "position")
    readonly_fields = fields
    max_num = 0


@admin.register(Vault)
class VaultAdmin(admin.ModelAdmin):
    list_display = ("token_address", "pair", "status", "balance", "admin_address", "last_sequence", "tenant", "cluster", "created_at")
    list_filter = ("status", "cluster", "tenant")
    search_fields = ("token_address", "offchain_id", "authority_address", "state_address", "admin_address", "loan_instrument__al_id", "payment_instrument__al_id")
    list_select_related = ("tenant", "loan_instrument", "payment_instrument", "position__account")
    fields = (
        "offchain_id", "tenant", "cluster", "status", "loan_instrument", "payment_instrument", "position", "authority_account", "program_address",
        "authority_address", "state_address", "token_address", "token_program", "admin_address", "admin", "capacity", "last_sequence",
        "last_sequence_onchain", "rent_payer_address", "rent_payer", "synced_slot", "creation_transaction", "last_transaction", "pending_transaction",
        "closed_at", "created_at", "updated_at",
    )
    readonly_fields = fields
    inlines = [DestinationInline]

    def has_add_permission(self, request):
        return False  # vaults are created through the API (a network transaction)

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="loan / payment")
    def pair(self, vault):
        return f"{vault.loan_instrument.al_id} / {vault.payment_instrument.al_id}"

    @admin.display(description="balance (offchain)")
    def balance(self, vault):
        return display(vault.position.account.token_balance or 0, vault.payment_instrument)
