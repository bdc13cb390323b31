"""No network under database locks on the worker side (docs/transactions.md, "Path of a
mutation", step 5): what a confirmation's effects need from the chain is read before the
database transaction that claims them, then the handlers only write."""

from __future__ import annotations

import json
from contextlib import contextmanager

import httpx
import pytest
from django.db import connection
from django.db import transaction as db_transaction
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import TransferParams, transfer
from spl.token.instructions import MintToCheckedParams, create_associated_token_account, get_associated_token_address, mint_to_checked

from custody.services import managed_key_import
from accounts.models import Account, AccountStatus, BalanceSnapshot
from instruments.models import FinancialInstrument
from instruments.onchain import read_mint
from instruments.services import instrument_sync
from instruments.tests.test_api_instruments import BOND, create, mint_outside_the_service
from instruments.token2022 import instructions as t22
from instruments.token2022.constants import TOKEN_2022_PROGRAM_ID, ExtensionType
from tests.workers import paused_workers, wait_for
from transactions import effects, ending, nonce_pool, services, settlement
from chain.errors import ChainUnavailable
from chain.rpc import TokenBalance
from transactions.models import Transaction, TransactionEvent, TransactionStatus
from transactions.services import SignerSpec
from transactions.tests.chainkit import funded, next_slot, send
from transactions.tests.test_lifecycle import held_account_create

pytestmark = pytest.mark.chain
CLUSTER = "CHAIN_LOCALNET"
DECIMALS = 2


