"""schemathesis hooks (SCHEMATHESIS_HOOKS=scripts.schemathesis_hooks).

- strategies for the custom string formats the OpenAPI declares (ledger_project/api/schema.py);
- filters for rules the OpenAPI states in descriptions only, and for schema-valid cases whose
  custom-format values schemathesis cannot check (addresses, outbound URLs);
- with SCHEMATHESIS_SEED_FILE (scripts/schemathesis_run.py writes it after
  scripts/schemathesis_seed.py): every lookup of a schema-valid body names a seeded record
  of the run's organization (``LOOKUPS``), tenancyConfig overrides name that organization,
  Issue Access Token gets the run's key as client credentials, so that generated requests
  reach the operations' logic instead of 404 (nothing by that name) or 403 (an override
  naming another organization needs PLATFORM_CROSS_TENANT_ACCESS);
- every call gets a fresh x-request-id (``before_call``): deterministic generation, and
  schemathesis's coverage phase above all, reuse one UUID for many different requests,
  which the API answers 409 REQUEST_ID_REUSED (or replays) before any operation logic. A
  deliberately broken id (not a UUID) is left for its 400 INVALID_REQUEST_ID. ``after_call``
  counts the answers (SCHEMATHESIS_TALLY_FILE): how many cases reached the operations'
  logic — neither 409 REQUEST_ID_REUSED nor a replay of a stored answer
  (scripts/schemathesis_run.py prints the share);
- the checks ``valid_request_not_refused_as_invalid`` and ``error_codes_documented``
  (docs/errors.md decides the statuses and codes; docs/api.md, "make schemathesis").
"""

from __future__ import annotations

import copy
import hashlib
import ipaddress
import json
import os
import uuid
from functools import lru_cache
from pathlib import Path

import schemathesis
from hypothesis import strategies as st
from schemathesis.core.parameters import ParameterLocation
from solders.keypair import Keypair
from solders.pubkey import Pubkey

ROOT = Path(__file__).resolve().parent.parent

# "base58-address": the base58 text of a 32-byte public key. The pattern alone also admits
# strings that decode to another length (e.g. 43 "1"s), which the API refuses.
schemathesis.openapi.format("base58-address", st.binary(min_size=32, max_size=32).map(lambda raw: str(Pubkey(raw))))

# "base58-secret-key": a private key to import (base58 of a 64-byte secret key).
schemathesis.openapi.format("base58-secret-key", st.binary(min_size=32, max_size=32).map(lambda seed: str(Keypair.from_seed(seed))))


# "outbound-url": an https URL the service may call. Whether a host resolves, and to public
# addresses, is a fact of DNS, not of the body: generate public IPv4 literals (no lookup).
_public_ipv4 = st.integers(min_value=1 << 24, max_value=(224 << 24) - 1).map(ipaddress.IPv4Address).filter(lambda a: a.is_global)
schemathesis.openapi.format("outbound-url", st.tuples(_public_ipv4, st.from_regex(r"\A(/[a-z0-9]{0,12}){0,3}\Z")).map(lambda parts: f"https://{parts[0]}{parts[1]}"))

# "oracle-job": a market-data job definition, a JSON document in a string (docs/marketdata.md,
# "Job definitions"). Constants and arithmetic only: a generated job calls no URL.
_decimal_text = st.decimals(min_value=-10**6, max_value=10**6, places=4, allow_nan=False, allow_infinity=False).map(str)
_number_tasks = st.lists(st.sampled_from(["multiplyTask", "divideTask"]).flatmap(
    lambda kind: _decimal_text.filter(lambda v: kind == "multiplyTask" or float(v) != 0).map(lambda v: {kind: {"scalar": v}})), max_size=3)
schemathesis.openapi.format("oracle-job", st.tuples(_decimal_text, _number_tasks).map(
    lambda parts: json.dumps({"tasks": [{"valueTask": {"value": parts[0]}}, *parts[1]]})))


# Keys of simpleCustomMetadata are 1 to 64 characters (the schema's x-propertyNames: OpenAPI
# 3.0 cannot say it in a way generators read). Bodies breaking it are schema-invalid too.
def _metadata_keys_ok(node) -> bool:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "simpleCustomMetadata" and isinstance(value, dict) and any(not k or len(k) > 64 for k in value):
                return False
            if not _metadata_keys_ok(value):
                return False
    elif isinstance(node, list):
        return all(_metadata_keys_ok(v) for v in node)
    return True


