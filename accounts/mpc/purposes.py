"""The associated data each sealed backend secret is bound to (accounts/mpc/keyring.py): a
value copied to another row, account, player, generation or session does not open."""

from __future__ import annotations


def share_purpose(share) -> str:
    return f"share:{share.key.group_public_key}:{share.player_code}:{share.identifier}:{share.generation}"


def share_purpose_of(group_public_key: str, player_code: str, identifier: int, generation: int) -> str:
    return f"share:{group_public_key}:{player_code}:{identifier}:{generation}"


def nonce_purpose(nonce) -> str:
    return f"nonces:{nonce.session.offchain_id}:{nonce.player_code}:{nonce.identifier}:{nonce.hiding}:{nonce.binding}"


def dkg_state_purpose(player) -> str:
    return f"dkg-state:{player.session.offchain_id}:{player.player_code}:{player.identifier}"
