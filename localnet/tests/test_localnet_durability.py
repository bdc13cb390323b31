"""The local node survives kill -9: state, history and the slot carry over a restart."""

import pytest
import solders.solders as solders_native
from solana.rpc.api import Client
from solana.rpc.commitment import Confirmed
from solana.rpc.core import RPCException
from solders.address_lookup_table_account import AddressLookupTable
from solders.keypair import Keypair
from solders.message import Message
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction

from localnet.testing import LocalnetProcess
from transactions.tests.chainkit import create_ata, create_mint, create_nonce, funded, mint_to, next_slot, nonce_value, send

pytestmark = pytest.mark.chain


def test_state_and_history_survive_kill_9(tmp_path):
    node = LocalnetProcess(tmp_path / "data").start()
    try:
        client = Client(node.url, timeout=10, commitment=Confirmed)
        genesis = client.get_genesis_hash().value
        payer = funded(client)
        owner = Keypair().pubkey()
        mint = create_mint(client, payer)
        dest = create_ata(client, payer, owner, mint)
        mint_to(client, payer, mint, dest, 4_200)
        nonce = create_nonce(client, payer, payer.pubkey())
        recent = client.get_slot().value
        create_ix, table = solders_native.create_lookup_table({"authority_address": payer.pubkey(), "payer_address": payer.pubkey(), "recent_slot": recent})
        send(client, payer, [create_ix])
        send(client, payer, [solders_native.extend_lookup_table({"lookup_table_address": table, "authority_address": payer.pubkey(), "payer_address": payer.pubkey(), "new_addresses": [owner]})])
        message = Message.new_with_blockhash([transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=owner, lamports=123_456))], payer.pubkey(), client.get_latest_blockhash().value.blockhash)
        last_tx = VersionedTransaction(message, [payer])
        last_sig = client.send_transaction(last_tx).value
        next_slot(client)
        before = {
            "payer": client.get_balance(payer.pubkey()).value,
            "owner": client.get_balance(owner).value,
            "supply": client.get_token_supply(mint).value.amount,
            "token": client.get_token_account_balance(dest).value.amount,
            "nonce": nonce_value(client, nonce),
            "slot": client.get_slot().value,
        }

        node.kill()
        node.start()

        assert client.get_genesis_hash().value == genesis
        assert client.get_balance(payer.pubkey()).value == before["payer"]
        assert client.get_balance(owner).value == before["owner"] == 123_456
        assert client.get_token_supply(mint).value.amount == before["supply"] == "4200"
        assert client.get_token_account_balance(dest).value.amount == before["token"]
        assert nonce_value(client, nonce) == before["nonce"]
        assert list(AddressLookupTable.deserialize(bytes(client.get_account_info(table).value.data)).addresses) == [owner]
        assert client.get_slot().value > before["slot"]
        status = client.get_signature_statuses([last_sig]).value[0]
        assert status is not None and status.err is None
        assert client.get_transaction(last_sig).value.transaction.meta.fee == 5000
        assert str(last_sig) in [str(s.signature) for s in client.get_signatures_for_address(owner).value]
        with pytest.raises(RPCException, match="AlreadyProcessed|already been processed|Blockhash"):
            client.send_transaction(last_tx)
        # The node keeps working: new transactions, and the old nonce still advances.
        send(client, payer, [transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=owner, lamports=1))])
        assert client.get_balance(owner).value == 123_457
    finally:
        node.stop()