# Create Financial Instrument: positions start FROZEN only with a freezeAuthority, unless the mint
# is onboarded (alreadyOnchain), which names the mint (mintAccount.onchainId or existingMintAccount). Stated in the OpenAPI's description only: with the other rules of
# CreateInstrumentItemRequest, one more anyOf is past what schemathesis's canonicalizer expands.
def _frozen_ok(body) -> bool:
    if not isinstance(body, dict) or not isinstance(body.get("itemData"), dict):
        return True
    data = body["itemData"]
    if "alreadyOnchain" in data and "alreadyOnChain" in data and data["alreadyOnchain"] != data["alreadyOnChain"]:
        return False  # the two spellings disagree: CONFLICTING_FIELDS (stated in the descriptions only)
    if data.get("alreadyOnchain") is True or data.get("alreadyOnChain") is True:
        # onboarding names the mint
        return data.get("existingMintAccount") is not None or bool((data.get("mintAccount") or {}).get("onchainId"))
    return data.get("defaultPositionState") != "FROZEN" or data.get("freezeAuthority") is not None


@schemathesis.hook
def filter_case(context, case) -> bool:
    if case.operation.method.upper() == "POST" and case.operation.path == "/api/v1/financial-instruments" and not _frozen_ok(case.body):
        return False
    return _metadata_keys_ok(case.body)


# --- seeded records -------------------------------------------------------------------------

_FEE_PAYER = ("svmTransactionConfig", "feePayer")
_AUTHORITIES = ("updateAuthority", "freezeAuthority")

#: (METHOD, path) → {path of a lookup in the body: the seeded record it names}
#: (scripts/schemathesis_seed.py). Every lookup the OpenAPI has is listed
#: (tests/test_schemathesis_hooks.py); None leaves it as generated: existingMintAccount would
#: need a pre-created, empty mint account, and transferHookProgram an executable program.
def _position_lookup(field: str | None, authorities: tuple[str, ...] = ("mintAuthority", "freezeAuthority"), position: str = "holding", owner: str = "holder") -> dict:
    """A Position lookup's parts (itemData.<field>, or itemData itself): the seeded position,
    its owner and instrument, and the authority where one signs."""
    at = ("itemData", field) if field else ("itemData",)
    return {(*at, "position"): position, (*at, "owner"): owner, (*at, "financialInstrument"): "instrument", **{(*at, name): "authority" for name in authorities}}


