"""Key custody: envelope encryption, both storage locations, import formats, rotation."""

import io
import json
import os
import stat

import pytest
from django.core import serializers
from django.core.management import call_command
from solders.keypair import Keypair

from custody import services as custody
from custody.errors import CustodyError, InvalidPrivateKey
from custody.models import KeyLocation, ManagedKey
from ledger_project import base58

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def isolated_keys(settings, tmp_path):
    settings.LEDGER_MASTER_KEY = ""
    settings.LEDGER_MASTER_KEY_FILE = tmp_path / "master.key"
    settings.LEDGER_SECRETS_DIR = tmp_path / "secrets"
    return tmp_path


def _verify(key: ManagedKey):
    message = b"ledger custody test"
    signer = custody.managed_key_signer(key=key)
    assert str(signer.pubkey()) == key.public_key
    assert signer.sign_message(message).verify(signer.pubkey(), message)


@pytest.mark.parametrize("location", [KeyLocation.DATABASE, KeyLocation.SECRETS])
def test_generated_key_signs(location):
    _verify(custody.managed_key_generate(location=location))


def test_key_file_is_created_private(isolated_keys):
    custody.managed_key_generate()
    mode = stat.S_IMODE(os.stat(isolated_keys / "master.key").st_mode)
    assert mode == 0o600


def test_secrets_location_keeps_ciphertext_in_a_private_file(isolated_keys, django_capture_on_commit_callbacks):
    keypair = Keypair()
    with django_capture_on_commit_callbacks(execute=True):  # the file is written once the row has committed
        key = custody.managed_key_import(secret=str(keypair), location=KeyLocation.SECRETS)
    key.refresh_from_db()
    path = isolated_keys / "secrets" / key.secret_ref
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    content = path.read_bytes()
    assert bytes(keypair)[:32] not in content and bytes(keypair)[:32].hex().encode() not in content
    assert bytes(key.ciphertext) == b""
    _verify(key)


@pytest.mark.parametrize(
    "encode",
    [lambda kp: str(kp), lambda kp: base58.b58encode(bytes(kp)[:32]), lambda kp: json.dumps(list(bytes(kp)))],
    ids=["base58-64", "base58-seed", "json-array"],
)
def test_import_formats(encode):
    keypair = Keypair()
    key = custody.managed_key_import(secret=encode(keypair))
    assert key.public_key == str(keypair.pubkey())
    assert custody.managed_key_export(key=key) == str(keypair)


@pytest.mark.parametrize("secret", ["", "0OIl", "abc", "[1,2,300]", "[1,2,3]"])
def test_malformed_imports_are_refused(secret):
    with pytest.raises(InvalidPrivateKey):
        custody.managed_key_import(secret=secret)


def test_mismatched_secret_key_halves_are_refused():
    a, b = Keypair(), Keypair()
    forged = bytes(a)[:32] + bytes(b.pubkey())
    with pytest.raises(InvalidPrivateKey, match="does not match"):
        custody.managed_key_import(secret=base58.b58encode(forged))


def test_import_checks_expected_public_key():
    with pytest.raises(InvalidPrivateKey):
        custody.managed_key_import(secret=str(Keypair()), expected_public_key=str(Keypair().pubkey()))


def test_database_dump_holds_no_usable_key():
    keypair = Keypair()
    custody.managed_key_import(secret=str(keypair))
    dump = serializers.serialize("json", ManagedKey.objects.all())
    raw_columns = repr(list(ManagedKey.objects.values_list()))
    for text in (dump, raw_columns):
        assert str(keypair) not in text
        assert base58.b58encode(bytes(keypair)[:32]) not in text
        assert bytes(keypair)[:32].hex() not in text
        assert repr(bytes(keypair)[:32]) not in text


def test_swapped_ciphertexts_do_not_decrypt():
    a, b = custody.managed_key_generate(), custody.managed_key_generate()
    a.ciphertext, a.key_nonce = b.ciphertext, b.key_nonce
    with pytest.raises(CustodyError, match="does not decrypt"):
        custody.managed_key_signer(key=a)


def test_signer_does_not_leak_in_repr_or_pickle():
    import pickle

    key = custody.managed_key_generate()
    signer = custody.managed_key_signer(key=key)
    assert key.public_key in repr(signer)
    with pytest.raises(TypeError):
        pickle.dumps(signer)