@contextmanager
def chain_calls(monkeypatch, refuse: str | None = None):
    """Every JSON-RPC call this process makes (the transport under solana-py), with whether
    a database transaction was open at that moment; ``refuse`` makes that method's calls
    fail as an unreachable node would."""
    seen: list[tuple[str, bool]] = []
    real = httpx.Client.send

    def send_(self, request, **kwargs):
        body = json.loads(request.content)
        methods = [item["method"] for item in (body if isinstance(body, list) else [body])]
        seen.extend((method, connection.in_atomic_block) for method in methods)
        if refuse in methods:
            raise httpx.ConnectError("connection refused", request=request)
        return real(self, request, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(httpx.Client, "send", send_)
        yield seen


@pytest.fixture
def scene(api, tenant, chain):
    """A recorded managed account and a recorded (onboarded) Token-2022 mint, and a
    transaction sent by the service but not yet confirmed by it that moves lamports into
    the account, opens a token account of the mint and mints into it."""
    # The tests confirm the transaction themselves: the session's workers (whose pump would
    # send and confirm it first) are paused until the test ends.
    with paused_workers():
        authority, mint = mint_outside_the_service(chain, ExtensionType.PAUSABLE, lambda m, p: t22.initialize_pausable(mint=m, authority=p), decimals=DECIMALS)
        assert create(api, {**BOND, "alreadyOnchain": True, "mintAccount": {"onchainId": str(mint.pubkey())}}, wait=False).status_code == 201
        made = api.call("post", "/api/v1/accounts", {"itemData": {"managed": True, "offchainReferences": {"code": "RECEIVER"}}})
        assert made.status_code == 201, made.json()
        account = Account.unscoped.get(offchain_id=made.json()["newAccount"]["offchainId"])
        holder = Keypair().pubkey()
        token_account = get_associated_token_address(holder, mint.pubkey(), TOKEN_2022_PROGRAM_ID)
        with db_transaction.atomic():
            tx = services.transaction_prepare(
                tenant=tenant, cluster=CLUSTER, operation="test.transfer", submit=False,
                instructions=[
                    transfer(TransferParams(from_pubkey=authority.pubkey(), to_pubkey=Pubkey.from_string(account.address), lamports=3_000_000)),
                    create_associated_token_account(authority.pubkey(), holder, mint.pubkey(), TOKEN_2022_PROGRAM_ID),
                    mint_to_checked(MintToCheckedParams(program_id=TOKEN_2022_PROGRAM_ID, mint=mint.pubkey(), dest=token_account, mint_authority=authority.pubkey(), amount=7_000, decimals=DECIMALS)),
                ],
                signers=[SignerSpec(authority.pubkey(), managed_key_import(secret=str(authority)))],
            )
        Transaction.unscoped.filter(pk=tx.pk).update(submit_when_signed=True)
        assert settlement.transaction_submit(transaction_id=tx.pk)
        signature = Signature.from_string(tx.onchain_id)
        wait_for(lambda: chain.get_signature_statuses([signature]).value[0] is not None, what="the transaction")
        tx.refresh_from_db()
        yield {"tx": tx, "account": account, "instrument": FinancialInstrument.unscoped.get(address=str(mint.pubkey())),
               "authority": authority, "holder": holder, "token_account": token_account}


def applied(tx: Transaction) -> int:
    return TransactionEvent.objects.filter(transaction=tx, kind="EFFECTS_APPLIED").count()


@pytest.mark.django_db(transaction=True)
def test_confirmation_reads_the_chain_before_the_database_transaction(scene, chain, monkeypatch):
    tx, account, instrument = scene["tx"], scene["account"], scene["instrument"]
    with chain_calls(monkeypatch) as seen:
        settlement.transaction_confirm(transaction_id=tx.pk)
    assert [method for method, in_transaction in seen if in_transaction] == []
    methods = [method for method, _ in seen]
    assert methods.count("getTransaction") == 1 and methods.count("getMultipleAccounts") == 1, methods
    # the order within the slot of the recorded account's transactions (its lamports moved)
    assert methods.count("getSignaturesForAddress") == 1, methods

    # ...and the handlers still wrote what the chain says: the balance and its history...
    tx.refresh_from_db()
    account.refresh_from_db()
    assert tx.status == TransactionStatus.CONFIRMED and applied(tx) == 1
    assert int(account.lamports_balance) == chain.get_balance(Pubkey.from_string(account.address)).value == 3_000_000
    assert list(BalanceSnapshot.objects.filter(account=account, transaction=tx).values_list("lamports", flat=True)) == [3_000_000]
    # ...and the mint as it was read after the transaction confirmed.
    instrument.refresh_from_db()
    assert int(instrument.supply_onchain) == int(chain.get_token_supply(Pubkey.from_string(instrument.address)).value.amount) == 7_000
    assert instrument.last_transaction_id == tx.pk and instrument.synced_slot >= tx.slot


@pytest.mark.django_db(transaction=True)
def test_prefetched_facts_carry_lamport_and_token_balances_and_the_named_mints(scene, chain):
    tx, account, instrument = scene["tx"], scene["account"], scene["instrument"]
    facts = effects.prefetch(tx)
    record = facts.transaction
    meta = chain.get_transaction(Signature.from_string(tx.onchain_id), max_supported_transaction_version=0).value
    assert record.slot == meta.slot
    assert record.lamports[account.address] == (0, 3_000_000)
    assert record.tokens == {str(scene["token_account"]): TokenBalance(
        mint=instrument.address, owner=str(scene["holder"]), program_id=str(TOKEN_2022_PROGRAM_ID), decimals=DECIMALS,
        pre=0, post=7_000, opened=True, closed=False,
    )}
    assert int(meta.transaction.meta.post_token_balances[0].ui_token_amount.amount) == 7_000
    assert str(scene["token_account"]) in facts.addresses and instrument.address in facts.addresses
    # Only the recorded mint's data is asked for, read after the transaction landed.
    assert list(facts.accounts) == [instrument.address]
    assert facts.accounts[instrument.address].owner == TOKEN_2022_PROGRAM_ID and facts.accounts_slot >= record.slot


@pytest.mark.django_db(transaction=True)
def test_chain_outage_in_the_prefetch_claims_nothing_and_the_retry_applies_once(scene, monkeypatch):
    tx = scene["tx"]
    with chain_calls(monkeypatch, refuse="getTransaction"), pytest.raises(ChainUnavailable):
        settlement.transaction_confirm(transaction_id=tx.pk)
    tx.refresh_from_db()
    assert tx.status == TransactionStatus.SUBMITTED and tx.effects_applied_at is None and applied(tx) == 0
    settlement.transaction_confirm(transaction_id=tx.pk)  # the task's retry
    settlement.transaction_confirm(transaction_id=tx.pk)  # a second delivery: nothing more
    tx.refresh_from_db()
    assert tx.status in (TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED) and applied(tx) == 1


@pytest.mark.django_db(transaction=True)
def test_a_failed_read_of_the_order_within_a_slot_still_settles_the_pass(scene, chain, monkeypatch):
    """The order within a slot is an aid with a safe fallback (chain/slot_order.py): a node
    whose getSignaturesForAddress does not answer still has the pass settle its
    confirmations, with what each transaction's record says; the failure is noted once."""
    tx, account = scene["tx"], scene["account"]
    effects._ORDER_FAILING.discard(CLUSTER)
    with chain_calls(monkeypatch, refuse="getSignaturesForAddress") as seen:
        settlement.transactions_follow([Transaction.unscoped.get(pk=tx.pk)])  # one pass
    assert "getSignaturesForAddress" in [method for method, _ in seen] and CLUSTER in effects._ORDER_FAILING
    tx.refresh_from_db()
    account.refresh_from_db()
    assert tx.status in (TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED) and applied(tx) == 1
    assert int(account.lamports_balance) == chain.get_balance(Pubkey.from_string(account.address)).value == 3_000_000
    effects._ORDER_FAILING.discard(CLUSTER)


@pytest.mark.django_db(transaction=True)
def test_failure_effects_read_nothing_from_the_chain_inside_their_transaction(api, chain, monkeypatch):
    nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=3)
    payer = funded(chain, 10**9)
    assert api.call("post", "/api/v1/accounts", {"itemData": {"managed": False, "alreadyOnchain": True, "onchainId": str(payer.pubkey())}}).status_code == 201
    account, tx = held_account_create(api, payer, "DURABLE_NONCE", "CANCEL-ME")
    with chain_calls(monkeypatch) as seen:
        ending.transaction_cancel(transaction=tx)
    assert "sendTransaction" in [method for method, _ in seen]  # the nonce advance
    assert [method for method, in_transaction in seen if in_transaction] == []
    account.refresh_from_db()
    assert account.status == AccountStatus.FAILED