LOOKUPS: dict[tuple[str, str], dict[tuple[str, ...], str | None]] = {
    ("POST", "/api/v1/accounts"): {_FEE_PAYER: "funder"},
    ("PATCH", "/api/v1/accounts"): {("itemData", "account"): "subject"},
    ("PATCH", "/api/v1/accounts/inactivate"): {_FEE_PAYER: "funder", ("itemData", "account"): "victim", ("itemData", "refundDestination"): "authority"},
    ("POST", "/api/v1/accounts/single"): {("itemData",): "subject"},
    ("POST", "/api/v1/accounts/single/balance"): {("itemData", "account"): "subject"},
    ("POST", "/api/v1/accounts/single/private-key"): {("itemData",): "subject"},
    ("POST", "/api/v1/accounts/single/tenant-info"): {("itemData",): "subject"},
    ("POST", "/api/v1/financial-instruments"): {
        _FEE_PAYER: "funder",
        ("itemData", "existingMintAccount"): None,
        ("itemData", "transferHookProgram"): None,
        **{("itemData", name): "authority" for name in (
            "mintAuthority", *_AUTHORITIES, "permanentDelegateAuthority", "closingAuthority", "pausableAuthority", "scaledUiAmountAuthority",
            "transferHookAuthority", "confidentialTransferAuthority", "confidentialMintBurnAuthority", "allowListAuthority",
        )},
    },
    ("PATCH", "/api/v1/financial-instruments"): {
        _FEE_PAYER: "funder",
        ("itemData", "mintAccount"): "instrument",
        ("itemData", "transferHookProgram"): None,
        **{("itemData", name): "authority" for name in (
            *_AUTHORITIES, "newClosingAuthority", "currentClosingAuthority", "newPausableAuthority", "currentPausableAuthority",
            "newScaledUiAmountAuthority", "currentScaledUiAmountAuthority", "newTransferHookAuthority", "currentTransferHookAuthority",
        )},
    },
    ("PATCH", "/api/v1/financial-instruments/close"): {
        _FEE_PAYER: "funder", ("itemData", "financialInstrumentToClose"): "closable",
        ("itemData", "refundDestination"): "authority", ("itemData", "closeAuthority"): "authority",
    },
    ("PATCH", "/api/v1/financial-instruments/pause"): {_FEE_PAYER: "funder", ("itemData", "financialInstrument"): "instrument", ("itemData", "pausableAuthority"): "authority"},
    ("PATCH", "/api/v1/financial-instruments/unpause"): {_FEE_PAYER: "funder", ("itemData", "financialInstrument"): "instrument", ("itemData", "pausableAuthority"): "authority"},
    # Allow-lists (docs/instruments.md): the seeded instrument has no allow-list hook, so these answer 400 NOT_ALLOW_LIST_HOOK.
    ("POST", "/api/v1/financial-instruments/allow-list"): {
        _FEE_PAYER: "funder", ("itemData", "financialInstrument"): "instrument", ("itemData", "authority"): "authority", ("itemData", "mintAuthority"): "authority",
    },
    ("PATCH", "/api/v1/financial-instruments/allow-list/add"): {_FEE_PAYER: "funder", ("itemData", "financialInstrument"): "instrument", ("itemData", "authority"): "authority"},
    ("PATCH", "/api/v1/financial-instruments/allow-list/remove"): {_FEE_PAYER: "funder", ("itemData", "financialInstrument"): "instrument", ("itemData", "authority"): "authority"},
    ("POST", "/api/v1/financial-instruments/allow-list/single"): {("itemData", "financialInstrument"): "instrument"},
    ("POST", "/api/v1/financial-instruments/single"): {("itemData",): "instrument"},
    ("POST", "/api/v1/financial-instruments/single/circulating-supply"): {("itemData",): "instrument"},
    ("POST", "/api/v1/transactions/single/status"): {("itemData", "transaction"): "transaction"},
    ("PATCH", "/api/v1/transactions/approve"): {("itemData", "transaction"): "transaction"},
    ("PATCH", "/api/v1/transactions/reject"): {("itemData", "transaction"): "transaction"},
    # Sign Transaction's signers are arrays of lookups: generated ones stay as they are (the
    # seeded transaction has landed, so Sign answers 400 INVALID_TRANSACTION_STATE first).
    ("PATCH", "/api/v1/transactions/sign"): {("itemData", "transaction"): "transaction"},
    ("PATCH", "/api/v1/transactions/submit"): {("itemData", "transaction"): "transaction"},
    ("PATCH", "/api/v1/transactions/withdraw"): {("itemData", "transaction"): "transaction"},
    ("POST", "/api/v1/transactions/single"): {("itemData", "transaction"): "transaction"},
    ("POST", "/api/v1/positions"): {_FEE_PAYER: "funder", ("itemData", "owner"): "subject", ("itemData", "financialInstrument"): "instrument"},
    ("PATCH", "/api/v1/positions"): {_FEE_PAYER: "funder", **_position_lookup("position"), ("itemData", "delegate", "account"): "authority"},
    ("PATCH", "/api/v1/positions/freeze"): {_FEE_PAYER: "funder", **_position_lookup("position")},
    ("PATCH", "/api/v1/positions/unfreeze"): {_FEE_PAYER: "funder", **_position_lookup("position")},
    ("PATCH", "/api/v1/positions/inactivate"): {_FEE_PAYER: "funder", **_position_lookup("position"), ("itemData", "refundDestination"): "authority"},
    ("POST", "/api/v1/positions/mint"): {_FEE_PAYER: "funder", **_position_lookup("position", ("mintAuthority",))},
    ("POST", "/api/v1/positions/burn"): {_FEE_PAYER: "funder", **_position_lookup("position", ()), ("itemData", "authority"): "authority"},
    ("POST", "/api/v1/positions/transfer"): {
        _FEE_PAYER: "funder", **_position_lookup("source", ()), **_position_lookup("destination", (), "receiving", "payee"),
        ("itemData", "authority"): "authority",
    },
    ("POST", "/api/v1/positions/trade"): {_FEE_PAYER: "funder"},  # legs are arrays: generated lookups stay as they are
    ("POST", "/api/v1/positions/transfer-network-currency"): {_FEE_PAYER: "funder", ("itemData", "source"): "subject", ("itemData", "destination"): "authority"},
    # Batch payouts (docs/positions.md): items are arrays of transfers, their lookups stay generated.
    ("POST", "/api/v1/positions/transfer/batch"): {_FEE_PAYER: "funder"},
    ("POST", "/api/v1/positions/transfer-network-currency/batch"): {_FEE_PAYER: "funder"},
    # Threshold keys: the seeded accounts have no threshold key (400 NOT_A_DKG_ACCOUNT, a rule of the record).
    ("POST", "/api/v1/accounts/dkg/refresh"): {("itemData", "account"): "subject"},
    ("POST", "/api/v1/transactions/dkg/open"): {("itemData", "account"): "subject", ("itemData", "transaction"): "transaction"},
    ("POST", "/api/v1/positions/single"): _position_lookup(None),
    ("POST", "/api/v1/positions/single/balance"): _position_lookup(None),
    # Address lookup tables (docs/lookup-tables.md): updates (freeze, deactivate, close: one-way)
    # name their own table, so the extended and fetched one stays ACTIVE.
    ("POST", "/api/v1/address-lookup-tables"): {_FEE_PAYER: "funder", ("itemData", "authority"): "authority"},
    ("PATCH", "/api/v1/address-lookup-tables"): {_FEE_PAYER: "funder", ("itemData", "addressLookupTable"): "retiringTable", ("itemData", "recipient"): "authority"},
    ("PATCH", "/api/v1/address-lookup-tables/extend"): {_FEE_PAYER: "funder", ("itemData", "addressLookupTable"): "lookupTable"},
    ("POST", "/api/v1/address-lookup-tables/single"): {("itemData", "addressLookupTable"): "lookupTable"},
}

