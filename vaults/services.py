"""Writes of the vaults area (docs/vaults.md): Create Loan Remittance Vault, Update Repayment
Destinations Whitelist, Loan Repayment, Close Loan Remittance Vault.

Every operation has the house's shape (docs/transactions.md, "Path of a mutation"): read
and check, build / simulate / sign with no lock held, then one write phase under the
vault's row lock that re-checks its status and in-flight marker and records the
transaction with the marker set (one transaction-backed change of a vault at a time; 409
OPERATION_IN_PROGRESS meanwhile). Effects on confirmation are in vaults/effects.py.

**The program judges the vault's rules.** The service checks what only it knows — tenancy,
its records' status, the instruments, who pays, debit keys and limits — and leaves every
rule of the vault itself (the admin, the whitelist, the mint, the addresses, the sequence,
the close preconditions) to the loan_vault program: the simulation at request time
refuses with the program's own error, a 400 PROGRAM_ERROR naming it (and the field it is
about, vaults/onchain.py ERROR_FIELDS). A request and a transaction sent directly fail alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError
from django.db import transaction as db_transaction
from solders.pubkey import Pubkey

from accounts.locks import ensure_no_operation_in_flight
from accounts.lookup import OffPlatform, resolve_account
from accounts.models import Account, AccountStatus, AccountType
from accounts.services import account_save, funding_effects, funding_signer
from accounts.signers import ensure_usable, signer_for, transaction_config
from instruments.lookup import resolve_instrument
from ledger_project.api.errors import ConflictError, LedgerError
from tenancy.context import OperationContext
from tenancy.idempotency import write_phase
from tenancy.permissions import require_role
from positions import instructions as ix
from positions.limits import TOKEN, debit_decision
from positions.checks import movable_instrument
from positions.models import Position
from positions.services import associated_draft, associated_rent, position_link_creation, position_save_new, usable_instrument
from positions.values import base_units
from programs.loan_vault import abi, client
from tenancy.roles import Role
from chain.errors import ProgramError
from chain.rpc import rpc_for
from transactions.models import Transaction
from transactions.services import SignerSpec, transaction_build, transaction_record

from . import onchain, operations
from .locks import lock_vault
from .lookup import Destination, resolve_destination
from .models import LOAN_TYPES, Vault, VaultStatus

DEFAULT_CAPACITY = 16
FIELD = "itemData.vault"


@dataclass
class VaultResult:
    vault: Vault
    transaction: Transaction | None
    destination: Destination | None = None
    sequence: int | None = None


# --- shared ----------------------------------------------------------------------------------


_NOT_LIVE = {
    VaultStatus.PENDING: ("VAULT_PENDING", "The vault's creation has not been confirmed yet; retry once it is."),
    VaultStatus.CLOSED: ("VAULT_CLOSED", "The vault is closed."),
    VaultStatus.FAILED: ("VAULT_NOT_ONCHAIN", "The vault's creation failed: it does not exist on the network."),
}


def _live(vault: Vault) -> Vault:
    if vault.status in _NOT_LIVE:
        code, text = _NOT_LIVE[vault.status]
        raise LedgerError(text, field=FIELD, code=code)
    return vault


def _checked(vault: Vault) -> Vault:
    _live(vault)
    ensure_no_operation_in_flight(vault, field=FIELD)
    return vault


def _build(*, context: OperationContext, operation: str, instruction, signers: list[SignerSpec]):
    """transaction_build (keywords only, as it); a refusal by the vault program names the field it is about."""
    try:
        return transaction_build(context=context, operation=operation, instructions=[instruction], signers=signers,
                                 config=transaction_config(context.tenant, context.cluster, context.svm_config))
    except ProgramError as exc:
        exc.field = onchain.ERROR_FIELDS.get(exc.failure.name) if exc.failure.program == onchain.PROGRAM else None
        raise


def _admin_signer(tenant, cluster: str, vault: Vault, lookup: dict | None, field: str = "itemData.admin") -> SignerSpec:
    """Who signs as the vault's admin: the account ``lookup`` names (the program checks it
    is the admin: AdminMismatch), else the admin recorded at creation. A key the
    organization may use signs here; any other leaves the transaction PARTIALLY_SIGNED."""
    if lookup:
        resolved = resolve_account(tenant, cluster, lookup, field=field, allow_off_platform=True)
        if isinstance(resolved, OffPlatform):
            return SignerSpec(Pubkey.from_string(resolved.address), None)
        return signer_for(resolved, tenant, field=field)
    if vault.admin is not None and vault.admin.address == vault.admin_address and vault.admin.status != AccountStatus.INACTIVE:
        return signer_for(vault.admin, tenant, field=field)
    return SignerSpec(Pubkey.from_string(vault.admin_address), None)


def _record(locked: Vault, prepared, ctx: OperationContext, *, hold=None, **effects) -> Transaction:
    """Write phase: the Transaction row and the vault's in-flight marker."""
    held = hold is not None and hold.needs_approval
    tx = transaction_record(prepared, effects_data={"vault": str(locked.offchain_id), **effects}, api_key=ctx.api_key, request_id=ctx.request_id,
                            hold_for_approval=held, hold_reason=hold.reason if held else "")
    locked.last_transaction = locked.pending_transaction = tx
    locked.save(update_fields=["last_transaction", "pending_transaction", "updated_at"])
    return tx


