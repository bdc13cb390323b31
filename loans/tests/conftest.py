"""Fixtures the loan tests share."""

from __future__ import annotations

import pytest

from conftest import make_client
from tenancy.roles import Role
from tenancy.tests.factories import issue_key


@pytest.fixture(autouse=True)
def localnet_airdrop_funding(settings):
    """Rent of instruments and positions the kit creates with no funding account is paid by
    the localnet airdrop funder (opt-in, docs/accounts.md "Who pays"); loans name theirs."""
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True


@pytest.fixture
def approver(tenant):
    """Another key of the organization that may approve held transactions."""
    return make_client(issue_key(tenant, roles=[Role.PLATFORM_APPROVE_TRANSACTIONS]).secret)