#: Operations that fund rent (docs/lookup-tables.md, "Who pays"): a body with no
#: svmTransactionConfig at all gets the seeded funder as feePayer, or nearly every generated
#: body would be 400 FUNDING_ACCOUNT_REQUIRED (the run's server has no localnet airdrop
#: funding); a generated svmTransactionConfig is left as it is.
FUNDED = {("POST", "/api/v1/address-lookup-tables"), ("PATCH", "/api/v1/address-lookup-tables/extend")}

#: Operations whose itemData.componentAddresses (an array of lookups, which LOOKUPS cannot map)
#: is rewritten to fresh off-platform addresses: generated lookups name nothing (404), and a
#: seeded record could be stored only once per table (DUPLICATE_ADDRESS).
COMPONENT_LISTS = {("POST", "/api/v1/address-lookup-tables"), ("PATCH", "/api/v1/address-lookup-tables/extend")}


def fresh_components(items: list) -> list:
    """Each lookup of ``items`` replaced by a new address the service does not know."""
    return [{"onchainId": str(Keypair().pubkey()), "offPlatform": True} if isinstance(item, dict) else item for item in items]

LOOKUPS[("POST", "/api/v1/durable-nonce-accounts")] = {_FEE_PAYER: "funder", ("itemData", "nonceAuthority"): "authority"}
LOOKUPS[("POST", "/api/v1/durable-nonce-accounts/single")] = {("itemData", "durableNonceAccount"): "nonce"}
# The webhook registry (docs/webhooks.md): a webhook is named by its offchainId.
LOOKUPS[("PATCH", "/api/v1/webhooks")] = {("itemData", "webhook"): "webhook"}
LOOKUPS[("POST", "/api/v1/webhooks/single")] = {("itemData",): "webhook"}
LOOKUPS[("POST", "/api/v1/webhooks/single/signing-secret")] = {("itemData",): "webhook"}
LOOKUPS[("POST", "/api/v1/webhooks/replay")] = {("itemData", "webhook"): "webhook"}
# Every transaction-building operation may name one of the tenant's nonce accounts
# (svmTransactionConfig.durableNonceAccount): the seeded one.
for _fields in LOOKUPS.values():
    if _FEE_PAYER in _fields:
        _fields[("svmTransactionConfig", "durableNonceAccount")] = "nonce"

