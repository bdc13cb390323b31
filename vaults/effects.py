"""What confirmed (or failed) vault transactions change in the records (docs/vaults.md).

Worker code (the effects task, for no tenant): it uses ``Model.unscoped``. The vault's
whitelist and last sequence follow the chain: every vault transaction's prefetch reads the
vault's state account (``needs_accounts``), and the handler copies what the program holds
(a read older than the one the vault reflects, ``synced_slot``, changes nothing). Token
balances of the vault's position follow every confirmed transaction already
(positions/balances.py), pay-ins by positions transfers included.
"""

from __future__ import annotations

from django.utils import timezone

from accounts.models import Account, AccountStatus
from positions.effects import positions_created, positions_not_created
from positions.models import Position, PositionStatus
from transactions.effects import ConfirmationFacts, effect_handler, failure_handler, marks_in_flight, needs_accounts

from . import onchain, operations
from .models import Vault, VaultDestination, VaultStatus


# Their own handlers end the mark with the rest of the record's update; the engine ends any left.
marks_in_flight(Vault)


def _vault(tx) -> Vault | None:
    return Vault.unscoped.filter(offchain_id=tx.effects.get("vault")).select_related("position").first()


@needs_accounts
def vault_states(named) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    wanted = {tx.pk: tx.effects.get("vault") for tx, _ in named if tx.operation in operations.ALL}
    if wanted:
        states = dict(Vault.unscoped.filter(offchain_id__in=[v for v in wanted.values() if v]).values_list("offchain_id", "state_address"))
        for pk, offchain_id in wanted.items():
            state = states.get(_uuid(offchain_id))
            if state:
                out[pk] = [state]
    return out


def _uuid(value):
    import uuid

    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _sync(vault: Vault, tx, facts: ConfirmationFacts, **fields) -> None:
    """Copy the vault's state as the chain holds it (whitelist, last sequence), unless the
    read is older than the one the vault reflects; ``fields`` are set in any case."""
    at = tx.confirmed_at or timezone.now()
    updates = {"last_transaction": tx, **fields}
    fresh = facts.accounts_slot is not None and (vault.synced_slot is None or facts.accounts_slot >= vault.synced_slot)
    if fresh and vault.state_address in facts.accounts:
        state = onchain.decode(facts.accounts[vault.state_address], vault.program_address)
        VaultDestination.objects.filter(vault=vault).delete()
        if state is not None:
            addresses = [str(a) for a in state.whitelist]
            positions = {p.address: p for p in Position.unscoped.filter(tenant_id=vault.tenant_id, cluster=vault.cluster, address__in=addresses)}
            VaultDestination.objects.bulk_create([VaultDestination(vault=vault, address=a, index=i, position=positions.get(a)) for i, a in enumerate(addresses)])
            updates["last_sequence_onchain"] = state.last_sequence
        updates["synced_slot"] = facts.accounts_slot
    Vault.unscoped.filter(pk=vault.pk).update(updated_at=at, **updates)
    Vault.unscoped.filter(pk=vault.pk, pending_transaction=tx).update(pending_transaction=None)


@effect_handler(operations.CREATE)
def vault_created(tx, facts: ConfirmationFacts) -> None:
    vault = _vault(tx)
    if vault is None:
        return
    positions_created(tx, [vault.position])
    _sync(vault, tx, facts, **({"status": VaultStatus.ACTIVE} if vault.status == VaultStatus.PENDING else {}))


@failure_handler(operations.CREATE)
def vault_not_created(tx) -> None:
    vault = _vault(tx)
    if vault is None:
        return
    positions_not_created(tx, [vault.position])
    Vault.unscoped.filter(pk=vault.pk, status=VaultStatus.PENDING).update(status=VaultStatus.FAILED)
    _clear_in_flight(tx)


@effect_handler(operations.UPDATE_WHITELIST)
def vault_whitelist_updated(tx, facts: ConfirmationFacts) -> None:
    vault = _vault(tx)
    if vault is not None:
        _sync(vault, tx, facts)


@effect_handler(operations.REPAYMENT)
def vault_repaid(tx, facts: ConfirmationFacts) -> None:
    vault = _vault(tx)
    if vault is not None:
        _sync(vault, tx, facts)


@effect_handler(operations.CLOSE)
def vault_closed(tx, facts: ConfirmationFacts) -> None:
    """The token account and the state are gone: the vault CLOSED, its position and both
    records INACTIVE (opening the pair again reuses them, history kept)."""
    vault = _vault(tx)
    if vault is None:
        return
    at = tx.confirmed_at or timezone.now()
    _sync(vault, tx, facts, status=VaultStatus.CLOSED, closed_at=at)
    Position.unscoped.filter(pk=vault.position_id, status=PositionStatus.ACTIVE).update(
        status=PositionStatus.INACTIVE, frozen=False, delegate_address="", delegated_amount=0, last_transaction=tx, last_transaction_at=at)
    Account.unscoped.filter(pk=vault.position.account_id).update(status=AccountStatus.INACTIVE, token_balance=0, lamports_balance=0)
    Account.unscoped.filter(pk=vault.authority_account_id).update(status=AccountStatus.INACTIVE)


def _clear_in_flight(tx) -> None:
    Vault.unscoped.filter(pending_transaction=tx).update(pending_transaction=None)


for _operation in (operations.UPDATE_WHITELIST, operations.REPAYMENT, operations.CLOSE):
    failure_handler(_operation)(_clear_in_flight)
