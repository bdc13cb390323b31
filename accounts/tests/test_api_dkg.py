"""Create Account with dkgKeys (threshold keys, docs/threshold-signing.md): key generation among
backend players (in the request) and external players (through the API, the backend players'
rounds run as the worker runs them), the records it leaves, every refusal, blame, refresh,
and private-key export refused. Chain effects and signing: transactions/tests/test_api_sign_dkg.py."""

from __future__ import annotations

import base64
import json
import uuid

import pytest
from nacl.public import Box, PrivateKey, PublicKey

from accounts.models import Account, DkgPlayer, DkgSession, ThresholdKey, ThresholdShare
from accounts.mpc import keyring
from accounts.mpc.common import unseal_key_package
from accounts.mpc.purposes import share_purpose
from accounts.tests.dkg_kit import DKG, SIGNING, ApiPlayer, advance, create, dkg_account, dkg_item, dkg_status
from threshold import dkg as D
from threshold import frost
from threshold import messages as M
from conftest import assert_error, make_client
from tenancy.roles import Role
from tenancy.tests.factories import issue_key


def shares_of(account_address: str, generation: int | None = None) -> list[ThresholdShare]:
    key = ThresholdKey.objects.get(account__address=account_address)
    return list(ThresholdShare.objects.filter(key=key, generation=generation or key.generation).order_by("identifier"))


# --- backend players only: in the request -------------------------------------------------------


@pytest.mark.django_db
def test_backend_players_make_the_key_in_the_request_and_the_address_is_the_group_key(api):
    response = create(api, dkg_item(("BACKEND_A", "BACKEND_B", "BACKEND_C"), threshold=2, code="TREASURY"))
    assert response.status_code == 201, response.json()
    body = response.json()
    account = Account.unscoped.get(offchain_id=body["newAccount"]["offchainId"])
    session = body["dkgSession"]
    assert session["status"] == "COMPLETED" and session["kind"] == "DKG" and session["culprit"] is None
    # Every round was sent (in memory, in the request): a finished player does not read "round1Sent: false".
    for shown in (session, dkg_status(api, session["sessionId"])):
        assert [(p["round1Sent"], p["round2Sent"], p["finished"]) for p in shown["players"]] == [(True, True, True)] * 3
    assert body["newAccount"]["onchainId"] == account.address == session["account"]["onchainId"] and body["svmTransaction"] is None
    assert account.status == "ACTIVE" and account.managed is False and account.private_key_location == [] and account.code == "TREASURY"
    key = ThresholdKey.objects.get(account=account)
    public = M.from_json(key.public_key_package)
    assert M.base58(bytes.fromhex(key.group_public_key)) == account.address == session["publicKeyPackage"]["address"]
    assert (key.threshold, key.key_usage, key.is_default, key.generation) == (2, "TRANSACTION_SIGNING", True, 1)
    rows = shares_of(account.address)
    assert [(s.player_code, s.identifier, s.backend) for s in rows] == [("BACKEND_A", 1, True), ("BACKEND_B", 2, True), ("BACKEND_C", 3, True)]
    # Each share sealed under its own player's key; the shares open to the group's verifying shares.
    assert len({s.sealed["kid"] for s in rows}) == 3
    packages = [unseal_key_package(s.player_code, s.sealed, share_purpose(s), verifying_share=s.verifying_share) for s in rows]
    assert all(p.public == public for p in packages)
    assert frost.interpolate_public({p.identifier: p.verifying_share for p in packages[:2]}) == public.group_public_key
    # No plain share anywhere in the rows.
    for package in packages:
        assert package.signing_share.hex() not in json.dumps([s.sealed for s in rows])