# Loan remittance vaults (docs/vaults.md): the seeded vault and its whitelisted lender; a
# creation names the seeded loan with ``instrument`` as payment (another pair than the vault's).
_VAULTS = "/api/v1/platform-programs/loan-remittance"
_VAULT_DESTINATION = {("itemData", "destination", "position"): "lenderPosition", ("itemData", "destination", "owner"): "payee"}
LOOKUPS[("POST", f"{_VAULTS}/create-vault")] = {
    _FEE_PAYER: "funder", ("svmTransactionConfig", "durableNonceAccount"): "nonce", ("itemData", "loanFinancialInstrument"): "loan",
    ("itemData", "paymentFinancialInstrument"): "instrument", ("itemData", "admin"): "authority", ("itemData", "loanMintAuthority"): "authority",
}
for _operation, _extra in (("update-whitelist", _VAULT_DESTINATION), ("repayment", _VAULT_DESTINATION), ("close-vault", {("itemData", "refundDestination"): "authority"})):
    LOOKUPS[("POST", f"{_VAULTS}/{_operation}")] = {
        _FEE_PAYER: "funder", ("svmTransactionConfig", "durableNonceAccount"): "nonce", ("itemData", "vault"): "vault", ("itemData", "admin"): "authority", **_extra,
    }
LOOKUPS[("POST", f"{_VAULTS}/vault-details")] = {("itemData",): "vault"}
FUNDED.add(("POST", f"{_VAULTS}/create-vault"))  # the vault's rent (docs/vaults.md, "Who signs, who pays")

# Loans (docs/loans.md): no loan or strategy is seeded (a loan needs a strategy, price feeds
# and collateral on chain), so generated escrows and strategies name nothing (404); the
# accounts and instruments a body names are the seeded ones, the borrower (fee payer) the funder.
_LOANS = "/api/v1/loans"
for _method, _path, _extra in (
    ("POST", "", {}), ("PATCH", "/swap-collateral", {}), ("PATCH", "/repay", {}),
    ("PATCH", "/close", {("itemData", "borrower"): "funder", ("itemData", "transferRentRefundTo"): "authority"}),
    ("PATCH", "/refinance", {("itemData", "fromLender"): "authority", ("itemData", "toLender"): "authority"}),
    ("POST", "/strategies", {("itemData", "lender"): "authority"}), ("PATCH", "/strategies", {}),
    ("PATCH", "/strategies/liquidity", {("itemData", "financialInstrument"): "instrument", **_position_lookup("source", ()), **_position_lookup("destination", ())}),
):
    LOOKUPS[(_method, f"{_LOANS}{_path}")] = {_FEE_PAYER: "funder", ("svmTransactionConfig", "durableNonceAccount"): "nonce", **_extra}

# Market data (docs/marketdata.md): the seeded data source; a creation prices ``instrument``
# (the seeded source prices ``loan``), an onboarding names whatever was generated.
_MARKET_DATA = "/api/v1/market-data/onchain-data-source"
LOOKUPS[("POST", _MARKET_DATA)] = {
    _FEE_PAYER: "funder", ("svmTransactionConfig", "durableNonceAccount"): "nonce", ("itemData", "financialInstrument"): "instrument",
    ("itemData", "oracleDataSourceAuthority"): "authority", ("itemData", "existingOnchainDataSourceAccount"): None,
}
LOOKUPS[("PATCH", _MARKET_DATA)] = {_FEE_PAYER: "funder", ("svmTransactionConfig", "durableNonceAccount"): "nonce", ("itemData", "onchainDataSource"): "dataSource"}
LOOKUPS[("PATCH", f"{_MARKET_DATA}/refresh")] = {("itemData", "onchainDataSource"): "dataSource"}
LOOKUPS[("POST", f"{_MARKET_DATA}/single")] = {("itemData", "onchainDataSource"): "dataSource"}
FUNDED.add(("POST", _MARKET_DATA))  # the feed's rent


def lookup_naming(record: dict, generated: dict) -> dict:
    """A lookup naming ``record`` the way ``generated`` named its record — by offchainId,
    onchainId or offchainReferences (alId when it used one and the record has one, else
    code) — so each way of looking up is exercised; autoSign and offPlatform are kept, and
    otherTenantOrganizationExternalId is cleared (the record is the acting organization's)."""
    lookup = {key: generated[key] for key in ("autoSign", "offPlatform") if key in generated}
    if "otherTenantOrganizationExternalId" in generated:
        lookup["otherTenantOrganizationExternalId"] = None
    refs = generated.get("offchainReferences")
    if generated.get("offchainId") or not (generated.get("onchainId") or refs or "code" in record):
        lookup["offchainId"] = record["offchainId"]
    elif generated.get("onchainId") or "code" not in record:
        lookup["onchainId"] = record["onchainId"]
    else:
        lookup["offchainReferences"] = {"alId": record["alId"]} if isinstance(refs, dict) and refs.get("alId") and record.get("alId") else {"code": record["code"]}
    return lookup


