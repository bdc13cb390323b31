"""Logs never carry an RPC provider's credentials (issue 9, item 13): the HTTP client's
per-request lines are off, and every URL a record carries is cut to scheme://host:port."""

from __future__ import annotations

import io
import logging

import pytest

from ledger_project.logging import JsonFormatter
from chain.rpc import rpc_for

SECRET = "s3cr3t-api-key"


@pytest.fixture
def log_output():
    """What the configured (settings.LOGGING) console handler writes, captured."""
    handler = next(h for h in logging.getLogger().handlers if isinstance(h.formatter, JsonFormatter))
    stream = io.StringIO()
    previous = handler.setStream(stream)
    try:
        yield stream
    finally:
        handler.setStream(previous)


@pytest.fixture
def keyed_cluster(settings, localnet_url):
    """A cluster whose URL carries credentials the way providers' do (user info, path, query)."""
    host = localnet_url.split("://", 1)[1]
    settings.LEDGER_CLUSTERS = {**settings.LEDGER_CLUSTERS, "CHAIN_DEVNET": f"http://user:{SECRET}@{host}/v2/{SECRET}?api-key={SECRET}"}
    return "CHAIN_DEVNET"


def test_rpc_calls_log_no_url_credentials(keyed_cluster, log_output):
    assert rpc_for(keyed_cluster).block_height() >= 0
    logging.getLogger("ledger.test").info("called %s", rpc_for(keyed_cluster).url)
    written = log_output.getvalue()
    assert "called http://127.0.0.1" in written  # the line is there, its URL cut to the host
    assert SECRET not in written and "api-key" not in written and "/v2/" not in written


def test_exceptions_and_extras_are_redacted_too(log_output):
    url = f"https://rpc.example.com/v2/{SECRET}?api-key={SECRET}"
    try:
        raise RuntimeError(f"Client error '401 Unauthorized' for url '{url}'")
    except RuntimeError:
        logging.getLogger("ledger.test").exception("request to %s failed", url, extra={"endpoint": url})
    written = log_output.getvalue()
    assert "https://rpc.example.com/..." in written and "401 Unauthorized" in written
    assert SECRET not in written


def test_http_client_loggers_are_quiet_at_info():
    assert logging.getLogger("httpx").getEffectiveLevel() >= logging.WARNING
    assert logging.getLogger("httpcore").getEffectiveLevel() >= logging.WARNING
