"""A Token-2022 transfer-hook mint whose hook is the project's allow-list program, loaded at
genesis on the local node: Transfer Financial Instrument resolves the hook's extra accounts
and passes the hook for an owner on the mint's allow-list; for another owner the program's
own error comes back as 400 PROGRAM_ERROR naming it, and nothing moves."""

from __future__ import annotations

import pytest
from solders.keypair import Keypair
from solders.pubkey import Pubkey

import programs
from conftest import assert_error
from programs.allowlist_hook import client as hook
from transactions.models import Transaction
from transactions.tests.chainkit import funded, send

from .kit import instrument, position, wallet
from .movekit import at, balance, mint, settled, transfer

pytestmark = pytest.mark.chain

HOOK = Pubkey.from_string(programs.LOCALNET_PROGRAM_IDS["allowlist_hook"])


def _address(api, lookup: dict) -> Pubkey:
    return Pubkey.from_string(api.call("post", "/api/v1/accounts/single", {"itemData": lookup}).json()["onchain"]["id"])


@pytest.mark.django_db(transaction=True)
def test_the_allow_list_hook_passes_allowed_owners_and_refuses_others(api, celery_worker_process, chain):
    authority_key, list_authority = Keypair(), Keypair()
    authority = wallet(api, authority_key)  # mint authority, its key known to the test (it signs InitializeAllowList)
    alice, bob, carol = wallet(api), wallet(api), wallet(api)
    hooked = instrument(api, authority=authority, version="TOKEN_2022", transferHookAuthority=authority, transferHookProgram={"onchainId": str(HOOK), "offPlatform": True})
    mint_key = Pubkey.from_string(hooked["onchainId"])
    payer = funded(chain)
    send(chain, payer, [hook.initialize_allow_list(program=HOOK, payer=payer.pubkey(), mint=mint_key, mint_authority=authority_key.pubkey(),
                                                   authority=list_authority.pubkey(), capacity=8)], [authority_key])
    send(chain, payer, [hook.add_owner(program=HOOK, mint=mint_key, authority=list_authority.pubkey(), owner=_address(api, bob))], [list_authority])
    allow_list = hook.decode_allow_list(bytes(chain.get_account_info(hook.allow_list_address(HOOK, mint_key)[0]).value.data))
    assert allow_list.owners == (_address(api, bob),)

    a = position(api, alice, hooked)
    settled(mint(api, at(a), {"lamports": 10}))  # minting invokes no hook
    # To bob (allowed): his position is created on the way, the hook passes.
    body = settled(transfer(api, at(a), {"owner": bob, "financialInstrument": hooked}, {"lamports": 4}), 201)
    assert (balance(chain, a["onchainId"]), balance(chain, body["destinationPosition"]["onchainId"])) == (6, 4)
    # To carol (not on the list): the hook refuses inside Token-2022; the program's error is named.
    c = position(api, carol, hooked)
    before = Transaction.unscoped.filter(operation="positions.transfer").count()
    error = assert_error(transfer(api, at(a), at(c), {"lamports": 1}), 400, "PROGRAM_ERROR")
    message = error["errors"][0]["message"]
    assert message.startswith("The allowlist_hook program refused the transaction in simulation: DestinationOwnerNotAllowed (custom program error 7030)"), message
    assert Transaction.unscoped.filter(operation="positions.transfer").count() == before
    assert (balance(chain, a["onchainId"]), balance(chain, c["onchainId"])) == (6, 0)
    # Once carol is allowed, the same transfer goes through.
    send(chain, payer, [hook.add_owner(program=HOOK, mint=mint_key, authority=list_authority.pubkey(), owner=_address(api, carol))], [list_authority])
    settled(transfer(api, at(a), at(c), {"lamports": 1}))
    assert balance(chain, c["onchainId"]) == 1