def test_rotation_rewraps_and_keeps_keys_usable():
    keys = [custody.managed_key_generate(location=loc) for loc in (KeyLocation.DATABASE, KeyLocation.SECRETS, KeyLocation.DATABASE)]
    before = ManagedKey.objects.first().master_key_id
    out = io.StringIO()
    call_command("rotate_master_key", stdout=out)
    result = json.loads(out.getvalue())
    assert result["rewrapped"] == 3 and result["masterKeyId"] != before and result["stillReferenced"] == {}
    for key in keys:
        key.refresh_from_db()
        assert key.master_key_id == result["masterKeyId"]
        _verify(key)
    # Rotation never retires: the old key stays until retirement proves it unreferenced.
    assert [custody.master_key_id(k) for k in custody.keyring()] == [result["masterKeyId"], before]
    out = io.StringIO()
    call_command("rotate_master_key", "--retire", before, stdout=out)
    assert json.loads(out.getvalue()) == {"retired": before, "keysInKeyring": 1}
    assert len(custody.keyring()) == 1
    for key in keys:
        _verify(key)


def test_environment_keyring_rotation(settings):
    import secrets

    old, new = secrets.token_bytes(32), secrets.token_bytes(32)
    settings.LEDGER_MASTER_KEY = custody.encode_master_key(old)
    key = custody.managed_key_generate()
    settings.LEDGER_MASTER_KEY = f"{custody.encode_master_key(new)},{custody.encode_master_key(old)}"
    result = custody.master_key_rotate()
    assert result.rewrapped == 1 and result.master_key_id == custody.master_key_id(new) and result.still_referenced == {}
    assert custody.master_key_retire(key_id=custody.master_key_id(old)) == 2  # verified; the operator edits the variable
    settings.LEDGER_MASTER_KEY = custody.encode_master_key(new)
    key.refresh_from_db()
    _verify(key)


def _sealed_under(key: bytes, make):
    """Run ``make`` as a process whose keyring still has ``key`` first would (a request
    that read the keyring before the rotation changed it)."""
    from unittest import mock

    with mock.patch.object(custody, "keyring", lambda: [key]):
        return make()


def _instrument_with_webhook_secret(value: str):
    from instruments import webhooks
    from instruments.tests.factories import FinancialInstrumentFactory

    hooks = webhooks.sealed([{"endpointUrl": "https://hooks.example/tx", "name": "ops", "apiKeyAuthConfig": {"httpHeaderName": "X-Key", "keyValue": value}}])
    return FinancialInstrumentFactory(post_transaction_submit_webhooks=hooks)


def _webhook_secret(instrument) -> str:
    from instruments import webhooks

    instrument.refresh_from_db()
    return webhooks.opened(instrument.post_transaction_submit_webhooks[0], "apiKeyAuthConfig", "keyValue")


def test_rotation_reseals_webhook_secrets_and_values_sealed_concurrently(monkeypatch):
    old = custody.keyring()[0]
    old_id = custody.master_key_id(old)
    key = custody.managed_key_generate()
    instrument = _instrument_with_webhook_secret("hook-secret")
    late: dict = {}
    first_pass = custody._reseal_pass

    def pass_then_concurrent_seal(current):
        counts = first_pass(current)
        if not late:  # between the rotation's scan and its end, another process seals under the old key
            late["key"] = _sealed_under(old, custody.managed_key_generate)
            late["instrument"] = _sealed_under(old, lambda: _instrument_with_webhook_secret("late-secret"))
        return counts

    monkeypatch.setattr(custody, "_reseal_pass", pass_then_concurrent_seal)
    result = custody.master_key_rotate()
    assert result.still_referenced == {} and result.rewrapped == 2 and result.resealed == 2
    assert custody.sealed_references() == {result.master_key_id: 4}
    assert old_id in [custody.master_key_id(k) for k in custody.keyring()]  # kept until retired
    custody.master_key_retire(key_id=old_id)
    assert [custody.master_key_id(k) for k in custody.keyring()] == [result.master_key_id]
    for managed in (key, late["key"]):
        managed.refresh_from_db()
        _verify(managed)
    assert _webhook_secret(instrument) == "hook-secret" and _webhook_secret(late["instrument"]) == "late-secret"


