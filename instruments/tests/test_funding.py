"""Who pays a mint's rent and its metadata top-ups (docs/instruments.md, docs/accounts.md
"Who pays"): the funding account goes through the same path as an account's seed — its
debit keys and limits apply, re-checked under its row lock, and the Transaction records
``effects.funding`` so every later DURATION window counts it."""

from __future__ import annotations

import pytest

from conftest import assert_error
from instruments import services
from instruments.models import FinancialInstrument
from instruments.tests.test_api_instruments import BASE, BOND, created, localnet_airdrop_funding, wallet  # noqa: F401 (autouse fixture)
from instruments.tests.test_races import inject_after_build
from transactions.models import Transaction

pytestmark = pytest.mark.chain
FEE_PAYER = "svmTransactionConfig.feePayer"
BY_FUNDER = {"feePayer": {"offchainReferences": {"code": "FUNDS"}}}
MINT_RENT = 1_461_600  # a Token-2022 mint without extensions: 82 bytes


def funder(api, limit: int) -> str:
    """A wallet holding 50_000_000 lamports, with a DURATION limit on MANAGED destinations."""
    response = api.call("post", "/api/v1/accounts?wait=confirmed", {"itemData": {
        "managed": True, "seed": {"lamports": 50_000_000}, "offchainReferences": {"code": "FUNDS"},
        "networkCurrencyDebitLimits": [{"destinationType": "MANAGED", "limitType": "DURATION", "maxAmountWithoutApproval": limit, "durationHours": 24}],
    }})
    assert response.status_code == 201, response.json()
    return response.json()["newAccount"]["onchainId"]


def create(api, item: dict, *, wait: bool = False):
    return api.call("post", BASE + ("?wait=confirmed" if wait else ""), {"itemData": item, "svmTransactionConfig": BY_FUNDER})


def funding_of(response) -> dict:
    return Transaction.unscoped.get(onchain_id=response.json()["svmTransaction"]["onchainId"]).effects.get("funding")


@pytest.mark.django_db(transaction=True)
def test_mint_rent_counts_toward_the_funders_duration_limit(api, celery_worker_process):
    source = funder(api, 3_000_000)
    authority = wallet(api)
    for _ in range(2):
        response = create(api, {**BOND, "mintAuthority": authority})
        assert response.status_code == 201, response.json()
        assert funding_of(response) == {"source": source, "lamports": MINT_RENT, "destinationType": "MANAGED"}
    # The window holds 2 × 1_461_600: a third mint's rent is over 3_000_000.
    assert_error(create(api, {**BOND, "mintAuthority": authority}), 403, "DEBIT_LIMIT_EXCEEDED", FEE_PAYER)
    assert FinancialInstrument.unscoped.count() == 2


@pytest.mark.django_db(transaction=True)
def test_metadata_top_up_counts_toward_the_funders_duration_limit(api, celery_worker_process):
    source = funder(api, 3_000_000)
    authority = wallet(api)
    # Created with the localnet airdrop funder: nothing of the funder's window yet.
    body = created(api, {**BOND, "mintAuthority": authority, "onchainData": {"name": "Bond", "symbol": "BND", "uri": ""}})
    mint = {"onchainId": body["newFinancialInstrument"]["onchainId"]}
    first = create(api, {**BOND, "mintAuthority": authority}, wait=True)
    assert first.status_code == 201, first.json()
    grown = api.call("patch", BASE + "?wait=confirmed", {"itemData": {"mintAccount": mint, "onchainData": {"simpleCustomMetadata": {"prospectus": "x" * 150}}}, "svmTransactionConfig": BY_FUNDER})
    assert grown.status_code == 200, grown.json()
    top_up = funding_of(grown)
    assert top_up["source"] == source and top_up["lamports"] > 1_000_000  # 150+ bytes of rent
    # rent + top-up + another mint's rent is over 3_000_000.
    assert_error(create(api, {**BOND, "mintAuthority": authority}), 403, "DEBIT_LIMIT_EXCEEDED", FEE_PAYER)


@pytest.mark.django_db(transaction=True)
def test_concurrent_mint_fundings_are_rechecked_under_the_funders_lock(api, celery_worker_process, monkeypatch):
    funder(api, 2_000_000)  # room for one mint's rent, not two
    authority = wallet(api)
    # The competing create runs to completion after the first has passed its read-phase
    # check and built its transaction; the first's write phase must see it.
    competing = inject_after_build(monkeypatch, services, lambda: create(api, {**BOND, "mintAuthority": authority}))
    first = create(api, {**BOND, "mintAuthority": authority})
    assert competing[0].status_code == 201, competing[0].json()
    assert_error(first, 403, "DEBIT_LIMIT_EXCEEDED", FEE_PAYER)
    assert FinancialInstrument.unscoped.count() == 1
