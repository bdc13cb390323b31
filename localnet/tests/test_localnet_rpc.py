"""The local node through an unmodified SDK (solana-py Client), as a user would call it."""

import json
import urllib.request

import pytest
import solders.solders as solders_native
from solana.rpc.commitment import Confirmed
from solana.rpc.core import RPCException
from solana.rpc.types import MemcmpOpts, TokenAccountOpts, TxOpts
from solders.address_lookup_table_account import AddressLookupTable, AddressLookupTableAccount
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import Message
from solders.system_program import AdvanceNonceAccountParams, TransferParams, advance_nonce_account, transfer
from solders.transaction import VersionedTransaction
from spl.token.constants import TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID
from spl.token.instructions import CloseAccountParams, TransferCheckedParams, close_account, create_associated_token_account, get_associated_token_address, transfer_checked

from transactions.tests.chainkit import create_ata, create_mint, create_nonce, funded, mint_to, next_slot, nonce_value, send, wait

pytestmark = pytest.mark.chain


def raw_rpc(url, payload):
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as resp:
        return json.loads(resp.read())


def test_cluster_info(chain):
    assert chain.is_connected()
    assert chain.get_version().value.solana_core
    assert chain.get_genesis_hash().value == chain.get_genesis_hash().value
    first = chain.get_slot().value
    assert next_slot(chain) > first
    info = chain.get_epoch_info().value
    assert info.absolute_slot >= first and info.slots_in_epoch == 432000
    latest = chain.get_latest_blockhash().value
    assert latest.last_valid_block_height == chain.get_block_height().value + 150 or latest.last_valid_block_height > chain.get_block_height().value
    valid = raw_rpc(chain._provider.endpoint_uri, {"jsonrpc": "2.0", "id": 1, "method": "isBlockhashValid", "params": [str(latest.blockhash), {"commitment": "confirmed"}]})
    assert valid["result"]["value"] is True
    # At `finalized` (a validator's default) the newest blockhash is not in the rooted bank yet.
    rooted = raw_rpc(chain._provider.endpoint_uri, {"jsonrpc": "2.0", "id": 1, "method": "isBlockhashValid", "params": [str(latest.blockhash)]})
    assert rooted["result"]["value"] is False and rooted["result"]["context"]["slot"] < valid["result"]["context"]["slot"]
    invalid = raw_rpc(chain._provider.endpoint_uri, {"jsonrpc": "2.0", "id": 1, "method": "isBlockhashValid", "params": [str(Hash.new_unique())]})
    assert invalid["result"]["value"] is False
    assert chain.get_minimum_balance_for_rent_exemption(165).value == 2039280


def test_airdrop_and_sol_transfer(chain):
    payer = funded(chain, 5 * 10**9)
    assert chain.get_balance(payer.pubkey()).value == 5 * 10**9
    target = Keypair().pubkey()
    signature = send(chain, payer, [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=target, lamports=1_000_000))], v0=False)
    assert chain.get_balance(target).value == 1_000_000
    assert chain.get_balance(payer.pubkey()).value == 5 * 10**9 - 1_000_000 - 5000
    tx = chain.get_transaction(signature).value
    assert tx.transaction.meta.fee == 5000 and tx.transaction.meta.err is None
    sigs = chain.get_signatures_for_address(target).value
    assert [s.signature for s in sigs] == [signature]