@pytest.mark.django_db
def test_a_share_opens_only_under_its_own_player_account_and_generation(api):
    body = create(api, dkg_item(("BACKEND_A", "BACKEND_B"))).json()
    a, b = shares_of(body["newAccount"]["onchainId"])
    from custody.errors import CustodyError

    with pytest.raises(CustodyError):  # B's key cannot open A's share
        unseal_key_package("BACKEND_B", a.sealed, share_purpose(a))
    with pytest.raises(CustodyError):  # A's ciphertext moved to B's row
        unseal_key_package("BACKEND_A", a.sealed, share_purpose(b))
    a.generation = 2
    with pytest.raises(CustodyError):  # another generation
        unseal_key_package("BACKEND_A", a.sealed, share_purpose(a))


@pytest.mark.django_db
def test_private_key_export_of_a_dkg_account_is_refused(tenant):
    client = make_client(issue_key(tenant, roles=[Role.PLATFORM_SENSITIVE_DATA_ACCESS]).secret)
    body = create(client, dkg_item()).json()
    response = client.call("post", "/api/v1/accounts/single/private-key", {"itemData": {"offchainId": body["newAccount"]["offchainId"]}})
    assert_error(response, 400, "KEY_NOT_EXPORTABLE", "itemData")


# --- refusals ---------------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("item, code, field", [
    (dkg_item(("BACKEND_A", "NOBODY")), "UNKNOWN_MPC_PLAYER", "itemData.privateKeyDetails.dkgKeys[0].useBackendPlayersCodes[1]"),
    (dkg_item(("BACKEND_A", "BACKEND_A")), "INVALID_MPC_PLAYERS", "itemData.privateKeyDetails.dkgKeys[0].useBackendPlayersCodes[1]"),
    (dkg_item(("BACKEND_A",), ["BACKEND_A"]), "INVALID_MPC_PLAYERS", "itemData.privateKeyDetails.dkgKeys[0].session.externalPlayers[0].mpcPlayerCode"),
    (dkg_item(("BACKEND_A",), threshold=2), "INVALID_MPC_PLAYERS", "itemData.privateKeyDetails.dkgKeys[0]"),
    (dkg_item(("BACKEND_A", "BACKEND_B"), threshold=3), "INVALID_THRESHOLD", "itemData.privateKeyDetails.dkgKeys[0].session.threshold"),
    (dkg_item(onchainId="11111111111111111111111111111112"), "CONFLICTING_FIELDS", "itemData.onchainId"),
    (dkg_item(managed=False), "CONFLICTING_FIELDS", "itemData.managed"),
    (dkg_item(seed={"lamports": 1_000_000}), "CONFLICTING_FIELDS", "itemData.seed"),
    (dkg_item(dataLength=10), "CONFLICTING_FIELDS", "itemData.dataLength"),
    (dkg_item(alreadyOnchain=True), "CONFLICTING_FIELDS", "itemData.alreadyOnchain"),
    (dkg_item(orgsAllowedToSignWithPrivateKey=["GLOBEX"]), "CONFLICTING_FIELDS", "itemData.orgsAllowedToSignWithPrivateKey"),
])
def test_a_dkg_definition_that_breaks_a_rule_is_refused_and_nothing_is_stored(api, item, code, field):
    assert_error(create(api, item), 400, code, field)
    assert not Account.unscoped.exists() and not DkgSession.unscoped.exists() and not ThresholdShare.objects.exists()


@pytest.mark.django_db
def test_dkg_keys_hold_one_key_and_need_a_session(api):
    two = dkg_item()
    two["privateKeyDetails"]["dkgKeys"] *= 2
    assert_error(create(api, two), 400, "TOO_LONG", "itemData.privateKeyDetails.dkgKeys")
    missing = dkg_item()
    del missing["privateKeyDetails"]["dkgKeys"][0]["session"]
    assert_error(create(api, missing), 400, "REQUIRED", "itemData.privateKeyDetails.dkgKeys[0].session")
    assert_error(create(api, dkg_item(privateKeyDetails={"dkgKeys": [dkg_item()["privateKeyDetails"]["dkgKeys"][0]], "privateKey": "x"})),
                 400, "CONFLICTING_FIELDS", "itemData.privateKeyDetails.privateKey")
    assert not DkgSession.unscoped.exists()


