"""The transaction engine end to end: build, sign, submit and confirm on the local node
through a real Celery worker; partial signing; crash recovery; refusals."""

from __future__ import annotations

import pytest
from django.db import transaction as db_transaction
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import TransferParams, transfer
from spl.token.instructions import TransferCheckedParams, transfer_checked

from custody.services import managed_key_import
from ledger_project.api.errors import LedgerError
from ledger_project.base58 import b58decode
from tests.workers import wait_for
from transactions import collecting, nonce_pool, services, settlement
from chain.errors import SimulationFailed, TransactionTooLarge
from transactions.models import Transaction, TransactionEvent, TransactionStatus
from transactions.services import SignerSpec, TxConfig
from transactions.tests.chainkit import create_ata, create_mint, funded, mint_to
from chain.errors import ChainRefused
from ledger_project.api.errors import api_error

pytestmark = [pytest.mark.chain, pytest.mark.worker]
CLUSTER = "CHAIN_LOCALNET"


def managed(keypair: Keypair) -> SignerSpec:
    return SignerSpec(keypair.pubkey(), managed_key_import(secret=str(keypair)))


def prepare(tenant, instructions, signers=(), **kwargs) -> Transaction:
    with db_transaction.atomic():
        return services.transaction_prepare(tenant=tenant, cluster=CLUSTER, operation="test.transfer", instructions=instructions, signers=signers, **kwargs)


def settled(tx: Transaction, statuses=(TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED)) -> Transaction:
    def done():
        tx.refresh_from_db()
        return tx.status in statuses
    wait_for(done, timeout=40, what=f"transaction {tx.onchain_id} to reach {statuses}")
    return tx


def effects_applied(tx: Transaction) -> int:
    return TransactionEvent.objects.filter(transaction=tx, kind="EFFECTS_APPLIED").count()


@pytest.mark.django_db(transaction=True)
def test_sol_transfer_is_submitted_confirmed_and_visible_to_an_sdk(celery_worker_process, tenant, chain):
    source = funded(chain, 2 * 10**9)
    target = Keypair().pubkey()
    tx = prepare(tenant, [transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=target, lamports=250_000_000))], [managed(source)])
    assert tx.status == TransactionStatus.SIGNED and tx.onchain_id
    settled(tx)
    assert tx.confirmations_count is not None and tx.slot
    assert effects_applied(tx) == 1
    assert chain.get_balance(target).value == 250_000_000
    assert chain.get_transaction(Signature.from_string(tx.onchain_id), max_supported_transaction_version=0).value is not None
    settled(tx, (TransactionStatus.FINALIZED,))
    assert effects_applied(tx) == 1


@pytest.mark.django_db(transaction=True)
def test_spl_transfer_checked_built_by_engine(celery_worker_process, tenant, chain):
    issuer = funded(chain)
    holder = Keypair()
    mint = create_mint(chain, issuer)
    source = create_ata(chain, issuer, holder.pubkey(), mint)
    dest = create_ata(chain, issuer, Keypair().pubkey(), mint)
    mint_to(chain, issuer, mint, source, 10_000_000)
    ix = transfer_checked(TransferCheckedParams(program_id=Pubkey.from_string("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"), source=source, mint=mint, dest=dest, owner=holder.pubkey(), amount=3_000_000, decimals=6))
    tx = prepare(tenant, [ix], [managed(holder)], config=TxConfig(version="LEGACY", commitment="processed"))
    settled(tx)
    assert chain.get_token_account_balance(dest).value.amount == "3000000"
    assert chain.get_token_account_balance(source).value.amount == "7000000"


@pytest.mark.django_db(transaction=True)
def test_durable_nonce_transaction_waits_for_an_unmanaged_signature(celery_worker_process, tenant, chain):
    nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=3)
    outsider = funded(chain, 10**9)  # its key is not held by the service
    target = Keypair().pubkey()
    ix = transfer(TransferParams(from_pubkey=outsider.pubkey(), to_pubkey=target, lamports=5_000_000))
    tx = prepare(tenant, [ix], [SignerSpec(outsider.pubkey(), None)], config=TxConfig(lifetime="DURABLE_NONCE"))
    assert tx.status == TransactionStatus.PARTIALLY_SIGNED
    assert tx.missing_signers == [str(outsider.pubkey())]
    assert tx.nonce_account and tx.last_valid_block_height is None
    # The signature arrives later, computed off platform over the stored message.
    signature = outsider.sign_message(bytes(tx.message))
    with db_transaction.atomic():
        collecting.transaction_add_signatures(transaction=tx, signatures={str(outsider.pubkey()): str(signature)})
    settled(tx)
    assert chain.get_balance(target).value == 5_000_000


