"""Display amounts are exact decimals end to end (docs/style.md, "Money and time": never a float):
u64 max and 9+ decimals keep every digit, in responses and in request bodies."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from accounts.serializers import U64_MAX, ValueSerializer
from accounts.tests.factories import AccountFactory
from instruments.tests.factories import FinancialInstrumentFactory
from ledger_project.api.envelope import validated
from ledger_project.api.parsers import parse_json_body


def exact(response) -> dict:
    return json.loads(response.content, parse_float=Decimal)


@pytest.mark.parametrize("decimals, text", [(18, "18.446744073709551615"), (12, "18446744.073709551615"), (9, "18446744073.709551615"), (0, "18446744073709551615")])
def test_values_at_u64_max_render_every_digit(decimals, text):
    from accounts.serializers import value_output
    from instruments.render import token_value
    from ledger_project.api.renderers import LedgerJSONRenderer

    rendered = LedgerJSONRenderer().render({"v": token_value(U64_MAX, decimals), "sol": value_output(U64_MAX)})
    assert rendered == b'{"v":{"amount":%s,"lamports":%d},"sol":{"amount":18446744073.709551615,"lamports":%d}}' % (text.encode(), U64_MAX, U64_MAX)


@pytest.mark.django_db
@pytest.mark.parametrize("decimals, text", [(9, "18446744073.709551615"), (12, "18446744.073709551615"), (18, "18.446744073709551615")])
def test_circulating_supply_at_u64_max_keeps_every_digit(api, tenant, chain, decimals, text):
    """The network's supply (u64, read from the mint) at u64 max with 9+ decimals."""
    from solders.keypair import Keypair

    from transactions.tests.chainkit import create_ata, create_mint, funded, mint_to

    payer = funded(chain, 10**9)
    mint = create_mint(chain, payer, decimals=decimals)
    mint_to(chain, payer, mint, create_ata(chain, payer, Keypair().pubkey(), mint), U64_MAX, decimals=decimals)
    instrument = FinancialInstrumentFactory(tenant=tenant, mint_account__address=str(mint), decimals=decimals)
    response = api.call("post", "/api/v1/financial-instruments/single/circulating-supply", {"itemData": {"offchainId": str(instrument.offchain_id)}})
    assert response.status_code == 200, response.content
    assert exact(response)["onchain"] == {"amount": Decimal(text), "lamports": U64_MAX}
    assert f'"onchain":{{"amount":{text},"lamports":{U64_MAX}}}'.encode() in response.content


@pytest.mark.django_db
def test_small_amounts_are_plain_decimals(api, tenant, localnet_url):
    account = AccountFactory(tenant=tenant, lamports_balance=5)
    response = api.call("post", "/api/v1/accounts/single/balance", {"itemData": {"account": {"offchainId": str(account.offchain_id)}}})
    assert b'"amount":0.000000005,' in response.content


def test_request_amounts_with_nine_decimals_are_not_rounded_through_float():
    # 17 significant digits: a float would read 12345678.12345679 and disagree with lamports.
    body = parse_json_body(b'{"amount": 12345678.123456789, "lamports": 12345678123456789}')
    assert validated(ValueSerializer, body) == 12345678123456789
    assert validated(ValueSerializer, parse_json_body(b'{"amount": 18446744073.709551615}')) == U64_MAX


def test_a_zero_amount_is_written_0_whatever_the_decimals():
    """An empty vault's balance (a payment instrument of 2 decimals) was written 0.00 — read
    as 0.0 by clients parsing floats — while the zeros beside it read 0."""
    from ledger_project.api.renderers import LedgerJSONRenderer
    from positions.values import token_value

    payment = FinancialInstrumentFactory.build(decimals=2)
    scaled = FinancialInstrumentFactory.build(decimals=6, extensions=["SCALED_UI_AMOUNT"], scaled_ui_multiplier=1.5)
    rendered = LedgerJSONRenderer().render({"vault": token_value(0, payment), "scaled": token_value(0, scaled), "nine": token_value(0, FinancialInstrumentFactory.build(decimals=9))})
    assert rendered == b'{"vault":{"amount":0,"lamports":0},"scaled":{"amount":0,"lamports":0},"nine":{"amount":0,"lamports":0}}'
    assert LedgerJSONRenderer().render({"v": token_value(150, payment)}) == b'{"v":{"amount":1.50,"lamports":150}}'  # other amounts keep their decimals
