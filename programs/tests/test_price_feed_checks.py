"""Every check of the price_feed program refusing on the shared local node with its own
Custom(code), the feed's bytes unchanged: wrong authority, missing signatures, rounds and
observations out of order, stale and future readings, bad accounts (owner, size, kind,
writability), bad settings, closing into the feed itself, and a closed feed reused."""

from __future__ import annotations

import pytest
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.system_program import CreateAccountParams, TransferParams, create_account, transfer

from programs.price_feed import abi, client
from programs.tests.feedkit import PRICE_FEED, FeedWorld, account_data, flagged, node_clock
from transactions.tests.chainkit import SYSTEM_PROGRAM, create_ata, send

pytestmark = pytest.mark.chain


@pytest.fixture
def world(chain):
    w = FeedWorld.new(chain)
    w.create(max_staleness=600)
    return w


def test_only_the_recorded_authority_signing_may_act(world):
    _, now = node_clock(world.chain)
    stranger = Keypair()
    feed, authority = world.feed.pubkey(), world.authority.pubkey()
    assert world.refused(world.update_ix(1, 1, now, authority=stranger), [stranger]) == "AuthorityMismatch"
    assert world.refused(client.set_authority(PRICE_FEED, feed=feed, authority=stranger.pubkey(), new_authority=stranger.pubkey()), [stranger]) == "AuthorityMismatch"
    assert world.refused(client.set_job_hash(PRICE_FEED, feed=feed, authority=stranger.pubkey(), job_hash=bytes(32)), [stranger]) == "AuthorityMismatch"
    assert world.refused(client.close(PRICE_FEED, feed=feed, authority=stranger.pubkey(), recipient=stranger.pubkey()), [stranger]) == "AuthorityMismatch"
    # The right key, not signing.
    assert world.refused(flagged(world.update_ix(1, 1, now), 1, signer=False)) == "AuthorityNotSigner"
    assert world.refused(flagged(client.close(PRICE_FEED, feed=feed, authority=authority, recipient=stranger.pubkey()), 1, signer=False)) == "AuthorityNotSigner"
    assert world.refused(client.set_authority(PRICE_FEED, feed=feed, authority=authority, new_authority=Pubkey.default())) == "ZeroAuthority"
    assert world.state().round == 0 and world.state().authority == authority


def test_rounds_and_observations_only_move_forward(world):
    _, now = node_clock(world.chain)
    world.update(5, 100, now - 10)
    assert world.refused(world.update_ix(5, 101, now - 5)) == "OutOfOrder"  # the same round again
    assert world.refused(world.update_ix(4, 101, now - 5)) == "OutOfOrder"  # an older round
    assert world.refused(world.update_ix(6, 101, now - 11)) == "OutOfOrder"  # an older observation
    # The very update again, in a new transaction (another fee payer, a new blockhash): a replay.
    world.payer = FeedWorld.new(world.chain).payer
    assert world.refused(world.update_ix(5, 100, now - 10)) == "OutOfOrder"
    world.update(9, 102, now - 10)  # gaps are allowed, and an equal observation time
    assert (world.state().round, world.state().value) == (9, 102)


def test_stale_and_future_readings_are_refused_against_the_node_clock(world):
    _, now = node_clock(world.chain)
    # max_staleness 600: an observation 700 s old is stale; one 120 s ahead is from the future.
    assert world.refused(world.update_ix(1, 1, now - 700)) == "Stale"
    assert world.refused(world.update_ix(1, 1, now + 120)) == "FromFuture"
    assert world.refused(world.update_ix(1, 1, 1)) == "Stale"
    assert world.refused(world.update_ix(1, 1, 2**63 - 1)) == "FromFuture"  # no overflow at the extremes
    assert world.refused(world.update_ix(1, 1, -(2**63))) == "OutOfOrder"  # before the last observation (0 before any)
    world.update(1, 1, now + 30)  # within the 60 s allowance
    assert world.state().observed_at == now + 30