@pytest.mark.django_db
def test_a_mint_account_cannot_be_a_dkg_account(api, localnet_url, settings):
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True
    mint = dkg_item(offchainReferences={"type": "ASSET_TOKEN"})
    body = {"itemData": {"mintAccount": mint, "onchainData": {"symbol": "T", "name": "T", "decimals": 0},
                         "offchainReferences": {"newAlId": {"financialInstrumentType": "STOCK"}}, "mintAuthority": {"onchainId": "11111111111111111111111111111112", "offPlatform": True}}}
    response = api.call("post", "/api/v1/financial-instruments", body)
    assert_error(response, 400, "NOT_SUPPORTED", "itemData.mintAccount.privateKeyDetails.dkgKeys")
    assert not DkgSession.unscoped.exists() and not ThresholdKey.objects.exists()


# --- with an external player: rounds through the API --------------------------------------------------------


@pytest.mark.django_db
def test_two_backend_players_and_an_external_one_make_a_2_of_3_account(api):
    external = ApiPlayer(3, "CLIENT_X", api)
    first = create(api, dkg_item(("BACKEND_A", "BACKEND_B"), ["CLIENT_X"], code="SHARED"))
    assert first.status_code == 201, first.json()
    body = first.json()
    session_id = body["dkgSession"]["sessionId"]
    assert body["newAccount"]["onchainId"] is None and body["dkgSession"]["status"] == "ROUND1"
    assert not Account.unscoped.exists()
    assert [(p["mpcPlayerCode"], p["identifier"], p["backend"]) for p in body["dkgSession"]["players"]] == [("BACKEND_A", 1, True), ("BACKEND_B", 2, True), ("CLIENT_X", 3, False)]
    advance(session_id)
    assert [p["round1Sent"] for p in dkg_status(api, session_id)["players"]] == [True, True, False]
    final = external.run_dkg(session_id)
    assert final["status"] == "COMPLETED", final
    account = Account.unscoped.get(offchain_id=body["newAccount"]["offchainId"])
    assert account.address == final["account"]["onchainId"] == M.base58(external.key.group_public_key) and account.status == "ACTIVE"
    rows = shares_of(account.address)
    assert [(s.player_code, s.backend, s.sealed is not None) for s in rows] == [("BACKEND_A", True, True), ("BACKEND_B", True, True), ("CLIENT_X", False, False)]
    assert rows[2].verifying_share == external.key.verifying_share.hex()
    # The session's backend state is erased once the shares are stored.
    assert not DkgPlayer.objects.filter(session__offchain_id=session_id, sealed_state__isnull=False).exists()


@pytest.mark.django_db
def test_a_bad_share_from_the_external_player_fails_the_session_naming_it(api):
    external = ApiPlayer(3, "CLIENT_X", api)
    session_id = create(api, dkg_item(("BACKEND_A", "BACKEND_B"), ["CLIENT_X"])).json()["dkgSession"]["sessionId"]
    advance(session_id)
    external.send("round1", sessionId=session_id, package=external.dkg_round1(session_id, 2, [1, 2, 3]))
    advance(session_id)
    packages = external.dkg_round2(dkg_status(api, session_id)["round1Packages"])
    # Its share for player 1 re-encrypted around another value: decrypts, but not on its commitment.
    state = external.state
    recipient = next(p for p in state.received.values() if p.identifier == 1)
    wrong = D._share_plaintext(D.DKG, 3, 1, frost.polynomial_evaluate(1, [bytes(32)] * 2), state.transcript)
    box = Box(PrivateKey(state.round1.encryption_secret), PublicKey(recipient.encryption_key))
    packages[0]["encryptedShare"] = base64.b64encode(bytes(box.encrypt(wrong))).decode()
    assert external.send("round2", sessionId=session_id, packages=packages).status_code == 200
    advance(session_id)
    failed = dkg_status(api, session_id)
    assert failed["status"] == "FAILED" and failed["culprit"] == "CLIENT_X" and "does not match its commitment" in failed["errorMessage"], failed
    assert not Account.unscoped.exists() and not ThresholdKey.objects.exists()
    assert not DkgPlayer.objects.filter(sealed_state__isnull=False).exists()
    # A failed session takes no more messages.
    assert_error(external.send("finish", sessionId=session_id, publicKeyPackage={"type": "frost-public-key-package"}), 400, "DKG_SESSION_CLOSED")


