"""What confirmed (or failed) transactions change in instrument records.

Every confirmed transaction that names a recorded mint re-reads that mint from the chain
(authorities, extension state, metadata, supply), so the record follows the chain whatever
operation moved it; the handlers below add what only the operation knows. The mint
accounts are read by the engine's prefetch (``mints_named`` asks for them), before the
database transaction that applies the effects: the handlers only write.

Worker code (the effects task, for no tenant): it uses ``Model.unscoped``.
"""

from __future__ import annotations

from django.utils import timezone

from accounts.models import Account, AccountStatus
from transactions.effects import ConfirmationFacts, effect_handler, failure_handler, needs_accounts, on_confirmations, on_every_confirmation
from transactions.locks import lock_rows

from .allowlist.chain import OPERATIONS as ALLOW_LIST_OPERATIONS
from .models import FinancialInstrument, InstrumentStatus
from .onchain import mint_from_account
from .services import instrument_sync


def _instrument(tx) -> FinancialInstrument | None:
    # Worker-side: the transaction names its own record; no API tenant scoping applies.
    return FinancialInstrument.unscoped.filter(offchain_id=tx.effects.get("instrument")).first()


@effect_handler("instruments.create")
def instrument_created(tx, facts: ConfirmationFacts) -> None:
    instrument = _instrument(tx)
    if instrument is not None and instrument.status == InstrumentStatus.PENDING:
        at = tx.confirmed_at or timezone.now()
        FinancialInstrument.unscoped.filter(pk=instrument.pk).update(status=InstrumentStatus.ACTIVE, creation_transaction_at=at)
        Account.unscoped.filter(pk=instrument.mint_account_id, status=AccountStatus.PENDING).update(status=AccountStatus.ACTIVE, creation_transaction_at=at)


def _clear_in_flight(tx) -> None:
    """The instrument's in-flight marker ends with its transaction (success or failure)."""
    FinancialInstrument.unscoped.filter(pending_transaction=tx).update(pending_transaction=None)


@failure_handler("instruments.create")
def instrument_creation_failed(tx) -> None:
    instrument = _instrument(tx)
    if instrument is not None and instrument.status == InstrumentStatus.PENDING:
        FinancialInstrument.unscoped.filter(pk=instrument.pk).update(status=InstrumentStatus.FAILED)
        Account.unscoped.filter(pk=instrument.mint_account_id, status=AccountStatus.PENDING).update(status=AccountStatus.FAILED)
    _clear_in_flight(tx)


# The allow-list lives on chain only: its operations' confirmations change no record
# beyond the in-flight marker (in_flight_ended); a failure ends the marker too.
for _operation in ("instruments.update", "instruments.pause", "instruments.unpause", "instruments.close", *ALLOW_LIST_OPERATIONS):
    failure_handler(_operation)(_clear_in_flight)


@on_confirmations
def in_flight_ended(confirmed) -> None:
    """The in-flight markers of records whose transactions confirmed end (one UPDATE)."""
    FinancialInstrument.unscoped.filter(pending_transaction__in=[tx.pk for tx, _ in confirmed]).update(pending_transaction=None)


@effect_handler("instruments.close")
def instrument_closed(tx, facts: ConfirmationFacts) -> None:
    instrument = _instrument(tx)
    if instrument is not None:
        FinancialInstrument.unscoped.filter(pk=instrument.pk).update(status=InstrumentStatus.CLOSED, last_transaction=tx, last_transaction_at=tx.confirmed_at or timezone.now())
        Account.unscoped.filter(pk=instrument.mint_account_id).update(status=AccountStatus.INACTIVE)


def _open_instruments(tx, addresses):
    return FinancialInstrument.unscoped.filter(cluster=tx.cluster, address__in=list(addresses)).exclude(status=InstrumentStatus.CLOSED)


@needs_accounts
def mints_named(named) -> dict[int, list[str]]:
    """The recorded, open instruments' mints each transaction names (prefetched in one
    read; one query for every transaction of the prefetch)."""
    everything = {address for _, addresses in named for address in addresses}
    clusters = {tx.cluster for tx, _ in named}
    open_mints = set(FinancialInstrument.unscoped.filter(cluster__in=clusters, address__in=list(everything)).exclude(status=InstrumentStatus.CLOSED).values_list("cluster", "address"))
    return {tx.pk: [a for a in dict.fromkeys(addresses) if (tx.cluster, a) in open_mints] for tx, addresses in named}


@on_every_confirmation
def mints_after(tx, facts: ConfirmationFacts) -> None:
    """Copy every recorded, open instrument whose mint the transaction names from the mint
    as the prefetch read it (rows locked in pk order, so the read-slot check and the write
    are one step). Only mints the prefetch read can be copied: a transaction that names
    none (most of them) costs no query here."""
    if not facts.accounts:
        return
    for instrument in lock_rows(_open_instruments(tx, facts.accounts)):
        chain = mint_from_account(facts.accounts.get(instrument.address), slot=facts.accounts_slot)
        if chain is not None:
            instrument_sync(instrument=instrument, tx=tx, mint=chain)
