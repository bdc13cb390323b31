"""Fixtures the market data tests share."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def development_process(settings):
    """A development process (`make run`, the tests' workers: conftest.LOCAL_WEBHOOK_ENV):
    job URLs on this machine are allowed, so the tests' price servers can be named."""
    settings.LEDGER_EMBEDDED = True
    settings.LEDGER_OUTBOUND_ALLOW_HTTP = True
    settings.LEDGER_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    # Rent of the instruments the tests price is paid by the localnet airdrop funder (opt-in,
    # docs/accounts.md "Who pays"); feeds name their funder.
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True
