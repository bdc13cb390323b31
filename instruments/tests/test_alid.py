"""alIds held by accounts (docs/instruments.md, alId): a given alId an account of the
organization already holds is 409 DUPLICATE_AL_ID — at the read phase, and when an account
takes it while the request is in flight — and account writes of an alId of the instrument
pattern take the same sequence row lock as generation."""

from __future__ import annotations

import pytest
from django.db import connection

from accounts.models import Account
from conftest import assert_error
from instruments import alid, services
from instruments.models import FinancialInstrument
from instruments.tests.test_api_instruments import BOND, create, localnet_airdrop_funding, mint_outside_the_service, wallet  # noqa: F401 (autouse fixture)
from instruments.tests.test_races import inject_after_build
from instruments.token2022 import instructions as t22
from instruments.token2022.constants import ExtensionType

pytestmark = pytest.mark.chain
AL_ID_FIELD = "itemData.mintAccount.offchainReferences.alId"
ACCOUNTS = "/api/v1/accounts"


def given(al_id: str) -> dict:
    return {"mintAccount": {"offchainReferences": {"alId": al_id}}}


def account_with(api, al_id: str):
    return api.call("post", ACCOUNTS, {"itemData": {"managed": True, "offchainReferences": {"type": "WALLET", "alId": al_id}}})


@pytest.mark.django_db(transaction=True)
def test_given_al_id_held_by_an_account_is_409(api, celery_worker_process, chain):
    authority = wallet(api, alId="ALFICBD00000009")
    assert_error(create(api, {**given("ALFICBD00000009"), "mintAuthority": authority}, wait=False), 409, "DUPLICATE_AL_ID", AL_ID_FIELD)
    _, mint = mint_outside_the_service(chain, ExtensionType.PAUSABLE, lambda m, p: t22.initialize_pausable(mint=m, authority=p))
    onboard = {"alreadyOnchain": True, "mintAccount": {"onchainId": str(mint.pubkey()), "offchainReferences": {"alId": "ALFICBD00000009"}}}
    assert_error(create(api, onboard, wait=False), 409, "DUPLICATE_AL_ID", AL_ID_FIELD)
    assert FinancialInstrument.unscoped.count() == 0 and Account.unscoped.count() == 1


@pytest.mark.django_db(transaction=True)
def test_an_account_taking_the_given_al_id_meanwhile_is_409_not_500(api, celery_worker_process, monkeypatch):
    authority = wallet(api)
    competing = inject_after_build(monkeypatch, services, lambda: account_with(api, "ALFICBD00000004"))
    assert_error(create(api, {**given("ALFICBD00000004"), "mintAuthority": authority}, wait=False), 409, "DUPLICATE_AL_ID", AL_ID_FIELD)
    assert competing[0].status_code == 201, competing[0].json()
    assert FinancialInstrument.unscoped.count() == 0


@pytest.mark.django_db(transaction=True)
def test_onboarding_after_an_account_took_the_given_al_id_is_409_not_500(api, celery_worker_process, chain, monkeypatch):
    _, mint = mint_outside_the_service(chain, ExtensionType.PAUSABLE, lambda m, p: t22.initialize_pausable(mint=m, authority=p))
    real, competing = services.apply_chain_state, []

    def read_then_compete(instrument, state):  # the last step before the write phase
        competing.append(account_with(api, "ALFICBD00000005"))
        return real(instrument, state)

    monkeypatch.setattr(services, "apply_chain_state", read_then_compete)
    onboard = {"alreadyOnchain": True, "mintAccount": {"onchainId": str(mint.pubkey()), "offchainReferences": {"alId": "ALFICBD00000005"}}}
    assert_error(create(api, onboard, wait=False), 409, "DUPLICATE_AL_ID", AL_ID_FIELD)
    assert competing[0].status_code == 201, competing[0].json()
    assert FinancialInstrument.unscoped.count() == 0


@pytest.mark.django_db(transaction=True)
def test_account_writes_of_an_instrument_pattern_al_id_lock_its_sequence_row(api, localnet_url, monkeypatch):
    # PostgreSQL: without this lock, a generation reading the numbers in use before such
    # an account commits picks the same number (acct_unique_alid, 409 or worse).
    real, locked = alid._lock_sequence, []

    def spy(kind, *, tenant, cluster):
        locked.append((kind.al_id(0)[:-8], connection.in_atomic_block))
        return real(kind, tenant=tenant, cluster=cluster)

    monkeypatch.setattr(alid, "_lock_sequence", spy)
    created = account_with(api, "ALFICBD00000007")
    assert created.status_code == 201, created.json()
    assert locked == [("ALFICBD", True)]
    assert account_with(api, "CUSTOMER-7").status_code == 201
    assert locked == [("ALFICBD", True)]  # not the pattern: no lock
    patched = api.call("patch", ACCOUNTS, {"itemData": {"account": {"offchainId": created.json()["newAccount"]["offchainId"]}, "offchainReferences": {"alId": "ALEQYSTC00000002"}}})
    assert patched.status_code == 200, patched.json()
    assert locked == [("ALFICBD", True), ("ALEQYSTC", True)]
