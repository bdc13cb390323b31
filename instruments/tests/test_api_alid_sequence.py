"""alIds of new instruments (docs/instruments.md, alId): generated in sequence per organization
and kind, skipping numbers given ahead of it, validated when given, and gap-free when requests
that took a number fail. Holding alIds on accounts: test_alid.py."""

from __future__ import annotations

import pytest

from conftest import assert_error
from instruments.models import FinancialInstrument
from instruments.tests.test_api_instruments import BOND, create, created, localnet_airdrop_funding, wallet  # noqa: F401 (autouse fixture)

pytestmark = pytest.mark.chain


@pytest.mark.django_db(transaction=True)
def test_al_ids_are_generated_in_sequence_and_validated(api, celery_worker_process):
    authority = wallet(api)
    first = created(api, {**BOND, "mintAuthority": authority})
    second = created(api, {**BOND, "mintAuthority": authority})
    ids = [FinancialInstrument.unscoped.get(offchain_id=b["newFinancialInstrument"]["offchainId"]).al_id for b in (first, second)]
    assert ids[0].startswith("ALFICBD") and int(ids[1][-8:]) == int(ids[0][-8:]) + 1
    usd = created(api, {"offchainReferences": {"newAlId": {"financialInstrumentType": "STABLECOIN"}}, "mintAuthority": authority})
    usd_row = FinancialInstrument.unscoped.get(offchain_id=usd["newFinancialInstrument"]["offchainId"])
    assert usd_row.al_id == "ALFXSC00000001" and usd_row.mint_account.type == "CURRENCY_TOKEN"

    given = created(api, {"mintAccount": {"offchainReferences": {"alId": "ALEQYSTC12345678"}}, "mintAuthority": authority})
    assert FinancialInstrument.unscoped.get(offchain_id=given["newFinancialInstrument"]["offchainId"]).al_category == "EQUITY"
    assert_error(create(api, {"mintAccount": {"offchainReferences": {"alId": "ALEQYSTC12345678"}}, "mintAuthority": authority}), 409, "DUPLICATE_AL_ID")
    assert_error(create(api, {"mintAccount": {"offchainReferences": {"alId": "ALEQYBCD00000001"}}, "mintAuthority": authority}), 400, "INVALID_AL_ID", "itemData.mintAccount.offchainReferences.alId")
    assert_error(create(api, {"mintAccount": {"offchainReferences": {"alId": "ALFICBD123"}}, "mintAuthority": authority}), 400, "INVALID_AL_ID")
    assert_error(create(api, {"offchainReferences": {"newAlId": {"financialInstrumentType": "SPACESHIP"}}, "mintAuthority": authority}), 400, "INVALID_INSTRUMENT_TYPE")
    assert_error(create(api, {"mintAuthority": authority}), 400, "REQUIRED", "itemData.offchainReferences.newAlId.financialInstrumentType")
    # CURRENCY_TOKEN only with category CURRENCY; every other category only ASSET_TOKEN.
    assert_error(create(api, {**BOND, "mintAccount": {"offchainReferences": {"type": "CURRENCY_TOKEN"}}, "mintAuthority": authority}), 400, "INVALID_ACCOUNT_TYPE")
    assert_error(create(api, {"offchainReferences": {"newAlId": {"financialInstrumentType": "FIAT_CURRENCY"}}, "mintAccount": {"offchainReferences": {"type": "ASSET_TOKEN"}}, "mintAuthority": authority}), 400, "INVALID_ACCOUNT_TYPE")


@pytest.mark.django_db(transaction=True)
def test_generated_al_ids_skip_given_ones_and_count_per_organization(api, other_api, celery_worker_process):
    authority = wallet(api, alId="ALFICBD00000003")  # an account of the organization holds a number too

    def al_id_of(response) -> str:
        assert response.status_code == 201, response.json()
        return FinancialInstrument.unscoped.get(offchain_id=response.json()["newFinancialInstrument"]["offchainId"]).al_id

    for given in ("ALFICBD00000001", "ALFICBD00000002"):  # given ahead of the sequence
        assert al_id_of(create(api, {"mintAccount": {"offchainReferences": {"alId": given}}, "mintAuthority": authority}, wait=False)) == given
    assert al_id_of(create(api, {**BOND, "mintAuthority": authority}, wait=False)) == "ALFICBD00000004"
    assert al_id_of(create(api, {"mintAccount": {"offchainReferences": {"alId": "ALFICBD00000005"}}, "mintAuthority": authority}, wait=False)) == "ALFICBD00000005"
    assert al_id_of(create(api, {**BOND, "mintAuthority": authority}, wait=False)) == "ALFICBD00000006"
    # Another organization's numbers start at its own first: they reveal nothing of ACME's issuance.
    assert al_id_of(create(other_api, {**BOND, "mintAuthority": wallet(other_api)}, wait=False)) == "ALFICBD00000001"


@pytest.mark.django_db(transaction=True)
def test_al_id_sequence_is_gap_free_under_concurrency(tenant):
    import threading

    from django.db import close_old_connections, transaction

    from instruments import alid

    kind = alid.kind_for_type("ETF", field="x")
    issued, barrier = [], threading.Barrier(6)

    def issue(fail: bool):
        close_old_connections()
        barrier.wait()
        try:
            with transaction.atomic():
                value = alid.next_al_id(kind, tenant=tenant, cluster="CHAIN_LOCALNET")
                if fail:
                    raise RuntimeError("request failed after taking a number")
                issued.append(value)
        except RuntimeError:
            pass
        finally:
            close_old_connections()

    threads = [threading.Thread(target=issue, args=(i % 3 == 0,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(issued) == [f"ALEQYETF{n:08d}" for n in range(1, 5)]
