"""Back-office: vaults and deployed programs listed, searched and filtered, read-only."""

from __future__ import annotations

import pytest

from vaults.models import VaultDestination, VaultStatus
from vaults.tests.factories import make_vault

LIST = "/admin/vaults/vault/"


@pytest.mark.django_db
def test_admin_lists_searches_and_filters_vaults_and_changes_nothing(admin_client, tenant):
    active = make_vault(tenant)
    closed = make_vault(tenant, status=VaultStatus.CLOSED)
    VaultDestination.objects.create(vault=active, address="Dest1111111111111111111111111111111111111111"[:44], index=0)

    def listed(query: str = "") -> set[str]:
        content = admin_client.get(LIST + query).content.decode()
        return {v.token_address for v in (active, closed) if v.token_address in content}

    assert listed() == {active.token_address, closed.token_address}
    assert listed(f"?q={active.admin_address}") == {active.token_address}
    assert listed(f"?q={closed.loan_instrument.al_id}") == {closed.token_address}
    assert listed("?status__exact=CLOSED") == {closed.token_address}
    form = admin_client.get(f"{LIST}{active.pk}/change/").content.decode()
    assert active.state_address in form and "Dest1111" in form and 'name="admin_address"' not in form  # read-only
    assert admin_client.get(f"{LIST}add/").status_code == 403
    assert admin_client.post(f"{LIST}{active.pk}/delete/", {"post": "yes"}).status_code == 403


@pytest.mark.django_db
def test_admin_lists_program_deployments_read_only(admin_client):
    from custody.services import managed_key_generate
    from transactions.models import ProgramDeployment

    key = managed_key_generate()
    row = ProgramDeployment.objects.create(cluster="CHAIN_DEVNET", name="loan_vault", program_id=key.public_key, upgrade_authority_key=key, state="DEPLOYED", size=16264)
    page = admin_client.get("/admin/transactions/programdeployment/").content.decode()
    assert row.program_id in page and "loan_vault" in page
    assert admin_client.get("/admin/transactions/programdeployment/add/").status_code == 403