# --- Create Loan Remittance Vault ---------------------------------------------------------------


def _loan_mint_authority(tenant, cluster: str, loan, lookup: dict | None) -> SignerSpec:
    field = "itemData.loanMintAuthority"
    address = loan.mint_authority_address
    if not address:
        raise LedgerError("The loan's mint has no mint authority: only its issuer may open its vault, and it has none.", field="itemData.loanFinancialInstrument", code="NO_AUTHORITY")
    if lookup:
        given = resolve_account(tenant, cluster, lookup, field=field, allow_off_platform=True)
        if given.address != address:
            raise LedgerError(f"The loan mint's mint authority is {address}.", field=field, code="AUTHORITY_MISMATCH")
        if isinstance(given, OffPlatform):
            return SignerSpec(Pubkey.from_string(address), None)
        return signer_for(given, tenant, field=field)
    if loan.mint_authority is not None and loan.mint_authority.tenant_id == tenant.pk:
        return signer_for(loan.mint_authority, tenant, field=field)
    return SignerSpec(Pubkey.from_string(address), None)


def _authority_record(tenant, cluster: str, address: str, loan, payment) -> Account:
    """Write phase: the vault authority's record (the PDA: no key, no data), made or reused."""
    account = Account.objects.for_tenant(tenant).filter(cluster=cluster, address=address).first()
    if account is None:
        return account_save(Account(tenant=tenant, cluster=cluster, address=address, managed=False, type=AccountType.VAULT_AUTHORITY,
                                    status=AccountStatus.ACTIVE, name=f"Vault authority {loan.al_id} / {payment.al_id}"[:200]))
    if account.status != AccountStatus.ACTIVE:
        account.status = AccountStatus.ACTIVE
        account.save(update_fields=["status", "updated_at"])
    return account


def _position_data(data: dict) -> dict:
    refs = {k: v for k, v in (data.get("offchainReferences") or {}).items() if k != "type"}
    return {"offchainReferences": refs, "tokenDebitLimits": data.get("tokenDebitLimits"), "tokenDebitApiKeys": data.get("tokenDebitApiKeys")}


