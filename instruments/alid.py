"""Financial instrument identifier (spec: alId): AL{category}{type}{8-digit sequence}.

A given alId must match the pattern with a type of its category. A generated one takes
the next free number of the organization's own (cluster, category, type) sequence, locked
and incremented inside the request's database transaction: a request that fails rolls its
number back with everything else, numbers already taken by given alIds (of instruments or
of any account of the organization) are skipped, and another organization's issuance is
never visible in the numbers (docs/instruments.md, alId).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ledger_project.api.errors import LedgerError

#: category → (code, {type: code}) — the spec's table.
CATEGORIES: dict[str, tuple[str, dict[str, str]]] = {
    "FIXED_INCOME": ("FI", {
        "BROKER_CD": "BCD", "CORPORATE_BOND": "CBD", "CORPORATE_LOAN": "CLN", "LOAN": "L", "MUNI_BOND": "MBD",
        "MUNI_LOAN": "MLN", "AUTO_LOAN": "AUTO", "MUNI_PRIVATE_PLACEMENT": "MPP", "MUNI_LIMITED_OFFERING": "MLO",
    }),
    "FUND": ("FND", {"PRIVATE_FUND": "PF"}),
    "EQUITY": ("EQY", {"STOCK": "STC", "ETF": "ETF"}),
    "CURRENCY": ("FX", {"FIAT_CURRENCY": "FC", "STABLECOIN": "SC"}),
    "CRYPTO": ("CR", {"PROTOCOL_TOKEN": "PT", "NFT": "NFT", "LAYER_1_TOKEN": "L1T", "LAYER_2_TOKEN": "L2T"}),
}
#: The offchain reference type each category's mint takes (spec rule).
CURRENCY_CATEGORY = "CURRENCY"


@dataclass(frozen=True)
class InstrumentKind:
    category: str
    instrument_type: str
    category_code: str
    type_code: str

    @property
    def reference_type(self) -> str:
        return "CURRENCY_TOKEN" if self.category == CURRENCY_CATEGORY else "ASSET_TOKEN"

    def al_id(self, sequence: int) -> str:
        return f"AL{self.category_code}{self.type_code}{sequence:08d}"


_BY_TYPE = {t: InstrumentKind(c, t, cc, tc) for c, (cc, types) in CATEGORIES.items() for t, tc in types.items()}
_BY_CODES = {(k.category_code, k.type_code): k for k in _BY_TYPE.values()}
# Longest codes first so "FND"+"PF" is never read as "FN"+...; codes are upper-case letters/digits.
_PATTERN = re.compile(r"^AL(?P<category>%s)(?P<type>[A-Z0-9]+?)(?P<sequence>\d{8})$" % "|".join(sorted({cc for cc, _ in CATEGORIES.values()}, key=len, reverse=True)))


def kind_for_type(name: str, *, field: str) -> InstrumentKind:
    """A financialInstrumentType by name (CORPORATE_BOND) or code (CBD)."""
    kind = _BY_TYPE.get(name) or next((k for k in _BY_TYPE.values() if k.type_code == name), None)
    if kind is None:
        known = ", ".join(sorted(_BY_TYPE))
        raise LedgerError(f"Unknown financialInstrumentType {name!r}. Known: {known}.", field=field, code="INVALID_INSTRUMENT_TYPE")
    return kind


def _match(al_id: str) -> tuple[InstrumentKind, int] | None:
    match = _PATTERN.fullmatch(al_id or "")
    kind = _BY_CODES.get((match["category"], match["type"])) if match else None
    return (kind, int(match["sequence"])) if kind is not None else None


def parse(al_id: str, *, field: str) -> tuple[InstrumentKind, int]:
    """The category/type and sequence of a given alId; 400 if it breaks the pattern."""
    parsed = _match(al_id)
    if parsed is None:
        raise LedgerError(
            "alId must be AL{category code}{type code of that category}{8 digits}, e.g. ALFICBD00000001 (docs/instruments.md).",
            field=field, code="INVALID_AL_ID",
        )
    return parsed


def check_reference_type(kind: InstrumentKind, reference_type: str | None, *, field: str) -> str:
    """The spec's rule: CURRENCY_TOKEN only for the CURRENCY category, ASSET_TOKEN for all others."""
    if reference_type and reference_type != kind.reference_type:
        raise LedgerError(
            f"A {kind.category} instrument's mint has offchainReferences.type {kind.reference_type}, not {reference_type} "
            "(CURRENCY_TOKEN maps only to category CURRENCY; every other category only to ASSET_TOKEN).",
            field=field, code="INVALID_ACCOUNT_TYPE",
        )
    return kind.reference_type


def next_al_id(kind: InstrumentKind, *, tenant, cluster: str, given: str | None = None) -> str:
    """The alId a new instrument of ``kind`` takes: ``given`` as is, else the next free
    number of the organization's sequence. Call inside the transaction that records it.

    Both cases lock the organization's (cluster, category, type) row, so a generated alId
    is chosen only after a given one committing concurrently is visible: they never collide."""
    from accounts.models import Account

    from .models import FinancialInstrument

    row = _lock_sequence(kind, tenant=tenant, cluster=cluster)
    if given:
        return given
    # Ids of this kind above the sequence, given by the organization: skipped, in one read.
    prefix, floor = kind.al_id(0)[:-8], kind.al_id(row.last_value)
    taken = set()
    for model in (FinancialInstrument, Account):
        taken.update(model.objects.for_tenant(tenant).filter(cluster=cluster, al_id__startswith=prefix, al_id__gt=floor).values_list("al_id", flat=True))
    value = row.last_value + 1
    while kind.al_id(value) in taken:
        value += 1
    if value > 99_999_999:
        raise LedgerError(f"The alId sequence of {kind.category}/{kind.instrument_type} is exhausted.", code="AL_ID_EXHAUSTED")
    row.last_value = value
    row.save(update_fields=["last_value"])
    return kind.al_id(value)


def _lock_sequence(kind: InstrumentKind, *, tenant, cluster: str):
    """The organization's (cluster, category, type) sequence row, locked until commit."""
    from .models import AlIdSequence

    where = {"tenant": tenant, "cluster": cluster, "category": kind.category_code, "instrument_type": kind.type_code}
    AlIdSequence.objects.get_or_create(**where)
    return AlIdSequence.objects.select_for_update().get(**where)


def lock_for_account(*, tenant, cluster: str, al_id: str) -> None:
    """An account write setting ``al_id`` (registered with accounts.services in
    instruments/apps.py): when it has the instrument pattern, take its kind's sequence row
    lock in the account's write phase. A generation then either runs after the account
    commits (and skips the number) or before (and the account's unique constraint answers
    409): a generated alId never collides with one an account sets concurrently."""
    parsed = _match(al_id)
    if parsed is not None:
        _lock_sequence(parsed[0], tenant=tenant, cluster=cluster)
