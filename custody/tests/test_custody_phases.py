"""Keys and secrets are sealed in a service's write phase, under the master key current
then (docs/custody.md): a rotation and retirement between a request's network phase and its
write phase strand nothing, an aborted write phase leaves no SECRETS file, and a concurrent
duplicate import is 409 DUPLICATE_KEY."""

from __future__ import annotations

import contextlib

import pytest
from solders.keypair import Keypair

from accounts import services
from accounts.models import Account
from accounts.tests.test_api_accounts import create
from conftest import assert_error
from custody import services as custody
from custody.models import KeyLocation, ManagedKey
from custody.tests.test_custody import _verify, isolated_keys  # noqa: F401 (autouse fixture)
from ledger_project.api.errors import ConflictError
from tenancy.context import OperationContext
from tenancy.idempotency import write_phase

CLUSTER = "CHAIN_LOCALNET"


def _rotate_and_retire() -> str:
    old_id = custody.master_key_id(custody.keyring()[0])
    new_id = custody.master_key_rotate().master_key_id
    custody.master_key_retire(key_id=old_id)
    assert [custody.master_key_id(k) for k in custody.keyring()] == [new_id]
    return new_id


def _rotate_and_retire_before_write_phase(monkeypatch, module) -> dict:
    """The operator rotates and retires while the request is between its network phase and
    its write phase."""
    done: dict = {}
    real = module.write_phase

    @contextlib.contextmanager
    def rotated_then_write_phase(**kwargs):
        if not done:
            done["master_key_id"] = _rotate_and_retire()
        with real(**kwargs):
            yield

    monkeypatch.setattr(module, "write_phase", rotated_then_write_phase)
    return done


@pytest.mark.django_db
@pytest.mark.parametrize("location", [KeyLocation.DATABASE, KeyLocation.SECRETS])
@pytest.mark.parametrize("imported", [False, True], ids=["generated", "imported"])
def test_a_drafted_key_survives_rotation_and_retirement_before_its_write_phase(tenant, location, imported):
    keypair = Keypair()
    details = {"location": [location], **({"privateKey": str(keypair)} if imported else {})}
    account = services.account_draft(tenant=tenant, cluster=CLUSTER, api_key=None, data={"managed": True, "privateKeyDetails": details})
    _verify(account.managed_key)  # the network phase signs with the key in memory
    new_id = _rotate_and_retire()
    services.account_save(account)
    stored = Account.unscoped.get(pk=account.pk).managed_key
    assert stored.master_key_id == new_id
    _verify(stored)
    if imported:
        assert custody.managed_key_export(key=stored) == str(keypair)


@pytest.mark.django_db
def test_create_account_seals_its_key_under_the_key_current_in_the_write_phase(api, localnet_url, monkeypatch):
    rotated = _rotate_and_retire_before_write_phase(monkeypatch, services)
    keypair = Keypair()
    response = create(api, {"managed": True, "privateKeyDetails": {"location": ["SECRETS"], "privateKey": str(keypair)}})
    assert response.status_code == 201, response.json()
    key = Account.unscoped.get(offchain_id=response.json()["newAccount"]["offchainId"]).managed_key
    assert key.master_key_id == rotated["master_key_id"]
    assert custody.managed_key_export(key=key) == str(keypair)


@pytest.mark.django_db
def test_webhook_secrets_are_sealed_under_the_key_current_in_the_write_phase(tenant, localnet_url, monkeypatch):
    from instruments import changes as instrument_changes, webhooks
    from instruments.tests.factories import FinancialInstrumentFactory

    instrument = FinancialInstrumentFactory(tenant=tenant)
    rotated = _rotate_and_retire_before_write_phase(monkeypatch, instrument_changes)
    hook = {"endpointUrl": "https://hooks.example/tx", "name": "ops", "apiKeyAuthConfig": {"httpHeaderName": "X-Key", "keyValue": "hook-secret"}}
    instrument_changes.instrument_update(OperationContext.system(tenant=tenant, cluster=CLUSTER), instrument=instrument, changes={"postTransactionSubmitWebhooks": [hook]})
    instrument.refresh_from_db()
    stored = instrument.post_transaction_submit_webhooks[0]
    assert stored["apiKeyAuthConfig"]["keyValue"]["sealed"]["kid"] == rotated["master_key_id"]
    assert webhooks.opened(stored, "apiKeyAuthConfig", "keyValue") == "hook-secret"


