"""Reads of the positions area, scoped to the acting tenant."""

from __future__ import annotations

from types import SimpleNamespace

from django.db.models import CharField, Case, QuerySet, Value, When

from accounts.models import Account
from accounts.selectors import for_display
from ledger_project.api.query import QueryField, QuerySpec, apply_item_query
from tenancy.scoping import scoped_tenant

from .lookup import resolve_own_position
from .models import Position, PositionBalanceSnapshot


def with_display_accounts(positions: list[Position], *, tenant) -> list[Position]:
    """Attach the token account and owner records as responses show them (for_display
    annotations), in one query for a whole page. An owner may be another organization's
    account shared across tenants: visible_to, never unscoped."""
    ids = {pk for p in positions for pk in (p.account_id, p.owner_id)}
    rows = {a.pk: a for a in for_display(Account.objects.visible_to(tenant).filter(pk__in=ids))}
    for p in positions:
        p.account, p.owner = rows[p.account_id], rows[p.owner_id]
    return positions


def position_get(*, tenant, cluster: str, lookup: dict, field: str = "itemData") -> Position:
    position = resolve_own_position(tenant, cluster, lookup, field=field)
    return with_display_accounts([position], tenant=tenant)[0]


def position_balance(*, tenant, cluster: str, lookup: dict, at=None, field: str = "itemData") -> dict:
    """Fetch Position Balance: the offchain token balance — now (as of the last confirmed
    transaction, with the chain's beside it) or at ``at`` (from the balance history: the
    entry of the last transaction confirmed at or before it; 0 before the first)."""
    from solders.pubkey import Pubkey

    from accounts.render import uuid_text
    from ledger_project.timestamps import timestamp_text
    from chain.rpc import rpc_for

    from .onchain import token_account_at
    from .values import token_value

    position = resolve_own_position(tenant, cluster, lookup, field=field)
    instrument = position.instrument
    if at is not None:
        snapshot = PositionBalanceSnapshot.objects.filter(position=position, at__lte=at).order_by("-at", "-pk").values_list("amount", flat=True).first()
        offchain, onchain = int(snapshot or 0), None
    else:
        offchain = int(position.account.token_balance or 0)
        state = token_account_at(rpc_for(cluster).account(Pubkey.from_string(position.address)))
        onchain = state.amount if state is not None else None  # None: no token account there (any more)
    return {
        "position": {"onchainId": position.address, "offchainId": uuid_text(position.offchain_id)},
        "financialInstrument": {"onchainId": instrument.address, "offchainId": uuid_text(instrument.offchain_id)},
        "at": timestamp_text(at),
        "offchain": token_value(offchain, instrument),
        "onchain": token_value(onchain, instrument) if onchain is not None else None,
        "inAgreement": (offchain == onchain) if at is None else None,
    }


# --- Fetch Positions -------------------------------------------------------------------------

_TEXT_NULL = {"nullable": True, "blank_is_null": True}

#: Fetch Positions fieldNames (docs/positions.md): every one filters and sorts. ``alId``,
#: ``code``, ``accountNumber`` and ``offchainReferenceName`` are the position's own
#: references (its token account's); the instrument's alId is financialInstrumentAlId.
POSITION_QUERY = QuerySpec(
    fields={
        "onchainId": QueryField("ONCHAIN_ADDRESS_ID", "address"),
        "offchainId": QueryField("OFFCHAIN_ID", "offchain_id"),
        "ownerOnchainId": QueryField("ONCHAIN_ADDRESS_ID", "owner_address"),
        "ownerOffchainId": QueryField("OFFCHAIN_ID", "owner__offchain_id"),
        "financialInstrumentOnchainId": QueryField("ONCHAIN_ADDRESS_ID", "instrument__address"),
        "financialInstrumentOffchainId": QueryField("OFFCHAIN_ID", "instrument__offchain_id"),
        "financialInstrumentAlId": QueryField("TEXT", "instrument__al_id"),
        "financialInstrumentVersion": QueryField("TEXT", "instrument__version"),
        "alId": QueryField("TEXT", "account__al_id", **_TEXT_NULL),
        "code": QueryField("TEXT", "account__code", **_TEXT_NULL),
        "accountNumber": QueryField("TEXT", "account__account_number", **_TEXT_NULL),
        "offchainReferenceName": QueryField("TEXT", "account__name", **_TEXT_NULL),
        "status": QueryField("TEXT", "status"),
        "state": QueryField("TEXT", "position_state"),
        "frozen": QueryField("BOOLEAN", "frozen"),
        "tokenBalance": QueryField("NUMBER", "account__token_balance", nullable=True),
        "lamportsBalance": QueryField("NUMBER", "account__lamports_balance"),
        "delegateOnchainId": QueryField("ONCHAIN_ADDRESS_ID", "delegate_address", **_TEXT_NULL),
        "isAssociated": QueryField("BOOLEAN", "associated"),
        "wasAlreadyOnchain": QueryField("BOOLEAN", "was_onchain_already"),
        "lastTransactionAt": QueryField("TIMESTAMP", "last_transaction_at", nullable=True),
        "createdAt": QueryField("TIMESTAMP", "created_at"),
    },
    # Newest first (the pos_tenant_cluster index serves it).
    default_sort=(),
    tiebreak="-id",
    default_limit=50,
    max_limit=500,
)

#: ``state`` as responses spell it, for filters and sorts on it.
_STATE = Case(When(frozen=True, then=Value("FROZEN")), default=Value("INITIALIZED"), output_field=CharField())


def position_list(*, queryset: QuerySet, tenant, cluster: str, item_query: dict | None, detail_level: str = "detailed") -> tuple[list, int]:
    """A page of ``queryset`` (the view's get_queryset(): the tenant's positions) ready for
    ``render.RENDERERS[detail_level]``, and the count of every match. A page costs three
    queries however long: the count, the positions with their instruments, and the token
    accounts and owners together (with_display_accounts); identifiers read two columns."""
    scoped_tenant(queryset)
    queryset = queryset.filter(cluster=cluster).annotate(position_state=_STATE)
    if detail_level == "identifiers":
        page, count = apply_item_query(queryset, item_query, POSITION_QUERY)
        return [SimpleNamespace(**row) for row in page.values("address", "offchain_id")], count
    page, count = apply_item_query(queryset, item_query, POSITION_QUERY, present=lambda qs: qs.select_related("instrument"))
    return with_display_accounts(list(page), tenant=tenant), count
