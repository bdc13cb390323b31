"""Races on one instrument (docs/style.md, "Locks and races"): the competing call is injected at an exact
point — right after the first request built and signed its transaction, before its write
phase — and the write phase's re-check under the row lock must see it."""

from __future__ import annotations

import pytest

from conftest import assert_error
from instruments import changes
from instruments.models import FinancialInstrument
from instruments.tests.test_api_instruments import BASE, BOND, created, localnet_airdrop_funding, wallet  # noqa: F401 (autouse fixture)
from transactions.models import Transaction
from transactions.responses import wait_for

pytestmark = pytest.mark.chain


def pause(api, lookup, *, wait=False):
    return api.call("patch", BASE + "/pause" + ("?wait=confirmed" if wait else ""), {"itemData": {"financialInstrument": lookup}})


def inject_after_build(monkeypatch, module, competitor):
    """Run ``competitor`` once, when the request under test has just built its transaction."""
    real = module.transaction_build
    armed = [True]
    results = []

    def build_then_compete(**kwargs):
        prepared = real(**kwargs)
        if armed.pop() if armed else False:
            results.append(competitor())
        return prepared

    monkeypatch.setattr(module, "transaction_build", build_then_compete)
    return results


@pytest.fixture
def pausable(api, celery_worker_process):
    authority = wallet(api)
    body = created(api, {**BOND, "mintAuthority": authority, "pausableAuthority": authority})
    return {"offchainId": body["newFinancialInstrument"]["offchainId"]}


@pytest.mark.django_db(transaction=True)
def test_concurrent_pause_runs_once_and_the_second_is_409_until_the_first_ends(api, pausable, monkeypatch):
    competing = inject_after_build(monkeypatch, changes, lambda: pause(api, pausable))
    first = pause(api, pausable)
    assert competing[0].status_code == 200, competing[0].json()
    assert_error(first, 409, "OPERATION_IN_PROGRESS", "itemData.financialInstrument")
    assert Transaction.unscoped.filter(operation="instruments.pause").count() == 1
    instrument = FinancialInstrument.unscoped.get(offchain_id=pausable["offchainId"])
    tx = Transaction.unscoped.get(operation="instruments.pause")
    assert instrument.pending_transaction_id == tx.pk
    monkeypatch.undo()
    # The marker ends with the transaction; the state then decides.
    assert wait_for(tx, "confirmed").status in ("CONFIRMED", "FINALIZED")
    instrument.refresh_from_db()
    assert instrument.pending_transaction_id is None and instrument.paused is True
    resumed = api.call("patch", BASE + "/unpause?wait=confirmed", {"itemData": {"financialInstrument": pausable}})
    assert resumed.status_code == 200, resumed.json()


@pytest.mark.django_db(transaction=True)
def test_pause_rechecks_what_a_confirmation_changed_while_it_was_being_built(api, pausable, monkeypatch):
    # apply vs confirm: the competing pause lands and its effects apply (paused, marker
    # cleared) between the first request's read and its write phase.
    competing = inject_after_build(monkeypatch, changes, lambda: pause(api, pausable, wait=True))
    first = pause(api, pausable)
    assert competing[0].json()["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED"), competing[0].json()
    assert_error(first, 400, "ALREADY_PAUSED", "itemData.financialInstrument")
    assert Transaction.unscoped.filter(operation="instruments.pause").count() == 1
    assert FinancialInstrument.unscoped.get(offchain_id=pausable["offchainId"]).pending_transaction_id is None


@pytest.mark.django_db(transaction=True)
def test_update_after_a_concurrent_transaction_is_409(api, pausable, monkeypatch):
    competing = inject_after_build(monkeypatch, changes, lambda: pause(api, pausable))
    first = api.call("patch", BASE, {"itemData": {"mintAccount": pausable, "paused": True}})
    assert competing[0].status_code == 200
    assert_error(first, 409, "OPERATION_IN_PROGRESS", "itemData.mintAccount")
    assert Transaction.unscoped.filter(operation__in=["instruments.pause", "instruments.update"]).count() == 1