@pytest.mark.django_db(transaction=True)
def test_bad_off_platform_signature_is_refused(celery_worker_process, tenant, chain):
    nonce_pool.nonce_pool_fill(cluster=CLUSTER, target=3)
    outsider = funded(chain, 10**9)
    ix = transfer(TransferParams(from_pubkey=outsider.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))
    tx = prepare(tenant, [ix], [SignerSpec(outsider.pubkey(), None)], config=TxConfig(lifetime="DURABLE_NONCE"))
    forged = Keypair().sign_message(bytes(tx.message))
    with pytest.raises(LedgerError) as err:
        collecting.transaction_add_signatures(transaction=tx, signatures={str(outsider.pubkey()): str(forged)})
    assert err.value.code == "INVALID_SIGNATURE"
    with pytest.raises(LedgerError) as err:
        collecting.transaction_add_signatures(transaction=tx, signatures={str(Keypair().pubkey()): str(forged)})
    assert err.value.code == "NOT_A_SIGNER"
    tx.refresh_from_db()
    assert tx.status == TransactionStatus.PARTIALLY_SIGNED


@pytest.mark.django_db(transaction=True)
def test_oversize_transaction_is_refused_before_submission(localnet_url, tenant, chain):
    source = funded(chain, 10**9)
    ixs = [transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1)) for _ in range(40)]
    with pytest.raises(TransactionTooLarge, match="at most 1232"):
        prepare(tenant, ixs, [managed(source)], config=TxConfig(version="LEGACY"))
    assert Transaction.unscoped.count() == 0


@pytest.mark.django_db(transaction=True)
def test_simulation_failure_is_a_400_with_the_programs_reason(localnet_url, tenant, chain):
    source = funded(chain, 10**8)
    ix = transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=Keypair().pubkey(), lamports=10**12))
    with pytest.raises(SimulationFailed) as err:
        prepare(tenant, [ix], [managed(source)])
    assert api_error(err.value).status_code == 400 and "insufficient lamports" in err.value.message
    assert Transaction.unscoped.count() == 0


@pytest.mark.django_db(transaction=True)
def test_an_account_that_is_not_a_lookup_table_is_a_400_not_a_crash(localnet_url, tenant, chain):
    # Found by schemathesis (ST101, a 500): addressLookupTables naming the System program —
    # an account that exists but is no lookup table — failed to deserialize.
    source = funded(chain, 10**8)
    ix = transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))
    signer = managed(source)
    for table in (Pubkey.from_string("11111111111111111111111111111111"), source.pubkey()):
        with pytest.raises(ChainRefused) as err:
            prepare(tenant, [ix], [signer], config=TxConfig(lookup_tables=(table,)))
        answer = api_error(err.value)  # the chain's path, named in the request by the API's door
        assert (answer.status_code, answer.code, answer.field) == (400, "INVALID_LOOKUP_TABLE", "svmTransactionConfig.addressLookupTables[0]")
        assert str(table) in err.value.message
    assert Transaction.unscoped.count() == 0


@pytest.mark.django_db(transaction=True)
def test_compute_budget_and_priority_fee_are_applied(celery_worker_process, tenant, chain):
    source = funded(chain, 10**9)
    ix = transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1000))
    from chain.builder import ComputeUnits

    tx = prepare(tenant, [ix], [managed(source)], config=TxConfig(compute=ComputeUnits(limit=10_000, price=1_000_000)))
    settled(tx)

    found = chain.get_transaction(Signature.from_string(tx.onchain_id), max_supported_transaction_version=0).value.transaction
    keys = found.transaction.message.account_keys
    program_ids = [str(keys[ix.program_id_index]) for ix in found.transaction.message.instructions]
    assert program_ids[:2] == ["ComputeBudget111111111111111111111111111111"] * 2
    limit_ix, price_ix = found.transaction.message.instructions[:2]
    assert b58decode(limit_ix.data) == bytes([2]) + (10_000).to_bytes(4, "little")
    assert b58decode(price_ix.data) == bytes([3]) + (1_000_000).to_bytes(8, "little")
    meta = found.meta
    assert meta.pre_balances[0] - meta.post_balances[0] == meta.fee  # what the fee payer really paid


