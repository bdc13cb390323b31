"""The local node charges fees as an Agave validator does (issue 35): 5,000 lamports per
signature plus the prioritization fee of the Compute Budget instructions, taken from the
fee payer; refused when the payer cannot pay. Checked through the unmodified solana-py
Client: what the node charged (the payer's balance, meta.fee) == getFeeForMessage == the
rule computed here on its own (docs/localnet.md, "Fees")."""

import json
import time
import urllib.request

import pytest
from solana.rpc.core import RPCException
from solana.rpc.types import TxOpts
from solders.compute_budget import set_compute_unit_limit, set_compute_unit_price
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.message import Message, MessageV0
from solders.pubkey import Pubkey
from solders.rpc.errors import SendTransactionPreflightFailureMessage
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction

from transactions.tests.chainkit import funded, next_slot, wait

pytestmark = pytest.mark.chain

MEMO = Pubkey.from_string("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr")
ED25519 = Pubkey.from_string("Ed25519SigVerify111111111111111111111111111")
# Agave's builtins (builtins-default-costs): 3,000 compute units each when no limit is set.
BUILTINS = {Pubkey.from_string(p) for p in ("11111111111111111111111111111111", "ComputeBudget111111111111111111111111111111", "Ed25519SigVerify111111111111111111111111111")}
SENT = 1_000


def expected_fee(signatures: int, instructions: list[Instruction], price: int | None, limit: int | None) -> int:
    """Agave's fee, written out for these tests: 5,000 per signature (transaction and
    ed25519 precompile), plus ceil(price × limit / 10^6), the limit SetComputeUnitLimit's
    (at most 1.4M) or 3,000 per builtin and 200,000 per other instruction."""
    signatures += sum(ix.data[0] for ix in instructions if ix.program_id == ED25519)
    if limit is None:
        limit = sum(3_000 if ix.program_id in BUILTINS else 200_000 for ix in instructions)
    limit = min(limit, 1_400_000)
    return 5_000 * signatures + -(-(price or 0) * limit // 10**6)  # integer ceil: no float


def compose(payer: Keypair, cosigners: list[Keypair], price: int | None, limit: int | None, blockhash, *, v0: bool):
    instructions = []
    if limit is not None:
        instructions.append(set_compute_unit_limit(limit))
    if price is not None:
        instructions.append(set_compute_unit_price(price))
    instructions.append(transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=SENT)))
    if cosigners:  # the memo program checks every account it is given signed
        instructions.append(Instruction(MEMO, b"fees", [AccountMeta(k.pubkey(), True, False) for k in cosigners]))
    if v0:
        message = MessageV0.try_compile(payer.pubkey(), instructions, [], blockhash)
    else:
        message = Message.new_with_blockhash(instructions, payer.pubkey(), blockhash)
    return message, instructions


CASES = [
    # (signatures, price, limit, v0)
    pytest.param(1, None, None, False, id="no-compute-budget-legacy"),
    pytest.param(1, None, None, True, id="no-compute-budget-v0"),
    pytest.param(1, 0, None, True, id="price-0"),
    pytest.param(1, 1, None, False, id="price-1-default-limit-rounds-up"),
    pytest.param(1, 1, 450, True, id="price-1-limit-450-rounds-up"),
    pytest.param(1, 333_333, 1_000, True, id="ceil-rounding"),
    pytest.param(1, 1_000_000, 1_500_000, False, id="limit-capped-at-1.4M"),
    pytest.param(2, 50_000, None, True, id="two-signers-default-limit-with-memo"),
    pytest.param(2, None, 300_000, True, id="limit-without-price"),
    pytest.param(3, 12_345, 300_000, False, id="three-signers-ceil"),
    pytest.param(3, 999_999, None, False, id="three-signers-default-limit"),
    pytest.param(1, 10**9, 200_000, True, id="large-price"),
]