@pytest.mark.django_db
def test_round1_is_checked_before_it_is_relayed_and_a_player_sends_one(api):
    external = ApiPlayer(3, "CLIENT_X", api)
    session_id = create(api, dkg_item(("BACKEND_A", "BACKEND_B"), ["CLIENT_X"])).json()["dkgSession"]["sessionId"]
    package = external.dkg_round1(session_id, 2, [1, 2, 3])
    forged = {**package, "proofOfKnowledge": package["proofOfKnowledge"][:64] + "00" * 32}
    assert_error(external.send("round1", sessionId=session_id, package=forged), 400, "INVALID_MESSAGE", "itemData.package.proofOfKnowledge")
    assert_error(external.send("round1", sessionId=session_id, package={**package, "identifier": 2}), 400, "INVALID_MESSAGE", "itemData.package.identifier")
    assert_error(external.send("round1", sessionId=session_id, package={**package, "commitment": ["zz"]}), 400, "INVALID_MESSAGE", "itemData.package.commitment")
    assert external.send("round1", sessionId=session_id, package=package).status_code == 200
    assert external.send("round1", sessionId=session_id, package=package).status_code == 200  # the same again: nothing changes
    other = ApiPlayer(3, "CLIENT_X", api).dkg_round1(session_id, 2, [1, 2, 3])
    assert_error(external.send("round1", sessionId=session_id, package=other), 409, "MPC_MESSAGE_CONFLICT")
    assert_error(external.send("round2", sessionId=session_id, packages=[{"type": "frost-dkg-round2"}]), 400, "INVALID_MESSAGE")
    # Backend players' messages are the service's own; unknown players are unknown.
    assert_error(api.call("post", f"{DKG}/round1", {"itemData": {"sessionId": session_id, "mpcPlayerCode": "BACKEND_A", "package": package}}), 400, "NOT_AN_EXTERNAL_PLAYER")
    assert_error(api.call("post", f"{DKG}/round1", {"itemData": {"sessionId": session_id, "mpcPlayerCode": "CLIENT_Y", "package": package}}), 400, "UNKNOWN_MPC_PLAYER")
    assert_error(external.send("round2", sessionId=session_id, packages=[package]), 400, "INVALID_MESSAGE")


@pytest.mark.django_db
def test_a_player_bound_to_an_api_key_speaks_only_through_it(tenant, api, api_key):
    other_key = issue_key(tenant, name="other")
    session_id = create(api, dkg_item(("BACKEND_A", "BACKEND_B"), [{"mpcPlayerCode": "CLIENT_X", "apiKeys": [api_key.api_key.key_id]}])).json()["dkgSession"]["sessionId"]
    package = ApiPlayer(3, "CLIENT_X", api).dkg_round1(session_id, 2, [1, 2, 3])
    intruder = make_client(other_key.secret)
    assert_error(intruder.call("post", f"{DKG}/round1", {"itemData": {"sessionId": session_id, "mpcPlayerCode": "CLIENT_X", "package": package}}), 403, "PLAYER_NOT_ALLOWED")
    assert api.call("post", f"{DKG}/round1", {"itemData": {"sessionId": session_id, "mpcPlayerCode": "CLIENT_X", "package": package}}).status_code == 200