def vault_create(ctx: OperationContext, *, data: dict) -> VaultResult:
    """Create Loan Remittance Vault: CreateVault of the pair (the vault authority PDA, its
    token account of the payment mint, the program-owned whitelist; the admin recorded on
    chain), signed by the loan mint's mint authority; its rent from the funding account.
    Offchain: the vault, a FUNDS_TOKEN_ACCOUNT position representing it (owner: the vault
    authority's VAULT_AUTHORITY record), PENDING until the transaction confirms. A closed
    or failed vault of the pair is opened again in place."""
    tenant, cluster = ctx.tenant, ctx.cluster
    p = "itemData"
    loan = usable_instrument(resolve_instrument(tenant, cluster, data["loanFinancialInstrument"], field=f"{p}.loanFinancialInstrument"), f"{p}.loanFinancialInstrument")
    payment = usable_instrument(resolve_instrument(tenant, cluster, data["paymentFinancialInstrument"], field=f"{p}.paymentFinancialInstrument"), f"{p}.paymentFinancialInstrument")
    if loan.al_type not in LOAN_TYPES:
        raise LedgerError(f"The loan must be a financial instrument of a loan type ({', '.join(LOAN_TYPES)}); this one is {loan.al_type}.",
                          field=f"{p}.loanFinancialInstrument", code="NOT_A_LOAN_INSTRUMENT")
    admin = resolve_account(tenant, cluster, data["admin"], field=f"{p}.admin", allow_off_platform=True)
    if not isinstance(admin, OffPlatform):
        ensure_usable(admin, field=f"{p}.admin")
    if data.get("tokenDebitApiKeys") is not None:
        require_role(ctx.api_key, Role.PLATFORM_UPDATE_DEBIT_API_KEYS, field=f"{p}.tokenDebitApiKeys", why="set tokenDebitApiKeys")
    addresses = onchain.addresses_for(cluster, loan, payment)
    existing = Vault.objects.for_tenant(tenant).filter(cluster=cluster, state_address=str(addresses.state)).first()
    if existing is not None and existing.status in (VaultStatus.PENDING, VaultStatus.ACTIVE):
        raise ConflictError("The organization already has a vault for this loan and payment instrument.", field=p, code="VAULT_EXISTS")
    capacity = data.get("capacity") or DEFAULT_CAPACITY
    rent = rpc_for(cluster).minimum_balance_for_rent_exemption(abi.state_size(capacity)) + associated_rent(cluster, payment)
    funding = funding_signer(tenant=tenant, cluster=cluster, api_key=ctx.api_key, svm_config=ctx.svm_config, lamports=rent, destination_type="MANAGED")
    issuer = _loan_mint_authority(tenant, cluster, loan, data.get("loanMintAuthority"))
    instruction = client.create_vault(addresses, payer=funding.pubkey, loan_mint_authority=issuer.pubkey, admin=Pubkey.from_string(admin.address), capacity=capacity)
    prepared = _build(context=ctx, operation=operations.CREATE, instruction=instruction, signers=[funding.signer, issuer])

    with write_phase(on_abort=prepared.release):
        funded = funding_effects(funding, tenant=tenant, api_key=ctx.api_key)
        authority = _authority_record(tenant, cluster, str(addresses.authority), loan, payment)
        account, position = associated_draft(tenant=tenant, cluster=cluster, owner=authority, instrument=payment, data=_position_data(data))
        assert position.address == str(addresses.vault_token) == str(ix.associated_address(addresses.authority, payment))
        account.type = AccountType.FUNDS_TOKEN_ACCOUNT  # spec: the vault is a position of this type
        position_save_new(account, position, field=p)
        vault = lock_vault(existing.pk, tenant=tenant) if existing is not None else None
        if vault is not None and vault.status in (VaultStatus.PENDING, VaultStatus.ACTIVE):
            raise ConflictError("The organization already has a vault for this loan and payment instrument.", field=p, code="VAULT_EXISTS")
        vault = vault or Vault(tenant=tenant, cluster=cluster)
        vault.offchain_id = position.offchain_id  # one identity offchain: the vault is its position
        vault.loan_instrument, vault.payment_instrument, vault.position, vault.authority_account = loan, payment, position, authority
        vault.program_address, vault.authority_address, vault.state_address = str(addresses.program), str(addresses.authority), str(addresses.state)
        vault.token_address, vault.token_program = str(addresses.vault_token), str(addresses.token_program)
        vault.admin_address, vault.admin = admin.address, None if isinstance(admin, OffPlatform) else admin
        vault.capacity, vault.status, vault.last_sequence_onchain, vault.synced_slot, vault.closed_at = capacity, VaultStatus.PENDING, 0, None, None
        vault.rent_payer_address, vault.rent_payer = str(funding.pubkey), funding.funder if funding.funder is not None and funding.funder.tenant_id == tenant.pk else None
        try:
            with db_transaction.atomic():
                vault.save()
        except IntegrityError as exc:  # a concurrent request recorded the pair first
            raise ConflictError("The organization already has a vault for this loan and payment instrument.", field=p, code="VAULT_EXISTS") from exc
        vault.destinations.all().delete()
        tx = _record(vault, prepared, ctx, position=str(position.offchain_id), capacity=capacity, **funded)
        vault.creation_transaction = tx
        vault.save(update_fields=["creation_transaction", "updated_at"])
        position_link_creation(account, position, tx)
    return VaultResult(vault, tx)


