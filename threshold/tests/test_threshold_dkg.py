"""Pedersen DKG with proofs of knowledge, share refresh, blame, and the JSON messages."""

from __future__ import annotations

import dataclasses
import json

import pytest

from threshold import dkg, frost
from threshold import group as G
from threshold import messages as M
from threshold import signing as S
from threshold.keys import PublicKeyPackage


def _round1(participants, threshold, session="keygen"):
    return {i: dkg.round1(session_id=session, identifier=i, threshold=threshold, participants=participants) for i in participants}


def _round2(first):
    states, shares = {}, []
    for i, secret in first.items():
        states[i], out = dkg.round2(secret, [s.package for s in first.values()])
        shares.extend(out)
    return states, shares


def _keys(participants, threshold, session="keygen"):
    states, shares = _round2(_round1(participants, threshold, session))
    return {i: dkg.finish(states[i], shares) for i in participants}


def _signs(keys, signers, message=b"dkg"):
    session = f"s-{'-'.join(map(str, signers))}"
    nonces = {i: S.commit(keys[i], session) for i in signers}
    public = keys[signers[0]].public
    package = S.signing_package(session, public, message, [S.SigningCommitment(session, n.nonces.commitment) for n in nonces.values()])
    return S.aggregate(public, package, [S.sign(keys[i], nonces[i], package) for i in signers]).signature


def test_dkg_gives_every_participant_the_same_group_info_and_a_working_share():
    keys = _keys([1, 2, 3, 4, 5], 3)
    publics = {json.dumps(M.to_json(k.public)) for k in keys.values()}
    assert len(publics) == 1
    group_key = keys[1].group_public_key
    for i, key in keys.items():
        assert G.base_mult(key.signing_share) == key.public.verifying_shares[i]
    # The key exists only in shares: any three reconstruct it (tests only), two do not.
    shares = {i: k.signing_share for i, k in keys.items()}
    assert G.base_mult(frost.secret_share_combine({i: shares[i] for i in (1, 3, 5)})) == group_key
    assert G.base_mult(frost.secret_share_combine({i: shares[i] for i in (2, 4)})) != group_key
    assert frost.verify(b"dkg", _signs(keys, [2, 4, 5]), group_key)


def test_two_sessions_give_different_keys():
    assert _keys([1, 2, 3], 2, "a")[1].group_public_key != _keys([1, 2, 3], 2, "b")[1].group_public_key


def test_a_bad_proof_of_knowledge_is_blamed():
    first = _round1([1, 2, 3], 2)
    # Participant 2 publishes a commitment copied from participant 1 (a rogue key) with its own proof.
    forged = dataclasses.replace(first[2].package, commitment=first[1].package.commitment)
    with pytest.raises(dkg.DkgError) as caught:
        dkg.round2(first[3], [first[1].package, forged, first[3].package])
    assert caught.value.culprit == 2
    # A proof made for another session does not verify in this one.
    replayed = dataclasses.replace(first[1].package, session_id="keygen-2")
    assert dkg.verify_proof_of_knowledge(first[1].package)
    assert not dkg.verify_proof_of_knowledge(replayed)


def test_a_wrong_share_is_rejected_and_its_sender_blamed():
    first = _round1([1, 2, 3], 2)
    # Participant 3 shares a polynomial other than the one it committed to.
    cheat = dataclasses.replace(first[3], coefficients=(first[3].coefficients[0], G.random_scalar()))
    states, shares = _round2({1: first[1], 2: first[2], 3: cheat})
    for honest in (1, 2):
        with pytest.raises(dkg.DkgError) as caught:
            dkg.finish(states[honest], shares)
        assert caught.value.culprit == 3
        assert "does not match its commitment" in str(caught.value)


def test_a_missing_or_tampered_share_is_blamed_on_its_sender():
    states, shares = _round2(_round1([1, 2, 3], 2))
    to_one = [p for p in shares if p.recipient == 1]
    with pytest.raises(dkg.DkgError) as caught:
        dkg.finish(states[1], [p for p in to_one if p.sender != 2])
    assert caught.value.culprit == 2
    tampered = [dataclasses.replace(p, encrypted_share=p.encrypted_share[:-1] + bytes([p.encrypted_share[-1] ^ 1])) if p.sender == 3 else p for p in to_one]
    with pytest.raises(dkg.DkgError) as caught:
        dkg.finish(states[1], tampered)
    assert caught.value.culprit == 3
    # A share relayed back to its sender, as if the recipient had sent it, is refused.
    reflected = next(p for p in shares if p.sender == 1 and p.recipient == 2)
    swapped = dataclasses.replace(reflected, sender=2, recipient=1)
    with pytest.raises(dkg.DkgError, match="another sender or recipient"):
        dkg.finish(states[1], [swapped, *(p for p in to_one if p.sender != 2)])


