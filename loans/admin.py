"""Back-office for loans and loan strategies: listed, searched and filtered, every field
read-only — the chain's truth as the last confirmed change (or the keeper) copied it;
loans and strategies change only through the API (transactions their borrower or lender
signs) and the keeper (docs/loans.md, "Back office")."""

from django.contrib import admin

from .models import Loan, LoanBorrowedItem, LoanPledgedItem, LoanStrategy, LoanStrategyMint


class _ReadOnlyInline(admin.TabularInline):
    extra = 0
    max_num = 0
    can_delete = False

    def get_readonly_fields(self, request, obj=None):
        return self.fields


class PledgedInline(_ReadOnlyInline):
    model = LoanPledgedItem
    fields = ("index", "instrument", "mint_address", "token_account_address", "amount", "pledged_amount", "feed_address", "max_age_seconds")


class BorrowedInline(_ReadOnlyInline):
    model = LoanBorrowedItem
    fields = ("index", "instrument", "mint_address", "principal", "principal_repaid", "interest_accrued", "interest_repaid", "position", "feed_address")


class StrategyMintInline(_ReadOnlyInline):
    model = LoanStrategyMint
    fields = ("role", "index", "instrument", "mint_address", "feed_address", "max_age_seconds", "token_account_address", "position")


class _ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False  # created through the API (a network transaction)

    def has_delete_permission(self, request, obj=None):
        return False

    def get_readonly_fields(self, request, obj=None):
        return self.fields


@admin.register(Loan)
class LoanAdmin(_ReadOnly):
    list_display = ("escrow_address", "status", "borrower_address", "lender_address", "due_time", "flagged_at", "tenant", "cluster", "created_at")
    list_filter = ("status", "cluster", "tenant")
    search_fields = ("escrow_address", "offchain_id", "borrower_address", "lender_address", "strategy_address")
    list_select_related = ("tenant",)
    fields = (
        "offchain_id", "tenant", "cluster", "status", "escrow_address", "escrow_account", "program_address", "nonce", "borrower", "borrower_address",
        "strategy_address", "strategy", "lender_address", "lender", "apy_bps", "ltv_bps", "liquidation_bps", "duration_code", "duration_unit", "start_time",
        "due_time", "last_interest_update_time", "flagged_at", "flag_reason", "checked_at", "rent_payer_address", "synced_slot", "creation_transaction",
        "last_transaction", "pending_transaction", "closed_at", "created_at", "updated_at",
    )
    inlines = [PledgedInline, BorrowedInline]


@admin.register(LoanStrategy)
class LoanStrategyAdmin(_ReadOnly):
    list_display = ("address", "status", "lender_address", "apy_bps", "ltv_bps", "liquidation_bps", "liquidation_mode", "tenant", "cluster", "created_at")
    list_filter = ("status", "liquidation_mode", "cluster", "tenant")
    search_fields = ("address", "offchain_id", "lender_address")
    list_select_related = ("tenant",)
    fields = (
        "offchain_id", "tenant", "cluster", "status", "address", "account", "program_address", "strategy_id", "lender", "lender_address",
        "oracle_program_address", "apy_bps", "ltv_bps", "liquidation_bps", "duration_code", "duration_unit", "liquidation_mode", "rent_payer_address",
        "synced_slot", "creation_transaction", "last_transaction", "pending_transaction", "created_at", "updated_at",
    )
    inlines = [StrategyMintInline]
