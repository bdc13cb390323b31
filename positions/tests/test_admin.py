"""Back-office: positions listed, searched and filtered, every field read-only; freeze and
unfreeze are admin actions through the same service as the API, recorded with the user."""

from __future__ import annotations

import pytest
from solders.pubkey import Pubkey

from instruments.tests.factories import FinancialInstrumentFactory
from positions.models import Position
from positions.onchain import decode_token_account
from transactions.models import Transaction, TransactionEvent
from transactions.responses import wait_for

from .kit import instrument, position, wallet
from .test_api_bulk import make_position

LIST = "/admin/positions/position/"


@pytest.mark.django_db
def test_admin_lists_searches_and_filters_positions_and_changes_nothing(admin_client, tenant):
    bond = FinancialInstrumentFactory(tenant=tenant, symbol="ACB30", decimals=2)
    frozen = make_position(tenant, bond, balance=12345, frozen=True, al_id="ALPOSADMIN1")
    other = make_position(tenant, bond, associated=False)
    page = admin_client.get(LIST).content.decode()
    assert frozen.address in page and other.address in page and "ACB30" in page and "123.45" in page

    def listed(query: str) -> set[str]:
        content = admin_client.get(LIST + query).content.decode()
        return {p.address for p in (frozen, other) if p.address in content}

    assert listed(f"?q={frozen.owner_address}") == {frozen.address}
    assert listed("?q=ALPOSADMIN1") == {frozen.address}
    assert listed(f"?q={other.address}") == {other.address}
    assert listed("?frozen__exact=1") == {frozen.address}
    assert listed("?associated__exact=0") == {other.address}

    url = f"{LIST}{frozen.pk}/change/"
    form = admin_client.get(url).content.decode()
    assert frozen.address in form and 'name="status"' not in form and 'name="frozen"' not in form and 'name="token_debit_limits"' not in form
    admin_client.post(url, {"status": "INACTIVE", "frozen": "", "token_debit_api_keys": '["x"]'})
    frozen.refresh_from_db()
    assert frozen.status == "ACTIVE" and frozen.frozen is True and frozen.token_debit_api_keys == []
    assert admin_client.get(LIST + "add/").status_code == 403
    assert admin_client.post(f"{LIST}{frozen.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Position.unscoped.count() == 2


@pytest.mark.chain
@pytest.mark.django_db(transaction=True)
def test_admin_freeze_and_unfreeze_go_through_the_service_and_record_who_asked(admin_client, admin_user, api, chain, celery_worker_process, settings):
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True
    authority = wallet(api)
    bond = instrument(api, authority=authority)
    first, second = position(api, wallet(api), bond), position(api, wallet(api), bond)
    record = Position.unscoped.get(offchain_id=first["offchainId"])

    done = admin_client.post(LIST, {"action": "freeze", "_selected_action": [record.pk], "_staff_confirmed": "yes"}, follow=True).content.decode()
    assert "1 position(s): freeze transaction recorded" in done
    tx = Transaction.unscoped.get(operation="positions.freeze")
    assert tx.created_by_key is None
    assert TransactionEvent.objects.get(transaction=tx, kind="REQUESTED_IN_ADMIN").detail == {"user": admin_user.get_username()}
    assert wait_for(tx, "confirmed").status in ("CONFIRMED", "FINALIZED")
    assert decode_token_account(bytes(chain.get_account_info(Pubkey.from_string(first["onchainId"])).value.data)).frozen is True
    record.refresh_from_db()
    assert record.frozen is True and record.pending_transaction_id is None

    # The service's rules hold in the admin too: an unfrozen position cannot be unfrozen.
    other = Position.unscoped.get(offchain_id=second["offchainId"])
    refused = admin_client.post(LIST, {"action": "unfreeze", "_selected_action": [other.pk, record.pk], "_staff_confirmed": "yes"}, follow=True).content.decode()
    assert "1 position(s): unfreeze transaction recorded" in refused and "The position is not frozen." in refused
    tx = Transaction.unscoped.get(operation="positions.unfreeze")
    assert wait_for(tx, "confirmed").status in ("CONFIRMED", "FINALIZED")
    record.refresh_from_db()
    other.refresh_from_db()
    assert record.frozen is False and other.frozen is False and other.last_transaction_id is not None  # its initialization only
    assert other.last_transaction.operation == "positions.initialize"
