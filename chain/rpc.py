"""The one client every app uses to talk to a cluster (docs/chain.md).

Synchronous (Django views and Celery tasks are), built on solana-py's sync ``Client``
(solana 0.36.12 + solders 0.27.1: the last pair with a sync client, and solders still
ships LiteSVM there). One pooled client per cluster per process. Every HTTP request
goes through ``chain.transport.RetryingTransport`` (budget, retries of transient answers,
failover over the cluster's URLs); what stays transient through them becomes
``ChainUnavailable`` / ``ChainBusy`` (503 with Retry-After), preflight failures
``SimulationFailed`` (400 with the program's reason), anything else ``ChainRpcError`` (500).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass
from typing import Sequence

import httpx
from django.conf import settings
from solana.exceptions import SolanaRpcException
from solana.rpc.api import Client
from solana.rpc.commitment import Commitment
from solana.rpc.core import RPCException
from solana.rpc.types import TxOpts
from solders.account import Account
from solders.hash import Hash
from solders.pubkey import Pubkey
from solders.commitment_config import CommitmentLevel
from solders.account_decoder import UiAccountEncoding
from solders.rpc.config import RpcAccountInfoConfig, RpcContextConfig, RpcSendTransactionConfig, RpcSignaturesForAddressConfig, RpcTransactionConfig
from solders.rpc.errors import SendTransactionPreflightFailureMessage
from solders.rpc.requests import (
    GetAccountInfo, GetBalance, GetHealth, GetLatestBlockhash, GetMultipleAccounts, GetRecentPrioritizationFees, GetSignaturesForAddress, GetSlot, GetTransaction, GetVersion,
    IsBlockhashValid, SendRawTransaction,
)
from solders.rpc.responses import (
    GetBalanceResp, GetLatestBlockhashResp, GetMultipleAccountsResp, GetRecentPrioritizationFeesResp, GetSignaturesForAddressResp, GetTransactionResp, IsBlockhashValidResp, RPCError,
    RpcConfirmedTransactionStatusWithSignature, SendTransactionResp,
)
from solders.transaction_status import UiTransactionEncoding
from solders.signature import Signature
from solders.transaction_status import TransactionStatus


from . import floor
from .balances import TokenBalance, TransactionBalances, balances_of  # noqa: F401  (TokenBalance: the answers' types, imported from here too)
from .errors import ChainRefused, ChainRpcError, ChainUnavailable, SimulationFailed, caller_accounts, failing_account, simulation_failure
from .transport import Endpoints, RetryingTransport, _MeteredTransport, clear_prepaid, prepay

logger = logging.getLogger("ledger.chain")

_clients: dict[tuple[str, str], "ChainRpc"] = {}

_LEVELS = {"processed": CommitmentLevel.Processed, "confirmed": CommitmentLevel.Confirmed, "finalized": CommitmentLevel.Finalized}
_clients_lock = threading.Lock()


@dataclass(frozen=True)
class AccountsRead:
    """Account data read in one go (getMultipleAccounts): address → account (None when
    absent), and the slot the node answered at (the lowest, when it took several calls)."""

    slot: int
    accounts: dict[str, Account | None]


@dataclass(frozen=True)
class LatestBlockhash:
    blockhash: Hash
    last_valid_block_height: int


def split_urls(value: str) -> list[str]:
    """``https://a|https://b`` → the URLs, in order of preference."""
    return [u.strip() for u in (value or "").split("|") if u.strip()]