def _their_signing_session(other_tenant, other_api) -> str:
    """A signing session of another organization (its DKG account, a transaction waiting for it)."""
    from accounts.mpc import sessions
    from transactions.models import Transaction

    body = create(other_api, dkg_item(("BACKEND_A", "BACKEND_B"))).json()
    account = Account.unscoped.get(offchain_id=body["newAccount"]["offchainId"])
    tx = Transaction.objects.for_tenant(other_tenant).create(tenant=other_tenant, cluster="CHAIN_LOCALNET", operation="test", message=b"m", blockhash="h",
                                                            fee_payer=account.address, required_signers=[account.address], status="PARTIALLY_SIGNED")
    return sessions.session_open(tenant=other_tenant, api_key=None, transaction=tx, account=account, codes=["BACKEND_A", "BACKEND_B"]).session_id


@pytest.mark.django_db
def test_another_organizations_sessions_are_like_missing_ones(api, other_api, other_tenant):
    keygen_session = create(other_api, dkg_item(("BACKEND_A",), ["CLIENT_X"])).json()["dkgSession"]["sessionId"]
    signing_session = _their_signing_session(other_tenant, other_api)
    player = {"mpcPlayerCode": "CLIENT_X"}
    cases = [
        (f"{DKG}/status", {}), (f"{DKG}/round1", {**player, "package": {}}), (f"{DKG}/round2", {**player, "packages": [{}]}),
        (f"{DKG}/finish", {**player, "publicKeyPackage": {}}),
    ]
    for path, item in cases:
        answers = [api.call("post", path, {"itemData": {"sessionId": sid, **item}}) for sid in (keygen_session, str(uuid.uuid4()))]
        assert answers[0].status_code == answers[1].status_code == 404 and answers[0].json()["errors"] == answers[1].json()["errors"], (path, answers[0].json())
    for path, item in ((f"{SIGNING}/status", {}), (f"{SIGNING}/commit", {**player, "commitment": {}})):
        answers = [api.call("post", path, {"itemData": {"sessionId": sid, **item}}) for sid in (signing_session, str(uuid.uuid4()))]
        assert answers[0].status_code == answers[1].status_code == 404 and answers[0].json()["errors"] == answers[1].json()["errors"], (path, answers[0].json())
    assert DkgSession.unscoped.get(offchain_id=keygen_session).players.filter(round1__isnull=False).count() == 0


@pytest.mark.django_db
def test_a_complaint_is_decided_and_the_culprit_named(api):
    external = ApiPlayer(3, "CLIENT_X", api)
    session_id = create(api, dkg_item(("BACKEND_A", "BACKEND_B"), ["CLIENT_X"])).json()["dkgSession"]["sessionId"]
    advance(session_id)
    external.send("round1", sessionId=session_id, package=external.dkg_round1(session_id, 2, [1, 2, 3]))
    advance(session_id)
    external.send("round2", sessionId=session_id, packages=external.dkg_round2(dkg_status(api, session_id)["round1Packages"]))
    advance(session_id)
    # CLIENT_X falsely complains about BACKEND_A's (correct) share: the complaint shows the accuser at fault.
    share_from_a = next(m for m in dkg_status(api, session_id)["round2Packages"] if m["sender"] == 1 and m["recipient"] == 3)
    complaint = M.to_json(D.complaint_create(external.state, M.from_json(share_from_a)))
    response = external.send("finish", sessionId=session_id, complaint=complaint)
    assert response.status_code == 200 and response.json()["status"] == "FAILED" and response.json()["culprit"] == "CLIENT_X", response.json()


@pytest.mark.django_db
def test_an_external_player_that_never_speaks_times_the_session_out_naming_it(api, settings):
    session_id = create(api, dkg_item(("BACKEND_A", "BACKEND_B"), ["CLIENT_X"])).json()["dkgSession"]["sessionId"]
    advance(session_id)
    DkgSession.unscoped.filter(offchain_id=session_id).update(expires_at="2000-01-01T00:00:00Z")
    assert advance(session_id) == "FAILED"
    assert dkg_status(api, session_id)["culprit"] == "CLIENT_X"


