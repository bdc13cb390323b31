""""Open on the chain": the raw account or transaction as the cluster answers it
(docs/admin.md, "Open on the chain"), read through chain/rpc.py.

A model shows the link when it is listed in ``CHAIN_RECORDS`` (its label → how to find
what to read). Areas added later register theirs with ``chain_record_register``. The page
needs the view permission of the record; it reads, it never writes.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from dataclasses import dataclass
from typing import Callable

from django.conf import settings
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse

from ledger_project.api.errors import LedgerError


@dataclass(frozen=True)
class ChainRecord:
    kind: str  # "account" or "transaction"
    #: the address or signature of a record ("" when it has none yet)
    locate: Callable[[object], str]
    #: the cluster of a record
    cluster: Callable[[object], str] = lambda obj: getattr(obj, "cluster", "") or settings.LEDGER_DEFAULT_CLUSTER
    #: the account's data decoded by its program's client (e.g. price_feed.client.decode_feed),
    #: shown next to the raw answer; None when the raw answer is all there is
    decode: Callable[[bytes], object] | None = None


CHAIN_RECORDS: dict[str, ChainRecord] = {
    "accounts.account": ChainRecord("account", lambda a: a.address),
    "custody.managedkey": ChainRecord("account", lambda k: k.public_key, lambda k: settings.LEDGER_DEFAULT_CLUSTER),
    "instruments.financialinstrument": ChainRecord("account", lambda i: i.address),
    "positions.position": ChainRecord("account", lambda p: p.address),
    "transactions.transaction": ChainRecord("transaction", lambda t: t.onchain_id or ""),
    "transactions.nonceaccount": ChainRecord("account", lambda n: n.address),
    "lookup_tables.addresslookuptable": ChainRecord("account", lambda t: t.address),
    "transactions.programdeployment": ChainRecord("account", lambda p: p.program_id),
    # A vault's state account (its whitelist and sequence, docs/vaults.md); its token
    # account is its position's page.
    "vaults.vault": ChainRecord("account", lambda v: v.state_address),
}


def chain_record_register(label: str, record: ChainRecord) -> None:
    CHAIN_RECORDS[label] = record


def chain_url(obj, site_name: str = "admin") -> str | None:
    """The "open on the chain" page of ``obj``, or None when its model has none."""
    label = obj._meta.label_lower
    if label not in CHAIN_RECORDS:
        return None
    try:
        return reverse(f"{site_name}:backoffice_chain", args=[obj._meta.app_label, obj._meta.model_name, quote(obj.pk)])
    except NoReverseMatch:
        return None


def chain_read(record: ChainRecord, obj) -> dict:
    """What the cluster answers for ``obj``: {cluster, kind, locator, answer | error}."""
    from chain.errors import ChainError
    from chain.rpc import rpc_for

    cluster, locator = record.cluster(obj), record.locate(obj)
    out = {"cluster": cluster, "kind": record.kind, "locator": locator, "answer": None, "error": ""}
    if not locator:
        out["error"] = "This record has no address or signature on the network yet."
        return out
    try:
        rpc = rpc_for(cluster)
        answer = rpc.account_raw(locator) if record.kind == "account" else rpc.transaction_raw(locator)
    except (ChainError, LedgerError) as exc:
        out["error"] = getattr(exc, "message", None) or str(exc)
        return out
    out["answer"] = answer
    if record.decode is not None:
        out["decoded"], out["decode_error"] = decoded(record.decode, answer)
    return out


def _plain(value):
    """A client's decoded dataclass as JSON-able data: keys as base58, bytes as hex."""
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, (int, str, bool)) or value is None:
        return value
    return str(value)  # Pubkey and the like


def decoded(decode: Callable[[bytes], object], answer: dict) -> tuple[object | None, str]:
    """(the account's data decoded, "") or (None, why not) from a getAccountInfo answer
    whose data is base64 (a program's own account: jsonParsed does not parse it)."""
    value = ((answer or {}).get("result") or {}).get("value")
    if value is None:
        return None, ""
    data = value.get("data")
    if not (isinstance(data, list) and len(data) == 2 and data[1] == "base64"):
        return None, "The cluster did not answer the account's data as bytes."
    try:
        return _plain(decode(base64.b64decode(data[0]))), ""
    except ValueError as exc:
        return None, f"Not decoded: {exc}"


def chain_view(request, app_label: str, model_name: str, object_id: str):
    from django.contrib import admin

    label = f"{app_label}.{model_name}"
    record = CHAIN_RECORDS.get(label)
    site = admin.site
    model_admin = next((ma for model, ma in site._registry.items() if model._meta.label_lower == label), None)
    if record is None or model_admin is None:
        raise Http404("This kind of record has no page on the chain.")
    obj = model_admin.get_object(request, unquote(object_id))
    if obj is None:
        raise Http404("No such record.")
    if not model_admin.has_view_or_change_permission(request, obj):
        raise PermissionDenied
    read = chain_read(record, obj)
    opts = obj._meta
    context = {
        **site.each_context(request),
        "title": f"On the chain: {obj}",
        "opts": opts,
        "original": obj,
        "read": read,
        "answer_json": json.dumps(read["answer"], indent=2, sort_keys=True) if read["answer"] is not None else "",
        "decoded_json": json.dumps(read["decoded"], indent=2) if read.get("decoded") is not None else "",
        "change_url": reverse(f"{site.name}:{opts.app_label}_{opts.model_name}_change", args=[quote(obj.pk)]),
    }
    return TemplateResponse(request, "admin/backoffice/chain.html", context)