@pytest.mark.django_db(transaction=True)
def test_a_secrets_key_whose_write_phase_aborts_leaves_no_file(tenant, isolated_keys):
    secrets_dir = isolated_keys / "secrets"
    keypair = Keypair()
    data = {"managed": True, "privateKeyDetails": {"location": ["SECRETS"], "privateKey": str(keypair)}}
    account = services.account_draft(tenant=tenant, cluster=CLUSTER, api_key=None, data=data)
    with pytest.raises(ConflictError):
        with write_phase():
            services.account_save(account)
            raise ConflictError("a later check of the write phase refuses", code="CONFLICT")  # a 4xx after the key was stored
    assert not ManagedKey.objects.filter(public_key=str(keypair.pubkey())).exists()
    assert not secrets_dir.exists() or list(secrets_dir.iterdir()) == []
    # The retry stores the key, and its file once the row has committed.
    account = services.account_draft(tenant=tenant, cluster=CLUSTER, api_key=None, data=data)
    with write_phase():
        services.account_save(account)
    key = ManagedKey.objects.get(public_key=str(keypair.pubkey()))
    assert [p.name for p in secrets_dir.iterdir()] == [key.secret_ref] and bytes(key.ciphertext) == b""
    assert custody.managed_key_export(key=key) == str(keypair)


@pytest.mark.django_db
@pytest.mark.parametrize("location", ["DATABASE", "SECRETS"])
def test_a_concurrent_duplicate_import_is_409_duplicate_key(tenant, other_tenant, isolated_keys, location):
    keypair = Keypair()
    data = {"managed": True, "privateKeyDetails": {"location": [location], "privateKey": str(keypair)}}
    # Both drafts pass the early check; the first is stored, then the second reaches its write phase.
    drafts = [services.account_draft(tenant=t, cluster=CLUSTER, api_key=None, data=data) for t in (tenant, tenant, other_tenant)]
    services.account_save(drafts[0])
    for draft, named in ((drafts[1], True), (drafts[2], False)):
        with pytest.raises(ConflictError) as caught:
            services.account_save(draft)
        assert (caught.value.code, caught.value.field) == ("DUPLICATE_KEY", "itemData.privateKeyDetails.privateKey")
        assert (str(drafts[0].offchain_id) in caught.value.message) is named
    assert Account.unscoped.count() == 1
    assert custody.managed_key_export(key=Account.unscoped.get().managed_key) == str(keypair)


@pytest.mark.django_db
def test_a_concurrent_duplicate_import_through_the_api_is_409_duplicate_key(api, localnet_url, monkeypatch):
    keypair = Keypair()
    item = {"managed": True, "privateKeyDetails": {"privateKey": str(keypair)}}
    competing: list = []
    real = services.write_phase

    @contextlib.contextmanager
    def other_import_commits_first(**kwargs):
        if not competing:
            competing.append(None)
            competing[0] = create(api, item)  # passed the same early check, committed first
        with real(**kwargs):
            yield

    monkeypatch.setattr(services, "write_phase", other_import_commits_first)
    response = create(api, item)
    assert competing[0].status_code == 201, competing[0].json()
    body = assert_error(response, 409, "DUPLICATE_KEY", "itemData.privateKeyDetails.privateKey")
    assert competing[0].json()["newAccount"]["offchainId"] in body["errors"][0]["message"]
    assert Account.unscoped.count() == 1