def test_the_feed_account_must_be_a_writable_feed_of_this_program(world):
    chain, payer = world.chain, world.payer
    _, now = node_clock(chain)
    update = world.update_ix(1, 1, now)
    assert world.refused(flagged(update, 0, writable=False)) == "FeedNotWritable"
    assert world.refused(flagged(update, 0, key=Keypair().pubkey())) == "FeedNotFound"  # no account there
    assert world.refused(flagged(update, 0, key=world.mint)) == "FeedWrongOwner"  # a token program's account
    assert world.refused(flagged(update, 0, key=payer.pubkey())) == "FeedWrongOwner"  # a wallet
    # The program's own account of the right size, never initialized: not a feed (kind 0).
    bare = Keypair()
    lamports = chain.get_minimum_balance_for_rent_exemption(client.FEED_SIZE).value
    send(chain, payer, [client.create_feed_account(PRICE_FEED, payer=payer.pubkey(), feed=bare.pubkey(), lamports=lamports)], [bare], v0=False)
    assert world.refused(flagged(update, 0, key=bare.pubkey())) == "FeedInvalid"
    # A system-owned account of the feed's size, and a program account of another size.
    other = Keypair()
    ixs = world.create_ixs(other, space_owner=SYSTEM_PROGRAM)
    assert world.refused(ixs, [other], index=1) == "FeedWrongOwner"
    small = Keypair()
    create_small = create_account(CreateAccountParams(from_pubkey=payer.pubkey(), to_pubkey=small.pubkey(), lamports=lamports, space=client.FEED_SIZE - 8, owner=PRICE_FEED))
    assert world.refused([create_small, world.create_ixs(small)[1]], [small], index=1) == "FeedWrongSize"
    assert chain.get_account_info(small.pubkey()).value is None and chain.get_account_info(other.pubkey()).value is None


def test_initialize_checks(world):
    chain, payer = world.chain, world.payer
    # Initialized already (whoever signs).
    again = world.create_ixs(world.feed)[1]
    assert world.refused(again, [world.feed]) == "FeedAlreadyInitialized"

    def create(*, change=lambda ixs: ixs, **kw) -> str:
        feed = Keypair()
        name = world.refused(change(world.create_ixs(feed, **kw)), [feed], index=1)
        assert chain.get_account_info(feed.pubkey()).value is None  # the whole transaction failed
        return name

    # The feed's key signs CreateAccount as well, so its signature is checked on an account
    # created beforehand: someone else's new account cannot be initialized.
    bare = Keypair()
    lamports = chain.get_minimum_balance_for_rent_exemption(client.FEED_SIZE).value
    send(chain, payer, [client.create_feed_account(PRICE_FEED, payer=payer.pubkey(), feed=bare.pubkey(), lamports=lamports)], [bare], v0=False)
    assert world.refused(flagged(world.create_ixs(bare)[1], 0, signer=False)) == "FeedNotSigner"
    assert account_data(chain, bare.pubkey()) == bytes(client.FEED_SIZE)
    assert create(change=lambda ixs: [ixs[0], flagged(ixs[1], 1, signer=False)]) == "AuthorityNotSigner"
    assert create(exponent=abi.MAX_EXPONENT + 1) == "InvalidExponent"
    assert create(exponent=abi.MIN_EXPONENT - 1) == "InvalidExponent"
    assert create(max_staleness=0) == "InvalidMaxStaleness"
    assert create(max_staleness=-5) == "InvalidMaxStaleness"
    assert create(max_staleness=abi.MAX_STALENESS_LIMIT + 1) == "InvalidMaxStaleness"
    # The mint: a wallet, and a token account (owned by the token program, not a mint).
    assert create(change=lambda ixs: [ixs[0], flagged(ixs[1], 2, key=payer.pubkey())]) == "MintInvalid"
    token_account = create_ata(chain, payer, payer.pubkey(), world.mint)
    assert create(change=lambda ixs: [ixs[0], flagged(ixs[1], 2, key=token_account)]) == "MintInvalid"
    # The limits themselves are accepted.
    for exponent, staleness in ((abi.MIN_EXPONENT, 1), (abi.MAX_EXPONENT, abi.MAX_STALENESS_LIMIT)):
        feed = Keypair()
        send(chain, payer, world.create_ixs(feed, exponent=exponent, max_staleness=staleness), [feed, world.authority], v0=False)
        assert client.decode_feed(account_data(chain, feed.pubkey())).exponent == exponent


