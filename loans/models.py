"""Loans of the lending program (spec: "Loans", "Loan response"; docs/loans.md).

The chain is the truth: a loan is a loan escrow of the lending program (programs/lending),
a strategy is a lender's loan strategy account. These records say what the service did
and copy what the program holds after each confirmed change (``synced_slot``: an older read
never overwrites a newer one), so reads need no network call and bulk fetches can filter.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from tenancy.scoping import TenantOwnedModel

DEFI_PROTOCOL = "PARTNER_LENDING"
#: The spec's duration code (Loan response: duration { code, unit }); the only one the program knows.
DURATION_CODES = ("DAYS",)


class StrategyStatus(models.TextChoices):
    PENDING = "PENDING"  # creation not confirmed yet
    ACTIVE = "ACTIVE"
    FAILED = "FAILED"  # the creation failed or expired: nothing on chain


class LiquidationMode(models.TextChoices):
    """What the keeper (loans/tasks.py) does with a loan of the strategy that crossed its
    liquidation ratio or is overdue: flag it (the lender decides) or liquidate it."""

    FLAG = "FLAG"
    LIQUIDATE = "LIQUIDATE"


class MintRole(models.TextChoices):
    PLEDGE = "PLEDGE"  # accepted as collateral
    BORROW = "BORROW"  # lent


class LoanStatus(models.TextChoices):
    """The spec names ACTIVE and CLOSED (and OPEN in a response example: the service answers
    ACTIVE for an open loan, one spelling that filters as it reads)."""

    PENDING = "PENDING"  # Create Loan's transaction not confirmed yet
    ACTIVE = "ACTIVE"  # open: owes, or holds collateral
    REPAID = "REPAID"  # owes nothing; Close Loan ends it
    LIQUIDATED = "LIQUIDATED"  # its collateral settled its debt
    CLOSED = "CLOSED"  # the escrow is closed on chain
    FAILED = "FAILED"  # the creation failed or expired: nothing on chain


class LoanStrategy(TenantOwnedModel):
    """A lender's loan strategy (the spec's ``loanStrategyAddress``, a "lender vault")
    created through this service: the program's PDA ["loan-strategy", lender, strategy_id].

    Invariants: ``account`` is the record of the PDA (type VAULT, no key) and the strategy's
    ``offchain_id`` is its (one identity offchain); its liquidity token accounts are
    positions owned by that record (``mints``); the terms and mints copy the chain's
    after each confirmed change; at most one transaction changes it at a time
    (``pending_transaction``). ``liquidation_mode`` is the service's own setting.
    """

    address = models.CharField(max_length=44)
    program_address = models.CharField(max_length=44)
    strategy_id = models.PositiveBigIntegerField()
    account = models.OneToOneField("accounts.Account", on_delete=models.PROTECT, related_name="loan_strategy", help_text="The strategy PDA's record (type VAULT).")
    lender = models.ForeignKey("accounts.Account", on_delete=models.PROTECT, related_name="+")
    lender_address = models.CharField(max_length=44)
    oracle_program_address = models.CharField(max_length=44)
    apy_bps = models.PositiveIntegerField()
    ltv_bps = models.PositiveIntegerField()
    liquidation_bps = models.PositiveIntegerField()
    duration_code = models.CharField(max_length=10, default="DAYS")
    duration_unit = models.PositiveIntegerField()
    liquidation_mode = models.CharField(max_length=10, choices=LiquidationMode.choices, default=LiquidationMode.FLAG)
    status = models.CharField(max_length=10, choices=StrategyStatus.choices, default=StrategyStatus.PENDING, db_index=True)
    rent_payer_address = models.CharField(max_length=44, blank=True)
    synced_slot = models.BigIntegerField(null=True, blank=True)
    creation_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    last_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    pending_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-pk"]
        verbose_name_plural = "loan strategies"
        indexes = [models.Index(fields=["tenant", "cluster", "address"], name="loan_strategy_address")]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "cluster", "address"], name="loan_strategy_once", violation_error_message="The organization already records this strategy."),
            models.CheckConstraint(condition=Q(ltv_bps__lt=models.F("liquidation_bps")), name="loan_strategy_ratios", violation_error_message="The loan-to-value ratio is below the liquidation ratio."),
        ]

    def __str__(self) -> str:
        return f"loan strategy {self.address} [{self.status}]"


class LoanStrategyMint(models.Model):
    """A mint the strategy accepts as pledge or lends, as the chain held it at the
    strategy's ``synced_slot`` (in the program's order per role)."""

    strategy = models.ForeignKey("loans.LoanStrategy", on_delete=models.CASCADE, related_name="mints")
    role = models.CharField(max_length=10, choices=MintRole.choices)
    index = models.PositiveSmallIntegerField()
    mint_address = models.CharField(max_length=44)
    instrument = models.ForeignKey("instruments.FinancialInstrument", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    feed_address = models.CharField(max_length=44, help_text="The price feed the strategy values the mint with.")
    max_age_seconds = models.PositiveIntegerField()
    token_account_address = models.CharField(max_length=44, help_text="The strategy's token account of the mint (its liquidity).")
    token_program = models.CharField(max_length=44)
    decimals = models.PositiveSmallIntegerField()
    position = models.ForeignKey("positions.Position", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="The strategy's token account as a position.")

    class Meta:
        ordering = ["strategy", "role", "index"]
        constraints = [models.UniqueConstraint(fields=["strategy", "role", "mint_address"], name="loan_strategy_mint_once")]

    def __str__(self) -> str:
        return f"{self.role} {self.mint_address} of {self.strategy_id}"


class Loan(TenantOwnedModel):
    """One loan: the lending program's escrow PDA ["loan-escrow", borrower, nonce] (the
    spec's ``escrow``), created by Create Loan for the acting organization's borrower.

    Invariants: ``escrow_account`` is the record of the escrow (type LOAN_ESCROW, no key)
    and the loan's ``offchain_id`` is its; pledged collateral sits in the escrow's token
    accounts, positions owned by that record; the status, terms, times and items copy the
    chain's after each confirmed change (``synced_slot``); at most one transaction changes
    the loan at a time (``pending_transaction``: 409 OPERATION_IN_PROGRESS meanwhile);
    ``flagged_at`` is set by the keeper while the loan is liquidatable.
    """

    escrow_address = models.CharField(max_length=44)
    program_address = models.CharField(max_length=44)
    nonce = models.PositiveBigIntegerField()
    escrow_account = models.OneToOneField("accounts.Account", on_delete=models.PROTECT, related_name="loan", help_text="The escrow PDA's record (type LOAN_ESCROW).")
    borrower = models.ForeignKey("accounts.Account", on_delete=models.PROTECT, related_name="+")
    borrower_address = models.CharField(max_length=44)
    strategy_address = models.CharField(max_length=44)
    strategy = models.ForeignKey("loans.LoanStrategy", null=True, blank=True, on_delete=models.SET_NULL, related_name="loans", help_text="The organization's record of the strategy, when it has one.")
    lender_address = models.CharField(max_length=44)
    lender = models.ForeignKey("accounts.Account", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="The organization's record of the lender, when it has one.")
    status = models.CharField(max_length=12, choices=LoanStatus.choices, default=LoanStatus.PENDING)
    apy_bps = models.PositiveIntegerField()
    ltv_bps = models.PositiveIntegerField()
    liquidation_bps = models.PositiveIntegerField()
    duration_code = models.CharField(max_length=10, default="DAYS")
    duration_unit = models.PositiveIntegerField()
    start_time = models.DateTimeField(null=True, blank=True)
    due_time = models.DateTimeField(null=True, blank=True)
    last_interest_update_time = models.DateTimeField(null=True, blank=True)
    rent_payer_address = models.CharField(max_length=44, blank=True)
    flagged_at = models.DateTimeField(null=True, blank=True, help_text="Set by the keeper while the loan may be liquidated.")
    flag_reason = models.CharField(max_length=200, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True, help_text="The keeper's last look.")
    closed_at = models.DateTimeField(null=True, blank=True)
    synced_slot = models.BigIntegerField(null=True, blank=True)
    creation_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    last_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    pending_transaction = models.ForeignKey("transactions.Transaction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["-pk"]
        indexes = [
            models.Index(fields=["tenant", "cluster", "status", "-id"], name="loan_tenant_status"),
            models.Index(fields=["tenant", "cluster", "escrow_address"], name="loan_escrow_address"),
            models.Index(fields=["status", "cluster"], name="loan_keeper"),
            # The back office's search by address and its strategy-address filter, across
            # organizations (docs/admin.md, "Lists at scale").
            models.Index(fields=["cluster", "escrow_address"], name="loan_admin_escrow"),
            models.Index(fields=["cluster", "borrower_address"], name="loan_admin_borrower"),
            models.Index(fields=["cluster", "lender_address"], name="loan_admin_lender"),
            models.Index(fields=["strategy_address", "cluster"], name="loan_admin_strategy"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "cluster", "escrow_address"], name="loan_escrow_once", violation_error_message="The organization already records this loan escrow."),
        ]

    def __str__(self) -> str:
        return f"loan {self.escrow_address} [{self.status}]"


class ItemFeed(models.Model):
    """The loan's strategy's price feed of an item's mint and its maximum age (marketData)."""

    feed_address = models.CharField(max_length=44, blank=True, help_text="The strategy's price feed of the mint.")
    max_age_seconds = models.PositiveIntegerField(null=True, blank=True, help_text="The strategy's maximum age of that feed's observation.")

    class Meta:
        abstract = True


