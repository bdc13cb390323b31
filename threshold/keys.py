"""What a participant holds after key generation: its key package (secret) and the group's
public key package (RFC 9591 section 5's "group info")."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import group as G
from . import frost


@dataclass(frozen=True)
class PublicKeyPackage:
    """The group public key, the threshold, and every participant's verifying share."""

    threshold: int
    group_public_key: bytes
    verifying_shares: dict[int, bytes] = field(hash=False)

    @property
    def participants(self) -> list[int]:
        return sorted(self.verifying_shares)


@dataclass(frozen=True, repr=False)
class KeyPackage:
    """A participant's signing share with the group info. Never shown or pickled."""

    identifier: int
    signing_share: bytes
    public: PublicKeyPackage

    @property
    def threshold(self) -> int:
        return self.public.threshold

    @property
    def group_public_key(self) -> bytes:
        return self.public.group_public_key

    @property
    def verifying_share(self) -> bytes:
        return self.public.verifying_shares[self.identifier]

    def check(self) -> "KeyPackage":
        """The share matches its verifying share, and the verifying shares interpolate to
        the group key (they lie on one polynomial of degree threshold - 1)."""
        if G.base_mult(self.signing_share) != self.verifying_share:
            raise ValueError("the signing share does not match its verifying share")
        check_public(self.public)
        return self

    def __repr__(self) -> str:
        return f"<key package of participant {self.identifier} for {self.group_public_key.hex()}>"

    def __reduce__(self):
        raise TypeError("key packages cannot be pickled")


def check_public(public: PublicKeyPackage) -> PublicKeyPackage:
    """Every subset of ``threshold`` verifying shares names the same group key: checked by
    interpolating the first ``threshold`` and then each further share against them."""
    ids = public.participants
    if not 1 <= public.threshold <= len(ids):
        raise ValueError("the threshold must be between 1 and the number of participants")
    base = ids[: public.threshold]
    if frost.interpolate_public({i: public.verifying_shares[i] for i in base}) != public.group_public_key:
        raise ValueError("the verifying shares do not interpolate to the group public key")
    for extra in ids[public.threshold:]:
        # Swap the extra share in for one of the base: still the group key iff it is on the polynomial.
        subset = base[1:] + [extra]
        if frost.interpolate_public({i: public.verifying_shares[i] for i in subset}) != public.group_public_key:
            raise ValueError(f"the verifying share of participant {extra} is not on the group's polynomial")
    return public
