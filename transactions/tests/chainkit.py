"""Small helpers for tests that talk to a node with an unmodified Solana SDK (solana-py)."""

from __future__ import annotations

import time

from solana.rpc.api import Client
from solders.hash import Hash
from solders.instruction import Instruction
from solders.keypair import Keypair
from solders.message import Message, MessageV0
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import CreateAccountParams, InitializeNonceAccountParams, create_account, initialize_nonce_account
from solders.transaction import VersionedTransaction
from spl.token.constants import TOKEN_PROGRAM_ID
from spl.token.instructions import (
    InitializeMintParams,
    MintToCheckedParams,
    create_associated_token_account,
    get_associated_token_address,
    initialize_mint,
    mint_to_checked,
)

SYSTEM_PROGRAM = Pubkey.from_string("11111111111111111111111111111111")


def funded(client: Client, lamports: int = 10 * 10**9) -> Keypair:
    keypair = Keypair()
    wait(client, client.request_airdrop(keypair.pubkey(), lamports).value)
    return keypair


def wait(client: Client, signature: Signature, timeout: float = 20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.get_signature_statuses([signature]).value[0]
        if status is not None:
            return status
        time.sleep(0.05)
    raise AssertionError(f"{signature} did not land")


def send(client: Client, payer: Keypair, instructions: list[Instruction], signers=(), *, v0: bool = True, blockhash: Hash | None = None, tables=()) -> Signature:
    blockhash = blockhash or client.get_latest_blockhash().value.blockhash
    if v0:
        message = MessageV0.try_compile(payer.pubkey(), instructions, list(tables), blockhash)
    else:
        message = Message.new_with_blockhash(instructions, payer.pubkey(), blockhash)
    tx = VersionedTransaction(message, [payer, *signers])
    signature = client.send_transaction(tx).value
    status = wait(client, signature)
    assert status.err is None, status
    return signature


def create_mint(client: Client, payer: Keypair, *, decimals: int = 6, program: Pubkey = TOKEN_PROGRAM_ID, authority: Pubkey | None = None) -> Pubkey:
    mint = Keypair()
    rent = client.get_minimum_balance_for_rent_exemption(82).value
    send(client, payer, [
        create_account(CreateAccountParams(from_pubkey=payer.pubkey(), to_pubkey=mint.pubkey(), lamports=rent, space=82, owner=program)),
        initialize_mint(InitializeMintParams(decimals=decimals, mint=mint.pubkey(), mint_authority=authority or payer.pubkey(), freeze_authority=None, program_id=program)),
    ], [mint])
    return mint.pubkey()


def create_ata(client: Client, payer: Keypair, owner: Pubkey, mint: Pubkey, program: Pubkey = TOKEN_PROGRAM_ID) -> Pubkey:
    send(client, payer, [create_associated_token_account(payer.pubkey(), owner, mint, program)])
    return get_associated_token_address(owner, mint, program)


def mint_to(client: Client, payer: Keypair, mint: Pubkey, dest: Pubkey, amount: int, decimals: int = 6, program: Pubkey = TOKEN_PROGRAM_ID):
    return send(client, payer, [mint_to_checked(MintToCheckedParams(program_id=program, mint=mint, dest=dest, mint_authority=payer.pubkey(), amount=amount, decimals=decimals))])


def create_nonce(client: Client, payer: Keypair, authority: Pubkey) -> Pubkey:
    nonce = Keypair()
    rent = client.get_minimum_balance_for_rent_exemption(80).value
    send(client, payer, [
        create_account(CreateAccountParams(from_pubkey=payer.pubkey(), to_pubkey=nonce.pubkey(), lamports=rent, space=80, owner=SYSTEM_PROGRAM)),
        initialize_nonce_account(InitializeNonceAccountParams(nonce_pubkey=nonce.pubkey(), authority=authority)),
    ], [nonce], v0=False)
    return nonce.pubkey()


def nonce_value(client: Client, nonce: Pubkey) -> Hash:
    return Hash(bytes(client.get_account_info(nonce).value.data[40:72]))


def next_slot(client: Client, timeout: float = 5) -> int:
    start = client.get_slot().value
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        slot = client.get_slot().value
        if slot > start:
            return slot
        time.sleep(0.05)
    raise AssertionError("the slot did not advance")


def hold_pump(cluster: str, holder: str) -> bool:
    """Take (or renew) every pump shard lease of ``cluster`` for ``holder``, so that no
    worker's pump touches the cluster while a test drives passes itself; whether all are
    this holder's."""
    from transactions import pump
    from transactions.shards import shard_count

    return all([pump.lease_take(cluster, holder, shard) for shard in range(shard_count())])


def wallet(api, lamports: int = 0, **item) -> dict:
    """A confirmed WALLET made through the API (managed unless told), seeded with
    ``lamports`` (the funder: the localnet airdrop funding the test turns on); its lookup."""
    data = {"managed": True, "offchainReferences": {"type": "WALLET"}, **item}
    if lamports:
        data["seed"] = {"lamports": lamports}
    response = api.call("post", "/api/v1/accounts?wait=confirmed", {"itemData": data})
    assert response.status_code == 201, response.json()
    return {"offchainId": response.json()["newAccount"]["offchainId"], "onchainId": response.json()["newAccount"]["onchainId"]}


def rpc_method_name(fn, args) -> str:
    """The name a call through ``ChainRpc._call`` is counted under: solana-py's Client method
    (get_latest_blockhash), or, for a typed solders request sent through the provider (a read
    that carries minContextSlot: chain/floor.py), the same name made from the request's type."""
    import re

    name = getattr(fn, "__name__", "?")
    request = args[0] if args else None
    if request is not None and type(request).__module__ == "solders.rpc.requests":
        return re.sub(r"(?<!^)(?=[A-Z])", "_", type(request).__name__).lower()
    return name