# --- refresh ----------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_refresh_of_backend_shares_keeps_the_address_and_old_shares_no_longer_combine(api):
    body = create(api, dkg_item(("BACKEND_A", "BACKEND_B", "BACKEND_C"))).json()
    address = body["newAccount"]["onchainId"]
    old = {s.identifier: unseal_key_package(s.player_code, s.sealed, share_purpose(s)) for s in shares_of(address)}
    response = api.call("post", f"{DKG}/refresh", {"itemData": {"account": {"onchainId": address}}})
    assert response.status_code == 201 and response.json()["status"] == "COMPLETED" and response.json()["kind"] == "REFRESH", response.json()
    key = ThresholdKey.objects.get(account__address=address)
    assert key.generation == 2 and M.base58(bytes.fromhex(key.group_public_key)) == address
    assert set(ThresholdShare.objects.filter(key=key).values_list("generation", flat=True)) == {2}
    new = {s.identifier: unseal_key_package(s.player_code, s.sealed, share_purpose(s)) for s in shares_of(address)}
    assert all(new[i].signing_share != old[i].signing_share for i in new)
    assert frost.secret_share_combine({1: new[1].signing_share, 2: new[2].signing_share}) == frost.secret_share_combine({2: new[2].signing_share, 3: new[3].signing_share})
    assert frost.secret_share_combine({1: old[1].signing_share, 2: new[2].signing_share}) != frost.secret_share_combine({1: new[1].signing_share, 2: new[2].signing_share})
    # Removing a player: a refresh among the others.
    response = api.call("post", f"{DKG}/refresh", {"itemData": {"account": {"onchainId": address}, "mpcPlayerCodes": ["BACKEND_A", "BACKEND_C"]}})
    assert response.status_code == 201, response.json()
    assert [s.player_code for s in shares_of(address)] == ["BACKEND_A", "BACKEND_C"]


@pytest.mark.django_db
def test_refresh_with_an_external_player_runs_over_the_api(api):
    external = ApiPlayer(3, "CLIENT_X", api)
    final = dkg_account(api, [external])
    address = final["account"]["onchainId"]
    response = api.call("post", f"{DKG}/refresh", {"itemData": {"account": {"onchainId": address}}})
    assert response.status_code == 201 and response.json()["status"] == "ROUND1", response.json()
    session_id = response.json()["sessionId"]
    assert_error(api.call("post", f"{DKG}/refresh", {"itemData": {"account": {"onchainId": address}}}), 409, "REFRESH_IN_PROGRESS")
    advance(session_id)
    old_key = external.key
    external.state = D.refresh_round1(session_id=session_id, key_package=old_key, participants=[1, 2, 3])
    assert external.send("round1", sessionId=session_id, package=M.to_json(external.state.package)).status_code == 200
    advance(session_id)
    external.state, out = D.round2(external.state, [M.from_json(m) for m in dkg_status(api, session_id)["round1Packages"]])
    assert external.send("round2", sessionId=session_id, packages=[M.to_json(p) for p in out]).status_code == 200
    advance(session_id)
    received = [M.from_json(m) for m in dkg_status(api, session_id)["round2Packages"]]
    external.key = D.refresh_finish(external.state, received, old_key)
    assert external.send("finish", sessionId=session_id, publicKeyPackage=M.to_json(external.key.public)).status_code == 200
    advance(session_id)
    assert dkg_status(api, session_id)["status"] == "COMPLETED"
    rows = shares_of(address)
    assert {s.generation for s in rows} == {2} and rows[2].verifying_share == external.key.verifying_share.hex()
    assert M.base58(external.key.group_public_key) == address