@pytest.mark.parametrize("program", [TOKEN_PROGRAM_ID, TOKEN_2022_PROGRAM_ID], ids=["spl", "token2022"])
def test_token_mint_and_transfer_checked(chain, program):
    payer = funded(chain)
    owner = Keypair()
    mint = create_mint(chain, payer, program=program)
    source = create_ata(chain, payer, payer.pubkey(), mint, program)
    dest = create_ata(chain, payer, owner.pubkey(), mint, program)
    mint_to(chain, payer, mint, source, 1_000_000_000, program=program)
    signature = send(chain, payer, [transfer_checked(TransferCheckedParams(program_id=program, source=source, mint=mint, dest=dest, owner=payer.pubkey(), amount=2_500_000, decimals=6))])
    balance = chain.get_token_account_balance(dest).value
    assert balance.amount == "2500000" and balance.ui_amount_string == "2.5" and balance.decimals == 6
    assert chain.get_token_supply(mint).value.amount == "1000000000"
    by_owner = chain.get_token_accounts_by_owner(owner.pubkey(), TokenAccountOpts(mint=mint)).value
    assert [str(a.pubkey) for a in by_owner] == [str(dest)]
    parsed = chain.get_token_accounts_by_owner_json_parsed(owner.pubkey(), TokenAccountOpts(program_id=program)).value
    assert parsed[0].account.data.parsed["info"]["tokenAmount"]["amount"] == "2500000"
    # Token-2022 ATAs carry the ImmutableOwner extension (170 bytes), SPL ones are 165.
    size = 165 if program == TOKEN_PROGRAM_ID else 170
    accounts = chain.get_program_accounts(program, filters=[size, MemcmpOpts(offset=32, bytes=str(owner.pubkey()))]).value
    assert [str(a.pubkey) for a in accounts] == [str(dest)]
    tx = chain.get_transaction(signature, max_supported_transaction_version=0).value
    post = {b.account_index: b.ui_token_amount.amount for b in tx.transaction.meta.post_token_balances}
    assert sorted(post.values()) == ["2500000", "997500000"]
    b64 = chain.get_transaction(signature, encoding="base64", max_supported_transaction_version=0).value
    assert b64.transaction.transaction.signatures[0] == signature


@pytest.mark.parametrize("program", [TOKEN_PROGRAM_ID, TOKEN_2022_PROGRAM_ID], ids=["spl", "token2022"])
def test_transaction_meta_has_token_balances_before_and_after(chain, program):
    """pre/postTokenBalances in the standard shape: an account opened by the transaction is
    only in post, one it closed only in pre."""
    payer, holder = funded(chain), Keypair()
    mint = create_mint(chain, payer, decimals=6, program=program)
    source = create_ata(chain, payer, payer.pubkey(), mint, program)
    mint_to(chain, payer, mint, source, 5_250_000, program=program)
    dest = get_associated_token_address(holder.pubkey(), mint, program)
    signature = send(chain, payer, [
        create_associated_token_account(payer.pubkey(), holder.pubkey(), mint, program),
        transfer_checked(TransferCheckedParams(program_id=program, source=source, mint=mint, dest=dest, owner=payer.pubkey(), amount=5_250_000, decimals=6)),
        close_account(CloseAccountParams(program_id=program, account=source, dest=payer.pubkey(), owner=payer.pubkey())),
    ])
    found = chain.get_transaction(signature, max_supported_transaction_version=0).value
    keys = [str(k) for k in found.transaction.transaction.message.account_keys]
    meta = found.transaction.meta
    assert [(keys[b.account_index], b.ui_token_amount.amount) for b in meta.pre_token_balances] == [(str(source), "5250000")]
    assert [(keys[b.account_index], b.ui_token_amount.amount) for b in meta.post_token_balances] == [(str(dest), "5250000")]
    (before,), (after,) = meta.pre_token_balances, meta.post_token_balances
    assert (before.mint, before.owner, before.program_id) == (mint, payer.pubkey(), program)
    assert (after.mint, after.owner, after.program_id) == (mint, holder.pubkey(), program)
    assert after.ui_token_amount.decimals == 6 and after.ui_token_amount.ui_amount_string == "5.25"
    # The wire names, as the Solana JSON-RPC documents them.
    raw = raw_rpc(chain._provider.endpoint_uri, {"jsonrpc": "2.0", "id": 1, "method": "getTransaction", "params": [str(signature), {"encoding": "json", "maxSupportedTransactionVersion": 0, "commitment": "confirmed"}]})
    entry = raw["result"]["meta"]["postTokenBalances"][0]
    assert set(entry) == {"accountIndex", "mint", "owner", "programId", "uiTokenAmount"}
    assert entry["uiTokenAmount"] == {"amount": "5250000", "decimals": 6, "uiAmount": 5.25, "uiAmountString": "5.25"}


