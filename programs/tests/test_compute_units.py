"""Compute-unit budgets of the programs' instructions (docs/programs.md, "Costs"): what a
transaction must budget for, and a guard against a change that makes them dearer. Token
CPIs are included (the SPL Token build in LiteSVM costs more than Token-2022's). PDA
searches vary with the addresses (each bump tried costs 1,500), hence the looser bounds on
the instructions that create accounts."""

from __future__ import annotations

from solders.keypair import Keypair

from instruments.token2022.constants import TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID
from programs.allowlist_hook import abi as hook_abi
from programs.allowlist_hook import client as hook
from programs.loan_vault import abi as vault_abi
from programs.tests.hookkit import HookWorld
from programs.tests.vaultkit import VaultWorld


def hook_execute_units(outcome, program) -> int:
    line = next(line for line in outcome.logs if line.startswith(f"Program {program} consumed"))
    return int(line.split()[3])


def test_allow_list_hook_costs():
    w = HookWorld(capacity=hook_abi.MAX_CAPACITY)
    assert w.init_outcome.compute_units < 40_000
    owners = [Keypair().pubkey() for _ in range(hook_abi.MAX_CAPACITY)]
    first = w.add(owners[0])
    assert first.compute_units < 400
    destination = w.chain.token_account(owners[0], w.mint, TOKEN_2022_PROGRAM_ID)
    transfer = w.transfer(destination, 1)
    assert hook_execute_units(transfer, w.program) < 800 and transfer.compute_units < 40_000  # Token-2022 derives PDAs too
    for owner in owners[1:]:
        w.add(owner)  # a full list: Execute scans it
    last = w.chain.token_account(owners[-1], w.mint, TOKEN_2022_PROGRAM_ID)
    transfer = w.transfer(last, 1)
    assert hook_execute_units(transfer, w.program) < 3_000 and transfer.compute_units < 40_000
    removed = w.chain.ok([hook.remove_owner(program=w.program, mint=w.mint, authority=w.authority.pubkey(), owner=owners[-1])], [w.authority])
    assert removed.compute_units < 2_500


def vault_costs(token_program, capacity: int = 4) -> dict[str, int]:
    w = VaultWorld(token_program, capacity=capacity)
    costs = {"create": w.create().compute_units}
    lenders = [w.account_of() for _ in range(capacity)]
    costs["add"] = w.whitelist(lenders[0]).compute_units
    for lender in lenders[1:]:
        costs["add"] = w.whitelist(lender).compute_units  # the last one scans the full list
    w.fund(100)
    costs["repayment"] = w.repay(lenders[-1], 100).compute_units
    for lender in lenders:
        costs["remove"] = w.whitelist(lender, remove=True).compute_units
    costs["close"] = w.chain.ok([w.close_ix()], [w.admin]).compute_units
    return costs


def test_loan_vault_costs_with_token_2022():
    costs = vault_costs(TOKEN_2022_PROGRAM_ID)
    assert costs["create"] < 80_000
    assert costs["add"] < 500 and costs["remove"] < 500
    assert costs["repayment"] < 7_000
    assert costs["close"] < 7_000


def test_loan_vault_costs_with_spl_token_and_a_full_whitelist():
    costs = vault_costs(TOKEN_PROGRAM_ID, capacity=vault_abi.MAX_CAPACITY)
    assert costs["create"] < 80_000
    assert costs["add"] < 2_500 and costs["remove"] < 2_500
    assert costs["repayment"] < 13_000
    assert costs["close"] < 9_000


def test_price_feed_costs():
    from programs.price_feed import client as feed
    from programs.tests.svmkit import Chain

    c = Chain()
    program, authority, account = c.load("price_feed"), Keypair(), Keypair()
    mint = c.mint(decimals=0)
    lamports = c.svm.minimum_balance_for_rent_exemption(feed.FEED_SIZE)
    create = feed.create_feed_account(program, payer=c.payer.pubkey(), feed=account.pubkey(), lamports=lamports)
    init = feed.initialize(program, feed=account.pubkey(), authority=authority.pubkey(), mint=mint, exponent=-8, max_staleness=600, job_hash=bytes(32))
    assert c.ok([create, init], [account, authority]).compute_units < 1_000  # CreateAccount included
    now = c.svm.get_clock().unix_timestamp
    updates = [c.ok([feed.update(program, feed=account.pubkey(), authority=authority.pubkey(), round=r, value=r, observed_at=now)], [authority]) for r in range(1, 11)]
    assert max(u.compute_units for u in updates) < 600  # the ring wrapped: no dearer
    keys = dict(feed=account.pubkey(), authority=authority.pubkey())
    assert c.ok([feed.set_authority(program, **keys, new_authority=authority.pubkey())], [authority]).compute_units < 400
    assert c.ok([feed.set_job_hash(program, **keys, job_hash=bytes(32))], [authority]).compute_units < 400
    assert c.ok([feed.close(program, **keys, recipient=c.payer.pubkey())], [authority]).compute_units < 500
