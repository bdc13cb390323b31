"""What confirmed (or failed) transactions change in instrument records.

Every confirmed transaction that names a recorded mint re-reads that mint from the chain
(authorities, extension state, metadata, supply), so the record follows the chain whatever
operation moved it; the handlers below add what only the operation knows. The mint
accounts are read by the engine's prefetch (``mints_named`` asks for them), before the
database transaction that applies the effects: the handlers only write.

Worker code (the effects task, for no tenant): it uses ``Model.unscoped``.
"""

from __future__ import annotations

from django.db.models import F, Value
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from accounts.models import Account, AccountStatus
from transactions.effects import ConfirmationFacts, effect_handler, failure_handler, marks_in_flight, needs_accounts, on_confirmations
from transactions.models import Transaction
from transactions.locks import lock_rows

from . import operations
from .models import FinancialInstrument, InstrumentStatus
from .onchain import chain_state_matches, mint_from_account
from .services import instrument_sync


def _instrument(tx) -> FinancialInstrument | None:
    # Worker-side: the transaction names its own record; no API tenant scoping applies.
    return FinancialInstrument.unscoped.filter(offchain_id=tx.effects.get("instrument")).first()


@effect_handler(operations.CREATE)
def instrument_created(tx, facts: ConfirmationFacts) -> None:
    instrument = _instrument(tx)
    if instrument is not None and instrument.status == InstrumentStatus.PENDING:
        at = tx.confirmed_at or timezone.now()
        FinancialInstrument.unscoped.filter(pk=instrument.pk).update(status=InstrumentStatus.ACTIVE, creation_transaction_at=at)
        Account.unscoped.filter(pk=instrument.mint_account_id, status=AccountStatus.PENDING).update(status=AccountStatus.ACTIVE, creation_transaction_at=at)


def _clear_in_flight(tx) -> None:
    """The instrument's in-flight marker ends with its transaction (success or failure)."""
    FinancialInstrument.unscoped.filter(pending_transaction=tx).update(pending_transaction=None)


@failure_handler(operations.CREATE)
def instrument_creation_failed(tx) -> None:
    instrument = _instrument(tx)
    if instrument is not None and instrument.status == InstrumentStatus.PENDING:
        FinancialInstrument.unscoped.filter(pk=instrument.pk).update(status=InstrumentStatus.FAILED)
        Account.unscoped.filter(pk=instrument.mint_account_id, status=AccountStatus.PENDING).update(status=AccountStatus.FAILED)
    _clear_in_flight(tx)


# The allow-list lives on chain only: its operations' confirmations change no record
# beyond the in-flight marker (ended by the engine: marks_in_flight); a failure ends the marker too.
for _operation in (*operations.ON_CHAIN_ONLY, operations.CLOSE):
    failure_handler(_operation)(_clear_in_flight)


marks_in_flight(FinancialInstrument)  # their in-flight marks end when the transaction confirms (the engine)


@effect_handler(operations.CLOSE)
def instrument_closed(tx, facts: ConfirmationFacts) -> None:
    instrument = _instrument(tx)
    if instrument is not None:
        FinancialInstrument.unscoped.filter(pk=instrument.pk).update(status=InstrumentStatus.CLOSED, last_transaction=tx, last_transaction_at=tx.confirmed_at or timezone.now())
        Account.unscoped.filter(pk=instrument.mint_account_id).update(status=AccountStatus.INACTIVE)


@needs_accounts
def mints_named(named) -> dict[int, list[str]]:
    """The recorded, open instruments' mints each transaction names (prefetched in one
    read; one query for every transaction of the prefetch)."""
    everything = {address for _, addresses in named for address in addresses}
    clusters = {tx.cluster for tx, _ in named}
    open_mints = set(FinancialInstrument.unscoped.filter(cluster__in=clusters, address__in=list(everything)).exclude(status=InstrumentStatus.CLOSED).values_list("cluster", "address"))
    return {tx.pk: [a for a in dict.fromkeys(addresses) if (tx.cluster, a) in open_mints] for tx, addresses in named}


@on_confirmations
def mints_after(confirmed) -> None:
    """Copy every recorded, open instrument whose mint a transaction of the chunk names from
    the mint as the prefetch read it. Only mints the prefetch read can be copied: a chunk
    whose transactions name none costs no query here.

    Most transactions that name a mint leave it as it was (a transfer names it; only
    supply, authorities or extension state moving change it): for those, when the record
    already holds the read state (``chain_state_matches``), nothing is resolved or locked
    per transaction — one UPDATE per instrument at the end of the chunk moves its last
    transaction (the chunk's latest by slot) and the sync markers. A changed mint is copied
    as before: its row locked, authorities resolved (``instrument_sync``)."""
    named = [(tx, facts) for tx, facts in confirmed if facts.accounts]
    if not named:
        return
    wanted = {(tx.cluster, address) for tx, facts in named for address in facts.accounts}
    instruments = {(i.cluster, i.address): i for i in FinancialInstrument.unscoped.filter(
        cluster__in={c for c, _ in wanted}, address__in=list({a for _, a in wanted})).exclude(status=InstrumentStatus.CLOSED)}
    touched: dict[int, tuple[int, Transaction, int | None]] = {}  # instrument pk → (slot, its latest transaction, read slot)
    for tx, facts in named:
        for address, account in facts.accounts.items():
            instrument = instruments.get((tx.cluster, address))
            chain = mint_from_account(account, slot=facts.accounts_slot) if instrument is not None else None
            if chain is None:
                continue
            if chain_state_matches(instrument, chain):
                if instrument.pk not in touched or (tx.slot or 0) >= touched[instrument.pk][0]:
                    touched[instrument.pk] = (tx.slot or 0, tx, chain.slot)
                continue
            locked = lock_rows(FinancialInstrument.unscoped.filter(pk=instrument.pk))
            if locked:
                instruments[(tx.cluster, address)] = instrument_sync(instrument=locked[0], tx=tx, mint=chain)
                touched.pop(instrument.pk, None)
    now = timezone.now()
    for pk, (_slot, tx, read_slot) in sorted(touched.items()):
        synced = Greatest(Coalesce(F("synced_slot"), Value(read_slot)), Value(read_slot)) if read_slot is not None else F("synced_slot")
        FinancialInstrument.unscoped.filter(pk=pk).update(last_transaction=tx, last_transaction_at=tx.confirmed_at or now, synced_slot=synced, synced_at=now, updated_at=now)