def test_v0_transaction_needs_max_supported_version(localnet_url, chain):
    payer = funded(chain)
    signature = send(chain, payer, [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=10**6))])
    answer = raw_rpc(localnet_url, {"jsonrpc": "2.0", "id": 1, "method": "getTransaction", "params": [str(signature), {"encoding": "json", "commitment": "confirmed"}]})
    assert answer["error"]["code"] == -32015


def test_preflight_failure_returns_logs_and_changes_nothing(chain):
    payer = funded(chain, 10**9)
    before = chain.get_balance(payer.pubkey()).value
    message = Message.new_with_blockhash([transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=5 * 10**9))], payer.pubkey(), chain.get_latest_blockhash().value.blockhash)
    with pytest.raises(RPCException) as err:
        chain.send_transaction(VersionedTransaction(message, [payer]))
    data = err.value.args[0].data
    assert any("insufficient lamports" in line for line in data.logs)
    assert chain.get_balance(payer.pubkey()).value == before


def test_skip_preflight_failure_lands_with_error(chain):
    payer = funded(chain, 10**9)
    message = Message.new_with_blockhash([transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=5 * 10**9))], payer.pubkey(), chain.get_latest_blockhash().value.blockhash)
    signature = chain.send_transaction(VersionedTransaction(message, [payer]), opts=TxOpts(skip_preflight=True)).value
    status = wait(chain, signature)
    assert status.err is not None
    assert chain.get_balance(payer.pubkey()).value == 10**9 - 5000  # the fee is paid


def test_unknown_blockhash_is_refused(chain):
    payer = funded(chain, 10**9)
    message = Message.new_with_blockhash([transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))], payer.pubkey(), Hash.new_unique())
    with pytest.raises(RPCException) as err:
        chain.send_transaction(VersionedTransaction(message, [payer]))
    assert "BlockhashNotFound" in str(err.value.args[0].data.err) or "Blockhash" in str(err.value)


def test_duplicate_signature_is_refused(chain):
    payer = funded(chain, 10**9)
    message = Message.new_with_blockhash([transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=10**6))], payer.pubkey(), chain.get_latest_blockhash().value.blockhash)
    tx = VersionedTransaction(message, [payer])
    wait(chain, chain.send_transaction(tx).value)
    with pytest.raises(RPCException, match="AlreadyProcessed|already been processed"):
        chain.send_transaction(tx)


def test_durable_nonce_transaction_and_used_nonce(chain):
    payer = funded(chain)
    nonce = create_nonce(chain, payer, payer.pubkey())
    next_slot(chain)
    stored = nonce_value(chain, nonce)
    target = Keypair().pubkey()
    ixs = [advance_nonce_account(AdvanceNonceAccountParams(nonce_pubkey=nonce, authorized_pubkey=payer.pubkey())), transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=target, lamports=777))]
    send(chain, payer, ixs, v0=False, blockhash=stored)
    assert chain.get_balance(target).value == 777
    assert nonce_value(chain, nonce) != stored
    # The same nonce value again (a new transaction using the old nonce) is refused.
    ixs[1] = transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=target, lamports=778))
    message = Message.new_with_blockhash(ixs, payer.pubkey(), stored)
    with pytest.raises(RPCException, match="Blockhash"):
        chain.send_transaction(VersionedTransaction(message, [payer]))
    # Advancing in consecutive transactions works as on a real cluster.
    next_slot(chain)
    current = nonce_value(chain, nonce)
    send(chain, payer, [ixs[0], transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=target, lamports=1))], v0=False, blockhash=current)
    assert chain.get_balance(target).value == 778