def test_malformed_instructions(world):
    _, now = node_clock(world.chain)
    update = world.update_ix(1, 1, now)
    assert world.refused(Instruction(PRICE_FEED, bytes([9]), list(update.accounts))) == "InvalidInstruction"
    assert world.refused(Instruction(PRICE_FEED, b"", list(update.accounts))) == "InvalidInstruction"
    assert world.refused(Instruction(PRICE_FEED, bytes(update.data)[:-1], list(update.accounts))) == "InvalidInstruction"
    assert world.refused(Instruction(PRICE_FEED, bytes(update.data), list(update.accounts)[:1])) == "NotEnoughAccounts"
    close = client.close(PRICE_FEED, feed=world.feed.pubkey(), authority=world.authority.pubkey(), recipient=world.payer.pubkey())
    assert world.refused(Instruction(PRICE_FEED, bytes(close.data), list(close.accounts)[:2])) == "NotEnoughAccounts"
    padding = [AccountMeta(Keypair().pubkey(), False, False) for _ in range(15)]
    assert world.refused(Instruction(PRICE_FEED, bytes(update.data), [*update.accounts, *padding])) == "TooManyAccounts"


def test_close_checks_and_a_closed_feed_cannot_be_reused(world):
    chain, payer = world.chain, world.payer
    _, now = node_clock(chain)
    feed, authority = world.feed.pubkey(), world.authority.pubkey()
    recipient = Keypair().pubkey()
    close = client.close(PRICE_FEED, feed=feed, authority=authority, recipient=recipient)
    assert world.refused(flagged(close, 2, writable=False)) == "RecipientNotWritable"
    assert world.refused(client.close(PRICE_FEED, feed=feed, authority=authority, recipient=feed)) == "InvalidRecipient"
    # Closed then used within one transaction: refused, and the whole transaction with it.
    assert world.refused([close, world.update_ix(1, 1, now)], index=1) == "FeedNotFound"
    # Lamports sent back after the close in the same transaction: the zeroed data is no feed.
    refill = transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=feed, lamports=10**7))
    assert world.refused([close, refill, world.update_ix(1, 1, now)], index=2) == "FeedInvalid"
    assert chain.get_balance(recipient).value == 0 and world.state().authority == authority

    send(chain, payer, [close], [world.authority], v0=False)
    world.payer = FeedWorld.new(chain).payer  # not the very message just sent (a duplicate, not a refusal)
    for ix in (world.update_ix(1, 1, now), client.set_job_hash(PRICE_FEED, feed=feed, authority=authority, job_hash=bytes(32)),
               client.set_authority(PRICE_FEED, feed=feed, authority=authority, new_authority=recipient), close):
        assert world.refused(ix) == "FeedNotFound"
    assert world.refused(world.create_ixs(world.feed)[1], [world.feed]) == "FeedNotFound"  # re-initialized without being created
    # Lamports sent to the closed address later make it a wallet, not a feed again.
    send(chain, world.payer, [transfer(TransferParams(from_pubkey=world.payer.pubkey(), to_pubkey=feed, lamports=10**7))], v0=False)
    assert world.refused(world.update_ix(1, 1, now)) == "FeedWrongOwner"
    assert world.refused(world.create_ixs(world.feed)[1], [world.feed]) == "FeedWrongOwner"