@pytest.mark.django_db
def test_refresh_refusals(api):
    plain = api.call("post", "/api/v1/accounts", {"itemData": {"managed": True}}).json()["newAccount"]
    assert_error(api.call("post", f"{DKG}/refresh", {"itemData": {"account": {"onchainId": plain["onchainId"]}}}), 400, "NOT_A_DKG_ACCOUNT")
    address = create(api, dkg_item(("BACKEND_A", "BACKEND_B", "BACKEND_C"), threshold=3)).json()["newAccount"]["onchainId"]
    assert_error(api.call("post", f"{DKG}/refresh", {"itemData": {"account": {"onchainId": address}, "mpcPlayerCodes": ["BACKEND_A", "BACKEND_B"]}}), 400, "INVALID_MPC_PLAYERS")
    assert_error(api.call("post", f"{DKG}/refresh", {"itemData": {"account": {"onchainId": address}, "mpcPlayerCodes": ["BACKEND_A", "NOBODY", "BACKEND_C"]}}), 400, "UNKNOWN_MPC_PLAYER")


# --- keyrings ------------------------------------------------------------------------------------------


def test_two_players_sharing_a_key_or_the_master_key_refuse_to_start(settings, tmp_path):
    from django.core.exceptions import ImproperlyConfigured

    from custody.services import encode_master_key

    one, two = encode_master_key(b"\x01" * 32), encode_master_key(b"\x02" * 32)
    settings.LEDGER_MPC_BACKEND_PLAYERS = ["P1", "P2"]
    settings.LEDGER_MASTER_KEY = two
    settings.LEDGER_MPC_PLAYER_KEYS = {"P1": one, "P2": one}
    with pytest.raises(ImproperlyConfigured, match="P1 and P2 share a key"):
        keyring.check_keyrings()
    settings.LEDGER_MPC_PLAYER_KEYS = {"P1": one, "P2": two}
    with pytest.raises(ImproperlyConfigured, match="P2 has a key that is also a master key"):
        keyring.check_keyrings()
    settings.LEDGER_MPC_PLAYER_KEYS = {"P1": one, "P2": encode_master_key(b"\x03" * 32)}
    keyring.check_keyrings()


@pytest.mark.django_db
def test_rotating_a_players_key_rewraps_its_shares_and_retires_the_old_key(api):
    address = create(api, dkg_item(("BACKEND_A", "BACKEND_B"))).json()["newAccount"]["onchainId"]
    before = {s.player_code: s for s in shares_of(address)}
    old_kid = before["BACKEND_A"].sealed["kid"]
    result = keyring.player_key_rotate("BACKEND_A")
    assert result["rewrapped"] == 1 and not result["stillReferenced"] and result["keyId"] != old_kid
    after = {s.player_code: s for s in shares_of(address)}
    assert after["BACKEND_A"].sealed["kid"] == result["keyId"] and after["BACKEND_B"].sealed == before["BACKEND_B"].sealed
    assert unseal_key_package("BACKEND_A", after["BACKEND_A"].sealed, share_purpose(after["BACKEND_A"])).signing_share == \
        unseal_key_package("BACKEND_A", before["BACKEND_A"].sealed, share_purpose(before["BACKEND_A"])).signing_share
    assert keyring.player_key_retire("BACKEND_A", kid=old_kid) == 1
    assert old_kid not in [keyring.key_id(k) for k in keyring.player_keyring("BACKEND_A")]


# --- nonces consumed once (the worker's signing step, without a worker) ------------------------------------


