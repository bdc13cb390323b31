"""Fetch Transaction Details (POST /api/v1/transactions/single) on the local node: the
decoded message and the chain's record of a landed transaction, checked against what an
unmodified Solana client (solana-py ``Client.get_transaction``) reports for it, served
from the service's records (docs/transactions.md, "Transaction details and history")."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest
from solders.keypair import Keypair
from solders.pubkey import Pubkey
from solders.signature import Signature

from conftest import assert_error
from chain.rpc import ChainRpc
from transactions.details import transaction_details
from transactions.models import Transaction
from transactions.serializers import TransactionDetailsOutput

pytestmark = pytest.mark.chain
DETAILS = "/api/v1/transactions/single"
SOL = 10**9


@pytest.fixture(autouse=True)
def airdrop_funding(settings):
    settings.LEDGER_LOCALNET_AIRDROP_FUNDING = True  # seeds paid by the localnet funder (docs/accounts.md)


def account(api, lamports: int = 0) -> dict:
    data = {"managed": True, "offchainReferences": {"type": "WALLET"}}
    if lamports:
        data["seed"] = {"lamports": lamports}
    response = api.call("post", "/api/v1/accounts?wait=confirmed", {"itemData": data})
    assert response.status_code == 201, response.json()
    return response.json()["newAccount"]


def send_transfer(api, source: dict, destination: dict, lamports: int) -> dict:
    body = {"itemData": {"source": {"offchainId": source["offchainId"]}, "destination": {"offchainId": destination["offchainId"]}, "value": {"lamports": lamports}}}
    response = api.call("post", "/api/v1/positions/transfer-network-currency?wait=confirmed", body)
    assert response.status_code == 200, response.json()
    result = response.json()["svmTransaction"]
    assert result["status"] in ("CONFIRMED", "FINALIZED"), result
    return result


def details(api, **ident):
    return api.call("post", DETAILS, {"itemData": {"transaction": ident}})


def refuse_cluster(monkeypatch):
    """From now on, any request to the cluster fails the test: details come from the database."""
    def refuse(*args, **kwargs):
        raise AssertionError("Fetch Transaction Details asked the cluster")

    monkeypatch.setattr(ChainRpc, "_call", refuse)
    monkeypatch.setattr(ChainRpc, "_batch", refuse)


@pytest.fixture
def transfer(api, celery_worker_process, chain):
    """A confirmed Transfer Network Currency between two managed accounts, and what an
    unmodified client reads of it."""
    source, destination = account(api, 2 * SOL), account(api)
    result = send_transfer(api, source, destination, 700_000_000)
    record = chain.get_transaction(Signature.from_string(result["onchainId"]), max_supported_transaction_version=0).value
    assert record is not None
    return source, destination, result, record


@pytest.mark.django_db(transaction=True)
def test_details_of_a_confirmed_transfer_match_the_chain_and_come_from_the_database(api, transfer, chain, monkeypatch):
    source, destination, result, record = transfer
    tx = Transaction.unscoped.get(offchain_id=result["offchainId"])
    assert tx.fee is not None, "the settle path stored the chain's record"
    refuse_cluster(monkeypatch)
    response = details(api, offchainId=result["offchainId"])
    assert response.status_code == 200, response.json()
    body = response.json()
    meta = record.transaction.meta
    assert body["fee"] == meta.fee and body["fee"] > 0
    assert body["computeUnitsConsumed"] == meta.compute_units_consumed and body["computeUnitsConsumed"] > 0
    assert body["logMessages"] == list(meta.log_messages) and any("11111111111111111111111111111111 success" in line for line in body["logMessages"])
    assert body["slot"] == record.slot
    assert body["blockTime"] == datetime.fromtimestamp(record.block_time, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert body["error"] is None and body["success"] is True and body["onchainId"] == result["onchainId"]
    # The transaction result's fields, then the details.
    assert {k: body[k] for k in result} == {**result, "status": body["status"], "confirmationsCount": body["confirmationsCount"]}
    assert body["operation"] == "positions.transfer_network_currency" and body["cluster"] == "CHAIN_LOCALNET"
    assert body["createdByKey"] == Transaction.unscoped.select_related("created_by_key").get(pk=tx.pk).created_by_key.key_id
    # The message decoded: the System transfer with its accounts and roles.
    transfers = [ix for ix in body["instructions"] if ix["instructionType"] == "transfer"]
    assert len(transfers) == 1
    ix = transfers[0]
    assert (ix["programId"], ix["programName"], ix["data"]) == ("11111111111111111111111111111111", "system", {"lamports": 700_000_000})
    named = {a["role"]: a for a in ix["accounts"]}
    assert named["source"]["onchainId"] == source["onchainId"] and named["source"]["signer"] and named["source"]["writable"]
    assert named["destination"]["onchainId"] == destination["onchainId"] and not named["destination"]["signer"] and named["destination"]["writable"]
    # Every account key, as the chain lists them.
    ui = record.transaction.transaction.message
    assert [a["onchainId"] for a in body["accounts"]] == [str(k) for k in ui.account_keys]
    assert body["feePayer"] == str(ui.account_keys[0]) and body["requiredSigners"][0] == {"onchainId": body["feePayer"], "signed": True}
    assert all(s["signed"] for s in body["requiredSigners"]) and {s["onchainId"] for s in body["requiredSigners"]} == {body["feePayer"], source["onchainId"]}
    assert body["transactionVersion"] == "V0" and body["messageLifetimeStrategy"] == "RECENT_BLOCKHASH" and body["recentBlockhash"] == str(ui.recent_blockhash)


@pytest.mark.django_db(transaction=True)
def test_a_transaction_settled_without_its_record_reads_it_once_from_the_cluster(api, transfer, monkeypatch):
    _, _, result, record = transfer
    # As a transaction settled before the columns existed.
    Transaction.unscoped.filter(offchain_id=result["offchainId"]).update(fee=None, compute_units_consumed=None, log_messages=None, block_time=None)
    calls = []
    real = ChainRpc._call

    def counted(self, fn, *args, **kwargs):
        calls.append(getattr(fn, "__name__", "?"))
        return real(self, fn, *args, **kwargs)

    monkeypatch.setattr(ChainRpc, "_call", counted)
    first = details(api, onchainId=result["onchainId"]).json()
    assert calls == ["get_transaction"]
    assert (first["fee"], first["computeUnitsConsumed"], first["logMessages"]) == (record.transaction.meta.fee, record.transaction.meta.compute_units_consumed, list(record.transaction.meta.log_messages))
    stored = Transaction.unscoped.get(offchain_id=result["offchainId"])
    assert (stored.fee, stored.log_messages) == (first["fee"], first["logMessages"])
    again = details(api, offchainId=result["offchainId"]).json()
    assert calls == ["get_transaction"] and again == first


@pytest.mark.django_db(transaction=True)
def test_details_of_an_instrument_creation_decode_token_2022_and_name_the_instrument(api, celery_worker_process, chain, monkeypatch):
    from positions.tests.kit import instrument, wallet

    authority = wallet(api)
    created = instrument(api, authority=authority, version="TOKEN_2022", decimals=2)
    tx = Transaction.unscoped.filter(operation="instruments.create").latest("pk")
    mint_space = len(chain.get_account_info(Pubkey.from_string(created["onchainId"])).value.data)
    refuse_cluster(monkeypatch)
    body = details(api, offchainId=str(tx.offchain_id)).json()
    assert body["operationRecords"] == [{"type": "FINANCIAL_INSTRUMENT", "offchainId": created["offchainId"]}]
    types = [(ix["programName"], ix["instructionType"]) for ix in body["instructions"]]
    assert ("system", "createAccount") in types and ("spl-token-2022", "initializeMint2") in types
    init = next(ix for ix in body["instructions"] if ix["instructionType"] == "initializeMint2")
    assert init["data"]["decimals"] == 2 and init["accounts"][0] == {"role": "mint", "onchainId": created["onchainId"], "signer": True, "writable": True, "lookupTable": None, "lookupTableIndex": None}
    create = next(ix for ix in body["instructions"] if ix["instructionType"] == "createAccount")
    assert create["data"]["owner"] == "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"
    # The metadata extension grows the account after its creation: at least the base mint, at most what it became.
    assert 82 < create["data"]["space"] <= mint_space
    assert {a["role"]: a["onchainId"] for a in create["accounts"]}["newAccount"] == created["onchainId"]


@pytest.mark.django_db(transaction=True)
def test_a_held_transaction_shows_its_signers_but_not_its_signature(api, celery_worker_process, monkeypatch):
    source = account(api, SOL)
    outside = {"onchainId": str(Keypair().pubkey()), "offPlatform": True}
    response = api.call("post", "/api/v1/positions/transfer-network-currency", {"itemData": {"source": {"offchainId": source["offchainId"]}, "destination": outside, "value": {"lamports": 890_880}}})
    held = response.json()["svmTransaction"]
    assert held["status"] == "PENDING_APPROVAL"
    refuse_cluster(monkeypatch)
    body = details(api, offchainId=held["offchainId"]).json()
    assert body["onchainId"] is None and body["fee"] is None and body["slot"] is None and body["logMessages"] is None
    assert all(s["signed"] for s in body["requiredSigners"]) and "signatures" not in body
    assert Transaction.unscoped.get(offchain_id=held["offchainId"]).onchain_id not in str(body)


@pytest.mark.django_db
def test_unknown_and_other_tenants_transactions_are_alike_404(api, other_api, other_tenant, localnet_url):
    theirs = Transaction.unscoped.create(tenant=other_tenant, cluster="CHAIN_LOCALNET", operation="test", status="SIGNED", onchain_id=str(Keypair().sign_message(b"x")),
                                         message=b"m", blockhash="11111111111111111111111111111111", fee_payer=str(Keypair().pubkey()))
    hidden = details(api, offchainId=str(theirs.offchain_id))
    missing = details(api, offchainId=str(uuid.uuid4()))
    assert_error(hidden, 404)
    assert_error(missing, 404)
    assert hidden.json()["errors"] == missing.json()["errors"]
    by_signature = details(api, onchainId=theirs.onchain_id)
    assert by_signature.status_code == 404 and by_signature.json()["errors"] == missing.json()["errors"]


@pytest.mark.django_db
def test_bad_bodies_are_400(api, localnet_url):
    assert_error(api.call("post", DETAILS, {"itemData": {"transaction": {}}}), 400, field="itemData.transaction.onchainId")
    assert_error(api.call("post", DETAILS, {"itemData": {"transaction": {"offchainId": "nope"}}}), 400)
    assert_error(api.call("post", DETAILS, {"itemData": {"transaction": {"offchainId": str(uuid.uuid4())}, "extra": 1}}), 400)
    assert_error(api.call("post", DETAILS, {}), 400)


@pytest.mark.django_db
def test_the_details_are_what_their_schema_says(tenant):
    """transactions/details.py writes the dict directly; TransactionDetailsOutput is its
    documented schema: the same fields, in the same order, at every level."""
    from solders.hash import Hash
    from solders.message import MessageV0, to_bytes_versioned
    from solders.system_program import TransferParams, transfer

    payer = Keypair().pubkey()
    message = MessageV0.try_compile(payer, [transfer(TransferParams(from_pubkey=payer, to_pubkey=Keypair().pubkey(), lamports=5))], [], Hash.default())
    tx = Transaction.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", operation="accounts.create", status="CONFIRMED", onchain_id=str(Keypair().sign_message(b"x")),
                                     message=to_bytes_versioned(message), blockhash=str(Hash.default()), fee_payer=str(payer), required_signers=[str(payer)],
                                     effects={"account": str(uuid.uuid4())}, fee=5000, compute_units_consumed=150, log_messages=["Program log: ok"], slot=9)
    tx.refresh_from_db()
    body = transaction_details(tx)
    schema = TransactionDetailsOutput()
    assert list(body) == list(schema.fields)
    for name in ("instructions", "accounts", "requiredSigners", "operationRecords"):
        child = schema.fields[name].child
        assert body[name] and all(list(item) == list(child.fields) for item in body[name]), name
    assert list(body["instructions"][0]["accounts"][0]) == list(schema.fields["instructions"].child.fields["accounts"].child.fields)


@pytest.mark.django_db
def test_the_admin_shows_decoded_instructions_signatures_and_events(admin_client, tenant):
    from solders.hash import Hash
    from solders.message import MessageV0, to_bytes_versioned
    from solders.system_program import TransferParams, transfer

    from transactions.models import TransactionEvent

    payer, source, destination = Keypair().pubkey(), Keypair().pubkey(), Keypair().pubkey()
    message = MessageV0.try_compile(payer, [transfer(TransferParams(from_pubkey=source, to_pubkey=destination, lamports=4242))], [], Hash.default())
    tx = Transaction.unscoped.create(tenant=tenant, cluster="CHAIN_LOCALNET", operation="positions.transfer_network_currency", status="PARTIALLY_SIGNED",
                                     message=to_bytes_versioned(message), blockhash=str(Hash.default()), fee_payer=str(payer),
                                     required_signers=[str(payer), str(source)], signatures={str(payer): str(Keypair().sign_message(b"m"))})
    TransactionEvent.objects.create(transaction=tx, kind="SIGNATURES_ADDED", detail={"signers": [str(payer)]})
    page = admin_client.get(f"/admin/transactions/transaction/{tx.pk}/change/").content.decode()
    # The back office renders transaction_details itself (templates/admin/transactions/transaction/).
    assert '<strong class="instruction-type">transfer</strong>' in page and "&quot;lamports&quot;: 4242" in page
    assert f"<td>source</td><td><code>{source}</code>" in page and f"<td>destination</td><td><code>{destination}</code>" in page
    assert f'<td><code>{payer}</code></td>\n          <td><span class="signed">signed</span>' in page
    assert f'<td><code>{source}</code></td>\n          <td><span class="missing">missing</span>' in page
    assert "SIGNATURES_ADDED" in page
