"""The market data area's commands: what its writes take, with Python names
(ledger_project/api/commands.py says how the door builds them from the serializers' data and
maps a refused field's path back to the request's; marketdata/serializers.py holds the
request's shape and its documentation).

A lookup (``financial_instrument``, ``oracle_data_source_authority``, ...) stays the
request's lookup object: it is handed as it is to the area that resolves it
(accounts/lookup.py, instruments/lookup.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ledger_project.api.commands import UNSET

Lookup = dict


@dataclass(frozen=True)
class OracleDetails:
    """``partnerOracleDetails``: the job and the feed's fixed parameters."""

    kind: str | None = None
    job_definition: str | None = None
    #: Create only (fixed at creation); None: the default, or the feed's with already_onchain
    exponent: int | None = None
    max_staleness_seconds: int | None = None
    #: UNSET: left out (Create: the default; Update: unchanged); None: on demand only
    refresh_interval_seconds: int | None = UNSET


@dataclass(frozen=True)
class DataDetails:
    """``dataDetails``: what the feed is (Create) and who rates it."""

    kind: str | None = None
    #: UNSET: left out (unchanged on Update)
    rating_provider: str | None = UNSET


@dataclass(frozen=True)
class CreateDataSource:
    """Create Onchain Data Source (``itemData``)."""

    partner_oracle_details: OracleDetails
    financial_instrument: Lookup
    defi_protocol: str | None = None
    already_onchain: bool = False
    existing_onchain_data_source_account: Lookup | None = None
    oracle_data_source_authority: Lookup | None = None
    data_details: DataDetails | None = None


@dataclass(frozen=True)
class UpdateDataSource:
    """Update Oracle Data Source Definition (``itemData``): what is left out stays."""

    onchain_data_source: Lookup
    partner_oracle_details: OracleDetails | None = None
    data_details: DataDetails | None = None
    status: str | None = None


@dataclass(frozen=True)
class NamedDataSource:
    """Refresh Oracle Data Source and Fetch Onchain Data Source Details (``itemData``)."""

    onchain_data_source: Lookup