@pytest.mark.django_db
def test_a_consumed_nonce_answers_only_the_package_it_signed(api, tenant):
    from accounts.mpc import sessions
    from accounts.mpc.models import SigningNonce, SigningPlayer, SigningSession
    from accounts.tests.dkg_kit import advance_signing
    from transactions.models import Transaction

    external = ApiPlayer(3, "CLIENT_X", api)
    account = Account.unscoped.get(address=dkg_account(api, [external])["account"]["onchainId"])
    tx = Transaction.objects.for_tenant(tenant).create(tenant=tenant, cluster="CHAIN_LOCALNET", operation="test", message=b"message to sign", blockhash="h",
                                                      fee_payer=account.address, required_signers=[account.address], status="PARTIALLY_SIGNED")
    session_id = sessions.session_open(tenant=tenant, api_key=None, transaction=tx, account=account, codes=["BACKEND_A", "CLIENT_X"]).session_id
    assert advance_signing(session_id) == "COMMITTING"
    nonce = SigningNonce.objects.get(session__offchain_id=session_id)
    assert nonce.status == "FRESH" and nonce.sealed and nonce.package_digest == ""
    package = external.commit_to(session_id)["signingPackage"]
    assert advance_signing(session_id) == "SIGNING"  # BACKEND_A signed; CLIENT_X's share is awaited
    nonce.refresh_from_db()
    session = SigningSession.unscoped.get(offchain_id=session_id)
    assert nonce.status == "CONSUMED" and nonce.sealed is None and nonce.package_digest == session.package_digest
    player = SigningPlayer.objects.get(session=session, player_code="BACKEND_A")
    assert player.signature_share == nonce.signature_share
    # The step run again (a retry after a crash): the recorded share, nothing signed anew.
    SigningPlayer.objects.filter(pk=player.pk).update(signature_share="")
    assert advance_signing(session_id) == "SIGNING"
    assert SigningPlayer.objects.get(pk=player.pk).signature_share == nonce.signature_share
    # Another package for the same nonces: refused, the session fails, the nonce keeps its one use.
    SigningPlayer.objects.filter(pk=player.pk).update(signature_share="")
    SigningSession.unscoped.filter(pk=session.pk).update(package_digest="00" * 32)
    assert advance_signing(session_id) == "FAILED"
    assert "NONCE_ALREADY_USED" in SigningSession.unscoped.get(pk=session.pk).error_message
    assert SigningNonce.objects.get(pk=nonce.pk).package_digest == session.package_digest
    assert package["commitments"][0]["hiding"] == nonce.hiding


@pytest.mark.django_db
def test_the_admin_refreshes_a_keys_shares_through_the_service(api, admin_client):
    address = create(api, dkg_item(("BACKEND_A", "BACKEND_B"))).json()["newAccount"]["onchainId"]
    key = ThresholdKey.objects.get(account__address=address)
    page = admin_client.get(f"/admin/accounts/thresholdkey/{key.pk}/change/")
    assert page.status_code == 200 and "BACKEND_A" in page.content.decode()
    response = admin_client.post("/admin/accounts/thresholdkey/", {"action": "refresh_shares", "_selected_action": [key.pk], "_staff_confirmed": "yes"}, follow=True)
    assert response.status_code == 200 and "shares refreshed (generation 2)" in response.content.decode()
    key.refresh_from_db()
    assert key.generation == 2 and M.base58(bytes.fromhex(key.group_public_key)) == address


@pytest.mark.django_db
def test_the_sweep_resumes_sessions_with_backend_work_and_leaves_those_waiting_for_a_player(api):
    from accounts.mpc import sessions

    waiting = create(api, dkg_item(("BACKEND_A", "BACKEND_B"), ["CLIENT_X"])).json()["dkgSession"]["sessionId"]
    advance(waiting)  # the backend players' round 1 is done: only CLIENT_X is awaited
    stuck = create(api, dkg_item(("BACKEND_A", "BACKEND_B"), ["CLIENT_Y"])).json()["dkgSession"]["sessionId"]  # its kick was lost
    late = create(api, dkg_item(("BACKEND_A", "BACKEND_B"), ["CLIENT_Z"])).json()["dkgSession"]["sessionId"]
    advance(late)
    DkgSession.unscoped.filter(offchain_id=late).update(expires_at="2000-01-01T00:00:00Z")
    found = sessions.sessions_sweep(quiet_seconds=0)
    pk = {sid: DkgSession.unscoped.get(offchain_id=sid).pk for sid in (waiting, stuck, late)}
    assert sorted(found["keygen"]) == sorted([pk[stuck], pk[late]])
