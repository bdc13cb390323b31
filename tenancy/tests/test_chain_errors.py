"""The chain client's errors as the API answers them (tenancy/chain_errors.py): one table at
the door, every kind of chain/errors.py in it, the chain's field paths named as the request
names them, Retry-After kept for the 503s; and the exception handler answers through it."""

from __future__ import annotations

import inspect

import pytest

from chain import errors as chain_errors
from chain.errors import (
    ChainBehind, ChainBusy, ChainError, ChainRefused, ChainRpcError, ChainUnavailable, SimulationFailed, TransactionTooLarge,
)
from ledger_project.api.errors import LedgerError, api_error, exception_handler
from tenancy import chain_errors as door


def _kinds() -> list[type]:
    return [k for _, k in inspect.getmembers(chain_errors, inspect.isclass) if issubclass(k, ChainError) and k.__module__ == chain_errors.__name__]


def test_every_kind_of_chain_error_has_its_status_at_the_door():
    for kind in _kinds():
        if kind is ChainError:
            continue
        assert any(issubclass(kind, listed) for listed, _ in door._STATUS), f"{kind.__name__} has no status at the door"


@pytest.mark.parametrize("exc, status, code, field, retry_after", [
    (ChainUnavailable("the node is down", retry_after=4), 503, "CHAIN_UNAVAILABLE", None, 4),
    (ChainBusy("rate-limited", retry_after=2), 503, "CHAIN_BUSY", None, 2),
    (ChainBehind("behind the write"), 503, "CHAIN_BEHIND", None, 1),
    (ChainRpcError("an unexpected answer"), 500, "CHAIN_RPC_ERROR", None, None),
    (SimulationFailed("insufficient lamports 12"), 400, "TRANSACTION_SIMULATION_FAILED", None, None),
    (TransactionTooLarge("1300 bytes", extra={"size": 1300}), 400, "TRANSACTION_TOO_LARGE", "itemData", None),
    (ChainRefused("no such cluster", field="cluster", code="INVALID_CLUSTER"), 400, "INVALID_CLUSTER", "svmCluster", None),
    (ChainRefused("not a table", field="config.lookup_tables[3]", code="INVALID_LOOKUP_TABLE"), 400, "INVALID_LOOKUP_TABLE",
     "svmTransactionConfig.addressLookupTables[3]", None),
    (ChainRefused("legacy", field="config.version", code="INVALID_ENUM"), 400, "INVALID_ENUM", "svmTransactionConfig.transactionVersion", None),
    (ChainRefused("not a nonce account", code="INVALID_NONCE_ACCOUNT"), 400, "INVALID_NONCE_ACCOUNT", None, None),
    (ChainRefused("a caller's own path", field="itemData.items[2].source", code="INVALID_LOOKUP_TABLE"), 400, "INVALID_LOOKUP_TABLE",
     "itemData.items[2].source", None),
])
def test_an_answer_per_kind(exc, status, code, field, retry_after):
    answer = api_error(exc)
    assert isinstance(answer, LedgerError) and answer.chain_error is exc
    assert (answer.status_code, answer.code, answer.field, answer.retry_after) == (status, code, field, retry_after)
    assert answer.message == exc.message
    assert answer.not_now == (status >= 500)


def test_the_exception_handler_answers_a_chain_error_in_the_spec_shape():
    response = exception_handler(ChainBusy("The cluster is busy; retry later.", retry_after=7), {})
    assert response.status_code == 503 and response["Retry-After"] == "7"
    assert response.data["errors"] == [{"code": "CHAIN_BUSY", "message": "The cluster is busy; retry later.", "field": None}]


def test_a_chain_error_is_no_api_error_until_the_door_says_so():
    assert not issubclass(ChainError, LedgerError)
    assert api_error(ValueError("not raised on purpose")) is None
