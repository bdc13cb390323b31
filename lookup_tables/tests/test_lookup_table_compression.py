"""V0 messages compress through the tenant's own lookup tables (docs/lookup-tables.md,
"Compression"): which tables the builder picks, what the chain lets it load, and a trade
that only fits in a transaction thanks to a table, checked with an unmodified solana-py client."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from solders.address_lookup_table_account import AddressLookupTable, LookupTableMeta
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.signature import Signature
from spl.token.instructions import get_associated_token_address

from conftest import assert_error
from positions.models import Position
from positions.tests.kit import instrument, position, wallet
from positions.tests.movekit import at, mint, settled, trade
from chain import builder
from chain.builder import TableCandidate, _loadable, choose_tables
from lookup_tables.compression import tenant_tables, tenant_tables_forget
from tenancy.context import OperationContext
from transactions.models import Transaction
from transactions.tests.chainkit import next_slot
from lookup_tables.tests.factories import AddressLookupTableFactory
from lookup_tables.tests.test_api_lookup_tables import address_of, create, extend, landed, raw

PROGRAM = Pubkey.from_string("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")


def keys(count: int) -> list[Pubkey]:
    return [Keypair().pubkey() for _ in range(count)]


def instruction(writable: list[Pubkey], signer: Pubkey | None = None) -> Instruction:
    metas = [AccountMeta(k, is_signer=False, is_writable=True) for k in writable]
    if signer is not None:
        metas.append(AccountMeta(signer, is_signer=True, is_writable=False))
    return Instruction(PROGRAM, b"\x01", metas)


def candidate(addresses) -> TableCandidate:
    return TableCandidate(Keypair().pubkey(), frozenset(addresses))


# --- which tables (pure) ---------------------------------------------------------------------


def test_the_builder_picks_the_few_tables_that_cover_the_most_keys():
    payer, owner = keys(2)
    accounts = keys(12)
    ix = instruction(accounts, signer=owner)
    wide, rest, overlap, single = candidate(accounts[:8]), candidate(accounts[8:]), candidate(accounts[2:10]), candidate(accounts[:1] + keys(5))
    assert choose_tables([ix], payer, [single, rest, wide, overlap]) == [wide, rest]  # 8 keys, then the 4 left
    assert choose_tables([ix], payer, [overlap, wide]) == [overlap, wide]  # a tie goes to the first (the newest)
    # A table standing for one key costs more than it saves; signers, the fee payer and
    # programs are never looked up.
    assert choose_tables([ix], payer, [single]) == []
    assert choose_tables([ix], payer, [candidate([payer, owner, PROGRAM, accounts[0]])]) == []
    assert choose_tables([ix], payer, [wide], exclude=[wide.address]) == []  # named in the request already
    many = [candidate(accounts[i:i + 2]) for i in range(0, 12, 2)]
    assert len(choose_tables([ix], payer, many)) == builder.MAX_AUTO_TABLES


def _table(addresses: list[Pubkey], *, last_extended_slot: int, start_index: int) -> AddressLookupTable:
    meta = LookupTableMeta(last_extended_slot=last_extended_slot, last_extended_slot_start_index=start_index, authority=Keypair().pubkey())
    return AddressLookupTable.deserialize((1).to_bytes(4, "little") + bytes(meta) + b"".join(bytes(a) for a in addresses))


def test_addresses_added_in_the_current_slot_are_not_loaded_yet():
    addresses = keys(5)
    assert _loadable(_table(addresses, last_extended_slot=100, start_index=3), slot=100) == addresses[:3]
    assert _loadable(_table(addresses, last_extended_slot=99, start_index=3), slot=100) == addresses


@pytest.mark.django_db
def test_the_tenants_usable_tables_are_read_once_per_window(tenant, other_tenant, settings):
    settings.LEDGER_LOOKUP_TABLE_CACHE_SECONDS = 60
    tenant_tables_forget()
    active, frozen = AddressLookupTableFactory(tenant=tenant), AddressLookupTableFactory(tenant=tenant, state="FROZEN")
    for state in ("CREATING", "DEACTIVATED", "CLOSED", "FAILED"):
        AddressLookupTableFactory(tenant=tenant, state=state)
    AddressLookupTableFactory(tenant=tenant, addresses=[str(Keypair().pubkey())], addresses_count=1)  # too small to help
    AddressLookupTableFactory(tenant=other_tenant)
    with CaptureQueriesContext(connection) as queries:
        first = tenant_tables(tenant, "CHAIN_LOCALNET")
        again = tenant_tables(tenant, "CHAIN_LOCALNET")
    assert {str(c.address) for c in first} == {active.address, frozen.address} and again == first and len(queries) == 1
    tenant_tables_forget()


# --- on the chain ------------------------------------------------------------------------------


@pytest.fixture
def fresh_tables(settings):
    """Every request sees the tables confirmed so far (no per-process window)."""
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True
    settings.LEDGER_LOOKUP_TABLE_CACHE_SECONDS = 0
    yield
    tenant_tables_forget()


LEGS = 7  # one instrument per leg: 1,350 bytes without a table, 702 with one (docs/lookup-tables.md)


@pytest.mark.django_db(transaction=True)
def test_a_trade_that_only_fits_thanks_to_a_lookup_table_lands(api, celery_worker_process, chain, fresh_tables):
    authority, seller, buyer = wallet(api), wallet(api), wallet(api)
    instruments = [instrument(api, authority=authority) for _ in range(LEGS)]
    sources = [position(api, seller, bond) for bond in instruments]
    for source in sources:
        settled(mint(api, at(source), {"lamports": 10}))
    # Each leg sends an instrument to the buyer, whose position is created on the way.
    legs = [{"source": at(source), "destination": {"owner": buyer, "financialInstrument": bond}, "value": {"lamports": 10}} for source, bond in zip(sources, instruments)]

    before = Position.unscoped.count(), Transaction.unscoped.count()
    too_large = assert_error(trade(api, legs), 400, "TRANSACTION_TOO_LARGE", "itemData")
    assert "at most 1232" in too_large["errors"][0]["message"]
    assert (Position.unscoped.count(), Transaction.unscoped.count()) == before

    # A table of the tenant: the sellers' token accounts and the mints (account lookups),
    # the buyer, and the buyer's token accounts to be (raw addresses: they do not exist yet).
    buyer_address = Pubkey.from_string(address_of(api, buyer))
    receiving = [get_associated_token_address(buyer_address, Pubkey.from_string(bond["onchainId"])) for bond in instruments]
    components = [{"onchainId": s["onchainId"]} for s in sources] + [{"onchainId": b["onchainId"]} for b in instruments] + [buyer] + [raw(r) for r in receiving]
    table = landed(create(api, {"componentAddresses": components[:12]}), "newAddressLookupTable", 201)
    landed(extend(api, table, components[12:]), "extendedAddressLookupTable")
    next_slot(chain)  # addresses added in a slot are loadable from the next one (the runtime's rule)

    body = settled(trade(api, legs), 201)
    signature = Signature.from_string(body["svmTransaction"]["onchainId"])
    landed_tx = chain.get_transaction(signature, encoding="base64", max_supported_transaction_version=0).value.transaction
    loaded = landed_tx.meta.loaded_addresses
    assert {str(a) for a in [*loaded.writable, *loaded.readonly]} >= {s["onchainId"] for s in sources} | {str(r) for r in receiving}
    wire = landed_tx.transaction  # the bytes the network took
    assert [str(lookup.account_key) for lookup in wire.message.address_table_lookups] == [table["onchainId"]]
    assert len(bytes(wire)) <= builder.MAX_TRANSACTION_SIZE
    assert [int(chain.get_token_account_balance(r).value.amount) for r in receiving] == [10] * LEGS


@pytest.mark.django_db(transaction=True)
def test_the_chain_decides_a_table_deactivated_outside_the_service_is_left_out(api, tenant, celery_worker_process, chain, fresh_tables):
    from solders.system_program import TransferParams, transfer

    from chain import lookup_tables as alt
    from chain.builder import message_from_bytes
    from lookup_tables.models import AddressLookupTable as Table
    from transactions.services import SignerSpec, TxConfig, transaction_build
    from transactions.tests.chainkit import funded, send

    authority_key = Keypair()  # the test holds the authority's key too (an imported managed account)
    authority = wallet(api, authority_key)
    targets = keys(4)
    table = landed(create(api, {"authority": authority, "componentAddresses": [raw(t) for t in targets]}), "newAddressLookupTable", 201)
    next_slot(chain)
    payer = funded(chain)
    signer = SignerSpec(payer.pubkey(), keypair=payer)

    def lookups() -> list[str]:
        built = transaction_build(context=OperationContext.system(tenant=tenant, cluster="CHAIN_LOCALNET"), operation="test.transfers", signers=[signer], config=TxConfig(fee_payer=signer),
                                  instructions=[transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=t, lamports=1_000_000)) for t in targets])
        return [str(lookup.account_key) for lookup in message_from_bytes(built.message).address_table_lookups]

    assert lookups() == [table["onchainId"]]
    send(chain, payer, [alt.deactivate(table=Pubkey.from_string(table["onchainId"]), authority=authority_key.pubkey())], [authority_key])
    assert Table.unscoped.get(offchain_id=table["offchainId"]).state == "ACTIVE"  # the record does not know yet
    assert lookups() == []  # the chain says deactivated: the message is built without it