def seeded_body(method: str, path: str, body, seed: dict):
    """``body`` with every lookup ``LOOKUPS`` maps naming its seeded record, and a
    tenancyConfig override naming the run's organization. Bodies that are not objects, and
    lookups that are null or not objects, stay as they are."""
    if not isinstance(body, dict):
        return body
    body = copy.deepcopy(body)  # the generated value stays untouched
    for where, role in LOOKUPS.get((method.upper(), path), {}).items():
        if role is None:
            continue
        *parents, last = where
        node = body
        for key in parents:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and isinstance(node.get(last), dict):
            node[last] = lookup_naming(seed["records"][role], node[last])
    item = body.get("itemData")
    if (method.upper(), path) in COMPONENT_LISTS and isinstance(item, dict) and isinstance(item.get("componentAddresses"), list):
        item["componentAddresses"] = fresh_components(item["componentAddresses"])
    if (method.upper(), path) in FUNDED and body.get("svmTransactionConfig") is None:
        body["svmTransactionConfig"] = {"feePayer": {"offchainId": seed["records"]["funder"]["offchainId"]}}
    tenancy = body.get("tenancyConfig")
    if isinstance(tenancy, dict) and tenancy.get("overrideOrganizationExternalId"):
        tenancy["overrideOrganizationExternalId"] = seed["organization"]
    # OAuth client credentials (JSON or form body): the run's own key, so tokens are issued.
    if (method.upper(), path) == ("POST", "/api/v1/auth/token") and "apiKey" in seed:
        for field, name in (("client_id", "keyId"), ("client_secret", "secret")):
            if isinstance(body.get(field), str):
                body[field] = seed["apiKey"][name]
    return body


@lru_cache(maxsize=1)
def _seed() -> dict | None:
    path = os.environ.get("SCHEMATHESIS_SEED_FILE")
    return json.loads(Path(path).read_text()) if path else None


def _is_uuid(value) -> bool:
    try:
        return str(uuid.UUID(str(value))) == str(value).lower()
    except ValueError:
        return False


def lookup_paths(node, path=()):
    """Where ``node`` names an account: every object with an onchainId or offchainId."""
    if isinstance(node, dict):
        if "onchainId" in node or "offchainId" in node:
            yield path
            return
        for key, value in node.items():
            yield from lookup_paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from lookup_paths(value, (*path, index))


def with_platform_address(body, address: str, choice: int):
    """``body`` with one of its lookups (the ``choice``-th, cyclically) naming ``address``, a
    platform key's public address (docs/custody.md, "Platform keys"); None if it has none."""
    paths = list(lookup_paths(body))
    if not paths:
        return None
    where = paths[choice % len(paths)]
    body = copy.deepcopy(body)
    node = body
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = {"onchainId": address}
    return body