def test_v0_transaction_with_address_lookup_table(chain):
    payer = funded(chain)
    recent = chain.get_slot().value
    create_ix, table = solders_native.create_lookup_table({"authority_address": payer.pubkey(), "payer_address": payer.pubkey(), "recent_slot": recent})
    send(chain, payer, [create_ix])
    targets = [Keypair().pubkey() for _ in range(20)]
    send(chain, payer, [solders_native.extend_lookup_table({"lookup_table_address": table, "authority_address": payer.pubkey(), "payer_address": payer.pubkey(), "new_addresses": targets})])
    next_slot(chain)
    stored = AddressLookupTable.deserialize(bytes(chain.get_account_info(table).value.data))
    assert list(stored.addresses) == targets
    lookup = AddressLookupTableAccount(table, targets)
    ixs = [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=t, lamports=1_000_000)) for t in targets]
    signature = send(chain, payer, ixs, tables=[lookup])
    assert all(v == 1_000_000 for v in [chain.get_balance(t).value for t in targets[:3]])
    meta = chain.get_transaction(signature, max_supported_transaction_version=0).value.transaction.meta
    assert len(meta.loaded_addresses.writable) == 20


def test_simulate_transaction(chain):
    payer = funded(chain, 10**9)
    message = Message.new_with_blockhash([transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=5 * 10**9))], payer.pubkey(), chain.get_latest_blockhash().value.blockhash)
    result = chain.simulate_transaction(VersionedTransaction(message, [payer])).value
    assert result.err is not None and result.logs


def test_fee_for_message_and_prioritization_fees(chain):
    payer = funded(chain, 10**9)
    message = Message.new_with_blockhash([transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))], payer.pubkey(), chain.get_latest_blockhash().value.blockhash)
    assert chain.get_fee_for_message(message).value == 5000
    fees = raw_rpc(chain._provider.endpoint_uri, {"jsonrpc": "2.0", "id": 1, "method": "getRecentPrioritizationFees", "params": [[str(payer.pubkey())]]})["result"]
    assert fees and all(f["prioritizationFee"] >= 0 for f in fees)


def test_json_rpc_errors(localnet_url):
    assert raw_rpc(localnet_url, {"jsonrpc": "2.0", "id": 1, "method": "getNothing"})["error"]["code"] == -32601
    assert raw_rpc(localnet_url, {"jsonrpc": "2.0", "id": 1, "method": "getBalance", "params": ["not-a-key"]})["error"]["code"] == -32602
    assert raw_rpc(localnet_url, b"{nope")["error"]["code"] == -32700
    batch = raw_rpc(localnet_url, [{"jsonrpc": "2.0", "id": 1, "method": "getSlot"}, {"jsonrpc": "2.0", "id": 2, "method": "getHealth"}])
    assert [r["id"] for r in batch] == [1, 2] and batch[1]["result"] == "ok"


def test_signature_status_confirmations_grow(chain):
    payer = funded(chain, 10**9)
    signature = send(chain, payer, [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))])
    first = chain.get_signature_statuses([signature]).value[0]
    next_slot(chain)
    later = chain.get_signature_statuses([signature]).value[0]
    assert later.confirmations > first.confirmations


