"""schemathesis hooks (SCHEMATHESIS_HOOKS=scripts.schemathesis_hooks): strategies for the
custom string formats the OpenAPI declares (ledger_project/api/schema.py)."""

from __future__ import annotations

import ipaddress

import schemathesis
from hypothesis import strategies as st
from solders.keypair import Keypair
from solders.pubkey import Pubkey

# "base58-address": the base58 text of a 32-byte public key. The pattern alone also admits
# strings that decode to another length (e.g. 43 "1"s), which the API refuses.
schemathesis.openapi.format("base58-address", st.binary(min_size=32, max_size=32).map(lambda raw: str(Pubkey(raw))))

# "base58-secret-key": a private key to import (base58 of a 64-byte secret key).
schemathesis.openapi.format("base58-secret-key", st.binary(min_size=32, max_size=32).map(lambda seed: str(Keypair.from_seed(seed))))


# "outbound-url": an https URL the service may call. Whether a host resolves, and to public
# addresses, is a fact of DNS, not of the body: generate public IPv4 literals (no lookup).
_public_ipv4 = st.integers(min_value=1 << 24, max_value=(224 << 24) - 1).map(ipaddress.IPv4Address).filter(lambda a: a.is_global)
schemathesis.openapi.format("outbound-url", st.tuples(_public_ipv4, st.from_regex(r"\A(/[a-z0-9]{0,12}){0,3}\Z")).map(lambda parts: f"https://{parts[0]}{parts[1]}"))

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
    if data.get("alreadyOnchain") is True or data.get("alreadyOnChain") is True:
        # onboarding names the mint
        return data.get("existingMintAccount") is not None or bool((data.get("mintAccount") or {}).get("onchainId"))
    return data.get("defaultPositionState") != "FROZEN" or data.get("freezeAuthority") is not None


@schemathesis.hook
def filter_case(context, case) -> bool:
    if case.operation.method.upper() == "POST" and case.operation.path == "/api/v1/financial-instruments" and not _frozen_ok(case.body):
        return False
    return _metadata_keys_ok(case.body)