@schemathesis.hook
def map_case(context, case):
    seed = _seed()
    meta = case.meta
    if seed is None or meta is None:
        return case
    method, path = case.operation.method.upper(), case.operation.path
    if not meta.is_negative_at(ParameterLocation.BODY):
        mapped = seeded_body(method, path, case.body, seed)
        # One body in four names the platform fee payer in one of its lookups (which one
        # follows from the body, so the run stays deterministic): the answer is a 4xx, or
        # a transaction the platform signs as fee payer only (check below).
        choice = int(hashlib.sha256(repr((method, path, case.query, mapped)).encode()).hexdigest()[:8], 16)
        if (seed.get("platform") or {}).get("feePayer") and choice % 4 == 0:
            mapped = with_platform_address(mapped, seed["platform"]["feePayer"], choice // 4) or mapped
        if mapped != case.body:
            case.body = mapped
    return case


# --- outbound URLs --------------------------------------------------------------------------

_OUTBOUND_URL_FIELDS = ("endpointUrl", "accessTokenUrl")


def _outbound_urls_decidable(node) -> bool:
    """Whether every outbound URL in ``node`` is an https URL with a public IPv4 literal
    host — what the "outbound-url" strategy above draws. A schema-valid URL must have a
    host that resolves to public addresses only: the pattern cannot say it and
    schemathesis's coverage phase, which draws from the pattern (e.g. "https://000…0"), does
    not know the format, so its other URLs may or may not be valid."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _OUTBOUND_URL_FIELDS and isinstance(value, str):
                host = value[len("https://"):].split("/", 1)[0].split("?", 1)[0].split("#", 1)[0] if value.startswith("https://") else ""
                try:
                    if not ipaddress.IPv4Address(host).is_global:
                        return False
                except ValueError:
                    return False
            elif not _outbound_urls_decidable(value):
                return False
    elif isinstance(node, list):
        return all(_outbound_urls_decidable(v) for v in node)
    return True


@schemathesis.hook("filter_case")
def outbound_urls_decidable(context, case) -> bool:
    meta = case.meta
    if meta is None or meta.is_negative_at(ParameterLocation.BODY):
        return True
    return _outbound_urls_decidable(case.body)


# --- addresses --------------------------------------------------------------------------------

def _is_address(value) -> bool:
    try:
        Pubkey.from_string(value)
    except (TypeError, ValueError):
        return False
    return True


#: request properties that hold one address (format base58-address; a test keeps the list
#: complete against the OpenAPI). The coverage phase draws their values from the pattern
#: and lengths, which also admit strings that are not 32 bytes (43 "1"s).
ADDRESS_KEYS = ("onchainId", "publickKey", "loanStrategyAddress")


def addresses_decodable(node, *, signatures: bool = False) -> bool:
    """Whether every "base58-address" value in ``node`` is the base58 of 32 bytes: lookups'
    and new accounts' onchainId, publickKey, addressLookupTables, and ONCHAIN_ADDRESS_ID
    filter values. schemathesis knows the format only as a strategy: a value it takes from
    a response (a transaction signature, 88 characters) is schema-valid to it, and refused
    400 INVALID_ADDRESS by the API. ``signatures``: onchainId names a transaction there
    (Fetch Transaction Status), not an address."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ADDRESS_KEYS and isinstance(value, str) and not (signatures and key == "onchainId"):
                if not _is_address(value):
                    return False
            elif key == "addressLookupTables" and isinstance(value, list):
                if not all(isinstance(v, str) and _is_address(v) for v in value):
                    return False
            elif node.get("dataType") == "ONCHAIN_ADDRESS_ID" and key in ("valueString", "valuesString"):
                values = value if isinstance(value, list) else [value]
                if not all(_is_address(v) for v in values if isinstance(v, str)):
                    return False
            elif not addresses_decodable(value, signatures=signatures):
                return False
    elif isinstance(node, list):
        return all(addresses_decodable(v, signatures=signatures) for v in node)
    return True


def without_transaction_identifier(body):
    """``body`` without ``itemData.transaction``: it names a transaction, whose onchainId is a
    signature, not an address; the other lookups of the Blockchain transactions operations
    (Sign Transaction's signers) name accounts by address."""
    if isinstance(body, dict) and isinstance(body.get("itemData"), dict) and "transaction" in body["itemData"]:
        return {**body, "itemData": {k: v for k, v in body["itemData"].items() if k != "transaction"}}
    return body


@schemathesis.hook("filter_case")
def positive_addresses_decodable(context, case) -> bool:
    meta = case.meta
    if meta is None or meta.is_negative_at(ParameterLocation.BODY):
        return True
    body = without_transaction_identifier(case.body) if case.operation.path.startswith("/api/v1/transactions/") else case.body
    return addresses_decodable(body, signatures=case.operation.path in SIGNATURE_LOOKUPS)


#: Operations whose itemData.transaction.onchainId is a transaction signature, not an address.
SIGNATURE_LOOKUPS = {"/api/v1/transactions/single/status", "/api/v1/transactions/single"}


# The checks (docs/errors.md decides the statuses; platform keys sign only as fee payer) live
# in scripts/schemathesis_checks.py; importing it registers them with schemathesis.
# A fresh x-request-id per call and the tally of what the calls reached: scripts/schemathesis_request_ids.py.
from scripts import schemathesis_checks, schemathesis_request_ids  # noqa: E402,F401
