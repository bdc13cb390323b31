"""Two repayments of one vault at once (docs/style.md, "Locks and races": the competing call injected at an
exact point). Sequences are handed out under the vault's row lock before signing; the write
phase re-checks the in-flight marker under the same lock, so one repayment is recorded per
vault at a time, and the recorded ones carry increasing sequences."""

from __future__ import annotations

import pytest

from conftest import assert_error
from positions.tests.movekit import settled, transfer
from vaults import services
from vaults.models import Vault

from .kit import call, landed, token_balance, vault_transactions, world

pytestmark = pytest.mark.chain


@pytest.mark.django_db(transaction=True)
def test_a_repayment_signed_while_another_is_recorded_is_refused_and_leaves_a_gap(api, celery_worker_process, chain, monkeypatch):
    w = world(api, chain)
    vault = landed(w.create(api), 201)["newVault"]
    by_id = {"vault": {"offchainId": vault["offchainId"]}}
    lender = {"position": {"offchainId": w.lender_position["offchainId"]}}
    landed(call(api, "update-whitelist", {**by_id, "action": "ADD", "destination": lender}))
    settled(transfer(api, {"position": {"offchainId": w.borrower_position["offchainId"]}}, {"position": {"offchainId": vault["offchainId"]}}, {"lamports": 100}))
    sequences = []
    real_build = services._build

    def build_then_compete(**kwargs):
        prepared = real_build(**kwargs)
        if kwargs["operation"] == "vaults.repayment" and not sequences:
            # The first request has its sequence and its signed transaction; before its write
            # phase, a second repayment of the same vault runs from start to end.
            sequences.append(Vault.unscoped.get(offchain_id=vault["offchainId"]).last_sequence)
            competing = landed(call(api, "repayment", {**by_id, "destination": lender, "value": {"lamports": 30}}))
            sequences.append(competing["sequence"])
        return prepared

    monkeypatch.setattr(services, "_build", build_then_compete)
    before = vault_transactions()
    assert_error(call(api, "repayment", {**by_id, "destination": lender, "value": {"lamports": 50}}, wait=False), 409, "OPERATION_IN_PROGRESS", "itemData.vault")
    assert sequences == [1, 2]  # the refused request's 1 is a gap; the recorded one is 2
    assert vault_transactions() == before + 1
    assert (token_balance(chain, vault["onchainId"]), token_balance(chain, w.lender_position["onchainId"])) == (70, 30)
    # Later repayments go on from the highest number handed out.
    monkeypatch.setattr(services, "_build", real_build)
    assert landed(call(api, "repayment", {**by_id, "destination": lender, "value": {"lamports": 70}}))["sequence"] == 3