# --- Update Repayment Destinations Whitelist -------------------------------------------------------


def vault_update_whitelist(ctx: OperationContext, *, vault: Vault, action: str, destination: dict, admin: dict | None = None) -> VaultResult:
    """UpdateWhitelist: add (ADD) or remove (REMOVE) one destination, signed by the admin."""
    tenant, cluster = ctx.tenant, ctx.cluster
    _checked(vault)
    target = resolve_destination(tenant, cluster, vault, destination, field="itemData.destination")
    signer = _admin_signer(tenant, cluster, vault, admin)
    instruction = client.update_whitelist(onchain.addresses_of(vault), admin=signer.pubkey, destination=Pubkey.from_string(target.address), remove=action == "REMOVE")
    prepared = _build(context=ctx, operation=operations.UPDATE_WHITELIST, instruction=instruction, signers=[signer])
    with write_phase(on_abort=prepared.release):
        locked = _checked(lock_vault(vault.pk, tenant=tenant))
        tx = _record(locked, prepared, ctx, whitelist={"action": action, "destination": target.identifiers})
    return VaultResult(locked, tx, target)


# --- Loan Repayment -----------------------------------------------------------------------------


def _allocate_sequence(tenant, vault: Vault) -> int:
    """The vault's next repayment sequence, handed out under its row lock in its own short
    transaction (before signing: the number is in the signed instruction). A request that
    does not record its transaction leaves a gap, which the program allows; numbers only
    grow, and past the chain's last (``last_sequence_onchain``). The write phase records the
    transaction only if its number is still the last handed out."""
    with db_transaction.atomic():
        locked = _checked(lock_vault(vault.pk, tenant=tenant))
        locked.last_sequence = max(locked.last_sequence, locked.last_sequence_onchain) + 1
        locked.save(update_fields=["last_sequence", "updated_at"])
        return locked.last_sequence


def _resync_sequence(tenant, cluster: str, vault: Vault) -> None:
    """The program found the sequence stale (StaleSequence): the vault paid out with numbers
    the record did not hand out. Catch up with the chain, so the next request goes through."""
    state = onchain.decode(rpc_for(cluster).account(Pubkey.from_string(vault.state_address)), vault.program_address)
    if state is not None:
        Vault.objects.for_tenant(tenant).filter(pk=vault.pk, last_sequence__lt=state.last_sequence).update(last_sequence=state.last_sequence)


