"""API-driven helpers for the vault tests on the local node: a loan, a payment instrument,
the parties, and the five vault operations (confirmed with ?wait=confirmed where asked);
balances are read with an unmodified solana-py client."""

from __future__ import annotations

from dataclasses import dataclass

from solana.rpc.api import Client
from solders.keypair import Keypair
from solders.pubkey import Pubkey

from positions.tests.kit import instrument, position, wallet
from positions.tests.movekit import at, mint, settled
from transactions.models import Transaction
from transactions.tests.chainkit import wait

BASE = "/api/v1/platform-programs/loan-remittance"
DONE = ("CONFIRMED", "FINALIZED")


def call(api, operation: str, item: dict, *, wait: bool = True, request_id=None, **envelope):
    return api.call("post", f"{BASE}/{operation}" + ("?wait=confirmed" if wait else ""), {"itemData": item, **envelope}, request_id=request_id)


def landed(response, status: int = 200) -> dict:
    """The body of a vault mutation answered ``status`` whose transaction confirmed."""
    assert response.status_code == status, (response.status_code, response.json())
    body = response.json()
    assert body["svmTransactionResult"]["status"] in DONE, body
    return body


def details(api, vault: dict) -> dict:
    response = call(api, "vault-details", vault, wait=False)
    assert response.status_code == 200, response.json()
    return response.json()


def token_balance(chain: Client, address: str) -> int:
    return int(chain.get_token_account_balance(Pubkey.from_string(address)).value.amount)


def vault_transactions() -> int:
    return Transaction.unscoped.filter(operation__startswith="vaults.").count()


@dataclass
class World:
    """A loan and its payment instrument, and who takes part: the issuer (mint authority
    of both), the admin (its key known to the test), a funder paying rent, a borrower
    holding payment tokens and a lender."""

    issuer: dict
    admin: dict
    admin_key: Keypair
    funder: dict
    loan: dict
    payment: dict
    borrower: dict
    borrower_position: dict
    lender: dict
    lender_position: dict

    @property
    def fee_payer(self) -> dict:
        return {"svmTransactionConfig": {"feePayer": self.funder}}

    def create(self, api, *, wait: bool = True, request_id=None, **item):
        data = {"loanFinancialInstrument": self.loan, "paymentFinancialInstrument": self.payment, "admin": self.admin, "capacity": 4, **item}
        return call(api, "create-vault", data, wait=wait, request_id=request_id, **self.fee_payer)


def world(api, chain: Client, *, payment_version: str = "SPL", loan_kind: str = "LOAN", admin_managed: bool = True, issuer_key: Keypair | None = None,
          hook: Pubkey | None = None) -> World:
    """``issuer_key``: the issuer's key, known to the test; ``hook``: the payment instrument
    is a Token-2022 mint whose transfer hook is that program."""
    issuer = wallet(api, issuer_key) if issuer_key is not None else wallet(api)
    payment_extra = {"transferHookAuthority": issuer, "transferHookProgram": {"onchainId": str(hook), "offPlatform": True}} if hook is not None else {}
    admin_key = Keypair()
    admin = wallet(api, admin_key) if admin_managed else wallet(api, managed=False, address=str(admin_key.pubkey()))
    funder = wallet(api)
    wait(chain, chain.request_airdrop(Pubkey.from_string(address_of(api, funder)), 10 * 10**9).value)
    loan = instrument(api, authority=issuer, kind=loan_kind, decimals=0)
    payment = instrument(api, authority=issuer, version=payment_version, kind="STABLECOIN", decimals=2, **payment_extra)
    borrower, lender = wallet(api), wallet(api)
    if hook is not None:  # Create initialized the payment mint's allow-list: the holders go on it first
        response = api.call("patch", "/api/v1/financial-instruments/allow-list/add?wait=confirmed", {"itemData": {"financialInstrument": payment, "owners": [borrower, lender]}})
        assert response.status_code == 200 and response.json()["svmTransactions"][0]["status"] in ("CONFIRMED", "FINALIZED"), response.json()
    borrower_position = position(api, borrower, payment)
    settled(mint(api, at(borrower_position), {"lamports": 100_000}))
    lender_position = position(api, lender, payment)
    return World(issuer, admin, admin_key, funder, loan, payment, borrower, borrower_position, lender, lender_position)


def address_of(api, lookup: dict) -> str:
    response = api.call("post", "/api/v1/accounts/single", {"itemData": lookup})
    assert response.status_code == 200, response.json()
    return response.json()["onchain"]["id"]
