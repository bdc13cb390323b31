"""Links between records that foreign keys do not make (docs/admin.md, "Detail pages").

Foreign keys are links both ways already (a read-only foreign key is a link to its
record; "Related records" lists what points at a record, templatetags/backoffice.py).
Records are also related by address and by offchain id: a transaction names accounts,
positions, mints, lookup tables and nonce accounts by address in its message, and the
records its operation wrote by offchain id in its effects; an account signs transactions
(``TransactionSigner``); an instrument's webhooks name it by offchain id. This module
finds those records — one indexed query per kind of record — and the transaction page's
decoded view (``transaction_view``), rendered from the same ``transaction_details`` the
API's Fetch Transaction Details answers with.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

from django.apps import apps
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.urls import NoReverseMatch, reverse

#: Records found by an address on a cluster: (model label, address field). Each pair is
#: indexed with the cluster (a unique constraint or an index).
ADDRESS_FIELDS = (
    ("accounts.account", "address"),
    ("positions.position", "address"),
    ("instruments.financialinstrument", "address"),
    ("lookup_tables.addresslookuptable", "address"),
    ("transactions.nonceaccount", "address"),
    ("transactions.programdeployment", "program_id"),
)
#: operationRecords types (transactions/details.py) → model label
OPERATION_RECORD_MODELS = {"ACCOUNT": "accounts.account", "FINANCIAL_INSTRUMENT": "instruments.financialinstrument", "POSITION": "positions.position"}
#: at most this many records of one kind are looked up for one page
LOOKUP_LIMIT = 500


def _admin_for(request, label: str):
    """The ModelAdmin of ``label`` if the user may see its records, else None."""
    try:
        model = apps.get_model(label)
    except LookupError:
        return None
    model_admin = admin.site._registry.get(model)
    if model_admin is None or (request is not None and not model_admin.has_view_or_change_permission(request)):
        return None
    return model_admin


def change_url(model, pk) -> str | None:
    try:
        return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[quote(pk)])
    except NoReverseMatch:
        return None


def changelist_url(label: str, **query) -> str | None:
    app_label, model_name = label.split(".")
    try:
        base = reverse(f"admin:{app_label}_{model_name}_changelist")
    except NoReverseMatch:
        return None
    return f"{base}?{urlencode(query)}" if query else base


def records_at(request, cluster: str, addresses) -> dict[str, list[dict]]:
    """address → [{label, url}] of the records at that address on ``cluster`` that the user
    may see (an account and its position share one address)."""
    wanted = sorted({a for a in addresses if a})
    found: dict[str, list[dict]] = {}
    if not wanted:
        return found
    for label, field in ADDRESS_FIELDS:
        model_admin = _admin_for(request, label)
        if model_admin is None:
            continue
        model = model_admin.model
        rows = model._default_manager.filter(cluster=cluster, **{f"{field}__in": wanted}).order_by().values_list("pk", field)[:LOOKUP_LIMIT]
        for pk, address in rows:
            url = change_url(model, pk)
            if url:
                found.setdefault(address, []).append({"label": str(model._meta.verbose_name), "url": url})
    return found


def records_by_offchain_id(request, refs: list[dict]) -> list[dict]:
    """The operation's records (``[{type, offchainId}]``) as [{type, offchainId, label, url}]
    (url None when the record is gone or not the user's to see)."""
    by_label: dict[str, list[str]] = {}
    for ref in refs:
        label = OPERATION_RECORD_MODELS.get(ref["type"])
        if label:
            by_label.setdefault(label, []).append(ref["offchainId"])
    urls: dict[tuple[str, str], tuple[str, str]] = {}
    for label, ids in by_label.items():
        model_admin = _admin_for(request, label)
        if model_admin is None:
            continue
        model = model_admin.model
        for pk, offchain_id, shown in model._default_manager.filter(offchain_id__in=ids).values_list("pk", "offchain_id", "address")[:LOOKUP_LIMIT]:
            urls[(label, str(offchain_id))] = (change_url(model, pk), shown)
    out = []
    for ref in refs:
        url, shown = urls.get((OPERATION_RECORD_MODELS.get(ref["type"], ""), ref["offchainId"]), (None, ""))
        out.append({**ref, "url": url, "address": shown})
    return out


#: label → functions (obj) → [(target label, link text, query)]: links an area adds for
#: records related by address or offchain id (``related_link_register``)
RELATED_LINKS: dict[str, list] = {}


def related_link_register(label: str, links) -> None:
    """``links(obj)`` → [(target label, text, {query})]: each a link on ``label``'s page to
    the target's list filtered by the query (shown to who may see the target; no query)."""
    RELATED_LINKS.setdefault(label, []).append(links)


def extra_related_links(request, obj) -> list[dict]:
    """Related records that no foreign key names, as links to their lists filtered on
    ``obj`` (no counts, no query): an account's transactions (those it signs) and network
    events, a transaction's webhook events, an instrument's webhooks, a webhook's
    instrument."""
    label = obj._meta.label_lower
    links = []

    def add(target: str, text: str, **query) -> None:
        if _admin_for(request, target) is not None:
            url = changelist_url(target, **query)
            if url:
                links.append({"label": text, "url": url})

    if label == "accounts.account" and obj.address:
        add("transactions.transaction", "transactions (signed by this account)", signer=obj.address)
        add("webhooks.webhookevent", "webhook events (network events of this account)", subject__exact=f"account:{obj.address}", cluster__exact=obj.cluster)
    elif label == "transactions.transaction":
        add("webhooks.webhookevent", "webhook events (about this transaction)", subject__exact=f"transaction:{obj.offchain_id}")
    elif label == "instruments.financialinstrument":
        add("webhooks.webhooksubscription", "webhook subscriptions (of this instrument)", instrument_offchain_id__exact=str(obj.offchain_id))
    elif label == "webhooks.webhooksubscription" and obj.instrument_offchain_id:
        add("instruments.financialinstrument", "financial instruments (this webhook's)", offchain_id__exact=str(obj.instrument_offchain_id))
    for registered in RELATED_LINKS.get(label, ()):
        for target, text, query in registered(obj):
            add(target, text, **query)
    return links


def _pretty(data) -> str:
    return json.dumps(data, indent=2, sort_keys=True) if data is not None else ""


def transaction_view(request, tx) -> dict:
    """The transaction page's decoded view: ``transaction_details`` (what Fetch Transaction
    Details answers) with each address linked to the records at it. A transaction held for
    approval shows which signers signed, not their signatures: with the message, every
    signature would let anyone send it before the decision (the API withholds its
    onchainId for the same reason)."""
    from transactions.details import transaction_details

    if not bytes(tx.message or b""):
        return {"empty": True}  # no message stored (never the service's own rows: a hand-made record)
    details = transaction_details(tx)
    addresses = {a["onchainId"] for a in details["accounts"]} | {s["onchainId"] for s in details["requiredSigners"]}
    addresses |= {lookup["onchainId"] for lookup in details["addressTableLookups"]}
    links = records_at(request, tx.cluster, addresses)
    withheld = tx.approval_required
    signatures = tx.signatures or {}
    signers = [{**s, "signature": None if withheld else signatures.get(s["onchainId"]), "links": links.get(s["onchainId"], [])} for s in details["requiredSigners"]]
    accounts = [{**a, "index": i, "links": links.get(a["onchainId"], [])} for i, a in enumerate(details["accounts"])]
    instructions = []
    for ix in details["instructions"]:
        instructions.append({
            **ix,
            "program_links": links.get(ix["programId"], []),
            "data_json": _pretty(ix["data"]),
            "accounts": [{**a, "links": links.get(a["onchainId"], [])} for a in ix["accounts"]],
        })
    lookups = [{**lookup, "links": links.get(lookup["onchainId"], [])} for lookup in details["addressTableLookups"]]
    return {
        "details": details,
        "signers": signers,
        "signatures_withheld": withheld,
        "accounts": accounts,
        "instructions": instructions,
        "lookups": lookups,
        "records": records_by_offchain_id(request, details["operationRecords"]),
        "logs": "\n".join(details["logMessages"]) if details["logMessages"] is not None else None,
    }