class LoanPledgedItem(ItemFeed):
    """Collateral of one mint in the escrow's token account, as the chain held it at the
    loan's ``synced_slot`` (in the escrow's order). ``amount``: base units;
    ``pledged_amount``: the displayed amount (what responses show and filters compare);
    the feed and its maximum age: the loan's strategy's for the mint (marketData)."""

    loan = models.ForeignKey("loans.Loan", on_delete=models.CASCADE, related_name="pledged_items")
    index = models.PositiveSmallIntegerField()
    mint_address = models.CharField(max_length=44)
    instrument = models.ForeignKey("instruments.FinancialInstrument", on_delete=models.PROTECT, related_name="+")
    token_account_address = models.CharField(max_length=44)
    position = models.ForeignKey("positions.Position", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="The escrow's token account as a position.")
    amount = models.DecimalField(max_digits=20, decimal_places=0)
    pledged_amount = models.DecimalField(max_digits=40, decimal_places=18)

    class Meta:
        ordering = ["loan", "index"]
        constraints = [models.UniqueConstraint(fields=["loan", "mint_address"], name="loan_pledged_mint_once")]

    def __str__(self) -> str:
        return f"{self.amount} of {self.mint_address} pledged to {self.loan_id}"


class LoanBorrowedItem(ItemFeed):
    """Debt in one mint, as the chain held it at the loan's ``synced_slot`` (base units):
    ``principal_due`` = principal − principal_repaid (``due_amount`` its displayed amount,
    the filter's borrowedItemDueAmount); interest accrued up to the loan's
    ``last_interest_update_time`` (``interest_remainder``: the fraction of a base unit
    beyond, in units of 1 / (10000 × seconds per year)). ``position``: where the borrowed
    tokens went (the borrower's position, or transferTo's)."""

    loan = models.ForeignKey("loans.Loan", on_delete=models.CASCADE, related_name="borrowed_items")
    index = models.PositiveSmallIntegerField()
    mint_address = models.CharField(max_length=44)
    instrument = models.ForeignKey("instruments.FinancialInstrument", on_delete=models.PROTECT, related_name="+")
    position = models.ForeignKey("positions.Position", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    principal = models.DecimalField(max_digits=20, decimal_places=0)
    principal_repaid = models.DecimalField(max_digits=20, decimal_places=0, default=0)
    interest_accrued = models.DecimalField(max_digits=20, decimal_places=0, default=0)
    interest_remainder = models.DecimalField(max_digits=20, decimal_places=0, default=0)
    interest_repaid = models.DecimalField(max_digits=20, decimal_places=0, default=0)
    due_amount = models.DecimalField(max_digits=40, decimal_places=18)

    class Meta:
        ordering = ["loan", "index"]
        constraints = [models.UniqueConstraint(fields=["loan", "mint_address"], name="loan_borrowed_mint_once")]

    def __str__(self) -> str:
        return f"{self.principal} of {self.mint_address} borrowed by {self.loan_id}"
