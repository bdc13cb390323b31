"""Tenant durable nonce accounts: create, resolve, list (docs/transactions.md, "Tenant
durable nonce accounts").

A tenant's nonce account is an Account record of type NONCE (the spec's specialized type,
created by Create Durable Nonce Accounts) with the engine's lease row beside it
(``transactions.NonceAccount``, ``tenant`` set). It is created by an ordinary network
transaction of the tenant — built, recorded and sent like every operation's — whose rent is
paid the way every request that funds an account pays (``services.funding_signer``: the
tenant's ``svmTransactionConfig.feePayer``, or the localnet airdrop funder; never the
platform fee payer). The rows and keys are committed with that transaction before anything
is sent; its effects make the account READY (accounts/effects.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from django.db.models import Case, CharField, F, QuerySet, Value, When
from solders import compute_budget
from solders.hash import Hash
from solders.message import Message, MessageV0
from solders.pubkey import Pubkey
from solders.system_program import (
    AdvanceNonceAccountParams,
    CreateAccountParams,
    InitializeNonceAccountParams,
    advance_nonce_account,
    create_account,
    initialize_nonce_account,
)

from custody import services as custody
from ledger_project.api.errors import LedgerError
from tenancy.context import OperationContext
from tenancy.idempotency import write_phase
from ledger_project.api.query import QueryField, QuerySpec, apply_item_query
from tenancy.scoping import scoped_tenant
from chain import builder
from chain.rpc import rpc_for
from transactions.models import MessageLifetime, NonceAccount, NonceState, Transaction
from transactions.services import SignerSpec, TxConfig, transaction_build, transaction_record

from . import operations
from .lookup import NAMED_FIELD, resolve_account, resolve_nonce_account
from .models import Account, AccountStatus, AccountType
from .services import account_save, funding_effects, funding_signer
from .signers import can_sign_on_platform, ensure_usable, transaction_config

#: At most this many accounts per Create Durable Nonce Accounts request (itemData.count).
MAX_NONCE_ACCOUNTS_PER_REQUEST = 20
NONCE_SIZE = builder.NONCE_ACCOUNT_SIZE
SYSTEM_PROGRAM = Pubkey.from_string("11111111111111111111111111111111")


# --- Create Durable Nonce Accounts --------------------------------------------------------


@dataclass
class _Draft:
    account: Account  # unsaved; its managed_key in memory
    authority: Pubkey
    authority_key: object | None  # ManagedKey (in memory when new) or None: signs off platform


@dataclass
class NonceAccountsCreated:
    accounts: list[Account]
    transactions: list[Transaction]


def _instructions(draft: _Draft, funder: Pubkey, rent: int) -> list:
    address = Pubkey.from_string(draft.account.address)
    return [
        create_account(CreateAccountParams(from_pubkey=funder, to_pubkey=address, lamports=rent, space=NONCE_SIZE, owner=SYSTEM_PROGRAM)),
        initialize_nonce_account(InitializeNonceAccountParams(nonce_pubkey=address, authority=draft.authority)),
    ]


def transaction_fits(instructions: list, fee_payer: Pubkey, config: TxConfig) -> bool:
    """Whether a transaction of ``instructions`` fits the network's size limit once the
    engine adds what ``config`` asks for (builder._build): an AdvanceNonceAccount whose
    nonce and authority count as new keys (a signer, at worst), compute budget
    instructions. Lookup tables are left out: they only make it smaller."""
    extra = []
    if config.lifetime == MessageLifetime.DURABLE_NONCE:
        extra.append(advance_nonce_account(AdvanceNonceAccountParams(nonce_pubkey=Pubkey.new_unique(), authorized_pubkey=Pubkey.new_unique())))
    if config.compute is not None:
        if config.compute.limit:
            extra.append(compute_budget.set_compute_unit_limit(config.compute.limit))
        if config.compute.price or config.compute.estimate:
            extra.append(compute_budget.set_compute_unit_price(config.compute.price or 1))
    everything = [*extra, *instructions]
    if config.version == "LEGACY":
        message = Message.new_with_blockhash(everything, fee_payer, Hash.default())
    else:
        message = MessageV0.try_compile(fee_payer, everything, [], Hash.default())
    size = 1 + 64 * message.header.num_required_signatures + len(builder.message_bytes(message))
    return size <= builder.MAX_TRANSACTION_SIZE


def _batches(drafts: list[_Draft], funder: Pubkey, fee_payer: Pubkey, rent: int, config: TxConfig) -> list[list[_Draft]]:
    """As few transactions as fit: CreateAccount + InitializeNonceAccount pairs, packed
    until the next pair would pass the size limit (about five a transaction)."""
    batches: list[list[_Draft]] = []
    for draft in drafts:
        if batches and transaction_fits([ix for d in [*batches[-1], draft] for ix in _instructions(d, funder, rent)], fee_payer, config):
            batches[-1].append(draft)
        else:
            batches.append([draft])
    return batches


def _authority(tenant, cluster: str, lookup: dict | None) -> tuple[Account | None, object | None]:
    """itemData.nonceAuthority: the tenant's own account (its key signs on platform when the
    service holds it for this tenant, else off platform), or None: a new key per account."""
    if not lookup:
        return None, None
    field = "itemData.nonceAuthority"
    account = resolve_account(tenant, cluster, lookup, field=field, writable=True)
    ensure_usable(account, field=field)
    return account, (account.managed_key if can_sign_on_platform(account, tenant) else None)


def durable_nonce_accounts_create(ctx: OperationContext, *, data: dict) -> NonceAccountsCreated:
    """Create Durable Nonce Accounts: ``count`` accounts in as few transactions as fit.

    Read and network phase (no writes): the authority, the funder (the rent of every
    account: ``funding_signer``), keys generated in memory, each transaction built, simulated
    and signed. Then one write phase for everything — the keys, the Account records (PENDING),
    the NonceAccount rows (CREATING) and the Transaction rows — committed before the pump
    sends anything, so no account can exist on chain without its rows and keys.
    """
    tenant, cluster = ctx.tenant, ctx.cluster
    count = data["count"]
    authority_account, authority_key = _authority(tenant, cluster, data.get("nonceAuthority"))
    rent = rpc_for(cluster).minimum_balance_for_rent_exemption(NONCE_SIZE)
    config = transaction_config(tenant, cluster, ctx.svm_config)
    funding = funding_signer(tenant=tenant, cluster=cluster, api_key=ctx.api_key, svm_config=ctx.svm_config, lamports=rent * count, destination_type="MANAGED")
    drafts = []
    for _ in range(count):
        key = custody.managed_key_generate(save=False)
        own_authority = None if authority_account is not None else custody.managed_key_generate(save=False)
        drafts.append(_Draft(
            account=Account(
                tenant=tenant, cluster=cluster, address=key.public_key, managed=True, managed_key=key, type=AccountType.NONCE,
                status=AccountStatus.PENDING, private_key_location=[key.location], data_length=NONCE_SIZE,
            ),
            authority=Pubkey.from_string(authority_account.address if authority_account is not None else own_authority.public_key),
            authority_key=authority_key if authority_account is not None else own_authority,
        ))
    batches = _batches(drafts, funding.pubkey, config.fee_payer.pubkey, rent, config)
    if config.nonce_account is not None and len(batches) > 1:
        raise LedgerError(
            f"A named durableNonceAccount serves one transaction; {count} accounts take {len(batches)} transactions. "
            f"Request at most {len(batches[0])} at once with it, or omit durableNonceAccount.",
            field=NAMED_FIELD, code="INVALID_NONCE_ACCOUNT",
        )
    prepared = []
    try:
        for batch in batches:
            instructions = [ix for draft in batch for ix in _instructions(draft, funding.pubkey, rent)]
            signers = [funding.signer, *(SignerSpec(Pubkey.from_string(d.account.address), d.account.managed_key) for d in batch)]
            prepared.append(transaction_build(context=ctx, operation=operations.NONCE_CREATE, instructions=instructions, signers=signers, config=config))
    except BaseException:
        for built in prepared:  # the nonce leases of the transactions built so far
            built.release()
        raise

    def release() -> None:
        for built in prepared:
            built.release()

    transactions = []
    with write_phase(on_abort=release):
        funded = funding_effects(funding, tenant=tenant, api_key=ctx.api_key).get("funding")  # the whole rent, under the funder's lock
        for batch, built in zip(batches, prepared):
            share = {"funding": {**funded, "lamports": rent * len(batch)}} if funded else {}
            tx = transaction_record(built, effects_data={"nonceAccounts": [str(d.account.offchain_id) for d in batch], **share}, api_key=ctx.api_key, request_id=ctx.request_id)
            for draft in batch:
                account = draft.account
                account.creation_transaction = account.last_transaction = account.pending_transaction = tx
                account_save(account)
                key = draft.authority_key
                if key is not None and key.pk is None:
                    key = custody.managed_key_store(key)
                NonceAccount.objects.create(
                    cluster=cluster, address=account.address, state=NonceState.CREATING, tenant=tenant, account=account,
                    account_key=account.managed_key, authority=str(draft.authority), authority_key=key, authority_account=authority_account,
                )
            transactions.append(tx)
    return NonceAccountsCreated([d.account for d in drafts], transactions)


# --- reads: Fetch Durable Nonce Account(s) ------------------------------------------------

#: Fetch Durable Nonce Accounts fieldNames (docs/transactions.md): every one filters and sorts.
NONCE_ACCOUNT_QUERY = QuerySpec(
    fields={
        "onchainId": QueryField("ONCHAIN_ADDRESS_ID", "address"),
        "offchainId": QueryField("OFFCHAIN_ID", "offchain_id"),
        "state": QueryField("TEXT", "nonce_state"),
        "authorityOnchainId": QueryField("ONCHAIN_ADDRESS_ID", "nonce__authority"),
        "authorityOffchainId": QueryField("OFFCHAIN_ID", "nonce__authority_account__offchain_id", nullable=True),
        "leasedBy": QueryField("OFFCHAIN_ID", "nonce__leased_by__offchain_id", nullable=True),
        "createdAt": QueryField("TIMESTAMP", "created_at"),
    },
    default_sort=(("createdAt", "DESC"),),
    tiebreak="-id",
)

#: What a response shows of an account and its lease row, as columns of one query.
_COLUMNS = ("address", "offchain_id", "created_at", "nonce_state")
_JOINED = {
    "authority": F("nonce__authority"), "authority_offchain_id": F("nonce__authority_account__offchain_id"),
    "authority_held": F("nonce__authority_key_id"), "leased_by": F("nonce__leased_by__offchain_id"),
    "creation_transaction_offchain_id": F("creation_transaction__offchain_id"),
}


def nonce_accounts(queryset: QuerySet) -> QuerySet:
    """The tenant's durable nonce accounts among ``queryset`` (Account rows), with the API's
    ``state``: the lease row's state, LEASED while a request or transaction holds it."""
    scoped_tenant(queryset, own=True)
    return queryset.filter(type=AccountType.NONCE, nonce__isnull=False).annotate(
        nonce_state=Case(When(nonce__state=NonceState.READY, nonce__leased_at__isnull=False, then=Value("LEASED")), default=F("nonce__state"), output_field=CharField()),
    )