@pytest.mark.django_db(transaction=True)
def test_worker_killed_between_submit_and_confirm_loses_nothing(celery_worker_process, tenant, chain):
    source = funded(chain, 10**9)
    target = Keypair().pubkey()
    celery_worker_process.kill()
    try:
        tx = prepare(tenant, [transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=target, lamports=42_000))], [managed(source)])
        # What the dead worker did before dying: claim and send, but never confirm.
        assert settlement.transaction_submit(transaction_id=tx.pk) is True
        tx.refresh_from_db()
        assert tx.status == TransactionStatus.SUBMITTED
    finally:
        celery_worker_process.start()
    settled(tx)
    # The queued submit task ran again on the new worker and found nothing to do.
    wait_for(lambda: chain.get_balance(target).value == 42_000, what="the transfer")
    assert effects_applied(tx) == 1
    assert TransactionEvent.objects.filter(transaction=tx, kind="SUBMITTED").count() == 1
    assert chain.get_balance(target).value == 42_000


@pytest.mark.django_db(transaction=True)
def test_status_endpoint_follows_a_transaction_and_hides_other_tenants(celery_worker_process, tenant, api, other_api, chain):
    source = funded(chain, 10**9)
    tx = prepare(tenant, [transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))], [managed(source)])
    settled(tx)
    body = {"itemData": {"transaction": {"offchainId": str(tx.offchain_id)}}}
    response = api.call("post", "/api/v1/transactions/single/status", body)
    assert response.status_code == 200
    result = response.json()
    assert set(result) == {"success", "offchainId", "status", "onchainId", "confirmationsCount", "serializedMessage", "errorMessage", "txnTimestamp"}
    assert result["success"] is True and result["onchainId"] == tx.onchain_id and result["status"] in ("CONFIRMED", "FINALIZED")
    assert result["txnTimestamp"].endswith("Z") and "." in result["txnTimestamp"]
    by_signature = api.call("post", "/api/v1/transactions/single/status", {"itemData": {"transaction": {"onchainId": tx.onchain_id}}})
    assert by_signature.json()["offchainId"] == str(tx.offchain_id)
    hidden = other_api.call("post", "/api/v1/transactions/single/status", body)
    missing = api.call("post", "/api/v1/transactions/single/status", {"itemData": {"transaction": {"offchainId": "00000000-0000-0000-0000-000000000000"}}})
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json()["errors"] == missing.json()["errors"]
    assert api.call("post", "/api/v1/transactions/single/status", {"itemData": {"transaction": {}}}).status_code == 400


@pytest.mark.django_db(transaction=True)
def test_inflight_transaction_survives_restart_of_node_and_worker(tmp_path, settings, tenant, celery_worker_process):
    from solana.rpc.api import Client
    from solana.rpc.commitment import Confirmed

    from tests.workers import WorkerProcess, new_queue_name, route_tasks_to
    from localnet.testing import LocalnetProcess

    node = LocalnetProcess(tmp_path / "node").start()
    queue = new_queue_name()
    route_tasks_to(queue)
    settings.LEDGER_CLUSTERS = {**settings.LEDGER_CLUSTERS, CLUSTER: node.url}
    worker = WorkerProcess(queue, extra_env={"LEDGER_LOCALNET_RPC_URL": node.url})
    # The session's worker knows CLUSTER by the shared node's URL: its pump would follow
    # this transaction on the wrong node (in a deployment every worker has one URL per cluster).
    celery_worker_process.stop()
    try:
        client = Client(node.url, timeout=10, commitment=Confirmed)  # reads at `finalized` would lag 32 slots
        source = funded(client, 10**9)
        target = Keypair().pubkey()
        tx = prepare(tenant, [transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=target, lamports=31_337))], [managed(source)])
        assert settlement.transaction_submit(transaction_id=tx.pk) is True
        node.kill()  # the node dies right after accepting it; the worker never ran
        node.start()
        worker.start()
        settled(tx)
        assert client.get_balance(target).value == 31_337
        worker.kill()
        worker.start()
        settled(tx, (TransactionStatus.FINALIZED,))
        assert effects_applied(tx) == 1 and client.get_balance(target).value == 31_337
    finally:
        worker.stop()
        node.stop()
        route_tasks_to(celery_worker_process.queue)
        celery_worker_process.start()


@pytest.mark.django_db(transaction=True)
def test_wait_returns_once_the_level_is_reached(celery_worker_process, tenant, chain):
    from transactions.responses import wait_for

    source = funded(chain, 10**9)
    signer = managed(source)
    tx = prepare(tenant, [transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))], [signer])
    assert wait_for(tx, "confirmed", timeout=30).status in (TransactionStatus.CONFIRMED, TransactionStatus.FINALIZED)
    held = prepare(tenant, [transfer(TransferParams(from_pubkey=source.pubkey(), to_pubkey=Keypair().pubkey(), lamports=2))], [signer], submit=False)
    assert wait_for(held, "confirmed", timeout=5).status == TransactionStatus.SIGNED  # held: returns at once
