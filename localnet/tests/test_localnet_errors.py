"""The node words transaction errors as an Agave validator does (issue 37): the Display of
TransactionError and InstructionError (solana-sdk transaction-error / instruction-error),
which clients match on — in a preflight failure's -32002 message above all.

Every variant solders knows is built, put in its RPC JSON form and worded by the node's
admission.describe; then a few real preflight failures go through the unmodified
solana-py Client."""

from __future__ import annotations

import pytest
import solders.transaction_status as ts
from solana.rpc.core import RPCException
from solders.compute_budget import set_compute_unit_limit
from solders.instruction import AccountMeta, Instruction
from solders.keypair import Keypair
from solders.message import Message
from solders.pubkey import Pubkey
from solders.rpc.errors import SendTransactionPreflightFailureMessage
from solders.system_program import TransferParams, transfer
from solders.transaction import VersionedTransaction
from spl.memo.instructions import MemoParams, create_memo
from spl.token.constants import TOKEN_PROGRAM_ID
from spl.token.instructions import TransferCheckedParams, transfer_checked

from localnet.admission import describe, err_json
from transactions.tests.chainkit import create_ata, create_mint, funded, mint_to

SYSTEM = Pubkey.from_string("11111111111111111111111111111111")
MEMO = Pubkey.from_string("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr")

#: Agave's TransactionError Display of every fieldless variant (solana-sdk master).
TRANSACTION = {
    "AccountInUse": "Account in use",
    "AccountLoadedTwice": "Account loaded twice",
    "AccountNotFound": "Attempt to debit an account but found no record of a prior credit.",
    "ProgramAccountNotFound": "Attempt to load a program that does not exist",
    "InsufficientFundsForFee": "Insufficient funds for fee",
    "InvalidAccountForFee": "This account may not be used to pay transaction fees",
    "AlreadyProcessed": "This transaction has already been processed",
    "BlockhashNotFound": "Blockhash not found",
    "CallChainTooDeep": "Loader call chain is too deep",
    "MissingSignatureForFee": "Transaction requires a fee but has no signature present",
    "InvalidAccountIndex": "Transaction contains an invalid account reference",
    "SignatureFailure": "Transaction did not pass signature verification",
    "InvalidProgramForExecution": "This program may not be used for executing instructions",
    "SanitizeFailure": "Transaction failed to sanitize accounts offsets correctly",
    "ClusterMaintenance": "Transactions are currently disabled due to cluster maintenance",
    "AccountBorrowOutstanding": "Transaction processing left an account with an outstanding borrowed reference",
    "WouldExceedMaxBlockCostLimit": "Transaction would exceed max Block Cost Limit",
    "UnsupportedVersion": "Transaction version is unsupported",
    "InvalidWritableAccount": "Transaction loads a writable account that cannot be written",
    "WouldExceedMaxAccountCostLimit": "Transaction would exceed max account limit within the block",
    "WouldExceedAccountDataBlockLimit": "Transaction would exceed account data limit within the block",
    "TooManyAccountLocks": "Transaction locked too many accounts",
    "AddressLookupTableNotFound": "Transaction loads an address table account that doesn't exist",
    "InvalidAddressLookupTableOwner": "Transaction loads an address table account with an invalid owner",
    "InvalidAddressLookupTableData": "Transaction loads an address table account with invalid data",
    "InvalidAddressLookupTableIndex": "Transaction address table lookup uses an invalid index",
    "InvalidRentPayingAccount": "Transaction leaves an account with a lower balance than rent-exempt minimum",
    "WouldExceedMaxVoteCostLimit": "Transaction would exceed max Vote Cost Limit",
    "WouldExceedAccountDataTotalLimit": "Transaction would exceed total account data limit",
    "MaxLoadedAccountsDataSizeExceeded": "Transaction exceeded max loaded accounts data size cap",
    "InvalidLoadedAccountsDataSizeLimit": "LoadedAccountsDataSizeLimit set for transaction must be greater than 0.",
    "ResanitizationNeeded": "ResanitizationNeeded",
    "UnbalancedTransaction": "Sum of account balances before and after transaction do not match",
    "ProgramCacheHitMaxLimit": "Program cache hit max limit",
    "CommitCancelled": "CommitCancelled",
}

