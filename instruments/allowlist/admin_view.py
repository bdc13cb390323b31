"""The allow-list on an instrument's admin page: read from the chain when the page opens,
decoded, read-only (changes go through the API: Add/Remove Allow-List Owners)."""

from __future__ import annotations

from django.urls import reverse
from django.utils.html import format_html, format_html_join

from accounts.models import Account
from ledger_project.api.errors import LedgerError

from .chain import allow_list_program, instrument_allow_list


def has_allow_list(instrument) -> bool:
    return instrument is not None and allow_list_program(instrument) is not None


def _address(address: str, records: dict[str, Account]):
    record = records.get(address)
    if record is None:
        return format_html("<code>{}</code>", address)
    return format_html('<a href="{}"><code>{}</code></a> ({})', reverse("admin:accounts_account_change", args=[record.pk]), address, record.code or record.type)


def allow_list_html(instrument) -> str:
    from chain.errors import ChainError

    try:
        listed = instrument_allow_list(instrument)
    except (ChainError, LedgerError) as exc:
        return format_html("The allow-list could not be read from the network: {}", getattr(exc, "message", None) or str(exc))
    if listed is None:
        return "—"
    if listed.decoded is None:
        return format_html("Not initialized (account <code>{}</code> does not exist): no owner may hold or receive this instrument.", str(listed.address))
    owners = [str(o) for o in listed.owners]
    authority = str(listed.decoded.authority)
    records = {a.address: a for a in Account.unscoped.filter(tenant_id=instrument.tenant_id, cluster=instrument.cluster, address__in=[*owners, authority])}
    rows = format_html_join("", "<li>{}</li>", ((_address(o, records),) for o in owners)) if owners else format_html("<li>{}</li>", "(none)")
    return format_html(
        '<div class="allow-list">Account <code>{}</code> · authority {} · {} of {} owners<ol class="allow-list-owners">{}</ol></div>',
        str(listed.address), _address(authority, records), len(owners), listed.decoded.capacity, rows,
    )