def test_history_methods_page_and_honour_commitment_as_a_validator(localnet_url, chain):
    """getSignaturesForAddress and getTransaction in the standard shape
    (solana.com/docs/rpc/http/getsignaturesforaddress, .../gettransaction): newest first,
    pages with `before`, nothing for an unknown `before`, `finalized` by default, no
    `processed`, memos formatted "[length] text"."""
    from solana.rpc.commitment import Finalized, Processed
    from solders.signature import Signature
    from spl.memo.constants import MEMO_PROGRAM_ID
    from spl.memo.instructions import MemoParams, create_memo

    payer = funded(chain, 10**9)
    target = Keypair().pubkey()
    sent = [send(chain, payer, [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=target, lamports=1_000_000 + i))]) for i in range(3)]
    memo = send(chain, payer, [create_memo(MemoParams(program_id=MEMO_PROGRAM_ID, signer=payer.pubkey(), message=b"invoice 42"))])

    newest_first = chain.get_signatures_for_address(target, commitment=Confirmed).value
    assert [s.signature for s in newest_first] == sent[::-1]
    assert {str(s.confirmation_status) for s in newest_first} == {"TransactionConfirmationStatus.Confirmed"}
    first_page = chain.get_signatures_for_address(target, limit=2, commitment=Confirmed).value
    second_page = chain.get_signatures_for_address(target, limit=2, before=first_page[-1].signature, commitment=Confirmed).value
    assert [s.signature for s in first_page + second_page] == sent[::-1]
    assert chain.get_signatures_for_address(target, until=sent[0], commitment=Confirmed).value[-1].signature == sent[1]
    # A `before` the node never saw: nothing (a validator does not restart from the newest).
    assert chain.get_signatures_for_address(target, before=Signature.new_unique(), commitment=Confirmed).value == []
    assert chain.get_signatures_for_address(payer.pubkey(), limit=1, commitment=Confirmed).value[0].memo == "[10] invoice 42"

    # `finalized` (the SDK's and the node's default) sees a transaction only 32 slots on.
    assert chain.get_signatures_for_address(target, commitment=Finalized).value == []
    assert chain.get_transaction(sent[0], commitment=Finalized, max_supported_transaction_version=0).value is None
    assert chain.get_transaction(sent[0], commitment=Confirmed, max_supported_transaction_version=0).value.slot == newest_first[-1].slot
    with pytest.raises(RPCException, match="commitment below `confirmed`"):
        chain.get_signatures_for_address(target, commitment=Processed)
    with pytest.raises(RPCException, match="commitment below `confirmed`"):
        chain.get_transaction(memo, commitment=Processed)
    with pytest.raises(RPCException, match="Invalid limit; max 1000"):
        chain.get_signatures_for_address(target, limit=0, commitment=Confirmed)
    with pytest.raises(RPCException, match="Invalid limit; max 1000"):
        chain.get_signatures_for_address(target, limit=1001, commitment=Confirmed)
    bad = raw_rpc(localnet_url, {"jsonrpc": "2.0", "id": 1, "method": "getSignaturesForAddress", "params": [str(target), {"before": "not-a-signature"}]})
    assert bad["error"]["code"] == -32602
    bad = raw_rpc(localnet_url, {"jsonrpc": "2.0", "id": 1, "method": "getTransaction", "params": ["not-a-signature", {"encoding": "json"}]})
    assert bad["error"]["code"] == -32602
    slot = chain.get_slot().value
    with pytest.raises(RPCException, match="Minimum context slot"):
        chain.get_signatures_for_address(target, commitment=Confirmed, min_context_slot=slot + 1000)


def test_nonce_stored_under_the_latest_blockhash_cannot_be_used_yet(chain):
    """As a validator: a durable nonce initialized (or advanced) under the current blockhash
    cannot be advanced until the next one — BlockhashNotFound; then it can."""
    payer = funded(chain)
    target = Keypair().pubkey()
    refused, accepted = False, 0
    for _ in range(10):  # the slot may turn between the creation and the send: try again
        nonce = create_nonce(chain, payer, payer.pubkey())
        created_in = chain.get_signatures_for_address(nonce, commitment=Confirmed).value[-1].slot
        stored = nonce_value(chain, nonce)
        ixs = [advance_nonce_account(AdvanceNonceAccountParams(nonce_pubkey=nonce, authorized_pubkey=payer.pubkey())), transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=target, lamports=1))]
        try:
            signature = chain.send_transaction(VersionedTransaction(Message.new_with_blockhash(ixs, payer.pubkey(), stored), [payer])).value
        except RPCException as err:
            assert "BlockhashNotFound" in str(err.args[0].data.err)
            refused = True
            break
        assert wait(chain, signature).slot > created_in  # accepted only under a newer blockhash
        accepted += 1
    assert refused
    next_slot(chain)
    send(chain, payer, ixs, v0=False, blockhash=stored)
    assert chain.get_balance(target).value == accepted + 1  # each accepted attempt moved 1 lamport too