@pytest.mark.parametrize("signatures, price, limit, v0", CASES)
def test_charged_fee_is_agaves(chain, signatures, price, limit, v0):
    payer = funded(chain, 2 * 10**9)
    cosigners = [Keypair() for _ in range(signatures - 1)]
    message, instructions = compose(payer, cosigners, price, limit, chain.get_latest_blockhash().value.blockhash, v0=v0)
    expected = expected_fee(signatures, instructions, price, limit)
    assert chain.get_fee_for_message(message).value == expected
    before = chain.get_balance(payer.pubkey()).value
    signature = chain.send_transaction(VersionedTransaction(message, [payer, *cosigners])).value
    assert wait(chain, signature).err is None
    assert before - chain.get_balance(payer.pubkey()).value - SENT == expected
    meta = chain.get_transaction(signature, max_supported_transaction_version=0).value.transaction.meta
    assert meta.fee == expected
    assert meta.pre_balances[0] - meta.post_balances[0] == expected + SENT and meta.pre_balances[0] == before


@pytest.mark.parametrize("signatures, price, limit, v0", CASES)
def test_the_engines_maximum_fee_bounds_what_the_node_charges(chain, signatures, price, limit, v0):
    """chain.fees.message_fee, which the engine budgets and limits with (transactions/fees.py),
    is never below the validator's fee, and equal to it when the message sets its limit."""
    from chain.fees import message_fee

    payer = funded(chain, 10**9)
    message, _ = compose(payer, [Keypair() for _ in range(signatures - 1)], price, limit, chain.get_latest_blockhash().value.blockhash, v0=v0)
    charged = chain.get_fee_for_message(message).value
    maximum = message_fee(message).total
    assert maximum >= charged
    if limit is not None or not price:
        assert maximum == charged


def test_failed_transaction_pays_the_full_fee(chain):
    """Without preflight a transaction that fails pays its whole fee, taken before it runs:
    the transfer cannot spend the lamports the prioritization fee took."""
    payer = funded(chain, 2_000_000)
    price, limit = 1_000_000, 100_000  # 100,000 lamports
    blockhash = chain.get_latest_blockhash().value.blockhash
    instructions = [set_compute_unit_limit(limit), set_compute_unit_price(price), transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=2_000_000 - 5_000))]
    message = Message.new_with_blockhash(instructions, payer.pubkey(), blockhash)
    signature = chain.send_transaction(VersionedTransaction(message, [payer]), opts=TxOpts(skip_preflight=True)).value
    assert wait(chain, signature).err is not None
    assert chain.get_balance(payer.pubkey()).value == 2_000_000 - 105_000
    meta = chain.get_transaction(signature, max_supported_transaction_version=0).value.transaction.meta
    assert meta.fee == 105_000 and meta.post_balances[0] == 2_000_000 - 105_000


def test_precompile_signatures_are_charged(chain):
    """Agave counts the signatures an ed25519 instruction declares (its first byte); this
    one does not verify, so it fails, and pays 5,000 × 3 all the same."""
    payer = funded(chain, 10**9)
    instructions = [Instruction(ED25519, bytes([2, 0]) + bytes(30), [])]
    message = Message.new_with_blockhash(instructions, payer.pubkey(), chain.get_latest_blockhash().value.blockhash)
    assert chain.get_fee_for_message(message).value == expected_fee(1, instructions, None, None) == 15_000
    signature = chain.send_transaction(VersionedTransaction(message, [payer]), opts=TxOpts(skip_preflight=True)).value
    assert wait(chain, signature).err is not None
    assert chain.get_balance(payer.pubkey()).value == 10**9 - 15_000
    assert chain.get_transaction(signature).value.transaction.meta.fee == 15_000


def _unaffordable(chain, lamports: int, priority_lamports: int):
    """A payer of ``lamports`` and a transfer whose prioritization fee is ``priority_lamports``."""
    payer = funded(chain, lamports) if lamports else Keypair()
    instructions = [set_compute_unit_limit(1_000), set_compute_unit_price(priority_lamports * 1_000), transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))]
    message = Message.new_with_blockhash(instructions, payer.pubkey(), chain.get_latest_blockhash().value.blockhash)
    return payer, VersionedTransaction(message, [payer])