def test_an_inconsistent_broadcast_is_detected():
    first = _round1([1, 2, 3], 2)
    # The relay shows participant 2 a different (validly proven) round-1 package of 3.
    other3 = dkg.round1(session_id="keygen", identifier=3, threshold=2, participants=[1, 2, 3])
    state1, out1 = dkg.round2(first[1], [s.package for s in first.values()])
    state2, out2 = dkg.round2(first[2], [first[1].package, first[2].package, other3.package])
    with pytest.raises(dkg.DkgError) as caught:
        dkg.finish(state1, out2)
    assert caught.value.culprit == 2 and "different round-1 packages" in str(caught.value)


def test_complaints_name_whoever_lied():
    first = _round1([1, 2, 3], 2)
    cheat = dataclasses.replace(first[3], coefficients=(first[3].coefficients[0], G.random_scalar()))
    states, shares = _round2({1: first[1], 2: first[2], 3: cheat})
    round1 = [s.package for s in first.values()]
    from_three = next(p for p in shares if p.sender == 3 and p.recipient == 1)
    complaint = M.from_json(json.loads(json.dumps(M.to_json(dkg.complaint_create(states[1], from_three)))))
    assert dkg.complaint_check(complaint, round1) == 3
    # A complaint about an honest share falls on the accuser.
    from_two = next(p for p in shares if p.sender == 2 and p.recipient == 1)
    assert dkg.complaint_check(dkg.complaint_create(states[1], from_two), round1) == 1
    # So does one that reveals a key other than the accuser's own.
    lying = dataclasses.replace(dkg.complaint_create(states[1], from_three), encryption_secret=first[2].encryption_secret)
    assert dkg.complaint_check(lying, round1) == 1


def test_refresh_keeps_the_group_key_and_retires_old_shares():
    keys = _keys([1, 2, 3], 2)
    group_key = keys[1].group_public_key
    first = {i: dkg.refresh_round1(session_id="refresh-1", key_package=keys[i], participants=[1, 2, 3]) for i in keys}
    assert all(s.package.proof is None and len(s.package.commitment) == 1 for s in first.values())
    states, shares = _round2(first)
    new = {i: dkg.refresh_finish(states[i], shares, keys[i]) for i in keys}
    assert {k.group_public_key for k in new.values()} == {group_key}
    assert all(new[i].signing_share != keys[i].signing_share for i in keys)
    assert all(new[i].public.verifying_shares[i] != keys[i].public.verifying_shares[i] for i in keys)
    for signers in ([1, 2], [1, 3], [2, 3]):
        assert frost.verify(b"dkg", _signs(new, signers), group_key)
    # An old share and a new one do not combine, whichever group info the coordinator holds.
    for public in (new[2].public, keys[2].public):
        mixed = {1: dataclasses.replace(keys[1], public=public), 2: dataclasses.replace(new[2], public=public)}
        with pytest.raises(frost.InvalidSignatureShare):
            _signs(mixed, [1, 2])
    assert G.base_mult(frost.secret_share_combine({1: keys[1].signing_share, 2: new[2].signing_share})) != group_key


def test_refresh_among_a_subset_removes_the_others():
    keys = _keys([1, 2, 3, 4], 2)
    first = {i: dkg.refresh_round1(session_id="drop-4", key_package=keys[i], participants=[1, 2, 3]) for i in (1, 2, 3)}
    states, shares = _round2(first)
    new = {i: dkg.refresh_finish(states[i], shares, keys[i]) for i in (1, 2, 3)}
    assert new[1].public.participants == [1, 2, 3]
    assert frost.verify(b"dkg", _signs(new, [1, 3]), keys[1].group_public_key)
    # The new group info has no share of 4, so a coordinator refuses it ...
    with pytest.raises(frost.FrostError, match="hold no share"):
        _signs({1: new[1], 4: keys[4]}, [1, 4])
    # ... and a coordinator still listing 4's old verifying share gets no valid signature.
    stale = PublicKeyPackage(2, keys[1].group_public_key, {1: new[1].verifying_share, 4: keys[4].verifying_share})
    with pytest.raises(frost.InvalidSignatureShare, match="does not verify"):
        _signs({1: dataclasses.replace(new[1], public=stale), 4: dataclasses.replace(keys[4], public=stale)}, [1, 4])


