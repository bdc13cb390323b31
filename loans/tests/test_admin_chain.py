"""A loan's and its strategy's "open on the chain" pages (docs/admin.md): the escrow and the
strategy account as the local node answers them, decoded by programs/lending/client next to
the raw answer; checked against the account read with an unmodified solana-py client."""

from __future__ import annotations

import base64
import html

import pytest
from solders.pubkey import Pubkey

from backoffice.tests.staff import client_for, staff_user
from loans.models import Loan, LoanStrategy
from programs.lending import client as lend

from .kit import create_loan, landed, strategy, world

pytestmark = pytest.mark.chain


@pytest.mark.django_db(transaction=True)
def test_a_viewer_opens_the_escrow_and_the_strategy_on_the_chain_decoded(api, celery_worker_process, chain, client):
    w = world(api, chain)
    s = strategy(api, w)
    escrow = landed(create_loan(api, w, s["onchainId"], pledge=100 * 10**6, borrow=400 * 100), 201)["newLoan"]["onchainId"]
    loan, record = Loan.unscoped.get(escrow_address=escrow), LoanStrategy.unscoped.get(address=s["onchainId"])
    viewer = client_for(client, staff_user("viewer"))

    page = html.unescape(viewer.get(f"/admin/chain/loans/loan/{loan.pk}/").content.decode())
    info = chain.get_account_info(Pubkey.from_string(escrow)).value
    assert str(lend.LOCALNET_PROGRAM_ID) in page and base64.b64encode(bytes(info.data)).decode() in page  # the raw answer
    state = lend.decode_loan(bytes(info.data))
    assert 'id="chain-decoded"' in page and f'"borrower": "{state.borrower}"' in page and f'"strategy": "{s["onchainId"]}"' in page and "chain-decode-error" not in page

    page = html.unescape(viewer.get(f"/admin/chain/loans/loanstrategy/{record.pk}/").content.decode())
    assert 'id="chain-decoded"' in page and f'"lender": "{record.lender_address}"' in page and '"apy_bps": 1000' in page and "chain-decode-error" not in page
    assert f"/admin/chain/loans/loan/{loan.pk}/" in viewer.get(f"/admin/loans/loan/{loan.pk}/change/").content.decode()
