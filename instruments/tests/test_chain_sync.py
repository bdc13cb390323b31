"""Chain sync resolves authorities to records the tenant can sign with (docs/instruments.md,
Onboarding): with no current record, its own, then a shared record whose key the service
holds and the tenant may sign with, then any other shared record."""

from __future__ import annotations

import pytest

from accounts.models import Account
from conftest import make_client
from instruments.models import FinancialInstrument
from instruments.tests.test_api_instruments import BASE, BOND, create, localnet_airdrop_funding, mint_outside_the_service  # noqa: F401 (autouse fixture)
from instruments.token2022 import instructions as t22
from instruments.token2022.constants import ExtensionType
from tenancy.tests.factories import TenantFactory, issue_key

pytestmark = pytest.mark.chain
ACCOUNTS = "/api/v1/accounts"


def record(client, item: dict) -> Account:
    response = client.call("post", ACCOUNTS, {"itemData": {"offchainReferences": {"type": "WALLET"}, "shareAcrossTenants": True, **item}})
    assert response.status_code == 201, response.json()
    return Account.unscoped.get(offchain_id=response.json()["newAccount"]["offchainId"])


@pytest.mark.django_db(transaction=True)
def test_onboarding_prefers_the_shared_record_the_tenant_may_sign_with(api, other_api, tenant, celery_worker_process, chain):
    payer, mint = mint_outside_the_service(chain, ExtensionType.PAUSABLE, lambda m, p: t22.initialize_pausable(mint=m, authority=p))
    third = make_client(issue_key(TenantFactory(external_id="INITECH", name="Initech")).secret)
    # Recorded first (lowest id): a third organization's unmanaged record of the authority.
    unmanaged = record(third, {"managed": False, "onchainId": str(payer.pubkey())})
    signable = record(other_api, {"managed": True, "privateKeyDetails": {"privateKey": str(payer)}, "orgsAllowedToSignWithPrivateKey": [tenant.external_id]})
    assert unmanaged.pk < signable.pk and unmanaged.address == signable.address

    onboarded = create(api, {**BOND, "alreadyOnchain": True, "mintAccount": {"onchainId": str(mint.pubkey())}}, wait=False)
    assert onboarded.status_code == 201, onboarded.json()
    row = FinancialInstrument.unscoped.get(address=str(mint.pubkey()))
    assert row.pausable_authority_id == row.mint_authority_id == signable.pk

    paused = api.call("patch", BASE + "/pause?wait=confirmed", {"itemData": {"financialInstrument": {"onchainId": str(mint.pubkey())}}})
    assert paused.status_code == 200, paused.json()
    assert paused.json()["svmTransaction"]["status"] in ("CONFIRMED", "FINALIZED"), paused.json()  # signed on platform
