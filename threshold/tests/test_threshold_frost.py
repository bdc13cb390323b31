"""FROST(Ed25519, SHA-512): RFC 9591's test vectors, thresholds, blame, and signatures that
unmodified Ed25519 verifiers (solders, libsodium) and a Solana transaction accept.

The vectors (tests/vectors/rfc9591_frost_ed25519_sha512.json) are the values of RFC 9591
appendix E.1, as published with the draft's reference implementation."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from nacl.signing import SigningKey, VerifyKey
from solders.hash import Hash
from solders.message import Message
from solders.pubkey import Pubkey
from solders.signature import Signature
from solders.system_program import TransferParams, transfer
from solders.transaction import Transaction

from threshold import dkg, frost
from threshold import group as G
from threshold import signing as S

VECTORS = json.loads((Path(__file__).parent / "vectors" / "rfc9591_frost_ed25519_sha512.json").read_text())
h = bytes.fromhex


def _vector_shares():
    return {p["identifier"]: h(p["participant_share"]) for p in VECTORS["inputs"]["participant_shares"]}


def test_rfc9591_key_material():
    inputs = VECTORS["inputs"]
    secret, group_key = h(inputs["group_secret_key"]), h(inputs["group_public_key"])
    assert G.base_mult(secret) == group_key
    coefficients = [secret, *(h(c) for c in inputs["share_polynomial_coefficients"])]
    for identifier, share in _vector_shares().items():
        assert frost.polynomial_evaluate(identifier, coefficients) == share
    dealt = dkg.trusted_dealer_keygen(secret, [1, 2, 3], 2, coefficients[1:])
    assert {i: k.signing_share for i, k in dealt.items()} == _vector_shares()
    assert frost.secret_share_combine({1: dealt[1].signing_share, 3: dealt[3].signing_share}) == secret


def test_rfc9591_signing_vectors():
    inputs = VECTORS["inputs"]
    group_key, msg, shares = h(inputs["group_public_key"]), h(inputs["message"]), _vector_shares()
    nonces = {}
    for out in VECTORS["round_one_outputs"]["outputs"]:
        i = out["identifier"]
        n = frost.commit(i, shares[i], hiding_randomness=h(out["hiding_nonce_randomness"]), binding_randomness=h(out["binding_nonce_randomness"]))
        assert (n.hiding.hex(), n.binding.hex()) == (out["hiding_nonce"], out["binding_nonce"])
        assert (n.commitment.hiding.hex(), n.commitment.binding.hex()) == (out["hiding_nonce_commitment"], out["binding_nonce_commitment"])
        nonces[i] = n
    assert sorted(nonces) == inputs["participant_list"]
    commitment_list = [nonces[i].commitment for i in sorted(nonces)]
    factors = frost.compute_binding_factors(group_key, commitment_list, msg)
    for out in VECTORS["round_one_outputs"]["outputs"]:
        i = out["identifier"]
        assert frost.binding_factor_input(group_key, commitment_list, msg, i).hex() == out["binding_factor_input"]
        assert factors[i].hex() == out["binding_factor"]
    sig_shares = {i: frost.sign(i, shares[i], group_key, nonces[i], msg, commitment_list) for i in nonces}
    for out in VECTORS["round_two_outputs"]["outputs"]:
        assert sig_shares[out["identifier"]].hex() == out["sig_share"]
    verifying = {i: G.base_mult(s) for i, s in shares.items()}
    for i in nonces:
        assert frost.verify_signature_share(i, verifying[i], sig_shares[i], commitment_list, group_key, msg)
    signature = frost.aggregate(commitment_list, msg, group_key, sig_shares, verifying)
    assert signature.hex() == VECTORS["final_output"]["sig"]
    VerifyKey(group_key).verify(msg, signature)


def _dkg(participants, threshold, session="keygen"):
    first = {i: dkg.round1(session_id=session, identifier=i, threshold=threshold, participants=participants) for i in participants}
    states, shares = {}, []
    for i in participants:
        states[i], out = dkg.round2(first[i], [first[j].package for j in participants])
        shares.extend(out)
    return {i: dkg.finish(states[i], shares) for i in participants}


def _sign(keys: dict, signers, message: bytes, session="sig"):
    nonces = {i: S.commit(keys[i], session) for i in signers}
    public = keys[signers[0]].public
    package = S.signing_package(session, public, message, [S.SigningCommitment(session, n.nonces.commitment) for n in nonces.values()])
    shares = [S.sign(keys[i], nonces[i], package) for i in signers]
    return public, package, shares


@pytest.fixture(scope="module")
def keys_2_of_3():
    return _dkg([1, 2, 3], 2)


@pytest.mark.parametrize("n,t", [(3, 2), (5, 3)])
def test_any_t_of_n_sign(n, t):
    keys = _dkg(list(range(1, n + 1)), t)
    group_key = keys[1].group_public_key
    for signers in itertools.combinations(range(1, n + 1), t):
        public, package, shares = _sign(keys, list(signers), b"any t of n")
        signature = S.aggregate(public, package, shares).signature
        assert frost.verify(b"any t of n", signature, group_key), signers
    # More than t also works: every share is weighted for the set that signs.
    public, package, shares = _sign(keys, list(range(1, n + 1)), b"all of them")
    assert frost.verify(b"all of them", S.aggregate(public, package, shares).signature, group_key)


def test_t_minus_one_players_cannot_sign():
    dealt = dkg.trusted_dealer_keygen(G.random_scalar(), [1, 2, 3, 4, 5], 3)
    public = dealt[1].public
    # The coordinator refuses a package with fewer than t commitments ...
    nonces = {i: S.commit(dealt[i], "few") for i in (1, 2)}
    with pytest.raises(frost.FrostError, match="needs 3 participants"):
        S.signing_package("few", public, b"m", [S.SigningCommitment("few", n.nonces.commitment) for n in nonces.values()])
    # ... and the protocol run by t-1 anyway yields no valid signature, nor the key.
    msg = b"two of five at threshold three"
    commitment_list = [nonces[i].nonces.commitment for i in (1, 2)]
    sig_shares = {i: frost.sign(i, dealt[i].signing_share, public.group_public_key, nonces[i].nonces, msg, commitment_list) for i in (1, 2)}
    with pytest.raises(frost.InvalidSignatureShare, match="does not verify"):
        frost.aggregate(commitment_list, msg, public.group_public_key, sig_shares)
    forged = frost.compute_group_commitment(commitment_list, frost.compute_binding_factors(public.group_public_key, commitment_list, msg))
    assert not frost.verify(msg, forged + G.scalar_sum(sig_shares.values()), public.group_public_key)
    assert G.base_mult(frost.secret_share_combine({i: dealt[i].signing_share for i in (1, 2)})) != public.group_public_key


def test_a_wrong_signature_share_is_refused_and_blamed(keys_2_of_3):
    public, package, shares = _sign(keys_2_of_3, [1, 3], b"blame")
    bad = S.SignatureShare(shares[1].session_id, 3, G.add(shares[1].share, G.ONE))
    assert S.verify_share(public, package, shares[0])
    assert not S.verify_share(public, package, bad)
    with pytest.raises(frost.InvalidSignatureShare) as caught:
        S.aggregate(public, package, [shares[0], bad])
    assert caught.value.culprits == (3,)
    # A share computed honestly but by the wrong key (another participant's) is blamed too.
    other = _sign(keys_2_of_3, [1, 3], b"blame", session="other")[2][1]
    with pytest.raises(frost.InvalidSignatureShare) as caught:
        S.aggregate(public, package, [shares[0], S.SignatureShare(package.session_id, 3, other.share)])
    assert caught.value.culprits == (3,)
    # A share for another session is refused before any arithmetic.
    with pytest.raises(frost.InvalidSignatureShare):
        S.aggregate(public, package, [shares[0], S.SignatureShare("elsewhere", 3, shares[1].share)])


def test_signature_verifies_with_solders_and_libsodium(keys_2_of_3):
    public, package, shares = _sign(keys_2_of_3, [2, 3], b"verify me")
    signature = S.aggregate(public, package, shares).signature
    group_key = Pubkey.from_bytes(public.group_public_key)
    assert Signature.from_bytes(signature).verify(group_key, b"verify me")
    assert not Signature.from_bytes(signature).verify(group_key, b"verify you")
    assert VerifyKey(public.group_public_key).verify(b"verify me", signature) == b"verify me"


def test_a_solana_transfer_signed_by_frost_verifies_as_ed25519(keys_2_of_3):
    group = Pubkey.from_bytes(keys_2_of_3[1].group_public_key)
    recipient = Pubkey.from_bytes(SigningKey.generate().verify_key.encode())
    message = Message.new_with_blockhash([transfer(TransferParams(from_pubkey=group, to_pubkey=recipient, lamports=1_000))], group, Hash.new_unique())
    public, package, shares = _sign(keys_2_of_3, [1, 2], bytes(message), session="transfer")
    signature = Signature.from_bytes(S.aggregate(public, package, shares).signature)
    tx = Transaction.populate(message, [signature])
    tx.verify()  # raises on a bad signature
    assert tx.verify_with_results() == [True]
    assert Transaction.from_bytes(bytes(tx)).signatures[0] == signature


def test_signing_refuses_a_package_without_the_own_commitment(keys_2_of_3):
    nonces = {i: S.commit(keys_2_of_3[i], "mine") for i in (1, 2, 3)}
    public = keys_2_of_3[1].public
    package = S.signing_package("mine", public, b"m", [S.SigningCommitment("mine", nonces[i].nonces.commitment) for i in (2, 3)])
    with pytest.raises(frost.FrostError, match="commitment"):
        S.sign(keys_2_of_3[1], nonces[1], package)
    # A commitment list out of order or repeating a participant is refused.
    listed = [nonces[3].nonces.commitment, nonces[2].nonces.commitment]
    with pytest.raises(frost.FrostError, match="sorted"):
        frost.sign(2, keys_2_of_3[2].signing_share, public.group_public_key, nonces[2].nonces, b"m", listed)


def test_group_inputs_are_validated():
    point = G.base_mult(G.scalar(7))
    assert G.decode_element(point) == point
    with pytest.raises(G.EncodingError):
        G.decode_element(G.IDENTITY)
    small_order = bytes.fromhex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a")  # order 8
    with pytest.raises(G.EncodingError):
        G.decode_element(small_order)
    y_not_reduced = (2**255 - 19 + 1).to_bytes(32, "little")  # y = p + 1: a non-canonical encoding
    with pytest.raises(G.EncodingError):
        G.decode_element(y_not_reduced)
    with pytest.raises(G.EncodingError):
        G.decode_scalar(G.ORDER.to_bytes(32, "little"))
    assert G.decode_scalar((G.ORDER - 1).to_bytes(32, "little"))
    with pytest.raises(G.EncodingError):
        G.encode_element(G.IDENTITY)
    assert G.mult(G.ZERO, point) == G.IDENTITY == G.base_mult(G.ZERO)
    with pytest.raises(frost.FrostError):
        frost.derive_interpolating_value([1, 2, 2], 1)


def test_secrets_are_not_shown_or_pickled(keys_2_of_3):
    import pickle

    key = keys_2_of_3[1]
    nonces = S.commit(key, "hidden")
    for secret in (key, nonces, nonces.nonces):
        assert key.signing_share.hex() not in repr(secret)
        with pytest.raises(TypeError):
            pickle.dumps(secret)