def vault_repayment(ctx: OperationContext, *, vault: Vault, destination: dict, value: dict, admin: dict | None = None) -> VaultResult:
    """Loan Repayment: ``value`` of the payment instrument from the vault to a whitelisted
    destination (Repayment: TransferChecked signed by the vault authority PDA inside the
    program), signed by the admin, with the vault's next sequence. The vault position's
    debit keys and limits apply (positions/limits.py): 403 DEBIT_NOT_ALLOWED, or held
    PENDING_APPROVAL over a limit."""
    tenant, cluster = ctx.tenant, ctx.cluster
    _checked(vault)
    payment = movable_instrument(vault.payment_instrument, FIELD)
    target = resolve_destination(tenant, cluster, vault, destination, field="itemData.destination")
    amount = base_units(value, payment, field="itemData.value")
    signer = _admin_signer(tenant, cluster, vault, admin)
    position = vault.position
    debit_decision(tenant=tenant, api_key=ctx.api_key, kind=TOKEN, source=position.owner, position=position, amount=amount, destination=target.for_limits(), field=FIELD)
    sequence = _allocate_sequence(tenant, vault)
    extra = onchain.hook_accounts(cluster, vault, target.address, amount)
    instruction = client.repayment(onchain.addresses_of(vault), admin=signer.pubkey, destination=Pubkey.from_string(target.address), amount=amount, sequence=sequence, extra=extra)
    try:
        prepared = _build(context=ctx, operation=operations.REPAYMENT, instruction=instruction, signers=[signer])
    except ProgramError as exc:
        if exc.failure.name == "StaleSequence":
            _resync_sequence(tenant, cluster, vault)
        raise
    with write_phase(on_abort=prepared.release):
        decision = debit_decision(tenant=tenant, api_key=ctx.api_key, kind=TOKEN, source=position.owner, position=position, amount=amount, destination=target.for_limits(), field=FIELD, lock=True)
        locked = _checked(lock_vault(vault.pk, tenant=tenant))
        if locked.last_sequence != sequence:
            # A later number was handed out meanwhile (and may have landed): this one would be
            # stale on chain. Recording only the newest keeps landing order = sequence order.
            raise ConflictError("Another repayment of this vault was handed a later sequence while this one was being prepared; retry.", field=FIELD, code="OPERATION_IN_PROGRESS")
        repayment = {"sequence": sequence, "amount": str(amount), "destination": target.identifiers}
        tx = _record(locked, prepared, ctx, hold=decision, repayment=repayment, **decision.effects)
        Position.objects.for_tenant(tenant).filter(pk=position.pk).update(last_transaction=tx)
    return VaultResult(locked, tx, target, sequence)


# --- Close Loan Remittance Vault --------------------------------------------------------------


def _refund_destination(tenant, cluster: str, vault: Vault, lookup: dict | None) -> str:
    field = "itemData.refundDestination"
    if lookup:
        resolved = resolve_account(tenant, cluster, lookup, field=field, allow_off_platform=True)
        if not isinstance(resolved, OffPlatform):
            ensure_usable(resolved, field=field)
        return resolved.address
    if vault.rent_payer is not None and vault.rent_payer.status != AccountStatus.INACTIVE:
        return vault.rent_payer.address
    raise LedgerError("Name the account that receives the vault's rent (refundDestination): the rent was not paid by an account of the organization.",
                      field=field, code="REFUND_DESTINATION_REQUIRED")


def vault_close(ctx: OperationContext, *, vault: Vault, refund: dict | None = None, admin: dict | None = None) -> VaultResult:
    """Close Loan Remittance Vault: CloseVault, signed by the admin — the program's
    preconditions are an empty whitelist (WhitelistNotEmpty) and a zero balance
    (VaultNotEmpty); the token account's and the state's rent go to ``refund`` (default: the
    account that paid them). CLOSED on confirmation, its position INACTIVE."""
    tenant, cluster = ctx.tenant, ctx.cluster
    _checked(vault)
    destination = _refund_destination(tenant, cluster, vault, refund)
    signer = _admin_signer(tenant, cluster, vault, admin)
    instruction = client.close_vault(onchain.addresses_of(vault), admin=signer.pubkey, rent_destination=Pubkey.from_string(destination))
    prepared = _build(context=ctx, operation=operations.CLOSE, instruction=instruction, signers=[signer])
    with write_phase(on_abort=prepared.release):
        locked = _checked(lock_vault(vault.pk, tenant=tenant))
        tx = _record(locked, prepared, ctx, refundDestination=destination)
    return VaultResult(locked, tx)
