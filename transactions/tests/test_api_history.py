"""Fetch Transactions (POST /api/v1/transactions/bulk/{detailed,compact,identifiers}):
every filter and sort of its itemQuery (docs/query.md), tenant scoping, the detail levels
and bad queries. Rows are recorded directly (no chain): the listing reads only the
service's records."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from solders.hash import Hash
from solders.keypair import Keypair
from solders.message import MessageV0, to_bytes_versioned
from solders.pubkey import Pubkey
from solders.system_program import TransferParams, transfer

from conftest import assert_error, make_client
from tenancy.roles import Role
from tenancy.tests.factories import issue_key
from chain.rpc import ChainRpc
from transactions.details import transaction_details
from transactions.models import Transaction, TransactionSigner
from transactions.responses import transaction_result

BULK = "/api/v1/transactions/bulk"
FP, A, B = (str(Keypair().pubkey()) for _ in range(3))  # the platform fee payer, two account holders


def record(tenant, *, signers: list[str], minutes_ago: int, key=None, confirmed: bool = False, held: bool = False, cluster: str = "CHAIN_LOCALNET", **fields) -> Transaction:
    """A transaction row as transaction_record writes it (with its signer rows), built
    ``minutes_ago`` minutes ago."""
    payer = Pubkey.from_string(signers[0])
    others = [Pubkey.from_string(s) for s in signers[1:]]
    ixs = [transfer(TransferParams(from_pubkey=source, to_pubkey=Keypair().pubkey(), lamports=minutes_ago)) for source in (others or [payer])]
    message = MessageV0.try_compile(payer, ixs, [], Hash.new_unique())
    signers = [str(k) for k in message.account_keys[: message.header.num_required_signatures]]  # the message's order (fee payer first)
    now = timezone.now()
    tx = Transaction.unscoped.create(
        tenant=tenant, cluster=cluster, message=to_bytes_versioned(message), blockhash=str(message.recent_blockhash), fee_payer=signers[0],
        required_signers=signers, signatures={s: "sig" for s in signers}, onchain_id=str(Keypair().sign_message(bytes(str(uuid.uuid4()), "ascii"))),
        created_by_key=key, approval_required=held, confirmed_at=now - timedelta(minutes=minutes_ago - 1) if confirmed else None, **fields,
    )
    Transaction.unscoped.filter(pk=tx.pk).update(txn_timestamp=now - timedelta(minutes=minutes_ago))
    TransactionSigner.objects.bulk_create([TransactionSigner(transaction=tx, address=s, position=i) for i, s in enumerate(signers)])
    tx.refresh_from_db()
    return tx


@pytest.fixture
def rows(tenant, api_key, other_tenant):
    second_key = issue_key(tenant).api_key
    made = {
        "t1": record(tenant, signers=[FP, A], minutes_ago=50, key=api_key.api_key, confirmed=True, status="FINALIZED", operation="accounts.create", slot=100, fee=5000),
        "t2": record(tenant, signers=[FP, B], minutes_ago=40, key=second_key, confirmed=True, status="CONFIRMED", operation="positions.transfer", slot=101),
        "t3": record(tenant, signers=[A], minutes_ago=30, key=api_key.api_key, held=True, status="PENDING_APPROVAL", operation="positions.transfer_network_currency"),
        "t4": record(tenant, signers=[FP, A, B], minutes_ago=20, status="FAILED", operation="positions.transfer", cluster="CHAIN_DEVNET", slot=103),
        "t5": record(tenant, signers=[FP], minutes_ago=10, key=second_key, status="SIGNED", operation="accounts.create"),
    }
    # Another organization's, matching every filter below: never listed.
    record(other_tenant, signers=[FP, A, B], minutes_ago=35, status="CONFIRMED", operation="positions.transfer", confirmed=True)
    return made


def page(api, level: str = "identifiers", item_query: dict | None = None, **envelope):
    response = api.call("post", f"{BULK}/{level}", {"itemQuery": item_query, **envelope} if item_query is not None else envelope)
    assert response.status_code == 200, response.json()
    return response.json()


def names(rows: dict, body: dict) -> list[str]:
    by_id = {str(tx.offchain_id): name for name, tx in rows.items()}
    return [by_id[item["offchainId"]] for item in body["items"]]


def where(field: str, data_type: str, **value) -> dict:
    return {"filter": [{"fieldName": field, "filterValues": [{"dataType": data_type, **value}]}]}


@pytest.mark.django_db
def test_newest_first_and_only_the_organizations_own(api, rows):
    body = page(api)
    assert body["count"] == 5 and names(rows, body) == ["t5", "t4", "t3", "t2", "t1"]


@pytest.mark.django_db
@pytest.mark.parametrize("query, expected", [
    (where("status", "TEXT", valueString="CONFIRMED"), ["t2"]),
    (where("status", "TEXT", filterType="IN", valuesString=["CONFIRMED", "FINALIZED"]), ["t2", "t1"]),
    (where("status", "TEXT", filterType="NOT_EQUALS", valueString="SIGNED"), ["t4", "t3", "t2", "t1"]),
    (where("operation", "TEXT", valueString="positions.transfer"), ["t4", "t2"]),
    (where("operation", "TEXT", filterType="CONTAINS", valueString="TRANSFER"), ["t4", "t3", "t2"]),
    (where("signer", "ONCHAIN_ADDRESS_ID", valueString=A), ["t4", "t3", "t1"]),
    (where("signer", "ONCHAIN_ADDRESS_ID", filterType="IN", valuesString=[A, B]), ["t4", "t3", "t2", "t1"]),  # t4 once, though A and B both sign it
    (where("signer", "ONCHAIN_ADDRESS_ID", filterType="NOT_EQUALS", valueString=A), ["t5", "t2"]),
    ({"filter": [{"fieldName": "signer", "operator": "AND", "filterValues": [{"dataType": "ONCHAIN_ADDRESS_ID", "valueString": A}, {"dataType": "ONCHAIN_ADDRESS_ID", "valueString": B}]}]}, ["t4"]),
    ({"filter": [{"fieldName": "signer", "operator": "OR", "filterValues": [{"dataType": "ONCHAIN_ADDRESS_ID", "valueString": A}, {"dataType": "ONCHAIN_ADDRESS_ID", "valueString": B}]}]}, ["t4", "t3", "t2", "t1"]),
    (where("feePayer", "ONCHAIN_ADDRESS_ID", valueString=A), ["t3"]),
    (where("feePayer", "ONCHAIN_ADDRESS_ID", filterType="NOT_EQUALS", valueString=FP), ["t3"]),
    (where("cluster", "TEXT", valueString="CHAIN_DEVNET"), ["t4"]),
    (where("confirmedAt", "TIMESTAMP", filterType="IS_NULL"), ["t5", "t4", "t3"]),
    (where("confirmedAt", "TIMESTAMP", filterType="IS_NOT_NULL"), ["t2", "t1"]),
    (where("createdByKey", "TEXT", filterType="IS_NULL"), ["t4"]),
])
def test_each_filter(api, rows, query, expected):
    body = page(api, item_query=query)
    assert names(rows, body) == expected and body["count"] == len(expected)


@pytest.mark.django_db
def test_time_ranges_ids_and_keys(api, api_key, rows):
    t3 = rows["t3"].txn_timestamp
    span = {"valueFromString": (t3 - timedelta(minutes=15)).isoformat(), "valueToString": t3.isoformat()}
    assert names(rows, page(api, item_query=where("txnTimestamp", "TIMESTAMP", filterType="RANGE", **span))) == ["t3", "t2"]
    since = {"valueFromString": (rows["t2"].confirmed_at - timedelta(seconds=1)).isoformat()}
    assert names(rows, page(api, item_query=where("confirmedAt", "TIMESTAMP", filterType="RANGE", **since))) == ["t2"]
    t2 = rows["t2"]
    assert names(rows, page(api, item_query=where("offchainId", "OFFCHAIN_ID", valueString=str(t2.offchain_id)))) == ["t2"]
    assert names(rows, page(api, item_query=where("onchainId", "TEXT", valueString=t2.onchain_id))) == ["t2"]
    assert names(rows, page(api, item_query=where("createdByKey", "TEXT", valueString=api_key.api_key.key_id))) == ["t3", "t1"]


@pytest.mark.django_db
def test_a_held_transactions_signature_is_not_found_by_any_query(api, rows):
    """Its onchainId is not disclosed (docs/transactions.md, "Held for approval"), so a
    query reads it as null: equality, a substring or a range never find it."""
    hidden = rows["t3"].onchain_id
    for query in (where("onchainId", "TEXT", valueString=hidden), where("onchainId", "TEXT", filterType="CONTAINS", valueString=hidden[:6]),
                  where("onchainId", "TEXT", filterType="RANGE", valueFromString=hidden, valueToString=hidden),
                  where("onchainId", "TEXT", filterType="IN", valuesString=[hidden])):
        assert "t3" not in names(rows, page(api, item_query=query))
    assert names(rows, page(api, item_query=where("onchainId", "TEXT", filterType="IS_NULL"))) == ["t3"]
    assert "t3" in names(rows, page(api, item_query=where("onchainId", "TEXT", filterType="NOT_EQUALS", valueString=hidden)))
    identifiers = {item["offchainId"]: item["onchainId"] for item in page(api)["items"]}
    assert identifiers[str(rows["t3"].offchain_id)] is None


def _expected_order(rows: dict, key, descending: bool) -> list[str]:
    """The order the database gives: by ``key``, ties newest record first (the id
    tiebreak); nulls last ascending on PostgreSQL and first on SQLite (the reverse when
    descending)."""
    present = [n for n in rows if key(rows[n]) is not None]
    absent = sorted((n for n in rows if key(rows[n]) is None), key=lambda n: -rows[n].pk)
    present.sort(key=lambda n: -rows[n].pk)
    present.sort(key=lambda n: key(rows[n]), reverse=descending)
    nulls_last = (connection.vendor == "postgresql") != descending
    return present + absent if nulls_last else absent + present


@pytest.mark.django_db
@pytest.mark.parametrize("field, key", [
    ("status", lambda tx: tx.status),
    ("operation", lambda tx: tx.operation),
    ("txnTimestamp", lambda tx: tx.txn_timestamp),
    ("confirmedAt", lambda tx: tx.confirmed_at),
    ("onchainId", lambda tx: None if tx.approval_required else tx.onchain_id),  # the held one sorts as null
    ("offchainId", lambda tx: str(tx.offchain_id) if connection.vendor == "postgresql" else tx.offchain_id.hex),
    ("feePayer", lambda tx: tx.fee_payer),
    ("cluster", lambda tx: tx.cluster),
    ("createdByKey", lambda tx: tx.created_by_key.key_id if tx.created_by_key_id else None),
])
@pytest.mark.parametrize("direction", ["ASC", "DESC"])
def test_each_sort(api, rows, field, key, direction):
    body = page(api, item_query={"sort": [{"fieldName": field, "sortDirection": direction}]})
    assert names(rows, body) == _expected_order(rows, key, direction == "DESC")


@pytest.mark.django_db
def test_pages_count_every_match(api, rows):
    first = page(api, item_query={"limit": 2, "sort": [{"fieldName": "txnTimestamp", "sortDirection": "ASC"}]})
    second = page(api, item_query={"limit": 2, "skip": 2, "sort": [{"fieldName": "txnTimestamp", "sortDirection": "ASC"}]})
    assert (first["count"], second["count"]) == (5, 5)
    assert names(rows, first) + names(rows, second) == ["t1", "t2", "t3", "t4"]


@pytest.mark.django_db
def test_detail_levels_render_the_single_fetches_shapes_without_the_cluster(api, rows, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("Fetch Transactions asked the cluster")

    monkeypatch.setattr(ChainRpc, "_call", refuse)
    monkeypatch.setattr(ChainRpc, "_batch", refuse)
    # t1 landed and has no stored record: the single fetch would read it once; a page never does.
    detailed = page(api, "detailed", {"filter": where("operation", "TEXT", valueString="accounts.create")["filter"]})
    for item in detailed["items"]:
        tx = Transaction.unscoped.get(offchain_id=item["offchainId"])
        tx.created_by_key_name = tx.created_by_key.key_id if tx.created_by_key_id else None
        assert item == transaction_details(tx)
    t1 = next(item for item in detailed["items"] if item["offchainId"] == str(rows["t1"].offchain_id))
    assert t1["fee"] == 5000 and t1["slot"] == 100 and t1["logMessages"] is None
    assert t1["instructions"][0]["instructionType"] == "transfer" and t1["requiredSigners"] == [{"onchainId": FP, "signed": True}, {"onchainId": A, "signed": True}]
    compact = page(api, "compact")
    assert [item["offchainId"] for item in compact["items"]] == [str(rows[n].offchain_id) for n in ("t5", "t4", "t3", "t2", "t1")]
    assert compact["items"] == [transaction_result(rows[n]) for n in ("t5", "t4", "t3", "t2", "t1")]
    identifiers = page(api, "identifiers")["items"]
    assert identifiers[0] == {"onchainId": rows["t5"].onchain_id, "offchainId": str(rows["t5"].offchain_id)}


@pytest.mark.django_db
def test_a_cross_tenant_key_lists_another_organizations_transactions(rows, tenant, other_tenant):
    plain = make_client(issue_key(tenant).secret)
    assert_error(plain.call("post", f"{BULK}/identifiers", {"tenancyConfig": {"overrideOrganizationExternalId": other_tenant.external_id}}), 403, "MISSING_ROLE")
    operator = make_client(issue_key(tenant, roles=[Role.PLATFORM_CROSS_TENANT_ACCESS]).secret)
    theirs = page(operator, tenancyConfig={"overrideOrganizationExternalId": other_tenant.external_id})
    assert theirs["count"] == 1 and theirs["items"][0]["offchainId"] not in {str(tx.offchain_id) for tx in rows.values()}
    assert page(operator)["count"] == 5


@pytest.mark.django_db
@pytest.mark.parametrize("query, code, field", [
    ({"filter": [{"fieldName": "nope", "filterValues": [{"dataType": "TEXT", "valueString": "x"}]}]}, "UNKNOWN_FIELD_NAME", "itemQuery.filter[0].fieldName"),
    (where("status", "NUMBER", valueNumber=1), "INVALID_DATA_TYPE", "itemQuery.filter[0].filterValues[0].dataType"),
    (where("signer", "ONCHAIN_ADDRESS_ID", valueString="not-an-address"), "INVALID_ADDRESS", "itemQuery.filter[0].filterValues[0].valueString"),
    (where("signer", "ONCHAIN_ADDRESS_ID", filterType="IS_NULL"), "INVALID_FILTER_TYPE", "itemQuery.filter[0].filterValues[0].filterType"),
    (where("txnTimestamp", "TIMESTAMP", valueString="yesterday"), "INVALID", "itemQuery.filter[0].filterValues[0].valueString"),
    ({"sort": [{"fieldName": "signer"}]}, "NOT_SORTABLE", "itemQuery.sort[0].fieldName"),
    ({"limit": 501}, "OUT_OF_RANGE", "itemQuery.limit"),
])
def test_a_bad_item_query_is_400(api, rows, query, code, field):
    assert_error(api.call("post", f"{BULK}/detailed", {"itemQuery": query}), 400, code, field)


@pytest.mark.django_db
def test_an_unknown_detail_level_is_400(api):
    assert_error(api.call("post", f"{BULK}/everything", {}), 400, "INVALID_ENUM", "detail-level")


@pytest.mark.django_db
def test_a_signer_is_a_literal_of_its_statement_not_a_parameter(tenant):
    """Prepared pages may get PostgreSQL's generic plan, which takes any parameter for the
    average address: for the platform fee payer, on nearly every transaction, the wrong
    plan (selectors._signed_by). The address is written into the statement instead."""
    from ledger_project.api.query import apply_item_query
    from transactions.selectors import TRANSACTION_QUERY

    page, _ = apply_item_query(Transaction.objects.for_tenant(tenant), where("signer", "ONCHAIN_ADDRESS_ID", filterType="IN", valuesString=[A, B]), TRANSACTION_QUERY)
    sql, params = page.query.sql_with_params()
    assert f"'{A}'" in sql and f"'{B}'" in sql and A not in params and B not in params


@pytest.mark.django_db
def test_the_migration_indexes_the_signers_of_transactions_recorded_before_it(tenant):
    import importlib

    from django.apps import apps

    migration = importlib.import_module("transactions.migrations.0008_details_chain_record_signers")
    older = record(tenant, signers=[FP, A], minutes_ago=5, status="FINALIZED", operation="accounts.create")
    TransactionSigner.objects.filter(transaction=older).delete()  # as before the table existed
    indexed = record(tenant, signers=[FP, B], minutes_ago=4, status="SIGNED", operation="accounts.create")
    migration.index_signers(apps, None)
    migration.index_signers(apps, None)  # again: nothing doubles
    assert sorted(TransactionSigner.objects.filter(transaction=older).values_list("position", "address")) == [(0, older.required_signers[0]), (1, older.required_signers[1])]
    assert TransactionSigner.objects.filter(transaction=indexed).count() == 2