def _refused_with_preflight(chain, tx, err: str, text: str) -> None:
    with pytest.raises(RPCException) as refused:
        chain.send_transaction(tx)
    failure = refused.value.args[0]
    assert isinstance(failure, SendTransactionPreflightFailureMessage)  # -32002
    assert failure.message == f"Transaction simulation failed: {text}"
    assert str(failure.data.err) == err and failure.data.logs == [] and failure.data.units_consumed == 0


def _dropped_without_preflight(chain, tx) -> None:
    signature = chain.send_transaction(tx, opts=TxOpts(skip_preflight=True)).value
    assert signature == tx.signatures[0]
    next_slot(chain)
    time.sleep(0.1)
    assert chain.get_signature_statuses([signature]).value[0] is None
    assert chain.get_transaction(signature).value is None


def test_payer_who_cannot_pay_the_priority_fee_is_refused(chain):
    payer, tx = _unaffordable(chain, 1_000_000, 2_000_000)  # the 5,000 signature fee yes, 2,005,000 no
    before = chain.get_balance(payer.pubkey()).value
    simulated = chain.simulate_transaction(tx).value
    assert str(simulated.err) == "TransactionErrorFieldless.InsufficientFundsForFee" and simulated.units_consumed == 0
    _refused_with_preflight(chain, tx, "TransactionErrorFieldless.InsufficientFundsForFee", "Insufficient funds for fee")
    _dropped_without_preflight(chain, tx)
    assert chain.get_balance(payer.pubkey()).value == before == 1_000_000
    assert chain.get_signatures_for_address(payer.pubkey()).value[0].signature != tx.signatures[0]


def test_fee_that_leaves_the_payer_below_rent_exemption_is_refused(chain):
    """A rent-exempt payer may end at 0 or still exempt, not in between (Agave's
    validate_fee_payer): 1,000,000 − 115,000 is below the 890,880 of an empty account."""
    payer, tx = _unaffordable(chain, 1_000_000, 110_000)
    _refused_with_preflight(chain, tx, "TransactionErrorInsufficientFundsForRent { account_index: 0 }", "Transaction results in an account (0) with insufficient funds for rent")
    _dropped_without_preflight(chain, tx)
    assert chain.get_balance(payer.pubkey()).value == 1_000_000


def test_payer_without_lamports_is_refused(chain):
    payer, tx = _unaffordable(chain, 0, 1)
    _refused_with_preflight(chain, tx, "TransactionErrorFieldless.AccountNotFound", "Attempt to debit an account but found no record of a prior credit.")
    _dropped_without_preflight(chain, tx)
    assert chain.get_balance(payer.pubkey()).value == 0


def test_duplicate_compute_budget_instruction_is_refused_and_priced_without_priority(chain):
    """The runtime refuses it (DuplicateInstruction); getFeeForMessage answers the signature
    fee alone, as a validator falls back to the default compute budget."""
    payer = funded(chain, 10**9)
    instructions = [set_compute_unit_price(5), set_compute_unit_price(6), transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))]
    message = Message.new_with_blockhash(instructions, payer.pubkey(), chain.get_latest_blockhash().value.blockhash)
    assert chain.get_fee_for_message(message).value == 5_000
    with pytest.raises(RPCException) as refused:
        chain.send_transaction(VersionedTransaction(message, [payer]))
    assert refused.value.args[0].message == "Transaction simulation failed: Transaction contains a duplicate instruction (1) that is not allowed"
    assert chain.get_balance(payer.pubkey()).value == 10**9


def test_recent_prioritization_fees_report_the_price(chain):
    payer = funded(chain, 10**9)
    message, _ = compose(payer, [], 4_321, 10_000, chain.get_latest_blockhash().value.blockhash, v0=True)
    signature = chain.send_transaction(VersionedTransaction(message, [payer])).value
    slot = wait(chain, signature).slot
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "getRecentPrioritizationFees", "params": [[str(payer.pubkey())]]}).encode()
    request = urllib.request.Request(chain._provider.endpoint_uri, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=5) as answer:
        fees = json.loads(answer.read())["result"]
    assert {"slot": slot, "prioritizationFee": 4_321} in fees
