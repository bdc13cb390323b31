"""Back-office for loans and loan strategies (docs/loans.md, "Back office"; docs/admin.md):
listed, searched by escrow, borrower, lender or strategy address and offchain id, filtered
by status and strategy, every field read-only — the chain's truth as the last confirmed
change (or the keeper) copied it; loans and strategies change only through the API
(transactions their borrower or lender signs) and the keeper.

Detail pages link both ways: a loan's foreign keys (escrow, borrower, lender, strategy,
its transactions, each item's instrument and position) are links, and the records they
name link back ("Related records": an account's loans, a strategy's loans, a position's
loans, a transaction's loans; backoffice/records.py). "Open on the chain" reads the escrow
or strategy account, decoded by programs/lending/client next to the raw answer."""

from django.contrib import admin
from django.db.models import Q

from backoffice.chainview import ChainRecord, chain_record_register
from backoffice.records import related_link_register
from programs.lending.client import decode_loan, decode_strategy

from .models import Loan, LoanBorrowedItem, LoanPledgedItem, LoanStrategy, LoanStrategyMint

chain_record_register("loans.loan", ChainRecord("account", lambda loan: loan.escrow_address, decode=decode_loan))
chain_record_register("loans.loanstrategy", ChainRecord("account", lambda strategy: strategy.address, decode=decode_strategy))


class _ReadOnlyInline(admin.TabularInline):
    extra = 0
    max_num = 0
    can_delete = False

    def get_readonly_fields(self, request, obj=None):
        return self.fields


class PledgedInline(_ReadOnlyInline):
    model = LoanPledgedItem
    fields = ("index", "instrument", "mint_address", "token_account_address", "position", "amount", "pledged_amount", "feed_address", "max_age_seconds")

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("instrument", "position")


class BorrowedInline(_ReadOnlyInline):
    model = LoanBorrowedItem
    fields = ("index", "instrument", "mint_address", "principal", "principal_repaid", "interest_accrued", "interest_repaid", "position", "feed_address")

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("instrument", "position")


class StrategyMintInline(_ReadOnlyInline):
    model = LoanStrategyMint
    fields = ("role", "index", "instrument", "mint_address", "feed_address", "max_age_seconds", "token_account_address", "position")

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("instrument", "position")


class _ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False  # created through the API (a network transaction)

    def has_delete_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False  # every field is the chain's or the API's: viewed, never edited

    def get_readonly_fields(self, request, obj=None):
        return self.fields


class PositionFilter(admin.SimpleListFilter):
    """Loans holding a position as collateral or sending borrowed tokens to it
    (``?position=<id>``: a position's page links here), read through the items' position
    foreign keys (indexed)."""

    title = "position"
    parameter_name = "position"

    def lookups(self, request, model_admin):
        value = self.value()
        return [(value, value)] if value else []

    def queryset(self, request, queryset):
        if not self.value():
            return queryset
        if not self.value().isdigit():
            return queryset.none()
        position = int(self.value())
        pledged = LoanPledgedItem.objects.filter(position_id=position).values("loan_id")
        borrowed = LoanBorrowedItem.objects.filter(position_id=position).values("loan_id")
        return queryset.filter(Q(pk__in=pledged) | Q(pk__in=borrowed))


class StrategyFilter(admin.SimpleListFilter):
    """Loans of one strategy, by its address (``?strategy_address=<address>``: a loan may
    name a strategy the organization has no record of). The strategy's record filters with
    ``strategy__id__exact``."""

    title = "strategy address"
    parameter_name = "strategy_address"

    def lookups(self, request, model_admin):
        value = self.value()
        return [(value, value)] if value else []

    def queryset(self, request, queryset):
        return queryset.filter(strategy_address=self.value()) if self.value() else queryset


@admin.register(Loan)
class LoanAdmin(_ReadOnly):
    list_display = ("escrow_address", "status", "borrower_address", "lender_address", "strategy_address", "due_time", "flagged_at", "tenant", "cluster", "created_at")
    list_filter = ("status", "cluster", "tenant", StrategyFilter, PositionFilter, ("flagged_at", admin.EmptyFieldListFilter))
    search_fields = ("escrow_address", "offchain_id", "borrower_address", "lender_address", "strategy_address")
    list_select_related = ("tenant",)
    date_hierarchy = "created_at"
    fields = (
        "offchain_id", "tenant", "cluster", "status", "escrow_address", "escrow_account", "program_address", "nonce", "borrower", "borrower_address",
        "strategy_address", "strategy", "lender_address", "lender", "apy_bps", "ltv_bps", "liquidation_bps", "duration_code", "duration_unit", "start_time",
        "due_time", "last_interest_update_time", "flagged_at", "flag_reason", "checked_at", "rent_payer_address", "synced_slot", "creation_transaction",
        "last_transaction", "pending_transaction", "closed_at", "created_at", "updated_at",
    )
    inlines = [PledgedInline, BorrowedInline]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("tenant")


@admin.register(LoanStrategy)
class LoanStrategyAdmin(_ReadOnly):
    list_display = ("address", "status", "lender_address", "apy_bps", "ltv_bps", "liquidation_bps", "liquidation_mode", "tenant", "cluster", "created_at")
    list_filter = ("status", "liquidation_mode", "cluster", "tenant")
    search_fields = ("address", "offchain_id", "lender_address")
    list_select_related = ("tenant",)
    date_hierarchy = "created_at"
    fields = (
        "offchain_id", "tenant", "cluster", "status", "address", "account", "program_address", "strategy_id", "lender", "lender_address",
        "oracle_program_address", "apy_bps", "ltv_bps", "liquidation_bps", "duration_code", "duration_unit", "liquidation_mode", "rent_payer_address",
        "synced_slot", "creation_transaction", "last_transaction", "pending_transaction", "created_at", "updated_at",
    )
    inlines = [StrategyMintInline]


def _loan_links(loan):
    if loan.borrower_address:
        yield "transactions.transaction", "transactions (signed by the borrower)", {"signer": loan.borrower_address}
    if loan.strategy_id is None and loan.strategy_address:
        yield "loans.loan", "loans (of the same strategy address)", {"strategy_address": loan.strategy_address}


def _strategy_links(strategy):
    if strategy.lender_address:
        yield "transactions.transaction", "transactions (signed by the lender)", {"signer": strategy.lender_address}
    yield "loans.loan", "loans (naming this strategy's address)", {"strategy_address": strategy.address}


related_link_register("loans.loan", _loan_links)
related_link_register("loans.loanstrategy", _strategy_links)
related_link_register("positions.position", lambda position: [("loans.loan", "loans (pledging to or borrowing into this position)", {"position": position.pk})])