@pytest.mark.django_db(transaction=True)
def test_a_mint_read_older_than_the_record_never_moves_it_back(api, chain):
    authority, mint = mint_outside_the_service(chain, ExtensionType.PAUSABLE, lambda m, p: t22.initialize_pausable(mint=m, authority=p), decimals=DECIMALS)
    assert create(api, {**BOND, "alreadyOnchain": True, "mintAccount": {"onchainId": str(mint.pubkey())}}, wait=False).status_code == 201
    instrument = FinancialInstrument.unscoped.get(address=str(mint.pubkey()))
    older = read_mint(CLUSTER, instrument.address)
    holder = get_associated_token_address(authority.pubkey(), mint.pubkey(), TOKEN_2022_PROGRAM_ID)
    send(chain, authority, [
        create_associated_token_account(authority.pubkey(), authority.pubkey(), mint.pubkey(), TOKEN_2022_PROGRAM_ID),
        mint_to_checked(MintToCheckedParams(program_id=TOKEN_2022_PROGRAM_ID, mint=mint.pubkey(), dest=holder, mint_authority=authority.pubkey(), amount=500, decimals=DECIMALS)),
    ])
    next_slot(chain)
    newer = read_mint(CLUSTER, instrument.address)
    assert older.slot < newer.slot and (older.mint.supply, newer.mint.supply) == (0, 500)
    # Two workers' reads applied out of order: the later read wins whatever the order.
    instrument_sync(instrument=instrument, mint=newer)
    instrument_sync(instrument=instrument, mint=older)
    instrument.refresh_from_db()
    assert int(instrument.supply_onchain) == 500 and instrument.synced_slot == newer.slot