class ChainRpc:
    def __init__(self, cluster: str, url: str, timeout: float, *, send_urls: Sequence[str] = (), transport: httpx.BaseTransport | None = None):
        self.cluster = cluster
        self.urls = split_urls(url)
        self.url = self.urls[0]
        self.endpoints = Endpoints(self.urls, send_urls)
        self.transport = RetryingTransport(cluster, self.endpoints, transport or _MeteredTransport(cluster))
        self.client = Client(self.url, timeout=timeout)
        self.client._provider.session = httpx.Client(timeout=timeout, transport=self.transport)
        self._rent: dict[int, int] = {}

    def __repr__(self) -> str:
        # The URL may carry a provider's API key: never in a repr that could reach a log.
        from ledger_project.logging import redact_url

        return f"<ChainRpc {self.cluster} {' | '.join(redact_url(u) for u in self.urls)}>"

    def send_budget(self, wanted: int) -> int:
        """How many sendTransaction calls the budget allows now, up to ``wanted``, taken at
        once (no wait): the pump claims that many rows, and its next batch of sends is paid
        by them; the rest wait for the next pass. 0 while the provider asked to wait."""
        from .budget import budget

        grant = budget().take(self.cluster, "sendTransaction", most=wanted, least=1)
        prepay(grant.units)
        # When a refused send may try again (the pump sleeps until then, not a pass later).
        _send_refused_until[self.cluster] = time.monotonic() + grant.wait if not grant.units else None
        return grant.units

    def unused_budget(self) -> None:
        clear_prepaid()

    def _call(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except SolanaRpcException as exc:
            raise ChainUnavailable(f"The RPC endpoint of {self.cluster} did not answer: {type(exc.__cause__ or exc).__name__}.") from exc
        except RPCException as exc:
            detail = exc.args[0] if exc.args else exc
            if isinstance(detail, SendTransactionPreflightFailureMessage):
                raise simulation_failure(self.cluster, list(detail.data.logs or []), detail.data.err) from exc
            message = getattr(detail, "message", str(detail))
            raise ChainRpcError(f"The RPC endpoint of {self.cluster} answered an error: {message}") from exc

    # --- reads ---------------------------------------------------------------------
    def wrote(self, slot: int) -> None:
        """The service applied a change of this cluster at ``slot``: account, balance and
        blockhash reads from now on reach it (chain/floor.py)."""
        floor.note(self.cluster, tuple(self.urls), slot)

    def _at_least(self, min_context_slot: int | None) -> int | None:
        """The read's own ``minContextSlot`` or the cluster's read floor, the later."""
        slots = [v for v in (min_context_slot, floor.floor(self.cluster, tuple(self.urls))) if v is not None]
        return max(slots) if slots else None

    def latest_blockhash(self, commitment: str = "confirmed", *, min_context_slot: int | None = None) -> LatestBlockhash:
        min_context_slot = self._at_least(min_context_slot)
        if min_context_slot is not None:
            config = RpcContextConfig(commitment=_LEVELS[commitment], min_context_slot=min_context_slot)
            value = self._request(GetLatestBlockhash(config), GetLatestBlockhashResp).value
        else:
            value = self._call(self.client.get_latest_blockhash, Commitment(commitment)).value
        return LatestBlockhash(value.blockhash, value.last_valid_block_height)

    def block_height(self, commitment: str = "confirmed") -> int:
        return self._call(self.client.get_block_height, Commitment(commitment)).value

    def slot(self, commitment: str = "finalized") -> int:
        return self._call(self.client.get_slot, Commitment(commitment)).value

    def _request(self, request, response_type):
        # Methods solana-py 0.36's Client lacks: the typed solders request over its provider.
        return self._call(self.client._provider.make_request, request, response_type)

    def is_blockhash_valid(self, blockhash: Hash, commitment: str = "confirmed") -> bool:
        # A validator's default is `finalized`, whose bank does not hold the newest blockhashes.
        return bool(self._request(IsBlockhashValid(blockhash, RpcContextConfig(commitment=_LEVELS[commitment])), IsBlockhashValidResp).value)

    # Reads of state a write of the service changed take ``min_context_slot``: the slot that
    # write landed in (a confirmation's slot). A node behind it answers -32016, which the
    # transport retries (another URL, backoff) and ends as ChainBehind (503 CHAIN_BEHIND):
    # never a read from before the write (docs/chain.md, "What the service does ...").
    def balance(self, address: Pubkey, commitment: str = "confirmed", *, min_context_slot: int | None = None) -> int:
        config = RpcContextConfig(commitment=_LEVELS[commitment], min_context_slot=self._at_least(min_context_slot))
        return self._request(GetBalance(address, config), GetBalanceResp).value

    def account(self, address: Pubkey, commitment: str = "confirmed", *, min_context_slot: int | None = None) -> Account | None:
        min_context_slot = self._at_least(min_context_slot)
        if min_context_slot is not None:
            return self.read_accounts([str(address)], commitment, min_context_slot=min_context_slot).accounts[str(address)]
        return self._call(self.client.get_account_info, address, Commitment(commitment)).value

    def accounts(self, addresses: Sequence[Pubkey], commitment: str = "confirmed", *, min_context_slot: int | None = None) -> list[Account | None]:
        found = self.read_accounts([str(a) for a in addresses], commitment, min_context_slot=min_context_slot).accounts
        return [found[str(a)] for a in addresses]

    def read_accounts(self, addresses: Sequence[str], commitment: str = "confirmed", *, min_context_slot: int | None = None) -> AccountsRead:
        """Several accounts and the slot they were read at: one getMultipleAccounts per 100
        addresses (the RPC limit per call), none older than ``min_context_slot``."""
        unique = list(dict.fromkeys(addresses))
        found: dict[str, Account | None] = {}
        slots: list[int] = []
        config = RpcAccountInfoConfig(encoding=UiAccountEncoding.Base64, commitment=_LEVELS[commitment], min_context_slot=self._at_least(min_context_slot))
        for start in range(0, len(unique), 100):
            batch = unique[start:start + 100]
            resp = self._request(GetMultipleAccounts([Pubkey.from_string(a) for a in batch], config), GetMultipleAccountsResp)
            slots.append(resp.context.slot)
            found.update(zip(batch, resp.value))
        return AccountsRead(min(slots) if slots else 0, found)

    def minimum_balance_for_rent_exemption(self, size: int) -> int:
        # Rent parameters are fixed per cluster: one call per size and process.
        lamports = self._rent.get(size)
        if lamports is None:
            lamports = self._rent[size] = self._call(self.client.get_minimum_balance_for_rent_exemption, size).value
        return lamports

    def recent_prioritization_fees(self, addresses: Sequence[Pubkey] = ()) -> list[int]:
        return [fee.prioritization_fee for fee in self._request(GetRecentPrioritizationFees(list(addresses)), GetRecentPrioritizationFeesResp).value]

    def signature_statuses(self, signatures: Sequence[Signature]) -> list[TransactionStatus | None]:
        out: list[TransactionStatus | None] = []
        for start in range(0, len(signatures), 256):
            out.extend(self._call(self.client.get_signature_statuses, list(signatures[start:start + 256]), search_transaction_history=True).value)
        return out

    def transaction_balances(self, signature: Signature, static_keys: Sequence[str], commitment: str = "confirmed") -> TransactionBalances | None:
        """Pre/post lamport and token balances of a landed transaction, from one
        getTransaction (None when the node does not know it or has no metadata for it).

        Balances are indexed like the transaction's keys: the message's static keys, then
        the addresses loaded from lookup tables (writable, then read-only).
        """
        value = self._call(self.client.get_transaction, signature, "json", Commitment(commitment), 0).value
        return balances_of(value, static_keys)

    def transactions_balances(self, wanted: Sequence[tuple[Signature, Sequence[str]]], commitment: str = "confirmed") -> list[TransactionBalances | None]:
        """``transaction_balances`` of several transactions (signature, static keys), in
        JSON-RPC batches: one HTTP request per LEDGER_RPC_BATCH_SIZE transactions."""
        config = RpcTransactionConfig(encoding=UiTransactionEncoding.Json, commitment=_LEVELS[commitment], max_supported_transaction_version=0)
        answers = self._batch([GetTransaction(signature, config, id=i) for i, (signature, _) in enumerate(wanted)], GetTransactionResp)
        out = []
        for (signature, static_keys), answer in zip(wanted, answers):
            if isinstance(answer, RPCError.__args__):
                raise ChainRpcError(f"The RPC endpoint of {self.cluster} answered an error for getTransaction {signature}: {getattr(answer, 'message', answer)}")
            out.append(balances_of(answer.value, static_keys))
        return out

    def _batch(self, bodies: list, parser) -> list:
        """Calls of one method (``bodies``, built with id = their index) sent as JSON-RPC
        batches; the answers in the same order, each the parsed response or the RPCError
        the node answered for that call. LEDGER_RPC_BATCH_SIZE calls per HTTP request:
        public RPC providers cap batches (docs/configuration.md)."""
        from .budget import budget

        size = max(1, settings.LEDGER_RPC_BATCH_SIZE)
        if bodies:
            # A batch of k calls costs k units: never more than the budget can ever grant.
            size = min(size, budget().largest(self.cluster, _method_name(bodies[0])) or size)
        out: list = []
        for start in range(0, len(bodies), size):
            chunk = tuple(bodies[start:start + size])
            by_id = self._batch_post(chunk)
            by_id.update(self._batch_again(chunk, by_id))
            for index in range(start, start + len(chunk)):
                item = by_id.get(index)
                if item is None:
                    raise ChainRpcError(f"The RPC endpoint of {self.cluster} left call {index} of a batch unanswered.")
                out.append(parser.from_json(json.dumps(item)))
        return out

    def _batch_post(self, chunk: tuple) -> dict:
        """One HTTP request of a JSON-RPC batch: the answers by id."""
        try:
            raw = self.client._provider.make_batch_request_unparsed(chunk)
        except httpx.HTTPError as exc:
            raise ChainUnavailable(f"The RPC endpoint of {self.cluster} did not answer: {type(exc).__name__}.") from exc
        try:
            items = json.loads(raw)
        except ValueError as exc:
            raise ChainRpcError(f"The RPC endpoint of {self.cluster} answered a batch with something other than JSON.") from exc
        if not isinstance(items, list):
            raise ChainRpcError(f"The RPC endpoint of {self.cluster} refused a batch request: {str(items)[:200]}")
        return {item.get("id"): item for item in items if isinstance(item, dict)}

    def _batch_again(self, chunk: tuple, by_id: dict) -> dict:
        """The calls of ``chunk`` answered with a transient error (-32005, -32016, …: the
        transport passes a batch answered in part through) sent again on their own, with
        the transport's backoff, until they are answered or LEDGER_RPC_MAX_ATTEMPTS rounds
        or the deadline are spent; then ChainUnavailable (ChainBehind for a node behind the
        read's minContextSlot). Same ids, same bodies: a send is the same bytes again.
        Answers by id."""
        from .transport import BEHIND, TRANSIENT_CODES, _item_code

        answers: dict = {}
        again = [body for body in chunk if _item_code(by_id.get(body.id)) in TRANSIENT_CODES]
        deadline = time.monotonic() + settings.LEDGER_RPC_DEADLINE_SECONDS
        attempt = 0
        while again:
            attempt += 1
            codes = {_item_code(answers.get(body.id, by_id.get(body.id))) for body in again}
            wait = self.transport.backoff(attempt, None)
            if attempt >= settings.LEDGER_RPC_MAX_ATTEMPTS or time.monotonic() + wait > deadline:
                from .errors import ChainBehind

                kind = ChainBehind if codes == {BEHIND} else ChainUnavailable
                raise kind(f"The RPC endpoint of {self.cluster} answered {len(again)} calls of a batch with errors to retry (JSON-RPC {sorted(c for c in codes if c)}); retry later.",
                           retry_after=max(1, round(wait)))
            time.sleep(wait)
            got = self._batch_post(tuple(again))
            answers.update(got)
            again = [body for body in again if _item_code(got.get(body.id)) in TRANSIENT_CODES]
        return answers

    def signatures_for_address(self, address: Pubkey, *, before: Signature | None = None, until: Signature | None = None, limit: int = 1000,
                               commitment: str = "confirmed", min_context_slot: int | None = None) -> list[RpcConfirmedTransactionStatusWithSignature]:
        """The transactions that touched ``address``, newest first, older than ``before`` and
        newer than ``until`` (getSignaturesForAddress; at most 1000 per call). ``commitment``
        must be given: a validator's default, finalized, hides the last ~32 slots."""
        config = RpcSignaturesForAddressConfig(before=before, until=until, limit=limit, commitment=_LEVELS[commitment], min_context_slot=min_context_slot)
        return self._request(GetSignaturesForAddress(address, config), GetSignaturesForAddressResp).value

    def landed_balances(self, signatures: Sequence[Signature], commitment: str = "confirmed") -> list[TransactionBalances | None]:
        """``transaction_balances`` of landed transactions the service may not have built
        (their account keys read from the answer), in JSON-RPC batches; None for one the node
        does not serve (pruned history)."""
        config = RpcTransactionConfig(encoding=UiTransactionEncoding.Json, commitment=_LEVELS[commitment], max_supported_transaction_version=0)
        out = []
        for signature, answer in zip(signatures, self._batch([GetTransaction(s, config, id=i) for i, s in enumerate(signatures)], GetTransactionResp)):
            if isinstance(answer, RPCError.__args__):
                raise ChainRpcError(f"The RPC endpoint of {self.cluster} answered an error for getTransaction {signature}: {getattr(answer, 'message', answer)}")
            value = answer.value
            keys = [str(k) for k in value.transaction.transaction.message.account_keys] if value is not None else []
            out.append(balances_of(value, keys))
        return out

    def raw_transaction(self, signature: Signature, commitment: str = "confirmed") -> bytes | None:
        """The wire bytes (signatures and message) of a landed transaction, None when the
        node does not know it (getTransaction, base64)."""
        value = self._call(self.client.get_transaction, signature, "base64", Commitment(commitment), 0).value
        return None if value is None else bytes(value.transaction.transaction)

    # --- the node's own words (the admin's "open on the chain" page, node health) ----------
    def _raw(self, request) -> dict:
        """One JSON-RPC answer as the node sent it: a dict with ``result`` or ``error``."""
        try:
            raw = self.client._provider.make_request_unparsed(request)
        except httpx.HTTPError as exc:
            raise ChainUnavailable(f"The RPC endpoint of {self.cluster} did not answer: {type(exc).__name__}.") from exc
        try:
            answer = json.loads(raw)
        except ValueError as exc:
            raise ChainRpcError(f"The RPC endpoint of {self.cluster} answered something other than JSON.") from exc
        if not isinstance(answer, dict):
            raise ChainRpcError(f"The RPC endpoint of {self.cluster} answered an unexpected shape.")
        answer.pop("id", None)
        return answer

    def account_raw(self, address: str, commitment: str = "confirmed") -> dict:
        """getAccountInfo (jsonParsed: token accounts and mints decoded, others base64)."""
        config = RpcAccountInfoConfig(encoding=UiAccountEncoding.JsonParsed, commitment=_LEVELS[commitment])
        return self._raw(GetAccountInfo(Pubkey.from_string(address), config))

    def transaction_raw(self, signature: str, commitment: str = "confirmed") -> dict:
        """getTransaction (jsonParsed, versioned transactions included)."""
        config = RpcTransactionConfig(encoding=UiTransactionEncoding.JsonParsed, commitment=_LEVELS[commitment], max_supported_transaction_version=0)
        return self._raw(GetTransaction(Signature.from_string(signature), config))

    def node_status(self) -> dict:
        """getHealth, getSlot and getVersion in one batch: {health, slot, version} as the
        node answers (health is "ok" or the node's error message)."""
        answers = self._batch_raw([GetHealth(id=0), GetSlot(id=1), GetVersion(id=2)])
        health = answers[0].get("result") or (answers[0].get("error") or {}).get("message", "no answer")
        return {"health": health, "slot": answers[1].get("result"), "version": (answers[2].get("result") or {}).get("solana-core")}

    def _batch_raw(self, bodies: list) -> list[dict]:
        try:
            raw = self.client._provider.make_batch_request_unparsed(tuple(bodies))
            items = json.loads(raw)
        except httpx.HTTPError as exc:
            raise ChainUnavailable(f"The RPC endpoint of {self.cluster} did not answer: {type(exc).__name__}.") from exc
        except ValueError as exc:
            raise ChainRpcError(f"The RPC endpoint of {self.cluster} answered something other than JSON.") from exc
        by_id = {item.get("id"): item for item in items if isinstance(item, dict)} if isinstance(items, list) else {}
        return [by_id.get(i, {}) for i in range(len(bodies))]

    def token_account_balance(self, address: Pubkey) -> int:
        return int(self._call(self.client.get_token_account_balance, address).value.amount)

    def token_supply(self, mint: Pubkey) -> int:
        return int(self._call(self.client.get_token_supply, mint).value.amount)

    # --- writes --------------------------------------------------------------------
    def send_raw(self, raw: bytes, *, skip_preflight: bool = False, preflight_commitment: str = "confirmed") -> Signature:
        opts = TxOpts(skip_preflight=skip_preflight, preflight_commitment=Commitment(preflight_commitment), skip_confirmation=True)
        try:
            return self._call(self.client.send_raw_transaction, raw, opts).value
        except SimulationFailed as exc:
            # The transport resends the same bytes after a lost answer: the node then says
            # the first copy was processed. That copy's signature is the answer.
            if "AlreadyProcessed" in str(exc.err):
                from solders.transaction import VersionedTransaction

                return VersionedTransaction.from_bytes(raw).signatures[0]
            raise

    def send_raw_many(self, raws: Sequence[bytes], *, skip_preflight: bool = False, preflight_commitment: str = "confirmed") -> list[Signature | Exception]:
        """Send several signed transactions in JSON-RPC batches. Each answer is its
        signature or the exception ``send_raw`` would have raised for it alone
        (SimulationFailed for a preflight refusal, ChainRpcError otherwise); a transport
        failure raises ChainUnavailable for the whole batch (which of them arrived is
        unknown: the caller looks them up by signature)."""
        config = RpcSendTransactionConfig(skip_preflight=skip_preflight, preflight_commitment=_LEVELS[preflight_commitment])
        out: list[Signature | Exception] = []
        for answer in self._batch([SendRawTransaction(raw, config, id=i) for i, raw in enumerate(raws)], SendTransactionResp):
            if isinstance(answer, SendTransactionPreflightFailureMessage):
                out.append(simulation_failure(self.cluster, list(answer.data.logs or []), answer.data.err))
            elif isinstance(answer, RPCError.__args__):
                out.append(ChainRpcError(f"The RPC endpoint of {self.cluster} answered an error: {getattr(answer, 'message', answer)}"))
            else:
                out.append(answer.value)
        return out

    def simulate(self, transaction, *, tenant=None) -> None:
        """Raise SimulationFailed when the transaction would fail; its message names the
        failing account only when it is an account of ``tenant`` (the acting organization)
        on this cluster."""
        # On the confirmed bank (solana-py's default, finalized, is about 32 slots behind
        # what the service just confirmed: an account it created would not be there yet),
        # at the read floor: a node behind the service's last write would simulate against
        # state from before it (a balance not yet moved, an account not yet created).
        value = self._call(self.client.simulate_transaction, transaction, sig_verify=False, commitment=Commitment("confirmed"),
                           min_context_slot=self._at_least(None)).value
        if value.err is not None:
            exc = simulation_failure(self.cluster, list(value.logs or []), value.err, failing_account=failing_account(transaction, value.err))
            logger.info("simulation failed: %s (account %s)", exc.reason, exc.failing_account)
            exc.disclose_to(caller_accounts(tenant=tenant, cluster=self.cluster, candidates=[exc.failing_account]))
            raise exc

    def airdrop(self, address: Pubkey, lamports: int) -> Signature | None:
        """requestAirdrop (local node). None when the node answers AlreadyProcessed: an
        identical airdrop (same faucet, recipient, amount and blockhash, so the very same
        bytes) was processed already — what was asked for happened. Two processes topping
        up the platform fee payer in one slot build exactly that (a lagging read shows each
        the balance from before the other's top-up); the first's answer is the airdrop's."""
        try:
            return self._call(self.client.request_airdrop, address, lamports).value
        except SimulationFailed as exc:
            if "AlreadyProcessed" in str(exc.err):
                logger.info("an identical airdrop of %d lamports to %s was processed already", lamports, address)
                return None
            raise


def _method_name(body) -> str:
    """The JSON-RPC method of a typed solders request (``{"method": ...}`` of its JSON)."""
    return json.loads(body.to_json()).get("method", "unknown")


_send_refused_until: dict[str, float | None] = {}


def send_wait(cluster: str) -> float | None:
    """Seconds until the send budget that refused this process's last claim of ``cluster``
    has room again (0 once it has), None when that claim was not refused."""
    until = _send_refused_until.get(cluster)
    return None if until is None else max(0.0, until - time.monotonic())


def rpc_for(cluster: str) -> ChainRpc:
    """The process-wide client of ``cluster`` (a name from settings.LEDGER_CLUSTERS: one
    URL, or several separated by "|"; send URLs from LEDGER_CLUSTER_SEND_URLS)."""
    url = settings.LEDGER_CLUSTERS.get(cluster)
    if url is None:
        raise ChainRefused(f"Cluster {cluster!r} is not configured.", field="cluster", code="INVALID_CLUSTER")
    send = getattr(settings, "LEDGER_CLUSTER_SEND_URLS", {}).get(cluster, "")
    key = (cluster, url, send)
    client = _clients.get(key)
    if client is None:
        with _clients_lock:
            client = _clients.get(key)
            if client is None:
                client = _clients[key] = ChainRpc(cluster, url, settings.LEDGER_RPC_TIMEOUT_SECONDS, send_urls=split_urls(send))
    return client


def is_localnet(cluster: str) -> bool:
    return cluster == "CHAIN_LOCALNET"
