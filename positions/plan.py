"""The plan of a token movement (positions/movement.py): its kind, its legs and the parties
they move tokens between, as the read phase decides them for the network and write phases."""

from __future__ import annotations

from dataclasses import dataclass, field as dc_field

from solders.keypair import Keypair
from solders.pubkey import Pubkey

from accounts.models import Account
from instruments.models import FinancialInstrument
from transactions.models import Transaction
from transactions.services import SignerSpec

from .models import Position
from .render import position_identifiers

MINT, BURN, TRANSFER, TRADE = "MINT", "BURN", "TRANSFER", "TRADE"


@dataclass
class Party:
    """One end of a leg: a token account, recorded as a position or not.

    ``draft``: records to store in the write phase (a position created by this
    transaction — ``create`` — or onboarded from the chain); ``position`` is then the
    drafted one. Off-platform owners' token accounts have no records at all."""

    address: str
    owner_address: str
    position: Position | None = None
    draft: tuple[Account, Position] | None = None
    create: bool = False
    funding_type: str = "MANAGED"

    @property
    def identifiers(self) -> dict:
        if self.position is not None:
            return position_identifiers(self.position)
        return {"onchainId": self.address, "offchainId": None}

    def describe(self) -> dict:
        return {"position": str(self.position.offchain_id) if self.position is not None else None, "address": self.address}


@dataclass
class Leg:
    kind: str
    instrument: FinancialInstrument
    amount: int
    authority: SignerSpec
    source: Party | None = None  # None: minted
    destination: Party | None = None  # None: burned
    field: str = "itemData"


@dataclass
class MovementResult:
    identifiers: dict
    transaction: Transaction
    created: bool  # the request recorded a new position (201)


@dataclass
class _Plan:
    """What the read phase decided, for the network and write phases."""

    kind: str
    legs: list[Leg]
    parties: dict[str, Party] = dc_field(default_factory=dict)  # by token account address
    reference: Pubkey = dc_field(default_factory=lambda: Keypair().pubkey())
