"""Back-office: instruments listed and filtered; offchain data editable, chain fields not."""

import pytest

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