def _rows(queryset: QuerySet) -> list[SimpleNamespace]:
    return [SimpleNamespace(**row) for row in queryset.values(*_COLUMNS, **_JOINED)]


def with_nonce_values(cluster: str, rows: list[SimpleNamespace]) -> list[SimpleNamespace]:
    """Each row's current nonce as the chain holds it (one getMultipleAccounts per 100,
    at confirmed): the blockhash-like value a DURABLE_NONCE transaction signs over; None
    where no initialized nonce account exists (yet)."""
    read = rpc_for(cluster).read_accounts([row.address for row in rows]).accounts if rows else {}
    for row in rows:
        account = read.get(row.address)
        initialized = account is not None and account.owner == SYSTEM_PROGRAM and len(account.data) >= NONCE_SIZE and int.from_bytes(bytes(account.data[4:8]), "little") == 1
        row.nonce = str(Hash(bytes(account.data[40:72]))) if initialized else None
    return rows


def nonce_account_get(*, queryset: QuerySet, cluster: str, lookup: dict, field: str = "itemData.durableNonceAccount") -> SimpleNamespace:
    """Fetch Durable Nonce Account: the row, with its nonce read from the chain."""
    tenant = scoped_tenant(queryset, own=True)
    account = resolve_nonce_account(tenant, cluster, lookup, field=field)
    return with_nonce_values(cluster, _rows(nonce_accounts(queryset).filter(pk=account.pk)))[0]


def nonce_account_list(*, queryset: QuerySet, cluster: str, item_query: dict | None, read_nonces: bool) -> tuple[list[SimpleNamespace], int]:
    """A page of the tenant's nonce accounts (``queryset``: the view's get_queryset());
    ``read_nonces`` (detail level detailed) reads their nonces from the chain."""
    page, count = apply_item_query(nonce_accounts(queryset).filter(cluster=cluster), item_query, NONCE_ACCOUNT_QUERY)
    rows = _rows(page)
    return (with_nonce_values(cluster, rows) if read_nonces else rows), count
