"""Back-office: instruments listed and filtered; offchain data editable, chain fields not."""

import pytest

from accounts.models import Account
from instruments.models import FinancialInstrument
from instruments.tests.factories import FinancialInstrumentFactory


@pytest.mark.django_db
def test_admin_lists_instruments_and_edits_only_offchain_fields(admin_client, tenant):
    instrument = FinancialInstrumentFactory(tenant=tenant, symbol="ACB30", paused=False)
    listing = admin_client.get("/admin/instruments/financialinstrument/?version__exact=TOKEN_2022&paused__exact=0")
    assert listing.status_code == 200 and "ACB30" in listing.content.decode()
    assert "ACB30" in admin_client.get(f"/admin/instruments/financialinstrument/?q={instrument.al_id}").content.decode()

    url = f"/admin/instruments/financialinstrument/{instrument.pk}/change/"
    page = admin_client.get(url).content.decode()
    assert "PAUSABLE" in page and 'name="offchain_data"' in page and 'name="symbol"' not in page and 'name="paused"' not in page
    response = admin_client.post(url, {"offchain_data": '{"description": "edited"}', "comments": "checked", "symbol": "HACK", "paused": "on"})
    assert response.status_code == 302
    instrument.refresh_from_db()
    assert instrument.offchain_data == {"description": "edited"} and instrument.comments == "checked"
    assert instrument.symbol == "ACB30" and instrument.paused is False
    assert admin_client.get("/admin/instruments/financialinstrument/add/").status_code == 403
    assert FinancialInstrument.unscoped.count() == 1


@pytest.mark.chain
@pytest.mark.django_db(transaction=True)
def test_admin_shows_a_hook_instruments_allow_list_read_only(admin_client, api, celery_worker_process, chain, settings):
    """The allow-list hook instrument's page lists its allow-list as decoded from the chain
    (owners in list order, linked to their account pages); nothing there is a form field,
    and a post of the page changes nothing on chain."""
    from positions.tests.kit import wallet
    from solders.keypair import Keypair

    from .allowkit import address_of, allow_list_address, change, decoded_from_bytes, hooked_instrument, landed

    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True
    issuer, alice = wallet(api), wallet(api)
    outsider = str(Keypair().pubkey())
    hooked = hooked_instrument(api, authority=issuer, allowListCapacity=5)
    landed(change(api, "add", hooked, [alice, {"onchainId": outsider, "offPlatform": True}]))
    instrument = FinancialInstrument.unscoped.get(offchain_id=hooked["offchainId"])
    alice_record = Account.unscoped.get(offchain_id=alice["offchainId"])

    url = f"/admin/instruments/financialinstrument/{instrument.pk}/change/"
    page = admin_client.get(url).content.decode()
    assert "Allow-list (on chain, read-only)" in page and str(allow_list_address(hooked["onchainId"])) in page
    owners = page[page.index('<ol class="allow-list-owners">'):page.index("</ol>", page.index('<ol class="allow-list-owners">'))]
    assert owners.index(address_of(api, alice)) < owners.index(outsider) and "2 of 5 owners" in page
    assert f"/admin/accounts/account/{alice_record.pk}/change/" in owners
    assert 'name="allow_list"' not in page
    before = decoded_from_bytes(chain, hooked["onchainId"])
    assert admin_client.post(url, {"offchain_data": "{}", "comments": "", "allow_list": "x"}).status_code == 302
    assert decoded_from_bytes(chain, hooked["onchainId"]) == before

    plain = FinancialInstrumentFactory(tenant=instrument.tenant, al_id="ALFICBD99999999")
    assert "Allow-list" not in admin_client.get(f"/admin/instruments/financialinstrument/{plain.pk}/change/").content.decode()
