"""The public side of a DKG session: the group key its round-1 packages imply, checked
against what every player confirms, and the whole protocol run in memory when every player
is a backend player (docs/threshold-signing.md)."""

from __future__ import annotations




from threshold import dkg as D
from threshold import frost
from threshold import group as G
from threshold import messages as M
from threshold.keys import KeyPackage, PublicKeyPackage
from .models import DkgKind, DkgSession

def run_in_memory(kind: str, session_id: str, threshold: int, identifiers: list[int], old: dict[int, KeyPackage] | None = None) -> dict[int, KeyPackage]:
    """Every player of the session in this process (all backend players): their key packages."""
    if kind == DkgKind.DKG:
        first = {i: D.round1(session_id=session_id, identifier=i, threshold=threshold, participants=identifiers) for i in identifiers}
    else:
        first = {i: D.refresh_round1(session_id=session_id, key_package=old[i], participants=identifiers) for i in identifiers}
    states, shares = {}, []
    for i in identifiers:
        states[i], out = D.round2(first[i], [s.package for s in first.values()])
        shares.extend(out)
    if kind == DkgKind.DKG:
        return {i: D.finish(states[i], shares) for i in identifiers}
    return {i: D.refresh_finish(states[i], shares, old[i]) for i in identifiers}


def expected_public(kind: str, threshold: int, round1: list[D.Round1Package], old: PublicKeyPackage | None = None) -> PublicKeyPackage:
    """The group info every honest player computes from the round-1 packages (the service
    checks each player's confirmation against it)."""
    size = len(round1[0].commitment)
    summed = [G.element_sum(p.commitment[k] for p in round1) for k in range(size)]
    ids = sorted(p.identifier for p in round1)
    if kind == DkgKind.DKG:
        return PublicKeyPackage(threshold, G.encode_element(summed[0]), {j: frost.vss_evaluate(j, summed) for j in ids})
    full = [G.IDENTITY, *summed]
    return PublicKeyPackage(threshold, old.group_public_key, {j: G.element_add(old.verifying_shares[j], frost.vss_evaluate(j, full)) for j in ids})


def kind_type(session: DkgSession, round_: int) -> str:
    return f"frost-{'dkg' if session.kind == DkgKind.DKG else 'refresh'}-round{round_}"


def round1_packages(players) -> list[D.Round1Package]:
    return [M.from_json(p.round1) for p in players if p.round1 is not None]


def _old_public(session: DkgSession) -> PublicKeyPackage | None:
    return M.from_json(session.account.threshold_key.public_key_package) if session.kind == DkgKind.REFRESH else None


def session_public(session: DkgSession, players) -> PublicKeyPackage | None:
    """The group info the session's round-1 packages define, once all are in."""
    if any(p.round1 is None for p in players):
        return None
    try:
        return expected_public(session.kind, session.threshold, round1_packages(players), _old_public(session))
    except G.EncodingError:
        return None  # the contributions cancelled out: the backend players' round 2 names the culprit