#: Agave's InstructionError Display of every fieldless variant.
INSTRUCTION = {
    "GenericError": "generic instruction error",
    "InvalidArgument": "invalid program argument",
    "InvalidInstructionData": "invalid instruction data",
    "InvalidAccountData": "invalid account data for instruction",
    "AccountDataTooSmall": "account data too small for instruction",
    "InsufficientFunds": "insufficient funds for instruction",
    "IncorrectProgramId": "incorrect program id for instruction",
    "MissingRequiredSignature": "missing required signature for instruction",
    "AccountAlreadyInitialized": "instruction requires an uninitialized account",
    "UninitializedAccount": "instruction requires an initialized account",
    "UnbalancedInstruction": "sum of account balances before and after instruction do not match",
    "ModifiedProgramId": "instruction illegally modified the program id of an account",
    "ExternalAccountLamportSpend": "instruction spent from the balance of an account it does not own",
    "ExternalAccountDataModified": "instruction modified data of an account it does not own",
    "ReadonlyLamportChange": "instruction changed the balance of a read-only account",
    "ReadonlyDataModified": "instruction modified data of a read-only account",
    "DuplicateAccountIndex": "instruction contains duplicate accounts",
    "ExecutableModified": "instruction changed executable bit of an account",
    "RentEpochModified": "instruction modified rent epoch of an account",
    "NotEnoughAccountKeys": "insufficient account keys for instruction",
    "AccountDataSizeChanged": "program other than the account's owner changed the size of the account data",
    "AccountNotExecutable": "instruction expected an executable account",
    "AccountBorrowFailed": "instruction tries to borrow reference for an account which is already borrowed",
    "AccountBorrowOutstanding": "instruction left account with an outstanding borrowed reference",
    "DuplicateAccountOutOfSync": "instruction modifications of multiply-passed account differ",
    "InvalidError": "program returned invalid error code",
    "ExecutableDataModified": "instruction changed executable accounts data",
    "ExecutableLamportChange": "instruction changed the balance of an executable account",
    "ExecutableAccountNotRentExempt": "executable accounts must be rent exempt",
    "UnsupportedProgramId": "Unsupported program id",
    "CallDepth": "Cross-program invocation call depth too deep",
    "MissingAccount": "An account required by the instruction is missing",
    "ReentrancyNotAllowed": "Cross-program invocation reentrancy not allowed for this instruction",
    "MaxSeedLengthExceeded": "Length of the seed is too long for address generation",
    "InvalidSeeds": "Provided seeds do not result in a valid address",
    "InvalidRealloc": "Failed to reallocate account data",
    "ComputationalBudgetExceeded": "Computational budget exceeded",
    "PrivilegeEscalation": "Cross-program invocation with unauthorized signer or writable account",
    "ProgramEnvironmentSetupFailure": "Failed to create program execution environment",
    "ProgramFailedToComplete": "Program failed to complete",
    "ProgramFailedToCompile": "Program failed to compile",
    "Immutable": "Account is immutable",
    "IncorrectAuthority": "Incorrect authority provided",
    "BorshIoError": "Failed to serialize or deserialize account data",
    "AccountNotRentExempt": "An account does not have enough lamports to be rent-exempt",
    "InvalidAccountOwner": "Invalid account owner",
    "ArithmeticOverflow": "Program arithmetic overflowed",
    "UnsupportedSysvar": "Unsupported sysvar",
    "IllegalOwner": "Provided owner is not allowed",
    "MaxAccountsDataAllocationsExceeded": "Accounts data allocations exceeded the maximum allowed per transaction",
    "MaxAccountsExceeded": "Max accounts exceeded",
    "MaxInstructionTraceLengthExceeded": "Max instruction trace length exceeded",
    "BuiltinProgramsMustConsumeComputeUnits": "Builtin programs must consume compute units",
}


def _variants(enum) -> list[str]:
    return sorted(name for name in dir(enum) if not name.startswith("_"))


@pytest.mark.parametrize("name", _variants(ts.TransactionErrorFieldless))
def test_every_fieldless_transaction_error_is_worded_as_agave(name):
    err = err_json(getattr(ts.TransactionErrorFieldless, name))
    assert err == name
    assert describe(err) == TRANSACTION[name]


@pytest.mark.parametrize("name", _variants(ts.InstructionErrorFieldless))
def test_every_fieldless_instruction_error_is_worded_as_agave(name):
    err = err_json(ts.TransactionErrorInstructionError(3, getattr(ts.InstructionErrorFieldless, name)))
    assert err == {"InstructionError": [3, name]}
    assert describe(err) == f"Error processing Instruction 3: {INSTRUCTION[name]}"


