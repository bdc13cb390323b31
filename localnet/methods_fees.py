"""getPriorityFeeEstimate on the local node: the priority-fee API that RPC providers serve
(Helius documents it; Alchemy, Solana Tracker and others answer the same request), so the
service's fee-provider adapter (chain/fee_provider.py) runs against this node in tests.

The request, as the provider documents it::

    {"method": "getPriorityFeeEstimate", "params": [{
        "transaction": "<wire transaction>" | "accountKeys": ["<address>", ...],
        "options": {"priorityLevel": "Min|Low|Medium|High|VeryHigh|UnsafeMax",
                    "recommended": bool, "includeAllPriorityFeeLevels": bool,
                    "transactionEncoding": "Base58|Base64", "lookbackSlots": 1..150,
                    "includeVote": bool, "evaluateEmptySlotAsZero": bool}}]}

answered ``{"priorityFeeEstimate": <number>}`` and, with includeAllPriorityFeeLevels,
``{"priorityFeeLevels": {"min", "low", "medium", "high", "veryHigh", "unsafeMax"}}``, in
micro-lamports per compute unit (numbers with a fraction, as the provider's are).

How this node computes them (docs/localnet-rpc.md, "getPriorityFeeEstimate"): the sample is the
compute-unit price of every transaction the node executed in the last ``lookbackSlots``
slots (default 50, the provider's) that wrote at least one of the accounts — the
``accountKeys``, or the writable static keys of the ``transaction`` — and of every
transaction in those slots when no account is named. The node records priced transactions
only (Node.fees), so a transaction that set no price is not in it; with
``evaluateEmptySlotAsZero`` each slot of the window without one adds a 0. A level is the
provider's percentile of that sample (Min 0, Low 25, Medium 50, High 75, VeryHigh 95,
UnsafeMax 100), interpolated linearly between the two nearest prices; ``recommended`` is
the median (the provider: "based on the median (50th percentile)"); no level and no
``recommended`` is Medium. An empty sample is 0 at every level. No votes here:
``includeVote`` changes nothing.
"""

from __future__ import annotations

import base64
from fractions import Fraction

from solders.transaction import VersionedTransaction

from ledger_project.base58 import b58decode

from .rpcutil import bad, param, pubkey

#: The provider's levels: (priorityLevel, its key in priorityFeeLevels, percentile).
LEVELS = (("Min", "min", 0), ("Low", "low", 25), ("Medium", "medium", 50), ("High", "high", 75), ("VeryHigh", "veryHigh", 95), ("UnsafeMax", "unsafeMax", 100))
DEFAULT_LOOKBACK_SLOTS = 50
#: The provider's documented range; the node keeps its fees for 150 slots at least.
MAX_LOOKBACK_SLOTS = 150
_ENCODINGS = ("base58", "base64")
_OPTIONS = {"priorityLevel", "recommended", "includeAllPriorityFeeLevels", "transactionEncoding", "lookbackSlots", "includeVote", "evaluateEmptySlotAsZero"}


def percentile(sample: list[int], percent: int) -> Fraction:
    """The ``percent``-th percentile of ``sample``, linearly interpolated between the two
    nearest ranks (position percent/100 × (n − 1) in the sorted sample), exactly."""
    if not sample:
        return Fraction(0)
    ordered = sorted(sample)
    position = Fraction(percent * (len(ordered) - 1), 100)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def writable_static_keys(raw: bytes) -> list[str]:
    """The writable keys among a wire transaction's static keys (the message header's
    rule). Addresses a v0 message loads from lookup tables are not read."""
    message = VersionedTransaction.from_bytes(raw).message
    header = message.header
    keys = message.account_keys
    signed, readonly_signed, readonly_unsigned = header.num_required_signatures, header.num_readonly_signed_accounts, header.num_readonly_unsigned_accounts
    return [str(k) for i, k in enumerate(keys) if (i < signed - readonly_signed) or (signed <= i < len(keys) - readonly_unsigned)]


def _flag(options: dict, name: str) -> bool:
    value = options.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise bad(f"options.{name} must be a boolean")
    return value


class FeeMethods:
    node: object

    def _estimate_keys(self, request: dict, options: dict) -> list[str]:
        transaction, keys = request.get("transaction"), request.get("accountKeys")
        if (transaction is None) == (keys is None):
            raise bad("provide either transaction or accountKeys")
        if keys is not None:
            if not isinstance(keys, list):
                raise bad("accountKeys must be an array of addresses")
            return [str(pubkey(k, "account key")) for k in keys]
        encoding = options.get("transactionEncoding") or "Base58"
        if not isinstance(encoding, str) or encoding.lower() not in _ENCODINGS:
            raise bad("options.transactionEncoding must be Base58 or Base64")
        if not isinstance(transaction, str):
            raise bad("transaction must be an encoded transaction")
        try:
            raw = base64.b64decode(transaction, validate=True) if encoding.lower() == "base64" else b58decode(transaction)
            return writable_static_keys(raw)
        except ValueError as exc:
            raise bad(f"invalid {encoding} transaction: {exc}")

    def rpc_getPriorityFeeEstimate(self, params):
        request = param(params, 0)
        if not isinstance(request, dict):
            raise bad("expected an object with transaction or accountKeys")
        options = request.get("options") or {}
        if not isinstance(options, dict):
            raise bad("options must be an object")
        unknown = sorted(set(options) - _OPTIONS)
        if unknown:
            raise bad(f"unknown option {unknown[0]!r}")
        keys = set(self._estimate_keys(request, options))
        level = options.get("priorityLevel")
        by_level = {name: (key, percent) for name, key, percent in LEVELS}
        if level is not None and level not in by_level:
            raise bad("options.priorityLevel must be one of " + ", ".join(by_level))
        lookback = options.get("lookbackSlots", DEFAULT_LOOKBACK_SLOTS)
        if lookback is None:
            lookback = DEFAULT_LOOKBACK_SLOTS
        if not isinstance(lookback, int) or isinstance(lookback, bool) or not 1 <= lookback <= MAX_LOOKBACK_SLOTS:
            raise bad(f"options.lookbackSlots must be from 1 to {MAX_LOOKBACK_SLOTS}")
        recommended, every_level, empty_as_zero = _flag(options, "recommended"), _flag(options, "includeAllPriorityFeeLevels"), _flag(options, "evaluateEmptySlotAsZero")
        _flag(options, "includeVote")  # checked; no votes on this node

        tip = self.node.slot
        first = max(0, tip - lookback + 1)
        sample: list[int] = []
        slots_with: set[int] = set()
        for slot, price, writable in list(self.node.fees):
            if first <= slot <= tip and (not keys or keys & writable):
                sample.append(price)
                slots_with.add(slot)
        if empty_as_zero:
            sample += [0] * (tip - first + 1 - len(slots_with))

        result: dict = {}
        if recommended or level is not None or not every_level:
            percent = 50 if recommended else by_level[level or "Medium"][1]
            result["priorityFeeEstimate"] = float(percentile(sample, percent))
        if every_level:
            result["priorityFeeLevels"] = {key: float(percentile(sample, percent)) for _, key, percent in LEVELS}
        return result