def test_refresh_of_another_key_is_blamed():
    a, b = _keys([1, 2, 3], 2, "a"), _keys([1, 2, 3], 2, "b")
    first = {1: dkg.refresh_round1(session_id="r", key_package=a[1], participants=[1, 2]),
             2: dkg.refresh_round1(session_id="r", key_package=b[2], participants=[1, 2])}
    with pytest.raises(dkg.DkgError) as caught:
        dkg.round2(first[1], [first[1].package, first[2].package])
    assert caught.value.culprit == 2


def test_parameters_are_checked():
    for kwargs in ({"threshold": 1, "participants": [1, 2]}, {"threshold": 3, "participants": [1, 2]},
                   {"threshold": 2, "participants": [2, 1]}, {"threshold": 2, "participants": [2, 3]}):
        with pytest.raises((dkg.DkgError, frost.FrostError)):
            dkg.round1(session_id="p", identifier=1, **kwargs)
    first = _round1([1, 2, 3], 2)
    intruder = dkg.round1(session_id="keygen", identifier=4, threshold=2, participants=[1, 2, 3, 4])
    with pytest.raises(dkg.DkgError) as caught:
        dkg.round2(first[1], [first[2].package, first[3].package, intruder.package])
    assert caught.value.culprit == 4


def test_every_message_round_trips_through_json():
    first = _round1([1, 2, 3], 2)
    states, shares = _round2(first)
    keys = {i: dkg.finish(states[i], shares) for i in (1, 2, 3)}
    nonces = S.commit(keys[1], "rt")
    commitment = S.SigningCommitment("rt", nonces.nonces.commitment)
    package = S.signing_package("rt", keys[1].public, b"\x00\xffbytes", [commitment, S.SigningCommitment("rt", S.commit(keys[2], "rt").nonces.commitment)])
    share = S.sign(keys[1], nonces, package)
    refresh = dkg.refresh_round1(session_id="rt-refresh", key_package=keys[1], participants=[1, 2, 3])
    objects = [first[1].package, refresh.package, shares[0], keys[1].public, commitment, package, share,
               S.Signature("rt", keys[1].group_public_key, bytes(64)), dkg.complaint_create(states[1], next(p for p in shares if p.recipient == 1))]
    for obj in objects:
        assert M.from_json(json.loads(json.dumps(M.to_json(obj)))) == obj
    for secret in (keys[1], nonces, first[1], states[1]):
        again = M.from_json(json.loads(json.dumps(M.to_json(secret))))
        assert M.to_json(again) == M.to_json(secret)


@pytest.mark.parametrize("change,field", [
    ({"version": 2}, "version"),
    ({"ciphersuite": "FROST-RISTRETTO255-SHA512-v1"}, "ciphersuite"),
    ({"hiding": "01" + "00" * 31}, "hiding"),  # the identity element
    ({"hiding": "AB" * 32}, "hiding"),  # uppercase hex
    ({"identifier": 0}, "identifier"),
    ({"sessionId": "../keys/x"}, "sessionId"),
    ({"type": "frost-unknown"}, "type"),
])
def test_malformed_messages_are_refused_naming_the_field(change, field):
    key = _keys([1, 2], 2)[1]
    message = M.to_json(S.SigningCommitment("m", S.commit(key, "m").nonces.commitment)) | change
    with pytest.raises(M.MessageError) as caught:
        M.from_json(message)
    assert caught.value.field == field


def test_a_public_key_package_off_the_polynomial_is_refused():
    public = M.to_json(_keys([1, 2, 3], 2)[1].public)
    public["verifyingShares"]["3"] = G.base_mult(G.random_scalar()).hex()
    with pytest.raises(M.MessageError, match="participant 3"):
        M.from_json(public)
