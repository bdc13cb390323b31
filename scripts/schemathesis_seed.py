"""Records the schemathesis run looks up: created through the API, on the run's own local
node, before schemathesis starts (scripts/schemathesis_run.py).

Without them every lookup schemathesis generates names nothing (404), and Create Financial
Instrument never gets past its authorities and funding. Each record has one job, so a
fuzzed mutation of one does not starve the others:

- ``funder``: a managed wallet funded by airdrop, named in ``svmTransactionConfig.feePayer``
  (it pays seeds, account and mint rent: docs/accounts.md, "Who pays"); its
  ``networkCurrencyDebitApiKeys`` lists the run's key by name, so the debit-key check runs.
- ``authority``: signs as every authority (mint, freeze, pausable, closing, ...) and takes
  refunds.
- ``subject``: the account reads and Update Account look up.
- ``victim``: the account Inactivate Account looks up (inactivation is one-way).
- ``instrument``: a Token-2022 mint with metadata and every authority extension the
  operations change (pause, close, scaled UI amount, permanent delegate, freeze).
- ``closable``: the instrument Close looks up (closing is one-way).
- ``transaction``: the creation transaction of ``instrument``.
- ``holder`` / ``holding``: a wallet and its position in ``instrument``, holding tokens
  (the position operations and the source of transfers look it up).
- ``payee`` / ``receiving``: a wallet and its position in ``instrument`` (destinations).
- ``lookupTable``: an address lookup table of ``authority`` holding a few of the accounts
  above (extended and fetched); ``retiringTable``: another, for Update Address Lookup Table
  (freeze, deactivate and close are one-way), deactivated and past its cool-down (the run's
  own node is warped 520 slots: docs/localnet.md), so the first update, whichever action,
  can be accepted (a CLOSE).
- ``nonce``: a durable nonce account of the run's organization (its authority a key the
  service holds), named by ``svmTransactionConfig.durableNonceAccount`` and the nonce
  fetches; nineteen more serve unnamed DURABLE_NONCE requests.
- ``loan``: a LOAN instrument (SPL, mint authority ``authority``); Create Loan Remittance
  Vault names it with ``instrument`` as the payment instrument (one creation may succeed,
  the others are 409 VAULT_EXISTS).
- ``payment`` / ``vault`` / ``lenderPosition``: an SPL STABLECOIN instrument, the vault of
  (``loan``, ``payment``) with ``authority`` as admin, holding 10^12 base units (minted into
  its position), and ``payee``'s position in ``payment``, whitelisted: the vault operations
  name them. The balance outlasts any generated repayment, so Close keeps failing on the
  program's preconditions instead of ending the vault.
- ``dataSource``: an onchain data source pricing ``loan`` (docs/marketdata.md), its job a
  constant (a valueTask: refreshes call no URL), refreshed on demand only; Create Onchain
  Data Source names ``instrument`` (one creation may succeed, the others are 409
  DATA_SOURCE_EXISTS).
- ``webhook``: a registry webhook of the run's organization (a public address literal;
  the run records events and never sends them: LEDGER_WEBHOOK_DELIVERY_ENABLED is off).
  Transaction events only: with account.network_event, every account the fuzzing creates
  with subscribeToNetworkEvents would be polled, loading the run's worker and node.

``seed(...)`` returns ``{role: {"onchainId", "offchainId", "code"}}`` (instruments also
``alId``; ``transaction``: onchainId/offchainId), which the hooks feed into generated lookups
(scripts/schemathesis_hooks.py).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid

#: the records seed() returns, by role (the hooks' LOOKUPS name them)
ROLES = ("funder", "authority", "subject", "victim", "instrument", "closable", "transaction", "holder", "holding", "payee", "receiving", "lookupTable", "retiringTable", "nonce",
         "loan", "payment", "vault", "lenderPosition", "webhook", "dataSource")
AIRDROP_LAMPORTS = 1_000 * 10**9
SEED_LAMPORTS = 10_000_000
DONE = ("CONFIRMED", "FINALIZED")


class SeedError(RuntimeError):
    pass


class Api:
    def __init__(self, url: str, secret: str):
        self.url, self.secret = url.rstrip("/"), secret

    def call(self, method: str, path: str, body: dict) -> dict:
        request = urllib.request.Request(
            f"{self.url}/api/v1/{path}", method=method, data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.secret}", "Content-Type": "application/json", "x-request-id": str(uuid.uuid4())},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise SeedError(f"{method} {path} answered {exc.code}: {exc.read().decode(errors='replace')[:2000]}") from None

    def wait_landed(self, transaction: dict | None, timeout: float = 90.0) -> dict | None:
        """Poll Fetch Transaction Status until the transaction is confirmed (a worker runs)."""
        if transaction is None:
            return None
        deadline = time.monotonic() + timeout
        while True:
            status = self.call("POST", "transactions/single/status", {"itemData": {"transaction": {"offchainId": transaction["offchainId"]}}})
            if status["status"] in DONE:
                return status
            if status["status"] in ("FAILED", "EXPIRED", "CANCELLED") or time.monotonic() > deadline:
                raise SeedError(f"seed transaction {transaction['offchainId']} ended {status['status']}: {status.get('errorMessage')}")
            time.sleep(0.2)


def rpc(url: str, method: str, params: list) -> object:
    request = urllib.request.Request(url, data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        answer = json.loads(response.read())
    if "error" in answer:
        raise SeedError(f"{method}: {answer['error']}")
    return answer["result"]


def airdrop(node_url: str, address: str, lamports: int, timeout: float = 30.0) -> None:
    rpc(node_url, "requestAirdrop", [address, lamports])
    deadline = time.monotonic() + timeout
    while rpc(node_url, "getBalance", [address, {"commitment": "confirmed"}])["value"] < lamports:
        if time.monotonic() > deadline:
            raise SeedError(f"the airdrop to {address} did not land")
        time.sleep(0.1)


def _account(api: Api, code: str, *, funder: dict | None = None, **fields) -> dict:
    item = {"managed": True, "offchainReferences": {"type": "WALLET", "code": code, "name": f"schemathesis {code}"}, **fields}
    body: dict = {"itemData": item}
    if funder is not None:
        item["seed"] = {"lamports": SEED_LAMPORTS}
        body["svmTransactionConfig"] = {"feePayer": {"offchainId": funder["offchainId"]}}
    created = api.call("POST", "accounts", body)
    api.wait_landed(created["svmTransaction"])
    return {**created["newAccount"], "code": code}


def _instrument(api: Api, code: str, *, funder: dict, authority: dict, authorities: tuple[str, ...]) -> tuple[dict, dict]:
    """A Token-2022 mint with metadata; ``authority`` holds every role in ``authorities``
    (each adds its extension: docs/instruments.md)."""
    by_id = {"offchainId": authority["offchainId"]}
    item = {
        "version": "TOKEN_2022",
        "offchainReferences": {"newAlId": {"financialInstrumentType": "CORPORATE_BOND"}},
        "mintAccount": {"offchainReferences": {"code": code, "name": f"schemathesis {code}"}},
        "mintAuthority": by_id,
        "onchainData": {"name": f"Schemathesis {code}", "symbol": "STH", "decimals": 2},
        **{name: by_id for name in authorities},
    }
    created = api.call("POST", "financial-instruments", {"itemData": item, "svmTransactionConfig": {"feePayer": {"offchainId": funder["offchainId"]}}})
    landed = api.wait_landed(created["svmTransaction"])
    ids = created["newFinancialInstrument"]
    details = api.call("POST", "financial-instruments/single", {"itemData": {"offchainId": ids["offchainId"]}})
    return {**ids, "code": code, "alId": details["alId"]}, landed


def _plain_instrument(api: Api, code: str, *, funder: dict, authority: dict, kind: str, decimals: int) -> dict:
    """An SPL mint of ``kind`` (alId type) whose mint authority is ``authority``."""
    item = {"version": "SPL", "offchainReferences": {"newAlId": {"financialInstrumentType": kind}}, "mintAuthority": {"offchainId": authority["offchainId"]},
            "mintAccount": {"offchainReferences": {"code": code, "name": f"schemathesis {code}"}}, "onchainData": {"name": f"Schemathesis {code}", "symbol": "STV", "decimals": decimals}}
    created = api.call("POST", "financial-instruments", {"itemData": item, "svmTransactionConfig": {"feePayer": {"offchainId": funder["offchainId"]}}})
    api.wait_landed(created["svmTransaction"])
    ids = created["newFinancialInstrument"]
    return {**ids, "code": code, "alId": api.call("POST", "financial-instruments/single", {"itemData": {"offchainId": ids["offchainId"]}})["alId"]}


def _vault(api: Api, *, funder: dict, authority: dict, loan: dict, payment: dict, lender: dict) -> dict:
    """The vault of (loan, payment), admin ``authority``, ``lender`` whitelisted, 10^12 base units in it."""
    base = "platform-programs/loan-remittance"
    fee_payer = {"svmTransactionConfig": {"feePayer": {"offchainId": funder["offchainId"]}}}
    item = {"loanFinancialInstrument": {"offchainId": loan["offchainId"]}, "paymentFinancialInstrument": {"offchainId": payment["offchainId"]},
            "admin": {"offchainId": authority["offchainId"]}, "capacity": 8}
    created = api.call("POST", f"{base}/create-vault", {"itemData": item, **fee_payer})
    api.wait_landed(created["svmTransactionResult"])
    vault = created["newVault"]
    whitelisted = api.call("POST", f"{base}/update-whitelist", {"itemData": {"vault": {"offchainId": vault["offchainId"]}, "action": "ADD",
                                                                             "destination": {"position": {"offchainId": lender["offchainId"]}}}})
    api.wait_landed(whitelisted["svmTransactionResult"])
    minted = api.call("POST", "positions/mint", {"itemData": {"position": {"position": {"offchainId": vault["offchainId"]}}, "value": {"lamports": 10**12}}})
    api.wait_landed(minted["svmTransaction"])
    return vault


def _data_source(api: Api, *, funder: dict, authority: dict, instrument: dict) -> dict:
    """A data source of ``instrument``, signed by ``authority``, its job the constant 1.5."""
    item = {"defiProtocol": "PARTNER_ORACLE", "financialInstrument": {"offchainId": instrument["offchainId"]}, "oracleDataSourceAuthority": {"offchainId": authority["offchainId"]},
            "partnerOracleDetails": {"kind": "QUOTES", "jobDefinition": json.dumps({"tasks": [{"valueTask": {"value": "1.5"}}]}), "refreshIntervalSeconds": None},
            "dataDetails": {"kind": "PRICE", "ratingProvider": "schemathesis"}}
    created = api.call("POST", "market-data/onchain-data-source", {"itemData": item, "svmTransactionConfig": {"feePayer": {"offchainId": funder["offchainId"]}}})
    api.wait_landed(created["svmTransaction"])
    return created["newOnchainDataSource"]


def _position(api: Api, code: str, *, funder: dict, owner: dict, instrument: dict) -> dict:
    body = {"itemData": {"owner": {"offchainId": owner["offchainId"]}, "financialInstrument": {"offchainId": instrument["offchainId"]},
                         "offchainReferences": {"code": code, "name": f"schemathesis {code}"}},
            "svmTransactionConfig": {"feePayer": {"offchainId": funder["offchainId"]}}}
    created = api.call("POST", "positions", body)
    api.wait_landed(created["svmTransaction"])
    return {**created["newPosition"], "code": code}


def _lookup_table(api: Api, *, funder: dict, authority: dict, components: list[dict]) -> dict:
    body = {"itemData": {"authority": {"offchainId": authority["offchainId"]}, "componentAddresses": [{"offchainId": c["offchainId"]} for c in components]},
            "svmTransactionConfig": {"feePayer": {"offchainId": funder["offchainId"]}}}
    created = api.call("POST", "address-lookup-tables", body)
    api.wait_landed(created["svmTransactionResult"])
    return created["newAddressLookupTable"]


def _retired(api: Api, table: dict, node_url: str) -> dict:
    """``table`` deactivated and cooled down: closable at once."""
    deactivated = api.call("PATCH", "address-lookup-tables", {"itemData": {"addressLookupTable": {"offchainId": table["offchainId"]}, "action": "DEACTIVATE"}})
    api.wait_landed(deactivated["svmTransactionResult"])
    rpc(node_url, "localnetWarpSlots", [520])  # past the 512 slots the SlotHashes sysvar keeps
    return table


def seed(*, url: str, secret: str, key_name: str, node_url: str) -> dict:
    api = Api(url, secret)
    funder = _account(api, "ST-FUNDER", networkCurrencyDebitApiKeys=[key_name])
    airdrop(node_url, funder["onchainId"], AIRDROP_LAMPORTS)
    authority = _account(api, "ST-AUTHORITY", funder=funder)
    subject = _account(api, "ST-SUBJECT", funder=funder)
    victim = _account(api, "ST-VICTIM", funder=funder)
    instrument, created = _instrument(
        api, "ST-INSTRUMENT", funder=funder, authority=authority,
        authorities=("freezeAuthority", "pausableAuthority", "closingAuthority", "permanentDelegateAuthority", "scaledUiAmountAuthority"),
    )
    closable, _ = _instrument(api, "ST-CLOSABLE", funder=funder, authority=authority, authorities=("closingAuthority",))
    holder = _account(api, "ST-HOLDER", funder=funder)
    payee = _account(api, "ST-PAYEE", funder=funder)
    holding = _position(api, "ST-HOLDING", funder=funder, owner=holder, instrument=instrument)
    receiving = _position(api, "ST-RECEIVING", funder=funder, owner=payee, instrument=instrument)
    minted = api.call("POST", "positions/mint", {"itemData": {"position": {"position": {"offchainId": holding["offchainId"]}}, "value": {"lamports": 10**12}}})
    api.wait_landed(minted["svmTransaction"])
    # Twenty (the most one request creates): unnamed DURABLE_NONCE requests lease the organization's own first, so the
    # platform pool is not emptied by the fuzzing (503 NONCE_POOL_EMPTY).
    nonces = api.call("POST", "durable-nonce-accounts", {"itemData": {"count": 20}, "svmTransactionConfig": {"feePayer": {"offchainId": funder["offchainId"]}}})
    for transaction in nonces["svmTransactions"]:
        api.wait_landed(transaction)
    records = {
        "funder": funder, "authority": authority, "subject": subject, "victim": victim,
        "instrument": instrument, "closable": closable,
        "transaction": {"onchainId": created["onchainId"], "offchainId": created["offchainId"]},
        "holder": holder, "holding": holding, "payee": payee, "receiving": receiving,
        "lookupTable": _lookup_table(api, funder=funder, authority=authority, components=[subject, holder, payee]),
        "retiringTable": _retired(api, _lookup_table(api, funder=funder, authority=authority, components=[subject, holder]), node_url),
        "nonce": nonces["newDurableNonceAccounts"][0],
    }
    loan = _plain_instrument(api, "ST-LOAN", funder=funder, authority=authority, kind="LOAN", decimals=0)
    payment = _plain_instrument(api, "ST-PAYMENT", funder=funder, authority=authority, kind="STABLECOIN", decimals=2)
    lender = _position(api, "ST-LENDING", funder=funder, owner=payee, instrument=payment)
    records.update(loan=loan, payment=payment, vault=_vault(api, funder=funder, authority=authority, loan=loan, payment=payment, lender=lender), lenderPosition=lender)
    records["webhook"] = {"offchainId": api.call("POST", "webhooks", {"itemData": {
        "name": "schemathesis", "endpointUrl": "https://93.184.215.14/hook", "eventTypes": ["transaction.pre_submit", "transaction.post_submit"]}})["newWebhook"]["offchainId"]}
    records["dataSource"] = _data_source(api, funder=funder, authority=authority, instrument=loan)
    assert tuple(records) == ROLES
    return records


def platform_addresses(*, url: str, secret: str, records: dict) -> dict:
    """The platform's public addresses a tenant can learn (docs/custody.md, "Platform keys"):
    the fee payer names itself in Fetch Transaction Details. The run seeds them into
    generated bodies; no answer may then carry a platform signature over them."""
    # The seeded mint named no feePayer: the platform's paid its fee (every other seed
    # transaction names the funder).
    query = {"limit": 1, "filter": [{"fieldName": "operation", "operator": "AND", "filterValues": [{"dataType": "TEXT", "filterType": "EQUALS", "valueString": "positions.mint"}]}]}
    minted = Api(url, secret).call("POST", "transactions/bulk/detailed", {"itemQuery": query})["items"][0]
    if minted["feePayer"] == records["funder"]["onchainId"]:
        raise SeedError("the seeded mint was paid by the funder: no platform fee payer to seed")
    return {"feePayer": minted["feePayer"]}