def test_retirement_refuses_while_a_value_is_sealed_under_the_old_key():
    old = custody.keyring()[0]
    old_id = custody.master_key_id(old)
    custody.master_key_rotate()
    straggler = _sealed_under(old, lambda: _instrument_with_webhook_secret("straggler"))  # sealed after the rotation ended
    with pytest.raises(CustodyError, match="still sealed under master key"):
        custody.master_key_retire(key_id=old_id)
    assert old_id in [custody.master_key_id(k) for k in custody.keyring()]
    assert _webhook_secret(straggler) == "straggler"
    custody.master_key_rotate()
    custody.master_key_retire(key_id=old_id)
    assert _webhook_secret(straggler) == "straggler"


def test_the_current_key_is_never_retired():
    custody.managed_key_generate()
    with pytest.raises(CustodyError, match="current key"):
        custody.master_key_retire(key_id=custody.master_key_id(custody.keyring()[0]))


def test_missing_master_key_is_a_clear_error(settings):
    key = custody.managed_key_generate()
    settings.LEDGER_MASTER_KEY = custody.encode_master_key(b"\1" * 32)
    with pytest.raises(CustodyError, match="not in the keyring"):
        custody.managed_key_signer(key=key)


def test_outside_embedded_mode_a_missing_key_file_is_never_generated(settings, isolated_keys):
    settings.LEDGER_EMBEDDED = False
    with pytest.raises(CustodyError, match="does not exist"):
        custody.managed_key_generate()
    assert not (isolated_keys / "master.key").exists()


# --- sealing happens in the write phase ------------------------------------------------------


@pytest.mark.parametrize("location", [KeyLocation.DATABASE, KeyLocation.SECRETS])
def test_an_unsaved_key_signs_from_memory_and_is_sealed_only_when_stored(isolated_keys, location):
    old_id = custody.master_key_id(custody.keyring()[0])
    key = custody.managed_key_generate(location=location, save=False)
    _verify(key)  # the network phase signs with the key in memory
    assert custody.sealed_references() == {} and not (isolated_keys / "secrets").exists()
    new_id = custody.master_key_rotate().master_key_id
    custody.master_key_retire(key_id=old_id)
    custody.managed_key_store(key)
    stored = ManagedKey.objects.get(public_key=key.public_key)
    assert stored.master_key_id == new_id
    _verify(stored)


@pytest.mark.django_db(transaction=True)
def test_retirement_waits_for_a_transaction_that_sealed_under_the_old_key(monkeypatch):
    """A write phase sealed under the old key (it read the keyring before the rotation
    changed it) and has not committed when retirement runs: retirement waits for it, counts
    its row and refuses; the key stays usable."""
    import threading

    from django.db import connection, transaction

    old = custody.keyring()[0]
    old_id = custody.master_key_id(old)
    custody.master_key_rotate()
    real_keyring = custody.keyring
    monkeypatch.setattr(custody, "keyring", lambda: [old] if threading.current_thread().name == "stale-writer" else real_keyring())
    sealed, retired, out = threading.Event(), threading.Event(), {}

    def stale_write_phase():
        try:
            with transaction.atomic():
                out["key"] = custody.managed_key_generate()
                sealed.set()
                retired.wait(3)  # commit after retirement returned, or after 3 s if it waits for us
        finally:
            connection.close()

    writer = threading.Thread(target=stale_write_phase, name="stale-writer")
    writer.start()
    assert sealed.wait(30)
    try:
        with pytest.raises(CustodyError, match="still sealed under master key"):
            custody.master_key_retire(key_id=old_id)
    finally:
        retired.set()
        writer.join(30)
    assert old_id in [custody.master_key_id(k) for k in custody.keyring()]
    _verify(ManagedKey.objects.get(public_key=out["key"].public_key))


@pytest.mark.django_db(transaction=True)
def test_values_are_sealed_only_inside_a_transaction():
    with pytest.raises(CustodyError, match="inside a database transaction"):
        custody.secret_seal(value="x", purpose="test")


def test_rotation_writes_the_secrets_file_a_stopped_process_did_not(isolated_keys):
    keypair = Keypair()
    key = custody.managed_key_import(secret=str(keypair), location=KeyLocation.SECRETS)  # its on-commit step never ran
    assert bytes(ManagedKey.objects.get(pk=key.pk).ciphertext) != b""
    _verify(ManagedKey.objects.get(pk=key.pk))  # readable from the row meanwhile
    custody.master_key_rotate()
    stored = ManagedKey.objects.get(pk=key.pk)
    assert bytes(stored.ciphertext) == b"" and (isolated_keys / "secrets" / stored.secret_ref).exists()
    assert custody.managed_key_export(key=stored) == str(keypair)
