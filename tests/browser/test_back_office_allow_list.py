"""An allow-list hook instrument in headless chromium: a viewer opens the instrument's page,
reads its allow-list as decoded from the chain (owners in list order), is offered no field
or action to change it, and follows an owner to its account page."""

from __future__ import annotations

import pytest

from backoffice.tests.staff import PASSWORD, staff_user
from instruments.models import FinancialInstrument
from instruments.tests.allowkit import address_of, allow_list_address, change, hooked_instrument, landed
from positions.tests.kit import wallet


@pytest.mark.chain
@pytest.mark.django_db(transaction=True)
def test_a_viewer_reads_an_instruments_allow_list_and_follows_an_owner(page, api, chain, celery_worker_process, settings):
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True
    issuer, alice, bob = wallet(api), wallet(api), wallet(api)
    hooked = hooked_instrument(api, authority=issuer, allowListCapacity=16)
    landed(change(api, "add", hooked, [alice, bob]))
    record = FinancialInstrument.unscoped.get(offchain_id=hooked["offchainId"])

    viewer = staff_user("viewer")
    page.sign_in(viewer.username, PASSWORD)
    page.open(f"/admin/instruments/financialinstrument/{record.pk}/change/")
    section = page.find(".field-allow_list").text
    assert str(allow_list_address(hooked["onchainId"])) in section and "2 of 16 owners" in section
    owners = [li.text for li in page.all("ol.allow-list-owners li")]
    assert [o.split()[0] for o in owners] == [address_of(api, alice), address_of(api, bob)]
    assert not page.all("input[name=_save]") and not page.all("[name=allow_list]")
    page.driver.execute_script("arguments[0].scrollIntoView()", page.find(".field-allow_list"))
    page.screenshot("instrument-allow-list")
    page.click("ol.allow-list-owners li:first-child a")
    assert address_of(api, alice) in page.text() and "/admin/accounts/account/" in page.driver.current_url
