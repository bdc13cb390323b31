"""Helpers for the price_feed program's tests on a real local node, driven with an
unmodified solana-py client and solders transactions (no service in between)."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import pytest
from solana.rpc.api import Client
from solana.rpc.core import RPCException
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.transaction import Transaction
from solders.transaction_status import InstructionErrorCustom, TransactionErrorInstructionError

from programs.price_feed import client
from transactions.tests.chainkit import create_mint, funded, send

PRICE_FEED = client.LOCALNET_PROGRAM_ID
SYSVAR_CLOCK = Pubkey.from_string("SysvarC1ock11111111111111111111111111111111")
JOB = "GET https://prices.example/v1/ACME?field=last"


def _transaction(chain: Client, payer: Keypair, instructions: list[Instruction], signers) -> Transaction:
    message = Message(instructions, payer.pubkey())
    # Sign with whichever of ``signers`` the message asks for (negative tests drop signer
    # flags from instructions and keep the same signer list).
    required = set(message.account_keys[:message.header.num_required_signatures])
    unique = {payer.pubkey(): payer}
    for s in signers:
        if s.pubkey() in required:
            unique.setdefault(s.pubkey(), s)
    return Transaction(list(unique.values()), message, chain.get_latest_blockhash().value.blockhash)


def refused(chain: Client, payer: Keypair, instructions: list[Instruction] | Instruction, signers=(), *, index: int | None = None) -> str:
    """Send ``instructions``; they must fail in preflight with a price_feed error (raised by
    instruction ``index`` when given): its name."""
    instructions = [instructions] if isinstance(instructions, Instruction) else instructions
    with pytest.raises(RPCException) as failure:
        chain.send_transaction(_transaction(chain, payer, instructions, signers))
    detail = failure.value.args[0].data
    assert any(line.startswith(f"Program {PRICE_FEED} failed: custom program error") for line in detail.logs), detail.logs
    assert isinstance(detail.err, TransactionErrorInstructionError) and isinstance(detail.err.err, InstructionErrorCustom), detail.err
    if index is not None:
        assert detail.err.index == index, detail.err
    return client.error_name(detail.err.err.code)


def node_clock(chain: Client) -> tuple[int, int]:
    """The node's Clock sysvar (slot, unix_timestamp), read as any client would."""
    data = bytes(chain.get_account_info(SYSVAR_CLOCK).value.data)
    slot, _, _, _, unix_timestamp = struct.unpack_from("<QqQQq", data)
    return slot, unix_timestamp


def account_data(chain: Client, address: Pubkey) -> bytes | None:
    account = chain.get_account_info(address).value
    return bytes(account.data) if account is not None else None


def landed_slot(chain: Client, signature: Signature) -> int:
    return chain.get_signature_statuses([signature]).value[0].slot


def compute_units(chain: Client, signature: Signature) -> int:
    return chain.get_transaction(signature, max_supported_transaction_version=0).value.transaction.meta.compute_units_consumed


def flagged(ix: Instruction, index: int, *, signer: bool | None = None, writable: bool | None = None, key: Pubkey | None = None) -> Instruction:
    """``ix`` with account ``index`` re-flagged or replaced by ``key``."""
    accounts = list(ix.accounts)
    m = accounts[index]
    accounts[index] = AccountMeta(key or m.pubkey, is_signer=m.is_signer if signer is None else signer, is_writable=m.is_writable if writable is None else writable)
    return Instruction(ix.program_id, ix.data, accounts)


@dataclass
class FeedWorld:
    """A funded payer, an authority, a mint and (after ``create``) a feed on the shared node."""

    chain: Client
    payer: Keypair
    authority: Keypair
    mint: Pubkey
    feed: Keypair | None = None

    @classmethod
    def new(cls, chain: Client, **mint_args) -> "FeedWorld":
        payer = funded(chain, 20 * 10**9)
        return cls(chain, payer, Keypair(), create_mint(chain, payer, decimals=0, **mint_args))

    def create_ixs(self, feed: Keypair, *, exponent: int = -8, max_staleness: int = 3_600, job: str = JOB, space_owner: Pubkey = PRICE_FEED) -> list[Instruction]:
        lamports = self.chain.get_minimum_balance_for_rent_exemption(client.FEED_SIZE).value
        create = client.create_feed_account(space_owner, payer=self.payer.pubkey(), feed=feed.pubkey(), lamports=lamports)
        init = client.initialize(PRICE_FEED, feed=feed.pubkey(), authority=self.authority.pubkey(), mint=self.mint, exponent=exponent, max_staleness=max_staleness, job_hash=client.job_hash(job))
        return [create, init]

    def create(self, **kw) -> Pubkey:
        self.feed = Keypair()
        send(self.chain, self.payer, self.create_ixs(self.feed, **kw), [self.feed, self.authority], v0=False)
        return self.feed.pubkey()

    def update_ix(self, round: int, value: int, observed_at: int, authority: Keypair | None = None) -> Instruction:
        authority = authority or self.authority
        return client.update(PRICE_FEED, feed=self.feed.pubkey(), authority=authority.pubkey(), round=round, value=value, observed_at=observed_at)

    def update(self, round: int, value: int, observed_at: int) -> Signature:
        return send(self.chain, self.payer, [self.update_ix(round, value, observed_at)], [self.authority], v0=False)

    def refused(self, instructions, signers=(), **kw) -> str:
        """Refused with nothing changed in the feed: the error's name."""
        before = account_data(self.chain, self.feed.pubkey()) if self.feed else None
        name = refused(self.chain, self.payer, instructions, [self.authority, *signers], **kw)
        if self.feed:
            assert account_data(self.chain, self.feed.pubkey()) == before
        return name

    def state(self) -> client.FeedState:
        return client.decode_feed(account_data(self.chain, self.feed.pubkey()))