@pytest.mark.parametrize(("error", "text"), [
    (ts.TransactionErrorInstructionError(1, ts.InstructionErrorCustom(1)), "Error processing Instruction 1: custom program error: 0x1"),
    (ts.TransactionErrorInstructionError(0, ts.InstructionErrorCustom(7030)), "Error processing Instruction 0: custom program error: 0x1b76"),
    (ts.TransactionErrorInstructionError(2, ts.InstructionErrorCustom(0)), "Error processing Instruction 2: custom program error: 0x0"),
    (ts.TransactionErrorDuplicateInstruction(1), "Transaction contains a duplicate instruction (1) that is not allowed"),
    (ts.TransactionErrorInsufficientFundsForRent(2), "Transaction results in an account (2) with insufficient funds for rent"),
    (ts.TransactionErrorProgramExecutionTemporarilyRestricted(4), "Execution of the program referenced by account at index 4 is temporarily restricted."),
])
def test_transaction_errors_with_fields_are_worded_as_agave(error, text):
    assert describe(err_json(error)) == text


def test_texts_are_never_python_reprs():
    """A variant newer than the table is worded by its name (as Agave's JSON names it),
    never as a Python dict; the BorshIoError of older SDKs keeps its message."""
    assert describe({"InstructionError": [0, {"BorshIoError": "Unexpected length of input"}]}) == "Error processing Instruction 0: Failed to serialize or deserialize account data: Unexpected length of input"
    assert describe({"InstructionError": [0, "SomeFutureError"]}) == "Error processing Instruction 0: SomeFutureError"
    assert describe({"SomeFutureError": {"account_index": 1}}) == "SomeFutureError"
    assert describe("BailOutOfNowhere") == "BailOutOfNowhere"


# --- preflight failures on the shared node ---------------------------------------------------
def _preflight_failure(chain, payer: Keypair, instructions: list[Instruction]) -> SendTransactionPreflightFailureMessage:
    message = Message.new_with_blockhash(instructions, payer.pubkey(), chain.get_latest_blockhash().value.blockhash)
    with pytest.raises(RPCException) as refused:
        chain.send_transaction(VersionedTransaction(message, [payer]))
    failure = refused.value.args[0]
    assert isinstance(failure, SendTransactionPreflightFailureMessage)  # -32002, parsed by solders
    return failure


@pytest.mark.chain
def test_preflight_failure_for_invalid_instruction_data(chain):
    payer = funded(chain, 10**9)
    garbage = Instruction(SYSTEM, b"\xff\xff\xff\xff", [AccountMeta(payer.pubkey(), True, True)])
    failure = _preflight_failure(chain, payer, [garbage])
    assert failure.message == "Transaction simulation failed: Error processing Instruction 0: invalid instruction data"
    assert failure.data.err == ts.TransactionErrorInstructionError(0, ts.InstructionErrorFieldless.InvalidInstructionData)


@pytest.mark.chain
def test_preflight_failure_for_a_duplicate_compute_budget_instruction(chain):
    payer = funded(chain, 10**9)
    failure = _preflight_failure(chain, payer, [set_compute_unit_limit(10_000), set_compute_unit_limit(20_000), transfer(TransferParams(from_pubkey=payer.pubkey(), to_pubkey=Keypair().pubkey(), lamports=1))])
    assert failure.message == "Transaction simulation failed: Transaction contains a duplicate instruction (1) that is not allowed"
    assert failure.data.err == ts.TransactionErrorDuplicateInstruction(1)


@pytest.mark.chain
def test_preflight_failure_for_a_custom_program_error(chain):
    """SPL Token's InsufficientFunds is its error 1: a transfer of more than the balance, as
    the second instruction after a memo."""
    payer = funded(chain)
    mint = create_mint(chain, payer)
    source, target = create_ata(chain, payer, payer.pubkey(), mint), create_ata(chain, payer, Keypair().pubkey(), mint)
    mint_to(chain, payer, mint, source, 10)
    too_much = transfer_checked(TransferCheckedParams(program_id=TOKEN_PROGRAM_ID, source=source, mint=mint, dest=target, owner=payer.pubkey(), amount=11, decimals=6))
    failure = _preflight_failure(chain, payer, [create_memo(MemoParams(program_id=MEMO, signer=payer.pubkey(), message=b"too much")), too_much])
    assert failure.message == "Transaction simulation failed: Error processing Instruction 1: custom program error: 0x1"
    assert failure.data.err == ts.TransactionErrorInstructionError(1, ts.InstructionErrorCustom(1))
    assert f"Program {TOKEN_PROGRAM_ID} failed: custom program error: 0x1" in failure.data.logs
